// Package builtin is the one list of the backends the project's binaries can run, by provider name
// (the values of the kuadrant.io/dns-provider-name label and of the controller's --providers), with
// their Secret types and constructors (each returns the backend's declared shape, providers.Backend). The controller and the kubectl-dns plugin both build their
// factories here, so the plugin reads and writes zones exactly as the controller does.
package builtin

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/azure"
	"github.com/dnspolicy/dnspolicy-controller/providers/clouddns"
	"github.com/dnspolicy/dnspolicy-controller/providers/coredns"
	"github.com/dnspolicy/dnspolicy-controller/providers/endpoint"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
	"github.com/dnspolicy/dnspolicy-controller/providers/k8gb"
	"github.com/dnspolicy/dnspolicy-controller/providers/rfc2136"
	"github.com/dnspolicy/dnspolicy-controller/providers/route53"
	"github.com/dnspolicy/dnspolicy-controller/providers/webhook"
)

type backend struct {
	secretType  corev1.SecretType
	constructor providers.Constructor
	// address: the Secret names the server the controller connects to (a host, a URL) rather than
	// an account at a cloud's fixed API. Whoever may write a Secret in any namespace could then aim
	// the controller, from inside the cluster, at any address it reaches, as ENDPOINT_URL would
	// (providers.EndpointOverrideKeys). So these are off unless the administrator names them.
	address bool
}

// backends maps provider names to their Secret types and constructors. store holds the inmemory
// backend's zones.
func backends(store *inmemory.Store) map[string]backend {
	return map[string]backend{
		inmemory.ProviderName: {secretType: v1alpha1.SecretTypeInMemory, constructor: inmemory.NewConstructor(store)},
		endpoint.ProviderName: {secretType: v1alpha1.SecretTypeEndpoint, constructor: endpoint.New},
		coredns.ProviderName:  {secretType: v1alpha1.SecretTypeCoreDNS, constructor: coredns.New},
		azure.ProviderName:    {secretType: v1alpha1.SecretTypeAzure, constructor: azure.NewConstructor()},
		clouddns.ProviderName: {secretType: v1alpha1.SecretTypeGCP, constructor: clouddns.New},
		route53.ProviderName:  {secretType: v1alpha1.SecretTypeAWS, constructor: route53.New},
		rfc2136.ProviderName:  {secretType: v1alpha1.SecretTypeRFC2136, constructor: rfc2136.New, address: true},
		k8gb.ProviderName:     {secretType: v1alpha1.SecretTypeK8gb, constructor: k8gb.New},
		webhook.ProviderName:  {secretType: v1alpha1.SecretTypeExternalDNSWebhook, constructor: webhook.New, address: true},
	}
}

// Names lists every backend, sorted.
func Names() []string {
	var names []string
	for name := range backends(nil) {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Defaults lists the backends enabled when the administrator names none (--providers unset): every
// backend but those whose Secret names the address the controller connects to, sorted.
func Defaults() []string {
	var names []string
	for name, b := range backends(nil) {
		if !b.address {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// NewFactory registers the enabled backends (by provider name). store holds the inmemory backend's
// zones.
func NewFactory(enabled []string, store *inmemory.Store) (*providers.Factory, error) {
	all := backends(store)
	f := providers.NewFactory()
	for _, name := range enabled {
		b, ok := all[name]
		if !ok {
			return nil, fmt.Errorf("unknown provider %q (known: %s)", name, strings.Join(Names(), ", "))
		}
		f.Register(b.secretType, b.constructor)
	}
	return f, nil
}
