// Package publish applies owners' plans to zones so that provider calls scale with zones, not records.
//
// Every record of one zone goes through that zone's queue. The queue keeps one view of the zone (the
// provider's record sets, read at most once per MaxAge unless a write or a stale-view error forces a
// read) and works in cycles: it takes every request waiting, plans each against the view as the
// requests before it in the cycle left it, applies the sum of their changes in as few batches as the
// backend's limit allows, then reads the zone once to confirm the writes (the validation pass). 200
// records created together therefore cost a handful of listings and batches instead of 200 of each.
package publish

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/plan"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// Request is one owner's wish for one zone.
type Request struct {
	OwnerID string
	// Previous is what the owner published last time (status.endpoints).
	Previous []*v1alpha1.Endpoint
	// Desired is what the owner wants now, already adjusted by the provider; empty withdraws all.
	Desired []*v1alpha1.Endpoint
}

// Outcome is what happened to a request.
type Outcome struct {
	// Plan is the plan made for the request (nil when planning failed).
	Plan *plan.Result
	// Wrote is true when the request's changes were applied.
	Wrote bool
	// Validated is true when a zone read after the write holds everything the owner now publishes.
	Validated bool
}

// Options tune the queues.
type Options struct {
	// MaxAge bounds how old a cached zone view may be when a cycle plans against it.
	MaxAge time.Duration
	// Gather is how long a cycle waits for another request to join it; every request that joins
	// restarts the wait, up to MaxGather after the first, so a burst (a policy creating many records,
	// a controller starting) becomes one cycle while a lone request waits only Gather.
	Gather, MaxGather time.Duration
	// StaleRetries bounds re-plans after the backend says the view was stale.
	StaleRetries int
	// CallTimeout bounds each provider call of a cycle (one read of the zone, one batch) on its own
	// (0: DefaultCallTimeout). A cycle has no bound of its own beyond its calls: a backend that paces
	// its writes to the cloud's rate limit (Azure: 200 record-set writes per minute per zone) needs
	// minutes for a large burst, each batch well within the bound.
	CallTimeout time.Duration
}

// DefaultCallTimeout bounds one provider call when Options.CallTimeout is 0.
const DefaultCallTimeout = 2 * time.Minute

// DefaultOptions suit a controller: views at most 10 s old, cycles gathered for 100 ms to 1 s. A
// gather shorter than the gaps between reconciles of a burst on a busy API server splits the burst
// into many small cycles, each costing a batch and a read.
func DefaultOptions() Options {
	return Options{MaxAge: 10 * time.Second, Gather: 100 * time.Millisecond, MaxGather: time.Second, StaleRetries: 3, CallTimeout: DefaultCallTimeout}
}

// Publisher holds one queue per zone.
type Publisher struct {
	opts   Options
	now    func() time.Time
	mu     sync.Mutex
	queues map[queueKey]*queue
}

type queueKey struct{ account, zoneID string }

// New returns a publisher.
func New(opts Options) *Publisher {
	return &Publisher{opts: opts, now: time.Now, queues: map[queueKey]*queue{}}
}

// Publish plans and applies req in zone and waits for the outcome. account identifies the
// credentials (two Secrets for one cloud account may share a zone; their queues stay apart, and the
// backend's own preconditions keep them consistent).
func (p *Publisher) Publish(ctx context.Context, prov providers.Provider, account string, zone providers.Zone, req Request) (Outcome, error) {
	q := p.queue(account, zone)
	w := &waiter{prov: prov, req: req, arrived: p.now(), done: make(chan result, 1)}
	q.mu.Lock()
	q.pending = append(q.pending, w)
	if !q.running {
		q.running = true
		go q.run()
	}
	q.mu.Unlock()
	select {
	case r := <-w.done:
		return r.outcome, r.err
	case <-ctx.Done():
		return Outcome{}, ctx.Err()
	}
}

// Forget drops the cached view of a zone, so the next cycle reads it.
func (p *Publisher) Forget(account string, zone providers.Zone) {
	q := p.queue(account, zone)
	q.mu.Lock()
	q.view = nil
	q.mu.Unlock()
}

func (p *Publisher) queue(account string, zone providers.Zone) *queue {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := queueKey{account, zone.ID}
	q, ok := p.queues[k]
	if !ok {
		q = &queue{zone: zone, opts: p.opts, now: p.now}
		p.queues[k] = q
	}
	return q
}

