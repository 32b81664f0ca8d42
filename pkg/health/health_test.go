package health

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	gatewayapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnspolicyv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/builder"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

func tree(t *testing.T, cluster string, geo string, addresses ...string) []*v1alpha1.Endpoint {
	t.Helper()
	var addrs []gatewayapiv1.GatewayStatusAddress
	for _, a := range addresses {
		typ := gatewayapiv1.IPAddressType
		if a[0] < '0' || a[0] > '9' {
			typ = gatewayapiv1.HostnameAddressType
		}
		addrs = append(addrs, gatewayapiv1.GatewayStatusAddress{Type: &typ, Value: a})
	}
	eps, err := builder.Build(builder.Input{Hostname: "app.example.com", Addresses: addrs, GatewayName: "gw", GatewayNamespace: "ns",
		ClusterID: cluster, LoadBalancing: &dnspolicyv1.LoadBalancingSpec{Weight: 120, Geo: geo, DefaultGeo: true}})
	if err != nil {
		t.Fatal(err)
	}
	return eps
}

func names(eps []*v1alpha1.Endpoint) []string {
	var out []string
	for _, ep := range eps {
		out = append(out, fmt.Sprintf("%s %s %v", ep.DNSName, ep.RecordType, ep.Targets))
	}
	return out
}

func TestLeaves(t *testing.T) {
	eps := tree(t, "c1", "GEO-EU", "192.0.2.1", "192.0.2.2", "lb.example.net")
	if got := Leaves(eps); fmt.Sprint(got) != "[192.0.2.1 192.0.2.2 lb.example.net]" {
		t.Errorf("Leaves = %v", got)
	}
	simple := []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("app.example.com", "A", 60, "192.0.2.1", "192.0.2.2")}
	if got := Leaves(simple); fmt.Sprint(got) != "[192.0.2.1 192.0.2.2]" {
		t.Errorf("Leaves(simple) = %v", got)
	}
}

func TestWithout(t *testing.T) {
	eps := tree(t, "c1", "GEO-EU", "192.0.2.1", "192.0.2.2", "lb.example.net")
	before := names(eps)

	one := Without(eps, map[string]bool{"192.0.2.1": true})
	if len(one) != len(eps) || !slices.ContainsFunc(one, func(ep *v1alpha1.Endpoint) bool {
		return ep.RecordType == "A" && fmt.Sprint(ep.Targets) == "[192.0.2.2]"
	}) {
		t.Errorf("without one IP: %v", names(one))
	}
	// Both IPs: the A record goes, and the weighted CNAME to it; the hostname's stays, so the geo
	// and the host stay.
	ips := Without(eps, map[string]bool{"192.0.2.1": true, "192.0.2.2": true})
	if len(ips) != len(eps)-2 || slices.ContainsFunc(ips, func(ep *v1alpha1.Endpoint) bool { return ep.RecordType == "A" }) {
		t.Errorf("without both IPs: %v", names(ips))
	}
	// Every leaf: nothing is left of this owner's tree.
	if all := Without(eps, map[string]bool{"192.0.2.1": true, "192.0.2.2": true, "lb.example.net": true}); len(all) != 0 {
		t.Errorf("without every leaf: %v", names(all))
	}
	if fmt.Sprint(names(eps)) != fmt.Sprint(before) {
		t.Error("Without changed its input")
	}
	// Simple strategy: the address leaves the A record; the last one takes the record.
	simple := []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("app.example.com", "A", 60, "192.0.2.1")}
	if got := Without(simple, map[string]bool{"192.0.2.1": true}); len(got) != 0 {
		t.Errorf("simple without its address: %v", names(got))
	}
}

func TestStatementRoundTrip(t *testing.T) {
	s := Statement{Owner: "owner-1", Healthy: true, Renewal: 42}
	rec := s.Record("App.Example.com")
	got, ok := Parse(rec)
	if !ok || got != s {
		t.Fatalf("Parse(%v) = %+v, %v; want %+v", rec, got, ok, s)
	}
	if want := registry.NamedRecordName(Kind, "owner-1", "app.example.com"); rec.DNSName != want {
		t.Errorf("record name %s, want %s", rec.DNSName, want)
	}
	if _, ok := registry.ParseValue(rec.Targets[0]); ok == nil {
		t.Error("the statement parses as an external-dns ownership value; Kuadrant would read it as one")
	}
	for _, bad := range []*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint(rec.DNSName, "TXT", 60, `"v=spf1 -all"`),
		v1alpha1.NewEndpoint(rec.DNSName, "A", 60, "192.0.2.1"),
		v1alpha1.NewEndpoint(rec.DNSName, "TXT", 60, `"dnspolicy-health=1 owner=o state=healthy renewal=x"`),
	} {
		if _, ok := Parse(bad); ok {
			t.Errorf("Parse(%v) accepted it", bad)
		}
	}
}

