//go:build mixedfleet

package mixedfleet

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
)

// wait bounds every wait for the fleet to converge: Kuadrant's operator re-checks a record every
// 5 s (its --min-requeue-time) and both primaries act on watch events, so a minute is generous
// even on two loaded cores.
const wait = 2 * time.Minute

// scenario is one of Kuadrant's delegation scenarios (its integration tests,
// internal/controller/dnsrecord_controller_delegation_test.go, and its testsuite), run in its own
// namespace and zone on both clusters.
type scenario struct {
	name string
	run  func(t *testing.T, f *fleet, s *space)
}

var scenarios = []scenario{
	{"merge", merge},
	{"secondary-edits-and-deletes", secondaryEdits},
	{"delegate-false-stays-out", delegateFalseStaysOut},
	{"last-contributor", lastContributor},
	{"finalizer-waits-for-primary", finalizerWaits},
}

// space is a scenario's namespace (the same name on both clusters), zone and root host.
type space struct{ ns, zone, host string }

func spaceOf(name string) *space {
	zone := name + ".mixed.test"
	return &space{ns: name, zone: zone, host: "app." + zone}
}

// fleet is a primary and a secondary cluster and the DNS server answering for the primary.
type fleet struct {
	direction          string
	primary, secondary *cluster
	dns                string   // address of the DNS server serving the primary's authoritative records
	dnsProc            *process // that server, when it is not the primary's operator
}

func TestMixedFleet(t *testing.T) {
	for _, d := range []struct {
		name               string
		primary, secondary operator
	}{
		{"kuadrant-primary", kuadrant, ours},
		{"ours-primary", ours, kuadrant},
	} {
		t.Run(d.name, func(t *testing.T) {
			f := startFleet(t, d.name, d.primary, d.secondary)
			for _, sc := range scenarios {
				var started time.Time
				ok := t.Run(sc.name, func(t *testing.T) {
					started = time.Now()
					sc.run(t, f, f.space(t, sc.name))
				})
				if !started.IsZero() { // not left out by -run
					record(d.name, sc.name, ok, time.Since(started))
				}
			}
		})
	}
}

// startFleet starts both control planes, connects the primary to the secondary, and starts the
// operators: the primary's with a DNS server answering for its authoritative records. Each
// scenario's namespace is granted its zone on that server.
func startFleet(t *testing.T, direction string, primaryOp, secondaryOp operator) *fleet {
	t.Helper()
	f := &fleet{
		direction: direction,
		primary:   startCluster(t, direction+"-primary", primaryOp),
		secondary: startCluster(t, direction+"-secondary", secondaryOp),
		dns:       freeport.Addr(t),
	}
	connect(t, f.primary, f.secondary)
	// Our DNS server serves the authoritative records of granted namespaces: the grants are the
	// administrator's, given at start.
	dnsArgs := []string{"--dns-server-address", f.dns}
	for _, sc := range scenarios {
		s := spaceOf(sc.name)
		dnsArgs = append(dnsArgs, "--grant", s.ns+"="+s.zone)
	}
	startOperator(t, f.secondary, "secondary")
	switch primaryOp {
	case ours:
		startOperator(t, f.primary, "primary", dnsArgs...)
	case kuadrant:
		startOperator(t, f.primary, "primary")
		// Where Kuadrant runs CoreDNS with its plugin, our binary serves the same records: the
		// authoritative DNSRecords labelled with their zone, read from the primary's API server.
		health := freeport.Addr(t)
		args := append([]string{
			"--kubeconfig", f.primary.kubeconfig, "--log-format", "console",
			"--enable-record-controller=false", "--enable-policy-controller=false",
			"--metrics-bind-address", "0", "--health-probe-bind-address", health,
		}, dnsArgs...)
		f.dnsProc = newProcess(f.primary.name+"-dns", oursBin, health, args)
		f.dnsProc.start(t)
		t.Cleanup(func() {
			f.dnsProc.stop()
			if t.Failed() {
				t.Logf("last lines of %s:\n%s", f.dnsProc.logPath, f.dnsProc.tail(40))
			}
		})
	}
	return f
}

