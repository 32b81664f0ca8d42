//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/test/clustersecret"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
	"github.com/dnspolicy/dnspolicy-controller/test/resolver"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

const (
	delegEmbeddedNS   = "deleg-embedded"
	delegEmbeddedZone = "deleg.e2e.example.com"
	delegRoute53NS    = "deleg-route53"
	// Every controller renews its owner lease every 5 s and asks for 10 s (the defaults are 30 s and
	// 75 s): the secondary's in the records it delegates, the primaries' in the Route 53 zone they
	// share.
	delegLeaseEvery    = 5 * time.Second
	delegLeaseDuration = 10 * time.Second
	// delegWait bounds a change that waits for no lease: a watch event, a pass on each primary, a
	// pass of the authoritative record, and (Route 53) a write and the mirror's next read.
	delegWait = time.Minute
)

// Issue 24, acceptance 1 and 4: Kuadrant's delegation scenarios across three control planes, the
// controller a process on each: two primaries, each reaching the secondary and the other primary
// through a kubeconfig Secret that holds only Kuadrant's remote role (package clustersecret), and a
// secondary. Every scenario runs at once in two namespaces: one whose default provider Secret is of
// the coredns kind, answered by each primary's embedded DNS server, and one whose default provider
// is a Route 53 zone of the emulator both primaries publish into, answered by a DNS server serving
// that zone. Answers are read with a DNS client.
//
//  1. merge: records of a primary and of the secondary for one root host merge into one
//     authoritative record on each primary, the two alike; a record of the secondary without
//     delegate stays out; in Route 53 both primaries' authoritative records claim the name.
//  2. secondary edits reach both primaries' answers.
//  3. the secondary SIGKILLed: its target leaves the shared name after its lease, a name it holds
//     alone keeps its target, and restarted it is answered again.
//  4. primary2 SIGKILLed: primary1 serves everything, a later edit of the secondary too; the
//     secondary's record then deleted leaves primary1's answers and keeps its finalizer until
//     primary2, restarted, has reported it removed.
//  5. the authoritative record stays with a contributor left and goes with the last.
func TestDelegationAcrossClusters(t *testing.T) {
	ctrllog.SetLogger(logr.Discard())
	f := startDelegFleet(t)
	// One test, not subtests: each step starts from what the one before left, and a controller
	// restarted in a subtest would be stopped with it (startControllerProcess ties a process to the
	// test that starts it).
	for _, step := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"merge", f.merge},
		{"secondary edits", f.secondaryEdits},
		{"secondary SIGKILLed", f.secondaryKilled},
		{"primary SIGKILLed, finalizer", f.primaryKilled},
		{"last contributor", f.lastContributor},
	} {
		started := time.Now()
		step.run(t)
		t.Logf("%s: passed in %v", step.name, time.Since(started).Round(100*time.Millisecond))
	}
}

// delegFleet is the three clusters, their controllers and the two ways the primaries publish.
type delegFleet struct {
	primaries [2]*controllerProcess
	secondary *controllerProcess
	// dns are the primaries' embedded DNS servers; up says which primaries run.
	dns      [2]string
	up       [2]bool
	backends []*delegBackend
	// route53 reads the emulator's zone with its own credentials.
	route53 *zoneReader
}

// delegBackend is one namespace, the same on every cluster, and the zone its primaries publish the
// authoritative records into through its default provider Secret.
type delegBackend struct {
	name, ns, zone string
	// servers are the DNS servers to ask: each running primary's embedded server, or the server
	// serving the Route 53 zone, whichever primaries write it.
	servers func() []string
}

func (b *delegBackend) host(label string) string { return label + "." + b.zone }

