package dnsrecord

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// Owner IDs are bound to namespaces. An owner ID is free text (spec.ownerID), and the zone's
// ownership TXTs know nothing of namespaces: a record that borrowed another team's ID would join
// that team's claims, and deleting it would withdraw them. So within this cluster an owner ID
// belongs to the namespace of the oldest live DNSRecord using it (creationTimestamp, then
// namespace/name: every pass of every record agrees). A record of another namespace with that ID
// publishes nothing and says so (OwnerIDInUse), and when deleted releases its finalizer without
// touching the zone. Records of one namespace may share an ID (Kuadrant's records of one owner),
// and an ID no live record of this cluster uses, such as a dead cluster's for Kuadrant's orphan
// clean-up, is free for whichever namespace uses it first. Owner IDs of other clusters, seen only
// in the zone's TXTs, are not bound.

// ownerIDField indexes DNSRecords by owner ID in the manager's cache, so the check is a lookup.
const ownerIDField = "dnsrecord.ownerID"

// indexOwnerID is the index function of ownerIDField. Authoritative records are indexed too: one a
// delegation primary publishes into a zone claims its names under its own owner ID, and anyone may
// write a record shaped as one.
func indexOwnerID(o client.Object) []string {
	rec, ok := o.(*v1alpha1.DNSRecord)
	if !ok {
		return nil
	}
	return []string{ownerID(rec)}
}

// usersOf lists the live records of this cluster using an owner ID.
func (r *Reconciler) usersOf(ctx context.Context, owner string) ([]v1alpha1.DNSRecord, error) {
	list := &v1alpha1.DNSRecordList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{ownerIDField: owner}); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// ownerNamespace is the namespace holding rec's owner ID: that of the oldest record using it.
func (r *Reconciler) ownerNamespace(ctx context.Context, rec *v1alpha1.DNSRecord) (string, error) {
	users, err := r.usersOf(ctx, ownerID(rec))
	if err != nil {
		return "", err
	}
	var holder *v1alpha1.DNSRecord
	for i := range users {
		if u := &users[i]; holder == nil || older(u, holder) {
			holder = u
		}
	}
	if holder == nil {
		return rec.Namespace, nil // not in the cache yet: nobody else uses the ID either
	}
	return holder.Namespace, nil
}

func older(a, b *v1alpha1.DNSRecord) bool {
	ta, tb := a.CreationTimestamp, b.CreationTimestamp
	switch {
	case !ta.Equal(&tb):
		return ta.Before(&tb)
	case a.Namespace != b.Namespace:
		return a.Namespace < b.Namespace
	default:
		return a.Name < b.Name
	}
}

// checkOwner ends the pass of a record whose owner ID another namespace holds, before it connects
// to anything. It is queued again when the holder goes (ownerEvents).
func (r *Reconciler) checkOwner(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	ns, err := r.ownerNamespace(ctx, s.record)
	if err != nil {
		return ctrl.Result{}, true, err
	}
	if ns == s.record.Namespace {
		return ctrl.Result{}, false, nil
	}
	r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonOwnerIDInUse, fmt.Sprintf(v1alpha1.MessageOwnerIDInUse, ownerID(s.record), ns))
	return ctrl.Result{}, true, nil
}

// releaseBorrowed releases a deleted record whose owner ID another namespace holds without
// withdrawing anything: the claims under that ID are the holder's.
func (r *Reconciler) releaseBorrowed(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	if !controllerutil.ContainsFinalizer(s.record, v1alpha1.RecordFinalizer) {
		return ctrl.Result{}, true, nil
	}
	ns, err := r.ownerNamespace(ctx, s.record)
	if err != nil {
		return ctrl.Result{}, true, err
	}
	if ns == s.record.Namespace {
		return ctrl.Result{}, false, nil
	}
	res, err := r.removeFinalizer(ctx, s)
	return res, true, err
}

// ownerEvents queues, when a record goes, the records of other namespaces that use its owner ID:
// one of them may hold it now. An owner ID never changes (spec.ownerID is immutable, the computed
// one follows the UID), so only deletions free one.
func (r *Reconciler) ownerEvents() handler.EventHandler {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	return handler.Funcs{
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) {
			if ids := indexOwnerID(e.Object); len(ids) == 1 {
				r.enqueueWaiters(ctx, e.Object, ids[0], q)
			}
		},
	}
}

// enqueueWaiters queues the records outside gone's namespace that use owner.
func (r *Reconciler) enqueueWaiters(ctx context.Context, gone client.Object, owner string, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	users, err := r.usersOf(ctx, owner)
	if err != nil {
		return
	}
	for i := range users {
		if users[i].Namespace != gone.GetNamespace() {
			q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&users[i])})
		}
	}
}
