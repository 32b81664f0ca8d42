// Package apis gathers the API types the controllers read and write into one scheme.
package apis

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	gatewayapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnsv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// Scheme holds core types, Gateway API v1 and our APIs.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, gatewayapiv1.Install, dnsv1.AddToScheme, v1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err) // only on a programming error: two types registered under one name
		}
	}
	return s
}