func startDelegFleet(t *testing.T) *delegFleet {
	t.Helper()
	bin := buildController(t)
	cloud := route53Cloud(t)
	f := &delegFleet{route53: leaseReader(t, cloud), up: [2]bool{true, true}}
	zoneServer, _ := serveZoneAt(t, f.route53.read, leaseZone, leaseHost)
	f.backends = []*delegBackend{
		{name: "embedded", ns: delegEmbeddedNS, zone: delegEmbeddedZone, servers: func() []string {
			var out []string
			for i, addr := range f.dns {
				if f.up[i] {
					out = append(out, addr)
				}
			}
			return out
		}},
		{name: "route53", ns: delegRoute53NS, zone: leaseZone, servers: func() []string { return []string{zoneServer} }},
	}

	envs := make([]*testenv.Env, 3)
	for i := range envs {
		env, err := testenv.Start(testenv.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Stop() })
		envs[i] = env
	}
	names := []string{"primary1", "primary2", "secondary"}
	for i := range 2 {
		for _, j := range []int{2, 1 - i} {
			if err := clustersecret.Connect(context.Background(), envs[i].Config, envs[j].Config, names[j]); err != nil {
				t.Fatalf("connecting %s to %s: %v", names[i], names[j], err)
			}
		}
	}
	// Records only: no Gateways here.
	common := []string{"--owner-lease-renewal", delegLeaseEvery.String(), "--owner-lease-duration", delegLeaseDuration.String(),
		"--enable-policy-controller=false"}
	f.secondary = startControllerProcess(t, bin, names[2], envs[2], "coredns,"+cloud.provider,
		append([]string{"--delegation-role", "secondary"}, common...)...)
	for i := range 2 {
		f.dns[i] = freeport.Addr(t)
		f.primaries[i] = startControllerProcess(t, bin, names[i], envs[i], "coredns,"+cloud.provider, append([]string{
			"--delegation-role", "primary", "--cluster-secret-namespace", clustersecret.Namespace,
			"--dns-server-address", f.dns[i], "--grant", delegEmbeddedNS + "=" + delegEmbeddedZone,
		}, common...)...)
	}
	for _, p := range f.processes() {
		for _, b := range f.backends {
			p.cluster.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: b.ns}})
		}
	}
	for _, p := range f.primaries {
		p.cluster.create(t, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: delegEmbeddedNS, Name: "coredns", Labels: map[string]string{v1alpha1.DefaultProviderLabel: "true"}},
			Type:       v1alpha1.SecretTypeCoreDNS,
			StringData: map[string]string{v1alpha1.CoreDNSZonesKey: delegEmbeddedZone},
		})
		s := cloud.secret(delegRoute53NS, "route53")
		s.Labels = map[string]string{v1alpha1.DefaultProviderLabel: "true"}
		p.cluster.create(t, s)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the records at the end:\n%s", f.describe())
		}
	})
	return f
}

func (f *delegFleet) processes() []*controllerProcess {
	return []*controllerProcess{f.primaries[0], f.primaries[1], f.secondary}
}

// merge: Kuadrant's "records on primary and secondary merge into one authoritative record", "both
// primaries build identical ones" and "delegate: false on a secondary stays out".
func (f *delegFleet) merge(t *testing.T) {
	p1, p2, sec := f.primaries[0].cluster, f.primaries[1].cluster, f.secondary.cluster
	// The record without delegate comes first, and is seen by the secondary's controller first, so
	// the primaries' passes over the delegating records come after it.
	f.create(t, sec, "plain", "app", false, "10.24.0.9")
	eventually(t, delegWait, func() string {
		for _, b := range f.backends {
			if r := sec.record(t, b.ns, "plain"); r == nil || condition(r, v1alpha1.ConditionTypeReady) == "absent" {
				return b.name + ": the secondary has not judged its record without delegate"
			}
		}
		return ""
	})
	f.create(t, p1, "pri", "app", true, "10.24.0.1")
	f.create(t, sec, "sec", "app", true, "10.24.0.2")
	f.create(t, sec, "solo", "solo", true, "10.24.0.3")
	f.waitAnswers(t, delegWait, "app", "10.24.0.1", "10.24.0.2")
	f.waitAnswers(t, delegWait, "solo", "10.24.0.3")

	// Both primaries build the same authoritative records, and in Route 53 each publishes its own
	// under its own owner ID; each writes its entry into the secondary's record.
	f.waitAgreed(t, "app", "10.24.0.1", "10.24.0.2")
	eventually(t, delegWait, func() string {
		for _, b := range f.backends {
			for _, p := range []*conflictCluster{p1, p2} {
				if got := delegEntry(sec.record(t, b.ns, "sec"), p.clusterID); got != "True ProviderSuccess: Provider ensured the dns record" {
					return fmt.Sprintf("%s: the secondary's record's entry of %s: %s", b.name, p.name, got)
				}
			}
		}
		return ""
	})
	for _, b := range f.backends {
		if r := sec.record(t, b.ns, "plain"); len(r.Status.RemoteRecordStatuses) > 0 {
			t.Errorf("%s: primaries wrote %d entries into the record without delegate", b.name, len(r.Status.RemoteRecordStatuses))
		}
	}
}

