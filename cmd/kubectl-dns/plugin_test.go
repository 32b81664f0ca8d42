package main

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	gatewayapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/batch"
	"github.com/dnspolicy/dnspolicy-controller/pkg/builder"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/pkg/plan"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
)

// memZone is an inmemory backend's zone, written to as clusters' controllers write.
type memZone struct {
	t *testing.T
	p providers.Provider
	z providers.Zone
}

func newMemZone(t *testing.T) *memZone {
	store := inmemory.NewStore()
	return &memZone{t: t, p: inmemory.New(store, inmemory.Options{}), z: store.EnsureZone("example.com")}
}

func (m *memZone) target() *target {
	return &target{secret: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mem"}}, provider: m.p, zone: m.z, via: "given by --secret"}
}

func (m *memZone) read() *registry.Zone {
	m.t.Helper()
	z, _, err := m.target().read(context.Background())
	if err != nil {
		m.t.Fatal(err)
	}
	return z
}

func (m *memZone) apply(c *batch.Changes) {
	m.t.Helper()
	view, err := m.p.Records(context.Background(), m.z)
	if err != nil {
		m.t.Fatal(err)
	}
	if err := m.p.Apply(context.Background(), m.z, view.State, c); err != nil {
		m.t.Fatal(err)
	}
}

// publish plans owner's endpoints as its controller would and applies them.
func (m *memZone) publish(owner, holder string, desired []*v1alpha1.Endpoint) {
	m.t.Helper()
	z := m.read()
	res, err := plan.Plan(plan.Input{OwnerID: owner, ZoneName: "example.com", Zone: z, Desired: desired, Lease: lease.Key(holder)})
	if err != nil {
		m.t.Fatal(err)
	}
	if err := z.Check([]string{owner}, nil, res.Changes); err != nil {
		m.t.Fatal(err)
	}
	m.apply(res.Changes)
}

func tree(t *testing.T, cluster, geo, ip string) []*v1alpha1.Endpoint {
	t.Helper()
	typ := gatewayapiv1.IPAddressType
	eps, err := builder.Build(builder.Input{
		Hostname:    "lb.example.com",
		Addresses:   []gatewayapiv1.GatewayStatusAddress{{Type: &typ, Value: ip}},
		GatewayName: "gw", GatewayNamespace: "default", ClusterID: cluster,
		LoadBalancing: &dnsv1.LoadBalancingSpec{Weight: 120, Geo: geo},
	})
	if err != nil {
		t.Fatal(err)
	}
	return eps
}

// A loadbalanced host's owners are found through its tree, down to each cluster's leaf.
func TestOwnersFollowTheLoadbalancedTree(t *testing.T) {
	m := newMemZone(t)
	eu, us := tree(t, "cluster-eu", "GEO-EU", "10.1.0.1"), tree(t, "cluster-us", "GEO-NA", "10.2.0.1")
	m.publish("owner-eu", "cluster-eu", eu)
	m.publish("owner-us", "cluster-us", us)
	// owner-eu was alone when it first published: its claims name its lease from its next pass.
	m.publish("owner-eu", "cluster-eu", eu)
	m.apply(&batch.Changes{Create: []*v1alpha1.Endpoint{lease.Renew("cluster-eu", time.Unix(1000, 0), 30*time.Second, 75*time.Second).Record("example.com")}})
	z := m.read()

	var tail []string
	for _, e := range slices.Concat(eu, us) {
		if e.DNSName != "lb.example.com" && !slices.Contains(tail, e.DNSName) {
			tail = append(tail, e.DNSName)
		}
	}
	slices.Sort(tail)
	want := append([]string{"lb.example.com"}, tail...)
	got := hostNames(z, "example.com", "lb.example.com")
	if !slices.Equal(got, want) {
		t.Fatalf("hostNames = %v, want %v", got, want)
	}

	var out bytes.Buffer
	printOwners(&out, m.target(), z, "lb.example.com", time.Unix(1100, 0))
	s := out.String()
	for _, want := range []string{
		"OWNER owner-eu\n  lease: holder cluster-eu, record " + lease.RecordName("cluster-eu", "example.com") + "\n    renewed 1970-01-01T00:16:30Z by the holder's clock, every 30s, expires 1m15s after its value last changed\n    age about 1m50s by this machine's clock (estimate: clocks differ), looks live",
		"OWNER owner-us\n  lease " + lease.Key("cluster-us") + ": no lease record " + lease.RecordName("cluster-us", "example.com") + " in the zone",
		"CNAME lb.example.com wants klb.lb.example.com ttl 300",
		// A leaf no other owner shares: its claim is Kuadrant's, which states no wish.
		"A " + eu[slices.IndexFunc(eu, func(e *v1alpha1.Endpoint) bool { return e.RecordType == "A" })].DNSName + " (Kuadrant-format claim, wish not recorded; the record holds 10.1.0.1 ttl 60)",
		"CNAME klb.lb.example.com [set GEO-EU] wants geo-eu.klb.lb.example.com ttl 300 (geo-code=GEO-EU)",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("owners lacks %q:\n%s", want, s)
		}
	}
}

