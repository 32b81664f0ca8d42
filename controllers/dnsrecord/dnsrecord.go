// Package dnsrecord reconciles DNSRecords: it publishes each owner's endpoints into the zone its
// provider Secret reaches, shared safely with every other owner of the zone.
//
// The controller is thin. Each pass: fetch the record; on deletion withdraw this owner's
// contributions and drop the finalizer; otherwise ensure the finalizer, work out the owner ID, the
// provider and the zone, hand the desired endpoints to the zone's publish queue (pkg/publish: plan,
// ownership check, batched apply, validation read), and write the status once at the end.
package dnsrecord

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
	"github.com/dnspolicy/dnspolicy-controller/pkg/plan"
	"github.com/dnspolicy/dnspolicy-controller/pkg/publish"
	"github.com/dnspolicy/dnspolicy-controller/pkg/zone"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// The record controller, and the backends it builds (endpoint and coredns keep zones in DNSRecords).
// +kubebuilder:rbac:groups=kuadrant.io,resources=dnsrecords,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=kuadrant.io,resources=dnsrecords/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kuadrant.io,resources=dnsrecords/finalizers,verbs=update
// Secrets: get is all a record with providerRef needs. The namespace's default-provider lookup
// (list) and the Secret watch (list, watch) are granted per namespace by
// config/rbac/base/provider_secrets_role.yaml, never cluster-wide (config/rbac/README.md).
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Condition messages Kuadrant's tooling matches verbatim (DESIGN 4b).
const (
	msgProviderSuccess    = "Provider ensured the dns record"
	msgAwaitingValidation = "Awaiting validation"
	msgNoZone             = "Unable to find suitable zone in provider: %s"
	msgProviderError      = "The DNS provider failed to ensure the record: %s"
)

// ReasonAuthoritative marks an authoritative record: a zone the embedded DNS server serves.
const (
	ReasonAuthoritative = "Authoritative"
	msgAuthoritative    = "Authoritative record: served by the embedded DNS server, not published to a provider"
)

// Reasons beyond Kuadrant's.
const (
	ReasonConflicted            = "Conflicted"
	ReasonProviderSecretMissing = "ProviderSecretMissing"
	ReasonUnsupportedProvider   = "UnsupportedProvider"
)

// Options tune the timing of the controller.
type Options struct {
	// MinRecheck and MaxRecheck bound the steady-state re-check: it starts at MinRecheck after a
	// write and doubles on every quiet pass up to MaxRecheck, with ±10% jitter so records created
	// together do not re-check together.
	MinRecheck, MaxRecheck time.Duration
	// MinBackoff and MaxBackoff bound the per-record exponential backoff after errors.
	MinBackoff, MaxBackoff time.Duration
	// ValidationRetry is how soon a record whose write was not yet visible is checked again.
	ValidationRetry time.Duration
	// OrphanGrace is how long a deleted record whose provider Secret is gone waits for the Secret to
	// come back before it is released without cleaning the zone.
	OrphanGrace time.Duration
	// ZoneListMaxAge bounds how long a provider's list of zones is reused.
	ZoneListMaxAge time.Duration
	// MaxConcurrentReconciles lets many records wait on one zone's queue at once, which is what lets
	// the queue batch them.
	MaxConcurrentReconciles int
	// NoSecretWatch leaves out the watch of Secrets' metadata, for a ServiceAccount that may only
	// get Secrets (config/rbac/README.md): a changed provider Secret is used at the next pass.
	NoSecretWatch bool
}

// DefaultOptions are the production timings.
func DefaultOptions() Options {
	return Options{
		MinRecheck: 30 * time.Second, MaxRecheck: 15 * time.Minute,
		MinBackoff: time.Second, MaxBackoff: 5 * time.Minute,
		ValidationRetry: time.Second, OrphanGrace: 5 * time.Minute,
		ZoneListMaxAge: time.Minute, MaxConcurrentReconciles: 64,
	}
}

