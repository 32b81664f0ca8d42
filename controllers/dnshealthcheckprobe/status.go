package dnshealthcheckprobe

import (
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/prober"
)

// The write policy. A status write is an API call and an event for every watcher of probes (the
// record controller among them), so a check that changes nothing must not cost one: 1,000 probes
// at a 1s interval would otherwise be 1,000 writes a second. A result is written when it changes
// what a reader acts on or is told:
//   - healthy, reason, the HTTP status code or the generation it was checked at, and
//   - consecutiveFailures while it is at or below the failure threshold (each step towards
//     unhealthy); above it the probe is already unhealthy and the count is only refreshed;
//
// and otherwise lastCheckedAt (with the count) is refreshed once the status is StatusRefresh old,
// or one interval if that is longer. So a steady probe costs one write per StatusRefresh, and a
// probe that goes down costs threshold+1 writes, then the refresh.
//
// lastCheckedAt is ours: Kuadrant's type does not serialize it (json:"-"), so Kuadrant's tools
// neither read nor write it. It says when the status was last written from a check, not when the
// last check ran.

// view is what a status says, for the write policy.
type view struct {
	healthy    int8 // -1 unknown, 0 unhealthy, 1 healthy
	failures   int
	status     int
	reason     string
	generation int64
}

func healthOf(h *bool) int8 {
	switch {
	case h == nil:
		return -1
	case *h:
		return 1
	default:
		return 0
	}
}

func (v view) state() string {
	switch v.healthy {
	case 1:
		return "healthy"
	case 0:
		return "unhealthy"
	default:
		return "unknown"
	}
}

func viewOfStatus(s v1alpha1.DNSHealthCheckProbeStatus) view {
	return view{healthOf(s.Healthy), s.ConsecutiveFailures, s.Status, s.Reason, s.ObservedGeneration}
}

func viewOfResult(r prober.Result) view {
	return view{healthOf(r.State.Healthy), r.State.ConsecutiveFailures, r.StatusCode, r.Reason, r.Generation}
}

// needsWrite is the write policy: should a status holding old, written at writtenAt, be replaced
// by a result checked at checkedAt showing now?
func needsWrite(old, now view, writtenAt, checkedAt time.Time, threshold int, refresh time.Duration) bool {
	if old.healthy != now.healthy || old.reason != now.reason || old.status != now.status || old.generation != now.generation {
		return true
	}
	if old.failures != now.failures && (old.failures <= threshold || now.failures <= threshold) {
		return true
	}
	return checkedAt.Sub(writtenAt) >= refresh
}

// statusOf is the status a result writes.
func statusOf(r prober.Result) v1alpha1.DNSHealthCheckProbeStatus {
	s := v1alpha1.DNSHealthCheckProbeStatus{
		LastCheckedAt:       metav1.NewTime(r.CheckedAt),
		ConsecutiveFailures: r.State.ConsecutiveFailures,
		Reason:              r.Reason,
		Status:              r.StatusCode,
		ObservedGeneration:  r.Generation,
	}
	if r.State.Healthy != nil {
		h := *r.State.Healthy
		s.Healthy = &h
	}
	return s
}

// tracker holds, per probe, the latest result and what its status holds, so the scheduler's
// workers can tell without an API call whether a result needs a pass.
type tracker struct {
	mu    sync.Mutex
	probe map[types.NamespacedName]*tracked
}

type tracked struct {
	hostname  string
	threshold int
	interval  time.Duration
	latest    prober.Result
	hasLatest bool
	// written is what the status holds (as this process last wrote it, or found it).
	written   view
	writtenAt time.Time
	// pending: a pass has been queued for the latest result.
	pending bool
}

func newTracker() *tracker { return &tracker{probe: map[types.NamespacedName]*tracked{}} }

// register starts tracking a probe, or updates what the policy needs of its spec. A new probe
// starts from its object's status.
func (t *tracker) register(key types.NamespacedName, p *v1alpha1.DNSHealthCheckProbe, interval time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.probe[key]
	if !ok {
		e = &tracked{written: viewOfStatus(p.Status), writtenAt: p.Status.LastCheckedAt.Time}
		t.probe[key] = e
		probesByState.WithLabelValues(e.written.state()).Inc()
	}
	if e.hostname != "" && e.hostname != p.Spec.Hostname {
		probeCounter.DeleteLabelValues(key.Name, key.Namespace, e.hostname)
	}
	e.hostname, e.threshold, e.interval = p.Spec.Hostname, p.Spec.FailureThreshold, interval
}

func (t *tracker) refresh(e *tracked, base time.Duration) time.Duration {
	return max(base, e.interval)
}

// put records a result; true: it needs a write and no pass is queued for it yet.
func (t *tracker) put(key types.NamespacedName, r prober.Result, refresh time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.probe[key]
	if !ok {
		return false
	}
	e.latest, e.hasLatest = r, true
	if e.pending || !needsWrite(e.written, viewOfResult(r), e.writtenAt, r.CheckedAt, e.threshold, t.refresh(e, refresh)) {
		return false
	}
	e.pending = true
	return true
}

// due returns the latest result if it needs a write, and the health the status holds now.
func (t *tracker) due(key types.NamespacedName, refresh time.Duration) (prober.Result, int8, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.probe[key]
	if !ok || !e.hasLatest {
		return prober.Result{}, 0, false
	}
	if !needsWrite(e.written, viewOfResult(e.latest), e.writtenAt, e.latest.CheckedAt, e.threshold, t.refresh(e, refresh)) {
		e.pending = false
		return prober.Result{}, 0, false
	}
	return e.latest, e.written.healthy, true
}

// written records a status write of r; true: a newer result arrived meanwhile and needs a write
// too.
func (t *tracker) written(key types.NamespacedName, r prober.Result, refresh time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.probe[key]
	if !ok {
		return false
	}
	now := viewOfResult(r)
	if old := e.written.state(); old != now.state() {
		probesByState.WithLabelValues(old).Dec()
		probesByState.WithLabelValues(now.state()).Inc()
	}
	e.written, e.writtenAt = now, r.CheckedAt
	e.pending = needsWrite(e.written, viewOfResult(e.latest), e.writtenAt, e.latest.CheckedAt, e.threshold, t.refresh(e, refresh))
	return e.pending
}

// failed records a failed write: the pass is retried by the controller's backoff.
func (t *tracker) failed(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.probe[key]; ok {
		e.pending = false
	}
}

func (t *tracker) hostname(key types.NamespacedName) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.probe[key]; ok {
		return e.hostname
	}
	return ""
}

func (t *tracker) forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.probe[key]; ok {
		probesByState.WithLabelValues(e.written.state()).Dec()
		delete(t.probe, key)
	}
}

// pendingKeys are the probes with a pass queued.
func (t *tracker) pendingKeys() []types.NamespacedName {
	t.mu.Lock()
	defer t.mu.Unlock()
	var keys []types.NamespacedName
	for k, e := range t.probe {
		if e.pending {
			keys = append(keys, k)
		}
	}
	return keys
}

// parseKey reverses types.NamespacedName.String.
func parseKey(s string) types.NamespacedName {
	ns, name, _ := strings.Cut(s, "/")
	return types.NamespacedName{Namespace: ns, Name: name}
}
