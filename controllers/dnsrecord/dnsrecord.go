// Package dnsrecord reconciles DNSRecords: it publishes each owner's endpoints into the zone its
// provider Secret reaches, shared safely with every other owner of the zone.
//
// The controller is thin and reads top to bottom (Reconcile): fetch the record, then run its phases
// in order until one ends the pass, and write the status once, in a deferred patch.
//
//   - a record that exists: validate, check that its owner ID is its namespace's (owners.go),
//     connect (Secret, backend, grants, zone), ensure the finalizer, ensure the probes of its
//     addresses (health.go), publish what passes them; with --group, publish only while the
//     zone lists the group as active (groups.go);
//   - a record being deleted: release it at once if its owner ID is another namespace's
//     (owners.go), else connect, withdraw, release (see delete.go for the bounded release);
//   - an authoritative record (a zone DNS servers serve, written by the records of a
//     providers.HostZones backend: coredns): validate, connect, ensure the finalizer, and check
//     that the backend can serve it (authoritative.go). It is reconciled as Kuadrant reconciles it,
//     but publishes nothing: it is the zone.
//
// Publishing goes through the zone's publish queue (subpackage publish: plan, ownership check, batched
// apply, validation read). Failures are returned to controller-runtime, whose per-record
// exponential backoff (pass.Backoff: MinBackoff doubling up to MaxBackoff) schedules the retry.
package dnsrecord

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord/backends"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord/publish"
	"github.com/dnspolicy/dnspolicy-controller/controllers/internal/pass"
	"github.com/dnspolicy/dnspolicy-controller/pkg/conditions"
	"github.com/dnspolicy/dnspolicy-controller/pkg/grant"
	"github.com/dnspolicy/dnspolicy-controller/pkg/groups/resolve"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
	"github.com/dnspolicy/dnspolicy-controller/pkg/health"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
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

// Options tune the timing of the controller.
type Options struct {
	// MinRecheck and MaxRecheck bound the steady-state re-check: it starts at MinRecheck after a
	// write and doubles on every quiet pass up to MaxRecheck, with ±10% jitter so records created
	// together do not re-check together.
	MinRecheck, MaxRecheck time.Duration
	// MinBackoff and MaxBackoff bound the per-record exponential backoff after errors (the
	// controller's rate limiter).
	MinBackoff, MaxBackoff time.Duration
	// ValidationRetry is how soon a record whose write was not yet visible is checked again.
	ValidationRetry time.Duration
	// OrphanGrace bounds how long a deleted record waits on a permanent error (its provider Secret
	// gone, credentials revoked, its zone deleted, its backend disabled) before it is released
	// without its contributions withdrawn, with a Warning event naming what was left in the zone.
	OrphanGrace time.Duration
	// ZoneListMaxAge bounds how long a provider's list of zones is reused.
	ZoneListMaxAge time.Duration
	// BackendIdle is how long a backend built from a Secret is kept unused (0: backends.DefaultIdle).
	// It is also how long after its Secret is deleted a record can still clean up with it.
	BackendIdle time.Duration
	// MaxConcurrentReconciles lets many records wait on one zone's queue at once, which is what lets
	// the queue batch them.
	MaxConcurrentReconciles int
	// NoSecretWatch leaves out the watch of Secrets' metadata, for a ServiceAccount that may only
	// get Secrets (config/rbac/README.md): a changed provider Secret is used at the next pass.
	NoSecretWatch bool
	// KeepExpired turns lease expiry off for records whose Secret does not say
	// (SecretKeyLeaseExpiry): they withdraw no other cluster's owner whose lease ran out.
	KeepExpired bool
	// Grants say which namespaces may publish which names (grants.go). They gate the records of
	// a backend whose zones the embedded DNS server serves, and with GrantsAllBackends
	// (--grants-scope=all) every backend's.
	Grants            grant.Grants
	GrantsAllBackends bool
	// MaxTTL caps the TTL of every endpoint (--max-ttl); 0 means v1alpha1.DefaultMaxTTL.
	MaxTTL int64
	// DelegationRole is the part this cluster plays in delegation (delegation.go); empty means
	// primary, Kuadrant's default.
	DelegationRole DelegationRole
	// OwnerLease is this cluster's owner lease (its Holder, Every and Duration; Holder "" when
	// there is none): a secondary renews it on its delegating records (remote_lease.go).
	OwnerLease lease.Lease
	// Group is the failover group of every record reconciled (--group; "": ungrouped), and
	// InactiveGroupRecheck how often a record of an inactive group looks again (0:
	// DefaultInactiveGroupRecheck). See groups.go.
	Group                string
	InactiveGroupRecheck time.Duration
	// FailoverOrder, when set, turns automatic failover on (failover.go, groups.Decide): the
	// groups in order of preference (--group-failover-order); FailoverAfter is how long the active
	// group may be without a live member (--group-failover-after), FailoverHoldDown how long after
	// a switch an earlier group may take over again (--group-failover-hold-down). An active grouped
	// record then re-checks at least every InactiveGroupRecheck too, so its controller judges the
	// zone's groups that often.
	FailoverOrder                   []string
	FailoverAfter, FailoverHoldDown time.Duration
}

