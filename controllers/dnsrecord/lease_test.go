package dnsrecord

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord/publish"
	"github.com/dnspolicy/dnspolicy-controller/pkg/batch"
	"github.com/dnspolicy/dnspolicy-controller/pkg/conditions"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/pkg/plan"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The Leases condition says how this cluster's lease and the other owners' stand, only where the
// record shares a name with another cluster; a withdrawal and a re-publication raise an event each,
// and ages alone changing is bookkeeping, not a status write.
func TestReportLeases(t *testing.T) {
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{Recorder: rec}
	owned := v1alpha1.NewEndpoint("app.example.com", v1alpha1.RecordTypeA, 60, "10.0.0.1")
	ourTXT, err := registry.NewTXT("me", owned)
	if err != nil {
		t.Fatal(err)
	}
	theirTXT, err := registry.NewWishTXT("them", "k1", owned)
	if err != nil {
		t.Fatal(err)
	}
	live := lease.Verdict{Lease: lease.Lease{Holder: "cluster-2", Duration: 75 * time.Second}, Age: 12 * time.Second}
	dead := lease.Verdict{Lease: lease.Lease{Holder: "cluster-2", Duration: 75 * time.Second}, Age: 90 * time.Second, Expired: true}
	renewed := publish.Renewal{Needed: true, At: time.Now().Add(-5 * time.Second)}
	for _, tc := range []struct {
		name     string
		out      publish.Outcome
		previous []*v1alpha1.Endpoint
		want     string // condition as "<status> <reason>: <message prefix>", "" for none
		contains string
		event    string
	}{
		{name: "alone", out: publish.Outcome{}, want: ""},
		{name: "sharing", out: publish.Outcome{Renewal: renewed, Leases: map[string]lease.Verdict{"them": live}},
			want: "True LeaseRenewed: this cluster's lease in zone example.com renewed", contains: "them (lease " + lease.Key("cluster-2") + ") unchanged for 12s of 1m15s"},
		{name: "withdrew", out: publish.Outcome{Renewal: renewed, Wrote: true, Leases: map[string]lease.Verdict{"them": dead},
			Withdrawn: []string{"them"}, Written: &batch.Changes{Delete: []*v1alpha1.Endpoint{theirTXT}}},
			want: "True LeaseRenewed: this cluster's lease", contains: "them (lease " + lease.Key("cluster-2") + ") expired, unchanged for 1m30s", event: "Normal OwnerWithdrawn"},
		{name: "renewal fails", out: publish.Outcome{Renewal: publish.Renewal{Needed: true, Err: errors.New("AccessDenied")}},
			want: "False LeaseNotRenewed: this cluster's lease in zone example.com cannot be renewed: AccessDenied"},
		{name: "published again", previous: []*v1alpha1.Endpoint{owned},
			out:  publish.Outcome{Renewal: renewed, Wrote: true, Written: &batch.Changes{Create: []*v1alpha1.Endpoint{owned, ourTXT}}},
			want: "True Republished: records this owner had published were gone from zone example.com", event: "Warning Republished"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &scope{record: &v1alpha1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
				Status: v1alpha1.DNSRecordStatus{OwnerID: "me"}}, zone: providers.Zone{DNSName: "example.com"}}
			if tc.out.Plan == nil {
				tc.out.Plan = &plan.Result{Changes: &batch.Changes{}}
			}
			r.reportLeases(s, tc.previous, tc.out)
			c := conditions.Get(s.record.Status.Conditions, v1alpha1.ConditionTypeLeases)
			switch {
			case tc.want == "" && c != nil:
				t.Errorf("Leases condition %+v on a record that shares no name with another cluster", c)
			case tc.want != "" && c == nil:
				t.Errorf("no Leases condition, want %q", tc.want)
			case c != nil:
				got := string(c.Status) + " " + c.Reason + ": " + c.Message
				if !strings.HasPrefix(got, tc.want) || !strings.Contains(got, tc.contains) {
					t.Errorf("Leases %q, want %q ... %q", got, tc.want, tc.contains)
				}
			}
			select {
			case e := <-rec.Events:
				if tc.event == "" || !strings.HasPrefix(e, tc.event) {
					t.Errorf("event %q, want %q", e, tc.event)
				}
			default:
				if tc.event != "" {
					t.Errorf("no event, want %q", tc.event)
				}
			}
		})
	}

	// Only the ages moved: the status compares equal, so a quiet pass writes nothing.
	s := &scope{record: &v1alpha1.DNSRecord{}, zone: providers.Zone{DNSName: "example.com"}}
	var before v1alpha1.DNSRecordStatus
	for i, age := range []time.Duration{12 * time.Second, 42 * time.Second} {
		if i == 1 {
			before = *s.record.Status.DeepCopy()
		}
		v := live
		v.Age = age
		r.reportLeases(s, nil, publish.Outcome{Plan: &plan.Result{Changes: &batch.Changes{}}, Renewal: renewed, Leases: map[string]lease.Verdict{"them": v}})
	}
	if c := conditions.Get(s.record.Status.Conditions, v1alpha1.ConditionTypeLeases); !strings.Contains(c.Message, "42s") {
		t.Fatalf("the second pass did not report the new age: %s", c.Message)
	}
	if !equalStatus(before, s.record.Status) {
		t.Error("a pass where only lease ages changed would write the status")
	}
}

// The counters alerts take the increase of exist at 0 before their first event: every conflict
// field from the start, a zone's withdrawals once the zone is shared, so the first conflict or
// withdrawal is an increase (a series born at 1 shows none).
func TestCountersStartAtZero(t *testing.T) {
	for _, f := range []string{plan.FieldTargets, plan.FieldTTL, plan.FieldType, plan.FieldProviderSpecific, plan.FieldOwnership} {
		if !hasSeries(t, "dnspolicy_dnsrecord_conflicts_total", "field", f) {
			t.Errorf("no conflicts series for field %s before any conflict", f)
		}
	}
	const zone = "shared-zero.example.com"
	r := &Reconciler{Recorder: events.NewFakeRecorder(10)}
	s := &scope{record: &v1alpha1.DNSRecord{}, zone: providers.Zone{DNSName: zone}}
	r.reportLeases(s, nil, publish.Outcome{Plan: &plan.Result{Changes: &batch.Changes{}}})
	if hasSeries(t, "dnspolicy_lease_withdrawals_total", "zone", zone) {
		t.Error("a zone no other cluster shares has a withdrawals series")
	}
	r.reportLeases(s, nil, publish.Outcome{Plan: &plan.Result{Changes: &batch.Changes{}}, Renewal: publish.Renewal{Needed: true, At: time.Now()}})
	if !hasSeries(t, "dnspolicy_lease_withdrawals_total", "zone", zone) {
		t.Error("a shared zone has no withdrawals series before its first withdrawal")
	}
	if v := testutil.ToFloat64(ownersWithdrawn.WithLabelValues(zone)); v != 0 {
		t.Errorf("withdrawals = %v before any, want 0", v)
	}
}

// hasSeries says whether the registry holds a series of name with label = value.
func hasSeries(t *testing.T, name, label, value string) bool {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return true
				}
			}
		}
	}
	return false
}
