package dnsrecord

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord/backends"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord/publish"
	"github.com/dnspolicy/dnspolicy-controller/pkg/conditions"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// SecretKeyLeaseExpiry, set to "false" in a provider Secret, turns lease expiry off for the records
// publishing with it: they withdraw no other cluster's owner whose lease ran out (this cluster still
// renews its own lease, so others can judge it).
const SecretKeyLeaseExpiry = "DNSPOLICY_LEASE_EXPIRY"

// Replan asks the records of owners for a pass now. It never blocks the publisher.
func (r *Reconciler) Replan(owners []string) {
	r.requeue(r.memory.recordsOf(owners))
}

// requeue asks the records keys for a pass now. It never blocks.
func (r *Reconciler) requeue(keys []types.NamespacedName) {
	keys = r.requeueRemote(keys)
	events := r.replans.Load()
	if len(keys) == 0 || events == nil {
		return
	}
	go func() {
		for _, k := range keys {
			*events <- event.TypedGenericEvent[reconcile.Request]{Object: reconcile.Request{NamespacedName: k}}
		}
	}()
}

// replanSource is the source of the passes Replan asks for.
func (r *Reconciler) replanSource() source.TypedSource[reconcile.Request] {
	events := make(chan event.TypedGenericEvent[reconcile.Request], 1024)
	r.replans.Store(&events)
	return source.TypedChannel(events, handler.TypedFuncs[reconcile.Request, reconcile.Request]{
		GenericFunc: func(_ context.Context, e event.TypedGenericEvent[reconcile.Request], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.Add(e.Object)
		},
	})
}

// keepExpired reads the Secret's lease-expiry setting, else the controller's.
func (r *Reconciler) keepExpired(b *backends.Backend) bool {
	if v, ok := b.Data[SecretKeyLeaseExpiry]; ok {
		return strings.EqualFold(strings.TrimSpace(v), "false")
	}
	return r.Options.KeepExpired
}

// reportLeases writes the Leases condition, and the events and metric of owners this pass withdrew
// or of this owner's records published again.
func (r *Reconciler) reportLeases(s *scope, previous []*v1alpha1.Endpoint, out publish.Outcome) {
	rec := s.record
	log := ctrl.Log.WithName("dnsrecord").WithValues("dnsrecord", s.key)
	if out.Renewal.Needed || len(out.Leases) > 0 {
		// The zone is shared: its withdrawals series starts at 0 before any withdrawal, so an alert
		// on its increase sees the first one (a series born at 1 shows no increase).
		ownersWithdrawn.WithLabelValues(s.zone.DNSName)
	}
	for _, o := range out.Withdrawn {
		v := out.Leases[o]
		log.Info("withdrew an owner whose lease expired", "owner", o, "holder", v.Holder, "unchangedFor", v.Age.Round(time.Second), "zone", s.zone.DNSName)
		ownersWithdrawn.WithLabelValues(s.zone.DNSName).Inc()
		r.Recorder.Eventf(rec, nil, corev1.EventTypeNormal, v1alpha1.ReasonOwnerWithdrawn, "Publish",
			"withdrew owner %s (lease %s) from the names it shared with this record: its lease in zone %s had not changed for %v (duration %v)",
			o, lease.Key(v.Holder), s.zone.DNSName, v.Age.Round(time.Second), v.Duration)
	}
	republished := out.Wrote && republishes(rec.Status.OwnerID, previous, out)
	if republished {
		log.Info("published again records that were gone from the zone", "zone", s.zone.DNSName)
		r.Recorder.Eventf(rec, nil, corev1.EventTypeWarning, v1alpha1.ReasonRepublished, "Publish",
			"records this owner had published were gone from zone %s (withdrawn by another cluster that counted this cluster's lease expired, or deleted by hand): published again", s.zone.DNSName)
	}
	if !out.Renewal.Needed && len(out.Leases) == 0 && !republished {
		conditionOrder.Remove(&rec.Status.Conditions, v1alpha1.ConditionTypeLeases)
		return
	}
	var others []string
	for o, v := range out.Leases {
		state := fmt.Sprintf("unchanged for %v of %v", v.Age.Round(time.Second), v.Duration)
		if v.Expired {
			state = fmt.Sprintf("expired, unchanged for %v", v.Age.Round(time.Second))
		}
		// The lease's key (the hash of the cluster ID) names it, as claims do: status messages carry
		// no UUIDs, which read as request IDs.
		others = append(others, fmt.Sprintf("%s (lease %s) %s", o, lease.Key(v.Holder), state))
	}
	sort.Strings(others)
	tail := ""
	if len(others) > 0 {
		tail = "; other owners' leases: " + strings.Join(others, ", ")
	}
	c := metav1.Condition{Type: v1alpha1.ConditionTypeLeases, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonLeaseRenewed}
	switch {
	case out.Renewal.Err != nil:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonLeaseNotRenewed
		c.Message = fmt.Sprintf("this cluster's lease in zone %s cannot be renewed: %v; other clusters withdraw this owner from shared names once it is older than its duration", s.zone.DNSName, out.Renewal.Err)
	case republished:
		c.Reason = v1alpha1.ReasonRepublished
		c.Message = fmt.Sprintf("records this owner had published were gone from zone %s and were published again", s.zone.DNSName)
	case out.Renewal.At.IsZero():
		c.Message = fmt.Sprintf("this cluster's lease in zone %s is renewed with the zone's next write", s.zone.DNSName)
	default:
		c.Message = fmt.Sprintf("this cluster's lease in zone %s renewed %v ago", s.zone.DNSName, time.Since(out.Renewal.At).Round(time.Second))
	}
	c.Message += tail
	conditionOrder.Set(&rec.Status.Conditions, rec.Generation, c)
}

// republishes reports whether the pass published again record keys this owner had published
// (previous) that the zone no longer held: its plan created their ownership TXTs anew.
func republishes(owner string, previous []*v1alpha1.Endpoint, out publish.Outcome) bool {
	if len(previous) == 0 || out.Written == nil {
		return false
	}
	had := map[v1alpha1.EndpointKey]bool{}
	for _, e := range previous {
		had[normalKey(e)] = true
	}
	for _, e := range out.Written.Create {
		if c, ok := registry.ParseTXT(e); ok && c.Owner == owner && had[c.Record] {
			return true
		}
	}
	return false
}

// leasesBookkept blanks the Leases condition's message, whose ages change on every pass: a quiet
// pass does not write them, and the status shows the ages as of its last real change.
func leasesBookkept(cs []metav1.Condition) []metav1.Condition {
	c := conditions.Get(cs, v1alpha1.ConditionTypeLeases)
	if c == nil || c.Reason != v1alpha1.ReasonLeaseRenewed {
		return cs
	}
	out := make([]metav1.Condition, len(cs))
	copy(out, cs)
	for i := range out {
		if out[i].Type == v1alpha1.ConditionTypeLeases {
			out[i].Message = ""
		}
	}
	return out
}
