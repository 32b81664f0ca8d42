package dnsrecord

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord/publish"
	"github.com/dnspolicy/dnspolicy-controller/pkg/conditions"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/pkg/zone"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// Deletion. While the finalizer is on, a pass withdraws every claim of this owner that the zone
// holds, whatever the status says: the status may have lost its endpoints or zone (a crash between
// the write and the status patch), so the zone is connected to even then, and the plan withdraws
// what the zone's ownership TXTs say this owner claims.
//
// A permanent error (the Secret gone and its backend no longer kept, credentials revoked, the zone
// deleted, the backend type disabled) holds the record until OrphanGrace after its deletion; the
// first attempt after that which still fails releases it, with a Warning event naming what it left
// in the zone. Several default-provider Secrets are not such an error: the record waits for the
// user to say which Secret it is, however long that takes.

// connectForDeletion finds the backend and the zone this record may have written to.
func (r *Reconciler) connectForDeletion(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	rec := s.record
	if !controllerutil.ContainsFinalizer(rec, v1alpha1.RecordFinalizer) {
		return ctrl.Result{}, true, nil
	}
	b, cached := r.cachedBackend(ctx, s.key, rec)
	var secret *corev1.Secret
	var err error
	if !cached {
		secret, err = r.providerSecret(ctx, rec)
	}
	switch {
	case cached:
		s.backend = b
	case err == nil:
		if s.backend, err = r.backends.Backend(ctx, s.key, secret, providers.Env{Client: r.Client, Namespace: secret.Namespace}); err != nil {
			return r.releaseOrWait(ctx, s, v1alpha1.ReasonUnsupportedProvider, err)
		}
	case errors.Is(err, errSecretMissing):
		last, ok := r.backends.Last(s.key)
		if !ok {
			return r.releaseOrWait(ctx, s, v1alpha1.ReasonProviderSecretMissing, err)
		}
		// Withdraw with the credentials the record published with.
		log.FromContext(ctx).Info("provider secret gone; withdrawing with the backend built from it", "secret", last.Secret.String())
		s.backend = last
	default:
		// Several default providers, or the API server failed: wait, never release.
		r.setReady(s, metav1.ConditionFalse, secretReason(err), err.Error())
		return ctrl.Result{}, true, err
	}

	s.provider = s.backend.Provider
	if s.backend.Records != nil {
		return ctrl.Result{}, false, nil // it serves the whole record: no zone
	}
	if s.backend.Hosts != nil {
		// The zone follows from the root host, whatever the status says: a record published by an
		// earlier version of this controller has the coredns zone there.
		hz, err := s.backend.Hosts.HostZone(rec.Spec.RootHost)
		if err != nil {
			// The Secret no longer lists a zone holding the host: its authoritative record is no
			// longer served from here.
			return r.releaseOrWait(ctx, s, v1alpha1.ReasonDNSProviderError, fmt.Errorf(v1alpha1.MessageNoZone, zoneProblem(s, err)))
		}
		s.provider, s.zone = s.backend.HostProvider, hz.Zone
		return ctrl.Result{}, false, nil
	}
	if rec.Status.ZoneID != "" {
		s.zone = providers.Zone{ID: rec.Status.ZoneID, DNSName: rec.Status.ZoneDomainName}
		return ctrl.Result{}, false, nil
	}
	// The status never recorded a zone, yet the record may have written to one: find it as a
	// publish would.
	return r.zoneForDeletion(ctx, s)
}

// zoneForDeletion finds, as a publish would, the zone a deleted record may have written to: none
// holding its host releases it, a refusal that will not pass releases it after the grace, anything
// else waits.
func (r *Reconciler) zoneForDeletion(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	z, err := r.chooseZone(ctx, s)
	switch {
	case errors.Is(err, zone.ErrNoZone):
		// No zone the credentials see holds the host, so none holds anything of this record.
		res, err := r.removeFinalizer(ctx, s)
		return res, true, err
	case err != nil:
		reason := v1alpha1.ReasonDNSProviderError
		msg := fmt.Sprintf(v1alpha1.MessageNoZone, zoneProblem(s, err))
		if isZoneRefusal(err) || providers.KindOf(err) == providers.Permanent {
			return r.releaseOrWait(ctx, s, reason, errors.New(msg))
		}
		r.setReady(s, metav1.ConditionFalse, reason, msg)
		return ctrl.Result{}, true, err
	}
	s.zone = z
	return ctrl.Result{}, false, nil
}

