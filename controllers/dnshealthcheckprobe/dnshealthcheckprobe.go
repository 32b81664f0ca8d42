// Package dnshealthcheckprobe runs DNSHealthCheckProbes: it hands each probe to the one scheduler
// of pkg/prober and writes the results back into the probe's status, which the record controller
// reads to decide what to publish.
//
// A pass (Reconcile) reads top to bottom, as every controller's here (package pass): fetch the
// probe; on deletion stop probing and release the finalizer (release); else ensure the finalizer
// (ensureFinalizer), read the headers Secret when due and (re)register the probe with the scheduler
// (schedule), and, deferred, write the latest result to status if the write policy (status.go)
// says it matters. Results arrive from the scheduler's workers; a result that needs a write queues
// a pass, one that does not costs nothing further.
package dnshealthcheckprobe

import (
	"context"
	"crypto/x509"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/internal/pass"
	"github.com/dnspolicy/dnspolicy-controller/pkg/prober"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// The probe controller reads and finalizes probes (the record controller creates and deletes
// them) and reads headers Secrets directly, by name.
// +kubebuilder:rbac:groups=kuadrant.io,resources=dnshealthcheckprobes,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=kuadrant.io,resources=dnshealthcheckprobes/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kuadrant.io,resources=dnshealthcheckprobes/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Options tune the controller and its scheduler.
type Options struct {
	// Workers bounds the checks running at once (prober.Options.Workers).
	Workers int
	// Timeout bounds one check; a check never takes longer than its probe's interval either.
	Timeout time.Duration
	// MinInterval is the shortest interval a probe runs at: a smaller one is raised to it, so a
	// probe cannot make the controller a load generator. A probe without an interval runs every
	// DefaultInterval.
	MinInterval, DefaultInterval time.Duration
	// StatusRefresh: when a check changes nothing that matters (status.go), status.lastCheckedAt
	// is still refreshed once it is this old (or one interval, if longer).
	StatusRefresh time.Duration
	// HeadersRefresh is how often a headers Secret is read again (a rotated token is used within
	// it). A Secret that is missing or unreadable is retried after SecretRetryMin, doubling up to
	// HeadersRefresh.
	HeadersRefresh, SecretRetryMin time.Duration
	// RootCAs verify gateways' certificates; nil: the system's roots.
	RootCAs *x509.CertPool
	// Resolver resolves probes' hostname addresses; nil: the system's.
	Resolver *net.Resolver
	// Targets are the addresses checks may connect to (prober.TargetRules: the administrator's
	// --health-check-allowed-cidrs and --health-check-denied-cidrs). The cluster's own ranges are
	// added to them by the controller (clusterranges.go).
	Targets prober.TargetRules
}

// DefaultOptions are the production settings.
func DefaultOptions() Options {
	return Options{
		Workers: 128, Timeout: 10 * time.Second,
		MinInterval: time.Second, DefaultInterval: 5 * time.Minute,
		StatusRefresh:  5 * time.Minute,
		HeadersRefresh: 5 * time.Minute, SecretRetryMin: 5 * time.Second,
	}
}

// Reconciler reconciles DNSHealthCheckProbes.
type Reconciler struct {
	Client client.Client
	// APIReader reads headers Secrets straight from the API server: no Secret cache.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	Options   Options

	prober  *prober.Prober
	tracked *tracker
	secrets *secretCache
	queue   atomic.Pointer[workqueue.TypedRateLimitingInterface[reconcile.Request]]
}

// SetupWithManager registers the controller and runs its scheduler in the manager (on the leader
// only, as the controller).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.tracked = newTracker()
	r.secrets = newSecretCache()
	r.prober = prober.New(prober.Options{
		Workers: r.Options.Workers, Timeout: r.Options.Timeout, RootCAs: r.Options.RootCAs,
		Resolver: r.Options.Resolver, Targets: r.Options.Targets, OnResult: r.onResult, Log: mgr.GetLogger().WithName("prober"),
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper { return providers.InstrumentTransport(probeClient, rt) },
	})
	if err := mgr.Add(manager.RunnableFunc(r.prober.Run)); err != nil {
		return err
	}
	if err := mgr.Add(&clusterRanges{cache: mgr.GetCache(), reader: r.APIReader, set: r.prober.SetClusterRanges,
		log: mgr.GetLogger().WithName("dnshealthcheckprobe")}); err != nil {
		return err
	}
	results := source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		r.queue.Store(&q)
		// Results that came before the controller started.
		for _, key := range r.tracked.pendingKeys() {
			q.Add(reconcile.Request{NamespacedName: key})
		}
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("dnshealthcheckprobe").
		// Status writes do not change the generation, so our own writes never trigger a pass; a
		// deletion does (the API server bumps the generation of an object with finalizers).
		For(&v1alpha1.DNSHealthCheckProbe{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(results).
		WithOptions(controller.Options{MaxConcurrentReconciles: 16}).
		Complete(r)
}

// TargetRules are the rules the checks are judged by now: Options.Targets with the cluster's ranges.
func (r *Reconciler) TargetRules() prober.TargetRules { return r.prober.Targets() }

// onResult is called by the scheduler's workers: it records the result and queues a pass only
// when the result needs a status write.
func (r *Reconciler) onResult(res prober.Result) {
	checks.WithLabelValues(string(res.Outcome)).Inc()
	checkDuration.Observe(res.Duration.Seconds())
	key := parseKey(res.Key)
	if r.tracked.put(key, res, r.Options.StatusRefresh) {
		r.enqueue(key)
	}
}

// scope is what one pass knows.
type scope struct {
	key   types.NamespacedName
	probe *v1alpha1.DNSHealthCheckProbe
	// scheduled: the pass handed the probe to the scheduler, so its latest result may be written.
	scheduled bool
}

// phase is one step of a pass (package pass).
type phase = pass.Phase[*scope]

// Reconcile runs one pass and writes the status once, if the write policy asks for it.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, err error) {
	passes.WithLabelValues(req.Namespace, req.Name).Inc()
	probe := &v1alpha1.DNSHealthCheckProbe{}
	if err := r.Client.Get(ctx, req.NamespacedName, probe); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName, "")
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := &scope{key: req.NamespacedName, probe: probe}
	defer func() {
		if !s.scheduled {
			return
		}
		if werr := r.writeStatus(ctx, s.probe); werr != nil && err == nil {
			res, err = ctrl.Result{}, werr
		}
	}()
	phases := []phase{r.ensureFinalizer, r.schedule}
	if probe.DeletionTimestamp != nil {
		phases = []phase{r.release}
	}
	return pass.Run(ctx, s, phases...)
}

