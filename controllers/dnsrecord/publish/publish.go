// Package publish applies owners' plans to zones so that provider calls scale with zones, not records,
// and the work of a cycle with the change, not with the zone.
//
// Every record of one zone goes through that zone's queue. The queue owns the one view of the zone:
// an index of its records and claims (registry.Zone) and the backend's State read with them (ETags,
// record sets as the cloud holds them), read in full when there is none, when it is older than
// MaxAge, or when a failed write may have left it wrong, and otherwise kept current with the batches
// the queue itself applies. It works in cycles: it takes every request waiting, plans each against
// the view as the requests before it in the cycle left it, sums their changes into as few batches as
// the backend's limits allow, puts each batch through the ownership gate (registry.Zone.Check) on
// the exact changes sent, applies it, and waits once for the backend to serve what it wrote. 200
// records created together therefore cost a listing and a handful of batches, and a cycle for a few
// records in a zone of 20,000 endpoints costs what those records cost.
package publish

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/batch"
	"github.com/dnspolicy/dnspolicy-controller/pkg/goroutine"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/pkg/plan"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// Request is one owner's wish for one zone.
type Request struct {
	OwnerID string
	// Previous is what the owner published last time (status.endpoints).
	Previous []*v1alpha1.Endpoint
	// Desired is what the owner wants now, already adjusted by the provider; empty withdraws every
	// claim of the owner found in the zone, whatever Previous holds.
	Desired []*v1alpha1.Endpoint
	// Wish, when set, replaces Desired: it works out what the owner wants from the view the request
	// is planned against (what other owners state there, for health), and returns the owner-named
	// records (registry.NamedRecordName) it wants too. It runs in the queue's cycle, once per plan.
	Wish func(z *registry.Zone) (desired, named []*v1alpha1.Endpoint)
	// Named are the names of the owner-named records the request manages: each is made to hold the
	// record Wish returns at that name, and deleted when there is none (or no Wish).
	Named []string
	// KeepExpired turns lease expiry off for this owner (its Secret says so): it withdraws no owner
	// whose lease ran out.
	KeepExpired bool
	// Record names the record the request is for (namespace/name). The queue is kept while some
	// record that published through it holds it: until Release, or until the record publishes
	// through another queue. A request with no Record holds nothing.
	Record string
	// renewal marks the queue's own lease renewal, which no reconcile waits for.
	renewal bool
}

// Outcome is what happened to a request.
type Outcome struct {
	// Plan is the plan made for the request (nil when planning failed).
	Plan *plan.Result
	// Wrote is true when the request's changes were applied.
	Wrote bool
	// Written are the changes applied for the request, and Withdrawn the gone owners whose claims
	// they deleted (Plan, re-made after the write to check it, has neither).
	Written   *batch.Changes
	Withdrawn []string
	// Validated is true when the zone holds what the plan publishes: the backend accepted every
	// batch with its preconditions and serves what it wrote (Route 53: INSYNC), or nothing needed
	// writing.
	Validated bool
	// Leases are, for the other owners of the plan (Plan.Owners) whose claims name a lease, that
	// lease as the queue last judged it, by owner.
	Leases map[string]lease.Verdict
	// Renewal is the state of this cluster's own lease in the zone.
	Renewal Renewal
}

// Renewal is the state of a cluster's own lease in one zone.
type Renewal struct {
	// Needed: some claim of this cluster names the lease (it shares a name with another cluster).
	Needed bool
	// At is when the lease was last written or found current; zero when never.
	At time.Time
	// Err is the last renewal's error, nil once one succeeds.
	Err error
}

// Leases configure owner leases (package lease) for every queue.
type Leases struct {
	// Holder is this cluster's ID; "" turns leases off (nothing is renewed, no one expires).
	Holder string
	// Every is the renewal period, Duration what the lease asks readers to wait (0: never expire
	// us), Tolerance what this reader adds to others' durations.
	Every, Duration, Tolerance time.Duration
}

// Options tune the queues.
type Options struct {
	// MaxAge bounds how old a view may be when a cycle plans against it: other owners' writes are
	// seen within MaxAge.
	MaxAge time.Duration
	// Gather is how long a cycle waits for another request to join it; every request that joins
	// restarts the wait, up to MaxGather after the first, so a burst (a policy creating many records,
	// a controller starting) becomes one cycle while a lone request waits only Gather.
	Gather, MaxGather time.Duration
	// StaleRetries bounds re-plans after the backend says the view was stale.
	StaleRetries int
	// Leases configure owner leases.
	Leases Leases
	// Replan, when set, is told owners of this cluster that should plan again now, without waiting
	// for their next re-check: those sharing a name with an owner whose lease just expired, and all
	// of a zone's once the zone is read again after a gap longer than this cluster's lease (other
	// clusters may have withdrawn it). It must not block.
	Replan func(owners []string)
	// CallTimeout bounds each provider call of a cycle (one read of the zone, one batch, the wait
	// for propagation) on its own (0: DefaultCallTimeout). A cycle has no bound of its own beyond its
	// calls: a backend that paces its writes to the cloud's rate limit (Azure: 200 record-set writes
	// per minute per zone) needs minutes for a large burst, each batch well within the bound.
	CallTimeout time.Duration
	// Log is where a cycle that panicked is logged (package goroutine).
	Log logr.Logger
}

