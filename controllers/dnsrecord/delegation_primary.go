package dnsrecord

import (
	"context"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// The primary side of delegation, for the delegating records of this cluster (Kuadrant's model,
// docs/delegation.md). A delegating record names no provider: it publishes with the namespace's
// default provider Secret, not into the zone itself but into the authoritative record of its root
// host, authoritative-record-<hash8(rootHost)> in its namespace, which every delegating record of
// that root host shares, each owner's sets tagged by its ownership TXTs as in any zone. The
// authoritative record names the default Secret and is itself published into the zone like any
// record, by its own pass (publishAuthoritative), without its contributors' bookkeeping. With a
// backend whose zones are authoritative records (coredns) the delegating record is simply one of
// its records: the authoritative record it writes is the zone the DNS servers serve.
//
// Several primaries build the same authoritative record: it holds exactly what the contributors'
// plans put there, and each primary's copy is published under its own owner ID.

// authoritativeName is Kuadrant's name of the authoritative record of a root host (a leading "*."
// dropped, as Kuadrant hashes it).
func authoritativeName(rootHost string) (name, root string) {
	root = strings.TrimPrefix(v1alpha1.NormalizeName(rootHost), v1alpha1.WildcardPrefix)
	return "authoritative-record-" + hash.Base36(root, 8), root
}

// connectDelegated connects a delegating record on a primary: the default provider's backend, the
// zone that holds its root host there, and, as where it writes, the authoritative record of the
// root host in that zone.
func (r *Reconciler) connectDelegated(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	if res, done, err := r.connect(ctx, s); done {
		return res, done, err
	}
	if done, err := r.intoAuthoritative(s); done {
		return ctrl.Result{}, true, err
	}
	return ctrl.Result{}, false, nil
}

// intoAuthoritative points the pass at the authoritative record of the record's root host, in the
// zone connect chose. A backend that serves whole records has no zone to merge into.
func (r *Reconciler) intoAuthoritative(s *scope) (bool, error) {
	switch {
	case s.backend.Records != nil:
		err := providers.Errorf(providers.Permanent, "provider secret %s serves whole records: delegating records cannot be merged into an authoritative record with it", s.backend.Secret)
		r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonUnsupportedProvider, err.Error())
		return true, reconcile.TerminalError(err)
	case s.backend.Hosts != nil:
		return false, nil // its zone is already the authoritative record of its root host
	}
	name, root := authoritativeName(s.record.Spec.RootHost)
	s.provider = r.Authoritative(s.record.Namespace, s.backend.Secret.Name)
	s.zone = providers.Zone{ID: name, DNSName: s.zone.DNSName}
	s.record.Status.ZoneID, s.record.Status.ZoneDomainName = name, root
	return false, nil
}

// connectDelegatedForDeletion finds where a deleted delegating record of a primary wrote: the
// authoritative record of its root host, in the zone of the default provider that holds the host
// (the status names the authoritative record and the root host, as Kuadrant's does, not that zone).
func (r *Reconciler) connectDelegatedForDeletion(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	if res, done, err := r.connectForDeletion(ctx, s); done {
		return res, done, err
	}
	if s.backend.Records != nil || s.backend.Hosts != nil {
		return ctrl.Result{}, false, nil
	}
	if res, done, err := r.zoneForDeletion(ctx, s); done {
		return res, done, err
	}
	if done, err := r.intoAuthoritative(s); done {
		return ctrl.Result{}, true, err
	}
	return ctrl.Result{}, false, nil
}

// markReadyForDelegation gives a delegating record on a primary Kuadrant's ReadyForDelegation
// condition once its finalizer is on, as on a secondary; the pass then publishes.
func (r *Reconciler) markReadyForDelegation(_ context.Context, s *scope) (ctrl.Result, bool, error) {
	rec := s.record
	conditionOrder.Set(&rec.Status.Conditions, rec.Generation, metav1.Condition{
		Type: v1alpha1.ConditionTypeReadyForDelegation, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonFinalizersSet,
	})
	return ctrl.Result{}, false, nil
}

// publishAuthoritative ends the pass of an authoritative record: one whose backend serves it (a
// coredns zone) is checked (checkAuthoritative); one a delegation primary wrote, naming a backend of
// zones, is published into its zone like any record.
func (r *Reconciler) publishAuthoritative(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	if s.backend.Hosts != nil {
		return r.checkAuthoritative(ctx, s)
	}
	return r.publish(ctx, s)
}

// authoritativeDeletionPhases: an authoritative record a DNS server serves just goes; one that was
// published into a zone withdraws from it first, unless its owner ID is another namespace's.
func (r *Reconciler) authoritativeDeletionPhases(rec *v1alpha1.DNSRecord) []phase {
	if rec.Labels[v1alpha1.CoreDNSZoneNameLabel] != "" {
		return []phase{r.releaseAuthoritative}
	}
	return []phase{r.releaseBorrowed, r.connectForDeletion, r.withdrawAuthoritative}
}

// withdrawAuthoritative withdraws a deleted authoritative record from the zone it was published in,
// or, found to be served by its backend after all, releases it.
func (r *Reconciler) withdrawAuthoritative(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	if s.backend.Hosts != nil {
		return r.releaseAuthoritative(ctx, s)
	}
	return r.withdraw(ctx, s)
}

// withoutBookkeeping leaves out of an authoritative record's endpoints its contributors' ownership
// TXTs and owner-named records: the zone gets the authoritative record's own.
func withoutBookkeeping(endpoints []*v1alpha1.Endpoint) []*v1alpha1.Endpoint {
	out := endpoints[:0:0]
	for _, e := range endpoints {
		if e != nil && !registry.Bookkeeping(e) {
			out = append(out, e)
		}
	}
	return out
}
