package registry

import (
	"slices"
	"strings"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/batch"
)

// Group is the failover group the claim's owner writes (external-dns/group), "" for an ungrouped
// owner.
func (c *Claim) Group() string { return c.Labels[GroupKey] }

// GroupTargets are the targets a grouped owner says it published (external-dns/targets, joined by
// ";" as Kuadrant's GroupRegistry writes them), or its stated wish's where that label is left out.
func (c *Claim) GroupTargets() []string {
	if c.Wish != nil {
		return c.Wish.Targets
	}
	var out []string
	for t := range strings.SplitSeq(c.Labels[GroupTargetsKey], targetSeparator) {
		if t != "" {
			out = append(out, t)
		}
	}
	return out
}

// Retired reports whether the claim is of an owner in a failover group that active (the zone's
// active groups) does not list: what an active grouped controller removes after a quiet pass, as
// Kuadrant's unpublishInactiveGroups does. An ungrouped owner's claim, and a legacy claim (which
// names no group), never is.
func (c *Claim) Retired(active []string) bool {
	return !c.Legacy && c.Group() != "" && !slices.Contains(active, c.Group())
}

// CheckCleanup is Check for a batch that may also remove what inactive failover groups published
// (package plan, Input.CleanupGroups), active being the zone's active groups as the cleaning owner
// read them. The gate judges each claim from its own group label, whatever the plan says. On top of
// what Check lets through, such a batch may:
//   - delete a retired claim (Claim.Retired) of any owner;
//   - delete a record every claim of which is retired and deleted by the batch, at any name, as long
//     as no key that a claim left standing at the name holds goes unpublished after the batch (the
//     name never loses what an active or ungrouped owner claims there);
//   - update a record from which the batch withdraws a retired claim, where it changes nothing but
//     taking targets away, and leaves at least one.
//
// With no active group (nil or empty), it is Check.
func (z *Zone) CheckCleanup(owners, expired, active []string, changes *batch.Changes) error {
	if changes == nil {
		return nil
	}
	g, err := z.newGate(owners, expired, changes)
	if err != nil {
		return err
	}
	g.active = active
	return g.check(changes)
}

// retired reports whether the gate may withdraw claim as an inactive group's.
func (g *gate) retired(c *Claim) bool { return len(g.active) > 0 && c.Retired(g.active) }

// retiresFrom reports whether the batch withdraws a retired claim from key.
func (g *gate) retiresFrom(key v1alpha1.EndpointKey) bool {
	return slices.ContainsFunc(g.withdrawn, func(c *Claim) bool { return c.Record == key && g.retired(c) })
}

// allRetired reports whether r is claimed, only by retired claims, each deleted by the batch.
func (g *gate) allRetired(r *Record) bool {
	if r == nil || !r.Owned() {
		return false
	}
	for _, c := range r.Claims {
		if !g.retired(c) || !g.deleted[c.TXT.Key()] {
			return false
		}
	}
	return true
}

// checkRetiredDelete lets a record only retired claims held go, unless a key that a remaining
// claim holds at its name is left unpublished by the batch: removing the record would empty the
// name under an owner still claiming it (it lost a record-type conflict to the retired record, and
// its owner publishes it when it plans next).
func (g *gate) checkRetiredDelete(e *v1alpha1.Endpoint) error {
	for _, r := range g.zone.byName[e.Key().DNSName] {
		if r.Key == e.Key() || len(g.claimsAfter(r.Key)) == 0 {
			continue
		}
		if !g.existsAfter(r.Key) {
			return refuse("deletes %s of an inactive group and leaves %s %s, which %v claim, unpublished", describe(e), r.Key.RecordType, r.Key.DNSName, g.claimsAfter(r.Key))
		}
	}
	return nil
}

// checkRetiredUpdate lets an update of a record others claim through where the batch withdraws a
// retired claim from it and takes targets away, nothing else.
func (g *gate) checkRetiredUpdate(old, updated *v1alpha1.Endpoint) error {
	if !g.retiresFrom(old.Key()) {
		return refuse("updates %s, which %s does not claim", describe(old), g.ownerList())
	}
	had := map[string]bool{}
	for _, t := range old.Targets {
		had[v1alpha1.NormalizeName(t)] = true
	}
	if len(updated.Targets) == 0 || len(updated.Targets) >= len(old.Targets) || updated.RecordTTL != old.RecordTTL ||
		!slices.EqualFunc(updated.ProviderSpecific, old.ProviderSpecific, func(a, b v1alpha1.ProviderSpecificProperty) bool { return a == b }) ||
		slices.ContainsFunc(updated.Targets, func(t string) bool { return !had[v1alpha1.NormalizeName(t)] }) {
		return refuse("updates %s, which %s does not claim, by more than taking an inactive group's targets away", describe(old), g.ownerList())
	}
	return nil
}
