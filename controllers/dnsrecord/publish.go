package dnsrecord

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord/backends"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord/publish"
	"github.com/dnspolicy/dnspolicy-controller/controllers/internal/pass"
	"github.com/dnspolicy/dnspolicy-controller/pkg/builder"
	"github.com/dnspolicy/dnspolicy-controller/pkg/health"
	"github.com/dnspolicy/dnspolicy-controller/pkg/zone"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// validate works out the owner ID and refuses a spec no backend should see (validate.go): a bad
// record never reaches a zone's batch, so it cannot fail the records it would have shared one with.
// Retrying does not fix a spec; a new generation starts a pass.
func (r *Reconciler) validate(_ context.Context, s *scope) (ctrl.Result, bool, error) {
	rec := s.record
	rec.Status.OwnerID = ownerID(rec)
	if err := validateSpec(rec, r.Options.maxTTL()); err != nil {
		r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonValidationError, err.Error())
		return ctrl.Result{}, true, reconcile.TerminalError(err)
	}
	return ctrl.Result{}, false, nil
}

// connect finds the Secret, its backend and the zone.
func (r *Reconciler) connect(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	rec := s.record
	var err error
	if b, ok := r.cachedBackend(ctx, s.key, rec); ok {
		s.backend = b
	} else {
		secret, err := r.providerSecret(ctx, rec)
		if err != nil {
			if errors.Is(err, errSecretMissing) {
				// It publishes nowhere now: its queue is not kept for it (without a Secret watch,
				// this is where a deleted Secret's queue goes).
				r.Publisher.Release(s.key.String())
			}
			r.setReady(s, metav1.ConditionFalse, secretReason(err), err.Error())
			return ctrl.Result{}, true, err
		}
		if s.backend, err = r.backends.Backend(ctx, s.key, secret, providers.Env{Client: r.Client, Namespace: secret.Namespace}); err != nil {
			r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonUnsupportedProvider, err.Error())
			return ctrl.Result{}, true, err
		}
	}
	rec.Status.ProviderRef = v1alpha1.ProviderRef{Name: s.backend.Secret.Name}
	s.provider = s.backend.Provider
	if res, done, err := r.checkGrants(ctx, s); done {
		return res, done, err
	}
	if isAuthoritative(rec) && s.backend.Records != nil {
		// A zone record of a backend of zones is published into its zone (a delegation primary's);
		// a backend that serves whole records can do neither.
		err := providers.Errorf(providers.Permanent, "provider secret %s is of a type that neither serves authoritative records (%s does) nor publishes into zones",
			s.backend.Secret, v1alpha1.SecretTypeCoreDNS)
		r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonUnsupportedProvider, err.Error())
		return ctrl.Result{}, true, reconcile.TerminalError(err)
	}
	if s.backend.Records != nil {
		return ctrl.Result{}, false, nil // it serves the whole record: no zone
	}
	if s.backend.Hosts != nil && !isAuthoritative(rec) {
		// Written into the authoritative record of its root host: that is its zone (DESIGN 4b).
		hz, err := s.backend.Hosts.HostZone(rec.Spec.RootHost)
		if err != nil {
			r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonDNSProviderError, fmt.Sprintf(v1alpha1.MessageNoZone, zoneProblem(s, err)))
			s.provider = s.backend.HostProvider
			if perr := r.probeWithoutZone(ctx, s); perr != nil {
				return ctrl.Result{}, true, perr
			}
			return ctrl.Result{}, true, reconcile.TerminalError(err)
		}
		s.provider, s.zone = s.backend.HostProvider, hz.Zone
		rec.Status.ZoneID, rec.Status.ZoneDomainName = hz.Zone.ID, hz.DomainName
		return ctrl.Result{}, false, nil
	}
	if s.zone, err = r.chooseZone(ctx, s); err != nil {
		r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonDNSProviderError, fmt.Sprintf(v1alpha1.MessageNoZone, zoneProblem(s, err)))
		if !isAuthoritative(rec) {
			err = errors.Join(err, r.probeWithoutZone(ctx, s))
		}
		return ctrl.Result{}, true, err
	}
	rec.Status.ZoneID, rec.Status.ZoneDomainName = s.zone.ID, s.zone.DNSName
	if isAuthoritative(rec) && s.backend.Hosts != nil {
		s.labels = s.backend.Hosts.AuthoritativeLabels(s.zone)
	}
	return ctrl.Result{}, false, nil
}