func TestFresh(t *testing.T) {
	var tr registry.Sightings
	now := time.Unix(1000, 0)
	const expiry = 30 * time.Second
	if fresh(tr.Observe("k", "v1", now), now, expiry) {
		t.Error("a value seen for the first time is fresh: its age is not known")
	}
	if fresh(tr.Observe("k", "v1", now.Add(time.Second)), now.Add(time.Second), expiry) {
		t.Error("an unchanged value became fresh")
	}
	if !fresh(tr.Observe("k", "v2", now.Add(2*time.Second)), now.Add(2*time.Second), expiry) {
		t.Error("a value seen changing is not fresh")
	}
	if !fresh(tr.Observe("k", "v2", now.Add(31*time.Second)), now.Add(31*time.Second), expiry) {
		t.Error("fresh for less than expiry after the change")
	}
	if fresh(tr.Observe("k", "v2", now.Add(33*time.Second)), now.Add(33*time.Second), expiry) {
		t.Error("still fresh after expiry without a renewal")
	}
}

func TestDecide(t *testing.T) {
	eps := tree(t, "c1", "GEO-EU", "192.0.2.1", "192.0.2.2")
	now := time.Unix(1_000_000, 0)
	renewal := 10 * time.Second
	period := now.UnixNano() / int64(renewal)
	// o1 stated that it fails at failedAt; healthyPeer stated that it passes after that.
	failedAt := now.Add(-5 * time.Second)
	failing := &Statement{Owner: "o1", Healthy: false, Renewal: 3}
	healthyPeer := Peer{Owner: "o2", Stated: true, Healthy: true, Fresh: true, Since: now.Add(-time.Second)}
	for _, tc := range []struct {
		name string
		in   Input
		// want: "all", "one" (192.0.2.1 only), "none" (every leaf out), "nothing" (no statement either)
		want          string
		healthy       bool
		withdrawn     bool
		notPublishing bool
		renewed       bool
	}{
		{name: "all pass", in: Input{Probes: map[string]State{"192.0.2.1": Healthy, "192.0.2.2": Healthy}}, want: "all", healthy: true},
		{name: "one fails", in: Input{Probes: map[string]State{"192.0.2.1": Healthy, "192.0.2.2": Unhealthy}}, want: "one", healthy: true},
		{name: "one not yet probed", in: Input{Probes: map[string]State{"192.0.2.1": Healthy, "192.0.2.2": Unknown}}, want: "one", healthy: true},
		{name: "a leaf without a probe passes", in: Input{Probes: map[string]State{"192.0.2.2": Unhealthy}}, want: "one", healthy: true},
		{name: "probes being created, never published", in: Input{}, want: "nothing", notPublishing: true},
		{name: "all fail, never published", in: Input{Probes: map[string]State{"192.0.2.1": Unhealthy, "192.0.2.2": Unhealthy}, Peers: []Peer{healthyPeer}}, want: "nothing", notPublishing: true},
		{name: "all fail, alone: fail-open", in: Input{Published: true, Probes: map[string]State{"192.0.2.1": Unhealthy, "192.0.2.2": Unhealthy}}, want: "all"},
		{name: "all fail, peer fails too: fail-open", in: Input{Published: true, Probes: map[string]State{"192.0.2.1": Unhealthy, "192.0.2.2": Unhealthy},
			Peers: []Peer{{Owner: "o2", Stated: true, Healthy: false, Fresh: true}}}, want: "all"},
		{name: "all fail, peer passes but its statement is stale", in: Input{Published: true, Probes: map[string]State{"192.0.2.1": Unhealthy, "192.0.2.2": Unhealthy},
			Peers: []Peer{{Owner: "o2", Stated: true, Healthy: true}}}, want: "all"},
		{name: "all fail, peer without a statement (Kuadrant)", in: Input{Published: true, Probes: map[string]State{"192.0.2.1": Unhealthy, "192.0.2.2": Unhealthy},
			Peers: []Peer{{Owner: "o2"}}}, want: "all"},
		{name: "all fail, a peer passes: withdraw even the last leaf", in: Input{Published: true, Probes: map[string]State{"192.0.2.1": Unhealthy, "192.0.2.2": Unhealthy},
			Peers: []Peer{{Owner: "o0"}, healthyPeer}, Own: failing, OwnSince: failedAt}, want: "none", withdrawn: true},
		{name: "all fail, a peer passes, but this owner has not yet stated that it fails", in: Input{Published: true,
			Probes: map[string]State{"192.0.2.1": Unhealthy, "192.0.2.2": Unhealthy}, Peers: []Peer{healthyPeer}}, want: "all"},
		{name: "all fail, the peer's statement that it passes is older than this owner's that it fails", in: Input{Published: true,
			Probes: map[string]State{"192.0.2.1": Unhealthy, "192.0.2.2": Unhealthy}, Own: failing, OwnSince: failedAt,
			Peers: []Peer{{Owner: "o2", Stated: true, Healthy: true, Fresh: true, Since: failedAt.Add(-time.Second)}}}, want: "all"},
		{name: "passing while a peer fails: renewed", in: Input{Probes: map[string]State{"192.0.2.1": Healthy, "192.0.2.2": Healthy},
			Peers: []Peer{{Owner: "o2", Stated: true}}, Own: &Statement{Owner: "o1", Healthy: true, Renewal: 7}}, want: "all", healthy: true, renewed: true},
		{name: "passing while every peer passes: kept as written", in: Input{Probes: map[string]State{"192.0.2.1": Healthy, "192.0.2.2": Healthy},
			Peers: []Peer{healthyPeer}, Own: &Statement{Owner: "o1", Healthy: true, Renewal: 7}}, want: "all", healthy: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.OwnerID, in.Host, in.Desired, in.Now, in.Renewal = "o1", "app.example.com", eps, now, renewal
			d := Decide(in)
			var want []*v1alpha1.Endpoint
			switch tc.want {
			case "all":
				want = eps
			case "one":
				want = Without(eps, map[string]bool{"192.0.2.2": true})
			}
			if fmt.Sprint(names(d.Endpoints)) != fmt.Sprint(names(want)) {
				t.Errorf("endpoints %v, want %v", names(d.Endpoints), names(want))
			}
			if d.Withdrawn != tc.withdrawn || d.NotPublishing != tc.notPublishing {
				t.Errorf("withdrawn %v notPublishing %v, want %v %v", d.Withdrawn, d.NotPublishing, tc.withdrawn, tc.notPublishing)
			}
			switch {
			case tc.want == "nothing" && d.Statement != nil:
				t.Errorf("states %+v while publishing nothing", d.Statement)
			case tc.want != "nothing" && (d.Statement == nil || d.Statement.Healthy != tc.healthy || d.Statement.Owner != "o1"):
				t.Errorf("statement %+v, want healthy=%v", d.Statement, tc.healthy)
			case tc.renewed && d.Statement.Renewal != period:
				t.Errorf("statement renewal %d, want the current period %d", d.Statement.Renewal, period)
			case !tc.renewed && in.Own != nil && d.Statement.Renewal != in.Own.Renewal:
				t.Errorf("statement rewritten (renewal %d) with nothing to renew", d.Statement.Renewal)
			}
		})
	}
}