// Reconciler reconciles DNSRecords.
type Reconciler struct {
	Client client.Client
	// SecretReader reads provider Secrets straight from the API server: no cluster-wide Secret cache.
	SecretReader client.Reader
	Factory      *providers.Factory
	Publisher    *publish.Publisher
	Recorder     recorder.EventRecorder
	Options      Options

	mu        sync.Mutex
	failures  map[types.NamespacedName]int
	providers map[string]providerEntry
	zones     map[string]*zoneList
	reasons   reasons
}

type providerEntry struct {
	version   string
	provider  providers.Provider
	zoneScope string
}

// zoneScoper is implemented by backends whose Secret selects where zones are listed (a project, a
// resource group): a record whose host is in none of the zones is told where they were looked for.
type zoneScoper interface {
	// ZoneScope names where the zones are listed and the Secret key that selects it.
	ZoneScope() string
}

type zoneList struct {
	mu sync.Mutex
	// at is when zones was listed; zero until the first listing succeeds (zones may be empty).
	at    time.Time
	zones []providers.Zone
}

// zoneRelistAfter is how old a zone list must be before a miss lists again: a zone created since is
// found within seconds, and the records of one Secret that miss together (a policy's records,
// retrying on one backoff schedule) share one listing instead of each making its own.
const zoneRelistAfter = 2 * time.Second

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.failures = map[types.NamespacedName]int{}
	r.providers = map[string]providerEntry{}
	r.zones = map[string]*zoneList{}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("dnsrecord").
		// Status writes do not change the generation, so our own status updates never trigger a pass.
		For(&v1alpha1.DNSRecord{}, builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	if !r.Options.NoSecretWatch {
		// A fixed or rotated provider Secret takes effect at once rather than at the records' next
		// backoff retry (up to MaxBackoff away). Only metadata is cached: the controller never
		// holds other Secrets' contents, and reads its own when a pass needs them.
		b = b.Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.recordsOfSecret), builder.OnlyMetadata)
	}
	return b.WithOptions(controller.Options{MaxConcurrentReconciles: r.Options.MaxConcurrentReconciles}).
		Complete(r)
}

// recordsOfSecret maps a Secret to the records of its namespace that publish with it: those naming
// it in providerRef, and, when it is labelled as the namespace's default provider, those without one.
func (r *Reconciler) recordsOfSecret(ctx context.Context, secret client.Object) []reconcile.Request {
	list := &v1alpha1.DNSRecordList{}
	if err := r.Client.List(ctx, list, client.InNamespace(secret.GetNamespace())); err != nil {
		return nil
	}
	isDefault := secret.GetLabels()[v1alpha1.DefaultProviderLabel] == "true"
	var reqs []reconcile.Request
	for i := range list.Items {
		rec := &list.Items[i]
		if ref := rec.Spec.ProviderRef; (ref != nil && ref.Name == secret.GetName()) || (ref == nil && isDefault) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(rec)})
		}
	}
	return reqs
}

// scope is what one pass knows.
type scope struct {
	record   *v1alpha1.DNSRecord
	secret   *corev1.Secret
	provider providers.Provider
	// zoneScope is the backend's ZoneScope, if it has one.
	zoneScope string
	account   string
	zone      providers.Zone
}

