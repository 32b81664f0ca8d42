package azure

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	emulator "github.com/dnspolicy/dnspolicy-controller/test/emulators/azure"
)

// hook runs a function once, before the first record-set write it sees goes to the store.
type hook struct {
	next policy.Transporter
	once sync.Once
	fn   func()
}

func (h *hook) Do(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPut && strings.Contains(strings.ToLower(req.URL.Path), "/dnszones/") {
		h.once.Do(h.fn)
	}
	return h.next.Do(req)
}

func withTransport(t *testing.T, tr policy.Transporter, cred azcore.TokenCredential) providers.Provider {
	t.Helper()
	backend, err := NewConstructor(
		WithClientOptions(arm.ClientOptions{ClientOptions: azcore.ClientOptions{
			Transport: tr,
			Retry:     policy.RetryOptions{MaxRetries: 3, RetryDelay: time.Millisecond, MaxRetryDelay: 10 * time.Millisecond},
		}}),
		WithCredential(cred),
	)(t.Context(), secret(validJSON()), providers.Env{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	return backend.Zones
}

func a(name string, targets ...string) *v1alpha1.Endpoint {
	return v1alpha1.NewEndpoint(name, v1alpha1.RecordTypeA, 60, targets...)
}

// Another cluster writes between this provider's read and its write: the ETag precondition fails,
// the batch reports StaleView, and the other cluster's write is kept.
func TestConcurrentWriterLosesTheETagRace(t *testing.T) {
	ctx := t.Context()
	store := emulator.NewStore(subscription)
	other := emulated(t, store)
	zone := newZone(t, store, other)
	www := "www." + zone.DNSName
	if err := other.Apply(ctx, zone, nil, &providers.Changes{Create: []*v1alpha1.Endpoint{a(www, "192.0.2.1")}}); err != nil {
		t.Fatal(err)
	}
	h := &hook{next: store.Transport(), fn: func() {
		if err := other.Apply(ctx, zone, nil, &providers.Changes{
			UpdateOld: []*v1alpha1.Endpoint{a(www, "192.0.2.1")}, UpdateNew: []*v1alpha1.Endpoint{a(www, "192.0.2.1", "192.0.2.2")},
		}); err != nil {
			t.Errorf("the other writer: %v", err)
		}
	}}
	// A second constructor: its zone locks are its own, as another cluster's would be.
	p := withTransport(t, h, &azfake.TokenCredential{})
	err := p.Apply(ctx, zone, nil, &providers.Changes{
		UpdateOld: []*v1alpha1.Endpoint{a(www, "192.0.2.1")}, UpdateNew: []*v1alpha1.Endpoint{a(www, "192.0.2.1", "192.0.2.3")},
	})
	if providers.KindOf(err) != providers.StaleView || !strings.Contains(err.Error(), "412") {
		t.Fatalf("Apply = %v, want StaleView from a 412", err)
	}
	gotView, err := p.Records(ctx, zone)
	got := gotView.Endpoints
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !got[0].Targets.SameTargets(v1alpha1.Targets{"192.0.2.1", "192.0.2.2"}) {
		t.Errorf("zone holds %v, want the other writer's 192.0.2.1, 192.0.2.2", got)
	}
}

// Writers in several processes add targets to one record set (18, within the 20 a set holds); each retries on StaleView after a
// fresh read. No write is lost.
func TestConcurrentWritersLoseNoUpdate(t *testing.T) {
	ctx := t.Context()
	store := emulator.NewStore(subscription)
	zone := newZone(t, store, emulated(t, store))
	www := "www." + zone.DNSName
	const writers, rounds = 3, 6
	var wg sync.WaitGroup
	for w := range writers {
		p := emulated(t, store)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				target := "10.0." + string(rune('0'+w)) + "." + string(rune('0'+r))
				for {
					readView, err := p.Records(ctx, zone)
					read := readView.Endpoints
					if err != nil {
						t.Error(err)
						return
					}
					changes := &providers.Changes{Create: []*v1alpha1.Endpoint{a(www, target)}}
					if len(read) > 0 {
						next := read[0].DeepCopy()
						next.Targets = append(next.Targets, target)
						changes = &providers.Changes{UpdateOld: read, UpdateNew: []*v1alpha1.Endpoint{next}}
					}
					err = p.Apply(ctx, zone, nil, changes)
					if err == nil {
						break
					}
					if providers.KindOf(err) != providers.StaleView {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	gotView, err := emulated(t, store).Records(ctx, zone)
	got := gotView.Endpoints
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0].Targets) != writers*rounds {
		t.Fatalf("zone holds %v, want one set of %d targets", got, writers*rounds)
	}
}

// 200 writes per minute per zone: when another cluster has used them (its providers pace their own
// writes, not ours), the 201st is refused with 429 and a Retry-After beyond the client's bounded
// backoff, so Apply returns Transient at once, without a retry storm; a minute later the zone takes
// writes again. (pacer_test.go covers this process's own writes and the production retry policy.)
func TestThrottling(t *testing.T) {
	ctx := t.Context()
	store := emulator.NewStore(subscription)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var clockMu sync.Mutex
	store.SetClock(func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return now })
	other, p := emulated(t, store), emulated(t, store)
	zone := newZone(t, store, p)
	for batch := range emulator.WritesPerMinute / MaxChangesPerBatch {
		var eps []*v1alpha1.Endpoint
		for i := range MaxChangesPerBatch {
			eps = append(eps, a("r"+string(rune('a'+batch))+strings.Repeat("x", i)+"."+zone.DNSName, "192.0.2.1"))
		}
		if err := other.Apply(ctx, zone, nil, &providers.Changes{Create: eps}); err != nil {
			t.Fatal(err)
		}
	}
	before := store.Calls()["RecordSets.CreateOrUpdate"]
	err := p.Apply(ctx, zone, nil, &providers.Changes{Create: []*v1alpha1.Endpoint{a("late."+zone.DNSName, "192.0.2.9")}})
	if providers.KindOf(err) != providers.Transient || !strings.Contains(err.Error(), "429") {
		t.Fatalf("Apply = %v, want Transient from a 429", err)
	}
	if n := store.Calls()["RecordSets.CreateOrUpdate"] - before; n != 1 {
		t.Errorf("the throttled write was sent %d times, want once (Retry-After exceeds the bounded backoff)", n)
	}
	clockMu.Lock()
	now = now.Add(time.Minute + time.Second)
	clockMu.Unlock()
	if err := p.Apply(ctx, zone, nil, &providers.Changes{Create: []*v1alpha1.Endpoint{a("late."+zone.DNSName, "192.0.2.9")}}); err != nil {
		t.Fatalf("Apply a minute later: %v", err)
	}
}

// Errors are classified, and carry neither secret values nor request IDs.
func TestErrors(t *testing.T) {
	ctx := t.Context()
	store := emulator.NewStore(subscription)
	denied := &azfake.TokenCredential{}
	denied.SetError(&azidentity.AuthenticationFailedError{})
	if _, err := withTransport(t, store.Transport(), denied).Zones(ctx); providers.KindOf(err) != providers.Permanent {
		t.Errorf("Zones with a failing credential = %v, want Permanent", err)
	} else {
		checkMessage(t, err)
	}

	p := emulated(t, store)
	missing := providers.Zone{ID: "/subscriptions/" + subscription + "/resourceGroups/" + resourceGroup +
		"/providers/Microsoft.Network/dnszones/unseen.example.com", DNSName: "unseen.example.com"}
	if _, err := p.Records(ctx, missing); providers.KindOf(err) != providers.Permanent {
		t.Errorf("Records of a zone the credentials cannot see = %v, want Permanent", err)
	} else {
		checkMessage(t, err)
	}

	// Faults on every request outlast the SDK's bounded retries: Transient.
	store.SetFaults(1, 1)
	_, err := p.Zones(ctx)
	if providers.KindOf(err) != providers.Transient {
		t.Errorf("Zones under faults = %v, want Transient", err)
	} else {
		checkMessage(t, err)
	}
	if n := store.Calls()["Faults"]; n != 4 {
		t.Errorf("%d requests under faults, want 4 (one try and three bounded retries)", n)
	}
}

func checkMessage(t *testing.T, err error) {
	t.Helper()
	msg := strings.ToLower(err.Error())
	for _, bad := range []string{strings.ToLower(clientSecret), "request id", "x-ms-request-id", "response", "tenant "} {
		if strings.Contains(msg, bad) {
			t.Errorf("error %q contains %q", err, bad)
		}
	}
}

// A weighted set is one Traffic Manager profile; updating it swaps in a new profile and removes the
// old one; deleting the sets removes the profile.
func TestProfileLifecycle(t *testing.T) {
	ctx := t.Context()
	store := emulator.NewStore(subscription)
	p := emulated(t, store)
	zone := newZone(t, store, p)
	set := func(id, target, weight string) *v1alpha1.Endpoint {
		return v1alpha1.NewEndpoint("eu.klb."+zone.DNSName, v1alpha1.RecordTypeCNAME, 60, target).
			WithSetIdentifier(id).WithProviderSpecific(v1alpha1.ProviderSpecificWeight, weight)
	}
	one, two := set("gw1", "gw1.example.net", "120"), set("gw2", "gw2.example.net", "0")
	if err := p.Apply(ctx, zone, nil, &providers.Changes{Create: []*v1alpha1.Endpoint{one, two}}); err != nil {
		t.Fatal(err)
	}
	first := store.Profiles(resourceGroup)
	if len(first) != 1 {
		t.Fatalf("profiles %v, want one for the name", first)
	}
	if err := p.Apply(ctx, zone, nil, &providers.Changes{UpdateOld: []*v1alpha1.Endpoint{two}, UpdateNew: []*v1alpha1.Endpoint{set("gw2", "gw2.example.net", "60")}}); err != nil {
		t.Fatal(err)
	}
	second := store.Profiles(resourceGroup)
	if len(second) != 1 || second[0] == first[0] {
		t.Fatalf("profiles after an update %v, want one that replaced %v", second, first)
	}
	gotView, err := p.Records(ctx, zone)
	got := gotView.Endpoints
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1].ProviderSpecific[0].Value != "60" {
		t.Errorf("Records = %v, want gw2 at weight 60", got)
	}
	if err := p.Apply(ctx, zone, nil, &providers.Changes{Delete: got}); err != nil {
		t.Fatal(err)
	}
	if left := store.Profiles(resourceGroup); len(left) != 0 {
		t.Errorf("profiles after deleting the sets: %v, want none", left)
	}
}

// A resource group that does not exist is the Secret's fault: the error names the azure.json field
// and the group, and is Permanent.
func TestMissingResourceGroupNamesTheField(t *testing.T) {
	store := emulator.NewStore(subscription)
	cfg := strings.Replace(validJSON(), `"resourceGroup":"`+resourceGroup+`"`, `"resourceGroup":"no-such-rg"`, 1)
	backend, err := NewConstructor(
		WithClientOptions(arm.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: store.Transport()}}),
		WithCredential(&azfake.TokenCredential{}),
	)(t.Context(), secret(cfg), providers.Env{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	p := backend.Zones
	_, err = p.Zones(t.Context())
	if providers.KindOf(err) != providers.Permanent || err == nil || !strings.Contains(err.Error(), "field resourceGroup: resource group no-such-rg does not exist") {
		t.Errorf("Zones() = %v (%v), want a Permanent error naming field resourceGroup and the group", err, providers.KindOf(err))
	}
	checkMessage(t, err)
	if n := store.Calls()["Zones.ListByResourceGroup"]; n != 1 {
		t.Errorf("%d listings, want 1 (a 404 is not retried)", n)
	}
}
