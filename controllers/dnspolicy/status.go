package dnspolicy

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnsv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/conditions"
)

const policyKind = "DNSPolicy"

// Condition types of DNSPolicy, and of the Gateway and its listeners.
const (
	ConditionAccepted            = string(gatewayapiv1.PolicyConditionAccepted)
	ConditionEnforced            = "Enforced"
	ConditionSubResourcesHealthy = "SubResourcesHealthy"
	// ConditionAffected is set on a Gateway and on each listener an accepted DNSPolicy publishes.
	ConditionAffected = "kuadrant.io/DNSPolicyAffected"
)

// Reasons, Kuadrant's (Gateway API's policy reasons plus Kuadrant's own), so tooling that reads
// them works unchanged.
const (
	ReasonAccepted          = string(gatewayapiv1.PolicyReasonAccepted)
	ReasonTargetNotFound    = string(gatewayapiv1.PolicyReasonTargetNotFound)
	ReasonConflicted        = string(gatewayapiv1.PolicyReasonConflicted)
	ReasonInvalid           = string(gatewayapiv1.PolicyReasonInvalid)
	ReasonMissingDependency = "MissingDependency"
	ReasonEnforced          = "Enforced"
	ReasonUnknown           = "Unknown"
	ReasonHealthy           = "SubResourcesHealthy"
)

// Messages. Where Kuadrant has one for the same case, it is Kuadrant's text, extended after it.
const (
	msgAccepted          = "DNSPolicy has been accepted"
	msgTargetNotFound    = "DNSPolicy target %s was not found"
	msgConflicted        = "DNSPolicy is conflicted by %s: both target %s and the oldest policy wins"
	msgInvalid           = "DNSPolicy is invalid: %v"
	msgMissingGatewayAPI = "[Gateway API] is not installed: the policy is evaluated as soon as its CRDs are installed, without a restart"
	msgEnforced          = "DNSPolicy has been successfully enforced"
	msgNoRecords         = "DNSPolicy has been successfully enforced : no DNSRecords created based on policy and gateway configuration"
	msgPartial           = "DNSPolicy has been partially enforced"
	msgNotReady          = ". Not ready DNSRecords are: "
	msgNoneReady         = "DNSPolicy has encountered some issues: policy is not enforced on any DNSRecord: not a single DNSRecord is ready"
	msgAffected          = "Object affected by DNSPolicy %s"
)

// policyConditions is the order of a DNSPolicy's conditions.
var policyConditions = conditions.Order{ConditionAccepted, ConditionEnforced, ConditionSubResourcesHealthy}

// fixes say what to do about a record's Ready reason, where the record's own message names the
// thing but not the remedy.
var fixes = map[string]string{
	v1alpha1.ReasonProviderSecretMissing:    "create the provider Secret in this namespace, or name an existing one in spec.providerRefs",
	v1alpha1.ReasonMultipleDefaultProviders: "keep the kuadrant.io/default-provider=true label on one Secret of this namespace, or name one in spec.providerRefs",
	v1alpha1.ReasonUnsupportedProvider:      "use a Secret of a provider type this controller runs (its --providers flag)",
	v1alpha1.ReasonDNSProviderError:         "create a zone for this hostname that the provider Secret's credentials can see",
}

// policyStatus is the status a policy gets from its verdict, once the verdict's listener plans know
// the current DNSRecords.
func policyStatus(v *verdict, previous dnsv1.DNSPolicyStatus) dnsv1.DNSPolicyStatus {
	p := v.policy
	st := *previous.DeepCopy()
	st.ObservedGeneration = p.Generation
	message := v.message
	if kept := keptRecords(v.listeners); len(kept) > 0 && !v.accepted() {
		message += "; DNSRecords " + strings.Join(kept, " ") + " stay as published until the policy is valid"
	}
	setCondition(&st.Conditions, p.Generation, ConditionAccepted, boolStatus(v.accepted()), v.reason, message)
	if !v.accepted() {
		// As Kuadrant: a policy that is not accepted enforces nothing.
		policyConditions.Remove(&st.Conditions, ConditionEnforced)
		policyConditions.Remove(&st.Conditions, ConditionSubResourcesHealthy)
		st.RecordConditions, st.TotalRecords = nil, 0
		return st
	}

	var records []*v1alpha1.DNSRecord
	for _, lp := range v.listeners {
		if lp.current != nil {
			records = append(records, lp.current)
		}
	}
	st.TotalRecords = int32(len(records))
	st.RecordConditions = recordConditions(records)
	status, reason, message := enforced(v.listeners)
	setCondition(&st.Conditions, p.Generation, ConditionEnforced, status, reason, message)
	if p.Spec.HealthCheck != nil {
		status, reason, message := healthy(records)
		setCondition(&st.Conditions, p.Generation, ConditionSubResourcesHealthy, status, reason, message)
	} else {
		policyConditions.Remove(&st.Conditions, ConditionSubResourcesHealthy)
	}
	return st
}

