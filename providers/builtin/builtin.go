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
	"github.com/dnspolicy/dnspolicy-controller/providers/route53"
)

type backend struct {
	secretType  corev1.SecretType
	constructor providers.Constructor
}

// backends maps provider names to their Secret types and constructors. store holds the inmemory
// backend's zones.
func backends(store *inmemory.Store) map[string]backend {
	return map[string]backend{
		inmemory.ProviderName: {v1alpha1.SecretTypeInMemory, inmemory.NewConstructor(store)},
		endpoint.ProviderName: {v1alpha1.SecretTypeEndpoint, endpoint.New},
		coredns.ProviderName:  {v1alpha1.SecretTypeCoreDNS, coredns.New},
		azure.ProviderName:    {v1alpha1.SecretTypeAzure, azure.NewConstructor()},
		clouddns.ProviderName: {v1alpha1.SecretTypeGCP, clouddns.New},
		route53.ProviderName:  {v1alpha1.SecretTypeAWS, route53.New},
		k8gb.ProviderName:     {v1alpha1.SecretTypeK8gb, k8gb.New},
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