// secondaryEdits: an edit of the secondary's record reaches both primaries' answers.
func (f *delegFleet) secondaryEdits(t *testing.T) {
	f.edit(t, f.secondary.cluster, "sec", "app", "10.24.0.4")
	f.waitAnswers(t, delegWait, "app", "10.24.0.1", "10.24.0.4")
	f.waitAgreed(t, "app", "10.24.0.1", "10.24.0.4")
}

// secondaryKilled: acceptance 4's dead secondary. Its endpoints leave the names it shares with a
// live owner once its lease has expired, never a name it holds alone; restarted, it renews its lease
// and is published again.
func (f *delegFleet) secondaryKilled(t *testing.T) {
	sec := f.secondary.cluster
	f.secondary.kill(t)
	killed := time.Now()
	// Its last renewal up to a period before the kill, the lease and the readers' tolerance; a
	// primary's re-check of a record carrying a lease (a period); the passes of the authoritative
	// record and, for Route 53, its write and the mirror's read, on loaded cores.
	bound := delegLeaseDuration + lease.DefaultTolerance + 2*delegLeaseEvery + 10*time.Second
	eventually(t, 3*bound, func() string {
		for _, b := range f.backends {
			for _, addr := range b.servers() {
				if got := resolver.AnswersA(addr, b.host("solo")); got != "10.24.0.3" && !strings.HasPrefix(got, "query failed") {
					t.Fatalf("%s: %s answers %s with %q: a name the dead secondary holds alone lost its target", b.name, addr, b.host("solo"), got)
				}
			}
		}
		return f.answers("app", "10.24.0.1")
	})
	gone := time.Since(killed)
	t.Logf("the SIGKILLed secondary's target left both backends' answers %v after the kill (lease %v, renewal %v, tolerance %v)",
		gone.Round(100*time.Millisecond), delegLeaseDuration, delegLeaseEvery, lease.DefaultTolerance)
	if gone > bound {
		t.Errorf("the dead secondary's target left after %v, more than its lease and one re-check after its last renewal (%v)", gone, bound)
	}
	eventually(t, delegWait, func() string {
		for _, b := range f.backends {
			for _, p := range f.primaries {
				if got := delegEntry(sec.record(t, b.ns, "sec"), p.cluster.clusterID); !strings.HasPrefix(got, "False OwnerLeaseExpired: the owner lease ") {
					return fmt.Sprintf("%s: the secondary's record's entry of %s: %s", b.name, p.cluster.name, got)
				}
			}
		}
		return ""
	})

	f.secondary.restart(t)
	restarted := time.Now()
	f.waitAnswers(t, delegWait, "app", "10.24.0.1", "10.24.0.4")
	f.waitAnswers(t, delegWait, "solo", "10.24.0.3")
	f.waitAgreed(t, "app", "10.24.0.1", "10.24.0.4")
	t.Logf("the restarted secondary's target was answered again %v after the restart", time.Since(restarted).Round(100*time.Millisecond))
}