// DefaultCallTimeout bounds one provider call when Options.CallTimeout is 0.
const DefaultCallTimeout = 2 * time.Minute

// DefaultOptions suit a controller: views at most 10 s old, cycles gathered for 100 ms to 1 s. A
// gather shorter than the gaps between reconciles of a burst on a busy API server splits the burst
// into many small cycles, each costing a batch.
func DefaultOptions() Options {
	return Options{MaxAge: 10 * time.Second, Gather: 100 * time.Millisecond, MaxGather: time.Second, StaleRetries: 3, CallTimeout: DefaultCallTimeout}
}

// Publisher holds one queue per zone and account.
//
// A queue lives as long as what it serves: it is removed when the last record holding it is
// released (Release), and when the credentials it was built with are dropped (Drop: the Secret was
// deleted or changed). Records are counted rather than swept on idleness because a queue renews
// this cluster's lease on its own timer, so it is never idle while it still costs something: only
// the records can say that nothing needs it any more. A removed queue answers what is already
// waiting on it, then its goroutine ends and it renews nothing; the next request builds a new one.
type Publisher struct {
	opts   Options
	now    func() time.Time
	mu     sync.Mutex
	queues map[queueKey]*queue
	// held is the queue each record (Request.Record) last published through.
	held    map[string]queueKey
	closed  bool
	cluster *cluster
}

// cluster is what the publisher knows of this cluster's owners, across its queues: two Secrets can
// lead to one zone, and an owner of either is this cluster's.
type cluster struct {
	mu sync.Mutex
	// local are the owners whose requests came through the publisher.
	local map[string]bool
	// wishes are, by owner, what its latest plan that its zone holds wants, by key: the plans of the
	// others read them where the owner's claims, written as Kuadrant writes them, do not say
	// (plan.Input.Known).
	wishes map[string]map[v1alpha1.EndpointKey]*v1alpha1.Endpoint
}

func (c *cluster) isLocal(owner string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.local[owner]
}

// known is plan.Input.Known: what another owner of this cluster wants for a key, as remembered.
func (c *cluster) known(owner string, key v1alpha1.EndpointKey) *v1alpha1.Endpoint {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wishes[owner][key]
}

// remember notes what a request whose plan the zone now holds wants.
func (c *cluster) remember(p *planned) {
	if p.req.renewal {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(p.desired) == 0 {
		delete(c.wishes, p.req.OwnerID)
		return
	}
	w := make(map[v1alpha1.EndpointKey]*v1alpha1.Endpoint, len(p.desired))
	for _, e := range p.desired {
		w[e.Key()] = e
	}
	c.wishes[p.req.OwnerID] = w
}

type queueKey struct{ account, zoneID string }

// New returns a publisher.
func New(opts Options) *Publisher {
	return &Publisher{opts: opts, now: time.Now, queues: map[queueKey]*queue{}, held: map[string]queueKey{},
		cluster: &cluster{local: map[string]bool{}, wishes: map[string]map[v1alpha1.EndpointKey]*v1alpha1.Endpoint{}}}
}

// Publish plans and applies req in zone and waits for the outcome. account identifies the
// credentials (two Secrets for one cloud account may share a zone; their queues stay apart, and the
// backend's own preconditions keep them consistent).
func (p *Publisher) Publish(ctx context.Context, prov providers.Provider, account string, zone providers.Zone, req Request) (Outcome, error) {
	q := p.hold(account, zone, req)
	w := &waiter{prov: prov, req: req, done: make(chan result, 1)}
	q.mu.Lock()
	q.local[req.OwnerID] = true
	q.cluster.mu.Lock()
	q.cluster.local[req.OwnerID] = true
	q.cluster.mu.Unlock()
	q.prov = prov
	q.pending = append(q.pending, w)
	q.start()
	q.mu.Unlock()
	select {
	case r := <-w.done:
		return r.outcome, r.err
	case <-ctx.Done():
		return Outcome{}, ctx.Err()
	}
}

// Close stops renewing leases: a stopped controller's leases age, and expire at their readers.
func (p *Publisher) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, q := range p.queues {
		q.mu.Lock()
		q.closed = true
		if q.renewTimer != nil {
			q.renewTimer.Stop()
		}
		q.mu.Unlock()
	}
}

// Release lets go of the queue record last published through (it is gone, or publishes nowhere
// now): the last record to leave a queue removes it, and an owner no queue serves any more is
// forgotten.
func (p *Publisher) Release(record string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.releaseLocked(record)
}

// Drop removes every queue of account, whose credentials are gone or changed: the Secret they were
// built from was deleted, or holds other credentials now. Nothing is renewed with them any more; the
// records that still publish with the account build a new queue.
func (p *Publisher) Drop(account string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, q := range p.queues {
		if k.account != account {
			continue
		}
		for record := range q.records {
			delete(p.held, record)
		}
		p.removeLocked(k, q)
	}
}

// Queues returns how many queues the publisher holds, and how many records hold them.
func (p *Publisher) Queues() (queues, records int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queues), len(p.held)
}

