package dnsrecord

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/conditions"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
	"github.com/dnspolicy/dnspolicy-controller/pkg/health"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// The record controller makes the probes of its records' addresses (the probe controller runs them).
// +kubebuilder:rbac:groups=kuadrant.io,resources=dnshealthcheckprobes,verbs=get;list;watch;create;update;patch;delete

// Reasons of the events raised when health takes a record's addresses out of the zone or back.
const (
	reasonWithdrawn = "Withdrawn"
	reasonRestored  = "Restored"
)

// probing is what a pass knows of the record's probes.
type probing struct {
	probes   map[string]health.State
	interval time.Duration
}

// probed reports whether the record's addresses are probed: it has a healthCheck and its root host
// is not a wildcard (Kuadrant probes no wildcard host: which name would it ask for?).
func probed(rec *v1alpha1.DNSRecord) bool {
	return rec.Spec.HealthCheck != nil && !strings.HasPrefix(rec.Spec.RootHost, v1alpha1.WildcardPrefix)
}

// ensureProbes makes one DNSHealthCheckProbe per leaf address of the record (Kuadrant's names,
// labels and owner), changes those whose spec is out of date, deletes those of addresses the record
// no longer has, and reads their states for the publish phase.
func (r *Reconciler) ensureProbes(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	rec := s.record
	// A backend that serves whole records (k8gb) judges health itself. A delegating record has
	// no backend here (delegation.go): its addresses are probed.
	whole := s.backend != nil && s.backend.Records != nil
	probe := probed(rec) && !whole
	have, err := r.probes(ctx, rec)
	if err != nil {
		return ctrl.Result{}, true, err
	}
	want := map[string]*v1alpha1.DNSHealthCheckProbe{}
	if probe {
		for _, p := range r.desiredProbes(rec) {
			want[p.Name] = p
		}
		// No address that can be probed (only IPv6 ones): nothing could ever pass, so the record
		// is published as if it had no healthCheck rather than never.
		probe = len(want) > 0
	}
	for name, p := range have {
		if want[name] == nil {
			if err := r.Client.Delete(ctx, p); err != nil && !apierrors.IsNotFound(err) {
				return ctrl.Result{}, true, err
			}
		}
	}
	if !probe {
		if !whole {
			conditionOrder.Remove(&rec.Status.Conditions, v1alpha1.ConditionTypeHealthy)
		}
		return ctrl.Result{}, false, nil
	}
	s.probing = &probing{probes: map[string]health.State{}, interval: probeInterval(rec.Spec.HealthCheck)}
	for name, p := range want {
		cur := have[name]
		switch {
		case cur == nil:
			if err := controllerutil.SetControllerReference(rec, p, r.Client.Scheme()); err != nil {
				return ctrl.Result{}, true, err
			}
			if err := r.Client.Create(ctx, p); err != nil && !apierrors.IsAlreadyExists(err) {
				return ctrl.Result{}, true, err
			}
			s.probing.probes[p.Spec.Address] = health.Unknown
			continue
		case !equality.Semantic.DeepEqual(cur.Spec, p.Spec):
			patch := client.MergeFrom(cur.DeepCopy())
			cur.Spec = p.Spec
			if err := r.Client.Patch(ctx, cur, patch); err != nil {
				return ctrl.Result{}, true, err
			}
			// Its status is of the old spec until the prober reports on the new one.
			s.probing.probes[p.Spec.Address] = health.Unknown
			continue
		}
		s.probing.probes[p.Spec.Address] = probeState(cur)
	}
	return ctrl.Result{}, false, nil
}

// probeWithoutZone ensures the probes of a record whose backend holds no zone for it (yet), as
// Kuadrant's dns-operator makes a record's probes before it looks for a zone: each address is
// checked, and seen to be, while the record waits for its zone. The finalizer comes first, so the
// probes go with the record (removeFinalizer deletes them). Another cluster's record is probed
// there, by its own controller.
func (r *Reconciler) probeWithoutZone(ctx context.Context, s *scope) error {
	if !probed(s.record) || s.backend.Records != nil || s.remote != nil {
		return nil
	}
	if _, _, err := r.ensureFinalizer(ctx, s); err != nil {
		return err
	}
	_, _, err := r.ensureProbes(ctx, s)
	return err
}