// remove-owner on the inmemory backend: the dry run changes nothing; the real run takes exactly the
// owner's share, leaves the other owner's and a human's records as they were, and refuses to delete
// a lease that claims still name.
func TestRemoveOwner(t *testing.T) {
	m := newMemZone(t)
	m.publish("owner-a", "cluster-a", []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("www.example.com", "A", 60, "10.0.0.1")})
	m.publish("owner-b", "cluster-b", []*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint("www.example.com", "A", 60, "10.0.0.2"),
		v1alpha1.NewEndpoint("b.example.com", "CNAME", 60, "elsewhere.example.net"),
	})
	human := v1alpha1.NewEndpoint("human.example.com", "A", 300, "192.0.2.1")
	renewed := time.Unix(1_800_000_000, 0)
	now := renewed.Add(10 * time.Second)
	m.apply(&batch.Changes{Create: []*v1alpha1.Endpoint{human,
		lease.Renew("cluster-a", renewed, 30*time.Second, 75*time.Second).Record("example.com"),
		lease.Renew("cluster-b", renewed, 30*time.Second, 75*time.Second).Record("example.com"),
	}})
	ctx := context.Background()
	snapshot := func() []string {
		var s []string
		for _, r := range m.read().Records() {
			if r.Endpoint != nil {
				s = append(s, formatEndpoint(r.Endpoint))
			}
			for _, c := range r.Claims {
				s = append(s, formatEndpoint(c.TXT))
			}
		}
		slices.Sort(s)
		return s
	}
	before := snapshot()

	var out bytes.Buffer
	if err := removeOwner(ctx, &out, m.target(), "owner-a", "cluster-b", true, now); err == nil || !strings.Contains(err.Error(), "the lease of cluster cluster-b is still named by claims of owner-b") {
		t.Fatalf("removing a lease still named: %v", err)
	}
	out.Reset()
	if err := removeOwner(ctx, &out, m.target(), "owner-b", "cluster-b", true, now); err != nil {
		t.Fatal(err)
	}
	if got := snapshot(); !slices.Equal(got, before) {
		t.Fatalf("dry run changed the zone:\n%v\n%v", before, got)
	}
	dry := out.String()
	out.Reset()
	if err := removeOwner(ctx, &out, m.target(), "owner-b", "cluster-b", false, now); err != nil {
		t.Fatal(err)
	}
	if applied := strings.TrimSuffix(out.String(), "applied 5 changes in 2 batches\n"); applied != strings.TrimSuffix(dry, "dry run: nothing was changed\n") {
		t.Errorf("the real run printed\n%s\nthe dry run\n%s", out.String(), dry)
	}
	for _, want := range []string{
		"warning: the lease of owner-b (holder cluster-b) looks live, age about 10s by this machine's clock: if its controller runs, it publishes owner-b again\n",
		"withdrawing owner owner-b: 4 changes (ownership gate passed for owner-b)\n",
		"  update A www.example.com: 10.0.0.1,10.0.0.2 ttl 60 -> 10.0.0.1 ttl 60\n",
		"  delete CNAME b.example.com elsewhere.example.net ttl 60\n",
		"  delete TXT " + registry.TXTName("owner-b", "CNAME", "b.example.com") + " ",
		"  delete TXT " + registry.TXTName("owner-b", "A", "www.example.com") + " ",
		"  require unchanged TXT " + registry.TXTName("owner-a", "A", "www.example.com") + " ",
		"deleting the lease of cluster cluster-b: 1 changes (ownership gate passed for cluster-b)\n  delete TXT " + lease.RecordName("cluster-b", "example.com") + " ",
	} {
		if !strings.Contains(dry, want) {
			t.Errorf("remove-owner --dry-run lacks %q:\n%s", want, dry)
		}
	}
	z := m.read()
	if got := z.Endpoint(v1alpha1.EndpointKey{DNSName: "www.example.com", RecordType: "A"}); got == nil || !slices.Equal(got.Targets, []string{"10.0.0.1"}) {
		t.Errorf("www.example.com is %v", got)
	}
	for _, r := range z.Records() {
		if slices.Contains(r.Owners(), "owner-b") {
			t.Errorf("owner-b still claims %v", r.Key)
		}
	}
	if got := z.Endpoint(human.Key()); got == nil || !got.SameValues(human) {
		t.Errorf("the human's record is %v", got)
	}
	if z.Endpoint(v1alpha1.EndpointKey{DNSName: lease.RecordName("cluster-a", "example.com"), RecordType: "TXT"}) == nil {
		t.Error("cluster-a's lease is gone")
	}
}

