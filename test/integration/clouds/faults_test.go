//go:build integration

package clouds_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/test/emulators/cloud"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// faultRate is the share of API requests that fail, spread over throttling, 5xx and timeouts.
const faultRate = 0.2

// faultsZone is the zone of TestFaults in each cloud's emulator.
const faultsZone = "faults.example.com"

// With throttling bursts, 5xx and timeouts injected into 20% of the cloud's API requests, 100 records
// created at once by one cluster (simple A records and loadbalanced trees) all reach Ready; deletions
// and target changes made under the same faults land; the zone ends up exact — every owned record
// once with its targets, one ownership TXT per owned record set and owner, another cluster's records
// and a record no owner manages untouched, nothing else — and no status or event ever carried a
// request ID or the Secret's value.
func TestFaults(t *testing.T) {
	forEachCloud(t, func(t *testing.T, c *cloud.Cloud) {
		begin := time.Now()
		ctx := t.Context()
		// Azure takes 200 record-set writes per minute per zone: the 100 records need about 250.
		readyWithin, settleWithin := 90*time.Second, 90*time.Second
		if c.Name == cloud.Azure {
			readyWithin, settleWithin = 5*time.Minute, 4*time.Minute
		}

		c.AddZone(faultsZone)
		human := faultsHuman(t, c)
		baseline, err := c.ReadBack(ctx, faultsZone)
		if err != nil {
			t.Fatal(err)
		}
		humanDump := faultsDumpLines(c.Dump(faultsZone), "human")
		if len(humanDump) == 0 {
			t.Fatalf("the human records are not in the zone:\n%s", strings.Join(c.Dump(faultsZone), "\n"))
		}

		cls := startClusters(t, c, 2, fastOptions())
		ours, foreign := cls[0], cls[1]
		leaks := watchLeaks(t, c, cls)

		c.SetFaults(faultRate, faultsSeed)

		// Cluster 1, the foreign owner: a few simple records and its own tree for a host that
		// cluster 0 also loadbalances (they share the host CNAME and the klb name).
		want := map[string][]*v1alpha1.Endpoint{} // by cluster name + "/" + record name
		var foreignNames []string
		for i := range 5 {
			name, host := fmt.Sprintf("f%02d", i), fmt.Sprintf("f%02d.%s", i, faultsZone)
			want[foreign.name+"/"+name] = []*v1alpha1.Endpoint{a(host, 60, fmt.Sprintf("10.9.%d.1", i))}
			foreignNames = append(foreignNames, name)
		}
		want[foreign.name+"/lb0"] = lbTree(c, "lb0."+faultsZone, "US", 100, false, "c1leaf-0", "10.9.100.1")
		foreignNames = append(foreignNames, "lb0")

		// Cluster 0: 100 records, 96 simple and 4 trees.
		var ourNames []string
		for i := range 96 {
			name, host := fmt.Sprintf("s%03d", i), fmt.Sprintf("s%03d.%s", i, faultsZone)
			want[ours.name+"/"+name] = []*v1alpha1.Endpoint{a(host, 60, fmt.Sprintf("10.0.%d.%d", i/200, i%200+1))}
			ourNames = append(ourNames, name)
		}
		for i, country := range []string{"IE", "US", "DE", "JP"} {
			name := fmt.Sprintf("lb%d", i)
			want[ours.name+"/"+name] = lbTree(c, name+"."+faultsZone, country, 120, i == 0, fmt.Sprintf("c0leaf-%d", i), fmt.Sprintf("10.1.%d.1", i))
			ourNames = append(ourNames, name)
		}
		stopProgress := faultsProgress(t, c, cls)
		defer stopProgress()
		// The first burst outlasts a call's retries (Route 53: 8 attempts each for the two clusters'
		// zone listings), so errors reach the statuses and the leak check sees them; the second falls
		// on the deletions and updates.
		var bursts sync.WaitGroup
		faultsBurst(c, &bursts, 20, 10*time.Second)
		start := time.Now()
		var wg sync.WaitGroup
		faultsCreate(t, &wg, foreign, foreignNames, want)
		faultsCreate(t, &wg, ours, ourNames, want)
		wg.Wait()
		if t.Failed() {
			return
		}

		eventually(t, readyWithin, func() string {
			faultsNoLostOwnership(t, cls)
			if r, n := faultsReadyCount(t, ours, nil); r != 100 || n != 100 {
				return fmt.Sprintf("%s: %d of %d records Ready; %s", ours.name, r, n, faultsNotReady(t, ours))
			}
			if r, n := faultsReadyCount(t, foreign, nil); r != len(foreignNames) || n != len(foreignNames) {
				return fmt.Sprintf("%s: %d of %d records Ready; %s", foreign.name, r, n, faultsNotReady(t, foreign))
			}
			return ""
		})
		readyAt := time.Since(start)
		t.Logf("%s: 100 records Ready after %s under faults; injected %v; calls %s", c.Name, readyAt.Round(time.Millisecond),
			c.Injected(), cloud.FormatCalls(c.Calls()))

		// Still under faults: delete 12 simple records and a tree, change the targets of 12 simple
		// records and of the tree shared with cluster 1.
		faultsBurst(c, &bursts, 4, 2*time.Second)
		var deleted, updated []string
		for i := range 12 {
			name := fmt.Sprintf("s%03d", i)
			ours.delete(t, name)
			delete(want, ours.name+"/"+name)
			deleted = append(deleted, name)
		}
		ours.delete(t, "lb3")
		delete(want, ours.name+"/lb3")
		deleted = append(deleted, "lb3")
		for i := 12; i < 24; i++ {
			name, host := fmt.Sprintf("s%03d", i), fmt.Sprintf("s%03d.%s", i, faultsZone)
			eps := []*v1alpha1.Endpoint{a(host, 60, fmt.Sprintf("10.2.0.%d", i), fmt.Sprintf("10.3.0.%d", i))}
			faultsUpdate(t, ours, name, eps)
			want[ours.name+"/"+name] = eps
			updated = append(updated, name)
		}
		tree := lbTree(c, "lb0."+faultsZone, "IE", 150, true, "c0leaf-0", "10.8.0.1")
		faultsUpdate(t, ours, "lb0", tree)
		want[ours.name+"/lb0"] = tree
		updated = append(updated, "lb0")

		eventually(t, settleWithin, func() string {
			faultsNoLostOwnership(t, cls)
			for _, name := range deleted {
				if msg := ours.gone(t, name); msg != "" {
					return msg
				}
			}
			if r, n := faultsReadyCount(t, ours, updated); r != 100-len(deleted) || n != 100-len(deleted) {
				return fmt.Sprintf("%s: %d of %d records Ready on their latest generation; %s", ours.name, r, n, faultsNotReady(t, ours))
			}
			return ""
		})
		settledAt := time.Since(start)

		// The zone as the backend reads it equals exactly what the owners and the human wrote. It
		// must hold so while the faults go on (a retry may still be settling), and stay so after.
		p := faultsProvider(t, c, "expect")
		expected := faultsExpected(t, p, baseline, want, cls)
		eventually(t, 30*time.Second, func() string {
			got, err := c.ReadBack(ctx, faultsZone)
			if err != nil {
				return err.Error()
			}
			return same(c.Name+" zone "+faultsZone, faultsLines(got), expected)
		})
		bursts.Wait()
		injected := c.Injected()
		c.SetFaults(0, 0)
		time.Sleep(2 * time.Second) // a pass still retrying would now land
		got, err := c.ReadBack(ctx, faultsZone)
		if err != nil {
			t.Fatal(err)
		}
		if msg := same(c.Name+" zone "+faultsZone+" after the faults stopped", faultsLines(got), expected); msg != "" {
			t.Error(msg)
		}
		faultsCheckTXT(t, p, got, want, cls)
		dump := c.Dump(faultsZone)
		if msg := same(c.Name+" human records in the cloud", faultsDumpLines(dump, "human"), humanDump); msg != "" {
			t.Error(msg)
		}
		sorted := slices.Clone(dump)
		slices.Sort(sorted)
		if len(slices.Compact(sorted)) != len(dump) {
			t.Errorf("%s holds a record set twice:\n%s", c.Name, strings.Join(dump, "\n"))
		}
		for _, ep := range human {
			if !slices.Contains(faultsLines(got), faultsLine(ep)) {
				t.Errorf("human record %s is gone or changed", faultsLine(ep))
			}
		}
		for _, name := range foreignNames {
			if rc := ready(foreign.get(t, name)); rc == nil || rc.Status != metav1.ConditionTrue {
				t.Errorf("%s: foreign record %s not Ready at the end: %v", foreign.name, name, rc)
			}
		}

		// The faults happened, of every kind the cloud was given.
		kinds := []string{"throttle", "5xx", "timeout"}
		for _, kind := range kinds {
			if injected[kind] == 0 {
				t.Errorf("%s: no %s fault was injected (%v): the test proves nothing about them", c.Name, kind, injected)
			}
		}
		if total := injected["throttle"] + injected["5xx"] + injected["timeout"]; total < 20 {
			t.Errorf("%s: only %d faults injected (%v)", c.Name, total, injected)
		}
		leaks.stopAndCheck(t)
		t.Logf("%s: 100 records Ready %s after their creation, deletions and updates settled %s after it, whole test %s; faults injected %v; %d status revisions and %d events checked (%d with a provider error); calls %s",
			c.Name, readyAt.Round(time.Millisecond), settledAt.Round(time.Millisecond), time.Since(begin).Round(time.Millisecond),
			injected, leaks.revisions, leaks.events, leaks.providerErrors, cloud.FormatCalls(c.Calls()))
	})
}

