package azure

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// Options are what a kuadrant.io/azure Secret configures.
type Options struct {
	TenantID       string
	SubscriptionID string
	// ResourceGroup holds the DNS zones and the Traffic Manager profiles.
	ResourceGroup string
	ClientID      string
	ClientSecret  string
	// EndpointURL, when set, replaces the Azure Resource Manager endpoint (a private cloud or an
	// emulator).
	EndpointURL string
}

// azureJSON is the part of Kuadrant's azure.json this backend reads; other fields are ignored.
type azureJSON struct {
	TenantID        string `json:"tenantId"`
	SubscriptionID  string `json:"subscriptionId"`
	ResourceGroup   string `json:"resourceGroup"`
	AADClientID     string `json:"aadClientId"`
	AADClientSecret string `json:"aadClientSecret"`
}

// ParseOptions reads a kuadrant.io/azure Secret: azure.json (tenantId, subscriptionId,
// resourceGroup, aadClientId, aadClientSecret, all required) and an optional ENDPOINT_URL. Errors
// name the Secret, the key and the field, never a value.
func ParseOptions(secret *corev1.Secret) (Options, error) {
	where := fmt.Sprintf("provider secret %s/%s: key %s", secret.Namespace, secret.Name, v1alpha1.AzureJSONKey)
	raw, ok := secret.Data[v1alpha1.AzureJSONKey]
	if !ok || strings.TrimSpace(string(raw)) == "" {
		return Options{}, fmt.Errorf("%s is missing or empty", where)
	}
	var cfg azureJSON
	// The decoder's message can quote the content, which holds the client secret: do not wrap it.
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return Options{}, fmt.Errorf("%s is not a JSON object with string fields", where)
	}
	for _, f := range []struct{ name, value string }{
		{"tenantId", cfg.TenantID}, {"subscriptionId", cfg.SubscriptionID}, {"resourceGroup", cfg.ResourceGroup},
		{"aadClientId", cfg.AADClientID}, {"aadClientSecret", cfg.AADClientSecret},
	} {
		if strings.TrimSpace(f.value) == "" {
			return Options{}, fmt.Errorf("%s: field %s is missing or empty", where, f.name)
		}
	}
	opts := Options{
		TenantID:       strings.TrimSpace(cfg.TenantID),
		SubscriptionID: strings.TrimSpace(cfg.SubscriptionID),
		ResourceGroup:  strings.TrimSpace(cfg.ResourceGroup),
		ClientID:       strings.TrimSpace(cfg.AADClientID),
		ClientSecret:   cfg.AADClientSecret,
	}
	if endpoint := strings.TrimSpace(string(secret.Data[v1alpha1.EndpointOverrideKey])); endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return Options{}, fmt.Errorf("provider secret %s/%s: key %s is not an http(s) URL",
				secret.Namespace, secret.Name, v1alpha1.EndpointOverrideKey)
		}
		opts.EndpointURL = endpoint
	}
	return opts, nil
}

// ZoneScope names where Zones looks, for the condition of a record whose host is in none of the
// zones: the resource group and the field of azure.json that selects it.
func (p *Provider) ZoneScope() string {
	return fmt.Sprintf("resource group %s, from key %s field resourceGroup", p.resourceGroup, v1alpha1.AzureJSONKey)
}