// space creates a scenario's namespace on both clusters and, on the primary, its default provider
// Secret: kuadrant.io/coredns for the scenario's zone, labelled kuadrant.io/default-provider, the
// Secret a delegating record's authoritative record is published through.
func (f *fleet) space(t *testing.T, name string) *space {
	t.Helper()
	s := spaceOf(name)
	for _, cl := range []*cluster{f.primary, f.secondary} {
		if err := cl.c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}}); err != nil {
			t.Fatal(err)
		}
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "dns-provider-credentials-coredns", Namespace: s.ns,
			Labels: map[string]string{v1alpha1.DefaultProviderLabel: "true"}},
		Type: v1alpha1.SecretTypeCoreDNS,
		Data: map[string][]byte{v1alpha1.CoreDNSZonesKey: []byte(s.zone)},
	}
	if err := f.primary.c.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s", f.describe(s))
		}
	})
	return s
}

// --- the scenarios -------------------------------------------------------------------------------

// merge: a delegating record on the primary and one on the secondary for the same name end in one
// authoritative record on the primary, answered with both targets; the secondary's record carries
// the primary's view in status.remoteRecordStatuses.
func merge(t *testing.T, f *fleet, s *space) {
	onPrimary := f.create(t, f.primary, delegating(s, "on-primary", a(s.host, "10.1.0.1")))
	onSecondary := f.create(t, f.secondary, delegating(s, "on-secondary", a(s.host, "10.1.0.2")))
	f.waitAnswers(t, s.host, dns.TypeA, "10.1.0.1", "10.1.0.2")

	auth := f.authoritative(t, s)
	if auth == nil {
		t.Fatalf("no authoritative record of %s on the primary", s.host)
	}
	if !strings.HasPrefix(auth.Name, "authoritative-record-") || auth.Labels["kuadrant.io/authoritative-record-hash"] == "" {
		t.Errorf("authoritative record %s, labels %v: want authoritative-record-<hash> with its hash label", auth.Name, auth.Labels)
	}
	if got := targets(auth, s.host, "A"); !slices.Equal(got, []string{"10.1.0.1", "10.1.0.2"}) {
		t.Errorf("authoritative record's A %s: %v, want both clusters' targets", s.host, got)
	}
	f.waitRemoteStatus(t, onSecondary, func(st v1alpha1.DNSRecordStatus) string {
		if c := meta.FindStatusCondition(st.Conditions, "Ready"); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Sprintf("the primary's entry is not Ready: %v", st.Conditions)
		}
		if st.ZoneID != auth.Name || st.ZoneDomainName != s.host {
			return fmt.Sprintf("the primary's entry names zone %q (%q), want the authoritative record %q (%q)", st.ZoneID, st.ZoneDomainName, auth.Name, s.host)
		}
		return ""
	})
	// The primary's operator publishes the authoritative record (Ready) and the DNS server says
	// it serves it (Served), each writing its own condition of the same record.
	eventuallyT(t, func() string {
		auth := f.authoritative(t, s)
		if auth == nil {
			return "the authoritative record is gone"
		}
		if !conditionIs(auth, "Ready", metav1.ConditionTrue) || !conditionIs(auth, "Served", metav1.ConditionTrue) {
			return fmt.Sprintf("the authoritative record is not Ready and Served: %v", auth.Status.Conditions)
		}
		return ""
	})
	// Kuadrant's secondary writes ReadyForDelegation, then Ready on its next pass (5 s later): a
	// primary may have published the record in between.
	eventuallyT(t, func() string {
		rec := f.get(t, f.secondary, onSecondary)
		if !conditionIs(rec, "ReadyForDelegation", metav1.ConditionTrue) || !conditionIs(rec, "Ready", metav1.ConditionTrue) {
			return fmt.Sprintf("the secondary's record: %v, want ReadyForDelegation and Ready True", rec.Status.Conditions)
		}
		if !slices.Contains(rec.Finalizers, v1alpha1.RecordFinalizer) {
			return fmt.Sprintf("the secondary's record has finalizers %v, want %s", rec.Finalizers, v1alpha1.RecordFinalizer)
		}
		return ""
	})
	eventuallyT(t, func() string {
		rec := f.get(t, f.primary, onPrimary)
		if rec.Status.ZoneID != auth.Name {
			return fmt.Sprintf("the primary's own record names zone %q, want the authoritative record %q", rec.Status.ZoneID, auth.Name)
		}
		return ""
	})
}