// faultsSeed makes the injected faults repeatable where the emulator allows.
const faultsSeed = 20240601

// faultsBurst adds a burst of failures to the steady faults: Route 53 throttles the next n
// requests, as a burst of other clients of the account would. The other emulators have no such
// burst: every request fails for d instead (the same mix of throttling, 5xx and timeouts).
func faultsBurst(c *cloud.Cloud, wg *sync.WaitGroup, n int, d time.Duration) {
	if c.ThrottleNext(n) {
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.SetFaults(1, faultsSeed)
		time.Sleep(d)
		c.SetFaults(faultRate, faultsSeed)
	}()
}

// faultsCreate creates the named records of cl at once from want.
func faultsCreate(t *testing.T, wg *sync.WaitGroup, cl *cluster, names []string, want map[string][]*v1alpha1.Endpoint) {
	for _, name := range names {
		eps := want[cl.name+"/"+name]
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &v1alpha1.DNSRecord{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cl.ns},
				Spec: v1alpha1.DNSRecordSpec{
					RootHost: eps[0].DNSName, ProviderRef: &v1alpha1.ProviderRef{Name: "provider"},
					Endpoints: copyEndpointList(eps),
				},
			}
			if err := cl.c.Create(t.Context(), r); err != nil {
				t.Error(err)
			}
		}()
	}
}