// hold returns the queue of account and zone, held by req.Record, which lets go of the queue it held
// before, if another.
func (p *Publisher) hold(account string, zone providers.Zone, req Request) *queue {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := queueKey{account, zone.ID}
	if prev, ok := p.held[req.Record]; ok && prev != k {
		p.releaseLocked(req.Record)
	}
	q := p.queueLocked(k, zone)
	if req.Record != "" {
		p.held[req.Record] = k
		q.mu.Lock()
		q.records[req.Record] = req.OwnerID
		q.mu.Unlock()
	}
	return q
}

// releaseLocked lets go of record's queue; p.mu is held.
func (p *Publisher) releaseLocked(record string) {
	k, ok := p.held[record]
	if !ok {
		return
	}
	delete(p.held, record)
	q := p.queues[k]
	if q == nil {
		return
	}
	q.mu.Lock()
	owner := q.records[record]
	delete(q.records, record)
	shared := false
	for _, o := range q.records {
		shared = shared || o == owner
	}
	if !shared {
		delete(q.local, owner)
	}
	empty := len(q.records) == 0
	q.mu.Unlock()
	if empty {
		p.removeLocked(k, q)
	}
	p.forgetOwnerLocked(owner)
}

// removeLocked removes queue q at k and stops its renewals; p.mu is held. A cycle running finishes
// with the waiters it has.
func (p *Publisher) removeLocked(k queueKey, q *queue) {
	delete(p.queues, k)
	q.mu.Lock()
	q.closed = true
	if q.renewTimer != nil {
		q.renewTimer.Stop()
	}
	owners := make([]string, 0, len(q.local))
	for o := range q.local {
		owners = append(owners, o)
	}
	q.mu.Unlock()
	for _, o := range owners {
		p.forgetOwnerLocked(o)
	}
}

// forgetOwnerLocked forgets that owner is this cluster's, and what it wants, once no queue serves
// it; p.mu is held.
func (p *Publisher) forgetOwnerLocked(owner string) {
	for _, q := range p.queues {
		q.mu.Lock()
		served := q.local[owner]
		q.mu.Unlock()
		if served {
			return
		}
	}
	p.cluster.mu.Lock()
	delete(p.cluster.local, owner)
	delete(p.cluster.wishes, owner)
	p.cluster.mu.Unlock()
}

// Forget drops the view of a zone, so the next cycle reads it.
func (p *Publisher) Forget(account string, zone providers.Zone) {
	p.mu.Lock()
	q := p.queues[queueKey{account, zone.ID}]
	p.mu.Unlock()
	if q == nil {
		return // none kept: the next cycle reads the zone anyway
	}
	q.mu.Lock()
	q.view = nil
	q.mu.Unlock()
}

func (p *Publisher) queueLocked(k queueKey, zone providers.Zone) *queue {
	q, ok := p.queues[k]
	if !ok {
		q = &queue{zone: zone, opts: p.opts, now: p.now, local: map[string]bool{}, records: map[string]string{}, cluster: p.cluster, closed: p.closed}
		q.judge.Tolerance = p.opts.Leases.Tolerance
		q.zoneKey = k.account + "/" + zone.ID
		p.queues[k] = q
	}
	return q
}

type result struct {
	outcome Outcome
	err     error
}

type waiter struct {
	prov providers.Provider
	req  Request
	done chan result
}

// view is the queue's one view of its zone.
type view struct {
	zone  *registry.Zone
	state providers.State
	at    time.Time
}

type queue struct {
	zone providers.Zone
	opts Options
	now  func() time.Time

	mu      sync.Mutex
	pending []*waiter
	running bool
	// view is owned by the cycle running; nil when there is none or it may be wrong.
	view *view
	// parsed is the index of the latest read, kept after the view is dropped: the next read reuses
	// its parsed ownership TXTs where they are unchanged.
	parsed *registry.Zone
	// unclaimed are records no owner claims that a second read confirmed: a record a human made
	// stays one, so the owners it conflicts with are not re-read for on every re-check.
	unclaimed map[v1alpha1.EndpointKey]bool
	// local are the owners whose requests came through this queue; cluster all of this cluster's.
	local map[string]bool
	// records are the records holding the queue (Request.Record), with their owners.
	records map[string]string
	cluster *cluster
	// prov is the newest provider object (renewals use it).
	prov providers.Provider
	// zoneKey tells this queue's zone apart in the judge's memory.
	zoneKey string
	judge   lease.Judge
	// survey is what the latest read told of leases; renewal the state of our own.
	survey  lease.Survey
	renewal Renewal
	// contact is when the zone was last read.
	contact time.Time
	// renewTimer brings a cycle about when the lease is due and no request comes; closed stops it.
	renewTimer *time.Timer
	closed     bool
}

// start runs the queue's cycles unless they run; q.mu is held.
func (q *queue) start() {
	if !q.running {
		q.running = true
		go q.run()
	}
}

