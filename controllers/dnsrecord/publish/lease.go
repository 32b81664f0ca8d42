package publish

import (
	"slices"
	"sort"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/batch"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

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
			q.arrive()
			q.start()
		}
	})
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

// namesLease reports whether the changes write a claim naming the lease key.
func namesLease(c *batch.Changes, key string) bool {
	for _, e := range slices.Concat(c.Create, c.UpdateNew) {
		if cl, ok := registry.ParseTXT(e); ok && cl.Lease() == key {
			return true
		}
	}
	return false
}