// publish hands the desired endpoints to the zone's queue and reports the outcome.
func (r *Reconciler) publish(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	if s.backend.Records != nil {
		return r.ensureWhole(ctx, s)
	}
	rec := s.record
	prov := s.provider
	endpoints, roundRobin := copyEndpoints(rec.Spec.Endpoints), false
	if isAuthoritative(rec) {
		endpoints = withoutBookkeeping(endpoints)
	}
	if prov.Capabilities().NoRoutingPolicies {
		// The server answers every client alike: the tree's leaves as one set at the host, never a
		// part of the tree (health below then drops the failing leaves from that set).
		endpoints, roundRobin = builder.RoundRobin(rec.Spec.RootHost, endpoints)
	}
	desired, err := prov.AdjustEndpoints(endpoints)
	if err != nil {
		r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonValidationError, err.Error())
		if providers.KindOf(err) == providers.Permanent {
			return ctrl.Result{}, true, reconcile.TerminalError(err)
		}
		return ctrl.Result{}, true, err
	}
	r.setProviderAccepted(s, desired, roundRobin)
	req := publish.Request{OwnerID: rec.Status.OwnerID, Group: rec.Status.Group, Previous: rec.Status.Endpoints, Desired: desired, Named: statementNames(rec),
		KeepExpired: r.keepExpired(s.backend), Record: s.key.String(), CleanupGroups: s.activeGroups}
	if res, done := r.foreignLease(s, &req); done {
		return res, true, nil
	}
	r.memory.remember(rec.Status.OwnerID, s.key)
	var decision *health.Decision
	if s.probing != nil {
		req.Wish, decision = r.healthWish(s, desired)
	} else {
		r.tracker.Forget(s.key.String()) // it reads no statements (any more)
	}
	out, err := r.Publisher.Publish(ctx, prov, s.backend.Account, s.zone, req)
	if err != nil {
		r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonProviderError, fmt.Sprintf(v1alpha1.MessageProviderError, err.Error()))
		return ctrl.Result{}, true, err
	}
	r.recordOutcome(s, out)
	r.reportLeases(s, req.Previous, out)
	r.reportCleanup(s, out)
	notPublishing := false
	if decision != nil {
		// What the health rules left in is what this owner wants published now.
		desired = decision.Endpoints
		notPublishing = r.reportHealth(s, decision)
		if len(r.Options.FailoverOrder) > 0 {
			// Whether an address passes, not whether one is published: the last addresses of an
			// owner stay published when every one fails (fail-open), and a group that serves only
			// failing addresses is the one to fail over from. Addresses not yet reported count as
			// passing, so a start or a new record is no reason to switch.
			passing := decision.AnyHealthy || decision.Reported < decision.Probed
			r.failover.setHealth(s.zone.DNSName, s.key, passing)
		}
	}
	unpublished := unpublishedConflicts(desired, out.Plan)
	switch {
	case out.Wrote && !out.Validated:
		r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonAwaitingValidation, v1alpha1.MessageAwaitingValidation)
		return ctrl.Result{RequeueAfter: r.Options.ValidationRetry}, true, nil
	case notPublishing:
		// No address passes its health check: nothing was ever published, or every address is
		// withdrawn while another owner's pass (health.go).
		r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonHealthChecksFailed, v1alpha1.MessageNotPublishing)
	case len(unpublished) > 0:
		// Some record this owner wants is not in the zone at all: its traffic does not flow there.
		r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonConflicted, conflictMessage(unpublished))
	case !out.Validated && len(out.Plan.Conflicts) == 0:
		// Nothing to write, yet the zone does not hold what we publish: it changed under the cached
		// view. Re-read soon rather than report success. (With conflicts, the zone holds the
		// winners' values where this owner's wishes differ, which the plan has just said.)
		r.Publisher.Forget(s.backend.Account, s.zone)
		r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonAwaitingValidation, v1alpha1.MessageAwaitingValidation)
		return ctrl.Result{RequeueAfter: r.Options.ValidationRetry}, true, nil
	default:
		// Every record this owner wants is published, possibly with another owner's winning value
		// for a shared thing: the Conflicted condition says which.
		r.setReady(s, metav1.ConditionTrue, v1alpha1.ReasonProviderSuccess, v1alpha1.MessageProviderSuccess)
	}
	res := leaseRecheck(r.recheck(s, out.Wrote), req)
	if len(s.activeGroups) > 0 && (out.Wrote || len(r.Options.FailoverOrder) > 0) {
		// The cleanup of inactive groups waits for a quiet pass (Kuadrant's rule): after a write it
		// comes one ValidationRetry later rather than a MinRecheck. With automatic failover another
		// cluster may switch the zone's groups at any moment: an active record reads them as often
		// as an inactive one does, so that it stops within InactiveGroupRecheck of a switch this
		// controller did not make (one it made requeues its records at once, failover.go).
		res.RequeueAfter = min(res.RequeueAfter, pass.Jitter(r.inactiveGroupRecheck()))
		if out.Wrote {
			res.RequeueAfter = r.Options.ValidationRetry
		}
	}
	if s.probing != nil {
		// Other owners' health statements are read, and this owner's renewed, at least once per
		// renewal period.
		res.RequeueAfter = min(res.RequeueAfter, pass.Jitter(health.Renewal(s.probing.interval)))
	}
	return res, true, nil
}

