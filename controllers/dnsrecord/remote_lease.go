package dnsrecord

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord/publish"
	"github.com/dnspolicy/dnspolicy-controller/controllers/internal/pass"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
)

// Owner leases across delegation (docs/delegation.md#a-secondary-that-stops). A secondary of this
// project renews its cluster's owner lease on each delegating record it readies, in the annotation
// v1alpha1.OwnerLeaseAnnotation, once per renewal period. A primary copies the lease into the
// authoritative record as the lease record of that cluster (publish.Request.Lease), and the
// record's claims there name it; from then on the lease is judged, and an expired owner withdrawn,
// by the rules of any shared zone (package lease, docs/zone-sharing.md#owner-leases): its endpoints
// leave the names it shares with live owners, never a name's last targets. The expired owner's own
// record is not published again from here until its lease changes (ReasonOwnerLeaseExpired). A
// record without the annotation (Kuadrant's secondary writes none) names no lease and never
// expires, as in Kuadrant.

// renewOwnerLease ends the pass of a delegating record on a secondary: it writes this cluster's
// lease of the current renewal period into the record, when it holds another, and comes back at
// the next period. Without a cluster ID, or with leases off, there is none to write.
func (r *Reconciler) renewOwnerLease(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	own := r.Options.OwnerLease
	if own.Holder == "" {
		return pass.Done(ctrl.Result{}, nil)
	}
	now := time.Now()
	value := lease.Renew(own.Holder, now, own.Every, own.Duration).Value()
	rec := s.record
	if rec.Annotations[v1alpha1.OwnerLeaseAnnotation] != value {
		patch := client.MergeFrom(rec.Metadata())
		if rec.Annotations == nil {
			rec.Annotations = map[string]string{}
		}
		rec.Annotations[v1alpha1.OwnerLeaseAnnotation] = value
		written := rec.Metadata()
		if err := r.Client.Patch(ctx, written, patch); err != nil {
			return pass.Done(ctrl.Result{}, err)
		}
		rec.ObjectMeta = written.ObjectMeta
		s.before.ObjectMeta = *rec.ObjectMeta.DeepCopy() // as ensureFinalizer: the status patch's base
	}
	every := max(own.Every, time.Second)
	return pass.Done(ctrl.Result{RequeueAfter: now.Truncate(every).Add(every + time.Second).Sub(now)}, nil)
}

// withLease gives the request of another cluster's delegating record the owner lease the record
// carries, to publish and to withdraw with. A record carrying no lease, or this cluster's own, gets
// none.
func withLease(s *scope, req *publish.Request) {
	req.Delegated = s.record.Spec.Delegate
	if s.remote == nil {
		return
	}
	l, ok := lease.ParseValue(s.record.Annotations[v1alpha1.OwnerLeaseAnnotation])
	if !ok || l.Holder == s.remote.clusterID {
		return
	}
	req.Lease, req.LeaseAt = &l, s.record.Status.ZoneDomainName
}

// foreignLease gives the request its lease (withLease), and ends the pass when this primary judges
// that lease expired at the value the record still holds (done).
func (r *Reconciler) foreignLease(s *scope, req *publish.Request) (res ctrl.Result, done bool) {
	withLease(s, req)
	if req.Lease == nil {
		return ctrl.Result{}, false
	}
	l := *req.Lease
	v, expired := r.Publisher.ForeignLeaseExpired(s.backend.Account, s.zone, l)
	if !expired {
		return ctrl.Result{}, false
	}
	r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonOwnerLeaseExpired, fmt.Sprintf(
		"the owner lease %s of cluster %s, which this record carries, has not changed for %v (duration %v) in %s: its controller stopped renewing it; "+
			"nothing more of it is published from here until it is renewed, and its endpoints leave the names it shares with live owners",
		lease.Key(l.Holder), s.remote.cluster, v.Age.Round(time.Second), l.Duration, s.zone.ID))
	return ctrl.Result{RequeueAfter: pass.Jitter(l.Every)}, true
}

// leaseRecheck bounds the re-check of a record carrying another cluster's lease by its renewal
// period: its pass is what reads the authoritative record, so a lease that stops changing is
// judged, and its owner withdrawn, without waiting for a longer re-check.
func leaseRecheck(res ctrl.Result, req publish.Request) ctrl.Result {
	if req.Lease != nil {
		res.RequeueAfter = min(res.RequeueAfter, pass.Jitter(max(req.Lease.Every, time.Second)))
	}
	return res
}