// keptRecords names the records left as they were because they cannot be rebuilt now. For an
// invalid policy they are worth a word in Accepted; for a valid one the listener's problem is in
// Enforced.
func keptRecords(listeners []*listenerPlan) []string {
	var names []string
	for _, lp := range listeners {
		if lp.keep && lp.current != nil {
			names = append(names, lp.current.Name)
		}
	}
	return names
}

// enforced is the Enforced condition as kuadrant-operator writes it: True "successfully enforced"
// when every record the policy wants is Ready, True "partially enforced" (Kuadrant's sentence, with
// the names of the records not ready) when some are, False when none is. Beyond Kuadrant, which
// counts a record with no Ready condition yet as ready, a record not Ready for its current
// generation counts as not ready, and the message goes on, after Kuadrant's text, with why each is
// not and the fix. A Ready record that lost a shared wish to another owner (Conflicted=True: its
// traffic flows, with the other owner's default geo or TTL) keeps the policy enforced; the message
// names the conflict. So does a Ready record whose backend published its load-balanced tree as a
// round robin of its leaves (ProviderAccepted=False, RoundRobin).
func enforced(listeners []*listenerPlan) (metav1.ConditionStatus, string, string) {
	var notReady, details, skipped, conflicted []string
	wanted, ready := 0, 0
	for _, lp := range listeners {
		switch {
		case lp.skipped != "":
			skipped = append(skipped, lp.skipped)
		case lp.problem != "":
			details = append(details, lp.problem)
		case lp.record != nil:
			wanted++
			if why := notReadyReason(lp.current); why != "" {
				notReady = append(notReady, lp.record.Name)
				details = append(details, lp.record.Name+": "+why)
			} else {
				ready++
				if c := conditions.Get(lp.current.Status.Conditions, v1alpha1.ConditionTypeConflicted); c != nil && c.Status == metav1.ConditionTrue {
					conflicted = append(conflicted, lp.record.Name+": "+c.Reason+": "+c.Message)
				}
				// Published, but as a round robin of the tree's leaves rather than the tree.
				if c := conditions.Get(lp.current.Status.Conditions, v1alpha1.ConditionTypeProviderAccepted); c != nil && c.Reason == v1alpha1.ReasonRoundRobin {
					conflicted = append(conflicted, lp.record.Name+": "+c.Reason+": "+c.Message)
				}
			}
		}
	}
	switch {
	case len(details) == 0 && wanted == 0:
		return metav1.ConditionTrue, ReasonEnforced, joinNotes(msgNoRecords, skipped)
	case len(details) == 0:
		return metav1.ConditionTrue, ReasonEnforced, joinNotes(msgEnforced, append(conflicted, skipped...))
	case ready == 0:
		return metav1.ConditionFalse, ReasonUnknown, joinNotes(msgNoneReady, append(details, skipped...))
	case len(notReady) == 0:
		return metav1.ConditionTrue, ReasonEnforced, joinNotes(msgPartial, append(details, skipped...))
	default:
		// Kuadrant's sentence lists the names, each followed by a space; the reasons follow.
		msg := msgPartial + msgNotReady
		for _, name := range notReady {
			msg += name + " "
		}
		return metav1.ConditionTrue, ReasonEnforced, msg + "(" + strings.Join(append(details, skipped...), "; ") + ")"
	}
}

// notReadyReason says why a record is not Ready for its current spec, with the remedy where the
// reason has a known one; empty when it is Ready.
func notReadyReason(rec *v1alpha1.DNSRecord) string {
	if rec == nil {
		return "not created yet"
	}
	c := conditions.Get(rec.Status.Conditions, v1alpha1.ConditionTypeReady)
	switch {
	case c == nil || c.ObservedGeneration < rec.Generation:
		return "awaiting the DNSRecord controller"
	case c.Status == metav1.ConditionTrue:
		return ""
	}
	why := fmt.Sprintf("%s: %s", c.Reason, c.Message)
	if fix, ok := fixes[c.Reason]; ok {
		why += "; to fix: " + fix
	}
	return why
}

