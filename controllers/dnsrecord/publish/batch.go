package publish

import (
	"slices"
	"sort"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/batch"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// pendingBatch is one batch being put together from the plans of several waiters: for every key
// they change, the value before the first of them and after the last, and what they require.
type pendingBatch struct {
	before, after map[v1alpha1.EndpointKey]*v1alpha1.Endpoint
	require       map[v1alpha1.EndpointKey]*v1alpha1.Endpoint
	owners        []string
	expired       []string // owners the waiters withdraw as gone (plan.Result.Withdrawn)
	// active are the active groups of the waiters that remove inactive groups' records, nil when
	// none does (registry.Zone.CheckCleanup).
	active  []string
	waiters []*planned
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
	for _, o := range p.req.owners() {
		if !slices.Contains(b.owners, o) {
			b.owners = append(b.owners, o)
		}
	}
	for _, o := range p.plan.Withdrawn {
		if !slices.Contains(b.expired, o) {
			b.expired = append(b.expired, o)
		}
	}
	b.waiters = append(b.waiters, p)
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

func sortChanges(c *batch.Changes) {
	sortEndpoints(c.Create)
	sortEndpoints(c.Delete)
	sortEndpoints(c.Require)
	sortPairs(c.UpdateOld, c.UpdateNew)
}

func sortEndpoints(eps []*v1alpha1.Endpoint) {
	sort.SliceStable(eps, func(i, j int) bool { return less(eps[i].Key(), eps[j].Key()) })
}

func sortPairs(old, updated []*v1alpha1.Endpoint) {
	idx := make([]int, len(old))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return less(old[idx[a]].Key(), old[idx[b]].Key()) })
	o, n := append([]*v1alpha1.Endpoint(nil), old...), append([]*v1alpha1.Endpoint(nil), updated...)
	for i, j := range idx {
		old[i], updated[i] = o[j], n[j]
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
