package peers

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	gatewayapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnspolicyv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/builder"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/pkg/plan"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

const testZone = "gslb.example.com"

// cluster is one test cluster: an owner publishing a loadbalanced host.
type cluster struct {
	id, owner, geo, address string
	weight                  int
	defaultGeo              bool
}

var three = []cluster{
	{id: "11111111-aaaa-4000-8000-000000000001", owner: "owner-one", geo: "IE", address: "10.0.1.1", weight: 120, defaultGeo: true},
	{id: "22222222-bbbb-4000-8000-000000000002", owner: "owner-two", geo: "US", address: "10.0.2.1", weight: 60},
	{id: "33333333-cccc-4000-8000-000000000003", owner: "owner-three", geo: "IE", address: "10.0.3.1", weight: 240},
}

func (c cluster) desired(t testing.TB, host string) []*v1alpha1.Endpoint {
	t.Helper()
	eps, err := builder.Build(builder.Input{
		Hostname:    host,
		Addresses:   []gatewayapiv1.GatewayStatusAddress{{Value: c.address}},
		GatewayName: "gw", GatewayNamespace: "ns", ClusterID: c.id,
		LoadBalancing: &dnspolicyv1.LoadBalancingSpec{Weight: c.weight, Geo: c.geo, DefaultGeo: c.defaultGeo},
	})
	if err != nil {
		t.Fatal(err)
	}
	return eps
}

// settle plans owners against z until a pass changes nothing, as owners sharing a cloud zone do.
func settle(t testing.TB, z *registry.Zone, owners map[string][]*v1alpha1.Endpoint, local func(owner string) func(string) bool, expired []string) {
	t.Helper()
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range owners {
			if !yield(id) {
				return
			}
		}
	})
	published := map[string][]*v1alpha1.Endpoint{}
	for pass := 0; ; pass++ {
		if pass == 10 {
			t.Fatal("owners do not settle")
		}
		changed := false
		for _, id := range ids {
			if slices.Contains(expired, id) {
				continue
			}
			res, err := plan.Plan(plan.Input{OwnerID: id, ZoneName: testZone, Zone: z, Desired: owners[id], Previous: published[id], Local: local(id), Expired: expired})
			if err != nil {
				t.Fatal(err)
			}
			if err := z.Apply(res.Changes); err != nil {
				t.Fatal(err)
			}
			published[id] = res.Published
			changed = changed || !res.Changes.Empty()
		}
		if !changed {
			return
		}
	}
}

// export is what cluster c's authoritative records hold when c alone publishes its wishes, with
// its lease.
func (c cluster) export(t testing.TB, hosts ...string) Contribution {
	t.Helper()
	var desired []*v1alpha1.Endpoint
	for _, h := range hosts {
		desired = append(desired, c.desired(t, h)...)
	}
	ex := c.exportOf(t, desired)
	ex.Endpoints = append(ex.Endpoints, lease.Renew(c.id, time.Unix(1_700_000_000, 0), 5*time.Second, 20*time.Second).Record(testZone))
	return ex
}

// records are the zone's records without TXTs: what resolvers are answered.
func records(eps []*v1alpha1.Endpoint) []string {
	var out []string
	for _, e := range eps {
		if e.RecordType == v1alpha1.RecordTypeTXT {
			continue
		}
		targets := slices.Clone([]string(e.Targets))
		slices.Sort(targets)
		out = append(out, fmt.Sprintf("%s %s %q ttl=%d %v %v", e.DNSName, e.RecordType, e.SetIdentifier, e.RecordTTL, targets, e.ProviderSpecific))
	}
	slices.Sort(out)
	return out
}

