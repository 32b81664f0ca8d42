package publish

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/goroutine"
	"github.com/dnspolicy/dnspolicy-controller/pkg/groups"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/pkg/plan"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// result answers a waiter.
type result struct {
	outcome Outcome
	err     error
}

// waiter is a request waiting for a cycle, with the provider object its reconcile built (the newest
// carries the newest credentials).
type waiter struct {
	prov providers.Provider
	req  Request
	done chan result
}

// queue serves one zone through one account. One goroutine at a time runs its cycles (run), and only
// that goroutine plans against, applies to and re-reads the zone's view.
type queue struct {
	zone providers.Zone
	opts Options
	now  func() time.Time

	mu      sync.Mutex
	pending []*waiter
	// arrived is signalled (capacity 1) whenever a request joins pending, for gather.
	arrived chan struct{}
	running bool
	// view is owned by the cycle running; nil when there is none or it may be wrong.
	view *view
	// parsed is the index of the latest read, kept after the view is dropped: the next read brings
	// it up to date in place (registry.Zone.ReadAgain). It is the view's zone while there is a view.
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
	// survey is what the latest read told of leases; renewal the state of our own. The cycle writes
	// them, and contact, under mu (Publisher.Leases reads them from the scrape).
	survey  lease.Survey
	renewal Renewal
	// members are the other clusters' failover group member records the latest read found, by
	// lease key (Leases.Group).
	members map[string]groups.Member
	// contact is when the zone was last read, firstRead when first.
	contact, firstRead time.Time
	// renewing is the period start of the lease value the cycle's renewal wanted, zero when it
	// wanted none (the lease is not needed); the cycle's alone.
	renewing time.Time
	// burst is the latest gathering's, which a request that comes soon after it carries on; only
	// the goroutine running the cycles touches it.
	burst burst
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
// their backoff, and drops the view and its index, which the cycle may have left half changed; the queue carries
// on with the next cycle.
func (q *queue) serve(waiters []*waiter) {
	defer goroutine.Recover(goroutine.Publish, q.opts.Log.WithValues("zone", q.zone.DNSName, "zoneID", q.zone.ID), func(any) {
		q.discard()
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

// gather waits while requests keep arriving: the cycle starts once none has arrived for the quiet
// wait, or MaxGather after the gathering began. A lone request waits Gather. Inside a burst the
// wait is quietGaps times the mean gap between the burst's arrivals, never less than MinGather nor
// more than Gather: a burst whose reconciles come a millisecond apart (a fast API server) is not
// held a whole Gather after its last request, and one whose reconciles come tens of milliseconds
// apart (a busy API server) still becomes one cycle. A request that comes less than Gather after
// the previous gathering's last is the same burst's (it came while that cycle ran, its reconcile
// scheduled late): it waits as the burst's next request would, not Gather as a lone one.
func (q *queue) gather() {
	floor := q.opts.MinGather
	if floor <= 0 {
		floor = q.opts.Gather
	}
	deadline := time.NewTimer(q.opts.MaxGather)
	defer deadline.Stop()
	quiet := time.NewTimer(q.opts.Gather)
	defer quiet.Stop()
	b, started := &q.burst, false
	for {
		select {
		case <-q.arrived:
			now := time.Now()
			if !started && now.Sub(b.last) >= q.opts.Gather {
				*b = burst{} // a new burst; one less than Gather after the last goes on
			}
			started = true
			b.arrivals++
			wait := q.opts.Gather
			if b.arrivals == 1 {
				b.first = now
			} else {
				wait = min(max(quietGaps*now.Sub(b.first)/time.Duration(b.arrivals-1), floor), q.opts.Gather)
			}
			b.last = now
			quiet.Reset(wait) // since Go 1.23 a Reset timer never delivers the old expiry
		case <-quiet.C:
			return
		case <-deadline.C:
			return
		}
	}
}

// burst is what gather knows of the requests arriving together: when the first and the last came,
// and how many.
type burst struct {
	first, last time.Time
	arrivals    int
}

// quietGaps is how many of a burst's mean gaps between arrivals pass without one before the burst
// is taken as over.
const quietGaps = 4

// arrive tells a gathering that a request joined; q.mu is held.
func (q *queue) arrive() {
	select {
	case q.arrived <- struct{}{}:
	default: // a signal not yet taken stands for this one too
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
		again, perr := p.planAgainst(q, after.zone, p.plan.Published, prov.Capabilities())
		if perr != nil || !again.Changes.Empty() {
			p.done <- result{outcome: q.written(q.outcome(p.plan, after.zone, true, false), p.plan)}
			continue
		}
		p.done <- result{outcome: q.written(q.outcome(again, after.zone, true, true), p.plan)}
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

// applyAll puts each batch through the ownership gate on the exact changes to be sent, applies it
// to the view's index and to the backend, and stops at the first failure. It returns the waiters
// whose plans are done (their batch applied, or they had nothing to write), the batch that failed,
// and its error.
func (q *queue) applyAll(ctx context.Context, prov providers.Provider, v *view, batches []*pendingBatch) ([]*planned, *pendingBatch, error) {
	var done []*planned
	for _, b := range batches {
		if err := v.zone.CheckCleanup(b.owners, b.expired, b.active, b.changes); err != nil {
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
	out.Retired, out.RetiredNames = applied.Retired, applied.RetiredNames
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

func fail(waiters []*waiter, err error) {
	for _, w := range waiters {
		w.done <- result{err: err}
	}
}
