package publish

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// cutProvider loses every call while cut, as a cluster partitioned from its DNS provider.
type cutProvider struct {
	providers.Provider
	cut atomic.Bool
}

func (p *cutProvider) Records(ctx context.Context, zone providers.Zone) (providers.View, error) {
	if p.cut.Load() {
		return providers.View{}, providers.Errorf(providers.Transient, "partitioned")
	}
	return p.Provider.Records(ctx, zone)
}

func (p *cutProvider) Apply(ctx context.Context, zone providers.Zone, st providers.State, c *providers.Changes) error {
	if p.cut.Load() {
		return providers.Errorf(providers.Transient, "partitioned")
	}
	return p.Provider.Apply(ctx, zone, st, c)
}

func leaseOptions(holder string, replan chan []string) Options {
	o := Options{MaxAge: 300 * time.Millisecond, Gather: 10 * time.Millisecond, MaxGather: 100 * time.Millisecond, StaleRetries: 3,
		Leases: Leases{Holder: holder, Every: time.Second, Duration: 3 * time.Second, Tolerance: 500 * time.Millisecond}}
	o.Replan = func(owners []string) { replan <- owners }
	return o
}

// awaitReplan waits for a publisher to ask owner to plan again.
func awaitReplan(t *testing.T, replan chan []string, owner string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := time.After(within)
	for {
		select {
		case owners := <-replan:
			if slices.Contains(owners, owner) {
				return time.Since(start)
			}
		case <-deadline:
			t.Fatalf("no replan of %s within %v", owner, within)
		}
	}
}

// Two clusters share a name. Each renews its lease, and its claim names it. One is cut off from the
// provider: the other judges its lease expired on its own clock, asks its owner to plan again, and
// that plan withdraws the cut cluster's target. Once the cut heals, the returning cluster's renewal
// comes after a gap longer than its lease, so its owner is asked to plan again and re-publishes.
func TestLeaseWithdrawsACutOffCluster(t *testing.T) {
	store, zone := newZone(t)
	replanA, replanB := make(chan []string, 16), make(chan []string, 16)
	pa, pb := New(leaseOptions("cluster-a", replanA)), New(leaseOptions("cluster-b", replanB))
	t.Cleanup(pa.Close)
	t.Cleanup(pb.Close)
	provA, provB := &cutProvider{Provider: provider(store)}, provider(store)
	wantA, wantB := []*v1alpha1.Endpoint{a("s.example.com", "10.0.0.1")}, []*v1alpha1.Endpoint{a("s.example.com", "10.0.0.2")}
	outA := publish(t, pa, provA, zone, Request{OwnerID: "a1", Desired: wantA})
	outB := publish(t, pb, provB, zone, Request{OwnerID: "b1", Desired: wantB})
	pa.Forget("account", zone) // a re-check after the view's age: it sees b1
	outA = publish(t, pa, provA, zone, Request{OwnerID: "a1", Previous: outA.Plan.Published, Desired: wantA})
	outB = publish(t, pb, provB, zone, Request{OwnerID: "b1", Previous: outB.Plan.Published, Desired: wantB})
	if !outA.Validated || !outB.Validated || !outA.Renewal.Needed {
		t.Fatalf("sharing a name: validated %v %v, lease needed %v", outA.Validated, outB.Validated, outA.Renewal.Needed)
	}
	eps, _ := store.Snapshot(zone.ID)
	for _, holder := range []string{"cluster-a", "cluster-b"} {
		name := lease.RecordName(holder, "example.com")
		// The lease is written by the renewal after the claim that names it: within a period.
		for deadline := time.Now().Add(10 * time.Second); !slices.ContainsFunc(eps, func(e *v1alpha1.Endpoint) bool { return e.DNSName == name }); {
			if time.Now().After(deadline) {
				t.Fatalf("no lease %s in the zone: %v", name, eps)
			}
			time.Sleep(50 * time.Millisecond)
			eps, _ = store.Snapshot(zone.ID)
		}
		key := "external-dns/claim-lease=" + lease.Key(holder)
		if !slices.ContainsFunc(eps, func(e *v1alpha1.Endpoint) bool { return strings.Contains(fmt.Sprint(e.Targets), key) }) {
			t.Fatalf("no claim names %s's lease", holder)
		}
	}

	// Quiet: only renewals are written, one per cluster per period at most.
	before := store.ZoneCalls(zone.ID).Apply
	time.Sleep(4 * time.Second) // the window measured, not a wait for a condition
	if renewals := store.ZoneCalls(zone.ID).Apply - before; renewals < 2 || renewals > 2*5 {
		t.Errorf("%d writes in 4 s of two clusters renewing every second, want between 2 and 10", renewals)
	}

	provA.cut.Store(true)
	took := awaitReplan(t, replanB, "b1", 30*time.Second)
	t.Logf("cluster-b asked b1 to plan again %v after cluster-a was cut off (lease 3 s + tolerance 0.5 s)", took)
	outB = publish(t, pb, provB, zone, Request{OwnerID: "b1", Previous: outB.Plan.Published, Desired: wantB})
	if got := records(t, store, zone)["s.example.com A"]; got != "[10.0.0.2]" {
		t.Fatalf("after cluster-a's lease expired the record holds %s, want only cluster-b's target", got)
	}
	if v := outB.Leases["a1"]; fmt.Sprint(outB.Withdrawn) != "[a1]" || !v.Expired || v.Holder != "cluster-a" {
		t.Errorf("the withdrawing outcome reports withdrawn %v, a1's lease %+v", outB.Withdrawn, v)
	}

	provA.cut.Store(false)
	awaitReplan(t, replanA, "a1", 30*time.Second)
	outA = publish(t, pa, provA, zone, Request{OwnerID: "a1", Previous: outA.Plan.Published, Desired: wantA})
	if got := records(t, store, zone)["s.example.com A"]; got != "[10.0.0.1 10.0.0.2]" || !outA.Validated {
		t.Fatalf("after cluster-a came back the record holds %s (validated %v)", got, outA.Validated)
	}
}