func (o Options) maxTTL() int64 {
	if o.MaxTTL <= 0 {
		return v1alpha1.DefaultMaxTTL
	}
	return o.MaxTTL
}

// DefaultOptions are the production timings.
func DefaultOptions() Options {
	return Options{
		MinRecheck: 30 * time.Second, MaxRecheck: 15 * time.Minute,
		MinBackoff: time.Second, MaxBackoff: 5 * time.Minute,
		ValidationRetry: time.Second, OrphanGrace: 5 * time.Minute,
		ZoneListMaxAge: time.Minute, BackendIdle: backends.DefaultIdle, MaxConcurrentReconciles: 256,
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
	// InsecureHealthChecks lets the probes this controller makes accept any certificate
	// (--insecure-health-checks): for gateways with self-signed certificates.
	InsecureHealthChecks bool
	// Resolver reads the zones' active-groups TXT for a grouped controller; nil is a
	// resolve.Resolver with its default timeout.
	Resolver TXTResolver
	// Authoritative writes into the authoritative records of a namespace, naming secret as their
	// provider: where a delegation primary publishes delegating records (delegation_primary.go).
	Authoritative func(namespace, secret string) providers.Provider

	backends *backends.Cache
	// memory is what the controller keeps about each record between passes (memory.go).
	memory memory
	// tracker remembers when other owners' health statements changed (package health).
	tracker health.Tracker
	// failover is what the controller knows of its zones' failover groups (failover.go).
	failover failover
	// replans carries the passes the publisher asks for (Replan), and those a change of a zone's
	// active groups asks for (failover.go), to the controller's queue.
	replans atomic.Pointer[chan event.TypedGenericEvent[reconcile.Request]]
	// remoteReplans carries the passes asked for other clusters' records to their controller
	// (remote.go).
	remoteReplans atomic.Pointer[chan event.TypedGenericEvent[mcreconcile.Request]]
}

// conditionOrder keeps a record's conditions in one order, so equal statuses compare equal.
var conditionOrder = conditions.Order(v1alpha1.ConditionOrder)

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.init()
	if r.Publisher != nil {
		if err := registerLeaseMetrics(r.Publisher); err != nil {
			return err
		}
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.DNSRecord{}, ownerIDField, indexOwnerID); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("dnsrecord").
		// Status writes do not change the generation, so our own status updates never trigger a pass;
		// a primary's report on a deleted delegating record does (delegation.go).
		For(&v1alpha1.DNSRecord{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, remoteStatusesChanged))).
		// A probe's result changes what its record publishes.
		Owns(&v1alpha1.DNSHealthCheckProbe{}).
		// The publisher asks for passes when another cluster's lease expires (lease.go).
		WatchesRawSource(r.replanSource()).
		// A record waiting for its owner ID (owners.go) is queued when the record holding it goes.
		Watches(&v1alpha1.DNSRecord{}, r.ownerEvents())
	if !r.Options.NoSecretWatch {
		// A fixed or rotated provider Secret takes effect at once rather than at the records' next
		// retry (up to MaxBackoff away), and drops the backend built from its old version. Only
		// metadata is cached: the controller never holds other Secrets' contents, and reads its own
		// when a pass needs them.
		b = b.Watches(&corev1.Secret{}, r.secretEvents(), builder.OnlyMetadata)
	}
	return b.WithOptions(controller.Options{
		MaxConcurrentReconciles: r.Options.MaxConcurrentReconciles,
		// Per record, exponential: a record that keeps failing is retried less and less often,
		// whatever the others do.
		RateLimiter: pass.NewBackoff(r.Options.MinBackoff, r.Options.MaxBackoff),
	}).
		Complete(r)
}

// init builds what the Reconciler keeps between passes.
func (r *Reconciler) init() {
	r.backends = &backends.Cache{Factory: r.Factory, Wrap: providers.Instrument, Idle: r.Options.BackendIdle, SettingKeys: []string{SecretKeyLeaseExpiry, resolve.SecretKey}}
}

