package publish

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/pkg/plan"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

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

// planAgainst plans the request's wish against z, a zone of a backend of caps: the plan of its
// desired endpoints, with the changes that make its owner-named records what it wants appended.
func (p *planned) planAgainst(q *queue, z *registry.Zone, previous []*v1alpha1.Endpoint, caps providers.Capabilities) (*plan.Result, error) {
	in := plan.Input{OwnerID: p.req.OwnerID, Group: p.req.Group, ZoneName: q.zone.DNSName, Zone: z, Previous: previous, Desired: p.desired, Known: q.cluster.known,
		ClaimsWithoutTTL: caps.ClaimsWithoutTTL}
	home := p.req.home()
	in.Local = func(owner string) bool { return q.cluster.sameHome(owner, home) }
	if l := q.opts.Leases; l.Holder != "" && !p.req.renewal {
		in.Lease = lease.Key(l.Holder)
		if p.req.Delegated {
			in.Lease = ""
			if home != "" {
				in.Lease = lease.Key(home)
			}
		}
		if !p.req.KeepExpired {
			verdicts := q.survey.Verdicts
			in.LeaseExpired = func(key string) bool { return verdicts[key].Expired }
		}
	}
	res, err := plan.Plan(in)
	if err == nil && len(p.req.CleanupGroups) > 0 && res.Changes.Empty() {
		in.CleanupGroups = p.req.CleanupGroups
		res, err = plan.Plan(in)
	}
	names, named := p.req.Named, p.named
	if l := p.req.Lease; l != nil && q.opts.Leases.Holder != "" {
		names, named = slices.Clone(names), slices.Clone(named)
		at := cmp.Or(p.req.LeaseAt, q.zone.DNSName)
		names = append(names, lease.RecordName(l.Holder, at))
		if len(p.desired) > 0 || namedByOthers(z, p.req.OwnerID, lease.Key(l.Holder)) {
			named = append(named, l.Record(at))
		}
	}
	if err != nil || len(names) == 0 {
		return res, err
	}
	want := map[string]*v1alpha1.Endpoint{}
	for _, e := range named {
		want[v1alpha1.NormalizeName(e.DNSName)] = e
	}
	for _, name := range names {
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

// namedByOthers reports whether a claim of another owner than owner names the lease key: the
// lease record of another cluster stays while any of its owners' claims needs it, and goes with
// the last.
func namedByOthers(z *registry.Zone, owner, key string) bool {
	for _, r := range z.Records() {
		for _, c := range r.Claims {
			if c.Owner != owner && c.Lease() == key {
				return true
			}
		}
	}
	return false
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
		res, err := p.planAgainst(q, v.zone, w.req.Previous, caps)
		if err != nil {
			p.err = providers.NewError(providers.Permanent, err)
			continue
		}
		p.plan = res
		if res.Changes.Empty() {
			continue
		}
		if q.opts.Leases.Holder != "" && namesLease(res.Changes, lease.Key(q.opts.Leases.Holder)) {
			q.mu.Lock()
			q.renewal.Needed = true
			q.mu.Unlock()
		}
		if err := v.zone.CheckCleanup(w.req.owners(), res.Withdrawn, w.req.CleanupGroups, res.Changes); err != nil {
			p.err = providers.NewError(providers.Permanent, err)
			continue
		}
		if !caps.Fits(res.Changes) {
			p.err = providers.Errorf(providers.Permanent, "the record needs %d changes at once, more than the provider takes in one batch", res.Changes.Len())
			continue
		}
		// A batch is gated with one reading of the active groups (CheckCleanup): a plan that
		// removes inactive groups' records with another reading starts a batch of its own.
		cleanup := len(res.Retired) > 0
		if len(cur.waiters) > 0 && cleanup && cur.active != nil && !slices.Equal(cur.active, w.req.CleanupGroups) ||
			limited && len(cur.waiters) > 0 && (isolate || !caps.Fits(cur.sum(v.zone, res.Changes))) {
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
		if cleanup {
			cur.active = w.req.CleanupGroups
		}
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