// withdraw publishes nothing for this owner, then releases the record.
func (r *Reconciler) withdraw(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	rec := s.record
	if s.remote == nil {
		if err := r.deleteProbes(ctx, rec); err != nil {
			return ctrl.Result{}, true, err
		}
	}
	if s.backend.Records != nil {
		if err := s.backend.Records.RemoveRecord(ctx, rec.DeepCopy()); err != nil {
			if providers.KindOf(err) == providers.Permanent {
				return r.releaseOrWait(ctx, s, v1alpha1.ReasonProviderError, fmt.Errorf(v1alpha1.MessageProviderError, err.Error()))
			}
			r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonProviderError, fmt.Sprintf(v1alpha1.MessageProviderError, err.Error()))
			return ctrl.Result{}, true, err
		}
		res, err := r.removeFinalizer(ctx, s)
		return res, true, err
	}
	req := publish.Request{OwnerID: ownerID(rec), Previous: rec.Status.Endpoints, Named: statementNames(rec), Record: s.key.String()}
	withLease(s, &req)
	out, err := r.Publisher.Publish(ctx, s.provider, s.backend.Account, s.zone, req)
	if err != nil {
		permanent := providers.KindOf(err) == providers.Permanent
		if r.zoneGone(ctx, s) {
			err, permanent = fmt.Errorf("zone %s (%s) is no longer listed by provider secret %s: %w", s.zone.DNSName, s.zone.ID, s.backend.Secret, err), true
		}
		if permanent {
			return r.releaseOrWait(ctx, s, v1alpha1.ReasonProviderError, fmt.Errorf(v1alpha1.MessageProviderError, err.Error()))
		}
		r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonProviderError, fmt.Sprintf(v1alpha1.MessageProviderError, err.Error()))
		return ctrl.Result{}, true, err
	}
	if !out.Validated {
		return ctrl.Result{RequeueAfter: r.Options.ValidationRetry}, true, nil
	}
	res, err := r.removeFinalizer(ctx, s)
	return res, true, err
}

// zoneGone reports whether a fresh zone list of the backend lacks the record's zone. A listing
// that fails tells nothing.
func (r *Reconciler) zoneGone(ctx context.Context, s *scope) bool {
	zones, err := s.backend.Zones(ctx, time.Now(), 0)
	if err != nil {
		return false
	}
	for _, z := range zones {
		if z.ID == s.zone.ID {
			return false
		}
	}
	return true
}

// isZoneRefusal reports whether zone.Choose refused the host for good (not a failed listing).
func isZoneRefusal(err error) bool {
	return errors.Is(err, zone.ErrPublicSuffix) || errors.Is(err, zone.ErrApexNotAllowed) ||
		errors.Is(err, zone.ErrAmbiguousZone) || errors.Is(err, zone.ErrInvalidHost)
}

// releaseOrWait handles a permanent error on deletion: until OrphanGrace after the deletion the
// record waits (a fixed Secret is picked up at once through the Secret watch); the first attempt
// after that which still fails releases it with a Warning event naming what it leaves in the zone.
func (r *Reconciler) releaseOrWait(ctx context.Context, s *scope, reason string, cause error) (ctrl.Result, bool, error) {
	rec := s.record
	grace := r.Options.OrphanGrace
	if waited := time.Since(rec.DeletionTimestamp.Time); waited < grace {
		r.setReady(s, metav1.ConditionFalse, reason, fmt.Sprintf(
			"%s; deleting: this owner's records cannot be withdrawn from the zone, and the DNSRecord is released without withdrawing them %s after its deletion unless this is fixed",
			cause, grace))
		return ctrl.Result{RequeueAfter: min(grace-waited, r.Options.MaxBackoff)}, true, nil
	}
	r.Recorder.Eventf(rec, nil, corev1.EventTypeWarning, reason, "Release",
		"released %s after deletion without withdrawing its records (%s); left in %s: %s",
		grace, conditions.StableMessage(cause.Error()), zoneOf(rec), leftBehind(rec))
	res, err := r.removeFinalizer(ctx, s)
	return res, true, err
}

// zoneOf names the zone the record's records are in, as far as the status knows.
func zoneOf(rec *v1alpha1.DNSRecord) string {
	if rec.Status.ZoneID == "" {
		return "the zone holding " + rec.Spec.RootHost + " (not recorded in the status)"
	}
	return fmt.Sprintf("zone %s (%s)", rec.Status.ZoneDomainName, rec.Status.ZoneID)
}

// leftBehind names what a released record may have left in its zone: the records its status says it
// published, at most ten of them, and its ownership TXTs.
func leftBehind(rec *v1alpha1.DNSRecord) string {
	owner := ownerID(rec)
	claims := fmt.Sprintf("the ownership TXT records of owner %s (%s%s-*)", owner, registry.Prefix, hash.Base36(owner, 8))
	eps := rec.Status.Endpoints
	if len(eps) == 0 {
		return "whatever records " + claims + " claim"
	}
	const shown = 10
	var names []string
	for i, ep := range eps {
		if i == shown {
			names = append(names, fmt.Sprintf("and %d more", len(eps)-shown))
			break
		}
		name := ep.DNSName + " " + ep.RecordType
		if ep.SetIdentifier != "" {
			name += " set " + ep.SetIdentifier
		}
		names = append(names, name)
	}
	return "its contributions to " + strings.Join(names, ", ") + ", and " + claims
}