// secondaryEdits: a secondary's record changing a target, adding and removing a name, and then
// going, is seen in the answers each time.
func secondaryEdits(t *testing.T, f *fleet, s *space) {
	cname := "www." + s.host
	f.create(t, f.primary, delegating(s, "on-primary", a(s.host, "10.2.0.1")))
	onSecondary := f.create(t, f.secondary, delegating(s, "on-secondary", a(s.host, "10.2.0.2"),
		&v1alpha1.Endpoint{DNSName: cname, Targets: v1alpha1.Targets{s.host}, RecordType: "CNAME", RecordTTL: 60}))
	f.waitAnswers(t, s.host, dns.TypeA, "10.2.0.1", "10.2.0.2")
	f.waitAnswers(t, cname, dns.TypeCNAME, s.host+".")

	f.update(t, f.secondary, onSecondary, func(r *v1alpha1.DNSRecord) {
		r.Spec.Endpoints = []*v1alpha1.Endpoint{a(s.host, "10.2.0.3")}
	})
	f.waitAnswers(t, s.host, dns.TypeA, "10.2.0.1", "10.2.0.3")
	f.waitAnswers(t, cname, dns.TypeCNAME)

	f.delete(t, f.secondary, onSecondary)
	f.waitAnswers(t, s.host, dns.TypeA, "10.2.0.1")
	f.waitGone(t, f.secondary, onSecondary)
}

// delegateFalseStaysOut: a record on the secondary without delegate (and so with no provider
// there) is not read by the primary: neither its targets nor an entry of the primary's appear.
func delegateFalseStaysOut(t *testing.T, f *fleet, s *space) {
	notDelegating := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Name: "not-delegating", Namespace: s.ns},
		Spec:       v1alpha1.DNSRecordSpec{RootHost: s.host, Endpoints: []*v1alpha1.Endpoint{a(s.host, "10.3.0.9")}},
	}
	notDelegating = f.create(t, f.secondary, notDelegating)
	// The secondary's operator has seen it (it says why it publishes nothing) before the
	// delegating records exist, so the primary's pass over them comes after it too.
	eventuallyT(t, func() string {
		if rec := f.get(t, f.secondary, notDelegating); meta.FindStatusCondition(rec.Status.Conditions, "Ready") == nil {
			return "the secondary's operator has not written the non-delegating record's Ready condition"
		}
		return ""
	})
	f.create(t, f.primary, delegating(s, "on-primary", a(s.host, "10.3.0.1")))
	onSecondary := f.create(t, f.secondary, delegating(s, "on-secondary", a(s.host, "10.3.0.2")))
	f.waitAnswers(t, s.host, dns.TypeA, "10.3.0.1", "10.3.0.2")
	f.waitRemoteStatus(t, onSecondary, func(v1alpha1.DNSRecordStatus) string { return "" })

	rec := f.get(t, f.secondary, notDelegating)
	if len(rec.Status.RemoteRecordStatuses) > 0 {
		t.Errorf("the non-delegating record has remoteRecordStatuses %v: a primary read it", keys(rec.Status.RemoteRecordStatuses))
	}
	if auth := f.authoritative(t, s); auth != nil && slices.Contains(targets(auth, s.host, "A"), "10.3.0.9") {
		t.Errorf("the authoritative record holds the non-delegating record's target 10.3.0.9")
	}
	f.waitAnswers(t, s.host, dns.TypeA, "10.3.0.1", "10.3.0.2")
}

// lastContributor: the authoritative record stays while any delegating record of its root host
// is left, on either cluster, and goes with the last.
func lastContributor(t *testing.T, f *fleet, s *space) {
	onPrimary := f.create(t, f.primary, delegating(s, "on-primary", a(s.host, "10.4.0.1")))
	onSecondary := f.create(t, f.secondary, delegating(s, "on-secondary", a(s.host, "10.4.0.2")))
	f.waitAnswers(t, s.host, dns.TypeA, "10.4.0.1", "10.4.0.2")

	f.delete(t, f.primary, onPrimary)
	f.waitAnswers(t, s.host, dns.TypeA, "10.4.0.2")
	f.waitGone(t, f.primary, onPrimary)
	if f.authoritative(t, s) == nil {
		t.Fatalf("the authoritative record went while the secondary's record is left")
	}

	f.delete(t, f.secondary, onSecondary)
	f.waitGone(t, f.secondary, onSecondary)
	eventuallyT(t, func() string {
		if auth := f.authoritative(t, s); auth != nil {
			return fmt.Sprintf("the authoritative record %s is still on the primary after its last contributor went", auth.Name)
		}
		return ""
	})
	f.waitAnswers(t, s.host, dns.TypeA)
}

