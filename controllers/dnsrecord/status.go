package dnsrecord

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/conditions"
	"github.com/dnspolicy/dnspolicy-controller/pkg/plan"
	"github.com/dnspolicy/dnspolicy-controller/pkg/zone"
)

func (r *Reconciler) setReady(s *scope, status metav1.ConditionStatus, reason, message string) {
	conditionOrder.Set(&s.record.Status.Conditions, s.record.Generation, metav1.Condition{
		Type: v1alpha1.ConditionTypeReady, Status: status, Reason: reason, Message: message,
	})
}

// setConflicted reports the plan's conflicts, and raises a Warning event when the condition turns
// True.
func (r *Reconciler) setConflicted(s *scope, cs []plan.Conflict) {
	rec := s.record
	if len(cs) == 0 {
		conditionOrder.Set(&rec.Status.Conditions, rec.Generation, metav1.Condition{
			Type: v1alpha1.ConditionTypeConflicted, Status: metav1.ConditionFalse,
			Reason: v1alpha1.ReasonNoConflict, Message: v1alpha1.MessageNoConflict,
		})
		return
	}
	msg := conflictMessage(cs)
	wasTrue := conditions.IsTrue(rec.Status.Conditions, v1alpha1.ConditionTypeConflicted)
	conditionOrder.Set(&rec.Status.Conditions, rec.Generation, metav1.Condition{
		Type: v1alpha1.ConditionTypeConflicted, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonConflicted, Message: msg,
	})
	if !wasTrue {
		r.Recorder.Eventf(rec, nil, corev1.EventTypeWarning, v1alpha1.ReasonConflicted, "Publish", "%s", msg)
	}
}

// unpublishedConflicts returns the conflicts of the desired record keys that are not published at
// all (plan.Result.Published leaves out wishes lost to a record-type conflict, to a record no owner
// claims, or to a taken ownership TXT name). A key missing without a conflict to explain it is
// reported as one, so Ready never says True for a record that is not there.
func unpublishedConflicts(desired []*v1alpha1.Endpoint, res *plan.Result) []plan.Conflict {
	published := map[v1alpha1.EndpointKey]bool{}
	for _, ep := range res.Published {
		published[normalKey(ep)] = true
	}
	missing := map[v1alpha1.EndpointKey]bool{}
	for _, ep := range desired {
		if k := normalKey(ep); !published[k] {
			missing[k] = true
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var out []plan.Conflict
	explained := map[v1alpha1.EndpointKey]bool{}
	for _, c := range res.Conflicts {
		k := v1alpha1.EndpointKey{DNSName: v1alpha1.NormalizeName(c.DNSName), RecordType: c.RecordType, SetIdentifier: c.SetIdentifier}
		if missing[k] {
			out = append(out, c)
			explained[k] = true
		}
	}
	for _, ep := range desired {
		if k := normalKey(ep); missing[k] && !explained[k] {
			out = append(out, plan.Conflict{DNSName: ep.DNSName, RecordType: ep.RecordType, SetIdentifier: ep.SetIdentifier,
				Field: plan.FieldType, Ours: ep.RecordType, Published: "nothing"})
			explained[k] = true
		}
	}
	return out
}

func normalKey(ep *v1alpha1.Endpoint) v1alpha1.EndpointKey {
	k := ep.Key()
	k.DNSName = v1alpha1.NormalizeName(k.DNSName)
	return k
}

// conflictMessage names each lost wish: the record, the field, both values and the winner.
func conflictMessage(cs []plan.Conflict) string {
	parts := make([]string, 0, len(cs))
	for _, c := range cs {
		who := "owner " + c.WinnerOwner
		if c.WinnerOwner == "" {
			who = "a record no owner claims"
		}
		set := ""
		if c.SetIdentifier != "" {
			set = " set " + c.SetIdentifier
		}
		parts = append(parts, fmt.Sprintf("%s %s%s: %s wants %s, published %s from %s", c.DNSName, c.RecordType, set, c.Field, c.Ours, c.Published, who))
	}
	return fmt.Sprintf(v1alpha1.MessageConflicted, strings.Join(parts, "; "))
}

// secretReason is the Ready reason for a failure to find the provider Secret.
func secretReason(err error) string {
	switch {
	case errors.Is(err, errMultipleDefaults):
		return v1alpha1.ReasonMultipleDefaultProviders
	case errors.Is(err, errSecretMissing):
		return v1alpha1.ReasonProviderSecretMissing
	default:
		return v1alpha1.ReasonProviderError
	}
}

// zoneProblem says why no zone was chosen. When the provider Secret is what to look at (its zones
// were listed and none holds the host, or listing them failed) the message names it, and the zone
// scope the backend reports (the project or resource group, and its key), unless the backend's error
// already names the Secret.
func zoneProblem(s *scope, err error) string {
	msg := conditions.StableMessage(err.Error())
	secret := fmt.Sprintf("provider secret %s/%s", s.backend.Secret.Namespace, s.backend.Secret.Name)
	switch {
	case strings.Contains(msg, secret):
		return msg
	case errors.Is(err, zone.ErrNoZone):
		msg += " of " + secret
		if s.backend.ZoneScope != "" {
			msg += " (" + s.backend.ZoneScope + ")"
		}
		return msg
	case errors.Is(err, zone.ErrPublicSuffix), errors.Is(err, zone.ErrApexNotAllowed),
		errors.Is(err, zone.ErrAmbiguousZone), errors.Is(err, zone.ErrInvalidHost):
		// About the host and the zones, not the Secret.
		return msg
	default:
		// Listing the zones failed.
		return secret + ": " + msg
	}
}