// Peers reads the owners of the host from their claims, and each one's statement with its freshness.
func TestPeers(t *testing.T) {
	host := "app.example.com"
	claim := func(owner string) *v1alpha1.Endpoint {
		txt, err := registry.NewTXT(owner, v1alpha1.NewEndpoint(host, "CNAME", 300, "klb.app.example.com"))
		if err != nil {
			t.Fatal(err)
		}
		return txt
	}
	zone := func(o2 Statement) *registry.Zone {
		return registry.Read([]*v1alpha1.Endpoint{
			v1alpha1.NewEndpoint(host, "CNAME", 300, "klb.app.example.com"), claim("o1"), claim("o2"), claim("o3"),
			Statement{Owner: "o1", Healthy: false, Renewal: 1}.Record(host), o2.Record(host),
		})
	}
	var tr Tracker
	seen := tr.Read("ns/r1", "z", host)
	now := time.Unix(1000, 0)
	peers, own, ownSince := Peers(zone(Statement{Owner: "o2", Healthy: true, Renewal: 1}), seen, "o1", host, now, time.Minute)
	if own == nil || own.Healthy || !ownSince.Equal(now) || len(peers) != 2 ||
		peers[0].Owner != "o2" || !peers[0].Stated || !peers[0].Healthy || peers[0].Fresh || peers[1].Owner != "o3" || peers[1].Stated {
		t.Fatalf("first read: own %+v since %v, peers %+v", own, ownSince, peers)
	}
	later := now.Add(time.Second)
	peers, _, ownSince = Peers(zone(Statement{Owner: "o2", Healthy: true, Renewal: 2}), seen, "o1", host, later, time.Minute)
	if !peers[0].Fresh || !peers[0].Since.Equal(later) || !ownSince.Equal(now) {
		t.Errorf("o2 renewed: %+v (own since %v)", peers[0], ownSince)
	}
}

