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
	backend, err := NewConstructor(
		WithClientOptions(arm.ClientOptions{ClientOptions: azcore.ClientOptions{
			Transport: store.Transport(),
			Retry:     policy.RetryOptions{MaxRetries: 3, RetryDelay: time.Millisecond, MaxRetryDelay: 10 * time.Millisecond},
		}}),
		WithCredential(&azfake.TokenCredential{}),
	)(t.Context(), secret(validJSON()), providers.Env{Namespace: "ns"})
	if err != nil {
		t.Fatalf("constructor: %v", err)
	}
	return backend.Zones
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

// Under faults at a 20% rate (HTTP 500 before anything is applied), the SDK's retries carry every
// operation through, and the suite's exact zone checks still hold.
func TestConformanceWithFaults(t *testing.T) {
	store := emulator.NewStore(subscription)
	store.SetFaults(0.2, 7)
	conformance.Run(t, conformance.Harness{
		NewZone: func(t *testing.T) (providers.Provider, providers.Zone) {
			p := emulatedWithRetries(t, store, 12)
			return p, newZone(t, store, p)
		},
	})
	if calls := store.Calls(); calls["RecordSets.CreateOrUpdate"] == 0 {
		t.Errorf("no record set writes counted: %v", calls)
	}
}

func emulatedWithRetries(t *testing.T, store *emulator.Store, retries int32) providers.Provider {
	t.Helper()
	backend, err := NewConstructor(
		WithClientOptions(arm.ClientOptions{ClientOptions: azcore.ClientOptions{
			Transport: store.Transport(),
			Retry:     policy.RetryOptions{MaxRetries: retries, RetryDelay: time.Millisecond, MaxRetryDelay: 10 * time.Millisecond},
		}}),
		WithCredential(&azfake.TokenCredential{}),
	)(t.Context(), secret(validJSON()), providers.Env{Namespace: "ns"})
	if err != nil {
		t.Fatalf("constructor: %v", err)
	}
	return backend.Zones
}

func TestParseOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		data    map[string]string
		wantKey string
	}{
		{"missing azure.json", map[string]string{}, v1alpha1.AzureJSONKey},
		{"empty azure.json", map[string]string{v1alpha1.AzureJSONKey: " "}, v1alpha1.AzureJSONKey},
		{"not JSON", map[string]string{v1alpha1.AzureJSONKey: "aadClientSecret: " + clientSecret}, v1alpha1.AzureJSONKey},
		{"no client secret", map[string]string{v1alpha1.AzureJSONKey: strings.Replace(validJSON(), clientSecret, "", 1)}, "aadClientSecret"},
		{"no resource group", map[string]string{v1alpha1.AzureJSONKey: strings.Replace(validJSON(), resourceGroup, "", 1)}, "resourceGroup"},
		{"no subscription", map[string]string{v1alpha1.AzureJSONKey: strings.Replace(validJSON(), subscription, "", 1)}, "subscriptionId"},
		{"bad endpoint", map[string]string{v1alpha1.AzureJSONKey: validJSON(), v1alpha1.EndpointOverrideKey: "ftp://" + clientSecret}, v1alpha1.EndpointOverrideKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := secret("")
			s.Data = map[string][]byte{}
			for k, v := range tc.data {
				s.Data[k] = []byte(v)
			}
			_, err := ParseOptions(s)
			if err == nil {
				t.Fatal("ParseOptions succeeded, want an error")
			}
			msg := err.Error()
			if !strings.Contains(msg, "ns/azure-creds") || !strings.Contains(msg, tc.wantKey) || strings.Contains(msg, clientSecret) {
				t.Errorf("error %q must name ns/azure-creds and %s, and not the secret value", msg, tc.wantKey)
			}
			// Through the factory the error is Permanent: retrying cannot fix a Secret.
			f := providers.NewFactory()
			f.Register(v1alpha1.SecretTypeAzure, NewConstructor())
			f.AllowEndpointOverride(true) // the bad endpoint case is the constructor's to refuse
			if _, err := f.New(t.Context(), s, providers.Env{}); providers.KindOf(err) != providers.Permanent {
				t.Errorf("factory error %v, want Permanent", err)
			}
		})
	}
	s := secret(validJSON())
	s.Data[v1alpha1.EndpointOverrideKey] = []byte("http://127.0.0.1:8443")
	opts, err := ParseOptions(s)
	if err != nil {
		t.Fatal(err)
	}
	want := Options{TenantID: "tenant", SubscriptionID: subscription, ResourceGroup: resourceGroup, ClientID: "client",
		ClientSecret: clientSecret, EndpointURL: "http://127.0.0.1:8443"}
	if opts != want {
		t.Errorf("ParseOptions = %+v, want %+v", opts, want)
	}
}