type result struct {
	outcome Outcome
	err     error
}

type waiter struct {
	prov    providers.Provider
	req     Request
	arrived time.Time
	done    chan result
}

type queue struct {
	zone providers.Zone
	opts Options
	now  func() time.Time

	mu      sync.Mutex
	pending []*waiter
	running bool
	view    []*v1alpha1.Endpoint
	viewAt  time.Time
	// unclaimed are records no owner claims that a second read confirmed: a record a human made
	// stays one, so the owners it conflicts with are not re-read for on every re-check.
	unclaimed map[v1alpha1.EndpointKey]bool
}

func (q *queue) run() {
	for {
		q.gather()
		q.mu.Lock()
		batch := q.pending
		q.pending = nil
		if len(batch) == 0 {
			q.running = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		q.cycle(batch)
	}
}

// gather waits while requests keep arriving, up to MaxGather.
func (q *queue) gather() {
	start := q.now()
	for {
		q.mu.Lock()
		n := len(q.pending)
		q.mu.Unlock()
		time.Sleep(q.opts.Gather)
		q.mu.Lock()
		grew := len(q.pending) > n
		q.mu.Unlock()
		if !grew || q.now().Sub(start) >= q.opts.MaxGather {
			return
		}
	}
}

// cycle serves every waiter of one gathering. Waiters planned together share one write and one
// validation read.
func (q *queue) cycle(waiters []*waiter) {
	// A cycle runs in the background of the reconciles that wait on it; they give up on their own
	// context. The cycle ends on its own bounds: each provider call has CallTimeout (see call), and
	// there are at most StaleRetries+1 attempts of one read and the batches.
	ctx := context.Background()
	prov := waiters[len(waiters)-1].prov // the newest provider object carries the newest credentials
	start := q.now()
	fresh := false     // whether the plan needs a view read during this cycle
	confirmed := false // whether a record no owner claims was seen on a second read
	for attempt := 0; ; attempt++ {
		view, at, err := q.currentView(ctx, prov, fresh, start)
		if err != nil {
			failAll(waiters, err)
			return
		}
		planned, batches := q.planAll(view, waiters, prov.Capabilities())
		if unclaimed := unclaimedConflicts(planned); !confirmed && q.unconfirmed(unclaimed) {
			// A cloud's listing is not a snapshot: one that runs while another owner writes a record
			// and its ownership TXT can hold the record without the TXT. Before an owner is told it
			// lost to a record no owner claims, a second read confirms it.
			confirmed, fresh, start = true, true, q.now()
			continue
		} else if confirmed {
			q.confirm(unclaimed)
		}
		if at.Before(start) && destructive(batches) {
			// Taking a record or targets away on the strength of a cached view could take what
			// another owner claimed since the view was read: removals are planned on a fresh read.
			fresh = true
			continue
		}
		wrote, err := q.applyAll(ctx, prov, batches)
		if err != nil && providers.KindOf(err) == providers.StaleView && attempt < q.opts.StaleRetries {
			// Someone else wrote the zone: what was applied stays applied (each batch is whole), and
			// re-planning against a fresh read makes the rest consistent.
			fresh, start = true, q.now()
			continue
		}
		q.finish(ctx, prov, planned, wrote, err)
		return
	}
}

// unclaimedConflicts returns the records no owner claims that the plans conflict with.
func unclaimedConflicts(planned []*plannedWaiter) []v1alpha1.EndpointKey {
	var keys []v1alpha1.EndpointKey
	for _, pw := range planned {
		if pw.plan == nil {
			continue
		}
		for _, c := range pw.plan.Conflicts {
			if c.WinnerOwner == "" {
				keys = append(keys, v1alpha1.EndpointKey{DNSName: v1alpha1.NormalizeName(c.DNSName), RecordType: c.RecordType, SetIdentifier: c.SetIdentifier})
			}
		}
	}
	return keys
}

// unconfirmed reports whether any of keys has not been confirmed unclaimed by a second read.
func (q *queue) unconfirmed(keys []v1alpha1.EndpointKey) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, k := range keys {
		if !q.unclaimed[k] {
			return true
		}
	}
	return false
}

func (q *queue) confirm(keys []v1alpha1.EndpointKey) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.unclaimed == nil {
		q.unclaimed = map[v1alpha1.EndpointKey]bool{}
	}
	for _, k := range keys {
		q.unclaimed[k] = true
	}
}