func (q *queue) run() {
	for {
		q.gather()
		q.mu.Lock()
		waiters := q.pending
		q.pending = nil
		if len(waiters) == 0 {
			q.running = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		q.serve(waiters)
	}
}

// serve runs one cycle. A cycle that panics fails its waiters, which their reconciles retry with
// their backoff, and drops the view, which the cycle may have left half changed; the queue carries
// on with the next cycle.
func (q *queue) serve(waiters []*waiter) {
	defer goroutine.Recover(goroutine.Publish, q.opts.Log.WithValues("zone", q.zone.DNSName, "zoneID", q.zone.ID), func(any) {
		q.forget()
		err := providers.Errorf(providers.Transient, "the publish cycle of zone %s failed on an internal error (logged by the controller)", q.zone.DNSName)
		for _, w := range waiters {
			select {
			case w.done <- result{err: err}:
			default: // answered already, its answer not yet read
			}
		}
	})
	q.cycle(waiters)
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

// cycle serves every waiter of one gathering.
func (q *queue) cycle(waiters []*waiter) {
	// A cycle runs in the background of the reconciles that wait on it; they give up on their own
	// context. The cycle ends on its own bounds: each provider call has CallTimeout (see call), and
	// every retry either answers a waiter or is one of at most StaleRetries re-plans.
	ctx := context.Background()
	prov := waiters[len(waiters)-1].prov // the newest provider object carries the newest credentials
	q.mu.Lock()
	closed := q.closed
	q.mu.Unlock()
	if closed {
		// A removed or closed queue serves who waits on it, and renews nothing, not even a
		// renewal its timer queued just before.
		if waiters = slices.DeleteFunc(waiters, func(w *waiter) bool { return w.req.renewal }); len(waiters) == 0 {
			return
		}
	} else if w := q.renewalWaiter(waiters, prov); w != nil {
		waiters = append(waiters, w)
	}
	for i, w := range waiters {
		if w.req.renewal {
			// First, so that it lands in the cycle's first batch, however many batches follow.
			waiters = append([]*waiter{w}, append(waiters[:i:i], waiters[i+1:]...)...)
			defer q.renewed(w)
			break
		}
	}
	start := q.now()
	fresh := false     // whether the plan needs a view read during this cycle
	confirmed := false // whether a record no owner claims was seen on a second read
	isolate := false   // whether each waiter gets a batch of its own (after a permanent batch failure)
	stale := 0
	var written []*planned // waiters whose batches applied, answered once propagation is awaited
	remaining := waiters
	for len(remaining) > 0 {
		v, err := q.currentView(ctx, prov, fresh, start)
		if err != nil {
			fail(remaining, err)
			break
		}
		planned, batches := q.planAll(v, remaining, prov.Capabilities(), isolate)
		if unclaimed := unclaimedConflicts(planned); !confirmed && q.unconfirmed(unclaimed) {
			// A cloud's listing is not a snapshot: one that runs while another owner writes a record
			// and its ownership TXT can hold the record without the TXT. Before an owner is told it
			// lost to a record no owner claims, a second read confirms it.
			confirmed, fresh, start = true, true, q.now()
			continue
		} else if confirmed {
			q.confirm(unclaimed)
		}
		if v.at.Before(start) && destructive(batches) {
			// Taking a record or targets away on the strength of an old view could take what
			// another owner claimed since the view was read: removals are planned on a fresh read.
			fresh = true
			continue
		}
		done, failed, err := q.applyAll(ctx, prov, v, batches)
		written = append(written, done...)
		remaining = q.answerUnwritten(v.zone, planned, done, failed, err)
		switch kind := providers.KindOf(err); {
		case err == nil:
		case kind == providers.StaleView && stale < q.opts.StaleRetries:
			// Someone else wrote the zone: what was applied stays applied (each batch is whole), and
			// re-planning the rest against a fresh read makes them consistent.
			stale++
			fresh, start = true, q.now()
			remaining = append(remaining, failed.waiterList()...)
		case kind == providers.Permanent && len(failed.waiters) > 1:
			// One bad request must not fail everyone it shared a batch with: each is tried alone.
			isolate, fresh, start = true, true, q.now()
			remaining = append(remaining, failed.waiterList()...)
		case kind == providers.Permanent:
			failed.fail(err) // alone in its batch: it fails alone, the rest go on
			fresh, start = true, q.now()
		default:
			failed.fail(err)
			fail(remaining, err)
			remaining = nil
		}
	}
	q.await(ctx, prov, written)
}

// renewalWaiter returns the waiter that renews this cluster's lease in the cycle, or nil when leases
// are off or one is among waiters already (the timer's).
func (q *queue) renewalWaiter(waiters []*waiter, prov providers.Provider) *waiter {
	l := q.opts.Leases
	if l.Holder == "" || slices.ContainsFunc(waiters, func(w *waiter) bool { return w.req.renewal }) {
		return nil
	}
	name := lease.RecordName(l.Holder, q.zone.DNSName)
	return &waiter{prov: prov, done: make(chan result, 1), req: Request{OwnerID: l.Holder, renewal: true, Named: []string{name},
		Wish: func(*registry.Zone) (desired, named []*v1alpha1.Endpoint) {
			// The lease is kept while a claim of this cluster names it (as of the last read, or
			// written since), and goes with the last.
			if q.renewal.Needed {
				return nil, []*v1alpha1.Endpoint{lease.Renew(l.Holder, q.now(), l.Every, l.Duration).Record(q.zone.DNSName)}
			}
			return nil, nil
		}}}
}

// renewed records how the cycle's renewal went and schedules the next renewal.
func (q *queue) renewed(w *waiter) {
	l := q.opts.Leases
	if l.Holder == "" {
		return
	}
	if w != nil {
		select {
		case r := <-w.done:
			switch {
			case r.err != nil:
				q.renewal.Err = r.err
			case r.outcome.Wrote && q.renewal.Needed:
				q.renewal.At, q.renewal.Err = q.now(), nil
			case r.outcome.Validated:
				q.renewal.Err = nil
			}
		default:
		}
	}
	if !q.renewal.Needed {
		return
	}
	next := q.now().Truncate(l.Every).Add(l.Every + time.Second).Sub(q.now())
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.renewTimer != nil {
		q.renewTimer.Stop()
	}
	if q.closed {
		return
	}
	q.renewTimer = time.AfterFunc(next, func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		if w := q.renewalWaiter(q.pending, q.prov); w != nil && !q.closed {
			q.pending = append(q.pending, w)
			q.start()
		}
	})
}

func (q *queue) localOwners() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	owners := make([]string, 0, len(q.local))
	for o := range q.local {
		owners = append(owners, o)
	}
	sort.Strings(owners)
	return owners
}

