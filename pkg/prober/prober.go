// Package prober runs HTTP(S) health probes of gateway addresses: one scheduler for every probe (a
// heap ordered by due time, one timer), a bounded pool of workers that run the checks, and results
// handed to a callback. Every connection a check opens is judged by TargetRules after name
// resolution. It knows nothing of Kubernetes: the DNSHealthCheckProbe controller turns
// objects into Specs and results into status.
//
// The health rule is Kuadrant's: a check passes on HTTP 200 or 201; a pass resets the consecutive
// failures and makes the probe healthy; a failure counts, and the probe turns unhealthy only when the
// count exceeds the failure threshold. Until the first pass or the threshold, health is unknown (nil).
package prober

import (
	"container/heap"
	"context"
	"crypto/x509"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	"github.com/dnspolicy/dnspolicy-controller/pkg/goroutine"
)

// Spec is what one probe checks and how often.
type Spec struct {
	// Protocol is "HTTP" or "HTTPS" (the API's values); anything but "HTTPS" speaks plain HTTP.
	Protocol string
	// Address is dialled: an IP address, or a hostname resolved at every check (every address it
	// resolves to is tried until one passes, as Kuadrant does).
	Address string
	// Hostname is the Host header and the TLS server name (SNI and verification). Empty: Address.
	Hostname string
	// Port to connect to; 0 is the protocol's default (80 or 443).
	Port int
	// Path (and query) requested, e.g. "/healthz".
	Path string
	// Interval between checks.
	Interval time.Duration
	// FailureThreshold: the probe turns unhealthy when consecutive failures exceed it.
	FailureThreshold int
	// AllowInsecure skips TLS certificate verification.
	AllowInsecure bool
	// Headers are added to every request (from the probe's headers Secret). Never logged or reported.
	Headers http.Header
	// Unusable, when not empty, fails every check with this reason without sending a request: the
	// probe cannot be run as specified (its headers Secret is missing, say), and failing it is the
	// honest answer, so a record does not keep publishing an address nobody checks.
	Unusable string
	// Generation is opaque to the prober and returned with each result of this Spec, so the caller
	// can tell which version of its object a result belongs to.
	Generation int64
}

// State is a probe's health so far.
type State struct {
	ConsecutiveFailures int
	// Healthy is nil until the first pass or until the failures exceed the threshold.
	Healthy *bool
}

// Next is the state after one check: Kuadrant's rule.
func (s State) Next(passed bool, threshold int) State {
	if passed {
		t := true
		return State{Healthy: &t}
	}
	s.ConsecutiveFailures++
	if s.ConsecutiveFailures > threshold {
		f := false
		s.Healthy = &f
	}
	return s
}

// Outcome classifies a check for metrics; it is a small fixed set.
type Outcome string

// Outcomes of a check.
const (
	OutcomePassed     Outcome = "passed"
	OutcomeStatusCode Outcome = "status_code" // an HTTP response other than 200/201
	OutcomeTimeout    Outcome = "timeout"
	OutcomeRefused    Outcome = "connection_refused"
	OutcomeTLS        Outcome = "tls"
	OutcomeDNS        Outcome = "dns"
	OutcomeUnusable   Outcome = "unusable"           // Spec.Unusable was set
	OutcomeNotAllowed Outcome = "target_not_allowed" // refused by the TargetRules
	OutcomeError      Outcome = "error"              // any other connection or protocol error
)

// Result is one check of one probe.
type Result struct {
	Key        string
	Generation int64
	CheckedAt  time.Time
	Duration   time.Duration
	Outcome    Outcome
	// StatusCode of the response; 0 when there was none.
	StatusCode int
	// Reason is stable text (no timestamps, no ephemeral ports, never a header value): "" for a
	// pass, "Status code: 500" for a bad answer as Kuadrant writes it, else what went wrong.
	Reason string
	// State after this check.
	State State
}

// Options tune a Prober.
type Options struct {
	// Workers bounds how many checks run at once (default 64). A probe due while every worker is
	// busy waits for one: its check is late, never dropped or run twice at once. Tenants (the part
	// of a probe's key before its first "/") take turns for free workers, and one running its
	// share of them (Workers divided by the tenants with checks running or due) comes after the
	// others.
	Workers int
	// Targets are the rules every connection of a check is judged by; the zero value refuses
	// only the defaults (TargetRules).
	Targets TargetRules
	// Timeout bounds a check (name resolution, dial, TLS, response headers) and defaults to 10s;
	// a check never takes longer than its probe's interval either.
	Timeout time.Duration
	// Jitter spreads each probe's checks by ±Jitter×interval (default 0.1), so probes created
	// together drift apart instead of firing together forever.
	Jitter float64
	// FirstCheckSpread: a new or changed probe is first checked after a random delay up to
	// min(interval, FirstCheckSpread) (default 1s), so a thousand probes created at once do not
	// dial at once.
	FirstCheckSpread time.Duration
	// RootCAs verify servers' certificates; nil: the system's roots.
	RootCAs *x509.CertPool
	// Resolver resolves hostname addresses; nil: net.DefaultResolver.
	Resolver *net.Resolver
	// WrapTransport, when set, wraps the HTTP transport of the checks (the probe controller counts
	// their requests in metrics with it).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// OnResult receives every result, from a worker goroutine, one at a time per probe and in
	// order. It should return quickly (hand off, do not write to an API server here): workers wait
	// for it. A result already being delivered when Remove is called may still arrive.
	OnResult func(Result)
	// Log is where a check or delivery that panicked is logged (package goroutine).
	Log logr.Logger
}