// TestMergeIsTheSharedZone: three clusters' exports merge into the zone the same three owners
// would settle in a zone shared in a cloud, whatever order the exports come in.
func TestMergeIsTheSharedZone(t *testing.T) {
	var contributions []Contribution
	owners := map[string][]*v1alpha1.Endpoint{}
	clusterOf := map[string]string{}
	for _, c := range three {
		contributions = append(contributions, c.export(t, "api.gslb.example.com"))
		owners[c.owner] = c.desired(t, "api.gslb.example.com")
		clusterOf[c.owner] = c.id
	}
	shared := registry.Read(nil)
	settle(t, shared, owners, func(id string) func(string) bool {
		return func(o string) bool { return clusterOf[o] == clusterOf[id] }
	}, nil)
	want := records(endpointsOf(shared))

	first, err := Merge(testZone, contributions)
	if err != nil {
		t.Fatal(err)
	}
	if got := records(first.Endpoints); !slices.Equal(got, want) {
		t.Fatalf("merged records:\n%s\nwant the shared zone's:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !slices.Equal(first.Owners, []string{"owner-one", "owner-three", "owner-two"}) || len(first.Dropped) != 0 {
		t.Errorf("owners %v, dropped %v", first.Owners, first.Dropped)
	}
	for _, e := range first.Endpoints {
		if _, ok := lease.Parse(e); ok {
			t.Errorf("the merged zone holds lease %s", e.DNSName)
		}
	}
	// Every cluster merges in its own order: all serve the same zone, ownership TXTs included.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		shuffled := slices.Clone(contributions)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		again, err := Merge(testZone, shuffled)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(again.Endpoints) != fmt.Sprint(first.Endpoints) || !again.Changed.Equal(first.Changed) {
			t.Fatal("the merge depends on the order of the exports")
		}
	}
}

// simple is c's simple-strategy host: an A record every cluster adds its address to.
func (c cluster) simple(t testing.TB, host string) []*v1alpha1.Endpoint {
	t.Helper()
	eps, err := builder.Build(builder.Input{Hostname: host, Addresses: []gatewayapiv1.GatewayStatusAddress{{Value: c.address}},
		GatewayName: "gw", GatewayNamespace: "ns", ClusterID: c.id})
	if err != nil {
		t.Fatal(err)
	}
	return eps
}

// exportOf is the export of c publishing desired alone.
func (c cluster) exportOf(t testing.TB, desired []*v1alpha1.Endpoint) Contribution {
	t.Helper()
	z := registry.Read(nil)
	settle(t, z, map[string][]*v1alpha1.Endpoint{c.owner: desired}, func(string) func(string) bool { return nil }, nil)
	return Contribution{Cluster: lease.Key(c.id), Changed: time.Unix(1_700_000_000, 0), Endpoints: endpointsOf(z)}
}

// TestMergeWithdrawsExpired: an expired cluster's targets leave the records live owners still
// claim (its address in a shared A record) and the set groups where a live cluster holds another
// member (its weighted member of the IE set), and the names only it holds keep their records (a
// name is never emptied by expiry), as plan does in a cloud zone. When it comes back, its wishes
// merge again.
func TestMergeWithdrawsExpired(t *testing.T) {
	var contributions []Contribution
	for i, c := range three {
		desired := slices.Concat(c.desired(t, "api.gslb.example.com"), c.simple(t, "shared.gslb.example.com"))
		if i == 2 {
			desired = append(desired, c.simple(t, "www.gslb.example.com")...)
		}
		contributions = append(contributions, c.exportOf(t, desired))
	}
	contributions[2].Expired = true
	m, err := Merge(testZone, contributions)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Withdrawn, []string{"owner-three"}) {
		t.Errorf("withdrawn %v, want owner-three", m.Withdrawn)
	}
	got := strings.Join(records(m.Endpoints), "\n")
	if !strings.Contains(got, "shared.gslb.example.com A \"\" ttl=60 [10.0.1.1 10.0.2.1] []") {
		t.Errorf("the expired cluster's address is still in the shared record, or the live ones left:\n%s", got)
	}
	if !strings.Contains(got, "www.gslb.example.com A \"\" ttl=60 [10.0.3.1]") {
		t.Errorf("a record only the expired cluster holds was emptied:\n%s", got)
	}
	// Its weighted member leaves the IE set, where owner-one's stays: IE's answers go to the live
	// cluster only. Its leaf's own name, which only it holds, stays.
	if strings.Contains(got, "ie.klb.api.gslb.example.com CNAME \"36v36k") || !strings.Contains(got, "ie.klb.api.gslb.example.com CNAME") {
		t.Errorf("the expired cluster's member is still in the IE set, or the live one left:\n%s", got)
	}
	if !strings.Contains(got, "36v36k") {
		t.Errorf("the expired cluster's leaf, a name only it holds, was emptied:\n%s", got)
	}
	contributions[2].Expired = false
	back, err := Merge(testZone, contributions)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(records(back.Endpoints), "\n"), "[10.0.1.1 10.0.2.1 10.0.3.1]") || len(back.Withdrawn) != 0 {
		t.Errorf("the returned cluster is not merged: withdrawn %v", back.Withdrawn)
	}
}

