package plan

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/batch"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// Three owners share an A record, each renewing a lease while alive; they die and
// come back at random, and each live owner plans with the owners whose lease its own judge counts
// expired. A live owner's target is never withdrawn, the name is never emptied, and a dead owner is
// gone from the record after the first pass of a live owner once its lease expired by that owner's
// clock.
func TestLeasesWithPlans(t *testing.T) {
	const (
		name     = "s.example.com"
		renewal  = 30 * time.Second
		duration = 90 * time.Second
		tick     = 5 * time.Second
		rounds   = 3000
	)
	rng := rand.New(rand.NewPCG(3, 5))
	start := time.Unix(1_700_000_000, 0)
	z := newZone()
	ids := []string{"a", "b", "c"}
	owners := map[string]*owner{}
	alive := map[string]bool{}
	judges := map[string]*lease.Judge{}
	records := map[string]*v1alpha1.Endpoint{}
	deadSince := map[string]time.Time{}
	for i, id := range ids {
		owners[id] = &owner{id: id}
		alive[id] = true
		judges[id] = &lease.Judge{}
		records[id] = lease.Renew(id, start, renewal, duration).Record("example.com")
		step(t, z, owners[id], eps(rec(name, "A", 60, fmt.Sprintf("10.0.0.%d", i+1))))
	}
	withdrawn := 0
	for r := range rounds {
		now := start.Add(time.Duration(r) * tick)
		// Someone dies or comes back now and then; never all at once.
		if rng.IntN(40) == 0 {
			id := ids[rng.IntN(len(ids))]
			living := 0
			for _, a := range alive {
				if a {
					living++
				}
			}
			if !alive[id] || living > 1 {
				alive[id] = !alive[id]
				if !alive[id] {
					deadSince[id] = now
				}
			}
		}
		for _, id := range ids {
			if alive[id] {
				records[id] = lease.Renew(id, now, renewal, duration).Record("example.com")
			}
		}
		id := ids[rng.IntN(len(ids))]
		if !alive[id] {
			continue
		}
		var expired []string
		for _, other := range ids {
			l, _ := lease.Parse(records[other])
			if other != id && judges[id].Judge("example.com", l, records[other], now).Expired {
				expired = append(expired, other)
			}
		}
		i := slices.Index(ids, id)
		step(t, z, owners[id], eps(rec(name, "A", 60, fmt.Sprintf("10.0.0.%d", i+1))), expired...)
		records := z.records()
		if len(records) != 1 {
			t.Fatalf("round %d: the name holds %v", r, records)
		}
		for j, other := range ids {
			ip := fmt.Sprintf("10.0.0.%d", j+1)
			held := strings.Contains(records[0], ip)
			switch {
			case alive[other] && other == id && !held:
				t.Fatalf("round %d: %s's own target %s is not published: %v", r, other, ip, records)
			case !alive[other] && slices.Contains(expired, other) && held:
				t.Fatalf("round %d: %s expired by %s's judge, yet its target stays: %v", r, other, id, records)
			case !alive[other] && !held:
				withdrawn++
			}
		}
		// A live owner's target may only be missing if it has not passed since coming back.
		for j, other := range ids {
			if alive[other] && !strings.Contains(records[0], fmt.Sprintf("10.0.0.%d", j+1)) && deadSince[other].IsZero() {
				t.Fatalf("round %d: live owner %s, never dead, lost its target: %v", r, other, records)
			}
		}
	}
	if withdrawn == 0 {
		t.Error("no dead owner was ever withdrawn: the test exercises nothing")
	}
}