func (o Options) withDefaults() Options {
	if o.Workers <= 0 {
		o.Workers = 64
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Jitter <= 0 || o.Jitter >= 1 {
		o.Jitter = 0.1
	}
	if o.FirstCheckSpread <= 0 {
		o.FirstCheckSpread = time.Second
	}
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	if o.OnResult == nil {
		o.OnResult = func(Result) {}
	}
	return o
}

// Prober schedules and runs every probe.
type Prober struct {
	opts    Options
	checker *checker
	// rules are the TargetRules every dial is judged by: Options.Targets with the cluster's ranges.
	rules atomic.Pointer[TargetRules]

	mu      sync.Mutex
	entries map[string]*entry
	tenants map[string]*tenant
	// waiting holds the tenants whose next check is not due yet, by when it is; ready the tenants
	// with a check due, in the order they get a worker. A tenant is in one of them, or in neither
	// when it has nothing queued.
	waiting tenantQueue
	ready   []*tenant
	// busy counts the checks running; active the tenants with a check running or due.
	busy, active int
	// wake tells the dispatcher the head of the queue, or the workers free, may have changed.
	wake chan struct{}
}

// entry is one probe. Fields are guarded by Prober.mu.
type entry struct {
	key    string
	tenant *tenant
	spec   Spec
	state  State
	next   time.Time
	// version counts Set calls that changed the spec, so a check of an older spec is discarded.
	version uint64
	// index in its tenant's queue, -1 when not queued (being checked, or removed).
	index   int
	removed bool
	// cancel stops the check in flight.
	cancel context.CancelFunc
}

// New builds a Prober; Run starts it.
func New(o Options) *Prober {
	o = o.withDefaults()
	p := &Prober{
		opts:    o,
		entries: map[string]*entry{},
		tenants: map[string]*tenant{},
		wake:    make(chan struct{}, 1),
	}
	rules := o.Targets
	p.rules.Store(&rules)
	p.checker = newChecker(o, &p.rules)
	return p
}

// SetClusterRanges replaces the cluster's own ranges in the target rules (TargetRules.Cluster); the
// next dial is judged by them.
func (p *Prober) SetClusterRanges(ranges []netip.Prefix) {
	rules := p.opts.Targets
	rules.Cluster = slices.Clone(ranges)
	p.rules.Store(&rules)
}

// Targets are the rules the next dial is judged by.
func (p *Prober) Targets() TargetRules { return *p.rules.Load() }

// Set adds a probe, or changes one. initial is the state of a new probe (what its object's status
// last said, so a restarted controller neither forgets failures nor reports health unknown again);
// it is ignored for a probe already known, whose state carries on. A changed spec is checked again
// soon; an unchanged one keeps its schedule.
func (p *Prober) Set(key string, spec Spec, initial State) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.entries[key]
	if ok && reflect.DeepEqual(e.spec, spec) {
		return
	}
	if !ok {
		e = &entry{key: key, tenant: p.tenant(tenantOf(key)), state: initial, index: -1}
		p.entries[key] = e
	}
	e.spec = spec
	e.version++
	e.next = time.Now().Add(p.firstDelay(spec.Interval))
	if e.cancel != nil {
		// A check of the old spec is in flight: stop it, its result is discarded and the worker
		// queues the entry again.
		e.cancel()
		return
	}
	if e.index >= 0 {
		heap.Fix(&e.tenant.queue, e.index)
	} else {
		heap.Push(&e.tenant.queue, e)
	}
	p.place(e.tenant, time.Now())
	p.poke()
}

// Remove stops a probe; a check in flight is cancelled.
func (p *Prober) Remove(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.entries[key]
	if !ok {
		return
	}
	delete(p.entries, key)
	e.removed = true
	if e.cancel != nil {
		e.cancel()
	}
	if e.index >= 0 {
		heap.Remove(&e.tenant.queue, e.index)
		p.place(e.tenant, time.Now())
	}
}

// Len is the number of probes.
func (p *Prober) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.entries)
}

