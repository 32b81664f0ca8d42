//go:build mixedfleet

package mixedfleet

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

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
	// A Kuadrant primary's DNS server is a process of its own: it keeps answering what was
	// published.
	f.waitAnswers(t, s.host, dns.TypeA, "10.5.0.2")

	f.primary.proc.start(t)
	f.waitGone(t, f.secondary, onSecondary)
	f.waitAnswers(t, s.host, dns.TypeA)
}

// identicalAuthoritative: with a delegating record on each primary and on the secondary, both
// primaries, Kuadrant's and ours, build an authoritative record of the same endpoints (ownership
// TXTs included), answer alike, and each writes its entry into the secondary's record.
func identicalAuthoritative(t *testing.T, f *fleet, s *space) {
	for i, p := range f.primaries {
		f.create(t, p, delegating(s, "on-"+p.name, a(s.host, fmt.Sprintf("10.6.0.%d", i+1))))
	}
	onSecondary := f.create(t, f.secondary, delegating(s, "on-secondary", a(s.host, "10.6.0.9")))
	f.waitAnswers(t, s.host, dns.TypeA, "10.6.0.1", "10.6.0.2", "10.6.0.9")

	eventuallyT(t, func() string {
		var want []string
		for i, p := range f.primaries {
			auth := authoritativeOn(t, p, s)
			if auth == nil {
				return fmt.Sprintf("no authoritative record of %s on %s", s.host, p.name)
			}
			got := endpointLines(auth)
			if i == 0 {
				want = got
				continue
			}
			if !slices.Equal(got, want) {
				return fmt.Sprintf("the authoritative records differ:\n%s (%s):\n  %s\n%s (%s):\n  %s",
					f.primary.name, f.primary.op, strings.Join(want, "\n  "), p.name, p.op, strings.Join(got, "\n  "))
			}
		}
		return ""
	})
	for _, p := range f.primaries {
		f.waitRemoteStatusOf(t, p, onSecondary, func(st v1alpha1.DNSRecordStatus) string {
			if c := meta.FindStatusCondition(st.Conditions, "Ready"); c == nil || c.Status != metav1.ConditionTrue {
				return fmt.Sprintf("%s's entry is not Ready: %v", p.name, st.Conditions)
			}
			return ""
		})
	}
}

// finalizerWaitsForEvery: a deleted delegating record on the secondary keeps its finalizer while
// one of its primaries is down, though the other has withdrawn it, and goes once that one is back.
func finalizerWaitsForEvery(t *testing.T, f *fleet, s *space) {
	onSecondary := f.create(t, f.secondary, delegating(s, "on-secondary", a(s.host, "10.7.0.9")))
	f.waitAnswers(t, s.host, dns.TypeA, "10.7.0.9")
	for _, p := range f.primaries {
		f.waitRemoteStatusOf(t, p, onSecondary, func(v1alpha1.DNSRecordStatus) string { return "" })
	}

	down := f.primaries[len(f.primaries)-1]
	down.proc.stop()
	f.delete(t, f.secondary, onSecondary)
	// The primaries still up withdraw the name (a Kuadrant primary's separate DNS server too).
	f.waitAnswers(t, s.host, dns.TypeA)
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		rec := f.get(t, f.secondary, onSecondary)
		if rec == nil || !slices.Contains(rec.Finalizers, v1alpha1.RecordFinalizer) {
			t.Fatalf("the secondary's record lost its finalizer while %s was down (record: %v)", down.name, rec != nil)
		}
	}

	down.proc.start(t)
	f.waitGone(t, f.secondary, onSecondary)
	f.waitAnswers(t, s.host, dns.TypeA)
}
