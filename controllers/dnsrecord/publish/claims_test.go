package publish

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
)

// claims returns the ownership TXT values of the zone by owner and record.
func claims(t *testing.T, store *inmemory.Store, zoneID string) map[string]string {
	t.Helper()
	eps, err := store.Snapshot(zoneID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range eps {
		if c, ok := registry.ParseTXT(e); ok {
			out[c.Owner+" "+c.Record.RecordType+" "+c.Record.DNSName] = strings.Join(e.Targets, " ")
		}
	}
	return out
}

func kuadrantTXT(owner string) string {
	return `"heritage=external-dns,external-dns/owner=` + owner + `,external-dns/version=1"`
}

// Owners of one cluster sharing a record write Kuadrant's claims, which do not say whose targets
// the record holds: the publisher remembers what each of them wants. When one leaves, a target the
// other wants too stays, and only the leaver's own goes. The two come through two Secrets (two
// queues for one zone): they are still one cluster's.
func TestOneClusterWritesKuadrantsClaims(t *testing.T) {
	store, zone := newZone(t)
	p, prov := New(slow()), provider(store)
	t.Cleanup(p.Close)
	publish(t, p, prov, zone, Request{OwnerID: "a1", Desired: []*v1alpha1.Endpoint{a("s.example.com", "10.0.0.1")}})
	second := func(req Request) Outcome {
		t.Helper()
		out, err := p.Publish(context.Background(), prov, "second-secret", zone, req)
		if err != nil {
			t.Fatalf("publish %s: %v", req.OwnerID, err)
		}
		return out
	}
	out := second(Request{OwnerID: "a2", Desired: []*v1alpha1.Endpoint{a("s.example.com", "10.0.0.1", "10.0.0.2")}})
	want := map[string]string{"a1 A s.example.com": kuadrantTXT("a1"), "a2 A s.example.com": kuadrantTXT("a2")}
	if got := claims(t, store, zone.ID); !reflect.DeepEqual(got, want) {
		t.Fatalf("claims %v, want Kuadrant's %v", got, want)
	}
	if got := records(t, store, zone)["s.example.com A"]; got != "[10.0.0.1 10.0.0.2]" {
		t.Fatalf("s.example.com A %s, want both targets", got)
	}
	second(Request{OwnerID: "a2", Previous: out.Plan.Published})
	if got := records(t, store, zone)["s.example.com A"]; got != "[10.0.0.1]" {
		t.Errorf("after a2 left s.example.com A holds %s, want a1's 10.0.0.1 alone", got)
	}
	if got, want := claims(t, store, zone.ID), map[string]string{"a1 A s.example.com": kuadrantTXT("a1")}; !reflect.DeepEqual(got, want) {
		t.Errorf("claims %v, want %v", got, want)
	}
}

// An owner of another cluster joins a name where our claim is Kuadrant's: the next read of the zone
// asks our owner to plan again, and its claim then states its wish and our lease, so the other
// cluster can publish it or withdraw it.
func TestForeignOwnerGetsOurWish(t *testing.T) {
	store, zone := newZone(t)
	prov := provider(store)
	replan := make(chan []string, 16)
	pa := New(leaseOptions("cluster-a", replan))
	pb := New(leaseOptions("cluster-b", make(chan []string, 16)))
	t.Cleanup(pa.Close)
	t.Cleanup(pb.Close)
	ours := Request{OwnerID: "a1", Desired: []*v1alpha1.Endpoint{a("s.example.com", "10.0.0.1")}}
	out := publish(t, pa, prov, zone, ours)
	if got := claims(t, store, zone.ID)["a1 A s.example.com"]; got != kuadrantTXT("a1") {
		t.Fatalf("a1 alone claims %s, want Kuadrant's", got)
	}
	publish(t, pb, prov, zone, Request{OwnerID: "b1", Desired: []*v1alpha1.Endpoint{a("s.example.com", "10.0.0.2")}})
	if got := claims(t, store, zone.ID)["b1 A s.example.com"]; !strings.Contains(got, "claim-targets=10.0.0.2") || !strings.Contains(got, "claim-lease=") {
		t.Fatalf("b1 joins a1 of another cluster and claims %s, want its wish and lease stated", got)
	}
	// Cluster a reads the zone again on its next cycle (here another owner's).
	pa.Forget("account", zone)
	publish(t, pa, prov, zone, Request{OwnerID: "a3", Desired: []*v1alpha1.Endpoint{a("t.example.com", "10.0.0.3")}})
	awaitReplan(t, replan, "a1", 5*time.Second)
	ours.Previous = out.Plan.Published
	publish(t, pa, prov, zone, ours)
	got := claims(t, store, zone.ID)
	if c := got["a1 A s.example.com"]; !strings.Contains(c, "claim-targets=10.0.0.1") || !strings.Contains(c, "claim-lease=") {
		t.Errorf("a1 after b1 joined claims %s, want its wish and lease stated", c)
	}
	if c := got["a3 A t.example.com"]; c != kuadrantTXT("a3") {
		t.Errorf("a3, alone at its name, claims %s, want Kuadrant's", c)
	}
}

// On a delegation primary, this cluster's delegating record claims a name of the authoritative
// record alone (Kuadrant's claim); then another cluster's delegating record, carrying that
// cluster's lease, joins it through the same publisher. The two renew different leases, so the next
// read of the zone asks ours to plan again and its claim then states its wish (and names no lease:
// a delegated claim names only its own cluster's), as every primary building the authoritative
// record writes it. Found by TestDelegationAcrossClusters (test/e2e): a secondary that returned
// after its lease had expired left the primaries with different authoritative records.
func TestDelegatedOwnerOfAnotherClusterGetsOurWish(t *testing.T) {
	store, zone := newZone(t)
	prov := provider(store)
	replan := make(chan []string, 16)
	p := New(leaseOptions("primary", replan))
	t.Cleanup(p.Close)
	ours := Request{OwnerID: "p1", Delegated: true, Desired: []*v1alpha1.Endpoint{a("s.example.com", "10.0.0.1")}}
	out := publish(t, p, prov, zone, ours)
	if got := claims(t, store, zone.ID)["p1 A s.example.com"]; got != kuadrantTXT("p1") {
		t.Fatalf("p1 alone claims %s, want Kuadrant's", got)
	}
	l := lease.Renew("secondary", time.Now(), time.Second, 3*time.Second)
	publish(t, p, prov, zone, Request{OwnerID: "s1", Delegated: true, Lease: &l, Desired: []*v1alpha1.Endpoint{a("s.example.com", "10.0.0.2")}})
	if got := claims(t, store, zone.ID)["s1 A s.example.com"]; !strings.Contains(got, "claim-targets=10.0.0.2") || !strings.Contains(got, "claim-lease="+lease.Key("secondary")) {
		t.Fatalf("s1 joins p1 and claims %s, want its wish and its cluster's lease stated", got)
	}
	p.Forget("account", zone)
	publish(t, p, prov, zone, Request{OwnerID: "p3", Delegated: true, Desired: []*v1alpha1.Endpoint{a("t.example.com", "10.0.0.3")}})
	awaitReplan(t, replan, "p1", 5*time.Second)
	ours.Previous = out.Plan.Published
	publish(t, p, prov, zone, ours)
	if c := claims(t, store, zone.ID)["p1 A s.example.com"]; !strings.Contains(c, "claim-targets=10.0.0.1") || strings.Contains(c, "claim-lease=") {
		t.Errorf("p1 after s1 joined claims %s, want its wish stated and no lease", c)
	}
}