// TestMergeConflicts: where clusters want different values for one shared thing (the TTL of the
// host's CNAME), the lowest owner's wish is served by every merge, as in a cloud zone.
func TestMergeConflicts(t *testing.T) {
	a, b := three[0], three[1]
	ca, cb := a.export(t, "api.gslb.example.com"), b.export(t, "api.gslb.example.com")
	// b's policy asks for another TTL of the host's CNAME: its export says so (claim-ttl or as
	// published, it is alone).
	for _, e := range cb.Endpoints {
		if e.DNSName == "api.gslb.example.com" && e.RecordType == v1alpha1.RecordTypeCNAME {
			e.RecordTTL = 30
		}
	}
	m, err := Merge(testZone, []Contribution{cb, ca})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range m.Endpoints {
		if e.DNSName == "api.gslb.example.com" && e.RecordType == v1alpha1.RecordTypeCNAME && e.RecordTTL != 300 {
			t.Errorf("the host's CNAME has TTL %d, want owner-one's 300 (owner-one < owner-two)", e.RecordTTL)
		}
	}
}

// TestMergeDropsStolenOwners: of two clusters claiming one owner, only the claims of the cluster
// whose key sorts first are merged, in whatever order the exports come, and the merge says so.
func TestMergeDropsStolenOwners(t *testing.T) {
	a := three[0]
	thief := three[1]
	thief.owner = a.owner
	ca, ct := a.export(t, "api.gslb.example.com"), thief.export(t, "evil.gslb.example.com")
	firstIsThief := ct.Cluster < ca.Cluster
	for _, order := range [][]Contribution{{ct, ca}, {ca, ct}} {
		m, err := Merge(testZone, order)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := m.Dropped[a.owner]; !ok {
			t.Errorf("dropped %v, want %s", m.Dropped, a.owner)
		}
		got := strings.Join(records(m.Endpoints), "\n")
		if strings.Contains(got, "evil") != firstIsThief || strings.Contains(got, "klb.api") == firstIsThief {
			t.Fatalf("both clusters' claims of %s, or the wrong one's, were merged:\n%s", a.owner, got)
		}
	}
}

// TestMergeKeepsHumanRecords: records nobody owns stay, and owners never overwrite them.
func TestMergeKeepsHumanRecords(t *testing.T) {
	c := three[0].export(t, "api.gslb.example.com")
	human := v1alpha1.NewEndpoint("static.gslb.example.com", v1alpha1.RecordTypeA, 60, "192.0.2.1")
	c.Endpoints = append(c.Endpoints, human)
	m, err := Merge(testZone, []Contribution{c, three[1].export(t, "api.gslb.example.com")})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(m.Endpoints, func(e *v1alpha1.Endpoint) bool { return e.Key() == human.Key() && e.SameValues(human) }) {
		t.Error("a record nobody owns is gone")
	}
}
