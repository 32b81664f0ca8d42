package dnspolicy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// record is a DNSRecord at generation 2 whose Ready condition (if status is not empty) describes
// generation readyGen.
func record(name string, status metav1.ConditionStatus, reason, message string, readyGen int64) *v1alpha1.DNSRecord {
	rec := &v1alpha1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 2}, Spec: v1alpha1.DNSRecordSpec{RootHost: name + ".example.com"}}
	if status != "" {
		rec.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionTypeReady, Status: status, Reason: reason, Message: message, ObservedGeneration: readyGen}}
	}
	return rec
}

func published(rec *v1alpha1.DNSRecord) *listenerPlan {
	return &listenerPlan{listener: rec.Name, record: rec, current: rec}
}

func TestEnforced(t *testing.T) {
	ready := func(n string) *v1alpha1.DNSRecord {
		return record(n, metav1.ConditionTrue, "ProviderSuccess", "Provider ensured the dns record", 2)
	}
	cases := []struct {
		name      string
		listeners []*listenerPlan
		status    metav1.ConditionStatus
		reason    string
		message   string
	}{{
		name:      "every record ready",
		listeners: []*listenerPlan{published(ready("a")), published(ready("b")), {listener: "c", skipped: "listener c has no hostname"}},
		status:    metav1.ConditionTrue, reason: "Enforced",
		message: "DNSPolicy has been successfully enforced: listener c has no hostname",
	}, {
		name:      "nothing to publish says why",
		listeners: []*listenerPlan{{listener: "c", skipped: "listener c has no hostname"}},
		status:    metav1.ConditionTrue, reason: "Enforced",
		message: "DNSPolicy has been successfully enforced : no DNSRecords created based on policy and gateway configuration: listener c has no hostname",
	}, {
		name: "one record not ready names it, its reason and the fix",
		listeners: []*listenerPlan{published(ready("a")), published(record("b", metav1.ConditionFalse, "ProviderSecretMissing",
			"provider secret missing: secret ns/nope not found", 2))},
		status: metav1.ConditionTrue, reason: "Enforced",
		message: "DNSPolicy has been partially enforced. Not ready DNSRecords are: b (b: ProviderSecretMissing: provider secret missing: secret ns/nope not found; " +
			"to fix: create the provider Secret in this namespace, or name an existing one in spec.providerRefs)",
	}, {
		name:      "Ready for an older generation is not ready",
		listeners: []*listenerPlan{published(ready("a")), published(record("b", metav1.ConditionTrue, "ProviderSuccess", "", 1))},
		status:    metav1.ConditionTrue, reason: "Enforced",
		message: "DNSPolicy has been partially enforced. Not ready DNSRecords are: b (b: awaiting the DNSRecord controller)",
	}, {
		name:      "no record ready",
		listeners: []*listenerPlan{published(record("a", "", "", "", 0))},
		status:    metav1.ConditionFalse, reason: "Unknown",
		message: "DNSPolicy has encountered some issues: policy is not enforced on any DNSRecord: not a single DNSRecord is ready: a: awaiting the DNSRecord controller",
	}, {
		name:      "a listener that cannot be published",
		listeners: []*listenerPlan{published(ready("a")), {listener: "b", problem: "listener b: waiting for the previous DNSRecord gw-b to leave the zone"}},
		status:    metav1.ConditionTrue, reason: "Enforced",
		message: "DNSPolicy has been partially enforced: listener b: waiting for the previous DNSRecord gw-b to leave the zone",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, reason, message := enforced(tc.listeners)
			if status != tc.status || reason != tc.reason || message != tc.message {
				t.Errorf("got %s %s %q\nwant %s %s %q", status, reason, message, tc.status, tc.reason, tc.message)
			}
		})
	}
}