// chooseZone picks the zone, from a zone list reused for ZoneListMaxAge. A miss re-lists once if the
// list is older than backends.ZoneRelistAfter: the zone may have been created since.
func (r *Reconciler) chooseZone(ctx context.Context, s *scope) (providers.Zone, error) {
	for attempt := 0; ; attempt++ {
		maxAge := r.Options.ZoneListMaxAge
		if attempt > 0 {
			maxAge = min(maxAge, backends.ZoneRelistAfter)
		}
		zones, err := s.backend.Zones(ctx, time.Now(), maxAge)
		if err != nil {
			return providers.Zone{}, err
		}
		z, err := zone.Choose(s.record.Spec.RootHost, zones, s.backend.Provider.Capabilities().ApexRecords, s.record.Status.ZoneID)
		if err == nil || attempt > 0 || !errors.Is(err, zone.ErrNoZone) {
			return z, err
		}
	}
}

func (r *Reconciler) recordOutcome(s *scope, out publish.Outcome) {
	rec := s.record
	rec.Status.Endpoints = out.Plan.Published
	rec.Status.DomainOwners = out.Plan.Owners
	if out.Wrote {
		rec.Status.WriteCounter++
		recordSeries.wrote(client.ObjectKeyFromObject(rec))
	} else {
		rec.Status.WriteCounter = 0
	}
	for _, c := range out.Plan.Conflicts {
		conflicts.WithLabelValues(c.Field).Inc()
	}
	r.setConflicted(s, out.Plan.Conflicts)
}

// ensureWhole hands the record to a backend that serves whole records, and writes what it reports.
func (r *Reconciler) ensureWhole(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	rec := s.record
	st, err := s.backend.Records.EnsureRecord(ctx, rec.DeepCopy())
	if err != nil {
		r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonProviderError, fmt.Sprintf(v1alpha1.MessageProviderError, err.Error()))
		return ctrl.Result{}, true, err
	}
	rec.Status.Endpoints = st.Endpoints
	r.setReady(s, st.Ready.Status, st.Ready.Reason, st.Ready.Message)
	if st.Healthy != nil {
		conditionOrder.Set(&rec.Status.Conditions, rec.Generation, metav1.Condition{
			Type: v1alpha1.ConditionTypeHealthy, Status: st.Healthy.Status, Reason: st.Healthy.Reason, Message: st.Healthy.Message,
		})
	} else {
		conditionOrder.Remove(&rec.Status.Conditions, v1alpha1.ConditionTypeHealthy)
	}
	if st.RecheckAfter > 0 {
		return ctrl.Result{RequeueAfter: pass.Jitter(st.RecheckAfter)}, true, nil
	}
	return r.recheck(s, false), true, nil
}

func copyEndpoints(eps []*v1alpha1.Endpoint) []*v1alpha1.Endpoint {
	out := make([]*v1alpha1.Endpoint, len(eps))
	for i, ep := range eps {
		out[i] = ep.DeepCopy()
	}
	return out
}
