package azure

import (
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/conformance"
	emulator "github.com/dnspolicy/dnspolicy-controller/test/emulators/azure"
)

const (
	subscription  = "00000000-0000-0000-0000-000000000001"
	resourceGroup = "dns-rg"
	clientSecret  = "s3cret-value-never-shown"
)

func secret(azureJSON string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "azure-creds"},
		Type:       v1alpha1.SecretTypeAzure,
		Data:       map[string][]byte{v1alpha1.AzureJSONKey: []byte(azureJSON)},
	}
}

func validJSON() string {
	return `{"tenantId":"tenant","subscriptionId":"` + subscription + `","resourceGroup":"` + resourceGroup +
		`","aadClientId":"client","aadClientSecret":"` + clientSecret + `","location":"westeurope"}`
}

// emulated builds a provider through the constructor, as the controllers do, talking to the
// store through the SDK's fake servers. Retries are quick so fault tests do not wait.
func emulated(t *testing.T, store *emulator.Store) providers.Provider {
	t.Helper()
	p, err := NewConstructor(
		WithClientOptions(arm.ClientOptions{ClientOptions: azcore.ClientOptions{
			Transport: store.Transport(),
			Retry:     policy.RetryOptions{MaxRetries: 3, RetryDelay: time.Millisecond, MaxRetryDelay: 10 * time.Millisecond},
		}}),
		WithCredential(&azfake.TokenCredential{}),
	)(t.Context(), secret(validJSON()), providers.Env{Namespace: "ns"})
	if err != nil {
		t.Fatalf("constructor: %v", err)
	}
	return p
}

// newZone adds a zone named after the test to the store and returns it as the provider lists it.
func newZone(t *testing.T, store *emulator.Store, p providers.Provider) providers.Zone {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())) + ".example.com"
	store.AddZone(resourceGroup, name)
	zones, err := p.Zones(t.Context())
	if err != nil {
		t.Fatalf("Zones: %v", err)
	}
	for _, z := range zones {
		if z.DNSName == name {
			return z
		}
	}
	t.Fatalf("Zones() = %v, want %s", zones, name)
	return providers.Zone{}
}

func TestConformance(t *testing.T) {
	store := emulator.NewStore(subscription)
	conformance.Run(t, conformance.Harness{
		NewZone: func(t *testing.T) (providers.Provider, providers.Zone) {
			p := emulated(t, store)
			return p, newZone(t, store, p)
		},
	})
}
