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
//
// The package sits beside the record controller, its one driver, rather than in pkg/: it holds
// goroutines, timers and provider calls, and the pure core it plans with (plan, registry, lease,
// batch) stays free of them. Its files follow a cycle: publish.go is the Publisher, its API and the
// lifetime of its queues; queue.go a queue's loop (gather, cycle, apply, await the backend); view.go
// when the zone is read again and which records no owner claims; plan.go each request planned
// against the view; batch.go the plans summed into batches, pure given a zone; lease.go this
// cluster's lease renewal, the replans that leases cause, and the leases' ages that metrics read; wishes.go the cluster's memory of
// what its owners want.
package publish

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/batch"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/pkg/plan"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// Request is one owner's wish for one zone.
type Request struct {
	OwnerID string
	// Group is the owner's failover group ("" none), written into its claims (plan.Input.Group).
	Group string
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
	// CleanupGroups, for an owner of an active failover group, are the zone's active groups: when
	// the owner's own plan changes nothing (a quiet pass, Kuadrant's rule: the active group's
	// records are in before the others' go), it is planned again removing what the other groups'
	// owners published (plan.Input.CleanupGroups), and the batch passes the gate for that
	// (registry.Zone.CheckCleanup).
	CleanupGroups []string
	// Record names the record the request is for (namespace/name). The queue is kept while some
	// record that published through it holds it: until Release, or until the record publishes
	// through another queue. A request with no Record holds nothing.
	Record string
	// Delegated marks the request of a delegating record, written into the authoritative record of
	// its root host: its claims name the lease of its own cluster, Lease, or none (not this
	// cluster's), so that every primary building the authoritative record writes the same claims.
	Delegated bool
	// Lease, on a delegated request of another cluster's record, is that cluster's owner lease as
	// the record carries it (v1alpha1.OwnerLeaseAnnotation): the request keeps its record in the
	// zone with that value while the owner publishes, and this cluster's other owners judge it as
	// any lease (package lease).
	Lease *lease.Lease
	// LeaseAt is the name the lease record sits at (lease.RecordName), the root host of the
	// authoritative record (every name of one is under it); "" is the zone's apex.
	LeaseAt string
	// renewal marks the queue's own lease renewal, which no reconcile waits for.
	renewal bool
}

// owners are those whose records the request may change: its owner's, and the lease record of
// its cluster when that is another's (Request.Lease).
func (r *Request) owners() []string {
	if h := r.home(); h != "" {
		return []string{r.OwnerID, h}
	}
	return []string{r.OwnerID}
}

// home is the lease holder of the request's cluster: "" for this cluster.
func (r *Request) home() string {
	if r.Lease == nil {
		return ""
	}
	return r.Lease.Holder
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
	// Retired are the owners of inactive failover groups whose claims the applied changes deleted,
	// at RetiredNames (Request.CleanupGroups).
	Retired, RetiredNames []string
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
	// At is when the lease was last written or found current (for a value found current, written by
	// another queue of this cluster, the start of the period it is of); zero when never.
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
	// Group, set when automatic failover is on, is this cluster's failover group: every queue then
	// renews the lease whether or not a claim names it, with a member record beside it
	// (groups.Member) saying the group and Healthy's answer for the zone's domain (nil: healthy),
	// and reads the other clusters' (Publisher.GroupsAlive).
	Group   string
	Healthy func(zone string) bool
}

// Options tune the queues.
type Options struct {
	// MaxAge bounds how old a view may be when a cycle plans against it: other owners' writes are
	// seen within MaxAge.
	MaxAge time.Duration
	// Gather is how long a cycle waits for another request to join it; every request that joins
	// restarts the wait, up to MaxGather after the first, so a burst (a policy creating many records,
	// a controller starting) becomes one cycle while a lone request waits only Gather. Inside a
	// burst the wait shrinks to a few of the burst's own gaps between requests, never below
	// MinGather (0: Gather), so a fast burst is not held a whole Gather after its last request.
	Gather, MinGather, MaxGather time.Duration
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

// DefaultOptions suit a controller: views at most 10 s old, cycles gathered for 50 to 100 ms of
// quiet, at most 1 s. A gather shorter than the gaps between reconciles of a burst on a busy API
// server splits the burst into many small cycles, each costing a listing and a batch (with a 20 ms
// floor, 200 records created at once on 2 loaded cores took 10 to 15 cycles; with 50 ms, 2 or 3);
// one longer than a fast burst's gaps only delays its records (at 64 records on a quiet API server,
// a fixed 100 ms was a third of the time to Ready).
func DefaultOptions() Options {
	return Options{MaxAge: 10 * time.Second, Gather: 100 * time.Millisecond, MinGather: 50 * time.Millisecond, MaxGather: time.Second,
		StaleRetries: 3, CallTimeout: DefaultCallTimeout}
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

type queueKey struct{ account, zoneID string }

// New returns a publisher.
func New(opts Options) *Publisher {
	return &Publisher{opts: opts, now: time.Now, queues: map[queueKey]*queue{}, held: map[string]queueKey{},
		cluster: &cluster{local: map[string]bool{}, home: map[string]string{}, wishes: map[string][]*v1alpha1.Endpoint{}}}
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
	q.cluster.home[req.OwnerID] = req.home()
	q.cluster.mu.Unlock()
	q.prov = prov
	q.pending = append(q.pending, w)
	q.arrive()
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
	delete(p.cluster.home, owner)
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
		q = &queue{zone: zone, opts: p.opts, now: p.now, arrived: make(chan struct{}, 1), local: map[string]bool{}, records: map[string]string{}, cluster: p.cluster, closed: p.closed}
		q.judge.Tolerance = p.opts.Leases.Tolerance
		q.zoneKey = k.account + "/" + zone.ID
		p.queues[k] = q
	}
	return q
}