// Reconcile runs one pass and writes the status once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	start := time.Now()
	defer func() { reconcileDuration.Observe(time.Since(start).Seconds()) }()
	recordPasses.WithLabelValues(req.Namespace, req.Name).Inc()

	rec := &v1alpha1.DNSRecord{}
	if err := r.Client.Get(ctx, req.NamespacedName, rec); err != nil {
		if apierrors.IsNotFound(err) {
			r.reasons.set(req.NamespacedName, "")
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := rec.DeepCopy()
	s := &scope{record: rec}
	res, err := r.reconcile(ctx, s)
	if err != nil {
		// Errors become conditions and a backoff, not a return value: the workqueue's own retry
		// would ignore the per-record backoff and log a stack trace for a wrong Secret key.
		log.FromContext(ctx).V(1).Info("reconcile failed", "error", err.Error())
	}
	if rec.DeletionTimestamp == nil || controllerutil.ContainsFinalizer(rec, v1alpha1.RecordFinalizer) {
		rec.Status.ObservedGeneration = rec.Generation
		if !equality.Semantic.DeepEqual(before.Status, rec.Status) {
			if perr := r.Client.Status().Patch(ctx, rec, client.MergeFrom(before)); perr != nil && !apierrors.IsNotFound(perr) {
				return ctrl.Result{}, perr
			}
		}
	}
	if c := meta.FindStatusCondition(rec.Status.Conditions, v1alpha1.ConditionTypeReady); c != nil {
		r.reasons.set(req.NamespacedName, c.Reason)
	}
	return res, nil
}

func (r *Reconciler) reconcile(ctx context.Context, s *scope) (ctrl.Result, error) {
	rec := s.record
	// An authoritative record is a zone (DESIGN 4b) that DNS servers read from the API server; the
	// coredns backend writes it. Publishing it would write a zone into a zone, so it only gets a
	// status. A finalizer it carries (Kuadrant's dns-operator adds the same one) guards nothing here.
	if rec.Labels[v1alpha1.AuthoritativeRecordLabel] == "true" {
		if rec.DeletionTimestamp != nil {
			return r.removeFinalizer(ctx, s)
		}
		r.setReady(s, metav1.ConditionTrue, ReasonAuthoritative, msgAuthoritative)
		return ctrl.Result{}, nil
	}
	if rec.DeletionTimestamp != nil {
		return r.delete(ctx, s)
	}
	rec.Status.OwnerID = ownerID(rec)
	if err := validate(rec); err != nil {
		r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonValidationError, err.Error())
		return r.backoff(s, err)
	}
	if res, err, done := r.connect(ctx, s); done {
		return res, err
	}
	// The finalizer goes on before anything is written to the zone, in one patch with the provider
	// label (Kuadrant's tooling selects records by it).
	if !controllerutil.ContainsFinalizer(rec, v1alpha1.RecordFinalizer) || rec.Labels[v1alpha1.ProviderNameLabel] != s.provider.Name() {
		patch := client.MergeFrom(rec.DeepCopy())
		controllerutil.AddFinalizer(rec, v1alpha1.RecordFinalizer)
		if rec.Labels == nil {
			rec.Labels = map[string]string{}
		}
		rec.Labels[v1alpha1.ProviderNameLabel] = s.provider.Name()
		// The patch response overwrites the whole object, status included; keep what this pass
		// has worked out so far.
		status := rec.Status.DeepCopy()
		if err := r.Client.Patch(ctx, rec, patch); err != nil {
			return r.backoff(s, err)
		}
		rec.Status = *status
	}
	desired, err := s.provider.AdjustEndpoints(copyEndpoints(rec.Spec.Endpoints))
	if err != nil {
		r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonValidationError, err.Error())
		return r.backoff(s, err)
	}
	out, err := r.Publisher.Publish(ctx, s.provider, s.account, s.zone, publish.Request{
		OwnerID: rec.Status.OwnerID, Previous: rec.Status.Endpoints, Desired: desired,
	})
	if err != nil {
		r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonProviderError, fmt.Sprintf(msgProviderError, stableMessage(err)))
		return r.backoff(s, err)
	}
	r.recordOutcome(s, out)
	switch {
	case out.Wrote && !out.Validated:
		r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonAwaitingValidation, msgAwaitingValidation)
		return ctrl.Result{RequeueAfter: r.Options.ValidationRetry}, nil
	case len(out.Plan.Conflicts) > 0:
		r.setReady(s, metav1.ConditionFalse, ReasonConflicted, conflictMessage(out.Plan.Conflicts))
	case !out.Validated:
		// Nothing to write, yet the zone does not hold what we publish: it changed under the cached
		// view. Re-read soon rather than report success.
		r.Publisher.Forget(s.account, s.zone)
		r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonAwaitingValidation, msgAwaitingValidation)
		return ctrl.Result{RequeueAfter: r.Options.ValidationRetry}, nil
	default:
		r.setReady(s, metav1.ConditionTrue, v1alpha1.ReasonProviderSuccess, msgProviderSuccess)
	}
	return r.recheck(s, out.Wrote), nil
}

