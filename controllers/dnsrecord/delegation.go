package dnsrecord

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/internal/pass"
)

// Delegation (docs/delegation.md), Kuadrant's model. A delegating record (spec.delegate: true)
// names no provider. On a cluster in the secondary role it gets what any record gets before it
// connects (owner ID, validation, finalizer, probes), then ReadyForDelegation=True and Ready=True:
// a primary cluster reads it through a kubeconfig, publishes its endpoints, and writes what it did
// into status.remoteRecordStatuses under its cluster ID. When it is deleted, the finalizer stays
// until every primary's entry says the endpoints are withdrawn.
//
// On a primary, this cluster's delegating records are published into the authoritative record of
// their root host (delegation_primary.go), and so are other clusters' records, read through
// kubeconfig Secrets (remote.go), with their clusters' owner leases (remote_lease.go).

// DelegationRole is the part a cluster plays in delegation (--delegation-role).
type DelegationRole string

// Kuadrant's roles and default (primary).
const (
	DelegationRolePrimary   DelegationRole = "primary"
	DelegationRoleSecondary DelegationRole = "secondary"
)

// DelegationRoles lists the roles --delegation-role accepts.
var DelegationRoles = []DelegationRole{DelegationRolePrimary, DelegationRoleSecondary}

func (d *DelegationRole) String() string { return string(*d) }

// Set accepts primary or secondary, as Kuadrant's flag does.
func (d *DelegationRole) Set(v string) error {
	if !slices.Contains(DelegationRoles, DelegationRole(v)) {
		return fmt.Errorf("must be one of %s or %s, not %q", DelegationRolePrimary, DelegationRoleSecondary, v)
	}
	*d = DelegationRole(v)
	return nil
}

// secondary reports whether this controller readies delegating records for a primary.
func (o Options) secondary() bool { return o.DelegationRole == DelegationRoleSecondary }

// delegationPhases are the phases of a delegating record, by role and state.
func (r *Reconciler) delegationPhases(rec *v1alpha1.DNSRecord) []phase {
	switch {
	case rec.DeletionTimestamp != nil && r.Options.secondary():
		return []phase{r.releaseDelegated}
	case rec.DeletionTimestamp != nil:
		return []phase{r.releaseBorrowed, r.connectDelegatedForDeletion, r.withdraw}
	case r.Options.secondary():
		return []phase{r.validate, r.checkOwner, r.ensureFinalizer, r.ensureProbes, r.readyForDelegation, r.renewOwnerLease}
	default:
		return []phase{r.validate, r.checkOwner, r.connectDelegated, r.ensureFinalizer, r.markReadyForDelegation, r.checkGroup, r.ensureProbes, r.publish}
	}
}

// readyForDelegation gives a delegating record on a secondary Kuadrant's conditions. Nothing is
// published from here: a new generation or a probe's result starts the next pass, and only the
// owner lease (renewOwnerLease) comes back on a timer.
func (r *Reconciler) readyForDelegation(_ context.Context, s *scope) (ctrl.Result, bool, error) {
	rec := s.record
	conditionOrder.Set(&rec.Status.Conditions, rec.Generation, metav1.Condition{
		Type: v1alpha1.ConditionTypeReadyForDelegation, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonFinalizersSet,
	})
	r.setReady(s, metav1.ConditionTrue, v1alpha1.ReasonProviderSuccess, v1alpha1.MessageProviderSuccess)
	return ctrl.Result{}, false, nil
}

// releaseDelegated releases a deleted delegating record once no primary's entry in
// status.remoteRecordStatuses still reports its endpoints (Kuadrant's ProviderEndpointsRemoved). A
// primary's write of its entry starts the next pass (remoteStatusesChanged); the re-check on a
// timer only covers a missed event.
func (r *Reconciler) releaseDelegated(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	rec := s.record
	if !controllerutil.ContainsFinalizer(rec, v1alpha1.RecordFinalizer) {
		return pass.Done(ctrl.Result{}, nil)
	}
	if holding := rec.Status.PrimariesHoldingEndpoints(); len(holding) > 0 {
		r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonProviderEndpointsDeletion, waitingMessage(holding))
		return pass.Done(ctrl.Result{RequeueAfter: pass.Jitter(r.Options.MinRecheck)}, nil)
	}
	res, err := r.removeFinalizer(ctx, s)
	return pass.Done(res, err)
}

// waitingMessage is Kuadrant's message of a record being deleted, with the primaries it waits for.
func waitingMessage(clusterIDs []string) string {
	return fmt.Sprintf("%s: waiting for primary clusters %s to report them removed in status.remoteRecordStatuses",
		v1alpha1.MessageEndpointsDeletion, strings.Join(clusterIDs, ", "))
}

// remoteStatusesChanged lets through the update of a deleted delegating record whose
// status.remoteRecordStatuses changed: a primary reporting the endpoints withdrawn. This controller
// never writes that field, so its own status writes do not pass.
var remoteStatusesChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*v1alpha1.DNSRecord)
		cur, okNew := e.ObjectNew.(*v1alpha1.DNSRecord)
		return okOld && okNew && cur.Spec.Delegate && cur.DeletionTimestamp != nil &&
			!equality.Semantic.DeepEqual(old.Status.RemoteRecordStatuses, cur.Status.RemoteRecordStatuses)
	},
}