func TestMatchZone(t *testing.T) {
	zones := []providers.Zone{{ID: "Z1", DNSName: "example.com"}, {ID: "Z2", DNSName: "dup.example"}, {ID: "Z3", DNSName: "dup.example"}}
	for _, tc := range []struct{ in, id, err string }{
		{"Z1", "Z1", ""},
		{"Example.COM.", "Z1", ""},
		{"Z3", "Z3", ""},
		{"dup.example", "", "zones Z2, Z3 are all named dup.example; give --zone as one of these IDs"},
		{"nope", "", "no zone with ID or name nope (zones: dup.example (Z2), dup.example (Z3), example.com (Z1))"},
	} {
		z, err := matchZone(zones, tc.in)
		if z.ID != tc.id || (err == nil) != (tc.err == "") || err != nil && err.Error() != tc.err {
			t.Errorf("matchZone(%q) = %v, %v; want %s %q", tc.in, z, err, tc.id, tc.err)
		}
	}
}

// A coredns record's status names its authoritative record and root host; --zone also matches the
// coredns zone that authoritative record is labelled with (or, before Kuadrant reconciled it, the
// zone its status names). Other records match only their own zone ID or name.
func TestPublishesInCoreDNSZone(t *testing.T) {
	authName := "authoritative-record-abcd1234"
	records := []v1alpha1.DNSRecord{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: authName, Labels: map[string]string{
			v1alpha1.AuthoritativeRecordLabel: "true", v1alpha1.CoreDNSZoneNameLabel: "k.example.com"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "authoritative-record-unlabel", Labels: map[string]string{
			v1alpha1.AuthoritativeRecordLabel: "true"}}, Status: v1alpha1.DNSRecordStatus{ZoneDomainName: "Other.Example.com"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "plain"}},
	}
	zones := authoritativeZones(records)
	if want := map[string]string{"ns/" + authName: "k.example.com", "ns/authoritative-record-unlabel": "other.example.com"}; !maps.Equal(zones, want) {
		t.Fatalf("authoritativeZones = %v, want %v", zones, want)
	}
	contributor := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec:       v1alpha1.DNSRecordSpec{RootHost: "app.k.example.com"},
		Status:     v1alpha1.DNSRecordStatus{ZoneID: authName, ZoneDomainName: "app.k.example.com"},
	}
	route53 := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "api"},
		Spec:       v1alpha1.DNSRecordSpec{RootHost: "api.example.com"},
		Status:     v1alpha1.DNSRecordStatus{ZoneID: "Z1", ZoneDomainName: "example.com"},
	}
	for _, tc := range []struct {
		rec        *v1alpha1.DNSRecord
		host, zone string
		want       bool
	}{
		{contributor, "app.k.example.com", "k.example.com", true},
		{contributor, "app.k.example.com", "K.Example.COM.", true},
		{contributor, "app.k.example.com", authName, true},
		{contributor, "app.k.example.com", "app.k.example.com", true},
		{contributor, "", "k.example.com", true},
		{contributor, "app.k.example.com", "example.com", false},
		{contributor, "api.example.com", "k.example.com", false},
		{route53, "api.example.com", "example.com", true},
		{route53, "api.example.com", "Z1", true},
		{route53, "api.example.com", "k.example.com", false},
		{&records[0], "app.k.example.com", "k.example.com", false}, // the authoritative record itself
	} {
		if got := publishes(tc.rec, tc.host, tc.zone, zones[tc.rec.Namespace+"/"+tc.rec.Status.ZoneID]); got != tc.want {
			t.Errorf("publishes(%s, %q, --zone %q) = %v, want %v", tc.rec.Name, tc.host, tc.zone, got, tc.want)
		}
	}
}