// probes returns the record's probes by name: those with its owner label that it controls.
func (r *Reconciler) probes(ctx context.Context, rec *v1alpha1.DNSRecord) (map[string]*v1alpha1.DNSHealthCheckProbe, error) {
	var list v1alpha1.DNSHealthCheckProbeList
	if err := r.Client.List(ctx, &list, client.InNamespace(rec.Namespace), client.MatchingLabels{v1alpha1.ProbeOwnerLabel: probeOwnerValue(rec)}); err != nil {
		return nil, err
	}
	have := map[string]*v1alpha1.DNSHealthCheckProbe{}
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], rec) {
			have[list.Items[i].Name] = &list.Items[i]
		}
	}
	return have, nil
}

// deleteProbes deletes the record's probes, as Kuadrant does when a record goes, rather than leave
// them to the garbage collector: their prober stops at once.
func (r *Reconciler) deleteProbes(ctx context.Context, rec *v1alpha1.DNSRecord) error {
	have, err := r.probes(ctx, rec)
	if err != nil {
		return err
	}
	for _, p := range have {
		if p.DeletionTimestamp == nil {
			if err := r.Client.Delete(ctx, p); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	return nil
}

// desiredProbes are the probes the record's leaf addresses need: IPv4 addresses and hostnames (the
// CRD takes no IPv6 address, as Kuadrant's) whose probe name is a valid object name.
func (r *Reconciler) desiredProbes(rec *v1alpha1.DNSRecord) []*v1alpha1.DNSHealthCheckProbe {
	hc := rec.Spec.HealthCheck
	var out []*v1alpha1.DNSHealthCheckProbe
	for _, leaf := range health.Leaves(rec.Spec.Endpoints) {
		if ip, err := netip.ParseAddr(leaf); err == nil && !ip.Is4() {
			continue
		}
		name := rec.Name + "-" + leaf
		if len(validation.IsDNS1123Subdomain(name)) > 0 {
			continue
		}
		out = append(out, &v1alpha1.DNSHealthCheckProbe{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: rec.Namespace, Labels: map[string]string{v1alpha1.ProbeOwnerLabel: probeOwnerValue(rec)}},
			Spec: v1alpha1.DNSHealthCheckProbeSpec{
				Port:                     hc.Port,
				Hostname:                 rec.Spec.RootHost,
				Address:                  leaf,
				Path:                     hc.Path,
				Protocol:                 hc.Protocol,
				Interval:                 metav1.Duration{Duration: probeInterval(hc)},
				AdditionalHeadersRef:     hc.AdditionalHeadersRef,
				FailureThreshold:         hc.FailureThreshold,
				AllowInsecureCertificate: r.InsecureHealthChecks,
			},
		})
	}
	return out
}

// probeOwnerValue is the value of the probes' owner label: the record's name, or hash8 of its UID
// when the name is longer than a label value may be (Kuadrant's rule).
func probeOwnerValue(rec *v1alpha1.DNSRecord) string {
	if len(rec.Name) > validation.LabelValueMaxLength {
		return hash.Base36(string(rec.UID), 8)
	}
	return rec.Name
}

func probeInterval(hc *v1alpha1.HealthCheckSpec) time.Duration {
	if hc.Interval == nil || hc.Interval.Duration <= 0 {
		return 5 * time.Minute
	}
	return hc.Interval.Duration
}

// probeState reads what a probe's status says: nothing yet, or a report on an older spec, is Unknown.
func probeState(p *v1alpha1.DNSHealthCheckProbe) health.State {
	switch {
	case p.Status.Healthy == nil || p.Status.ObservedGeneration < p.Generation:
		return health.Unknown
	case *p.Status.Healthy:
		return health.Healthy
	default:
		return health.Unhealthy
	}
}

// healthWish returns the wish the publish queue works out against its view of the zone (the
// statements of the host's other owners), and where the decision it made is kept.
func (r *Reconciler) healthWish(s *scope, desired []*v1alpha1.Endpoint) (func(*registry.Zone) ([]*v1alpha1.Endpoint, []*v1alpha1.Endpoint), *health.Decision) {
	rec := s.record
	owner, host := rec.Status.OwnerID, rec.Spec.RootHost
	renewal := health.Renewal(s.probing.interval)
	seen := r.tracker.Read(s.key.String(), s.backend.Account+"/"+s.zone.ID, host)
	decision := &health.Decision{}
	return func(z *registry.Zone) ([]*v1alpha1.Endpoint, []*v1alpha1.Endpoint) {
		now := time.Now()
		peers, own, ownSince := health.Peers(z, seen, owner, host, now, health.ExpiryPeriods*renewal)
		*decision = health.Decide(health.Input{
			OwnerID: owner, Host: host, Desired: desired, Probes: s.probing.probes,
			// A withdrawn owner publishes nothing but its statement, which only a publishing or
			// withdrawn owner has in the zone.
			Published: len(rec.Status.Endpoints) > 0 || own != nil, Peers: peers, Own: own, OwnSince: ownSince, Now: now, Renewal: renewal,
		})
		var named []*v1alpha1.Endpoint
		if decision.Statement != nil {
			named = append(named, decision.Statement.Record(host))
		}
		return decision.Endpoints, named
	}, decision
}

// statementNames are the owner-named records a record's passes manage: its health statement. A
// record that is not probed (any more) has its statement deleted.
func statementNames(rec *v1alpha1.DNSRecord) []string {
	if strings.HasPrefix(rec.Spec.RootHost, v1alpha1.WildcardPrefix) {
		return nil
	}
	return []string{health.RecordName(ownerID(rec), rec.Spec.RootHost)}
}

// reportHealth writes the Healthy condition, with Kuadrant's reasons and messages, raises an event
// when the record is withdrawn for health or restored, and reports whether it publishes nothing
// because of health (Ready says so then).
func (r *Reconciler) reportHealth(s *scope, d *health.Decision) (notPublishing bool) {
	rec := s.record
	notHealthy := fmt.Sprintf(v1alpha1.MessageNotHealthy, fmt.Sprint(d.NotHealthy))
	c := metav1.Condition{Type: v1alpha1.ConditionTypeHealthy, Status: metav1.ConditionFalse}
	switch {
	case d.Reported == 0:
		c.Reason, c.Message = v1alpha1.ReasonHealthChecksFailed, v1alpha1.MessageProbesCreating
	case len(d.NotHealthy) == 0:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1alpha1.ReasonAllChecksPassed, v1alpha1.MessageAllChecksPassed
	case d.AnyHealthy:
		c.Reason, c.Message = v1alpha1.ReasonSomeChecksPassed, notHealthy
	default:
		c.Reason, c.Message = v1alpha1.ReasonHealthChecksFailed, notHealthy
	}
	if d.Withdrawn {
		c.Message += fmt.Sprintf("; every address withdrawn while owner %s publishes healthy addresses", d.HealthyPeer)
	}
	prev := conditions.Get(rec.Status.Conditions, v1alpha1.ConditionTypeHealthy)
	wasWithdrawn := prev != nil && strings.Contains(prev.Message, "; every address withdrawn")
	conditionOrder.Set(&rec.Status.Conditions, rec.Generation, c)
	switch {
	case d.Withdrawn && !wasWithdrawn:
		r.Recorder.Eventf(rec, nil, corev1.EventTypeWarning, reasonWithdrawn, "Publish",
			"no address of this owner passes its health check and owner %s publishes healthy addresses: withdrew %v", d.HealthyPeer, d.NotHealthy)
	case !d.Withdrawn && wasWithdrawn:
		r.Recorder.Eventf(rec, nil, corev1.EventTypeNormal, reasonRestored, "Publish", "publishing this owner's addresses again: %s", c.Message)
	}
	return d.NotPublishing || d.Withdrawn
}
