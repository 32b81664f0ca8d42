package plan

import (
	"slices"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// This file is the plan's part of removing inactive failover groups' records (Input.CleanupGroups):
// their owners count as gone, as expired owners do, with two differences that Kuadrant's
// unpublishInactiveGroups makes too. A record only they hold goes (an expired lease never takes a
// name's last targets: its holder may only be cut off; an inactive group was switched off), and the
// plan reaches the names they claim whether or not this owner claims anything there.

// isRetired reports whether claim is of an owner of a group Input.CleanupGroups does not list.
func (p *planner) isRetired(c *registry.Claim) bool {
	return len(p.active) > 0 && c.Owner != p.owner && c.Retired(p.active)
}

// retiredNames are the names where an inactive group's owner claims a record.
func (p *planner) retiredNames() []string {
	if len(p.active) == 0 {
		return nil
	}
	var names []string
	for _, r := range p.zone.Records() {
		if slices.ContainsFunc(r.Claims, p.isRetired) && !slices.Contains(names, r.Key.DNSName) {
			names = append(names, r.Key.DNSName)
		}
	}
	return names
}

// retireTargets takes from a record others claim, which this owner does not, the targets that the
// inactive groups' owners withdrawn from it published and no other claimant's known wish holds:
// Kuadrant's rule, and all that changes (the gate lets nothing else through for a record we do not
// claim). A record that would be left without a target keeps them: its live claimants' wishes are
// unknown, and they put it right when they plan.
func (p *planner) retireTargets(s *slot) {
	drop := map[string]bool{}
	for _, c := range s.withdrawn {
		if p.isRetired(c) {
			for _, t := range c.GroupTargets() {
				drop[v1alpha1.NormalizeName(t)] = true
			}
		}
	}
	// A live grouped owner says its targets even where its claim is Kuadrant's; an ungrouped
	// Kuadrant owner's are unknowable, and Kuadrant's cleanup takes them too.
	for _, c := range s.record.Claims {
		if !p.isRetired(c) {
			for _, t := range c.GroupTargets() {
				delete(drop, v1alpha1.NormalizeName(t))
			}
		}
	}
	if w := s.ours; w != nil {
		for _, t := range w.Targets {
			delete(drop, v1alpha1.NormalizeName(t))
		}
	}
	if len(drop) == 0 {
		return
	}
	kept := slices.DeleteFunc(slices.Clone(s.current.Targets), func(t string) bool { return drop[v1alpha1.NormalizeName(t)] })
	if len(kept) == 0 || len(kept) == len(s.current.Targets) {
		return
	}
	updated := s.current.DeepCopy()
	updated.Targets = kept
	p.changes.UpdateOld = append(p.changes.UpdateOld, s.current)
	p.changes.UpdateNew = append(p.changes.UpdateNew, updated)
}