// primaryKilled: acceptance 4's dead primary, and Kuadrant's "the secondary's finalizer waits for
// every primary". With primary2 SIGKILLed, primary1 serves every contributor, an edit of the
// secondary made afterwards too (in Route 53 once primary2's lease there has expired and primary1
// has withdrawn primary2's stale claim). The secondary's record then deleted leaves the answers
// but keeps its finalizer, waiting for primary2, until primary2 is restarted and reports it removed.
func (f *delegFleet) primaryKilled(t *testing.T) {
	p1, p2, sec := f.primaries[0].cluster, f.primaries[1].cluster, f.secondary.cluster
	f.primaries[1].kill(t)
	f.up[1] = false
	killed := time.Now()
	f.edit(t, sec, "sec", "app", "10.24.0.5")
	f.waitAnswers(t, 2*time.Minute, "app", "10.24.0.1", "10.24.0.5")
	f.waitAnswers(t, delegWait, "solo", "10.24.0.3")
	t.Logf("primary1 alone answered the secondary's edit %v after primary2's SIGKILL", time.Since(killed).Round(100*time.Millisecond))

	f.remove(t, sec, "sec")
	waiting := "False ProviderEndpointsDeletion: DNS records are being deleted from provider: waiting for primary clusters " +
		p2.clusterID + " to report them removed in status.remoteRecordStatuses"
	eventually(t, delegWait, func() string {
		if msg := f.answers("app", "10.24.0.1"); msg != "" {
			return msg
		}
		for _, b := range f.backends {
			r := sec.record(t, b.ns, "sec")
			if r == nil {
				t.Fatalf("%s: the secondary's record went while primary2, which published it, is down", b.name)
			}
			if got := condition(r, v1alpha1.ConditionTypeReady); got != waiting || !controllerutil.ContainsFinalizer(r, v1alpha1.RecordFinalizer) {
				return fmt.Sprintf("%s: the deleted record: Ready %q, finalizers %v; want %q", b.name, got, r.Finalizers, waiting)
			}
			if got := delegEntry(r, p1.clusterID); got != "False ProviderEndpointsRemoved: DNS records removed from provider" {
				return fmt.Sprintf("%s: the deleted record's entry of primary1: %s", b.name, got)
			}
		}
		return ""
	})

	f.primaries[1].restart(t)
	f.up[1] = true
	eventually(t, delegWait, func() string {
		for _, b := range f.backends {
			if r := sec.record(t, b.ns, "sec"); r != nil {
				return fmt.Sprintf("%s: the deleted record is still there: Ready %s", b.name, condition(r, v1alpha1.ConditionTypeReady))
			}
		}
		return f.answers("app", "10.24.0.1")
	})
	// Restarted, primary2 renews its lease in Route 53 and publishes its authoritative record again.
	f.waitAgreed(t, "app", "10.24.0.1")
}

// lastContributor: Kuadrant's "the authoritative record goes with its last contributor". The
// authoritative record of app stays while primary1's record is left, and goes with it, on both
// primaries, while solo's stays; solo's goes with the secondary's record.
func (f *delegFleet) lastContributor(t *testing.T) {
	p1, sec := f.primaries[0].cluster, f.secondary.cluster
	for _, b := range f.backends {
		for _, p := range f.primaries {
			if got := delegAuthoritative(t, p.cluster, b.ns, b.host("app")); !slices.ContainsFunc(got, func(l string) bool { return strings.Contains(l, "10.24.0.1") }) {
				t.Fatalf("%s: %s's authoritative record of app, with primary1's record left: %v", b.name, p.cluster.name, got)
			}
		}
	}
	f.remove(t, p1, "pri")
	eventually(t, delegWait, func() string {
		for _, b := range f.backends {
			if p1.record(t, b.ns, "pri") != nil {
				return b.name + ": primary1's deleted record is still there"
			}
			for _, p := range f.primaries {
				if got := delegAuthoritative(t, p.cluster, b.ns, b.host("app")); len(got) > 0 {
					return fmt.Sprintf("%s: %s's authoritative record of app outlived its last contributor: %v", b.name, p.cluster.name, got)
				}
				if got := delegAuthoritative(t, p.cluster, b.ns, b.host("solo")); len(got) == 0 {
					t.Fatalf("%s: %s's authoritative record of solo went with app's", b.name, p.cluster.name)
				}
			}
		}
		return f.answers("app")
	})
	f.waitAnswers(t, delegWait, "solo", "10.24.0.3")

	f.remove(t, sec, "solo")
	eventually(t, delegWait, func() string {
		for _, b := range f.backends {
			if sec.record(t, b.ns, "solo") != nil {
				return b.name + ": the secondary's deleted record solo is still there"
			}
			for _, p := range f.primaries {
				if got := delegAuthoritative(t, p.cluster, b.ns, ""); len(got) > 0 {
					return fmt.Sprintf("%s: %s keeps authoritative records: %v", b.name, p.cluster.name, got)
				}
			}
		}
		return f.answers("solo")
	})
	for _, b := range f.backends {
		if r := sec.record(t, b.ns, "plain"); len(r.Status.RemoteRecordStatuses) > 0 {
			t.Errorf("%s: primaries wrote %d entries into the record without delegate", b.name, len(r.Status.RemoteRecordStatuses))
		}
	}
}