// The tracker forgets: a statement that leaves the zone, a host whose last reader is gone or reads
// another host, and with them every sighting.
func TestTrackerForgets(t *testing.T) {
	host, other := "app.example.com", "other.example.com"
	withStatements := func(host string, owners ...string) *registry.Zone {
		var eps []*v1alpha1.Endpoint
		for _, o := range owners {
			txt, err := registry.NewTXT(o, v1alpha1.NewEndpoint(host, "A", 60, "192.0.2.1"))
			if err != nil {
				t.Fatal(err)
			}
			eps = append(eps, txt, Statement{Owner: o, Healthy: true}.Record(host))
		}
		return registry.Read(append(eps, v1alpha1.NewEndpoint(host, "A", 60, "192.0.2.1")))
	}
	var tr Tracker
	now := time.Unix(1000, 0)
	seen := tr.Read("ns/r1", "z", host)
	Peers(withStatements(host, "o1", "o2", "o3"), seen, "o1", host, now, time.Minute)
	if seen.Len() != 3 {
		t.Fatalf("%d statements remembered, want 3", seen.Len())
	}
	Peers(withStatements(host, "o1"), seen, "o1", host, now, time.Minute)
	if seen.Len() != 1 {
		t.Errorf("o2 and o3 left the zone: %d statements remembered, want 1", seen.Len())
	}
	if tr.Read("ns/r2", "z", host) != seen {
		t.Error("two readers of one host do not share its sightings")
	}
	tr.Forget("ns/r1")
	if hosts, readers := tr.Len(); hosts != 1 || readers != 1 {
		t.Errorf("one of two readers left: %d hosts, %d readers, want 1 and 1", hosts, readers)
	}
	tr.Read("ns/r2", "z", other) // r2 moved to another host: app.example.com has no reader left
	if hosts, readers := tr.Len(); hosts != 1 || readers != 1 {
		t.Errorf("the last reader moved: %d hosts, %d readers, want 1 and 1", hosts, readers)
	}
	tr.Forget("ns/r2")
	if hosts, readers := tr.Len(); hosts != 0 || readers != 0 {
		t.Errorf("every reader gone: %d hosts, %d readers, want none", hosts, readers)
	}
}

// Owners failing and recovering at random, each deciding on a view of the zone a few steps old, never
// leave the host without an address: someone publishes at every step, and whenever some owner
// passes, a failing owner withdraws only on the word of a peer that passes.
func TestNeverEmpty(t *testing.T) {
	const host, owners, steps = "app.example.com", 3, 20000
	rng := rand.New(rand.NewPCG(1, 2))
	type state struct {
		publishing [owners]bool
		statement  [owners]*Statement
	}
	ip := func(i int) string { return fmt.Sprintf("192.0.2.%d", i+1) }
	zoneOf := func(st state) *registry.Zone {
		var eps []*v1alpha1.Endpoint
		var targets []string
		for i := range owners {
			if st.publishing[i] {
				targets = append(targets, ip(i))
				txt, err := registry.NewTXT(fmt.Sprintf("o%d", i), v1alpha1.NewEndpoint(host, "A", 60, ip(i)))
				if err != nil {
					t.Fatal(err)
				}
				eps = append(eps, txt)
			}
			if st.statement[i] != nil {
				eps = append(eps, st.statement[i].Record(host))
			}
		}
		if len(targets) > 0 {
			eps = append(eps, v1alpha1.NewEndpoint(host, "A", 60, targets...))
		}
		return registry.Read(eps)
	}
	var history []state
	cur := state{publishing: [owners]bool{true, true, true}}
	healthy := [owners]bool{true, true, true}
	trackers := make([]registry.Sightings, owners)
	start := time.Unix(1_000_000, 0)
	renewal := 10 * time.Second
	withdrawals := 0
	for step := range steps {
		now := start.Add(time.Duration(step) * time.Second)
		if rng.IntN(20) == 0 {
			i := rng.IntN(owners)
			healthy[i] = !healthy[i]
		}
		history = append(history, cur)
		i := rng.IntN(owners)
		view := history[max(0, len(history)-1-rng.IntN(4))]
		z := zoneOf(view)
		peers, own, ownSince := Peers(z, &trackers[i], fmt.Sprintf("o%d", i), host, now, ExpiryPeriods*renewal)
		state := Unhealthy
		if healthy[i] {
			state = Healthy
		}
		d := Decide(Input{OwnerID: fmt.Sprintf("o%d", i), Host: host, Desired: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(host, "A", 60, ip(i))},
			Probes: map[string]State{ip(i): state}, Published: true, Peers: peers, Own: own, OwnSince: ownSince, Now: now, Renewal: renewal})
		cur.publishing[i], cur.statement[i] = len(d.Endpoints) > 0, d.Statement
		if d.Withdrawn {
			withdrawals++
		}
		if !slices.Contains(cur.publishing[:], true) {
			t.Fatalf("step %d: no owner publishes (healthy %v, statements %+v)", step, healthy, cur.statement)
		}
	}
	if withdrawals == 0 {
		t.Error("no owner ever withdrew: the test exercises nothing")
	}
	t.Logf("%d passes, %d of them withdrawn", steps, withdrawals)
}
