package plan

import (
	"slices"
	"sort"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// value is what a key publishes, and whose wish decided it.
type value struct {
	record *v1alpha1.Endpoint
	winner string
	// multi: the targets are the union of the claimants', so no claimant's targets conflict.
	multi bool
	// ttlWinner, when set, is the owner whose TTL the record's set group takes (shareSetTTL).
	ttlWinner string
}

// shareSetTTL gives our members of a group of sets (one name and type, several set identifiers:
// weighted or geo routing) one TTL: that of the lowest incumbent of any member (a live owner that
// claimed the member before this plan and wants the TTL it publishes), or, where no member has one,
// of the lowest claimant of any member. Route 53 refuses weighted members of one name and type with
// different TTLs, and Cloud DNS holds one TTL per name and type, so owners wanting different TTLs
// for their members of one group is a TTL conflict like any other. Only our own members change:
// every owner reads the same claims and moves its own.
func shareSetTTL(slots []*slot, values []*value) {
	winner := map[string]claimant{} // record type -> the group's lowest incumbent, else lowest claimant
	held := map[string]bool{}       // record type -> winner is an incumbent
	for i, s := range slots {
		if values[i] == nil || s.key.SetIdentifier == "" {
			continue
		}
		t := s.key.RecordType
		c, inc := s.incumbent(func(wish *v1alpha1.Endpoint) bool { return wish.RecordTTL == s.current.RecordTTL })
		if !inc {
			c = s.eligible[0]
		}
		if w, ok := winner[t]; !ok || inc && !held[t] || inc == held[t] && c.owner < w.owner {
			winner[t], held[t] = c, inc
		}
	}
	for i, s := range slots {
		v := values[i]
		if v == nil || s.key.SetIdentifier == "" || s.ours == nil {
			continue
		}
		if w := winner[s.key.RecordType]; v.record.RecordTTL != w.wish.RecordTTL {
			v.record.RecordTTL, v.ttlWinner = w.wish.RecordTTL, w.owner
		}
	}
}

func (p *planner) value(s *slot) *value {
	eligible := s.eligible
	multi := !s.cname() || slices.ContainsFunc(eligible, func(c claimant) bool { return len(c.wish.Targets) > 1 })
	w := eligible[0]
	if inc, ok := s.incumbent(func(wish *v1alpha1.Endpoint) bool {
		return (multi || wish.Targets.SameTargets(s.current.Targets)) && wish.RecordTTL == s.current.RecordTTL &&
			sameProviderSpecific(wish.ProviderSpecific, s.current.ProviderSpecific)
	}); ok {
		w = inc
	}
	var targets v1alpha1.Targets
	if multi {
		targets = p.union(s)
	} else {
		targets = w.wish.Targets.DeepCopy()
	}
	name := w.wish.DNSName
	switch {
	case s.current != nil:
		name = s.current.DNSName
	case s.ours != nil:
		name = s.ours.DNSName
	}
	return &value{
		record: &v1alpha1.Endpoint{
			DNSName:          name,
			RecordType:       s.key.RecordType,
			SetIdentifier:    s.key.SetIdentifier,
			Targets:          targets,
			RecordTTL:        w.wish.RecordTTL,
			ProviderSpecific: w.wish.ProviderSpecific.DeepCopy(),
		},
		winner: w.owner,
		multi:  multi,
	}
}

// incumbent returns the lowest claimant that holds what the key publishes, as far as published
// tells (a live owner that claimed the key before this plan and still wants it): its value stays
// however low a newcomer's owner ID. same says whether a wish wants what is published (the target
// of a single-valued CNAME, the TTL, the routing properties; or the TTL alone). Where there is no
// incumbent (the key is not published yet, or its incumbents left, expired or changed their wish)
// the lowest claimant decides.
//
// A claim that does not say what its owner wants (Kuadrant's format) presumes the record as
// published, so it always seems to want it. Such an owner holds the value only where no claim that
// does say (or whose wish Input.Known tells) wants it, live or gone: an owner whose wish is read
// decided it, and once that owner is gone the value is free again, though a Kuadrant owner shares
// the record. Where nobody's read wish explains the value, the presumption is the best reading, and
// it keeps a newcomer from taking the value of an owner whose wish this plan cannot read.
func (s *slot) incumbent(same func(*v1alpha1.Endpoint) bool) (claimant, bool) {
	if s.current == nil {
		return claimant{}, false
	}
	if i := slices.IndexFunc(s.eligible, func(c claimant) bool { return c.holds() && !c.unknown && same(c.wish) }); i >= 0 {
		return s.eligible[i], true
	}
	if slices.ContainsFunc(s.gone, func(c claimant) bool { return !c.unknown && c.wish != nil && same(c.wish) }) {
		return claimant{}, false
	}
	if i := slices.IndexFunc(s.eligible, func(c claimant) bool { return c.holds() && same(c.wish) }); i >= 0 {
		return s.eligible[i], true
	}
	return claimant{}, false
}

// union is the targets of a multi-value key: every readable wish, and, where some claimant's wish
// cannot be read, whatever the record holds that no readable claim or our previous publication
// explains.
func (p *planner) union(s *slot) v1alpha1.Targets {
	seen := map[string]bool{}
	var out v1alpha1.Targets
	add := func(t string) {
		if n := v1alpha1.NormalizeName(t); !seen[n] {
			seen[n] = true
			out = append(out, t)
		}
	}
	if s.current != nil && slices.ContainsFunc(s.claimants, func(c claimant) bool { return c.unknown }) {
		explained := map[string]bool{}
		for _, c := range s.record.Claims {
			if w := p.wishOf(c, s.key); w != nil {
				for _, t := range w.Targets {
					explained[v1alpha1.NormalizeName(t)] = true
				}
			}
			if p.isRetired(c) {
				for _, t := range c.GroupTargets() {
					explained[v1alpha1.NormalizeName(t)] = true
				}
			}
		}
		if prev := p.previous[s.key]; prev != nil {
			for _, t := range prev.Targets {
				explained[v1alpha1.NormalizeName(t)] = true
			}
		}
		for _, t := range s.current.Targets {
			if !explained[v1alpha1.NormalizeName(t)] {
				add(t)
			}
		}
	}
	for _, c := range s.claimants {
		if !c.unknown {
			for _, t := range c.wish.Targets {
				add(t)
			}
		}
	}
	if len(out) == 0 {
		// Every target was ours or explained, and the rest of the claimants cannot say what they
		// want: keep the record rather than empty it under them.
		return s.current.Targets.DeepCopy()
	}
	sort.Strings(out)
	return out
}