func TestHealthy(t *testing.T) {
	judged := func(name string, s metav1.ConditionStatus) *v1alpha1.DNSRecord {
		rec := record(name, metav1.ConditionTrue, "ProviderSuccess", "", 2)
		rec.Status.Conditions = append(rec.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionTypeHealthy, Status: s, Reason: "x", ObservedGeneration: 2})
		return rec
	}
	cases := []struct {
		records []*v1alpha1.DNSRecord
		status  metav1.ConditionStatus
		message string
	}{
		{nil, metav1.ConditionTrue, "No sub-resources present"},
		{[]*v1alpha1.DNSRecord{judged("a", metav1.ConditionTrue)}, metav1.ConditionTrue, "All sub-resources are healthy"},
		{[]*v1alpha1.DNSRecord{judged("a", metav1.ConditionTrue), record("b", metav1.ConditionTrue, "", "", 2)}, metav1.ConditionUnknown,
			"health checks are not yet evaluated: no health result has been reported for DNSRecords b"},
		{[]*v1alpha1.DNSRecord{judged("a", metav1.ConditionFalse), record("b", metav1.ConditionTrue, "", "", 2)}, metav1.ConditionFalse,
			"DNSPolicy has encountered some issues: not all sub-resources of policy are passing the policy defined health check. Not healthy DNSRecords are: a"},
	}
	for _, tc := range cases {
		if status, _, message := healthy(tc.records); status != tc.status || message != tc.message {
			t.Errorf("got %s %q, want %s %q", status, message, tc.status, tc.message)
		}
	}
}

func TestPolicyStatus(t *testing.T) {
	p := policy("g", time.Hour, "")
	p.Spec.HealthCheck = &v1alpha1.HealthCheckSpec{Path: "/healthz"}
	failing := record("b", metav1.ConditionFalse, "ProviderError", "boom", 2)
	v := &verdict{policy: p, reason: ReasonAccepted, message: msgAccepted, listeners: []*listenerPlan{
		published(record("a", metav1.ConditionTrue, "ProviderSuccess", "", 2)), published(failing),
	}}
	st := policyStatus(v, dnsv1.DNSPolicyStatus{})
	if st.ObservedGeneration != 2 || st.TotalRecords != 2 {
		t.Errorf("observedGeneration %d totalRecords %d, want 2 and 2", st.ObservedGeneration, st.TotalRecords)
	}
	if got := st.RecordConditions; len(got) != 1 || len(got["b.example.com"]) != 1 || got["b.example.com"][0].Message != "boom" {
		t.Errorf("recordConditions %v, want only b.example.com's failing Ready", got)
	}
	for _, typ := range []string{ConditionAccepted, ConditionEnforced, ConditionSubResourcesHealthy} {
		c := meta.FindStatusCondition(st.Conditions, typ)
		if c == nil || c.Reason == "" || c.ObservedGeneration != 2 {
			t.Errorf("%s: %+v, want a reason and observedGeneration 2", typ, c)
		}
	}

	// Not accepted: no Enforced, no health, no record counts, as in Kuadrant.
	v.reason, v.message = ReasonConflicted, "conflicted"
	st = policyStatus(v, st)
	if len(st.Conditions) != 1 || st.Conditions[0].Type != ConditionAccepted || st.RecordConditions != nil || st.TotalRecords != 0 {
		t.Errorf("not accepted: %+v", st)
	}
}

func TestGatewayStatus(t *testing.T) {
	gw := gateway("api", "web", "other")
	gw.Status.Listeners = gw.Status.Listeners[:2] // "other" is not reported by the implementation yet
	meta.SetStatusCondition(&gw.Status.Listeners[1].Conditions, metav1.Condition{Type: ConditionAffected, Status: metav1.ConditionTrue, Reason: "Accepted", Message: "stale"})
	g, l := policy("g", 2*time.Hour, ""), policy("l", time.Hour, "api")
	verdicts := []*verdict{
		{policy: g, reason: ReasonAccepted, listeners: []*listenerPlan{{listener: "other"}}},
		{policy: l, reason: ReasonAccepted, listeners: []*listenerPlan{{listener: "api"}}},
	}
	st := gatewayStatus(gw, verdicts)
	if c := meta.FindStatusCondition(st.Conditions, ConditionAffected); c == nil || c.Message != "Object affected by DNSPolicy [ns/g ns/l]" || c.ObservedGeneration != 3 {
		t.Errorf("gateway condition %+v", c)
	}
	if c := meta.FindStatusCondition(st.Listeners[0].Conditions, ConditionAffected); c == nil || c.Message != "Object affected by DNSPolicy [ns/l]" {
		t.Errorf("listener api condition %+v", c)
	}
	if c := meta.FindStatusCondition(st.Listeners[1].Conditions, ConditionAffected); c != nil {
		t.Errorf("listener web is published by nobody, yet has %+v", c)
	}
	if len(st.Listeners) != 2 {
		t.Errorf("a status entry was added for a listener the implementation does not report: %+v", st.Listeners)
	}

	verdicts[0].reason, verdicts[1].reason = ReasonInvalid, ReasonConflicted
	st = gatewayStatus(gw, verdicts)
	if meta.FindStatusCondition(st.Conditions, ConditionAffected) != nil || meta.FindStatusCondition(st.Listeners[0].Conditions, ConditionAffected) != nil {
		t.Errorf("no accepted policy, yet affected conditions remain: %+v", st)
	}
	if !strings.HasPrefix(gw.Status.Listeners[1].Conditions[0].Message, "stale") {
		t.Error("gatewayStatus modified its input")
	}
}