// connect finds the Secret, the provider and the zone. done means the pass ends here.
func (r *Reconciler) connect(ctx context.Context, s *scope) (ctrl.Result, error, bool) {
	rec := s.record
	secret, err := r.providerSecret(ctx, rec)
	if err != nil {
		reason := ReasonProviderSecretMissing
		if !errors.Is(err, errSecretMissing) {
			reason = v1alpha1.ReasonProviderError
		}
		r.setReady(s, metav1.ConditionFalse, reason, err.Error())
		res, err := r.backoff(s, err)
		return res, err, true
	}
	s.secret = secret
	rec.Status.ProviderRef = v1alpha1.ProviderRef{Name: secret.Name}
	if s.provider, s.zoneScope, err = r.provider(ctx, secret); err != nil {
		r.setReady(s, metav1.ConditionFalse, ReasonUnsupportedProvider, err.Error())
		res, err := r.backoff(s, err)
		return res, err, true
	}
	s.account = secret.Namespace + "/" + secret.Name + "/" + string(secret.UID)
	if s.zone, err = r.chooseZone(ctx, s); err != nil {
		r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonDNSProviderError, fmt.Sprintf(msgNoZone, zoneProblem(s, err)))
		res, err := r.backoff(s, err)
		return res, err, true
	}
	rec.Status.ZoneID, rec.Status.ZoneDomainName = s.zone.ID, s.zone.DNSName
	return ctrl.Result{}, nil, false
}

// delete withdraws this owner's contributions from the zone, then releases the record.
func (r *Reconciler) delete(ctx context.Context, s *scope) (ctrl.Result, error) {
	rec := s.record
	if !controllerutil.ContainsFinalizer(rec, v1alpha1.RecordFinalizer) {
		return ctrl.Result{}, nil
	}
	if rec.Status.ZoneID != "" && len(rec.Status.Endpoints) > 0 {
		if res, err, done := r.connect(ctx, s); done {
			if errors.Is(err, errSecretMissing) && time.Since(rec.DeletionTimestamp.Time) > r.Options.OrphanGrace {
				// Without credentials the zone cannot be reached; holding the record forever helps
				// nobody. Its records stay in the zone until another owner's lease check or a human
				// removes them, which the event says.
				r.Recorder.Eventf(rec, nil, corev1.EventTypeWarning, ReasonProviderSecretMissing, "Release",
					"released after %s without its provider Secret; its records may remain in zone %s", r.Options.OrphanGrace, rec.Status.ZoneDomainName)
				return r.removeFinalizer(ctx, s)
			}
			return res, err
		}
		out, err := r.Publisher.Publish(ctx, s.provider, s.account, s.zone, publish.Request{
			OwnerID: rec.Status.OwnerID, Previous: rec.Status.Endpoints,
		})
		if err != nil {
			r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonProviderError, fmt.Sprintf(msgProviderError, stableMessage(err)))
			return r.backoff(s, err)
		}
		if !out.Validated {
			return ctrl.Result{RequeueAfter: r.Options.ValidationRetry}, nil
		}
	}
	return r.removeFinalizer(ctx, s)
}

