package dnsrecord

import (
	"context"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mccontroller "sigs.k8s.io/multicluster-runtime/pkg/controller"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/internal/pass"
	"github.com/dnspolicy/dnspolicy-controller/pkg/conditions"
)

// Other clusters' delegating records, on a primary (Kuadrant's remote record controller,
// docs/delegation.md). A primary reaches other clusters through kubeconfig Secrets
// (multicluster-runtime's kubeconfig provider, wired in cmd/dnspolicy-controller/app) and publishes
// their delegating records exactly as it publishes its own (delegation_primary.go): the same
// phases run on a view of the remote record whose status is this primary's entry of
// status.remoteRecordStatuses (its cluster ID the key), and the pass ends by writing that entry
// back, never the rest of the remote status. The record is a tenant of its namespace's name here:
// its owner ID and its names are checked against the grants and the owner IDs of the namespace of
// that name on this cluster, whose default provider Secret it publishes with. Releasing it
// (removeFinalizer) is reporting its endpoints removed, for its own controller to release it.

// remoteRecord is the other cluster a pass's record was read from.
type remoteRecord struct {
	// cluster is the cluster's name (its kubeconfig Secret's), client reaches it.
	cluster string
	client  client.Client
	// clusterID is this primary's ID, the key of its entry.
	clusterID string
	// read is the record as read, the base of the status patch.
	read *v1alpha1.DNSRecord
}

// RemoteReconciler publishes other clusters' delegating records with the record controller's
// phases.
type RemoteReconciler struct {
	Records *Reconciler
	// ClusterID returns this primary's cluster ID (the UID of Namespace kube-system).
	ClusterID func(context.Context) (string, error)
	manager   mcmanager.Manager
}

// SetupWithManager registers the controller with a multicluster manager, after the record
// controller's SetupWithManager: it watches the DNSRecords of the provider's clusters only.
func (rr *RemoteReconciler) SetupWithManager(mgr mcmanager.Manager) error {
	rr.manager = mgr
	if err := mgr.Add(clusterCounter{}); err != nil {
		return err
	}
	o := rr.Records.Options
	return mcbuilder.ControllerManagedBy(mgr).
		Named("remotednsrecord").
		For(&v1alpha1.DNSRecord{}, mcbuilder.WithPredicates(remoteRecordChanged)).
		WatchesRawSource(rr.replanSource()).
		WithOptions(mccontroller.Options{
			// multicluster-runtime does not apply the manager's controller defaults.
			SkipNameValidation:      mgr.GetLocalManager().GetControllerOptions().SkipNameValidation,
			MaxConcurrentReconciles: o.MaxConcurrentReconciles,
			RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[mcreconcile.Request](o.MinBackoff, o.MaxBackoff),
		}).
		Complete(rr)
}

// Reconcile runs one pass over another cluster's record and writes this primary's entry of its
// status once.
func (rr *RemoteReconciler) Reconcile(ctx context.Context, req mcreconcile.Request) (res ctrl.Result, err error) {
	r := rr.Records
	id, err := rr.ClusterID(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	cl, err := rr.manager.GetCluster(ctx, req.ClusterName)
	if err != nil {
		return ctrl.Result{}, err
	}
	c, cluster := cl.GetClient(), string(req.ClusterName)
	countRemoteRecords(ctx, cluster, c)
	key := remoteKey(cluster, req.NamespacedName)
	rec := &v1alpha1.DNSRecord{}
	if err := c.Get(ctx, req.NamespacedName, rec); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(key)
			remoteReconciles.DeleteLabelValues(cluster, req.Name, req.Namespace)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !rec.Spec.Delegate {
		return ctrl.Result{}, nil
	}
	entry, _ := rec.Status.RemoteRecordStatus(id)
	deleting := rec.DeletionTimestamp != nil
	if deleting {
		remoteReconciles.DeleteLabelValues(cluster, rec.Name, rec.Namespace)
	} else {
		remoteReconciles.WithLabelValues(cluster, rec.Name, rec.Namespace).Inc()
	}
	switch {
	case deleting && reportedRemoved(entry):
		r.forget(key)
		return ctrl.Result{}, nil
	case !deleting && !conditions.IsTrue(rec.Status.Conditions, v1alpha1.ConditionTypeReadyForDelegation):
		// Its own controller has not readied it (or runs no delegation at all): a change of its
		// status starts the next pass.
		return ctrl.Result{}, nil
	}
	entry.RemoteRecordStatuses = nil
	view := &v1alpha1.DNSRecord{TypeMeta: rec.TypeMeta, ObjectMeta: *rec.ObjectMeta.DeepCopy(), Spec: *rec.Spec.DeepCopy(), Status: entry}
	s := &scope{key: key, record: view, before: statusOf(view), remote: &remoteRecord{cluster: cluster, client: c, clusterID: id, read: rec}}
	defer func() {
		if perr := r.patchStatus(ctx, s); perr != nil && err == nil {
			res, err = ctrl.Result{}, perr
		}
	}()
	return pass.Run(ctx, s, r.remotePhases(view)...)
}

// remotePhases are the phases of another cluster's delegating record: those of a delegating record
// on a primary, less what its own controller does (finalizer, ReadyForDelegation, probes). A
// deleted one that was not granted, or whose owner ID a namespace of this cluster holds, is
// reported removed without withdrawing anything: it could otherwise withdraw another tenant's
// claims under an owner ID it borrowed.
func (r *Reconciler) remotePhases(rec *v1alpha1.DNSRecord) []phase {
	if rec.DeletionTimestamp != nil {
		return []phase{r.markRemoteDeletion, r.releaseBorrowed, r.connectDelegatedForDeletion, r.releaseUngranted, r.withdraw}
	}
	return []phase{r.validate, r.checkOwner, r.connectDelegated, r.publish}
}

// markRemoteDeletion says, as Kuadrant's primaries do, that the record's endpoints are being
// withdrawn; the pass that withdraws them says they are removed.
func (r *Reconciler) markRemoteDeletion(_ context.Context, s *scope) (ctrl.Result, bool, error) {
	r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonProviderEndpointsDeletion, v1alpha1.MessageEndpointsDeletion)
	return ctrl.Result{}, false, nil
}