// healthy reports the Healthy conditions of the records, which follow their probes (the record
// controller's health.go). A record not yet judged makes the condition Unknown rather than True.
func healthy(records []*v1alpha1.DNSRecord) (metav1.ConditionStatus, string, string) {
	if len(records) == 0 {
		return metav1.ConditionTrue, ReasonHealthy, "No sub-resources present"
	}
	var unhealthy, unjudged []string
	for _, rec := range records {
		c := conditions.Get(rec.Status.Conditions, v1alpha1.ConditionTypeHealthy)
		switch {
		case c == nil || c.ObservedGeneration < rec.Generation:
			unjudged = append(unjudged, rec.Name)
		case c.Status != metav1.ConditionTrue:
			unhealthy = append(unhealthy, rec.Name)
		}
	}
	switch {
	case len(unhealthy) > 0:
		return metav1.ConditionFalse, ReasonUnknown,
			"DNSPolicy has encountered some issues: not all sub-resources of policy are passing the policy defined health check. Not healthy DNSRecords are: " + strings.Join(unhealthy, " ")
	case len(unjudged) > 0:
		return metav1.ConditionUnknown, ReasonUnknown,
			"health checks are not yet evaluated: no health result has been reported for DNSRecords " + strings.Join(unjudged, " ")
	}
	return metav1.ConditionTrue, ReasonHealthy, "All sub-resources are healthy"
}

// recordConditions maps each record's rootHost to its failing conditions, as Kuadrant does: those
// not True, and Conflicted when it is True (a lost shared wish).
func recordConditions(records []*v1alpha1.DNSRecord) map[string][]metav1.Condition {
	out := map[string][]metav1.Condition{}
	for _, rec := range records {
		all := slices.Clone(rec.Status.Conditions)
		if hc := rec.Status.HealthCheck; hc != nil {
			all = append(all, hc.Conditions...)
			for _, probe := range hc.Probes {
				all = append(all, probe.Conditions...)
			}
		}
		for _, c := range all {
			if failing(c) {
				out[rec.Spec.RootHost] = append(out[rec.Spec.RootHost], c)
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// failing reports whether a record's condition tells of a problem.
func failing(c metav1.Condition) bool {
	if c.Type == v1alpha1.ConditionTypeConflicted {
		return c.Status == metav1.ConditionTrue
	}
	return c.Status != metav1.ConditionTrue
}

// gatewayStatus returns the Gateway's status with the affected condition on the Gateway and on each
// listener an accepted policy publishes. Only listeners the Gateway's implementation already reports
// are marked: a listener status entry needs fields only the implementation knows.
func gatewayStatus(gw *gatewayapiv1.Gateway, verdicts []*verdict) gatewayapiv1.GatewayStatus {
	st := *gw.Status.DeepCopy()
	var all []string
	byListener := map[gatewayapiv1.SectionName]string{}
	for _, v := range verdicts {
		if !v.accepted() {
			continue
		}
		key := types.NamespacedName{Namespace: v.policy.Namespace, Name: v.policy.Name}.String()
		all = append(all, key)
		for _, lp := range v.listeners {
			byListener[gatewayapiv1.SectionName(lp.listener)] = key
		}
	}
	slices.Sort(all)
	if len(all) == 0 {
		conditions.Remove(&st.Conditions, ConditionAffected)
	} else {
		conditions.Set(&st.Conditions, gw.Generation, metav1.Condition{Type: ConditionAffected, Status: metav1.ConditionTrue, Reason: ReasonAccepted, Message: fmt.Sprintf(msgAffected, "["+strings.Join(all, " ")+"]")})
	}
	for i := range st.Listeners {
		ls := &st.Listeners[i]
		if key, ok := byListener[ls.Name]; ok {
			conditions.Set(&ls.Conditions, gw.Generation, metav1.Condition{Type: ConditionAffected, Status: metav1.ConditionTrue, Reason: ReasonAccepted, Message: fmt.Sprintf(msgAffected, "["+key+"]")})
		} else {
			conditions.Remove(&ls.Conditions, ConditionAffected)
		}
	}
	return st
}

// setCondition sets a condition of a policy, in the policy's condition order. Gateway conditions,
// which the Gateway's implementation writes too, are set in place (conditions.Set).
func setCondition(conds *[]metav1.Condition, generation int64, typ string, status metav1.ConditionStatus, reason, message string) {
	policyConditions.Set(conds, generation, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message})
}

func boolStatus(b bool) metav1.ConditionStatus {
	if b {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

func joinNotes(msg string, notes []string) string {
	if len(notes) == 0 {
		return msg
	}
	return msg + ": " + strings.Join(notes, "; ")
}
