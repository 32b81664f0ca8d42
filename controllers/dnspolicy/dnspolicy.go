// Package dnspolicy reconciles DNSPolicies: it turns the listeners of the Gateway a policy targets
// into DNSRecords, one per listener hostname, which the record controller publishes.
//
// Work is keyed by Gateway (namespace and name), not by policy: which policy publishes a listener
// depends on every policy that targets the Gateway, and the Gateway's status names them all. A key
// exists whether or not the Gateway does, so a policy targeting a missing Gateway is judged too.
//
// Each pass: load the Gateway, the policies naming it and the namespace's DNSRecords; judge (pure:
// acceptance, which listener each policy publishes, the desired records); publish (create, update in
// place, adopt, delete records); and, deferred, write every policy's status and the Gateway's once.
package dnspolicy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	gatewayapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnsv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/internal/pass"
	"github.com/dnspolicy/dnspolicy-controller/pkg/conditions"
)

// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways,verbs=get;list;watch
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kuadrant.io,resources=dnspolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=kuadrant.io,resources=dnspolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kuadrant.io,resources=dnsrecords,verbs=get;list;watch;create;update;patch;delete
// The cluster ID (the UID of Namespace kube-system), which cmd reads for this controller.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Options tune the timing of the controller.
type Options struct {
	// MinBackoff and MaxBackoff bound the per-Gateway exponential backoff after API errors.
	MinBackoff, MaxBackoff time.Duration
	// GatewayAPIPoll is how often the controller looks for the Gateway API CRDs while they are not
	// installed.
	GatewayAPIPoll time.Duration
}

// DefaultOptions are the production timings.
func DefaultOptions() Options {
	return Options{MinBackoff: time.Second, MaxBackoff: 5 * time.Minute, GatewayAPIPoll: 5 * time.Second}
}

// Reconciler reconciles DNSPolicies, keyed by the Gateway they target.
type Reconciler struct {
	Client client.Client
	// ClusterID returns this cluster's ID, the UID of Namespace kube-system, which names its
	// load-balanced leaves. cmd reads it once for every controller that needs it; it is asked only
	// when a policy load-balances, and a failure is said in that policy's status and asked again
	// at the next pass.
	ClusterID func(context.Context) (string, error)
	Recorder  recorder.EventRecorder
	Options   Options

	// gatewayAPI is set once the Gateway API CRDs are installed and the Gateway watch runs.
	gatewayAPI atomic.Bool

	// backoff spaces the passes of a Gateway key that keeps failing.
	backoff *pass.Backoff
}

// scope is what one pass knows.
type scope struct {
	key        types.NamespacedName
	gatewayAPI bool
	gateway    *gatewayapiv1.Gateway
	policies   []*dnsv1.DNSPolicy
	records    []v1alpha1.DNSRecord
	clusterID  string
	clusterErr error
	verdicts   []*verdict
	// judged: the verdicts are in, and the pass writes the statuses they make.
	judged bool
}

// Reconcile runs one pass for one Gateway key. Errors become a backoff, not a return value: the
// workqueue's own retry would ignore the per-key backoff and log a stack trace for a conflict.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	start := time.Now()
	defer func() { reconcileDuration.Observe(time.Since(start).Seconds()) }()
	if err := r.run(ctx, &scope{key: req.NamespacedName}); err != nil {
		d := pass.Jitter(r.backoff.When(req))
		logger := log.FromContext(ctx)
		if !apierrors.IsConflict(err) {
			logger.Info("pass failed", "error", err.Error(), "retryAfter", d.String())
		} else {
			logger.V(1).Info("pass met a concurrent write", "error", err.Error(), "retryAfter", d.String())
		}
		return ctrl.Result{RequeueAfter: d}, nil
	}
	r.backoff.Forget(req)
	return ctrl.Result{}, nil
}

// run runs the phases of a pass, and writes the status of what it judged once, deferred, whether
// or not publishing succeeded: a policy says why its records are not what it wants.
func (r *Reconciler) run(ctx context.Context, s *scope) (err error) {
	defer func() {
		if s.judged {
			err = errors.Join(err, r.writeStatus(ctx, s))
		}
	}()
	_, err = pass.Run(ctx, s, r.load, r.judge, r.publish)
	return err
}