// A delegation primary's authoritative record, published into a zone of its default provider,
// publishes what its contributors put there, as any record of that zone does; one a DNS server
// serves is the zone, whose contributors publish.
func TestPublishesDelegatedAuthoritative(t *testing.T) {
	merged := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "authoritative-record-abcd1234", Labels: map[string]string{
			v1alpha1.AuthoritativeRecordLabel: "true", v1alpha1.ProviderNameLabel: "aws"}},
		Spec:   v1alpha1.DNSRecordSpec{RootHost: "app.example.com", Endpoints: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("api.app.example.com", "A", 60, "10.0.0.1")}},
		Status: v1alpha1.DNSRecordStatus{ZoneID: "Z1", ZoneDomainName: "example.com"},
	}
	served := merged.DeepCopy()
	served.Labels[v1alpha1.ProviderNameLabel] = "coredns"
	if zones := authoritativeZones([]v1alpha1.DNSRecord{*merged, *served}); len(zones) != 1 || zones["ns/"+served.Name] != "example.com" {
		t.Errorf("authoritativeZones = %v, want only the served record's zone", zones)
	}
	for _, tc := range []struct {
		rec        *v1alpha1.DNSRecord
		host, zone string
		want       bool
	}{
		{merged, "app.example.com", "", true},
		{merged, "api.app.example.com", "Z1", true},
		{merged, "app.example.com", "example.com", true},
		{merged, "app.example.com", "other.example.org", false},
		{merged, "web.example.com", "", false},
		{served, "app.example.com", "", false},
	} {
		if got := publishes(tc.rec, tc.host, tc.zone, ""); got != tc.want {
			t.Errorf("publishes(%s, %q, --zone %q) = %v, want %v", tc.rec.Labels[v1alpha1.ProviderNameLabel], tc.host, tc.zone, got, tc.want)
		}
	}
}

func TestRecordsTable(t *testing.T) {
	var out bytes.Buffer
	rows := []recordRow{
		{Namespace: "team-a", Name: "web", RootHost: "app.example.com", Zone: "example.com", ZoneID: "Z1", OwnerID: "o1", DomainOwners: []string{"o1", "o2"}, Ready: "True", Reason: "ProviderSuccess"},
		{Namespace: "team-b", Name: "new", RootHost: "new.example.com", Ready: "Unknown"},
	}
	if err := printRecords(&out, rows, "table", true); err != nil {
		t.Fatal(err)
	}
	want := `NAMESPACE  NAME  ROOT HOST        ZONE              OWNER  DOMAIN OWNERS  READY    REASON
team-a     web   app.example.com  example.com (Z1)  o1     o1,o2          True     ProviderSuccess
team-b     new   new.example.com  -                 -      -              Unknown  -
`
	if out.String() != want {
		t.Errorf("table:\n%s\nwant\n%s", out.String(), want)
	}
}

// A claim in Kuadrant's form wants the record as published, unless another claim on the record is of
// that form too: then whose targets are whose cannot be told.
func TestClaimedWish(t *testing.T) {
	rec := v1alpha1.NewEndpoint("www.example.com", "A", 60, "10.0.0.1", "10.0.0.2")
	bare := func(owner string) *v1alpha1.Endpoint {
		txt, err := registry.NewTXT(owner, rec)
		if err != nil {
			t.Fatal(err)
		}
		return txt
	}
	stated, err := registry.NewWishTXT("owner-b", "", v1alpha1.NewEndpoint("www.example.com", "A", 60, "10.0.0.2"))
	if err != nil {
		t.Fatal(err)
	}
	key := rec.Key()
	for _, tc := range []struct {
		name string
		txts []*v1alpha1.Endpoint
		want string
	}{
		{"alone", []*v1alpha1.Endpoint{bare("owner-a")}, "10.0.0.1,10.0.0.2"},
		{"beside a stated wish", []*v1alpha1.Endpoint{bare("owner-a"), stated}, "10.0.0.1,10.0.0.2"},
		{"beside another Kuadrant claim", []*v1alpha1.Endpoint{bare("owner-a"), bare("owner-c")}, ""},
	} {
		z := registry.Read(append([]*v1alpha1.Endpoint{rec}, tc.txts...))
		r := z.Record(key)
		got := ""
		if w := claimedWish(r, r.Claim("owner-a")); w != nil {
			got = strings.Join(w.Targets, ",")
		}
		if got != tc.want {
			t.Errorf("%s: owner-a wants %q, want %q", tc.name, got, tc.want)
		}
		if c := r.Claim("owner-b"); c != nil {
			if w := claimedWish(r, c); w == nil || strings.Join(w.Targets, ",") != "10.0.0.2" {
				t.Errorf("%s: owner-b's stated wish read as %v", tc.name, w)
			}
		}
	}
}