// scope is what one pass knows.
type scope struct {
	key    types.NamespacedName
	record *v1alpha1.DNSRecord
	// before is the record as read, metadata and status only (statusOf), for the status patch.
	before *v1alpha1.DNSRecord
	// backend is the provider the record publishes with (on deletion, possibly one built from a
	// Secret that is gone); zone is where.
	backend *backends.Backend
	zone    providers.Zone
	// provider is what the pass writes with: the backend's Provider, or its HostProvider for a
	// record written into the authoritative record of its root host; nil for a backend that serves
	// whole records.
	provider providers.Provider
	// labels are the labels the record carries besides the provider label (an authoritative
	// record's zone label), set with the finalizer.
	labels map[string]string
	// probing holds the states of the record's probes when its addresses are probed.
	probing *probing
	// activeGroups are the zone's active failover groups when the record is of one of them (checkGroup).
	activeGroups []string
	// remote, when set, is the other cluster the record was read from (remote.go): record is then
	// a view of it whose status is this primary's entry of its status.remoteRecordStatuses.
	remote *remoteRecord
}

// providerName is the provider label of the record: the name of what writes it, or of the backend
// that serves it whole.
func (s *scope) providerName() string {
	if s.provider == nil {
		return s.backend.Records.Name()
	}
	return s.provider.Name()
}

// phase is one step of a pass (package pass): done ends the pass with res and err.
type phase = pass.Phase[*scope]

// Reconcile runs one pass and writes the status once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, err error) {
	start := time.Now()
	defer func() { reconcileDuration.Observe(time.Since(start).Seconds()) }()
	recordSeries.pass(req.NamespacedName)

	rec := &v1alpha1.DNSRecord{}
	if err := r.Client.Get(ctx, req.NamespacedName, rec); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := &scope{key: req.NamespacedName, record: rec, before: statusOf(rec)}
	defer func() {
		// A pass that ends in a terminal error is not retried: a status it could not write must
		// be retried instead.
		if perr := r.patchStatus(ctx, s); perr != nil && (err == nil || errors.Is(err, reconcile.TerminalError(nil))) {
			res, err = ctrl.Result{}, perr
		}
	}()

	var phases []phase
	switch {
	case isAuthoritative(rec) && rec.DeletionTimestamp != nil:
		phases = r.authoritativeDeletionPhases(rec)
	case isAuthoritative(rec):
		phases = []phase{r.validateAuthoritative, r.checkOwner, r.connect, r.ensureFinalizer, r.publishAuthoritative}
	case rec.Spec.Delegate:
		phases = r.delegationPhases(rec)
	case rec.DeletionTimestamp != nil:
		phases = []phase{r.releaseBorrowed, r.connectForDeletion, r.withdraw}
	default:
		phases = []phase{r.validate, r.checkOwner, r.connect, r.ensureFinalizer, r.checkGroup, r.ensureProbes, r.publish}
	}
	return pass.Run(ctx, s, phases...)
}

// ensureFinalizer puts the finalizer on before anything is written to the zone, in one patch with
// the provider label (Kuadrant's tooling selects records by it) and the pass's other labels. It
// comes after connect: a record that never reached a backend has written nothing, and a finalizer
// on it would only hold its deletion for OrphanGrace.
func (r *Reconciler) ensureFinalizer(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	rec := s.record
	want := map[string]string{}
	if s.backend != nil {
		// A delegating record has no backend here, and no provider label (as Kuadrant's).
		want[v1alpha1.ProviderNameLabel] = s.providerName()
	}
	for k, v := range s.labels {
		want[k] = v
	}
	missing := !controllerutil.ContainsFinalizer(rec, v1alpha1.RecordFinalizer)
	for k, v := range want {
		missing = missing || rec.Labels[k] != v
	}
	if !missing {
		return ctrl.Result{}, false, nil
	}
	// The patch is a diff of the metadata alone, and its response is the metadata alone: a record's
	// spec can hold thousands of targets, and a merge patch of whole objects marshals both and
	// decodes the whole record sent back.
	patch := client.MergeFrom(rec.Metadata())
	controllerutil.AddFinalizer(rec, v1alpha1.RecordFinalizer)
	if rec.Labels == nil {
		rec.Labels = map[string]string{}
	}
	for k, v := range want {
		rec.Labels[k] = v
	}
	written := rec.Metadata()
	if err := r.Client.Patch(ctx, written, patch); err != nil {
		return ctrl.Result{}, true, err
	}
	rec.ObjectMeta = written.ObjectMeta
	// The status patch is a diff from s.before: with the metadata it had before this patch, the
	// diff would carry the old resourceVersion, and any write since (a DNS server's condition, a
	// contributor's endpoints) would make the status patch fail.
	s.before.ObjectMeta = *rec.ObjectMeta.DeepCopy()
	return ctrl.Result{}, false, nil
}