// ensureFinalizer puts the finalizer on before the probe is scheduled: a probe deleted while it is
// checked is then always seen, and stopped.
func (r *Reconciler) ensureFinalizer(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	probe := s.probe
	if controllerutil.ContainsFinalizer(probe, v1alpha1.ProbeFinalizer) {
		return pass.Continue()
	}
	before := probe.DeepCopy()
	controllerutil.AddFinalizer(probe, v1alpha1.ProbeFinalizer)
	if err := r.Client.Patch(ctx, probe, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return pass.Done(ctrl.Result{}, client.IgnoreNotFound(err))
	}
	return pass.Continue()
}

// schedule (re)registers the probe with the scheduler, and says when the pass should run again.
func (r *Reconciler) schedule(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	probe := s.probe
	spec, recheck := r.spec(ctx, probe)
	r.tracked.register(s.key, probe, spec.Interval)
	probeCounter.WithLabelValues(probe.Name, probe.Namespace, probe.Spec.Hostname).Set(1)
	r.prober.Set(s.key.String(), spec, prober.State{
		ConsecutiveFailures: probe.Status.ConsecutiveFailures, Healthy: probe.Status.Healthy,
	})
	s.scheduled = true
	return pass.Done(ctrl.Result{RequeueAfter: recheck}, nil)
}

