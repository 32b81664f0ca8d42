package publish

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
	"github.com/dnspolicy/dnspolicy-controller/test/metricstest"
)

// countingProvider counts the writes made through it: one credential's renewals.
type countingProvider struct {
	providers.Provider
	applies atomic.Int64
}

func (p *countingProvider) Apply(ctx context.Context, zone providers.Zone, st providers.State, c *providers.Changes) error {
	p.applies.Add(1)
	return p.Provider.Apply(ctx, zone, st, c)
}

// awaitApplies waits until p has written more than n times.
func awaitApplies(t *testing.T, p *countingProvider, n int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); p.applies.Load() <= n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no write beyond %d within 10 s", n)
		}
	}
}

// The last record to leave a queue removes it: the queue stops renewing the lease it renewed every
// second, and the owner is no longer counted as this cluster's.
func TestReleasedQueueStopsRenewing(t *testing.T) {
	store, zone := newZone(t)
	p := New(leaseOptions("cluster-a", make(chan []string, 64)))
	t.Cleanup(p.Close)
	prov := &countingProvider{Provider: provider(store)}
	publishShared(t, p, prov, "ns/s/uid-1", store, zone)
	awaitApplies(t, prov, prov.applies.Load()) // a renewal on the timer, with no request
	if q, r := p.Queues(); q != 1 || r != 1 {
		t.Fatalf("%d queues held by %d records, want 1 and 1", q, r)
	}

	q := queueOf(t, p, "ns/s/uid-1", zone)
	p.Release("ns/r1")
	awaitStopped(t, q)
	if q, r := p.Queues(); q != 0 || r != 0 {
		t.Fatalf("after the last record left: %d queues held by %d records, want none", q, r)
	}
	if p.cluster.isLocal("a1") {
		t.Errorf("owner a1 is still counted as this cluster's once no queue serves it")
	}
	assertNoWrites(t, prov)
}

// A Secret deleted and created again under its name is another account (its UID): its records build
// a new queue with the new credentials, and dropping the old account stops the old queue's renewals.
func TestRecreatedSecretGetsANewQueue(t *testing.T) {
	store, zone := newZone(t)
	p := New(leaseOptions("cluster-a", make(chan []string, 64)))
	t.Cleanup(p.Close)
	old, recreated := &countingProvider{Provider: provider(store)}, &countingProvider{Provider: provider(store)}
	publishShared(t, p, old, "ns/s/uid-1", store, zone)
	awaitApplies(t, old, old.applies.Load())

	q := queueOf(t, p, "ns/s/uid-1", zone)
	p.Drop("ns/s/uid-1") // the Secret was deleted
	awaitStopped(t, q)
	if q, r := p.Queues(); q != 0 || r != 0 {
		t.Fatalf("after the Secret went: %d queues held by %d records, want none", q, r)
	}
	if _, err := p.Publish(context.Background(), recreated, "ns/s/uid-2", zone, Request{Record: "ns/r1", OwnerID: "a1",
		Desired: []*v1alpha1.Endpoint{a("s.example.com", "10.0.0.1")}}); err != nil {
		t.Fatal(err)
	}
	awaitApplies(t, recreated, recreated.applies.Load()) // the new queue renews
	if q, r := p.Queues(); q != 1 || r != 1 {
		t.Fatalf("with the new Secret: %d queues held by %d records, want 1 and 1", q, r)
	}
	assertNoWrites(t, old)
}

// A record that moves to another zone or Secret lets go of the queue it held.
func TestRecordMovingReleasesItsQueue(t *testing.T) {
	store, zone := newZone(t)
	p := New(slow())
	t.Cleanup(p.Close)
	prov := provider(store)
	for _, account := range []string{"ns/s/uid-1", "ns/t/uid-2"} {
		if _, err := p.Publish(context.Background(), prov, account, zone, Request{Record: "ns/r1", OwnerID: "a1",
			Desired: []*v1alpha1.Endpoint{a("m.example.com", "10.0.0.1")}}); err != nil {
			t.Fatal(err)
		}
		if q, r := p.Queues(); q != 1 || r != 1 {
			t.Fatalf("publishing with %s: %d queues held by %d records, want 1 and 1", account, q, r)
		}
	}
}