// patchStatus writes the status once per pass, when it changed. A released record has no status to
// write.
func (r *Reconciler) patchStatus(ctx context.Context, s *scope) error {
	if s.remote != nil {
		return r.patchRemoteStatus(ctx, s)
	}
	rec := s.record
	if rec.DeletionTimestamp != nil && !controllerutil.ContainsFinalizer(rec, v1alpha1.RecordFinalizer) {
		return nil
	}
	if c := conditions.Get(rec.Status.Conditions, v1alpha1.ConditionTypeReady); c != nil {
		r.memory.setReason(s.key, c.Reason)
	}
	rec.Status.ObservedGeneration = rec.Generation
	if equalStatus(s.before.Status, rec.Status) {
		// Nothing but the re-check bookkeeping changed: a quiet pass writes nothing. validFor
		// doubles on every quiet pass, and writing it would cost each record about five status
		// writes in its first half hour; it is written with the status's next real change.
		r.memory.observe(s.key, rec, &s.before.Status, false)
		return nil
	}
	// The diff is taken between metadata and status only: a record's spec can hold thousands of
	// targets, and a merge patch of whole objects marshals and unmarshals both. For the same reason
	// the response, which the API server sends whole, is read as metadata only.
	if err := r.Client.Status().Patch(ctx, rec.Metadata(), client.MergeFrom(s.before), client.WithSubResourceBody(statusOf(rec))); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	r.memory.observe(s.key, rec, &s.before.Status, true)
	return nil
}

// statusOf is a copy of the record's metadata and status, without its spec: what the status patch
// is a diff of.
func statusOf(rec *v1alpha1.DNSRecord) *v1alpha1.DNSRecord {
	return &v1alpha1.DNSRecord{TypeMeta: rec.TypeMeta, ObjectMeta: *rec.ObjectMeta.DeepCopy(), Status: *rec.Status.DeepCopy()}
}

// equalStatus reports whether two statuses differ in nothing but bookkeeping.
func equalStatus(a, b v1alpha1.DNSRecordStatus) bool {
	return equality.Semantic.DeepEqual(bookkept(a), bookkept(b))
}

// bookkept is a status without the re-check bookkeeping (validFor, writeCounter), for comparison.
func bookkept(st v1alpha1.DNSRecordStatus) v1alpha1.DNSRecordStatus {
	st.ValidFor, st.WriteCounter = "", 0
	st.Conditions = leasesBookkept(st.Conditions)
	return st
}

func (r *Reconciler) removeFinalizer(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.remote != nil {
		// Another cluster's record is released by its own controller, once this primary says so.
		return r.reportRemoved(s), nil
	}
	if holding := s.record.Status.PrimariesHoldingEndpoints(); s.record.Spec.Delegate && len(holding) > 0 {
		// Withdrawn here, but other primaries still publish it (Kuadrant's rule: the finalizer goes
		// when every entry says removed). Their write of their entry starts the next pass.
		r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonProviderEndpointsDeletion, waitingMessage(holding))
		return ctrl.Result{RequeueAfter: pass.Jitter(r.Options.MinRecheck)}, nil
	}
	// Its probes go first, whichever way it is released: a record that never found a zone has
	// probes too (probeWithoutZone).
	if err := r.deleteProbes(ctx, s.record); err != nil {
		return ctrl.Result{}, err
	}
	patch := client.MergeFrom(s.record.DeepCopy())
	controllerutil.RemoveFinalizer(s.record, v1alpha1.RecordFinalizer)
	if err := r.Client.Patch(ctx, s.record, patch); err != nil && !apierrors.IsNotFound(err) {
		// Not released: the status patch must still go out.
		controllerutil.AddFinalizer(s.record, v1alpha1.RecordFinalizer)
		return ctrl.Result{}, err
	}
	r.forget(s.key)
	return ctrl.Result{}, nil
}

// forget drops what this process keeps for a record that is gone.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.memory.forget(key)
	r.failover.forget(key)
	r.backends.Forget(key)
	r.Publisher.Release(key.String())
	r.tracker.Forget(key.String())
}

// recheck schedules the steady-state check: MinRecheck after a write, then doubling on quiet passes.
// The interval is kept in memory, since a quiet pass does not write the status (patchStatus); the
// status's validFor seeds it after a restart.
func (r *Reconciler) recheck(s *scope, wrote bool) ctrl.Result {
	next := r.Options.MinRecheck
	if !wrote {
		prev, ok := r.memory.interval(s.key)
		if !ok {
			prev, _ = time.ParseDuration(s.record.Status.ValidFor)
		}
		if prev > 0 {
			next = min(2*prev, r.Options.MaxRecheck)
		}
	}
	next = max(next, r.Options.MinRecheck)
	r.memory.setInterval(s.key, next)
	s.record.Status.ValidFor = next.String()
	return ctrl.Result{RequeueAfter: pass.Jitter(next)}
}

// ownerID is spec.ownerID, else hash8 of the UID (Kuadrant's rule).
func ownerID(rec *v1alpha1.DNSRecord) string {
	if rec.Spec.OwnerID != "" {
		return rec.Spec.OwnerID
	}
	return hash.Base36(string(rec.UID), 8)
}