func (r *Reconciler) removeFinalizer(ctx context.Context, s *scope) (ctrl.Result, error) {
	patch := client.MergeFrom(s.record.DeepCopy())
	controllerutil.RemoveFinalizer(s.record, v1alpha1.RecordFinalizer)
	if err := r.Client.Patch(ctx, s.record, patch); err != nil && !apierrors.IsNotFound(err) {
		return r.backoff(s, err)
	}
	r.forget(client.ObjectKeyFromObject(s.record))
	return ctrl.Result{}, nil
}

var errSecretMissing = errors.New("provider secret missing")

// providerSecret reads the record's provider Secret: spec.providerRef, else the one Secret of the
// namespace labelled as default provider. Errors name the namespace and Secret, never content.
func (r *Reconciler) providerSecret(ctx context.Context, rec *v1alpha1.DNSRecord) (*corev1.Secret, error) {
	if rec.Spec.ProviderRef != nil {
		s := &corev1.Secret{}
		err := r.SecretReader.Get(ctx, client.ObjectKey{Namespace: rec.Namespace, Name: rec.Spec.ProviderRef.Name}, s)
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: secret %s/%s not found", errSecretMissing, rec.Namespace, rec.Spec.ProviderRef.Name)
		}
		return s, err
	}
	list := &corev1.SecretList{}
	if err := r.SecretReader.List(ctx, list, client.InNamespace(rec.Namespace), client.MatchingLabels{v1alpha1.DefaultProviderLabel: "true"}); err != nil {
		return nil, err
	}
	switch len(list.Items) {
	case 0:
		return nil, fmt.Errorf("%w: no providerRef and no secret labelled %s=true in namespace %s", errSecretMissing, v1alpha1.DefaultProviderLabel, rec.Namespace)
	case 1:
		return &list.Items[0], nil
	default:
		names := make([]string, len(list.Items))
		for i := range list.Items {
			names[i] = list.Items[i].Name
		}
		sort.Strings(names)
		return nil, fmt.Errorf("%w: %d secrets labelled %s=true in namespace %s (%s); label exactly one or set providerRef",
			errSecretMissing, len(names), v1alpha1.DefaultProviderLabel, rec.Namespace, strings.Join(names, ", "))
	}
}

// provider builds the backend of a Secret once per Secret version, and returns its zone scope.
func (r *Reconciler) provider(ctx context.Context, secret *corev1.Secret) (providers.Provider, string, error) {
	key := string(secret.UID)
	r.mu.Lock()
	e, ok := r.providers[key]
	r.mu.Unlock()
	if ok && e.version == secret.ResourceVersion {
		return e.provider, e.zoneScope, nil
	}
	p, err := r.Factory.New(ctx, secret, providers.Env{Client: r.Client, Namespace: secret.Namespace})
	if err != nil {
		return nil, "", err
	}
	e = providerEntry{version: secret.ResourceVersion}
	// The instrumented wrapper has only the Provider methods.
	if zs, ok := p.(zoneScoper); ok {
		e.zoneScope = zs.ZoneScope()
	}
	e.provider = providers.Instrument(p)
	r.mu.Lock()
	r.providers[key] = e
	r.mu.Unlock()
	return e.provider, e.zoneScope, nil
}

// chooseZone picks the zone, from a zone list reused for ZoneListMaxAge. A miss re-lists once if the
// list is older than zoneRelistAfter: the zone may have been created since.
func (r *Reconciler) chooseZone(ctx context.Context, s *scope) (providers.Zone, error) {
	for attempt := 0; ; attempt++ {
		zones, err := r.zoneList(ctx, s, attempt > 0)
		if err != nil {
			return providers.Zone{}, err
		}
		z, err := zone.Choose(s.record.Spec.RootHost, zones, s.provider.Capabilities(), s.record.Status.ZoneID)
		if err == nil || attempt > 0 || !errors.Is(err, zone.ErrNoZone) {
			return z, err
		}
	}
}

