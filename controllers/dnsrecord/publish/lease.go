package publish

import (
	"slices"
	"sort"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/batch"
	"github.com/dnspolicy/dnspolicy-controller/pkg/groups"
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
	names := []string{lease.RecordName(l.Holder, q.zone.DNSName)}
	if l.Group != "" {
		names = append(names, groups.MemberRecordName(l.Holder, q.zone.DNSName))
	}
	return &waiter{prov: prov, done: make(chan result, 1), req: Request{OwnerID: l.Holder, renewal: true, Named: names,
		Wish: func(*registry.Zone) (desired, named []*v1alpha1.Endpoint) {
			// The lease is kept while a claim of this cluster names it (as of the last read, or
			// written since), and goes with the last; with a failover group, always.
			if q.renewal.Needed {
				renewed := lease.Renew(l.Holder, q.now(), l.Every, l.Duration)
				q.renewing = renewed.Renewed
				named = []*v1alpha1.Endpoint{renewed.Record(q.zone.DNSName)}
				if l.Group != "" {
					m := groups.Member{Group: l.Group, Lease: lease.Key(l.Holder), Healthy: l.Healthy == nil || l.Healthy(q.zone.DNSName)}
					named = append(named, m.Record(l.Holder, q.zone.DNSName))
				}
				return nil, named
			}
			q.renewing = time.Time{}
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
			wanted := !q.renewing.IsZero()
			q.mu.Lock()
			switch {
			case r.err != nil:
				q.renewal.Err = r.err
			case r.outcome.Wrote && wanted:
				q.renewal.At, q.renewal.Err = q.now(), nil
			case r.outcome.Validated && wanted:
				// Found current: the zone held this period's value already, written by another
				// queue of this cluster serving the zone (another Secret) or earlier in the
				// period. Without this, that queue's lease would look older with every period.
				if q.renewing.After(q.renewal.At) {
					q.renewal.At = q.renewing
				}
				q.renewal.Err = nil
			case r.outcome.Validated:
				q.renewal.Err = nil
			}
			q.mu.Unlock()
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
// win no longer, or withdraw exactly our targets once our lease expires. "Another cluster" is what
// the plan counts as one: an owner that renews another lease, also when its requests come through
// this publisher (another cluster's delegating record on a primary), or every primary would build
// a different authoritative record until the unstated owner's next pass.
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
			case !q.cluster.sameCluster(owner, c.Owner):
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
	prev := q.survey.Verdicts
	survey := q.judge.Survey(q.zoneKey, eps, v.zone, v.at)
	own := lease.Key(l.Holder)
	// Under q.mu for the metrics' snapshot (Publisher.Leases); the cycle, their only writer, reads
	// them without.
	q.mu.Lock()
	members := map[string]groups.Member{}
	if l.Group != "" {
		for _, ep := range eps {
			if m, ok := groups.ParseMember(ep); ok && m.Lease != own {
				members[m.Lease] = m
			}
		}
	}
	if q.firstRead.IsZero() {
		q.firstRead = v.at
	}
	q.contact, q.survey, q.members = v.at, survey, members
	q.renewal.Needed = survey.Named[own] > 0 || l.Group != ""
	q.mu.Unlock()
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

// LeaseAge is one lease of a zone as a queue knows it at a moment.
type LeaseAge struct {
	// Key names the lease as claims do (lease.Key of its holder): never the holder's cluster ID.
	Key string
	// Own: the lease is this cluster's.
	Own bool
	// Age is, for this cluster's lease, the time since it was last written or found current; for
	// another cluster's, how long its value has not changed by this reader's clock, as the queue's
	// last read judged it plus the time since that read.
	Age time.Duration
	// Duration is how long the lease asks its readers to wait after its value last changed (0: never
	// count its holder gone).
	Duration time.Duration
}

// ZoneLeases is what one queue knows of its zone's leases at a moment.
type ZoneLeases struct {
	// Zone is the zone's domain.
	Zone string
	// Leases are this cluster's lease, once written or read, and those of other clusters that
	// claims in the zone name, by key.
	Leases []LeaseAge
	// RenewalFailing: the last renewal of this cluster's lease in the zone failed.
	RenewalFailing bool
}

// Leases returns, for metrics taken at scrape time, what each queue knows of its zone's leases,
// by zone. Only queues whose zone needs this cluster's lease (a claim of this cluster names it)
// report: those read their zone every renewal period, so the other clusters' ages are at most a
// period old. Elsewhere a queue reads only at its records' re-checks, up to minutes apart, where an
// age counted on from the last read would say nothing about whether its holder renews; and no
// owner of this cluster shares a name with another cluster there, so no lease there matters to it.
// Closed and removed queues report nothing.
func (p *Publisher) Leases() []ZoneLeases {
	p.mu.Lock()
	queues := make([]*queue, 0, len(p.queues))
	for _, q := range p.queues {
		queues = append(queues, q)
	}
	p.mu.Unlock()
	now := p.now()
	var out []ZoneLeases
	for _, q := range queues {
		if z, ok := q.leases(now); ok {
			out = append(out, z)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Zone < out[j].Zone })
	return out
}

// leases is what the queue knows of its zone's leases at now; false when it reports none.
func (q *queue) leases(now time.Time) (ZoneLeases, bool) {
	l := q.opts.Leases
	q.mu.Lock()
	// The survey's maps are replaced by each read, never changed: copying the struct is a snapshot.
	closed, renewal, survey, contact := q.closed, q.renewal, q.survey, q.contact
	q.mu.Unlock()
	if l.Holder == "" || closed || !renewal.Needed {
		return ZoneLeases{}, false
	}
	z := ZoneLeases{Zone: q.zone.DNSName, RenewalFailing: renewal.Err != nil}
	sinceRead := max(now.Sub(contact), 0)
	own := lease.Key(l.Holder)
	if v, read := survey.Verdicts[own]; !renewal.At.IsZero() {
		z.Leases = append(z.Leases, LeaseAge{Key: own, Own: true, Age: max(now.Sub(renewal.At), 0), Duration: l.Duration})
	} else if read {
		// Not renewed by this queue yet (it started since, and its renewals fail): the lease an
		// earlier run left in the zone, unchanged since this reader first saw it, as the other
		// clusters see it unchanged.
		z.Leases = append(z.Leases, LeaseAge{Key: own, Own: true, Age: v.Age + sinceRead, Duration: l.Duration})
	}
	for key, v := range survey.Verdicts {
		// A lease no claim names any more (its holder's owners left, or were withdrawn) stays in
		// the zone but no longer matters.
		if key != own && survey.Named[key] > 0 {
			z.Leases = append(z.Leases, LeaseAge{Key: key, Age: v.Age + sinceRead, Duration: v.Duration})
		}
	}
	sort.Slice(z.Leases, func(i, j int) bool { return z.Leases[i].Key < z.Leases[j].Key })
	return z, true
}

// GroupsAlive returns, as the queue of account and zone last read it, whether each of groups is
// alive: some cluster's member record (groups.Member) of it names a lease that is live by this
// reader's clock and says healthy. A group no member record names counts as alive until the queue
// has read the zone for a lease's duration and tolerance, as a lease first seen does: a reader that
// has just started, or reads a view up to Options.MaxAge old, may not have seen a member that is
// there. False when no queue serves the zone, it has not read the zone yet, or automatic failover
// is off (Leases.Group).
func (p *Publisher) GroupsAlive(account string, zone providers.Zone, groups []string) (map[string]bool, bool) {
	p.mu.Lock()
	q := p.queues[queueKey{account, zone.ID}]
	p.mu.Unlock()
	l := p.opts.Leases
	if q == nil || l.Group == "" {
		return nil, false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.contact.IsZero() {
		return nil, false
	}
	alive, named := map[string]bool{}, map[string]bool{}
	for key, m := range q.members {
		v, ok := q.survey.Verdicts[key]
		alive[m.Group] = alive[m.Group] || ok && !v.Expired && m.Healthy
		named[m.Group] = true
	}
	wait := l.Duration
	if wait <= 0 {
		wait = lease.DefaultDuration
	}
	for _, g := range groups {
		if !named[g] {
			alive[g] = p.now().Sub(q.firstRead) <= wait+l.Tolerance
		}
	}
	return alive, true
}

// Keep holds the queue of account and zone for record, whose owner publishes nothing now (a record
// of an inactive failover group), so that the queue goes on renewing this cluster's lease and
// member record while automatic failover is on: other clusters judge the group alive by them. A
// queue that has not read its zone yet starts a renewal cycle at once; the renewals then keep
// themselves going. With automatic failover off it does nothing.
func (p *Publisher) Keep(prov providers.Provider, account string, zone providers.Zone, record, owner string) {
	if p.opts.Leases.Group == "" || p.opts.Leases.Holder == "" {
		return
	}
	q := p.hold(account, zone, Request{Record: record, OwnerID: owner})
	q.mu.Lock()
	defer q.mu.Unlock()
	q.prov = prov
	if q.contact.IsZero() && q.renewTimer == nil && !q.closed {
		if w := q.renewalWaiter(q.pending, prov); w != nil {
			q.pending = append(q.pending, w)
			q.arrive()
			q.start()
		}
	}
}

// ForeignLeaseExpired reports whether the queue of zone judges another cluster's lease expired at
// the value l, that is, it has not changed since (a value the zone does not hold yet is a renewal).
// It returns the verdict; false when no queue serves the zone or it has not read the lease.
func (p *Publisher) ForeignLeaseExpired(account string, zone providers.Zone, l lease.Lease) (lease.Verdict, bool) {
	p.mu.Lock()
	q := p.queues[queueKey{account, zone.ID}]
	p.mu.Unlock()
	if q == nil {
		return lease.Verdict{}, false
	}
	q.mu.Lock()
	v, ok := q.survey.Verdicts[lease.Key(l.Holder)]
	q.mu.Unlock()
	return v, ok && v.Expired && v.Renewed.Equal(l.Renewed) && v.Every == l.Every && v.Duration == l.Duration
}