// publishShared publishes s.example.com from record ns/r1 (owner a1) of this cluster and from an owner
// of another cluster, so that a1's claim names this cluster's lease and the queue renews it every
// second (leaseOptions).
func publishShared(t *testing.T, p *Publisher, prov providers.Provider, account string, store *inmemory.Store, zone providers.Zone) {
	t.Helper()
	other := New(leaseOptions("cluster-b", make(chan []string, 64)))
	t.Cleanup(other.Close)
	if _, err := other.Publish(context.Background(), provider(store), "other", zone, Request{OwnerID: "b1",
		Desired: []*v1alpha1.Endpoint{a("s.example.com", "10.0.0.2")}}); err != nil {
		t.Fatal(err)
	}
	out, err := p.Publish(context.Background(), prov, account, zone, Request{Record: "ns/r1", OwnerID: "a1",
		Desired: []*v1alpha1.Endpoint{a("s.example.com", "10.0.0.1")}})
	if err != nil || !out.Renewal.Needed {
		t.Fatalf("publishing a shared name: lease needed %v, err %v", out.Renewal.Needed, err)
	}
}

// queueOf returns the queue p holds for account and zone.
func queueOf(t *testing.T, p *Publisher, account string, zone providers.Zone) *queue {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.queues[queueKey{account, zone.ID}]
	if q == nil {
		t.Fatalf("no queue for %s", account)
	}
	return q
}

// awaitStopped waits for a queue's goroutine to end: a cycle that began before a removal finishes
// with the waiters it had, and records how its renewal went after answering them.
func awaitStopped(t *testing.T, q *queue) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		q.mu.Lock()
		running := q.running
		q.mu.Unlock()
		if !running {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("a queue still runs after 10 s")
		}
	}
}

// assertNoWrites checks that nothing is written through prov over three renewal periods. Absence
// has no event to wait for: the window is measured.
func assertNoWrites(t *testing.T, prov *countingProvider) {
	t.Helper()
	before := prov.applies.Load()
	time.Sleep(3 * time.Second)
	if n := prov.applies.Load() - before; n != 0 {
		t.Errorf("%d writes with credentials no queue should use any more, want none", n)
	}
}

// panicOnce panics in its first read of the zone.
type panicOnce struct {
	providers.Provider
	panicked atomic.Bool
}

func (p *panicOnce) Records(ctx context.Context, zone providers.Zone) (providers.View, error) {
	if p.panicked.CompareAndSwap(false, true) {
		panic("backend bug")
	}
	return p.Provider.Records(ctx, zone)
}

// A cycle that panics fails its requests with a transient error (their reconciles retry with
// backoff), is counted, and the queue serves the next request.
func TestPanickingCycleFailsItsRequestsAndTheQueueCarriesOn(t *testing.T) {
	store, zone := newZone(t)
	p := New(slow())
	t.Cleanup(p.Close)
	prov := &panicOnce{Provider: provider(store)}
	panics := func() float64 {
		v, _ := metricstest.Value("dnspolicy_goroutine_panics_total", map[string]string{"component": "publish"})
		return v
	}
	before := panics()
	_, err := p.Publish(context.Background(), prov, "account", zone, Request{OwnerID: "o1", Desired: []*v1alpha1.Endpoint{a("p.example.com", "10.0.0.1")}})
	if providers.KindOf(err) != providers.Transient {
		t.Fatalf("the request of the cycle that panicked got %v, want a transient error", err)
	}
	if n := panics() - before; n != 1 {
		t.Errorf("%v panics counted, want 1", n)
	}
	out := publish(t, p, prov, zone, Request{OwnerID: "o1", Desired: []*v1alpha1.Endpoint{a("p.example.com", "10.0.0.1")}})
	if !out.Validated || records(t, store, zone)["p.example.com A"] != "[10.0.0.1]" {
		t.Errorf("the next request: validated %v, zone %v", out.Validated, records(t, store, zone))
	}
}