// zoneList lists the provider's zones, at most once per ZoneListMaxAge per Secret version, or per
// zoneRelistAfter when refresh asks for a newer list. Records of one Secret wait for one listing
// instead of each making their own.
func (r *Reconciler) zoneList(ctx context.Context, s *scope, refresh bool) ([]providers.Zone, error) {
	key := s.account + "/" + s.secret.ResourceVersion
	r.mu.Lock()
	l, ok := r.zones[key]
	if !ok {
		l = &zoneList{}
		r.zones[key] = l
	}
	r.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	maxAge := r.Options.ZoneListMaxAge
	if refresh {
		maxAge = min(maxAge, zoneRelistAfter)
	}
	if !l.at.IsZero() && time.Since(l.at) < maxAge {
		return l.zones, nil
	}
	zones, err := s.provider.Zones(ctx)
	if err != nil {
		return nil, err
	}
	l.at, l.zones = time.Now(), zones
	return zones, nil
}

func (r *Reconciler) recordOutcome(s *scope, out publish.Outcome) {
	rec := s.record
	rec.Status.Endpoints = out.Plan.Published
	rec.Status.DomainOwners = out.Plan.Owners
	if out.Wrote {
		rec.Status.WriteCounter++
		recordWrites.WithLabelValues(rec.Namespace, rec.Name).Inc()
	} else {
		rec.Status.WriteCounter = 0
	}
	for _, c := range out.Plan.Conflicts {
		conflicts.WithLabelValues(c.Field).Inc()
	}
	if len(out.Plan.Conflicts) > 0 && !isConflicted(rec) {
		r.Recorder.Eventf(rec, nil, corev1.EventTypeWarning, ReasonConflicted, "Publish", "%s", conflictMessage(out.Plan.Conflicts))
	}
	r.mu.Lock()
	delete(r.failures, client.ObjectKeyFromObject(rec))
	r.mu.Unlock()
}

func isConflicted(rec *v1alpha1.DNSRecord) bool {
	c := meta.FindStatusCondition(rec.Status.Conditions, v1alpha1.ConditionTypeReady)
	return c != nil && c.Reason == ReasonConflicted
}

func (r *Reconciler) setReady(s *scope, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&s.record.Status.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionTypeReady, Status: status, Reason: reason, Message: message,
		ObservedGeneration: s.record.Generation,
	})
}

// backoff schedules the next attempt of a failing record: MinBackoff doubling per consecutive failure
// up to MaxBackoff, with jitter. The error is returned for logging only.
func (r *Reconciler) backoff(s *scope, err error) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(s.record)
	r.mu.Lock()
	n := r.failures[key]
	r.failures[key] = n + 1
	r.mu.Unlock()
	d := r.Options.MinBackoff << min(n, 30)
	if d <= 0 || d > r.Options.MaxBackoff {
		d = r.Options.MaxBackoff
	}
	return ctrl.Result{RequeueAfter: jitter(d)}, err
}

// recheck schedules the steady-state check: MinRecheck after a write, then doubling on quiet passes.
func (r *Reconciler) recheck(s *scope, wrote bool) ctrl.Result {
	next := r.Options.MinRecheck
	if prev, err := time.ParseDuration(s.record.Status.ValidFor); err == nil && !wrote {
		next = min(2*prev, r.Options.MaxRecheck)
	}
	next = max(next, r.Options.MinRecheck)
	s.record.Status.ValidFor = next.String()
	return ctrl.Result{RequeueAfter: jitter(next)}
}

func (r *Reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	delete(r.failures, key)
	r.mu.Unlock()
}

func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.9 + 0.2*rand.Float64()))
}

// ownerID is spec.ownerID, else hash8 of the UID (Kuadrant's rule).
func ownerID(rec *v1alpha1.DNSRecord) string {
	if rec.Spec.OwnerID != "" {
		return rec.Spec.OwnerID
	}
	return hash.Base36(string(rec.UID), 8)
}