// create creates, in every backend's namespace of cl, the record name of root host label with one A
// endpoint of ips.
func (f *delegFleet) create(t *testing.T, cl *conflictCluster, name, label string, delegate bool, ips ...string) {
	t.Helper()
	for _, b := range f.backends {
		cl.create(t, &v1alpha1.DNSRecord{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: b.ns},
			Spec: v1alpha1.DNSRecordSpec{RootHost: b.host(label), Delegate: delegate,
				Endpoints: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(b.host(label), v1alpha1.RecordTypeA, 60, ips...)}},
		})
	}
}

// edit gives the record name of every backend's namespace of cl the targets ips.
func (f *delegFleet) edit(t *testing.T, cl *conflictCluster, name, label string, ips ...string) {
	t.Helper()
	for _, b := range f.backends {
		eventually(t, delegWait, func() string {
			r := cl.record(t, b.ns, name)
			if r == nil {
				t.Fatalf("%s: %s/%s is gone", cl.name, b.ns, name)
			}
			r.Spec.Endpoints = []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(b.host(label), v1alpha1.RecordTypeA, 60, ips...)}
			if err := cl.c.Update(context.Background(), r); err != nil {
				return fmt.Sprintf("%s: updating %s/%s: %v", cl.name, b.ns, name, err)
			}
			return ""
		})
	}
}

func (f *delegFleet) remove(t *testing.T, cl *conflictCluster, name string) {
	t.Helper()
	for _, b := range f.backends {
		if err := cl.c.Delete(context.Background(), &v1alpha1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: b.ns}}); err != nil {
			t.Fatalf("%s: deleting %s/%s: %v", cl.name, b.ns, name, err)
		}
	}
}

// answers says how the answers for label's A records differ from want, asking every server of
// every backend; "" when they all answer exactly want.
func (f *delegFleet) answers(label string, want ...string) string {
	slices.Sort(want)
	for _, b := range f.backends {
		for _, addr := range b.servers() {
			if got := resolver.AnswersA(addr, b.host(label)); got != strings.Join(want, ",") {
				return fmt.Sprintf("%s: %s answers %s with %q, want %q", b.name, addr, b.host(label), got, strings.Join(want, ","))
			}
		}
	}
	return ""
}

func (f *delegFleet) waitAgreed(t *testing.T, label string, want ...string) {
	t.Helper()
	eventually(t, delegWait, func() string { return f.agreed(t, label, want...) })
}

func (f *delegFleet) waitAnswers(t *testing.T, timeout time.Duration, label string, want ...string) {
	t.Helper()
	eventually(t, timeout, func() string { return f.answers(label, want...) })
}

// route53Wishes are the ownership TXTs in the Route 53 zone claiming host's A records, each as
// "<owner>=<targets it wants>", sorted.
func (f *delegFleet) route53Wishes(t *testing.T, host string) []string {
	t.Helper()
	eps, err := f.route53.read()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range eps {
		c, ok := registry.ParseTXT(e)
		if !ok || c.Record.DNSName != host || c.Record.RecordType != v1alpha1.RecordTypeA {
			continue
		}
		wish := "(unsaid)"
		if c.Wish != nil {
			ts := slices.Clone([]string(c.Wish.Targets))
			slices.Sort(ts)
			wish = strings.Join(ts, ",")
		}
		out = append(out, c.Owner+"="+wish)
	}
	slices.Sort(out)
	return out
}