// release stops probing a deleted probe and removes the finalizer.
func (r *Reconciler) release(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	probe := s.probe
	r.forget(s.key, probe.Spec.Hostname)
	if !controllerutil.ContainsFinalizer(probe, v1alpha1.ProbeFinalizer) {
		return pass.Done(ctrl.Result{}, nil)
	}
	before := probe.DeepCopy()
	controllerutil.RemoveFinalizer(probe, v1alpha1.ProbeFinalizer)
	err := r.Client.Patch(ctx, probe, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	return pass.Done(ctrl.Result{}, client.IgnoreNotFound(err))
}

// forget stops probing key and drops what this process holds about it.
func (r *Reconciler) forget(key types.NamespacedName, hostname string) {
	r.prober.Remove(key.String())
	if hostname == "" {
		hostname = r.tracked.hostname(key)
	}
	r.tracked.forget(key)
	r.secrets.release(key)
	probeCounter.DeleteLabelValues(key.Name, key.Namespace, hostname)
	passes.DeleteLabelValues(key.Namespace, key.Name)
	statusWrites.DeleteLabelValues(key.Namespace, key.Name)
}

// spec is the scheduler's view of the probe, and how soon the pass should run again (to re-read
// the headers Secret; 0: only when the probe or a result asks).
func (r *Reconciler) spec(ctx context.Context, probe *v1alpha1.DNSHealthCheckProbe) (prober.Spec, time.Duration) {
	interval := probe.Spec.Interval.Duration
	switch {
	case interval <= 0:
		interval = r.Options.DefaultInterval
	case interval < r.Options.MinInterval:
		interval = r.Options.MinInterval
	}
	s := prober.Spec{
		Protocol: string(probe.Spec.Protocol), Address: probe.Spec.Address, Hostname: probe.Spec.Hostname,
		Port: probe.Spec.Port, Path: probe.Spec.Path, Interval: interval,
		FailureThreshold: probe.Spec.FailureThreshold, AllowInsecure: probe.Spec.AllowInsecureCertificate,
		Generation: probe.Generation,
	}
	if s.Address == "" {
		s.Unusable = "The probe has no address to check (spec.address is empty)"
	}
	var recheck time.Duration
	if ref := probe.Spec.AdditionalHeadersRef; ref != nil {
		h := r.secrets.get(ctx, r.APIReader, client.ObjectKeyFromObject(probe),
			types.NamespacedName{Namespace: probe.Namespace, Name: ref.Name}, r.Options.HeadersRefresh, r.Options.SecretRetryMin)
		s.Headers = h.headers
		if s.Unusable == "" {
			s.Unusable = h.unusable
		}
		recheck = time.Until(h.next)
		if recheck < time.Second {
			recheck = time.Second
		}
	} else {
		r.secrets.release(client.ObjectKeyFromObject(probe))
	}
	return s, recheck
}

// writeStatus writes the latest result if the write policy asks for it, with an event when the
// probe turns healthy or unhealthy.
func (r *Reconciler) writeStatus(ctx context.Context, probe *v1alpha1.DNSHealthCheckProbe) error {
	key := client.ObjectKeyFromObject(probe)
	res, was, ok := r.tracked.due(key, r.Options.StatusRefresh)
	if !ok {
		return nil
	}
	before := probe.DeepCopy()
	probe.Status = statusOf(res)
	if err := r.Client.Status().Patch(ctx, probe, client.MergeFrom(before)); err != nil {
		r.tracked.failed(key)
		return client.IgnoreNotFound(err)
	}
	statusWrites.WithLabelValues(probe.Namespace, probe.Name).Inc()
	if r.tracked.written(key, res, r.Options.StatusRefresh) {
		r.enqueue(key)
	}
	r.event(probe, was, healthOf(probe.Status.Healthy))
	return nil
}

func (r *Reconciler) enqueue(key types.NamespacedName) {
	if q := r.queue.Load(); q != nil {
		(*q).Add(reconcile.Request{NamespacedName: key})
	}
}

// event reports a turn to unhealthy (from healthy or unknown) and back to healthy. The health
// compared is what this process last wrote, not the cached object, which may lag behind it.
func (r *Reconciler) event(probe *v1alpha1.DNSHealthCheckProbe, was, now int8) {
	switch {
	case was == now:
	case now == 0:
		r.Recorder.Eventf(probe, nil, corev1.EventTypeWarning, EventUnhealthy, "Probe",
			"%s is unhealthy after %d consecutive failures: %s", probe.Spec.Address, probe.Status.ConsecutiveFailures, probe.Status.Reason)
	case now == 1 && was == 0:
		r.Recorder.Eventf(probe, nil, corev1.EventTypeNormal, EventHealthy, "Probe", "%s is healthy again", probe.Spec.Address)
	}
}

// Event reasons.
const (
	EventUnhealthy = "Unhealthy"
	EventHealthy   = "Healthy"
)