// Run checks probes as they fall due until ctx ends, then waits for the checks in flight to stop.
// It is a controller-runtime Runnable's Start.
func (p *Prober) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if ctx.Err() != nil {
			return nil
		}
		e, wait := p.due()
		if e != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.run(ctx, e)
			}()
			continue
		}
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-p.wake:
		case <-ctx.Done():
			return nil
		}
	}
}

// due takes the next check to run, if a worker is free and a check is due, or says how long until
// one is (a free worker pokes).
func (p *Prober) due() (*entry, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	// Read under the lock: a check Set due "now" just before is due at this now, not left waiting
	// for a later turn.
	now := time.Now()
	if p.busy >= p.opts.Workers {
		return nil, time.Hour
	}
	for len(p.waiting) > 0 && !p.waiting[0].queue[0].next.After(now) {
		t := heap.Pop(&p.waiting).(*tenant)
		p.setReady(t, true)
		p.ready = append(p.ready, t)
	}
	// The worker goes to the next tenant in the round below its share; when every tenant with a
	// check due is at or above its share, to the next of them anyway: a free worker never idles
	// while a check is due, and the next one freed goes to whoever is below its share again.
	if e := p.take(now, (p.opts.Workers+p.active-1)/max(p.active, 1)); e != nil {
		return e, 0
	}
	if e := p.take(now, p.opts.Workers); e != nil {
		return e, 0
	}
	if len(p.waiting) == 0 {
		return nil, time.Hour
	}
	return nil, p.waiting[0].queue[0].next.Sub(now)
}

// run checks one probe, delivers the result and queues the probe's next check.
func (p *Prober) run(ctx context.Context, e *entry) {
	defer func() {
		// The worker is free, whatever happened to the probe.
		p.mu.Lock()
		defer p.mu.Unlock()
		e.cancel = nil
		p.addRunning(e.tenant, -1)
		if !e.removed && ctx.Err() == nil {
			heap.Push(&e.tenant.queue, e)
		}
		p.place(e.tenant, time.Now())
		p.poke()
	}()

	p.mu.Lock()
	if e.removed {
		p.mu.Unlock()
		return
	}
	spec, version := e.spec, e.version
	cctx, cancel := context.WithCancel(ctx)
	e.cancel = cancel
	p.mu.Unlock()

	start := time.Now()
	c := p.check(cctx, e.key, spec)
	discard := cctx.Err() != nil // cancelled by Remove, Set or shutdown: not a verdict
	cancel()

	p.mu.Lock()
	if e.removed || ctx.Err() != nil {
		p.mu.Unlock()
		return
	}
	var res Result
	deliver := !discard && version == e.version
	if deliver {
		if c.outcome == OutcomeNotAllowed {
			// Not a failure that may pass next time: the probe is unhealthy at once.
			e.state = e.state.Next(false, 0)
		} else {
			e.state = e.state.Next(c.outcome == OutcomePassed, spec.FailureThreshold)
		}
		res = Result{
			Key: e.key, Generation: spec.Generation, CheckedAt: start, Duration: time.Since(start),
			Outcome: c.outcome, StatusCode: c.status, Reason: c.reason, State: e.state,
		}
		e.next = start.Add(p.jittered(spec.Interval))
	}
	p.mu.Unlock()

	if deliver {
		// Delivered before the probe is queued again, so results of one probe never overtake each
		// other.
		p.deliver(res)
	}
}

// check runs one check of the probe key. A check that panics fails, as a check that errs does: the
// probe is checked again at its interval, and the worker takes the next probe due.
func (p *Prober) check(ctx context.Context, key string, spec Spec) (c checked) {
	defer goroutine.Recover(goroutine.Prober, p.opts.Log.WithValues("probe", key), func(any) {
		c = checked{outcome: OutcomeError, reason: "Internal error: the check panicked (a bug, logged by the controller)"}
	})
	return p.checker.check(ctx, spec, p.timeout(spec.Interval))
}

// deliver hands a result to OnResult; one that panics loses that result, not the worker.
func (p *Prober) deliver(res Result) {
	defer goroutine.Recover(goroutine.Prober, p.opts.Log.WithValues("probe", res.Key), nil)
	p.opts.OnResult(res)
}

// poke wakes the dispatcher; mu is held.
func (p *Prober) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *Prober) timeout(interval time.Duration) time.Duration {
	if interval > 0 && interval < p.opts.Timeout {
		return interval
	}
	return p.opts.Timeout
}

func (p *Prober) jittered(interval time.Duration) time.Duration {
	if interval <= 0 {
		interval = time.Second
	}
	j := p.opts.Jitter * (2*rand.Float64() - 1)
	return time.Duration(float64(interval) * (1 + j))
}

func (p *Prober) firstDelay(interval time.Duration) time.Duration {
	spread := p.opts.FirstCheckSpread
	if interval > 0 && interval < spread {
		spread = interval
	}
	return rand.N(spread)
}