// faultsUpdate replaces the endpoints of a record.
func faultsUpdate(t *testing.T, cl *cluster, name string, eps []*v1alpha1.Endpoint) {
	t.Helper()
	r := cl.get(t, name)
	patch := client.MergeFrom(r.DeepCopy())
	r.Spec.Endpoints = copyEndpointList(eps)
	if err := cl.c.Patch(t.Context(), r, patch); err != nil {
		t.Fatal(err)
	}
}

func copyEndpointList(eps []*v1alpha1.Endpoint) []*v1alpha1.Endpoint {
	out := make([]*v1alpha1.Endpoint, len(eps))
	for i, ep := range eps {
		out[i] = ep.DeepCopy()
	}
	return out
}

// faultsReadyCount counts the records of cl that are Ready; the records named in latest count only
// once their status and Ready condition describe the current generation.
func faultsReadyCount(t testing.TB, cl *cluster, latest []string) (n, total int) {
	list := &v1alpha1.DNSRecordList{}
	if err := cl.c.List(t.Context(), list, client.InNamespace(cl.ns)); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		r := &list.Items[i]
		if r.DeletionTimestamp != nil {
			continue
		}
		total++
		c := ready(r)
		if c == nil || c.Status != metav1.ConditionTrue {
			continue
		}
		if slices.Contains(latest, r.Name) && (r.Status.ObservedGeneration != r.Generation || c.ObservedGeneration != r.Generation) {
			continue
		}
		n++
	}
	return n, total
}

// faultsNoLostOwnership stops the test at once when a record is Conflicted: no two owners here want
// different values for one record set, and no human record shares a name with an owned one, so a
// conflict means a record of ours lost its ownership TXT (a batch stopped half-way), which no
// retry repairs.
func faultsNoLostOwnership(t testing.TB, cls []*cluster) {
	t.Helper()
	for _, cl := range cls {
		list := &v1alpha1.DNSRecordList{}
		if err := cl.c.List(t.Context(), list, client.InNamespace(cl.ns)); err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			if c := ready(&list.Items[i]); c != nil && c.Reason == v1alpha1.ReasonConflicted {
				t.Fatalf("%s: record %s is Conflicted, so a record set of its lost its ownership TXT: %s", cl.name, list.Items[i].Name, c.Message)
			}
		}
	}
}

