package conditions

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var order = Order{"Ready", "Conflicted", "Healthy"}

func TestTransitionTimeMovesOnlyOnFlip(t *testing.T) {
	var conds []metav1.Condition
	if !order.Set(&conds, 1, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "ProviderError", Message: "a"}) {
		t.Fatal("a new condition is a change")
	}
	// A time in the past, so a reset to now is visible.
	past := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	conds[0].LastTransitionTime = past

	// Same status, other reason, message and generation: a change, but no transition.
	if !order.Set(&conds, 2, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "DNSProviderError", Message: "b"}) {
		t.Error("a new reason and message are a change")
	}
	c := Get(conds, "Ready")
	if !c.LastTransitionTime.Equal(&past) {
		t.Errorf("transition time moved without a flip: %v, was %v", c.LastTransitionTime, past)
	}
	if c.Reason != "DNSProviderError" || c.Message != "b" || c.ObservedGeneration != 2 {
		t.Errorf("condition not updated: %+v", c)
	}

	// Setting the same thing again changes nothing.
	if order.Set(&conds, 2, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "DNSProviderError", Message: "b"}) {
		t.Error("setting an equal condition reported a change")
	}

	// A flip moves it.
	order.Set(&conds, 2, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "ProviderSuccess", Message: "ok"})
	if c := Get(conds, "Ready"); c.LastTransitionTime.Equal(&past) || !IsTrue(conds, "Ready") {
		t.Errorf("a flip must move the transition time: %+v", c)
	}
}

func TestStableOrder(t *testing.T) {
	var a, b []metav1.Condition
	set := func(conds *[]metav1.Condition, typ string) {
		order.Set(conds, 1, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "R"})
	}
	for _, typ := range []string{"Zeta", "Healthy", "Conflicted", "Alpha", "Ready"} {
		set(&a, typ)
	}
	for _, typ := range []string{"Ready", "Alpha", "Healthy", "Zeta", "Conflicted"} {
		set(&b, typ)
	}
	var got, other []string
	for i := range a {
		got = append(got, a[i].Type)
		other = append(other, b[i].Type)
	}
	want := "Ready Conflicted Healthy Alpha Zeta"
	if strings.Join(got, " ") != want || strings.Join(other, " ") != want {
		t.Errorf("order %v and %v, want %s whatever the order of setting", got, other, want)
	}
	if !order.Remove(&a, "Conflicted") || Get(a, "Conflicted") != nil || order.Remove(&a, "Conflicted") {
		t.Error("Remove removes once")
	}
}

func TestSetInPlaceKeepsOthersOrder(t *testing.T) {
	conds := []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "X"}, {Type: "Accepted", Status: metav1.ConditionTrue, Reason: "X"}}
	Set(&conds, 3, metav1.Condition{Type: "kuadrant.io/DNSPolicyAffected", Status: metav1.ConditionTrue, Reason: "Accepted"})
	if conds[0].Type != "Programmed" || conds[1].Type != "Accepted" || conds[2].ObservedGeneration != 3 {
		t.Errorf("Set must append without reordering: %+v", conds)
	}
}

func TestReasonRequired(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a condition without a reason must be refused")
		}
	}()
	var conds []metav1.Condition
	order.Set(&conds, 1, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue})
}

func TestStableMessage(t *testing.T) {
	cases := map[string]string{
		"AccessDenied: not authorized to change zone, RequestID: 5f2c-77aa":                                                                                                  "AccessDenied: not authorized to change zone",
		"operation error Route 53: ChangeResourceRecordSets, https response error StatusCode: 400, RequestID: 1b2c3d4e-aaaa-bbbb-cccc-123456789012, InvalidChangeBatch: bad": "operation error Route 53: ChangeResourceRecordSets, https response error StatusCode: 400, InvalidChangeBatch: bad",
		"throttled (x-ms-request-id: 0a1b) retry":                                                  "throttled retry",
		"X-Ms-Correlation-Request-Id: 11111111-2222-3333-4444-555555555555\nERROR CODE: Forbidden": "ERROR CODE: Forbidden",
		"failed at 2026-12-01T09:30:44.123Z:   timeout":                                            "failed at : timeout",
		"Date: Tue, 01 Dec 2026 09:30:44 GMT quota exceeded":                                       "Date: quota exceeded",
		// A stable ID says where to look and stays.
		"zone /subscriptions/11111111-2222-3333-4444-555555555555/resourceGroups/rg not found": "zone /subscriptions/11111111-2222-3333-4444-555555555555/resourceGroups/rg not found",
		"Provider ensured the dns record": "Provider ensured the dns record",
	}
	for in, want := range cases {
		if got := StableMessage(in); got != want {
			t.Errorf("StableMessage(%q)\n got %q\nwant %q", in, got, want)
		}
	}
	// The same failure with another request ID gives the same text.
	if StableMessage("denied, RequestID: aaaa") != StableMessage("denied, RequestID: bbbb") {
		t.Error("messages differing only by request ID must stabilize to the same text")
	}
	long := strings.Repeat("é", MaxMessageLength)
	if got := StableMessage(long); len(got) > MaxMessageLength || !strings.HasSuffix(got, "...") || !strings.HasPrefix(got, "é") {
		t.Errorf("long message: %d bytes", len(got))
	}
	if got := StableMessage(strings.Repeat("é", MaxMessageLength)); strings.ContainsRune(got, '\uFFFD') {
		t.Error("truncation cut a character")
	}
	var conds []metav1.Condition
	order.Set(&conds, 1, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "ProviderError", Message: "denied, RequestID: aaaa"})
	if order.Set(&conds, 1, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "ProviderError", Message: "denied, RequestID: bbbb"}) {
		t.Error("a new request ID alone must not change the condition")
	}
}

// Remove takes out one condition and leaves the others in their order: a Gateway's conditions are
// its implementation's as well as ours.
func TestRemoveKeepsTheOthersInTheirOrder(t *testing.T) {
	conds := []metav1.Condition{{Type: "Programmed", Reason: "R"}, {Type: "Affected", Reason: "R"}, {Type: "Accepted", Reason: "R"}}
	if !Remove(&conds, "Affected") || len(conds) != 2 || conds[0].Type != "Programmed" || conds[1].Type != "Accepted" {
		t.Fatalf("after Remove: %+v", conds)
	}
	if Remove(&conds, "Affected") {
		t.Fatal("removed a condition that was not there")
	}
}
