// Package concurrency_test makes several owners of shared records (clusters sharing a zone) join
// and leave at the same moment, round after round, against the inmemory backend and the Route 53 and
// Cloud DNS emulators through the real backends. Each owner is its own cluster: its own Publisher and
// its own backend object built from its own Secret; they share only the zone. After every round a
// fresh read of the zone must show that no record was left without an ownership TXT (a record nobody
// can ever claim or remove) and that no foreign record changed.
//
// It needs nothing but Go (the emulators run in process on loopback), so it runs in `go test ./...`.
package concurrency_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnsv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord/publish"
	"github.com/dnspolicy/dnspolicy-controller/pkg/builder"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/clouddns"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
	"github.com/dnspolicy/dnspolicy-controller/providers/route53"
	clouddnsemu "github.com/dnspolicy/dnspolicy-controller/test/emulators/clouddns"
	route53emu "github.com/dnspolicy/dnspolicy-controller/test/emulators/route53"
)

const (
	zoneName = "shared.example.com"
	// rounds per variant, as acceptance 1 of issue 10 asks.
	rounds = 200
	// testBudget bounds the whole test (all backends and variants, run in parallel).
	testBudget = 4 * time.Minute
	// attempts bounds how often one owner's publish is tried in one step, as a controller retries a
	// failed pass; the invariants are checked after the concurrent attempt as well.
	attempts = 4
)

// zoneBackend is one way of holding the shared zone: each owner gets its own backend object from its
// own Secret, and the test reads the zone through a backend object of its own, fresh every time.
type zoneBackend struct {
	name string
	// secret is the provider Secret of one owner (cluster).
	secret func(owner string) *corev1.Secret
	// construct is the backend's constructor as the binary registers it.
	construct providers.Constructor
	// geos are the geo codes this backend takes: the first is every owner's but the last one's, and
	// carries the default geo.
	geos [2]string
	// dump renders the zone as the backend holds it, for failure messages.
	dump func() []string
}

func inmemoryBackend(t *testing.T) *zoneBackend {
	store := inmemory.NewStore()
	store.EnsureZone(zoneName)
	return &zoneBackend{
		name: "inmemory",
		secret: func(owner string) *corev1.Secret {
			return secret(owner, v1alpha1.SecretTypeInMemory, map[string]string{v1alpha1.InMemInitZonesKey: zoneName})
		},
		construct: inmemory.NewConstructor(store),
		geos:      [2]string{"GEO-EU", "US"},
		dump: func() []string {
			eps, err := store.Snapshot(inmemory.ZoneID(zoneName))
			if err != nil {
				return []string{err.Error()}
			}
			return lines(eps)
		},
	}
}

// Each owner (cluster) signs with its own access key, as separate clusters do.
func accessKey(owner string) string {
	return strings.ToUpper(fmt.Sprintf("AKIA%016s", strings.ReplaceAll(owner, "-", "")))
}

func route53Backend(t *testing.T, owners []string) *zoneBackend {
	var keys []string
	for _, o := range owners {
		keys = append(keys, accessKey(o))
	}
	// Unthrottled and INSYNC at once, as the provider tests run it: the rounds measure interleavings,
	// not Route 53's pace.
	emu := route53emu.New(route53emu.Options{Zones: []string{zoneName}, AccessKeys: keys, RequestsPerSecond: -1, InsyncAfter: time.Nanosecond})
	url := listen(t, emu.Listen)
	return &zoneBackend{
		name: "route53",
		secret: func(owner string) *corev1.Secret {
			return secret(owner, v1alpha1.SecretTypeAWS, map[string]string{
				v1alpha1.AWSAccessKeyIDKey:     accessKey(owner),
				v1alpha1.AWSSecretAccessKeyKey: "secret-of-" + owner,
				v1alpha1.EndpointOverrideKey:   url,
			})
		},
		construct: route53.New,
		geos:      [2]string{"GEO-EU", "US"},
		dump:      func() []string { return emu.Dump(zoneName) },
	}
}