// load reads what the pass judges, from the cache (the cluster ID excepted).
func (r *Reconciler) load(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	key := s.key
	s.gatewayAPI = r.gatewayAPI.Load()
	policies := &dnsv1.DNSPolicyList{}
	if err := r.Client.List(ctx, policies, client.InNamespace(key.Namespace)); err != nil {
		return pass.Done(ctrl.Result{}, err)
	}
	for i := range policies.Items {
		p := &policies.Items[i]
		// A policy being deleted publishes nothing; its records go with it.
		if p.DeletionTimestamp == nil && string(p.Spec.TargetRef.Name) == key.Name {
			s.policies = append(s.policies, p)
		}
	}
	if !s.gatewayAPI {
		return pass.Continue()
	}
	gw := &gatewayapiv1.Gateway{}
	switch err := r.Client.Get(ctx, key, gw); {
	case err == nil:
		s.gateway = gw
	case !apierrors.IsNotFound(err):
		return pass.Done(ctrl.Result{}, err)
	}
	records := &v1alpha1.DNSRecordList{}
	if err := r.Client.List(ctx, records, client.InNamespace(key.Namespace)); err != nil {
		return pass.Done(ctrl.Result{}, err)
	}
	s.records = records.Items
	if slices.ContainsFunc(s.policies, func(p *dnsv1.DNSPolicy) bool { return p.Spec.LoadBalancing != nil }) {
		s.clusterID, s.clusterErr = r.ClusterID(ctx)
	}
	return pass.Continue()
}

// judge decides, purely, what each policy publishes (judge.go).
func (r *Reconciler) judge(_ context.Context, s *scope) (ctrl.Result, bool, error) {
	s.verdicts = judge(judgeInput{
		gatewayAPI: s.gatewayAPI, name: s.key.Name, gateway: s.gateway, policies: s.policies,
		clusterID: s.clusterID, clusterIDErr: s.clusterErr,
	})
	s.judged = true
	for _, p := range s.policies {
		policyPasses.WithLabelValues(p.Namespace, p.Name).Inc()
	}
	return pass.Continue()
}

// publish makes the Gateway's DNSRecords what the verdicts want: records nobody wants any more are
// deleted, desired ones created or updated in place (a new owner adopts a record rather than
// replacing it, so its hostname never leaves the zone). Records kept by an invalid policy stay as
// they are.
func (r *Reconciler) publish(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	if !s.gatewayAPI {
		return pass.Continue()
	}
	byName := map[string]*v1alpha1.DNSRecord{}
	for i := range s.records {
		byName[s.records[i].Name] = &s.records[i]
	}
	desired := map[string]*listenerPlan{}
	type keep struct {
		policy types.UID
		plan   *listenerPlan
	}
	kept := map[string]keep{}
	for _, v := range s.verdicts {
		for _, lp := range v.listeners {
			name := recordName(s.key.Name, lp.listener)
			switch {
			case lp.record != nil:
				desired[name] = lp
			case lp.keep:
				kept[name] = keep{v.policy.UID, lp}
			}
		}
	}

	var errs []error
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		rec := byName[name]
		owner := policyOf(rec)
		if rec.Labels[GatewayLabel] != s.key.Name || owner == nil || desired[name] != nil {
			continue
		}
		if k, ok := kept[name]; ok && owner.UID == k.policy {
			k.plan.current = rec
			continue
		}
		errs = append(errs, r.deleteRecord(ctx, rec))
	}
	for _, name := range slices.Sorted(maps.Keys(desired)) {
		errs = append(errs, r.ensureRecord(ctx, s.key.Name, desired[name], byName[name]))
	}
	if err := errors.Join(errs...); err != nil {
		return pass.Done(ctrl.Result{}, err)
	}
	return pass.Continue()
}

// ensureRecord creates or updates one listener's record, or says in the plan why it cannot.
func (r *Reconciler) ensureRecord(ctx context.Context, gateway string, lp *listenerPlan, existing *v1alpha1.DNSRecord) error {
	want := lp.record
	if existing == nil {
		if err := r.Client.Create(ctx, want); err != nil {
			return fmt.Errorf("creating DNSRecord %s: %w", want.Name, err)
		}
		lp.current = want
		return nil
	}
	switch other := existing.Labels[GatewayLabel]; {
	case existing.DeletionTimestamp != nil:
		lp.problem = fmt.Sprintf("listener %s: waiting for the previous DNSRecord %s to leave the zone", lp.listener, existing.Name)
		return nil
	case policyOf(existing) == nil:
		lp.problem = fmt.Sprintf("listener %s: DNSRecord %s exists and is not controlled by a DNSPolicy; delete it, or rename the Gateway or the listener", lp.listener, existing.Name)
		return nil
	case other != "" && other != gateway:
		lp.problem = fmt.Sprintf("listener %s: DNSRecord %s already publishes a listener of Gateway %s; rename this Gateway or the listener", lp.listener, existing.Name, other)
		return nil
	case existing.Spec.RootHost != want.Spec.RootHost:
		// rootHost is immutable: the record is replaced, and the new one created once the old one
		// has left the zone.
		lp.problem = fmt.Sprintf("listener %s: replacing DNSRecord %s because its hostname changed from %s to %s", lp.listener, existing.Name, existing.Spec.RootHost, want.Spec.RootHost)
		return r.deleteRecord(ctx, existing)
	case existing.Spec.Delegate != want.Spec.Delegate:
		// delegate is immutable too: a record must not publish through a provider for a policy
		// that delegates, nor wait for a primary for one that does not.
		lp.problem = fmt.Sprintf("listener %s: replacing DNSRecord %s because the policy's delegate is %t and the record's %t", lp.listener, existing.Name, want.Spec.Delegate, existing.Spec.Delegate)
		return r.deleteRecord(ctx, existing)
	}

	updated := existing.DeepCopy()
	// The API refuses to change it once set; a record written by another controller may carry one.
	want.Spec.OwnerID = existing.Spec.OwnerID
	updated.Spec = want.Spec
	if updated.Labels == nil {
		updated.Labels = map[string]string{}
	}
	maps.Copy(updated.Labels, want.Labels)
	updated.OwnerReferences = withOwners(existing.OwnerReferences, want.OwnerReferences)
	if equality.Semantic.DeepEqual(existing, updated) {
		lp.current = existing
		return nil
	}
	if err := r.Client.Patch(ctx, updated, client.MergeFrom(existing)); err != nil {
		return fmt.Errorf("updating DNSRecord %s: %w", existing.Name, err)
	}
	lp.current = updated
	return nil
}