// finalizerWaits: a deleted delegating record on the secondary keeps its finalizer while its
// primary is down, and goes once the primary is back and has withdrawn its targets.
func finalizerWaits(t *testing.T, f *fleet, s *space) {
	onSecondary := f.create(t, f.secondary, delegating(s, "on-secondary", a(s.host, "10.5.0.2")))
	f.waitAnswers(t, s.host, dns.TypeA, "10.5.0.2")
	f.waitRemoteStatus(t, onSecondary, func(v1alpha1.DNSRecordStatus) string { return "" })

	f.primary.proc.stop()
	f.delete(t, f.secondary, onSecondary)
	// The secondary's operator passes over the deleted record at once and again on its requeue
	// (Kuadrant's after 5 s); 20 s covers several passes.
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		rec := f.get(t, f.secondary, onSecondary)
		if rec == nil || !slices.Contains(rec.Finalizers, v1alpha1.RecordFinalizer) {
			t.Fatalf("the secondary's record lost its finalizer while its primary was down (record: %v)", rec != nil)
		}
	}
	if f.dnsProc != nil {
		// The primary's DNS server is its own process: it keeps answering what was published.
		f.waitAnswers(t, s.host, dns.TypeA, "10.5.0.2")
	}

	f.primary.proc.start(t)
	f.waitGone(t, f.secondary, onSecondary)
	f.waitAnswers(t, s.host, dns.TypeA)
}

// --- helpers -------------------------------------------------------------------------------------

func a(host string, ips ...string) *v1alpha1.Endpoint {
	return &v1alpha1.Endpoint{DNSName: host, Targets: ips, RecordType: "A", RecordTTL: 60}
}

func delegating(s *space, name string, eps ...*v1alpha1.Endpoint) *v1alpha1.DNSRecord {
	return &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
		Spec:       v1alpha1.DNSRecordSpec{RootHost: s.host, Endpoints: eps, Delegate: true},
	}
}

func (f *fleet) create(t *testing.T, cl *cluster, rec *v1alpha1.DNSRecord) *v1alpha1.DNSRecord {
	t.Helper()
	if err := cl.c.Create(context.Background(), rec); err != nil {
		t.Fatalf("%s: creating DNSRecord %s/%s: %v", cl.name, rec.Namespace, rec.Name, err)
	}
	return rec
}

// get reads rec again from cl; nil when it is gone.
func (f *fleet) get(t *testing.T, cl *cluster, rec *v1alpha1.DNSRecord) *v1alpha1.DNSRecord {
	t.Helper()
	got := &v1alpha1.DNSRecord{}
	if err := cl.c.Get(context.Background(), client.ObjectKeyFromObject(rec), got); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatal(err)
	}
	return got
}

func (f *fleet) update(t *testing.T, cl *cluster, rec *v1alpha1.DNSRecord, change func(*v1alpha1.DNSRecord)) {
	t.Helper()
	eventuallyT(t, func() string {
		got := f.get(t, cl, rec)
		if got == nil {
			t.Fatalf("%s: DNSRecord %s/%s is gone", cl.name, rec.Namespace, rec.Name)
		}
		change(got)
		if err := cl.c.Update(context.Background(), got); err != nil {
			return fmt.Sprintf("%s: updating DNSRecord %s/%s: %v", cl.name, rec.Namespace, rec.Name, err)
		}
		return ""
	})
}

func (f *fleet) delete(t *testing.T, cl *cluster, rec *v1alpha1.DNSRecord) {
	t.Helper()
	if err := cl.c.Delete(context.Background(), rec); err != nil {
		t.Fatalf("%s: deleting DNSRecord %s/%s: %v", cl.name, rec.Namespace, rec.Name, err)
	}
}

func (f *fleet) waitGone(t *testing.T, cl *cluster, rec *v1alpha1.DNSRecord) {
	t.Helper()
	eventuallyT(t, func() string {
		if got := f.get(t, cl, rec); got != nil {
			return fmt.Sprintf("%s: the deleted DNSRecord %s/%s is still there (finalizers %v, Ready %v)",
				cl.name, rec.Namespace, rec.Name, got.Finalizers, meta.FindStatusCondition(got.Status.Conditions, "Ready"))
		}
		return ""
	})
}