// A cluster alone at its names writes no lease and its claims are those Kuadrant writes.
func TestNoLeaseWithoutSharing(t *testing.T) {
	store, zone := newZone(t)
	p := New(leaseOptions("cluster-a", make(chan []string, 16)))
	t.Cleanup(p.Close)
	prov := provider(store)
	out := publish(t, p, prov, zone, Request{OwnerID: "a1", Desired: []*v1alpha1.Endpoint{a("s.example.com", "10.0.0.1")}})
	publish(t, p, prov, zone, Request{OwnerID: "a2", Desired: []*v1alpha1.Endpoint{a("s.example.com", "10.0.0.3")}})
	p.Forget("account", zone)
	publish(t, p, prov, zone, Request{OwnerID: "a1", Previous: out.Plan.Published, Desired: []*v1alpha1.Endpoint{a("s.example.com", "10.0.0.1")}})
	eps, _ := store.Snapshot(zone.ID)
	for _, e := range eps {
		if strings.Contains(e.DNSName, "dnspolicy-lease") || strings.Contains(fmt.Sprint(e.Targets), "claim-lease") {
			t.Errorf("a cluster alone wrote %s %v", e.DNSName, e.Targets)
		}
	}
}

// A renewal due when a request changes the zone rides in that request's batch: one provider call
// for both. With nothing else to write, it is a batch of its own, once per period.
func TestRenewalRidesInTheBatch(t *testing.T) {
	store, zone := newZone(t)
	var clock atomic.Int64
	clock.Store(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).UnixNano())
	o := leaseOptions("cluster-a", make(chan []string, 16))
	o.Leases.Every, o.Leases.Duration = time.Hour, 3*time.Hour // no timer fires during the test
	p := New(o)
	p.now = func() time.Time { return time.Unix(0, clock.Load()) }
	t.Cleanup(p.Close)
	prov, other := provider(store), New(slow())
	want := []*v1alpha1.Endpoint{a("s.example.com", "10.0.0.1")}
	out := publish(t, p, prov, zone, Request{OwnerID: "a1", Desired: want})
	publish(t, other, prov, zone, Request{OwnerID: "b1", Desired: []*v1alpha1.Endpoint{a("s.example.com", "10.0.0.2")}})
	p.Forget("account", zone)
	out = publish(t, p, prov, zone, Request{OwnerID: "a1", Previous: out.Plan.Published, Desired: want}) // names the lease
	leaseValue := func() string {
		eps, _ := store.Snapshot(zone.ID)
		for _, e := range eps {
			if e.DNSName == lease.RecordName("cluster-a", "example.com") {
				return fmt.Sprint(e.Targets)
			}
		}
		return ""
	}
	p.Forget("account", zone)
	out = publish(t, p, prov, zone, Request{OwnerID: "a1", Previous: out.Plan.Published, Desired: want}) // writes the lease
	first := leaseValue()
	if first == "" {
		t.Fatal("no lease after the claim named it")
	}

	clock.Add(int64(time.Hour)) // the next period: the renewal is due
	before := store.ZoneCalls(zone.ID).Apply
	want = []*v1alpha1.Endpoint{a("s.example.com", "10.0.0.1", "10.0.0.9")}
	publish(t, p, prov, zone, Request{OwnerID: "a1", Previous: out.Plan.Published, Desired: want})
	if calls := store.ZoneCalls(zone.ID).Apply - before; calls != 1 {
		t.Errorf("a change with a renewal due took %d batches, want 1", calls)
	}
	if got := leaseValue(); got == first || got == "" {
		t.Errorf("the lease was not renewed with the change: %s", got)
	}
}
