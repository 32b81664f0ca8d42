// Package conditions sets status conditions the way every controller of this project does, so a
// status write happens only when something a user would care about changed:
//
//   - every condition has a Reason (a condition without one is a programming error);
//   - the transition time moves only when the status flips, not when the reason or message does;
//   - observedGeneration says which spec the condition judged;
//   - messages are stabilized: request IDs, UUIDs and timestamps that a backend puts in its errors
//     are cut out, whitespace is collapsed and the length is bounded, so the same failure on the next
//     attempt writes the same text and does not trigger another reconcile;
//   - conditions are kept in a stable order (an Order), so two passes that agree write equal lists.
package conditions

import (
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxMessageLength is the API's limit on metav1.Condition.Message.
const MaxMessageLength = 32768

// Order lists condition types in the order a status holds them. Types it does not name follow, in
// alphabetical order.
type Order []string

// Set sets c (with c.ObservedGeneration = generation and a stabilized message) and sorts the list.
// It reports whether anything but the transition time changed.
func (o Order) Set(conds *[]metav1.Condition, generation int64, c metav1.Condition) bool {
	changed := Set(conds, generation, c)
	o.sort(*conds)
	return changed
}

// Remove removes the condition of type typ, reporting whether there was one.
func (o Order) Remove(conds *[]metav1.Condition, typ string) bool {
	return Remove(conds, typ)
}

func (o Order) sort(conds []metav1.Condition) {
	rank := func(typ string) int {
		if i := slices.Index(o, typ); i >= 0 {
			return i
		}
		return len(o)
	}
	slices.SortStableFunc(conds, func(a, b metav1.Condition) int {
		if ra, rb := rank(a.Type), rank(b.Type); ra != rb {
			return ra - rb
		}
		return strings.Compare(a.Type, b.Type)
	})
}

// Set sets c in place without reordering the list: for objects whose conditions other controllers
// write too (a Gateway's), where reordering theirs would start a write war. c.ObservedGeneration is
// set to generation and its message stabilized. It reports whether anything but the transition time
// changed. It panics when c has no Type or Reason: the API server would refuse the write anyway, and
// a condition without a reason tells a user nothing.
func Set(conds *[]metav1.Condition, generation int64, c metav1.Condition) bool {
	if c.Type == "" || c.Reason == "" {
		panic("conditions: a condition needs a type and a reason")
	}
	c.ObservedGeneration = generation
	c.Message = StableMessage(c.Message)
	// meta.SetStatusCondition keeps LastTransitionTime unless the status flips, and sets it to now
	// for a new condition.
	return meta.SetStatusCondition(conds, c)
}

// Remove removes the condition of type typ, keeping the others in their order, and reports whether
// there was one.
func Remove(conds *[]metav1.Condition, typ string) bool {
	return meta.RemoveStatusCondition(conds, typ)
}

// Get returns the condition of type typ, nil when there is none.
func Get(conds []metav1.Condition, typ string) *metav1.Condition {
	return meta.FindStatusCondition(conds, typ)
}

// IsTrue reports whether the condition of type typ is there and True.
func IsTrue(conds []metav1.Condition, typ string) bool {
	return meta.IsStatusConditionTrue(conds, typ)
}

var (
	// A per-request ID named as such, with its value: "RequestID: 5f2c-77aa", "request id 5f2c",
	// "x-amz-request-id=...", "X-Ms-Correlation-Request-Id: ...", "tracking id ...". IDs that stay
	// the same (a subscription in a zone ID) are kept: they tell the user where to look.
	requestID = regexp.MustCompile(`(?i)[,;(\[]?\s*\b(x-(amz|ms)-)?(correlation[ _-]?)?(request|tracking|trace|activity)[ _-]?id\b"?\s*[:=]?\s*"?[^\s,;)\]"]*"?[)\]]?`)
	timestamp = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?|\b(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} [A-Z]{3}\b`)
	spaces    = regexp.MustCompile(`\s+`)
)

// StableMessage returns msg without what changes from one attempt to the next (request IDs,
// timestamps), with whitespace collapsed and at most MaxMessageLength bytes.
func StableMessage(msg string) string {
	msg = requestID.ReplaceAllString(msg, "")
	msg = timestamp.ReplaceAllString(msg, "")
	msg = spaces.ReplaceAllString(msg, " ")
	msg = strings.TrimSpace(msg)
	msg = strings.TrimRight(msg, " ,:;")
	if len(msg) > MaxMessageLength {
		const more = "..."
		cut := MaxMessageLength - len(more)
		// Do not cut a UTF-8 sequence in half.
		for cut > 0 && msg[cut]&0xC0 == 0x80 {
			cut--
		}
		msg = msg[:cut] + more
	}
	return msg
}