func (r *Reconciler) deleteRecord(ctx context.Context, rec *v1alpha1.DNSRecord) error {
	if rec.DeletionTimestamp != nil {
		return nil
	}
	// The UID precondition keeps a stale cache from deleting a record created since under the same name.
	err := r.Client.Delete(ctx, rec, client.Preconditions{UID: &rec.UID})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting DNSRecord %s: %w", rec.Name, err)
	}
	return nil
}

// writeStatus writes each policy's status and the Gateway's, each only when it changed, and records
// an event for every transition of Accepted or Enforced.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) error {
	var errs []error
	for _, v := range s.verdicts {
		p := v.policy
		st := policyStatus(v, p.Status)
		if equality.Semantic.DeepEqual(st, p.Status) {
			continue
		}
		before := p.DeepCopy()
		p.Status = st
		if err := r.Client.Status().Patch(ctx, p, client.MergeFrom(before)); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("DNSPolicy %s status: %w", p.Name, err))
			}
			continue
		}
		r.recordTransition(p, before.Status.Conditions, ConditionAccepted, "Accept")
		r.recordTransition(p, before.Status.Conditions, ConditionEnforced, "Enforce")
		r.recordTransition(p, before.Status.Conditions, ConditionSubResourcesHealthy, "Probe")
	}
	if s.gateway != nil {
		gw := s.gateway
		st := gatewayStatus(gw, s.verdicts)
		if !equality.Semantic.DeepEqual(st, gw.Status) {
			before := gw.DeepCopy()
			gw.Status = st
			// A merge patch replaces the condition and listener lists whole, so it must not
			// overwrite what the Gateway's implementation wrote since our read.
			if err := r.Client.Status().Patch(ctx, gw, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("Gateway %s status: %w", gw.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// recordTransition records an event when a condition appears, or changes status or reason.
func (r *Reconciler) recordTransition(p *dnsv1.DNSPolicy, before []metav1.Condition, typ, action string) {
	now := conditions.Get(p.Status.Conditions, typ)
	if now == nil {
		return
	}
	if was := conditions.Get(before, typ); was != nil && was.Status == now.Status && was.Reason == now.Reason {
		return
	}
	eventType := corev1.EventTypeNormal
	if now.Status != metav1.ConditionTrue {
		eventType = corev1.EventTypeWarning
	}
	r.Recorder.Eventf(p, nil, eventType, now.Reason, action, "%s", now.Message)
}

// policyOf returns the record's controller reference when it is a DNSPolicy.
func policyOf(rec *v1alpha1.DNSRecord) *metav1.OwnerReference {
	ref := metav1.GetControllerOf(rec)
	if ref == nil || ref.Kind != policyKind || ref.APIVersion != dnsv1.GroupVersion.String() {
		return nil
	}
	return ref
}

// withOwners puts the desired owner references first, replacing the DNSPolicy controller reference,
// and keeps every other owner.
func withOwners(refs, desired []metav1.OwnerReference) []metav1.OwnerReference {
	out := slices.Clone(desired)
	for _, ref := range refs {
		isPolicyController := ref.Controller != nil && *ref.Controller && ref.Kind == policyKind && ref.APIVersion == dnsv1.GroupVersion.String()
		if !isPolicyController && !slices.ContainsFunc(desired, func(d metav1.OwnerReference) bool { return d.UID == ref.UID }) {
			out = append(out, ref)
		}
	}
	return out
}