// An owner with a lease names it in its claims at names it shares with another cluster's owner,
// and only there: alone, or beside owners of its own cluster, its claim is the one Kuadrant writes.
// A claim written before the lease is rewritten once with it, and then left alone.
func TestClaimsNameTheLease(t *testing.T) {
	z := newZone()
	a, b, c := &owner{id: "a"}, &owner{id: "b"}, &owner{id: "c"}
	want := eps(rec("s.example.com", "A", 60, "10.0.0.1"))
	step(t, z, a, want)
	local := func(o string) bool { return o == "c" }
	plan := func() *Result {
		t.Helper()
		res, err := Plan(Input{OwnerID: "a", ZoneName: "example.com", Current: z.endpoints(), Previous: a.published,
			Desired: want, Lease: "cluster1", Local: local})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := plan(); !res.Changes.Empty() {
		t.Fatalf("alone, the claim needs no lease: %s", describeChanges(res.Changes))
	}
	step(t, z, c, eps(rec("s.example.com", "A", 60, "10.0.0.3")))
	if res := plan(); !res.Changes.Empty() {
		t.Fatalf("beside an owner of its own cluster, the claim needs no lease: %s", describeChanges(res.Changes))
	}
	step(t, z, b, eps(rec("s.example.com", "A", 60, "10.0.0.2")))
	res := plan()
	if len(res.Changes.UpdateNew) != 1 || !strings.Contains(res.Changes.UpdateNew[0].Targets[0], "external-dns/claim-lease=cluster1") {
		t.Fatalf("beside another cluster's owner, the claim names the lease: %s", describeChanges(res.Changes))
	}
	if err := z.apply(res.Changes); err != nil {
		t.Fatal(err)
	}
	a.published = res.Published
	if again := plan(); !again.Changes.Empty() {
		t.Fatalf("planning again: %s", describeChanges(again.Changes))
	}
	step(t, z, b, nil)
	if again := plan(); !again.Changes.Empty() {
		t.Fatalf("once the other cluster leaves, the claim keeps its lease rather than churn: %s", describeChanges(again.Changes))
	}
}

// never is a LeaseExpired under which no lease has expired.
func never(string) bool { return false }

// leasedStep plans for one owner with its lease and the leases counted expired, checks the batch
// through the gate with the owners the plan withdraws as expired, and applies it.
func leasedStep(t *testing.T, z strictZone, o *owner, desired []*v1alpha1.Endpoint, lease string, expired func(string) bool) *Result {
	t.Helper()
	res, err := Plan(Input{OwnerID: o.id, ZoneName: "example.com", Current: z.endpoints(), Previous: o.published,
		Desired: desired, Lease: lease, LeaseExpired: expired})
	if err != nil {
		t.Fatal(err)
	}
	if err := registry.Read(z.endpoints()).Check([]string{o.id}, res.Withdrawn, res.Changes); err != nil {
		t.Fatalf("%s: the gate refused: %v\n%s", o.id, err, describeChanges(res.Changes))
	}
	if err := z.apply(res.Changes); err != nil {
		t.Fatal(err)
	}
	o.published = res.Published
	return res
}

// Leases as the engine feeds them (Input.LeaseExpired, by the lease a claim names): a dead owner
// whose TTL had won hands over to the live owners' wish; an owner whose claims name no lease (as
// Kuadrant writes them) is never withdrawn, nor is a live owner; the gate passes the batch with the
// withdrawn owners as expired, and Result.Withdrawn names them.
func TestExpiredLeaseHandsOver(t *testing.T) {
	z := newZone()
	dead, live := &owner{id: "a-dead"}, &owner{id: "b-live"}
	plan := func(o *owner, desired []*v1alpha1.Endpoint, lease string, expired func(string) bool) *Result {
		t.Helper()
		return leasedStep(t, z, o, desired, lease, expired)
	}
	deadWish := eps(rec("s.example.com", "A", 30, "10.0.0.1"))
	liveWish := eps(rec("s.example.com", "A", 60, "10.0.0.2"))
	plan(dead, deadWish, "leaseA", never)
	plan(live, liveWish, "leaseB", never)
	plan(dead, deadWish, "leaseA", never) // sees b-live, another cluster's: names its lease
	k := rec("s.example.com", "A", 30, "10.0.0.1", "10.0.0.2", "10.0.0.3")
	if err := z.apply(&batch.Changes{UpdateOld: eps(z.endpoint(t, "s.example.com", "A")), UpdateNew: eps(k)}); err != nil {
		t.Fatal(err)
	}
	if err := z.apply(&batch.Changes{Create: eps(kuadrantTXT("k-kuadrant", k))}); err != nil {
		t.Fatal(err)
	}
	res := plan(live, liveWish, "leaseB", never)
	if len(res.Conflicts) == 0 || res.Conflicts[0].WinnerOwner != "a-dead" {
		t.Fatalf("before expiry a-dead's TTL should win: %+v", res.Conflicts)
	}
	res = plan(live, liveWish, "leaseB", func(l string) bool { return l == "leaseA" })
	if fmt.Sprint(res.Withdrawn) != "[a-dead]" {
		t.Fatalf("Withdrawn = %v, want [a-dead]", res.Withdrawn)
	}
	if len(res.Conflicts) != 0 {
		t.Errorf("the live owner's conflict did not clear once the winner's lease expired: %+v", res.Conflicts)
	}
	got := z.endpoint(t, "s.example.com", "A")
	if got.RecordTTL != 60 || fmt.Sprint(got.Targets) != "[10.0.0.2 10.0.0.3]" {
		t.Errorf("after the hand-over the record is %s, want TTL 60 with the live owner's and Kuadrant's targets", line(got))
	}
	owners := z.owners(t, "s.example.com", "A")
	if fmt.Sprint(owners) != "[b-live k-kuadrant]" {
		t.Errorf("owners after the hand-over: %v", owners)
	}
	// Every lease expired: still the Kuadrant owner's claim (no lease) and the live owner's stay.
	res = plan(live, liveWish, "leaseB", func(string) bool { return true })
	if !res.Changes.Empty() || len(res.Withdrawn) != 0 {
		t.Errorf("a claim naming no lease was withdrawn: %v\n%s", res.Withdrawn, describeChanges(res.Changes))
	}
}

// The default geo, as loadbalanced policies write it: each owner wants the default set to point at
// its own geo, the lowest owner ID's is published. Once the winner's lease expires the live owner's
// geo is the default, with no human action.
func TestExpiredLeaseHandsOverTheDefaultGeo(t *testing.T) {
	z := newZone()
	dead, live := &owner{id: "a-dead"}, &owner{id: "b-live"}
	defaultTo := func(geo string) []*v1alpha1.Endpoint {
		return eps(rec("klb.app.example.com", "CNAME", 300, geo+".klb.app.example.com").WithSetIdentifier("default").WithProviderSpecific("geo-code", "*"))
	}
	plan := func(o *owner, desired []*v1alpha1.Endpoint, lease string, expired func(string) bool) *Result {
		t.Helper()
		return leasedStep(t, z, o, desired, lease, expired)
	}
	plan(dead, defaultTo("ie"), "leaseA", never)
	plan(live, defaultTo("us"), "leaseB", never)
	plan(dead, defaultTo("ie"), "leaseA", never)
	if res := plan(live, defaultTo("us"), "leaseB", never); len(res.Conflicts) != 1 || res.Conflicts[0].WinnerOwner != "a-dead" {
		t.Fatalf("before expiry the dead owner's default geo should win: %+v", res.Conflicts)
	}
	res := plan(live, defaultTo("us"), "leaseB", func(l string) bool { return l == "leaseA" })
	if len(res.Conflicts) != 0 || fmt.Sprint(res.Withdrawn) != "[a-dead]" {
		t.Fatalf("after expiry: conflicts %+v, withdrawn %v", res.Conflicts, res.Withdrawn)
	}
	got := z.endpoints()
	if !slices.ContainsFunc(got, func(e *v1alpha1.Endpoint) bool {
		return e.RecordType == "CNAME" && e.SetIdentifier == "default" && fmt.Sprint(e.Targets) == "[us.klb.app.example.com]"
	}) {
		t.Errorf("the default geo is not the live owner's: %v", got)
	}
}

// Two clusters in one geo: each cluster's weighted member of the geo's set is its own record key.
// When one cluster is gone, the other's next plan withdraws the gone cluster's member with its
// claim, so the geo's answers go to the live cluster only; the gone cluster's leaf, a name only it
// holds, stays as it was. A plan that withdraws the member depends on the live member's claim.
func TestGoneClusterLeavesTheWeightedSet(t *testing.T) {
	z := newZone()
	a, b := &owner{id: "a"}, &owner{id: "b"}
	treeA, treeB := loadbalanced("IE", "aaaaaa-111111", "1.1.1.1", true), loadbalanced("IE", "bbbbbb-222222", "2.2.2.2", true)
	step(t, z, a, treeA)
	step(t, z, b, treeB)
	member := func(leaf string) string {
		return "ie.klb.app.example.com CNAME [" + leaf + ".klb.app.example.com] 60 " + leaf + ".klb.app.example.com {weight=120}"
	}
	if got := z.records(); !slices.Contains(got, member("aaaaaa-111111")) || !slices.Contains(got, member("bbbbbb-222222")) {
		t.Fatalf("both members are not published:\n%s", strings.Join(got, "\n"))
	}
	res := step(t, z, b, treeB, "a")
	if !slices.Equal(res.Withdrawn, []string{"a"}) {
		t.Errorf("withdrawn %v, want a", res.Withdrawn)
	}
	got := z.records()
	if slices.Contains(got, member("aaaaaa-111111")) || !slices.Contains(got, member("bbbbbb-222222")) {
		t.Errorf("after a is gone the geo's set holds:\n%s", strings.Join(got, "\n"))
	}
	if !slices.Contains(got, "aaaaaa-111111.klb.app.example.com A 60 1.1.1.1") {
		t.Errorf("a's leaf, which only a held, was taken:\n%s", strings.Join(got, "\n"))
	}
	for _, c := range z.claims() {
		if strings.HasPrefix(c, "a ") && strings.Contains(c, "ie.klb.app.example.com") {
			t.Errorf("a's claim on its member stays: %s", c)
		}
	}

	// Three clusters in the geo, b gone: c's plan withdraws b's member for the sake of a's, the
	// first live member, so its batch depends on a's claim there (a may be leaving at this moment).
	z = newZone()
	c := &owner{id: "c"}
	treeC := loadbalanced("IE", "cccccc-333333", "3.3.3.3", true)
	step(t, z, a, treeA)
	step(t, z, b, treeB)
	step(t, z, c, treeC)
	res = step(t, z, c, treeC, "b")
	if got := z.records(); slices.Contains(got, member("bbbbbb-222222")) || !slices.Contains(got, member("aaaaaa-111111")) {
		t.Errorf("after c's plan the geo's set holds:\n%s", strings.Join(got, "\n"))
	}
	if !slices.ContainsFunc(res.Changes.Require, func(e *v1alpha1.Endpoint) bool {
		cl, ok := registry.ParseTXT(e)
		return ok && cl.Owner == "a" && cl.Record.DNSName == "ie.klb.app.example.com"
	}) {
		t.Errorf("c's batch does not depend on a's member's claim: requires %v", lines(res.Changes.Require))
	}
}

// The default geo that only a gone cluster published stays: without it the clients of every geo no
// other cluster serves would get no answer. The gone cluster's own geo entry goes.
func TestGoneClusterKeepsTheDefaultGeo(t *testing.T) {
	z := newZone()
	a, b := &owner{id: "a"}, &owner{id: "b"}
	step(t, z, a, loadbalanced("JP", "aaaaaa-111111", "1.1.1.1", true))
	treeB := loadbalanced("US", "bbbbbb-222222", "2.2.2.2", false)
	step(t, z, b, treeB)
	step(t, z, b, treeB, "a")
	got := z.records()
	if !slices.Contains(got, "klb.app.example.com CNAME [default] 300 jp.klb.app.example.com {geo-code=*}") {
		t.Errorf("the default geo left with a:\n%s", strings.Join(got, "\n"))
	}
	if slices.Contains(got, "klb.app.example.com CNAME [JP] 300 jp.klb.app.example.com {geo-code=JP}") {
		t.Errorf("a's JP entry stays:\n%s", strings.Join(got, "\n"))
	}
}