func TestAdjustEndpoints(t *testing.T) {
	p := emulated(t, emulator.NewStore(subscription))
	set := func(recordType, id, prop, value string) *v1alpha1.Endpoint {
		return v1alpha1.NewEndpoint("Klb.App.Example.com.", recordType, 300, "eu.klb.app.example.com").
			WithSetIdentifier(id).WithProviderSpecific(prop, value)
	}
	got, err := p.AdjustEndpoints([]*v1alpha1.Endpoint{
		set(v1alpha1.RecordTypeCNAME, "world", v1alpha1.ProviderSpecificGeoCode, "WORLD"),
		set(v1alpha1.RecordTypeCNAME, "w", v1alpha1.ProviderSpecificWeight, "0120").WithProviderSpecific("aws/evaluate-target-health", "true"),
		set(v1alpha1.RecordTypeTXT, "owner", v1alpha1.ProviderSpecificGeoCode, "GEO-AP"),
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"geo-code=*", "weight=120", "geo-code=GEO-AP"} {
		ps := got[i].ProviderSpecific
		if len(ps) != 1 || ps[0].Name+"="+ps[0].Value != want || got[i].DNSName != "klb.app.example.com" {
			t.Errorf("AdjustEndpoints[%d] = %s %v, want klb.app.example.com with only %s", i, got[i].DNSName, ps, want)
		}
	}
	for _, tc := range []struct {
		name string
		ep   *v1alpha1.Endpoint
	}{
		{"continent Traffic Manager lacks", set(v1alpha1.RecordTypeCNAME, "oc", v1alpha1.ProviderSpecificGeoCode, "GEO-OC")},
		{"unknown country", set(v1alpha1.RecordTypeCNAME, "xx", v1alpha1.ProviderSpecificGeoCode, "XX")},
		{"weight above 1000", set(v1alpha1.RecordTypeCNAME, "w", v1alpha1.ProviderSpecificWeight, "1001")},
		{"negative weight", set(v1alpha1.RecordTypeCNAME, "w", v1alpha1.ProviderSpecificWeight, "-1")},
		{"set identifier without routing", v1alpha1.NewEndpoint("a.example.com", v1alpha1.RecordTypeA, 60, "192.0.2.1").WithSetIdentifier("x")},
		{"routed set of two targets", v1alpha1.NewEndpoint("a.example.com", v1alpha1.RecordTypeA, 60, "192.0.2.1", "192.0.2.2").
			WithSetIdentifier("x").WithProviderSpecific(v1alpha1.ProviderSpecificWeight, "1")},
		{"set identifier that is no endpoint name", set(v1alpha1.RecordTypeCNAME, "a/b", v1alpha1.ProviderSpecificWeight, "1")},
		{"unsupported type", v1alpha1.NewEndpoint("a.example.com", "MX", 60, "10 mail.example.com")},
		{"21 values", v1alpha1.NewEndpoint("a.example.com", v1alpha1.RecordTypeTXT, 60, strings.Split(strings.Repeat("v,", 20)+"v", ",")...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := p.AdjustEndpoints([]*v1alpha1.Endpoint{tc.ep}); providers.KindOf(err) != providers.Permanent || err == nil {
				t.Errorf("AdjustEndpoints(%s) = %v, want a Permanent error", tc.ep, err)
			}
		})
	}
}

// Apply writes against the view's State (the zone as read, and written since), without listing it
// again; a zone changed since by another writer fails the batch as a stale view (412), never
// overwritten, and the next read brings the engine up to date.
func TestApplyWritesAgainstTheKeptZone(t *testing.T) {
	store := emulator.NewStore(subscription)
	p := emulated(t, store)
	zone := newZone(t, store, p)
	read, err := p.Records(t.Context(), zone)
	if err != nil {
		t.Fatal(err)
	}
	lists := func() int { return store.Calls()["RecordSets.ListAllByDNSZone"] }
	before := lists()
	web := v1alpha1.NewEndpoint("web."+zone.DNSName, "A", 60, "192.0.2.1")
	if err := p.Apply(t.Context(), zone, read.State, &providers.Changes{Create: []*v1alpha1.Endpoint{web}}); err != nil {
		t.Fatal(err)
	}
	moved := v1alpha1.NewEndpoint(web.DNSName, "A", 60, "192.0.2.2")
	if err := p.Apply(t.Context(), zone, read.State, &providers.Changes{UpdateOld: []*v1alpha1.Endpoint{web}, UpdateNew: []*v1alpha1.Endpoint{moved}}); err != nil {
		t.Fatal(err)
	}
	if n := lists() - before; n != 0 {
		t.Errorf("%d zone listings for two batches after a read, want none", n)
	}

	// Another writer (another cluster's constructor) changes the set.
	other := emulated(t, store)
	if _, err := other.Records(t.Context(), zone); err != nil {
		t.Fatal(err)
	}
	theirs := v1alpha1.NewEndpoint(web.DNSName, "A", 60, "192.0.2.2", "192.0.2.3")
	if err := other.Apply(t.Context(), zone, nil, &providers.Changes{UpdateOld: []*v1alpha1.Endpoint{moved}, UpdateNew: []*v1alpha1.Endpoint{theirs}}); err != nil {
		t.Fatal(err)
	}
	ours := v1alpha1.NewEndpoint(web.DNSName, "A", 60, "192.0.2.4")
	err = p.Apply(t.Context(), zone, read.State, &providers.Changes{UpdateOld: []*v1alpha1.Endpoint{moved}, UpdateNew: []*v1alpha1.Endpoint{ours}})
	if providers.KindOf(err) != providers.StaleView {
		t.Fatalf("Apply on a zone changed since = %v (%v), want StaleView", err, providers.KindOf(err))
	}
	gotView, err := p.Records(t.Context(), zone)
	got := gotView.Endpoints
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range got {
		if ep.DNSName == web.DNSName && !ep.SameValues(theirs) {
			t.Errorf("zone holds %s, want the other writer's %s", ep, theirs)
		}
	}
	if err := p.Apply(t.Context(), zone, nil, &providers.Changes{UpdateOld: []*v1alpha1.Endpoint{theirs}, UpdateNew: []*v1alpha1.Endpoint{ours}}); err != nil {
		t.Errorf("Apply after the read: %v", err)
	}
}