// faultsNotReady names a few records that are not Ready, with their condition.
func faultsNotReady(t testing.TB, cl *cluster) string {
	list := &v1alpha1.DNSRecordList{}
	if err := cl.c.List(t.Context(), list, client.InNamespace(cl.ns)); err != nil {
		return err.Error()
	}
	var out []string
	for i := range list.Items {
		r := &list.Items[i]
		if c := ready(r); c == nil || c.Status != metav1.ConditionTrue || r.DeletionTimestamp != nil {
			msg := "no Ready condition"
			if c != nil {
				msg = c.Reason + ": " + c.Message
			}
			if r.DeletionTimestamp != nil {
				msg = "deleting; " + msg
			}
			out = append(out, r.Name+" ("+msg+")")
		}
	}
	sort.Strings(out)
	if len(out) > 3 {
		out = append(out[:3], fmt.Sprintf("and %d more", len(out)-3))
	}
	return "not ready: " + strings.Join(out, ", ")
}

// faultsProvider is the cloud's backend with a valid Secret, as a human's tool or a test reaches it.
func faultsProvider(t testing.TB, c *cloud.Cloud, name string) providers.Provider {
	t.Helper()
	backend, err := c.Constructor()(t.Context(), c.Secret("default", name), providers.Env{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	return backend.Zones
}

// faultsHuman writes records no owner manages, through the backend before any controller runs, and
// returns them as the backend adjusted them.
func faultsHuman(t testing.TB, c *cloud.Cloud) []*v1alpha1.Endpoint {
	t.Helper()
	p := faultsProvider(t, c, "human")
	zones, err := p.Zones(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var zone *providers.Zone
	for i := range zones {
		if zones[i].DNSName == faultsZone {
			zone = &zones[i]
		}
	}
	if zone == nil {
		t.Fatalf("zone %s not listed: %v", faultsZone, zones)
	}
	eps, err := p.AdjustEndpoints([]*v1alpha1.Endpoint{
		a("human."+faultsZone, 300, "192.0.2.10", "192.0.2.11"),
		v1alpha1.NewEndpoint("human."+faultsZone, v1alpha1.RecordTypeTXT, 300, "v=human written by hand"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(t.Context(), *zone, nil, &providers.Changes{Create: eps}); err != nil {
		t.Fatal(err)
	}
	return eps
}

// faultsExpected is the zone the test wants at the end, as lines: what was there before the
// controllers ran, each owner's records (adjusted by the backend; owners of one record set add up)
// and one ownership TXT per owner and record set.
func faultsExpected(t testing.TB, p providers.Provider, baseline []*v1alpha1.Endpoint, want map[string][]*v1alpha1.Endpoint, cls []*cluster) []string {
	t.Helper()
	byKey := map[v1alpha1.EndpointKey]*v1alpha1.Endpoint{}
	var order []v1alpha1.EndpointKey
	add := func(ep *v1alpha1.Endpoint) {
		k := ep.Key()
		if have, ok := byKey[k]; ok {
			for _, target := range ep.Targets {
				if !slices.Contains(have.Targets, target) {
					have.Targets = append(have.Targets, target)
				}
			}
			return
		}
		byKey[k] = ep.DeepCopy()
		order = append(order, k)
	}
	for _, ep := range baseline {
		add(ep)
	}
	// Claims state their wish where another cluster's owner wants a record at the name, and are
	// Kuadrant's elsewhere (no two owners want different values for one record set).
	clustersAt := map[string]map[string]bool{}
	for key, eps := range want {
		for _, ep := range eps {
			name := v1alpha1.NormalizeName(ep.DNSName)
			if clustersAt[name] == nil {
				clustersAt[name] = map[string]bool{}
			}
			for _, cl := range cls {
				if strings.HasPrefix(key, cl.name+"/") {
					clustersAt[name][cl.name] = true
				}
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(want)) {
		owner := faultsOwner(t, cls, key)
		eps, err := p.AdjustEndpoints(copyEndpointList(want[key]))
		if err != nil {
			t.Fatal(err)
		}
		for _, ep := range eps {
			add(ep)
			newTXT := registry.NewTXT
			if len(clustersAt[v1alpha1.NormalizeName(ep.DNSName)]) > 1 {
				newTXT = func(owner string, ep *v1alpha1.Endpoint) (*v1alpha1.Endpoint, error) {
					return registry.NewWishTXT(owner, "", ep)
				}
			}
			txt, err := newTXT(owner, ep)
			if err != nil {
				t.Fatal(err)
			}
			adjusted, err := p.AdjustEndpoints([]*v1alpha1.Endpoint{txt})
			if err != nil {
				t.Fatal(err)
			}
			add(adjusted[0])
		}
	}
	eps := make([]*v1alpha1.Endpoint, 0, len(order))
	for _, k := range order {
		eps = append(eps, byKey[k])
	}
	return faultsLines(eps)
}

// faultsOwner returns the owner ID of the record named by key (cluster name + "/" + record name).
func faultsOwner(t testing.TB, cls []*cluster, key string) string {
	t.Helper()
	for _, cl := range cls {
		if name, ok := strings.CutPrefix(key, cl.name+"/"); ok {
			r := cl.get(t, name)
			if r.Status.OwnerID == "" {
				t.Fatalf("%s: record %s has no owner ID in its status", cl.name, name)
			}
			return r.Status.OwnerID
		}
	}
	t.Fatalf("no cluster for %s", key)
	return ""
}

// faultsLines renders endpoints one line each, sorted: name, type, TTL, set identifier, sorted
// targets and routing properties.
// faultsLines renders a zone for comparison, leases aside: the two clusters share names, so each
// renews a lease record and names it in its claims there (docs/zone-sharing.md#owner-leases). The
// lease tests (controllers/dnsrecord/publish, test/e2e) check those; here a lease record only has to be one.
func faultsLines(eps []*v1alpha1.Endpoint) []string {
	lines := make([]string, 0, len(eps))
	for _, ep := range eps {
		if strings.HasPrefix(ep.DNSName, "dnspolicy-lease-") {
			if _, ok := lease.Parse(ep); !ok {
				lines = append(lines, "not a lease: "+faultsLine(ep))
			}
			continue
		}
		if ep.RecordType == v1alpha1.RecordTypeTXT {
			ep = ep.DeepCopy()
			for i, target := range ep.Targets {
				ep.Targets[i] = claimLease.ReplaceAllString(target, "")
			}
		}
		lines = append(lines, faultsLine(ep))
	}
	slices.Sort(lines)
	return lines
}

// claimLease matches the lease key of a claim.
var claimLease = regexp.MustCompile(`external-dns/claim-lease=[a-z0-9]+,`)

func faultsLine(ep *v1alpha1.Endpoint) string {
	targets := make([]string, len(ep.Targets))
	for i, target := range ep.Targets {
		targets[i] = strings.ToLower(strings.TrimSuffix(target, "."))
	}
	slices.Sort(targets)
	var props []string
	for _, p := range ep.ProviderSpecific {
		props = append(props, p.Name+"="+p.Value)
	}
	slices.Sort(props)
	line := fmt.Sprintf("%s %s %d", strings.ToLower(strings.TrimSuffix(ep.DNSName, ".")), ep.RecordType, ep.RecordTTL)
	if ep.SetIdentifier != "" {
		line += " set=" + ep.SetIdentifier
	}
	if len(props) > 0 {
		line += " [" + strings.Join(props, ",") + "]"
	}
	return line + " " + strings.Join(targets, ",")
}

// faultsDumpLines returns the lines of a cloud's dump about the name label (first in the zone):
// Route 53 and Cloud DNS name sets fully qualified, Azure relative to the zone.
func faultsDumpLines(dump []string, label string) []string {
	var out []string
	for _, l := range dump {
		if strings.HasPrefix(l, label+".") || strings.HasPrefix(l, label+" ") {
			out = append(out, l)
		}
	}
	return out
}

// faultsCheckTXT checks the ownership TXTs of the zone from their side: each parses, names its
// owner's hash and a record set that owner wants, and claims exactly that owner's targets, or (a
// claim in Kuadrant's form) sits beside a record holding them; each owner has one per record set it
// wants.
func faultsCheckTXT(t testing.TB, p providers.Provider, zone []*v1alpha1.Endpoint, want map[string][]*v1alpha1.Endpoint, cls []*cluster) {
	t.Helper()
	wanted := map[string]*v1alpha1.Endpoint{} // owner + " " + key -> the owner's record
	for key, eps := range want {
		owner := faultsOwner(t, cls, key)
		adjusted, err := p.AdjustEndpoints(copyEndpointList(eps))
		if err != nil {
			t.Fatal(err)
		}
		for _, ep := range adjusted {
			wanted[owner+" "+faultsKey(ep.DNSName, ep.RecordType, ep.SetIdentifier)] = ep
		}
	}
	published := map[v1alpha1.EndpointKey]*v1alpha1.Endpoint{}
	for _, e := range zone {
		published[e.Key()] = e
	}
	seen := map[string]int{}
	for _, txt := range zone {
		if !strings.HasPrefix(txt.DNSName, registry.Prefix) {
			continue
		}
		claim, ok := registry.ParseTXT(txt)
		if !ok {
			t.Errorf("ownership TXT %s does not parse", faultsLine(txt))
			continue
		}
		k := claim.Owner + " " + faultsKey(claim.Record.DNSName, claim.Record.RecordType, claim.Record.SetIdentifier)
		seen[k]++
		ep, ok := wanted[k]
		if !ok {
			t.Errorf("ownership TXT %s names a record set its owner %s does not want", faultsLine(txt), claim.Owner)
			continue
		}
		switch rec := published[claim.Record]; {
		case claim.Wish != nil && !claim.Wish.Targets.SameTargets(ep.Targets):
			t.Errorf("ownership TXT %s claims %v, its owner wants %v", faultsLine(txt), claim.Wish, ep.Targets)
		case claim.Wish == nil && (rec == nil || slices.ContainsFunc(ep.Targets, func(target string) bool {
			return !slices.ContainsFunc(rec.Targets, func(p string) bool { return v1alpha1.NormalizeName(p) == v1alpha1.NormalizeName(target) })
		})):
			// Kuadrant's claim states no wish: the owner wants what is published.
			t.Errorf("ownership TXT %s states no wish, its owner wants %v, the zone publishes %v", faultsLine(txt), ep.Targets, rec)
		}
	}
	for k := range wanted {
		if seen[k] != 1 {
			t.Errorf("%d ownership TXTs for %s, want 1", seen[k], k)
		}
	}
}

func faultsKey(name, recordType, set string) string {
	return strings.ToLower(strings.TrimSuffix(name, ".")) + " " + recordType + " " + set
}

// leakWatch watches every status revision of the DNSRecords and every event of the clusters'
// namespaces, and notes any text that carries a request ID or the Secret's value.
type leakWatch struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	c      *cloud.Cloud

	mu                                sync.Mutex
	leaks                             []string
	revisions, events, providerErrors int
}

// leakPatterns are request IDs as the clouds and SDKs print them: the words, the headers, and the
// UUID form Route 53 (and its emulator), Azure and many others use.
var leakPatterns = []*regexp.Regexp{
	regexp.MustCompile(`(?i)request[ _-]?id`),
	regexp.MustCompile(`(?i)x-amzn?-`),
	regexp.MustCompile(`(?i)x-ms-`),
	regexp.MustCompile(`(?i)x-goog`),
	regexp.MustCompile(`(?i)correlation`),
	regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`),
}

func watchLeaks(t *testing.T, c *cloud.Cloud, cls []*cluster) *leakWatch {
	ctx, cancel := context.WithCancel(context.Background())
	lw := &leakWatch{cancel: cancel, c: c}
	t.Cleanup(lw.stop)
	for i, cl := range cls {
		wc, err := client.NewWithWatch(envs[i].Config, client.Options{Scheme: testenv.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		for _, list := range []client.ObjectList{&v1alpha1.DNSRecordList{}, &eventsv1.EventList{}} {
			lw.wg.Add(1)
			go func() {
				defer lw.wg.Done()
				for ctx.Err() == nil {
					w, err := wc.Watch(ctx, list.DeepCopyObject().(client.ObjectList), client.InNamespace(cl.ns))
					if err != nil {
						time.Sleep(100 * time.Millisecond)
						continue
					}
					lw.drain(cl, w)
					w.Stop()
				}
			}()
		}
	}
	return lw
}

func (lw *leakWatch) drain(cl *cluster, w watch.Interface) {
	for ev := range w.ResultChan() {
		switch o := ev.Object.(type) {
		case *v1alpha1.DNSRecord:
			lw.checkRecord(cl, o)
		case *eventsv1.Event:
			lw.mu.Lock()
			lw.events++
			lw.mu.Unlock()
			lw.check(fmt.Sprintf("%s: event %s %s on %s", cl.name, o.Reason, o.Action, o.Regarding.Name), o.Reason+" "+o.Action+" "+o.Note)
		}
	}
}

func (lw *leakWatch) checkRecord(cl *cluster, r *v1alpha1.DNSRecord) {
	lw.mu.Lock()
	lw.revisions++
	lw.mu.Unlock()
	where := fmt.Sprintf("%s: record %s (resourceVersion %s)", cl.name, r.Name, r.ResourceVersion)
	for _, c := range r.Status.Conditions {
		if c.Reason == v1alpha1.ReasonProviderError || c.Reason == v1alpha1.ReasonDNSProviderError {
			lw.mu.Lock()
			lw.providerErrors++
			lw.mu.Unlock()
		}
		lw.check(where+" condition "+c.Type, c.Type+" "+c.Reason+" "+c.Message)
	}
	// The rest of the status, but the zone ID: an Azure zone's resource ID holds the subscription ID,
	// which is a UUID by design, not a request's.
	status := r.Status.DeepCopy()
	status.ZoneID = ""
	b, _ := json.Marshal(status)
	lw.check(where+" status", string(b))
}

func (lw *leakWatch) check(where, text string) {
	var found []string
	for _, re := range leakPatterns {
		if m := re.FindString(text); m != "" {
			found = append(found, fmt.Sprintf("%q", m))
		}
	}
	for _, secret := range faultsSecretValues(lw.c) {
		if strings.Contains(text, secret) {
			found = append(found, "the Secret's value")
		}
	}
	if len(found) == 0 {
		return
	}
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if len(lw.leaks) < 20 {
		lw.leaks = append(lw.leaks, fmt.Sprintf("%s carries %s: %s", where, strings.Join(found, ", "), text))
	}
}

func (lw *leakWatch) stop() {
	lw.cancel()
	lw.wg.Wait()
}

// stopAndCheck stops watching and fails the test for every leak seen.
func (lw *leakWatch) stopAndCheck(t testing.TB) {
	t.Helper()
	lw.stop()
	lw.mu.Lock()
	defer lw.mu.Unlock()
	for _, l := range lw.leaks {
		t.Error(l)
	}
	if lw.revisions == 0 || lw.providerErrors == 0 {
		t.Errorf("%d status revisions watched, %d with a provider error: the leak check proves nothing", lw.revisions, lw.providerErrors)
	}
}

// faultsSecretValues are the secret parts of the cloud's provider Secret: values of keys that name a
// secret, also inside a JSON value (Azure's azure.json).
func faultsSecretValues(c *cloud.Cloud) []string {
	var out []string
	for k, v := range c.SecretData() {
		if strings.Contains(strings.ToLower(k), "secret") {
			out = append(out, v)
		}
		var inner map[string]string
		if json.Unmarshal([]byte(v), &inner) == nil {
			for ik, iv := range inner {
				if strings.Contains(strings.ToLower(ik), "secret") {
					out = append(out, iv)
				}
			}
		}
	}
	return out
}

// faultsProgress logs, every 15 s, how the records of the first cluster stand (Ready or the reason
// why not, with one message per reason) and the faults injected so far.
func faultsProgress(t *testing.T, c *cloud.Cloud, cls []*cluster) func() {
	done := make(chan struct{})
	start := time.Now()
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(15 * time.Second):
			}
			for _, cl := range cls[:1] {
				list := &v1alpha1.DNSRecordList{}
				if err := cl.c.List(context.Background(), list, client.InNamespace(cl.ns)); err != nil {
					continue
				}
				reasons := map[string]int{}
				example := map[string]string{}
				for i := range list.Items {
					r := &list.Items[i]
					k := "none"
					if c := ready(r); c != nil {
						k = string(c.Status) + "/" + c.Reason
						example[k] = c.Message
					}
					reasons[k]++
				}
				t.Logf("%s +%s: %v injected %v %v", cl.name, time.Since(start).Round(time.Second), reasons, c.Injected(), example)
			}
		}
	}()
	return func() { close(done) }
}