// agreed says how the two primaries, both running, disagree; "" when in every namespace their
// authoritative records are alike, and in Route 53 both primaries' authoritative records of
// label's root host, each under its own owner ID, claim label's A records wanting exactly want.
func (f *delegFleet) agreed(t *testing.T, label string, want ...string) string {
	t.Helper()
	p1, p2 := f.primaries[0].cluster, f.primaries[1].cluster
	for _, b := range f.backends {
		one, two := delegAuthoritative(t, p1, b.ns, ""), delegAuthoritative(t, p2, b.ns, "")
		if len(one) == 0 || !slices.Equal(one, two) {
			return fmt.Sprintf("%s: the primaries' authoritative records differ:\nprimary1:\n  %s\nprimary2:\n  %s",
				b.name, strings.Join(one, "\n  "), strings.Join(two, "\n  "))
		}
	}
	slices.Sort(want)
	host := label + "." + leaseZone
	var wishes []string
	for _, p := range []*conflictCluster{p1, p2} {
		for _, r := range delegAuthoritativeRecords(t, p, delegRoute53NS, host) {
			wishes = append(wishes, r.Status.OwnerID+"="+strings.Join(want, ","))
		}
	}
	slices.Sort(wishes)
	if got := f.route53Wishes(t, host); len(wishes) != 2 || !slices.Equal(got, wishes) {
		return fmt.Sprintf("the Route 53 zone's claims of %s: %v, want both primaries' authoritative records' %v", host, got, wishes)
	}
	return ""
}

// delegEntry is a primary's entry of a record's status.remoteRecordStatuses, as its Ready
// condition, or "none".
func delegEntry(r *v1alpha1.DNSRecord, clusterID string) string {
	if r == nil {
		return "no record"
	}
	st, ok := r.Status.RemoteRecordStatus(clusterID)
	if !ok {
		return "none"
	}
	return condition(&v1alpha1.DNSRecord{Status: st}, v1alpha1.ConditionTypeReady)
}

// delegAuthoritativeRecords are cl's authoritative records in ns, of rootHost ("": every one).
func delegAuthoritativeRecords(t *testing.T, cl *conflictCluster, ns, rootHost string) []v1alpha1.DNSRecord {
	t.Helper()
	list := &v1alpha1.DNSRecordList{}
	if err := cl.c.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{v1alpha1.AuthoritativeRecordLabel: "true"}); err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(list.Items, func(r v1alpha1.DNSRecord) bool { return rootHost != "" && r.Spec.RootHost != rootHost })
}

// delegAuthoritative lists the endpoints of cl's authoritative records in ns, of rootHost ("":
// every one), each after its record's name, sorted.
func delegAuthoritative(t *testing.T, cl *conflictCluster, ns, rootHost string) []string {
	t.Helper()
	var out []string
	for _, r := range delegAuthoritativeRecords(t, cl, ns, rootHost) {
		for _, e := range r.Spec.Endpoints {
			out = append(out, r.Name+" "+e.String())
		}
	}
	slices.Sort(out)
	return out
}

// describe is every cluster's records of both namespaces, to read beside the controllers' logs.
func (f *delegFleet) describe() string {
	var b strings.Builder
	for _, p := range f.processes() {
		for _, be := range f.backends {
			list := &v1alpha1.DNSRecordList{}
			if err := p.cluster.c.List(context.Background(), list, client.InNamespace(be.ns)); err != nil {
				fmt.Fprintf(&b, "%s: %v\n", p.cluster.name, err)
				continue
			}
			for _, r := range list.Items {
				fmt.Fprintf(&b, "%s %s/%s: finalizers %v, Ready %s, entries %d\n", p.cluster.name, r.Namespace, r.Name,
					r.Finalizers, condition(&r, v1alpha1.ConditionTypeReady), len(r.Status.RemoteRecordStatuses))
				for _, e := range r.Spec.Endpoints {
					fmt.Fprintf(&b, "    %s\n", e)
				}
			}
		}
	}
	if eps, err := f.route53.read(); err == nil {
		fmt.Fprintf(&b, "the Route 53 zone:\n")
		for _, e := range eps {
			fmt.Fprintf(&b, "    %s\n", e)
		}
	}
	return b.String()
}