func (q *queue) isLocal(owner string) bool { return q.cluster.isLocal(owner) }

// forget drops the view: it may no longer match the zone.
func (q *queue) forget() {
	q.mu.Lock()
	q.view = nil
	q.mu.Unlock()
}

// await waits once for the backend to serve every batch of the cycle, checks them, and answers
// their waiters. The check is a read of the zone after the writes, against which every written
// request is planned again: one that plans to no change is published as the zone now holds it, and
// the plan made from that read names every conflict, also one that another owner's write caused
// while ours was in flight, so a loser is told in the same pass. One that would change the zone again
// (it changed under us) is not yet validated and is re-checked soon. The read becomes the view.
func (q *queue) await(ctx context.Context, prov providers.Provider, written []*planned) {
	if !slices.ContainsFunc(written, func(p *planned) bool { return !p.req.renewal }) {
		// A renewal alone needs no check: nobody waits on it, and the next read shows it.
		for _, p := range written {
			p.done <- result{outcome: Outcome{Plan: p.plan, Wrote: true}}
		}
		return
	}
	q.mu.Lock()
	v := q.view
	q.mu.Unlock()
	var err error
	if v != nil {
		callCtx, cancel := q.call(ctx)
		err = prov.AwaitPropagation(callCtx, q.zone, v.state)
		cancel()
	}
	var after *view
	if err == nil {
		q.forget()
		after, err = q.currentView(ctx, prov, true, q.now())
	}
	for _, p := range written {
		if err != nil {
			p.done <- result{outcome: Outcome{Plan: p.plan, Wrote: true}, err: err}
			continue
		}
		again, perr := p.planAgainst(q, after.zone, p.plan.Published)
		if perr != nil || !again.Changes.Empty() {
			p.done <- result{outcome: q.written(q.outcome(p.plan, after.zone, true, false), p.plan)}
			continue
		}
		p.done <- result{outcome: q.written(q.outcome(again, after.zone, true, true), p.plan)}
	}
}