func cloudDNSBackend(t *testing.T) *zoneBackend {
	const project = "shared-project"
	emu := clouddnsemu.New(clouddnsemu.Options{Project: project, Zones: []string{zoneName}, RequestsPerSecond: -1})
	url := listen(t, emu.Listen)
	return &zoneBackend{
		name: "clouddns",
		secret: func(owner string) *corev1.Secret {
			return secret(owner, v1alpha1.SecretTypeGCP, map[string]string{
				v1alpha1.GoogleProjectIDKey:  project,
				v1alpha1.EndpointOverrideKey: url,
			})
		},
		construct: clouddns.New,
		geos:      [2]string{"europe-west1", "us-east1"},
		dump:      func() []string { return emu.Dump(zoneName) },
	}
}

func listen(t *testing.T, l func(string) (*http.Server, string, error)) string {
	t.Helper()
	srv, url, err := l("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return url
}

func secret(owner string, typ corev1.SecretType, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster-" + owner, Name: "provider"}, Type: typ, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// cluster is one owner's cluster: its own backend object (from its own Secret) and its own publisher,
// as its controller holds them, and its DNSRecords.
type cluster struct {
	name      string
	prov      providers.Provider
	publisher *publish.Publisher
	zone      providers.Zone
	records   map[string]*record
}

// record is one DNSRecord of a cluster, an owner of its own (its owner ID).
type record struct {
	cluster *cluster
	id      string
	desired []*v1alpha1.Endpoint
	// published is what the record last published (its status.endpoints); empty once it left.
	published []*v1alpha1.Endpoint
}

// The DNSRecords each cluster holds: a loadbalanced tree with the cluster's own leaf, a
// loadbalanced tree of a Gateway whose only address is a hostname every cluster shares (a global
// load balancer in front of them: every record set of it is shared, so a leaver's batch changes
// nothing but its ownership TXTs on any backend), and a simple A record every cluster merges its
// address into.
const (
	treeRecord   = "app"
	edgeRecord   = "edge"
	mergedRecord = "merged"
)

// sharedEdge is the address of every cluster's edge Gateway.
const sharedEdge = "global-lb.edge.example.net"

// publisherOptions are a controller's, with a short gather so 200 rounds take seconds. Views stay
// cached for up to the controller's 10 s: that staleness is what concurrent leavers meet.
func publisherOptions() publish.Options {
	o := publish.DefaultOptions()
	o.Gather, o.MaxGather = 2*time.Millisecond, 20*time.Millisecond
	return o
}

// newCluster builds a cluster: its backend from its Secret, its publisher, and its records: a
// loadbalanced tree for app.<zone> (builder shapes, DESIGN section 3) and its address in the simple
// A record merged.<zone>.
func newCluster(ctx context.Context, t *testing.T, b *zoneBackend, name string, index, count int) *cluster {
	t.Helper()
	provBackend, err := b.construct(ctx, b.secret(name), providers.Env{Namespace: "cluster-" + name})
	if err != nil {
		t.Fatalf("%s: building the backend of %s from its Secret: %v", b.name, name, err)
	}
	prov := provBackend.Zones
	cl := &cluster{name: name, prov: prov, publisher: publish.New(publisherOptions()), zone: findZone(ctx, t, b, prov), records: map[string]*record{}}
	lb := &dnsv1.LoadBalancingSpec{Weight: 120, Geo: b.geos[0], DefaultGeo: true}
	if index == count-1 && count > 2 {
		// The last of three clusters is in another geo: klb.app holds sets of one owner and of two.
		lb = &dnsv1.LoadBalancingSpec{Weight: 80, Geo: b.geos[1]}
	}
	address := func(typ gatewayapiv1.AddressType, value string) []gatewayapiv1.GatewayStatusAddress {
		return []gatewayapiv1.GatewayStatusAddress{{Type: ptr.To(typ), Value: value}}
	}
	clusterID := "kube-system-uid-of-" + name
	for _, in := range []builder.Input{
		{Hostname: treeRecord + "." + zoneName, Addresses: address(gatewayapiv1.IPAddressType, fmt.Sprintf("10.0.%d.1", index+1)), ClusterID: clusterID, LoadBalancing: lb},
		{Hostname: edgeRecord + "." + zoneName, Addresses: address(gatewayapiv1.HostnameAddressType, sharedEdge), ClusterID: clusterID,
			LoadBalancing: &dnsv1.LoadBalancingSpec{Weight: 120, Geo: b.geos[0], DefaultGeo: true}},
		{Hostname: mergedRecord + "." + zoneName, Addresses: address(gatewayapiv1.IPAddressType, fmt.Sprintf("10.1.0.%d", index+1))},
	} {
		in.GatewayName, in.GatewayNamespace = "gw", "ns-"+name
		eps, err := builder.Build(in)
		if err != nil {
			t.Fatal(err)
		}
		desired, err := prov.AdjustEndpoints(eps)
		if err != nil {
			t.Fatalf("%s: %s's endpoints: %v", b.name, name, err)
		}
		recName := strings.SplitN(in.Hostname, ".", 2)[0]
		cl.records[recName] = &record{cluster: cl, id: name + "-" + recName, desired: desired}
	}
	return cl
}

func findZone(ctx context.Context, t *testing.T, b *zoneBackend, prov providers.Provider) providers.Zone {
	t.Helper()
	zones, err := prov.Zones(ctx)
	if err != nil {
		t.Fatalf("%s: listing zones: %v", b.name, err)
	}
	for _, z := range zones {
		if z.DNSName == zoneName {
			return z
		}
	}
	t.Fatalf("%s: zone %s not listed in %v", b.name, zoneName, zones)
	return providers.Zone{}
}

// publish runs one pass of the record through its cluster's publisher: it wants desired (nil: it
// leaves, as a deleted DNSRecord's finalizer does).
func (r *record) publish(ctx context.Context, desired []*v1alpha1.Endpoint) error {
	cl := r.cluster
	out, err := cl.publisher.Publish(ctx, cl.prov, cl.name, cl.zone, publish.Request{OwnerID: r.id, Previous: r.published, Desired: desired})
	if err != nil {
		return err
	}
	if out.Plan != nil {
		r.published = out.Plan.Published
	}
	if len(desired) > 0 && !out.Validated {
		return errors.New("the zone read after the write does not hold what the record publishes")
	}
	return nil
}

// together runs one pass of every record at the same moment (all start behind one barrier) and
// returns each record's error.
func together(ctx context.Context, records []*record, desired func(*record) []*v1alpha1.Endpoint) []error {
	errs := make([]error, len(records))
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for i, r := range records {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			errs[i] = r.publish(ctx, desired(r))
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	return errs
}

// zoneState is a fresh read of the zone through a backend object no owner uses.
type zoneState struct {
	endpoints []*v1alpha1.Endpoint
	zone      *registry.Zone
}

func read(ctx context.Context, t *testing.T, b *zoneBackend) zoneState {
	t.Helper()
	provBackend, err := b.construct(ctx, b.secret("reader"), providers.Env{Namespace: "cluster-reader"})
	if err != nil {
		t.Fatal(err)
	}
	prov := provBackend.Zones
	read, err := prov.Records(ctx, findZone(ctx, t, b, prov))
	if err != nil {
		t.Fatalf("%s: reading the zone: %v", b.name, err)
	}
	return zoneState{endpoints: read.Endpoints, zone: registry.Read(read.Endpoints)}
}

// foreign is what the test puts in the zone before any owner joins and what must never change: a
// record and a plain TXT no owner claims (a human's), and a foreign owner's records with its
// ownership TXTs, which stay for the whole test.
type foreign struct {
	// unowned are the record keys nobody claims at the start, the zone's own (apex SOA, NS) included.
	unowned map[v1alpha1.EndpointKey]bool
	// lines are the foreign endpoints (records and TXTs) as read at the start.
	lines []string
	keys  map[v1alpha1.EndpointKey]bool
	// dump is the zone as the backend holds it before any owner joined (what a round must leave):
	// it shows what Records hides, such as Cloud DNS's set-identifier companions.
	dump []string
}

const foreignOwner = "foreign-owner"

func seedForeign(ctx context.Context, t *testing.T, b *zoneBackend) *foreign {
	t.Helper()
	provBackend, err := b.construct(ctx, b.secret("human"), providers.Env{Namespace: "cluster-human"})
	if err != nil {
		t.Fatal(err)
	}
	prov := provBackend.Zones
	zone := findZone(ctx, t, b, prov)
	human, err := prov.AdjustEndpoints([]*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint("human."+zoneName, v1alpha1.RecordTypeA, 300, "192.0.2.10"),
		v1alpha1.NewEndpoint("notes."+zoneName, v1alpha1.RecordTypeTXT, 300, "kept by hand"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := prov.Apply(ctx, zone, nil, &providers.Changes{Create: human}); err != nil {
		t.Fatalf("%s: creating the records no owner claims: %v", b.name, err)
	}

	otherBackend, err := b.construct(ctx, b.secret(foreignOwner), providers.Env{Namespace: "cluster-" + foreignOwner})
	if err != nil {
		t.Fatal(err)
	}
	other := otherBackend.Zones
	desired, err := other.AdjustEndpoints([]*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint("foreign."+zoneName, v1alpha1.RecordTypeA, 60, "192.0.2.20", "192.0.2.21"),
		v1alpha1.NewEndpoint("alias."+zoneName, v1alpha1.RecordTypeCNAME, 300, "foreign."+zoneName),
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := publish.New(publisherOptions()).Publish(ctx, other, foreignOwner, zone, publish.Request{OwnerID: foreignOwner, Desired: desired})
	if err != nil || !out.Validated {
		t.Fatalf("%s: the foreign owner's records: validated %v, %v", b.name, out.Validated, err)
	}

	st := read(ctx, t, b)
	f := &foreign{unowned: map[v1alpha1.EndpointKey]bool{}, keys: map[v1alpha1.EndpointKey]bool{}}
	for _, r := range st.zone.Records() {
		if r.Endpoint != nil && !r.Owned() {
			f.unowned[r.Key] = true
		}
	}
	for _, want := range []string{"human." + zoneName, "notes." + zoneName} {
		if !slices.ContainsFunc(st.zone.AtName(want), func(r *registry.Record) bool { return r.Endpoint != nil && !r.Owned() }) {
			t.Fatalf("%s: %s was not created as a record no owner claims:\n%s", b.name, want, strings.Join(b.dump(), "\n"))
		}
	}
	for _, ep := range st.endpoints {
		if f.isForeign(ep) {
			f.keys[ep.Key()] = true
			f.lines = append(f.lines, line(ep))
		}
	}
	sort.Strings(f.lines)
	f.dump = b.dump()
	return f
}

// isForeign reports whether an endpoint is one of the records nobody claims at the start, or the
// foreign owner's record or ownership TXT.
func (f *foreign) isForeign(ep *v1alpha1.Endpoint) bool {
	if f.unowned[ep.Key()] {
		return true
	}
	if c, ok := registry.ParseTXT(ep); ok {
		return c.Owner == foreignOwner
	}
	switch v1alpha1.NormalizeName(ep.DNSName) {
	case "foreign." + zoneName, "alias." + zoneName:
		return true
	}
	return false
}

// check says what is wrong with the zone after a step, or "": a record left without any ownership
// TXT, a foreign record changed, a leaver's claim left behind (out are the records that left and got
// no error), or a staying record's record set missing.
func (f *foreign) check(st zoneState, out, in []*record) []string {
	var problems []string
	for _, r := range st.zone.Records() {
		if r.Endpoint != nil && !r.Owned() && !f.unowned[r.Key] {
			problems = append(problems, fmt.Sprintf("record left without an ownership TXT: %s", line(r.Endpoint)))
		}
	}
	var now []string
	for _, ep := range st.endpoints {
		if f.isForeign(ep) {
			now = append(now, line(ep))
		}
	}
	sort.Strings(now)
	if !slices.Equal(now, f.lines) {
		problems = append(problems, fmt.Sprintf("foreign records changed:\n    was %s\n    now %s", strings.Join(f.lines, "\n        "), strings.Join(now, "\n        ")))
	}
	for _, rec := range out {
		for _, r := range st.zone.Records() {
			if r.Claim(rec.id) != nil {
				problems = append(problems, fmt.Sprintf("%s left but still claims %s %s set %q", rec.id, r.Key.DNSName, r.Key.RecordType, r.Key.SetIdentifier))
			}
		}
	}
	for _, rec := range in {
		for _, want := range rec.published {
			r := st.zone.Record(want.Key())
			switch {
			case r == nil || r.Endpoint == nil:
				problems = append(problems, fmt.Sprintf("%s stays but its record set %s is gone", rec.id, line(want)))
			case r.Claim(rec.id) == nil:
				problems = append(problems, fmt.Sprintf("%s stays but lost its ownership TXT of %s", rec.id, line(want)))
			case !holdsTargets(r.Endpoint, want):
				problems = append(problems, fmt.Sprintf("%s stays but %s holds %s", rec.id, line(want), line(r.Endpoint)))
			}
		}
	}
	return problems
}

func holdsTargets(got, want *v1alpha1.Endpoint) bool {
	for _, t := range want.Targets {
		if !slices.ContainsFunc(got.Targets, func(g string) bool { return v1alpha1.NormalizeName(g) == v1alpha1.NormalizeName(t) }) {
			return false
		}
	}
	return true
}

func line(ep *v1alpha1.Endpoint) string {
	targets := slices.Clone(ep.Targets)
	sort.Strings(targets)
	s := fmt.Sprintf("%s %s %d %s", v1alpha1.NormalizeName(ep.DNSName), ep.RecordType, ep.RecordTTL, strings.Join(targets, ","))
	if ep.SetIdentifier != "" {
		s += " set=" + ep.SetIdentifier
	}
	props := make([]string, 0, len(ep.ProviderSpecific))
	for _, p := range ep.ProviderSpecific {
		props = append(props, p.Name+"="+p.Value)
	}
	sort.Strings(props)
	if len(props) > 0 {
		s += " " + strings.Join(props, " ")
	}
	return s
}

func lines(eps []*v1alpha1.Endpoint) []string {
	out := make([]string, len(eps))
	for i, ep := range eps {
		out[i] = line(ep)
	}
	sort.Strings(out)
	return out
}

// roundKind is what one round shares and who stays. Each cluster's records are separate owners
// published as separate requests; a round with only the tree is the case where a leaver's batch
// deletes nothing but ownership TXTs (the shared CNAMEs stay for the other owners).
type roundKind struct {
	records []string
	// stays: one cluster (a different one each time) stays while the others leave; it re-checks its
	// records at the same moment, as its controller's re-check would.
	stays bool
}

func (k roundKind) String() string {
	s := strings.Join(k.records, "+")
	if k.stays {
		s += ", one cluster stays"
	}
	return s
}

var roundKinds = []roundKind{
	{records: []string{treeRecord}},
	{records: []string{edgeRecord}},
	{records: []string{mergedRecord}},
	{records: []string{treeRecord, edgeRecord, mergedRecord}},
	{records: []string{treeRecord}, stays: true},
	{records: []string{edgeRecord}, stays: true},
	{records: []string{mergedRecord}, stays: true},
	{records: []string{treeRecord, edgeRecord, mergedRecord}, stays: true},
}

// Acceptance 1 of issue 10: two and three owners of shared records leave at the same moment, 200
// rounds each against every backend (the rounds cycle through roundKinds); no record is ever left
// without an ownership TXT and no foreign record changes.
func TestConcurrentLeavers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testBudget)
	defer cancel()
	backends := map[string]func(t *testing.T, clusters []string) *zoneBackend{
		"inmemory": func(t *testing.T, _ []string) *zoneBackend { return inmemoryBackend(t) },
		"route53":  route53Backend,
		"clouddns": func(t *testing.T, _ []string) *zoneBackend { return cloudDNSBackend(t) },
	}
	// All six run at once whatever -parallel says: the emulated rounds mostly wait on loopback calls
	// and Cloud DNS's change polling, and the budget is for all of them together.
	var wg sync.WaitGroup
	for _, name := range []string{"inmemory", "route53", "clouddns"} {
		for _, n := range []int{2, 3} {
			wg.Go(func() {
				t.Run(fmt.Sprintf("%s/%d clusters", name, n), func(t *testing.T) {
					var names []string
					for i := range n {
						names = append(names, fmt.Sprintf("cluster%d", i+1))
					}
					b := backends[name](t, append(slices.Clone(names), "reader", "human", foreignOwner))
					runRounds(ctx, t, b, names)
				})
			})
		}
	}
	wg.Wait()
}

func runRounds(ctx context.Context, t *testing.T, b *zoneBackend, names []string) {
	f := seedForeign(ctx, t, b)
	var clusters []*cluster
	for i, name := range names {
		clusters = append(clusters, newCluster(ctx, t, b, name, i, len(names)))
	}
	var all []*record
	for _, cl := range clusters {
		for _, name := range []string{treeRecord, edgeRecord, mergedRecord} {
			all = append(all, cl.records[name])
		}
	}
	retried := 0
	// why counts the failed passes by error, for the log: what the engine met under contention.
	why := map[string]int{}
	var kind roundKind
	fail := func(round int, step string, problems []string) {
		t.Helper()
		t.Fatalf("%s, %d clusters, round %d (%s), %s:\n  %s\nzone as %s holds it:\n  %s",
			b.name, len(clusters), round, kind, step, strings.Join(problems, "\n  "), b.name, strings.Join(b.dump(), "\n  "))
	}
	// settle retries the records whose pass failed, one at a time, as their controllers would.
	settle := func(round int, step string, records []*record, errs []error, desired func(*record) []*v1alpha1.Endpoint) {
		t.Helper()
		for i, err := range errs {
			for n := 1; err != nil; n++ {
				if n == attempts || ctx.Err() != nil {
					fail(round, step, []string{fmt.Sprintf("%s: %d passes failed, the last with: %v", records[i].id, n, err)})
				}
				retried++
				why[err.Error()]++
				err = records[i].publish(ctx, desired(records[i]))
			}
		}
	}
	for round := 1; round <= rounds; round++ {
		if ctx.Err() != nil {
			t.Fatalf("%s, %d clusters: only %d of %d rounds within the test's %s", b.name, len(clusters), round-1, rounds, testBudget)
		}
		kind = roundKinds[(round-1)%len(roundKinds)]
		var active []*record
		for _, cl := range clusters {
			for _, name := range kind.records {
				active = append(active, cl.records[name])
			}
		}
		join := func(r *record) []*v1alpha1.Endpoint { return r.desired }
		settle(round, "join", active, together(ctx, active, join), join)
		if problems := f.check(read(ctx, t, b), nil, active); len(problems) > 0 {
			fail(round, "after every owner joined", problems)
		}

		var stayer *cluster
		if kind.stays {
			stayer = clusters[round%len(clusters)]
		}
		stays := func(r *record) bool { return r.cluster == stayer }
		leave := func(r *record) []*v1alpha1.Endpoint {
			if stays(r) {
				return r.desired
			}
			return nil
		}
		errs := together(ctx, active, leave)
		// Checked before any retry: the zone must be sound at every moment, not only in the end.
		var failed []string
		var cleanOut, cleanIn []*record
		for i, err := range errs {
			switch {
			case err != nil:
				failed = append(failed, fmt.Sprintf("%s: %v", active[i].id, err))
			case stays(active[i]):
				cleanIn = append(cleanIn, active[i])
			default:
				cleanOut = append(cleanOut, active[i])
			}
		}
		if problems := f.check(read(ctx, t, b), cleanOut, cleanIn); len(problems) > 0 {
			if len(failed) > 0 {
				problems = append(problems, "passes that failed: "+strings.Join(failed, "; "))
			}
			fail(round, "right after the owners left at the same moment", problems)
		}
		settle(round, "leave", active, errs, leave)
		var out, in []*record
		for _, r := range active {
			if stays(r) {
				in = append(in, r)
			} else {
				out = append(out, r)
			}
		}
		if problems := f.check(read(ctx, t, b), out, in); len(problems) > 0 {
			fail(round, "after the leavers' retries", problems)
		}
		// The stayer leaves alone, so every round starts from the foreign records only.
		if len(in) > 0 {
			gone := func(*record) []*v1alpha1.Endpoint { return nil }
			settle(round, "the stayer leaving", in, together(ctx, in, gone), gone)
			if problems := f.check(read(ctx, t, b), in, nil); len(problems) > 0 {
				fail(round, "after the stayer left", problems)
			}
		}
		if now := b.dump(); !slices.Equal(now, f.dump) {
			fail(round, "once every owner left", []string{fmt.Sprintf("the zone as %s holds it is not what it was before the owners joined:\n    was %s",
				b.name, strings.Join(f.dump, "\n        "))})
		}
	}
	st := read(ctx, t, b)
	if problems := f.check(st, all, nil); len(problems) > 0 {
		fail(rounds, "at the end", problems)
	}
	var left []string
	for _, ep := range st.endpoints {
		if !f.isForeign(ep) {
			left = append(left, line(ep))
		}
	}
	if len(left) > 0 {
		fail(rounds, "at the end", append([]string{"records left after every owner left:"}, left...))
	}
	var reasons []string
	for msg, n := range why {
		reasons = append(reasons, fmt.Sprintf("%dx %s", n, msg))
	}
	sort.Strings(reasons)
	t.Logf("%s, %d clusters: %d rounds, %d failed passes retried\n  %s", b.name, len(clusters), rounds, retried, strings.Join(reasons, "\n  "))
}
