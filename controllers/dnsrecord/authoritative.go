package dnsrecord

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/conditions"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// Authoritative records (DESIGN 4b). The records of a providers.HostZones backend (coredns) are
// written into the authoritative record of their root host, a DNSRecord that DNS servers serve from
// the API server. Such a record is reconciled as Kuadrant's dns-operator reconciles it: it gets an
// owner ID, a zone (the backend's zone that holds its root host), the provider label and the zone
// label, the finalizer, and a Ready condition saying whether the backend can serve what it holds.
// It publishes nothing: it is the zone. Its contributors create it, and delete it once they leave
// it empty.

func isAuthoritative(rec *v1alpha1.DNSRecord) bool {
	return rec.Labels[v1alpha1.AuthoritativeRecordLabel] == "true"
}

// validateAuthoritative gives the record its owner ID. Its endpoints are its contributors', each
// validated on its own record; what the DNS server cannot serve of them the server reports in the
// record's Served condition.
func (r *Reconciler) validateAuthoritative(_ context.Context, s *scope) (ctrl.Result, bool, error) {
	s.record.Status.OwnerID = ownerID(s.record)
	return ctrl.Result{}, false, nil
}

// checkAuthoritative reports whether the backend can serve the record, as Kuadrant reports it: a
// provider error on this record, while its contributors stay Ready (they say it in their
// ProviderAccepted condition). domainOwners are the owners whose ownership records claim the root host.
func (r *Reconciler) checkAuthoritative(_ context.Context, s *scope) (ctrl.Result, bool, error) {
	rec := s.record
	rec.Status.DomainOwners = ownersAt(rec.Spec.Endpoints, rec.Spec.RootHost)
	if err := s.backend.Hosts.CheckEndpoints(rec.Spec.Endpoints); err != nil {
		r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonProviderError, fmt.Sprintf(v1alpha1.MessageProviderError, err.Error()))
		// Only a new generation (a contributor's write) changes the answer.
		return ctrl.Result{}, true, reconcile.TerminalError(err)
	}
	r.setReady(s, metav1.ConditionTrue, v1alpha1.ReasonProviderSuccess, v1alpha1.MessageProviderSuccess)
	return ctrl.Result{}, true, nil
}

// releaseAuthoritative lets a deleted authoritative record go: there is nothing to withdraw from a
// zone that is the record itself, and a server stops serving it as it goes.
func (r *Reconciler) releaseAuthoritative(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	if !controllerutil.ContainsFinalizer(s.record, v1alpha1.RecordFinalizer) {
		return ctrl.Result{}, true, nil
	}
	res, err := r.removeFinalizer(ctx, s)
	return res, true, err
}

// ownersAt lists, sorted, the owners whose ownership records claim a record set at name.
func ownersAt(endpoints []*v1alpha1.Endpoint, name string) []string {
	var owners []string
	for _, rs := range registry.Read(endpoints).AtName(v1alpha1.NormalizeName(name)) {
		owners = append(owners, rs.Owners()...)
	}
	slices.Sort(owners)
	return slices.Compact(owners)
}

// setProviderAccepted says on a record written into an authoritative record whether the backend can
// serve what it publishes there, with a Warning event when that turns to no, and on a record whose
// tree is published as a round robin (roundRobin: the backend answers every client alike) that it
// is; other records have no such condition.
func (r *Reconciler) setProviderAccepted(s *scope, desired []*v1alpha1.Endpoint, roundRobin bool) {
	rec := s.record
	if roundRobin {
		conditionOrder.Set(&rec.Status.Conditions, rec.Generation, metav1.Condition{
			Type: v1alpha1.ConditionTypeProviderAccepted, Status: metav1.ConditionFalse,
			Reason: v1alpha1.ReasonRoundRobin, Message: fmt.Sprintf(v1alpha1.MessageRoundRobin, rec.Spec.RootHost),
		})
		return
	}
	if s.backend.Hosts == nil {
		conditionOrder.Remove(&rec.Status.Conditions, v1alpha1.ConditionTypeProviderAccepted)
		return
	}
	err := s.backend.Hosts.CheckEndpoints(desired)
	if err == nil {
		conditionOrder.Set(&rec.Status.Conditions, rec.Generation, metav1.Condition{
			Type: v1alpha1.ConditionTypeProviderAccepted, Status: metav1.ConditionTrue,
			Reason: v1alpha1.ReasonAccepted, Message: v1alpha1.MessageAccepted,
		})
		return
	}
	msg := fmt.Sprintf(v1alpha1.MessageNotAccepted, rec.Namespace+"/"+s.zone.ID, err.Error())
	before := conditions.Get(rec.Status.Conditions, v1alpha1.ConditionTypeProviderAccepted)
	conditionOrder.Set(&rec.Status.Conditions, rec.Generation, metav1.Condition{
		Type: v1alpha1.ConditionTypeProviderAccepted, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonValidationError, Message: msg,
	})
	if before == nil || before.Status != metav1.ConditionFalse || before.Message != msg {
		r.Recorder.Eventf(rec, nil, corev1.EventTypeWarning, v1alpha1.ReasonValidationError, "Publish", "%s", msg)
	}
}