// unclaimedConflicts returns the records no owner claims that the plans conflict with.
func unclaimedConflicts(planned []*planned) []v1alpha1.EndpointKey {
	var keys []v1alpha1.EndpointKey
	for _, p := range planned {
		if p.plan == nil {
			continue
		}
		for _, c := range p.plan.Conflicts {
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
func destructive(batches []*pendingBatch) bool {
	for _, b := range batches {
		c := b.changes
		for _, ep := range c.Delete {
			if ep.RecordType != v1alpha1.RecordTypeTXT {
				return true
			}
		}
		for i, old := range c.UpdateOld {
			kept := map[string]bool{}
			for _, t := range c.UpdateNew[i].Targets {
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

// currentView returns the queue's view, or reads the zone when there is none, it is older than
// MaxAge, or fresh asks for one read after since. A view read through an older backend object of the
// same Secret (rotated credentials) stays good: a Secret's type, and so its backend, cannot change.
func (q *queue) currentView(ctx context.Context, prov providers.Provider, fresh bool, since time.Time) (*view, error) {
	q.mu.Lock()
	v := q.view
	q.mu.Unlock()
	if v != nil && q.now().Sub(v.at) <= q.opts.MaxAge && (!fresh || !v.at.Before(since)) {
		return v, nil
	}
	at := q.now()
	callCtx, cancel := q.call(ctx)
	read, err := prov.Records(callCtx, q.zone)
	cancel()
	if err != nil {
		q.forget()
		return nil, err
	}
	q.mu.Lock()
	prev := q.parsed
	q.mu.Unlock()
	v = &view{zone: registry.ReadAgain(prev, read.Endpoints), state: read.State, at: at}
	q.mu.Lock()
	q.view, q.parsed = v, v.zone
	q.mu.Unlock()
	q.surveyLeases(v, read.Endpoints)
	q.replanUnstated(v.zone)
	return v, nil
}

// replanUnstated asks this cluster's owners to plan again whose claims do not state their wish at a
// name where an owner of another cluster claims too (it joined since they planned): their plans
// state it there (plan.Input.Local), so that the other cluster's owners can publish it when they
// win no longer, or withdraw exactly our targets once our lease expires.
func (q *queue) replanUnstated(z *registry.Zone) {
	if q.opts.Replan == nil {
		return
	}
	var replan []string
	for _, o := range q.localOwners() {
		if slices.ContainsFunc(z.Names(o), func(name string) bool { return q.unstatedAbroad(z, o, name) }) {
			replan = append(replan, o)
		}
	}
	if len(replan) > 0 {
		q.opts.Replan(replan)
	}
}

// unstatedAbroad: at name, owner has a claim that does not state its wish, and an owner of another
// cluster claims a record.
func (q *queue) unstatedAbroad(z *registry.Zone, owner, name string) bool {
	unstated, abroad := false, false
	for _, r := range z.AtName(name) {
		for _, c := range r.Claims {
			switch {
			case c.Owner == owner:
				unstated = unstated || c.Wish == nil && !c.Legacy
			case !q.isLocal(c.Owner):
				abroad = true
			}
		}
	}
	return unstated && abroad
}

// surveyLeases judges the leases of a zone just read, and tells this cluster's owners sharing names
// with the owners of a lease that just expired to plan again.
func (q *queue) surveyLeases(v *view, eps []*v1alpha1.Endpoint) {
	l := q.opts.Leases
	if l.Holder == "" {
		return
	}
	if !q.contact.IsZero() && l.Duration > 0 && v.at.Sub(q.contact) > l.Duration && q.opts.Replan != nil {
		// Cut off from the zone for longer than our lease: others may have counted this cluster gone
		// and withdrawn its owners, who re-publish now rather than at their next re-check.
		q.opts.Replan(q.localOwners())
	}
	q.contact = v.at
	prev := q.survey.Verdicts
	q.survey = q.judge.Survey(q.zoneKey, eps, v.zone, v.at)
	own := lease.Key(l.Holder)
	q.renewal.Needed = q.survey.Named[own] > 0
	var replan []string
	for key, verdict := range q.survey.Verdicts {
		if key == own || !verdict.Expired || prev[key].Expired {
			continue
		}
		for _, o := range q.survey.Sharers[key] {
			if q.isLocal(o) {
				replan = append(replan, o)
			}
		}
	}
	if len(replan) > 0 && q.opts.Replan != nil {
		sort.Strings(replan)
		q.opts.Replan(slices.Compact(replan))
	}
}

// call bounds one provider call by CallTimeout.
func (q *queue) call(ctx context.Context) (context.Context, context.CancelFunc) {
	d := q.opts.CallTimeout
	if d <= 0 {
		d = DefaultCallTimeout
	}
	return context.WithTimeout(ctx, d)
}

// planned is a waiter with its plan.
type planned struct {
	*waiter
	plan *plan.Result
	err  error
	// desired and named are what the request wants, as worked out for the plan (Request.Wish).
	desired, named []*v1alpha1.Endpoint
	// wrote: the plan had changes and its batch applied.
	wrote bool
}

// planAgainst plans the request's wish against z: the plan of its desired endpoints, with the changes
// that make its owner-named records what it wants appended.
func (p *planned) planAgainst(q *queue, z *registry.Zone, previous []*v1alpha1.Endpoint) (*plan.Result, error) {
	in := plan.Input{OwnerID: p.req.OwnerID, ZoneName: q.zone.DNSName, Zone: z, Previous: previous, Desired: p.desired, Known: q.cluster.known}
	in.Local = q.isLocal
	if l := q.opts.Leases; l.Holder != "" && !p.req.renewal {
		in.Lease = lease.Key(l.Holder)
		if !p.req.KeepExpired {
			verdicts := q.survey.Verdicts
			in.LeaseExpired = func(key string) bool { return verdicts[key].Expired }
		}
	}
	res, err := plan.Plan(in)
	if err != nil || len(p.req.Named) == 0 {
		return res, err
	}
	want := map[string]*v1alpha1.Endpoint{}
	for _, e := range p.named {
		want[v1alpha1.NormalizeName(e.DNSName)] = e
	}
	for _, name := range p.req.Named {
		name = v1alpha1.NormalizeName(name)
		cur := z.Endpoint(v1alpha1.EndpointKey{DNSName: name, RecordType: v1alpha1.RecordTypeTXT})
		switch w := want[name]; {
		case w == nil && cur != nil:
			res.Changes.Delete = append(res.Changes.Delete, cur)
		case w == nil:
		case cur == nil:
			res.Changes.Create = append(res.Changes.Create, w)
		case !cur.SameValues(w):
			res.Changes.UpdateOld = append(res.Changes.UpdateOld, cur)
			res.Changes.UpdateNew = append(res.Changes.UpdateNew, w)
		}
	}
	return res, nil
}

// pendingBatch is one batch being put together from the plans of several waiters: for every key
// they change, the value before the first of them and after the last, and what they require.
type pendingBatch struct {
	before, after map[v1alpha1.EndpointKey]*v1alpha1.Endpoint
	require       map[v1alpha1.EndpointKey]*v1alpha1.Endpoint
	owners        []string
	expired       []string // owners the waiters withdraw as gone (plan.Result.Withdrawn)
	waiters       []*planned
	// changes is the batch sent: the sum of the waiters' changes, built when the batch closes.
	changes *batch.Changes
}

func newPendingBatch() *pendingBatch {
	return &pendingBatch{before: map[v1alpha1.EndpointKey]*v1alpha1.Endpoint{}, after: map[v1alpha1.EndpointKey]*v1alpha1.Endpoint{},
		require: map[v1alpha1.EndpointKey]*v1alpha1.Endpoint{}}
}

func (b *pendingBatch) waiterList() []*waiter {
	out := make([]*waiter, len(b.waiters))
	for i, p := range b.waiters {
		out[i] = p.waiter
	}
	return out
}

func (b *pendingBatch) fail(err error) {
	if b == nil {
		return
	}
	for _, p := range b.waiters {
		p.done <- result{outcome: Outcome{Plan: p.plan}, err: err}
	}
}

// sum returns the batch with one more plan's changes added (nil: none), against zone z as the plans
// so far left it, without changing b.
func (b *pendingBatch) sum(z *registry.Zone, c *batch.Changes) *batch.Changes {
	before, after := b.before, b.after
	if c != nil {
		before, after = maps(b.before), maps(b.after)
		note := func(e *v1alpha1.Endpoint, value *v1alpha1.Endpoint) {
			k := e.Key()
			if _, ok := before[k]; !ok {
				before[k] = z.Endpoint(k)
			}
			after[k] = value
		}
		for _, e := range c.Delete {
			note(e, nil)
		}
		for i, e := range c.UpdateOld {
			note(e, c.UpdateNew[i])
		}
		for _, e := range c.Create {
			note(e, e)
		}
	}
	out := &batch.Changes{}
	for k, old := range before {
		switch now := after[k]; {
		case old == nil && now != nil:
			out.Create = append(out.Create, now)
		case old != nil && now == nil:
			out.Delete = append(out.Delete, old)
		case old != nil && !old.SameValues(now):
			out.UpdateOld = append(out.UpdateOld, old)
			out.UpdateNew = append(out.UpdateNew, now)
		}
	}
	require := b.require
	if c != nil && len(c.Require) > 0 {
		require = maps(b.require)
		for _, e := range c.Require {
			require[e.Key()] = e
		}
	}
	for k, e := range require {
		if _, changed := before[k]; !changed {
			// A required set the batch changes is held by the exact old values the change names.
			out.Require = append(out.Require, e)
		}
	}
	sortChanges(out)
	return out
}

func maps(m map[v1alpha1.EndpointKey]*v1alpha1.Endpoint) map[v1alpha1.EndpointKey]*v1alpha1.Endpoint {
	out := make(map[v1alpha1.EndpointKey]*v1alpha1.Endpoint, len(m)+8)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// add records a plan's changes, which z has just applied; before is what the plan changed, read
// from z before it applied them.
func (b *pendingBatch) add(p *planned, before map[v1alpha1.EndpointKey]*v1alpha1.Endpoint, z *registry.Zone) {
	for k, old := range before {
		if _, ok := b.before[k]; !ok {
			b.before[k] = old
		}
		b.after[k] = z.Endpoint(k)
	}
	for _, e := range p.plan.Changes.Require {
		b.require[e.Key()] = e
	}
	if !slices.Contains(b.owners, p.req.OwnerID) {
		b.owners = append(b.owners, p.req.OwnerID)
	}
	for _, o := range p.plan.Withdrawn {
		if !slices.Contains(b.expired, o) {
			b.expired = append(b.expired, o)
		}
	}
	b.waiters = append(b.waiters, p)
}

// planAll plans the waiters one after another, each against the zone as the previous plans leave
// it, and sums their changes into batches one Apply of the backend takes. A waiter's changes are
// never split: a record and its ownership TXT, or the two halves of a type change, land together.
// The view's index is changed as the plans go and put back before planAll returns; the batches are
// applied to it again, one by one, as they are written.
func (q *queue) planAll(v *view, waiters []*waiter, caps providers.Capabilities, isolate bool) ([]*planned, []*pendingBatch) {
	var (
		all     []*planned
		batches []*pendingBatch
		cur     = newPendingBatch()
		limited = caps.MaxChangesPerBatch > 0 || caps.BatchFits != nil || isolate
	)
	closeBatch := func() {
		if len(cur.waiters) > 0 {
			cur.changes = cur.sum(v.zone, nil)
			batches = append(batches, cur)
		}
		cur = newPendingBatch()
	}
	for _, w := range waiters {
		p := &planned{waiter: w, desired: w.req.Desired}
		all = append(all, p)
		if w.req.Wish != nil {
			p.desired, p.named = w.req.Wish(v.zone)
		}
		res, err := p.planAgainst(q, v.zone, w.req.Previous)
		if err != nil {
			p.err = providers.NewError(providers.Permanent, err)
			continue
		}
		p.plan = res
		if res.Changes.Empty() {
			continue
		}
		if q.opts.Leases.Holder != "" && namesLease(res.Changes, lease.Key(q.opts.Leases.Holder)) {
			q.renewal.Needed = true
		}
		if err := v.zone.Check([]string{w.req.OwnerID}, res.Withdrawn, res.Changes); err != nil {
			p.err = providers.NewError(providers.Permanent, err)
			continue
		}
		if !caps.Fits(res.Changes) {
			p.err = providers.Errorf(providers.Permanent, "the record needs %d changes at once, more than the provider takes in one batch", res.Changes.Len())
			continue
		}
		if limited && len(cur.waiters) > 0 && (isolate || !caps.Fits(cur.sum(v.zone, res.Changes))) {
			closeBatch() // this waiter's changes start the next batch
		}
		before := map[v1alpha1.EndpointKey]*v1alpha1.Endpoint{}
		for _, e := range slices.Concat(res.Changes.Create, res.Changes.UpdateOld, res.Changes.Delete) {
			before[e.Key()] = v.zone.Endpoint(e.Key())
		}
		if err := v.zone.Apply(res.Changes); err != nil {
			// The plan does not fit the view it was made from: a bug, not the zone's fault.
			p.err = providers.NewError(providers.Permanent, fmt.Errorf("plan inconsistent with the zone: %w", err))
			continue
		}
		cur.add(p, before, v.zone)
	}
	closeBatch()
	for i := len(batches) - 1; i >= 0; i-- {
		if err := v.zone.Revert(batches[i].changes); err != nil {
			// The sums are built from what the index applied, so they revert; if not, the index
			// cannot be trusted and the next cycle reads the zone.
			q.forget()
		}
	}
	return all, batches
}

// applyAll puts each batch through the ownership gate on the exact changes to be sent, applies it
// to the view's index and to the backend, and stops at the first failure. It returns the waiters
// whose plans are done (their batch applied, or they had nothing to write), the batch that failed,
// and its error.
func (q *queue) applyAll(ctx context.Context, prov providers.Provider, v *view, batches []*pendingBatch) ([]*planned, *pendingBatch, error) {
	var done []*planned
	for _, b := range batches {
		if err := v.zone.Check(b.owners, b.expired, b.changes); err != nil {
			// Every plan in it passed the check alone: summing them went wrong.
			return done, b, providers.NewError(providers.Permanent, fmt.Errorf("batch of %d records refused: %w", len(b.waiters), err))
		}
		if err := v.zone.Apply(b.changes); err != nil {
			q.forget()
			return done, b, providers.NewError(providers.Permanent, fmt.Errorf("batch inconsistent with the zone: %w", err))
		}
		callCtx, cancel := q.call(ctx)
		err := prov.Apply(callCtx, q.zone, v.state, b.changes)
		cancel()
		if err != nil {
			q.forget() // the index holds the batch, the zone may not, the backend's state is unknown
			return done, b, err
		}
		for _, p := range b.waiters {
			p.wrote = true
			q.cluster.remember(p)
		}
		done = append(done, b.waiters...)
	}
	return done, nil, nil
}

// answerUnwritten answers the waiters that failed on their own, adds those that had nothing to
// write to done, and returns the waiters still to serve: those of the batches after the one that
// failed. The failed batch's waiters are the caller's to answer or retry.
func (q *queue) answerUnwritten(z *registry.Zone, all, done []*planned, failed *pendingBatch, err error) []*waiter {
	settled := map[*waiter]bool{}
	for _, p := range done {
		settled[p.waiter] = true
	}
	if failed != nil {
		for _, p := range failed.waiters {
			settled[p.waiter] = true
		}
	}
	var remaining []*waiter
	for _, p := range all {
		switch {
		case settled[p.waiter]:
		case p.err != nil:
			p.done <- result{err: p.err}
		case p.plan.Changes.Empty() && err == nil:
			q.cluster.remember(p)
			p.done <- result{outcome: q.outcome(p.plan, z, false, true)}
		default:
			// Nothing to write, or a batch after the one that failed: planned on a view that the
			// failure may have made wrong, so planned again.
			remaining = append(remaining, p.waiter)
		}
	}
	return remaining
}

// outcome is a request's outcome with the leases its plan's owners name, as judged last.
func (q *queue) outcome(res *plan.Result, z *registry.Zone, wrote, validated bool) Outcome {
	out := Outcome{Plan: res, Wrote: wrote, Validated: validated, Renewal: q.renewal}
	if q.opts.Leases.Holder == "" || res == nil {
		return out
	}
	for _, e := range res.Published {
		for _, r := range z.AtName(e.DNSName) {
			for _, c := range r.Claims {
				v, ok := q.survey.Verdicts[c.Lease()]
				if !ok || c.Lease() == lease.Key(q.opts.Leases.Holder) {
					continue
				}
				if out.Leases == nil {
					out.Leases = map[string]lease.Verdict{}
				}
				out.Leases[c.Owner] = v
			}
		}
	}
	return out
}

// written adds to an outcome what the request's applied plan changed.
func (q *queue) written(out Outcome, applied *plan.Result) Outcome {
	out.Written, out.Withdrawn = applied.Changes, applied.Withdrawn
	for _, e := range applied.Changes.Delete {
		// A withdrawn owner's lease, as judged when it was withdrawn: its claims are gone now.
		if c, ok := registry.ParseTXT(e); ok && slices.Contains(applied.Withdrawn, c.Owner) {
			if v, ok := q.survey.Verdicts[c.Lease()]; ok {
				if out.Leases == nil {
					out.Leases = map[string]lease.Verdict{}
				}
				out.Leases[c.Owner] = v
			}
		}
	}
	return out
}

// namesLease reports whether the changes write a claim naming the lease key.
func namesLease(c *batch.Changes, key string) bool {
	for _, e := range slices.Concat(c.Create, c.UpdateNew) {
		if cl, ok := registry.ParseTXT(e); ok && cl.Lease() == key {
			return true
		}
	}
	return false
}

func fail(waiters []*waiter, err error) {
	for _, w := range waiters {
		w.done <- result{err: err}
	}
}

func sortChanges(c *batch.Changes) {
	sortEndpoints(c.Create)
	sortEndpoints(c.Delete)
	sortEndpoints(c.Require)
	sortPairs(c.UpdateOld, c.UpdateNew)
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