// releaseUngranted reports a deleted remote record removed without withdrawing anything when its
// namespace is not granted its names: it never published.
func (r *Reconciler) releaseUngranted(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	if s.backend == nil || isAuthoritative(s.record) || !r.grantsApply(s.backend) {
		return ctrl.Result{}, false, nil
	}
	uncovered, err := r.ungranted(ctx, s.record)
	if err != nil {
		return ctrl.Result{}, true, err
	}
	if len(uncovered) == 0 {
		return ctrl.Result{}, false, nil
	}
	return r.reportRemoved(s), true, nil
}

// reportRemoved is the release of another cluster's record: its entry says its endpoints are
// removed (Kuadrant's ProviderEndpointsRemoved), so its controller may let it go.
func (r *Reconciler) reportRemoved(s *scope) ctrl.Result {
	st := &s.record.Status
	r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonProviderEndpointsRemoved, v1alpha1.MessageEndpointsRemoved)
	st.ZoneID, st.ZoneDomainName, st.DomainOwners, st.Endpoints = "", "", nil, nil
	r.forget(s.key)
	return ctrl.Result{}
}

// reportedRemoved reports whether this primary's entry already says the endpoints are removed.
func reportedRemoved(entry v1alpha1.DNSRecordStatus) bool {
	c := conditions.Get(entry.Conditions, v1alpha1.ConditionTypeReady)
	return c != nil && c.Reason == v1alpha1.ReasonProviderEndpointsRemoved
}

// patchRemoteStatus writes this primary's entry of the remote record's status.remoteRecordStatuses,
// when it changed. The patch is a diff of that entry alone: the record's own status, and the
// other primaries' entries, are left as they are.
func (r *Reconciler) patchRemoteStatus(ctx context.Context, s *scope) error {
	rec := s.record
	rec.Status.ObservedGeneration = rec.Generation
	if equalStatus(s.before.Status, rec.Status) {
		return nil
	}
	before := statusOf(s.remote.read)
	after := statusOf(s.remote.read)
	if err := after.Status.SetRemoteRecordStatus(s.remote.clusterID, rec.Status); err != nil {
		return err
	}
	if err := s.remote.client.Status().Patch(ctx, after, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// remoteRecordChanged lets through the updates of another cluster's record that change what this
// primary does with it: a new generation, its deletion, its own controller readying it, or its
// owner lease (lease.go). The writes of the primaries' entries, this one's included, do not pass:
// without this, each primary's write would start a pass on every other.
var remoteRecordChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*v1alpha1.DNSRecord)
		cur, okNew := e.ObjectNew.(*v1alpha1.DNSRecord)
		if !okOld || !okNew {
			return true
		}
		ready := func(r *v1alpha1.DNSRecord) bool {
			return conditions.IsTrue(r.Status.Conditions, v1alpha1.ConditionTypeReadyForDelegation)
		}
		return old.Generation != cur.Generation || (old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil) ||
			ready(old) != ready(cur) || old.Annotations[v1alpha1.OwnerLeaseAnnotation] != cur.Annotations[v1alpha1.OwnerLeaseAnnotation]
	},
}

// remoteKey is what a pass of another cluster's record is kept under in this process (memory,
// backends, publish queues): the record's name prefixed with its cluster's, which no object name
// of this cluster can be (object names hold no "/").
func remoteKey(cluster string, key types.NamespacedName) types.NamespacedName {
	return types.NamespacedName{Namespace: key.Namespace, Name: cluster + "/" + key.Name}
}

// fromRemoteKey undoes remoteKey; false for a key of this cluster's.
func fromRemoteKey(key types.NamespacedName) (mcreconcile.Request, bool) {
	cluster, name, ok := strings.Cut(key.Name, "/")
	if !ok {
		return mcreconcile.Request{}, false
	}
	req := mcreconcile.Request{ClusterName: multicluster.ClusterName(cluster)}
	req.Namespace, req.Name = key.Namespace, name
	return req, true
}

// requeueRemote sends the passes asked for other clusters' records (the publisher's Replan) to
// their controller, and returns the keys of this cluster's records.
func (r *Reconciler) requeueRemote(keys []types.NamespacedName) []types.NamespacedName {
	var local []types.NamespacedName
	var remote []mcreconcile.Request
	for _, k := range keys {
		if req, ok := fromRemoteKey(k); ok {
			remote = append(remote, req)
		} else {
			local = append(local, k)
		}
	}
	if events := r.remoteReplans.Load(); events != nil && len(remote) > 0 {
		go func() {
			for _, req := range remote {
				*events <- event.TypedGenericEvent[mcreconcile.Request]{Object: req}
			}
		}()
	}
	return local
}

// replanSource is the source of the passes requeueRemote sends.
func (rr *RemoteReconciler) replanSource() source.TypedSource[mcreconcile.Request] {
	events := make(chan event.TypedGenericEvent[mcreconcile.Request], 1024)
	rr.Records.remoteReplans.Store(&events)
	return source.TypedChannel(events, handler.TypedFuncs[mcreconcile.Request, mcreconcile.Request]{
		GenericFunc: func(_ context.Context, e event.TypedGenericEvent[mcreconcile.Request], q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) {
			q.Add(e.Object)
		},
	})
}