// destructive reports whether the batches delete a record (not an ownership TXT) or take targets
// away from one.
func destructive(batches []*providers.Changes) bool {
	for _, b := range batches {
		for _, ep := range b.Delete {
			if ep.RecordType != v1alpha1.RecordTypeTXT {
				return true
			}
		}
		for i, old := range b.UpdateOld {
			kept := map[string]bool{}
			for _, t := range b.UpdateNew[i].Targets {
				kept[v1alpha1.NormalizeName(t)] = true
			}
			for _, t := range old.Targets {
				if !kept[v1alpha1.NormalizeName(t)] {
					return true
				}
			}
		}
	}
	return false
}

// currentView returns the cached view and when it was read, or reads the zone when there is no
// view, it is older than MaxAge, or fresh asks for one read after since.
func (q *queue) currentView(ctx context.Context, prov providers.Provider, fresh bool, since time.Time) ([]*v1alpha1.Endpoint, time.Time, error) {
	q.mu.Lock()
	view, at := q.view, q.viewAt
	q.mu.Unlock()
	if view != nil && q.now().Sub(at) <= q.opts.MaxAge && (!fresh || !at.Before(since)) {
		return view, at, nil
	}
	at = q.now()
	view, err := q.read(ctx, prov)
	return view, at, err
}

// call bounds one provider call by CallTimeout.
func (q *queue) call(ctx context.Context) (context.Context, context.CancelFunc) {
	d := q.opts.CallTimeout
	if d <= 0 {
		d = DefaultCallTimeout
	}
	return context.WithTimeout(ctx, d)
}

func (q *queue) read(ctx context.Context, prov providers.Provider) ([]*v1alpha1.Endpoint, error) {
	at := q.now()
	ctx, cancel := q.call(ctx)
	defer cancel()
	records, err := prov.Records(ctx, q.zone)
	q.mu.Lock()
	defer q.mu.Unlock()
	if err != nil {
		q.view = nil
		return nil, err
	}
	q.view, q.viewAt = records, at
	return records, nil
}

// plannedWaiter is a waiter with its plan and the batch its changes went into (-1: nothing to write).
type plannedWaiter struct {
	*waiter
	plan  *plan.Result
	err   error
	batch int
}

// planAll plans the waiters one after another, each against the zone as the previous plans leave it,
// and cuts their summed changes into batches one Apply of the backend takes. A waiter's changes are never
// split: a record and its ownership TXT, or the two halves of a type change, land together.
func (q *queue) planAll(view []*v1alpha1.Endpoint, waiters []*waiter, caps providers.Capabilities) ([]*plannedWaiter, []*providers.Changes) {
	var (
		planned []*plannedWaiter
		batches []*providers.Changes
		start   = view // the zone before the current batch
		work    = view // the zone after the plans so far
		limited = caps.MaxChangesPerBatch > 0 || caps.BatchFits != nil
	)
	closeBatch := func() {
		if c := diff(start, work); !c.Empty() {
			batches = append(batches, c)
		}
		start = work
	}
	for _, w := range waiters {
		pw := &plannedWaiter{waiter: w, batch: -1}
		planned = append(planned, pw)
		res, err := plan.Plan(plan.Input{OwnerID: w.req.OwnerID, ZoneName: q.zone.DNSName, Current: work, Previous: w.req.Previous, Desired: w.req.Desired})
		if err != nil {
			pw.err = providers.NewError(providers.Permanent, err)
			continue
		}
		pw.plan = res
		if res.Changes.Empty() {
			continue
		}
		if err := registry.Read(work).Check(w.req.OwnerID, nil, res.Changes); err != nil {
			pw.err = providers.NewError(providers.Permanent, err)
			continue
		}
		if !caps.Fits(res.Changes) {
			pw.err = providers.Errorf(providers.Permanent, "the record needs %d changes at once, more than the provider takes in one batch", res.Changes.Len())
			continue
		}
		next, err := providers.ApplyChanges(q.zone.DNSName, work, res.Changes)
		if err != nil {
			// The plan does not fit the view it was made from: a bug, not the zone's fault.
			pw.err = providers.NewError(providers.Permanent, fmt.Errorf("plan inconsistent with the zone: %w", err))
			continue
		}
		if limited && !caps.Fits(diff(start, next)) {
			closeBatch() // this waiter's changes start the next batch
		}
		work = next
		pw.batch = len(batches)
	}
	closeBatch()
	return planned, batches
}

