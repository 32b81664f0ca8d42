package clouddns

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// Options are what a kuadrant.io/gcp Secret configures.
type Options struct {
	// Project is the Google Cloud project that holds the managed zones (PROJECT_ID).
	Project string
	// CredentialsJSON is the service-account key (GOOGLE); empty only with an Endpoint.
	CredentialsJSON []byte
	// Endpoint is the API root URL of an emulator or private endpoint (ENDPOINT_URL); requests to it
	// carry no credentials.
	Endpoint string
	// Secret is the provider Secret the options were read from (namespace/name), named in errors
	// about refused credentials or a project that cannot be seen; empty for options built in code.
	Secret string
}

// ParseOptions reads a kuadrant.io/gcp Secret. PROJECT_ID is required; GOOGLE is required unless
// ENDPOINT_URL is set, and must then be a service-account key. Errors name the Secret and the key,
// never a value.
func ParseOptions(secret *corev1.Secret) (Options, error) {
	bad := func(key, problem string) error {
		return fmt.Errorf("provider secret %s/%s: key %s %s", secret.Namespace, secret.Name, key, problem)
	}
	opts := Options{
		Project:  strings.TrimSpace(string(secret.Data[v1alpha1.GoogleProjectIDKey])),
		Endpoint: strings.TrimSpace(string(secret.Data[v1alpha1.EndpointOverrideKey])),
		Secret:   secret.Namespace + "/" + secret.Name,
	}
	if opts.Project == "" {
		return Options{}, bad(v1alpha1.GoogleProjectIDKey, "is missing or empty")
	}
	if strings.ContainsAny(opts.Project, "/ \t\n") {
		return Options{}, bad(v1alpha1.GoogleProjectIDKey, "is not a valid project ID")
	}
	if opts.Endpoint != "" {
		u, err := url.Parse(opts.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Options{}, bad(v1alpha1.EndpointOverrideKey, "is not an http or https URL")
		}
		// The client's request paths begin with dns/v1/, so the endpoint is the server root.
		if !strings.HasSuffix(opts.Endpoint, "/") {
			opts.Endpoint += "/"
		}
		return opts, nil
	}
	raw := secret.Data[v1alpha1.GoogleJSONKey]
	if len(strings.TrimSpace(string(raw))) == 0 {
		return Options{}, bad(v1alpha1.GoogleJSONKey, "is missing or empty")
	}
	var key struct {
		Type        string `json:"type"`
		ClientEmail string `json:"client_email"`
		PrivateKey  string `json:"private_key"`
	}
	if err := json.Unmarshal(raw, &key); err != nil {
		return Options{}, bad(v1alpha1.GoogleJSONKey, "is not valid JSON")
	}
	if key.Type != "service_account" || key.ClientEmail == "" || key.PrivateKey == "" {
		return Options{}, bad(v1alpha1.GoogleJSONKey, `is not a service-account key (want "type": "service_account" with client_email and private_key)`)
	}
	opts.CredentialsJSON = raw
	return opts, nil
}

// ZoneScope names where Zones looks, for the condition of a record whose host is in none of the
// zones: the project and the key that selects it.
func (p *Provider) ZoneScope() string {
	return fmt.Sprintf("project %s, from key %s", p.project, v1alpha1.GoogleProjectIDKey)
}