// A record whose traffic flows but which lost a shared wish (another owner's default geo is
// published) keeps the policy enforced; the conflict shows in the message and in recordConditions,
// while a record without conflicts (Conflicted=False) shows nowhere.
func TestConflictedRecordKeepsPolicyEnforced(t *testing.T) {
	withConflict := func(name string, status metav1.ConditionStatus, reason, message string) *v1alpha1.DNSRecord {
		rec := record(name, metav1.ConditionTrue, "ProviderSuccess", "Provider ensured the dns record", 2)
		rec.Status.Conditions = append(rec.Status.Conditions, metav1.Condition{
			Type: v1alpha1.ConditionTypeConflicted, Status: status, Reason: reason, Message: message, ObservedGeneration: 2,
		})
		return rec
	}
	lost := "Another owner's value is published: klb.a.example.com CNAME set default: targets wants us.klb.a.example.com, published ie.klb.a.example.com from owner owner-a"
	v := &verdict{policy: policy("g", time.Hour, ""), reason: ReasonAccepted, message: msgAccepted, listeners: []*listenerPlan{
		published(withConflict("a", metav1.ConditionTrue, v1alpha1.ReasonConflicted, lost)),
		published(withConflict("b", metav1.ConditionFalse, v1alpha1.ReasonNoConflict, "Every value this owner wants is published")),
	}}
	st := policyStatus(v, dnsv1.DNSPolicyStatus{})
	c := meta.FindStatusCondition(st.Conditions, ConditionEnforced)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonEnforced {
		t.Fatalf("Enforced %+v, want True: every record is Ready", c)
	}
	if want := "DNSPolicy has been successfully enforced: a: Conflicted: " + lost; c.Message != want {
		t.Errorf("Enforced message\n got %q\nwant %q", c.Message, want)
	}
	got := st.RecordConditions
	if len(got) != 1 || len(got["a.example.com"]) != 1 || got["a.example.com"][0].Type != v1alpha1.ConditionTypeConflicted {
		t.Errorf("recordConditions %v, want only a.example.com's Conflicted", got)
	}
	// The policy's conditions come in one order whatever was there before.
	prev := dnsv1.DNSPolicyStatus{Conditions: []metav1.Condition{{Type: ConditionEnforced, Status: metav1.ConditionFalse, Reason: "Unknown"}}}
	st = policyStatus(v, prev)
	if st.Conditions[0].Type != ConditionAccepted || st.Conditions[1].Type != ConditionEnforced {
		t.Errorf("condition order %s, %s; want Accepted, Enforced", st.Conditions[0].Type, st.Conditions[1].Type)
	}
}

// A load-balanced record published as a round robin of its leaves (its backend answers every client
// alike) keeps the policy enforced, and the policy says so: in Enforced's message and in
// recordConditions.
func TestRoundRobinRecordIsEnforcedAndSaysSo(t *testing.T) {
	rec := record("a", metav1.ConditionTrue, "ProviderSuccess", "Provider ensured the dns record", 2)
	msg := fmt.Sprintf(v1alpha1.MessageRoundRobin, "a.example.com")
	rec.Status.Conditions = append(rec.Status.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionTypeProviderAccepted, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonRoundRobin, Message: msg, ObservedGeneration: 2,
	})
	v := &verdict{policy: policy("g", time.Hour, ""), reason: ReasonAccepted, message: msgAccepted, listeners: []*listenerPlan{published(rec)}}
	st := policyStatus(v, dnsv1.DNSPolicyStatus{})
	c := meta.FindStatusCondition(st.Conditions, ConditionEnforced)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonEnforced {
		t.Fatalf("Enforced %+v, want True: the record is Ready", c)
	}
	if want := "DNSPolicy has been successfully enforced: a: RoundRobin: " + msg; c.Message != want {
		t.Errorf("Enforced message\n got %q\nwant %q", c.Message, want)
	}
	if got := st.RecordConditions["a.example.com"]; len(got) != 1 || got[0].Reason != v1alpha1.ReasonRoundRobin {
		t.Errorf("recordConditions %v, want a.example.com's ProviderAccepted RoundRobin", st.RecordConditions)
	}
}