// applyAll applies the batches in order, each within its own CallTimeout, and returns how many
// were applied.
func (q *queue) applyAll(ctx context.Context, prov providers.Provider, batches []*providers.Changes) (int, error) {
	for i, b := range batches {
		callCtx, cancel := q.call(ctx)
		err := prov.Apply(callCtx, q.zone, b)
		cancel()
		if err != nil {
			q.mu.Lock()
			q.view = nil // whatever we knew may be wrong now
			q.mu.Unlock()
			return i, err
		}
	}
	return len(batches), nil
}

// finish reads the zone once after the writes (the validation pass) and answers every waiter.
func (q *queue) finish(ctx context.Context, prov providers.Provider, planned []*plannedWaiter, wrote int, applyErr error) {
	var view []*v1alpha1.Endpoint
	var readErr error
	if wrote > 0 {
		view, readErr = q.read(ctx, prov)
	} else {
		q.mu.Lock()
		view = q.view
		q.mu.Unlock()
	}
	for _, pw := range planned {
		switch {
		case pw.err != nil:
			pw.done <- result{err: pw.err}
		case pw.batch >= wrote && applyErr != nil:
			pw.done <- result{outcome: Outcome{Plan: pw.plan}, err: applyErr}
		case pw.batch >= 0 && readErr != nil:
			pw.done <- result{outcome: Outcome{Plan: pw.plan, Wrote: true}, err: readErr}
		default:
			pw.done <- result{outcome: Outcome{Plan: pw.plan, Wrote: pw.batch >= 0, Validated: view != nil && holds(view, pw.plan.Published)}}
		}
	}
}

func failAll(waiters []*waiter, err error) {
	for _, w := range waiters {
		w.done <- result{err: err}
	}
}

// holds reports whether the zone has every published record set with at least the published targets
// (other owners may add theirs).
func holds(zone []*v1alpha1.Endpoint, published []*v1alpha1.Endpoint) bool {
	byKey := make(map[v1alpha1.EndpointKey]*v1alpha1.Endpoint, len(zone))
	for _, ep := range zone {
		byKey[ep.Key()] = ep
	}
	for _, want := range published {
		got, ok := byKey[want.Key()]
		if !ok {
			return false
		}
		have := map[string]bool{}
		for _, t := range got.Targets {
			have[v1alpha1.NormalizeName(t)] = true
		}
		for _, t := range want.Targets {
			if !have[v1alpha1.NormalizeName(t)] {
				return false
			}
		}
	}
	return true
}

// diff is the batch that turns zone before into zone after.
func diff(before, after []*v1alpha1.Endpoint) *providers.Changes {
	old := make(map[v1alpha1.EndpointKey]*v1alpha1.Endpoint, len(before))
	for _, ep := range before {
		old[ep.Key()] = ep
	}
	c := &providers.Changes{}
	seen := make(map[v1alpha1.EndpointKey]bool, len(after))
	for _, ep := range after {
		k := ep.Key()
		seen[k] = true
		prev, ok := old[k]
		switch {
		case !ok:
			c.Create = append(c.Create, ep)
		case !prev.SameValues(ep):
			c.UpdateOld = append(c.UpdateOld, prev)
			c.UpdateNew = append(c.UpdateNew, ep)
		}
	}
	for _, ep := range before {
		if !seen[ep.Key()] {
			c.Delete = append(c.Delete, ep)
		}
	}
	sortEndpoints(c.Create)
	sortEndpoints(c.Delete)
	sortPairs(c.UpdateOld, c.UpdateNew)
	return c
}

func sortEndpoints(eps []*v1alpha1.Endpoint) {
	sort.SliceStable(eps, func(i, j int) bool { return less(eps[i].Key(), eps[j].Key()) })
}

func sortPairs(old, new []*v1alpha1.Endpoint) {
	idx := make([]int, len(old))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return less(old[idx[a]].Key(), old[idx[b]].Key()) })
	o, n := append([]*v1alpha1.Endpoint(nil), old...), append([]*v1alpha1.Endpoint(nil), new...)
	for i, j := range idx {
		old[i], new[i] = o[j], n[j]
	}
}

func less(a, b v1alpha1.EndpointKey) bool {
	if a.DNSName != b.DNSName {
		return a.DNSName < b.DNSName
	}
	if a.RecordType != b.RecordType {
		return a.RecordType < b.RecordType
	}
	return a.SetIdentifier < b.SetIdentifier
}