// validate re-checks what the CRD validates (a CRD installed from an older version may not) and
// what it cannot: duplicate record sets.
func validate(rec *v1alpha1.DNSRecord) error {
	root := rec.RootHost()
	seen := map[v1alpha1.EndpointKey]bool{}
	for _, ep := range rec.Spec.Endpoints {
		name := strings.ToLower(strings.TrimSuffix(ep.DNSName, "."))
		if name != strings.ToLower(rec.Spec.RootHost) && !strings.HasSuffix(name, "."+strings.ToLower(root)) && !ownershipTXTOf(ep, rec.Spec.RootHost) {
			return fmt.Errorf("invalid endpoint discovered %s all endpoints should be equal to or end with the rootHost %s", ep.DNSName, root)
		}
		if seen[ep.Key()] {
			return fmt.Errorf("duplicate endpoint %s %s set %q", ep.DNSName, ep.RecordType, ep.SetIdentifier)
		}
		seen[ep.Key()] = true
	}
	return nil
}

// ownershipTXTOf reports whether ep is an ownership TXT of the root host itself, which is not under
// the root host on a label boundary (kuadrant-<hash>-a-app.example.com for app.example.com).
func ownershipTXTOf(ep *v1alpha1.Endpoint, rootHost string) bool {
	name := strings.ToLower(ep.DNSName)
	root := strings.ToLower(rootHost)
	if r, ok := strings.CutPrefix(root, v1alpha1.WildcardPrefix); ok {
		root = "wildcard." + r
	}
	return ep.RecordType == v1alpha1.RecordTypeTXT && strings.HasPrefix(name, "kuadrant-") && strings.HasSuffix(name, "-"+root)
}

func conflictMessage(cs []plan.Conflict) string {
	parts := make([]string, 0, len(cs))
	for _, c := range cs {
		who := "owner " + c.WinnerOwner
		if c.WinnerOwner == "" {
			who = "a record no owner claims"
		}
		set := ""
		if c.SetIdentifier != "" {
			set = " set " + c.SetIdentifier
		}
		parts = append(parts, fmt.Sprintf("%s %s%s: %s wants %s, published %s from %s", c.DNSName, c.RecordType, set, c.Field, c.Ours, c.Published, who))
	}
	return "Another owner's value is published: " + strings.Join(parts, "; ")
}

// zoneProblem says why no zone was chosen. When the provider Secret is what to look at (its zones
// were listed and none holds the host, or listing them failed) the message names it, and the zone
// scope the backend reports (the project or resource group, and its key), unless the backend's error
// already names the Secret.
func zoneProblem(s *scope, err error) string {
	msg := stableMessage(err)
	secret := fmt.Sprintf("provider secret %s/%s", s.secret.Namespace, s.secret.Name)
	switch {
	case strings.Contains(msg, secret):
		return msg
	case errors.Is(err, zone.ErrNoZone):
		msg += " of " + secret
		if s.zoneScope != "" {
			msg += " (" + s.zoneScope + ")"
		}
		return msg
	case errors.Is(err, zone.ErrPublicSuffix), errors.Is(err, zone.ErrApexNotAllowed),
		errors.Is(err, zone.ErrAmbiguousZone), errors.Is(err, zone.ErrInvalidHost):
		// About the host and the zones, not the Secret.
		return msg
	default:
		// Listing the zones failed.
		return secret + ": " + msg
	}
}

// stableMessage keeps error text that is the same on every attempt: request IDs and timestamps
// would make every status write differ and trigger another reconcile.
func stableMessage(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "RequestID"); i >= 0 {
		msg = strings.TrimRight(msg[:i], " ,:;")
	}
	return msg
}

func copyEndpoints(eps []*v1alpha1.Endpoint) []*v1alpha1.Endpoint {
	out := make([]*v1alpha1.Endpoint, len(eps))
	for i, ep := range eps {
		out[i] = ep.DeepCopy()
	}
	return out
}