// waitRemoteStatus waits until rec, on the secondary, holds an entry of the primary in
// status.remoteRecordStatuses that check accepts.
func (f *fleet) waitRemoteStatus(t *testing.T, rec *v1alpha1.DNSRecord, check func(v1alpha1.DNSRecordStatus) string) {
	t.Helper()
	eventuallyT(t, func() string {
		got := f.get(t, f.secondary, rec)
		if got == nil {
			return "the secondary's record is gone"
		}
		st, ok := got.Status.RemoteRecordStatus(f.primary.id)
		if !ok {
			return fmt.Sprintf("the secondary's record has no entry of the primary %s in status.remoteRecordStatuses (it has %v)", f.primary.id, keys(got.Status.RemoteRecordStatuses))
		}
		return check(st)
	})
}

// authoritative is the primary's authoritative record of s's root host, nil when there is none;
// it fails t when there are several.
func (f *fleet) authoritative(t *testing.T, s *space) *v1alpha1.DNSRecord {
	t.Helper()
	list := &v1alpha1.DNSRecordList{}
	if err := f.primary.c.List(context.Background(), list, client.InNamespace(s.ns),
		client.MatchingLabels{v1alpha1.AuthoritativeRecordLabel: "true"}); err != nil {
		t.Fatal(err)
	}
	var found []*v1alpha1.DNSRecord
	for i := range list.Items {
		if list.Items[i].Spec.RootHost == s.host {
			found = append(found, &list.Items[i])
		}
	}
	if len(found) > 1 {
		t.Fatalf("%d authoritative records of %s on the primary, want one", len(found), s.host)
	}
	if len(found) == 0 {
		return nil
	}
	return found[0]
}

// targets are the sorted targets of rec's endpoints of name and type.
func targets(rec *v1alpha1.DNSRecord, name, typ string) []string {
	var out []string
	for _, ep := range rec.Spec.Endpoints {
		if ep.DNSName == name && ep.RecordType == typ {
			out = append(out, ep.Targets...)
		}
	}
	slices.Sort(out)
	return out
}

func conditionIs(rec *v1alpha1.DNSRecord, typ string, status metav1.ConditionStatus) bool {
	c := meta.FindStatusCondition(rec.Status.Conditions, typ)
	return c != nil && c.Status == status
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func eventuallyT(t *testing.T, cond func() string) {
	t.Helper()
	eventually(t, wait, cond)
}

// answers asks the primary's DNS server for name and qtype and returns the answer's values of
// that type, sorted (none for NXDOMAIN, NODATA or a refused zone).
func (f *fleet) answers(name string, qtype uint16) ([]string, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	c := &dns.Client{Timeout: 2 * time.Second}
	r, _, err := c.Exchange(m, f.dns)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, rr := range r.Answer {
		if rr.Header().Rrtype != qtype {
			continue
		}
		switch v := rr.(type) {
		case *dns.A:
			out = append(out, v.A.String())
		case *dns.CNAME:
			out = append(out, v.Target)
		}
	}
	slices.Sort(out)
	return out, nil
}

// waitAnswers waits until the primary's DNS server answers name and qtype with exactly want.
func (f *fleet) waitAnswers(t *testing.T, name string, qtype uint16, want ...string) {
	t.Helper()
	slices.Sort(want)
	eventuallyT(t, func() string {
		got, err := f.answers(name, qtype)
		if err != nil {
			return fmt.Sprintf("asking %s for %s %s: %v", f.dns, name, dns.TypeToString[qtype], err)
		}
		if !slices.Equal(got, want) {
			return fmt.Sprintf("%s answers %s %s with %v, want %v", f.dns, name, dns.TypeToString[qtype], got, want)
		}
		return ""
	})
}

// describe is what a failed scenario leaves, to read beside the operators' logs.
func (f *fleet) describe(s *space) string {
	var b strings.Builder
	for _, cl := range []*cluster{f.primary, f.secondary} {
		list := &v1alpha1.DNSRecordList{}
		if err := cl.c.List(context.Background(), list, client.InNamespace(s.ns)); err != nil {
			fmt.Fprintf(&b, "%s: %v\n", cl.name, err)
			continue
		}
		for _, r := range list.Items {
			r.ManagedFields = nil
			y, _ := json.MarshalIndent(r, "", "  ")
			fmt.Fprintf(&b, "--- %s (%s): DNSRecord %s/%s\n%s\n", cl.name, cl.op, r.Namespace, r.Name, y)
		}
	}
	return b.String()
}
