package plan

import (
	"slices"
	"sort"
	"strings"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// claimant is one owner's claim on a record key as the plan sees it: this owner's from Desired, the
// others' from their TXTs.
type claimant struct {
	owner string
	// wish is what the owner wants: from Desired, from its TXT, or (for a TXT that does not say)
	// presumed to be the record as published; nil when nothing can be told.
	wish *v1alpha1.Endpoint
	// unknown marks a claim whose TXT does not say what its owner wants.
	unknown bool
	// expired: the owner is gone (Input.Expired, or the lease its claim names ran out).
	expired bool
	// held: the claim was in the zone before this plan (ours only once we claimed the key).
	held bool
	// retired: the owner is in a failover group that is not active (Input.CleanupGroups).
	retired bool
}

// holds reports whether c is a live owner that claimed the key before this plan: an owner that
// can be the incumbent of what the key publishes.
func (c claimant) holds() bool { return c.held && !c.expired && c.wish != nil }

// slot is one record key at a name: what the zone holds and claims there, and what we want.
type slot struct {
	key    v1alpha1.EndpointKey
	record *registry.Record
	// current is the record as published, nil when only claimed or only desired.
	current *v1alpha1.Endpoint
	// human: published and claimed by nobody. Never ours to change.
	human bool
	ours  *v1alpha1.Endpoint
	// ourClaim is our claim on the key as the zone holds it, nil when none.
	ourClaim *registry.Claim
	// txt is our claim for ours, decided once the key's value is known (ourTXT); taken is a TXT that
	// is not our claim, found where txt goes.
	txt, taken *v1alpha1.Endpoint
	// claimants after this plan, sorted by owner: ours replaced by Desired, expired ones withdrawn.
	claimants []claimant
	withdrawn []*registry.Claim
	// blocker is a record nobody owns that keeps this key from being published.
	blocker *v1alpha1.Endpoint
	// needsKind: claims leave the key, which lost its name's record-type conflict, so the batch must
	// depend on a record of the kind that won (requireWinningKind).
	needsKind bool
	// keptBy, for a member of a set group that only gone owners held, is the member a live owner
	// holds, for whose sake it is withdrawn (withdrawGoneMembers).
	keptBy *slot
	// eligible are the claimants whose wish is known or presumed, in owner order.
	eligible []claimant
	// gone are the claimants counted expired, whether withdrawn here or kept (no live one is left).
	gone []claimant
}

func (s *slot) cname() bool { return s.key.RecordType == v1alpha1.RecordTypeCNAME }

// claims: we hold a claim on the key after this plan.
func (s *slot) claims() bool { return s.ours != nil && !s.human && s.taken == nil }

// candidate: the key can be published, if its kind wins at the name.
func (s *slot) candidate() bool {
	return !s.human && s.blocker == nil && len(s.eligible) > 0
}

// kindAt decides the kind (CNAME, or everything else) published at a name, and the owner reported
// as its winner: the first eligible claimant of that kind, live owners before gone ones, each in
// owner order (before). The kind already published stays while a live owner that claimed one of its
// records before this plan still wants that record (the incumbent): a newcomer cannot take a name by
// choosing a low owner ID. Where no kind has an incumbent (nothing published yet, its owners left or
// expired), or both do (a zone written around us), the kind of the first claimant wins: a gone
// owner's record never decides over a live owner's, so withdrawing gone owners (withdrawGoneMembers)
// cannot change the kind. Every owner reads the same zone, so all pick the same.
func kindAt(slots []*slot) (winner string, cname bool) {
	held := map[bool]bool{}
	for _, s := range slots {
		if s.candidate() && s.current != nil && slices.ContainsFunc(s.eligible, claimant.holds) {
			held[s.cname()] = true
		}
	}
	var first claimant
	for _, s := range slots {
		// eligible holds gone owners only where no live owner claims the key.
		if s.candidate() && (len(held) != 1 || held[s.cname()]) && (first.owner == "" || before(s.eligible[0], first)) {
			first = s.eligible[0]
		}
	}
	winner = first.owner
	if len(held) == 1 {
		return winner, held[true]
	}
	cname = true
	for _, s := range slots {
		if s.candidate() && !s.cname() && slices.ContainsFunc(s.eligible, func(c claimant) bool { return c.owner == winner }) {
			cname = false
		}
	}
	return winner, cname
}

// before orders claimants for a name's kind: live owners first, then by owner ID.
func before(a, b claimant) bool {
	if a.expired != b.expired {
		return !a.expired
	}
	return a.owner < b.owner
}

// planName plans every record key at one name, because what one key may hold depends on the others:
// a CNAME shares its name with nothing.
func (p *planner) planName(name string) error {
	slots := p.slots(name)
	unclaimed := p.zone.Unclaimed(name)
	sortByKey(unclaimed)
	for _, s := range slots {
		s.blocker = blocker(s, unclaimed)
	}
	kindWinner, cname := kindAt(slots)
	p.withdrawGoneMembers(slots, cname)
	var publishedTypes []string
	for _, s := range slots {
		if s.candidate() && s.cname() == cname && !slices.Contains(publishedTypes, s.key.RecordType) {
			publishedTypes = append(publishedTypes, s.key.RecordType)
		}
	}
	sort.Strings(publishedTypes)

	// Only a party to the name, an owner that claims something there before or after this plan,
	// changes its records; the apply-time check holds us to that as well.
	party := slices.ContainsFunc(slots, func(s *slot) bool {
		return s.claims() || s.record != nil && s.record.Claim(p.owner) != nil
	})
	// Elsewhere only the records of inactive groups change, and not where a live claim waits
	// unpublished: its owner decides what the name publishes once they are gone.
	cleaning := !party && len(p.active) > 0
	if cleaning && slices.ContainsFunc(slots, func(s *slot) bool { return !s.human && s.current == nil && len(s.claimants) > 0 }) {
		return nil
	}
	values := make([]*value, len(slots))
	for i, s := range slots {
		if s.candidate() && s.cname() == cname {
			values[i] = p.value(s)
		}
	}
	shareSetTTL(slots, values)
	lease := p.leaseAt(name)
	wish := lease != "" || p.sharedAbroad(slots)
	for i, s := range slots {
		v := values[i]
		if s.ours != nil && !s.human {
			if err := p.ourTXT(s, v, lease, wish); err != nil {
				return err
			}
		}
		switch {
		case party:
			p.recordChange(s, v)
		case cleaning && slices.ContainsFunc(s.withdrawn, p.isRetired):
			s.withdrawn = slices.DeleteFunc(s.withdrawn, func(c *registry.Claim) bool { return !p.isRetired(c) })
			p.recordChange(s, v)
		default:
			s.withdrawn = nil
		}
		p.claimChange(s)
		p.report(s, v, kindWinner, strings.Join(publishedTypes, ","))
		if p.ownerNames[name] {
			for _, c := range s.claimants {
				p.owners[c.owner] = true
			}
		}
	}
	// Only now is every record the batch deletes at the name known: one of them cannot hold the key.
	for _, s := range slots {
		if s.needsKind {
			p.requireWinningKind(s)
		}
	}
	return nil
}

// slots gathers the record keys at a name, from the zone and from Desired, sorted by key.
func (p *planner) slots(name string) []*slot {
	byKey := map[v1alpha1.EndpointKey]*slot{}
	var slots []*slot
	get := func(k v1alpha1.EndpointKey) *slot {
		s, ok := byKey[k]
		if !ok {
			s = &slot{key: k}
			byKey[k] = s
			slots = append(slots, s)
		}
		return s
	}
	for _, r := range p.zone.AtName(name) {
		s := get(r.Key)
		s.record, s.current = r, r.Endpoint
		s.human = r.Endpoint != nil && !r.Owned()
	}
	for _, k := range p.desiredAt[name] {
		s := get(k)
		s.ours = p.desired[k]
		if s.human {
			continue
		}
		if s.record != nil {
			s.ourClaim = s.record.Claim(p.owner)
		}
		txtKey := v1alpha1.EndpointKey{DNSName: registry.TXTName(p.owner, k.RecordType, k.DNSName), RecordType: v1alpha1.RecordTypeTXT, SetIdentifier: k.SetIdentifier}
		if e := p.zone.Endpoint(txtKey); e != nil && s.ourClaim == nil {
			s.taken = e
		}
	}
	sort.Slice(slots, func(i, j int) bool { return keyLess(slots[i].key, slots[j].key) })
	for _, s := range slots {
		if !s.human {
			p.gatherClaimants(s)
		}
	}
	return slots
}

// leaseAt is the lease our claims at name carry (Input.Lease): ours where a claim there already
// carries it, or where an owner of another cluster claims; "" elsewhere.
func (p *planner) leaseAt(name string) string {
	if p.lease == "" {
		return ""
	}
	for _, r := range p.zone.AtName(name) {
		for _, c := range r.Claims {
			switch {
			case c.Owner == p.owner && c.Lease() == p.lease:
				return p.lease
			case c.Owner != p.owner && c.Lease() != p.lease && (p.local == nil || !p.local(c.Owner)):
				return p.lease
			}
		}
	}
	return ""
}

// sharedAbroad reports whether, after this plan, an owner that Input.Local does not count as ours
// claims a record at the name: such an owner may withdraw ours on its own (lease expiry), and plans
// without our cluster's knowledge of what we want, so our claims there say it.
func (p *planner) sharedAbroad(slots []*slot) bool {
	for _, s := range slots {
		for _, c := range s.claimants {
			if c.owner != p.owner && (p.local == nil || !p.local(c.owner)) {
				return true
			}
		}
	}
	return false
}

// ourTXT decides our claim for a desired key, once its value v (nil: not published) is known. It is
// Kuadrant's TXT, which presumes that we want what is published, wherever that holds. It states our
// wish (and lease) where it does not hold, so that whoever plans next, the winner leaving for
// instance, publishes it, and where wish says so (the name is shared with another cluster). A claim
// that already says the same is kept as it is.
func (p *planner) ourTXT(s *slot, v *value, lease string, wish bool) error {
	var txt *v1alpha1.Endpoint
	var err error
	if wish || lost(s.ours, v) {
		txt, err = registry.NewWishTXTInGroup(p.owner, p.group, lease, s.ours)
	} else {
		txt, err = registry.NewTXTInGroup(p.owner, p.group, s.ours)
	}
	if err != nil {
		return invalid("%v", err)
	}
	if p.noClaimTTL {
		txt.RecordTTL = 0
	}
	if s.ourClaim != nil && sameRecord(s.ourClaim.TXT, txt) {
		txt = s.ourClaim.TXT
	}
	s.txt = txt
	return nil
}

// lost reports whether a desired key is not published as wished: not at all, or with another
// owner's single value, TTL or routing properties.
func lost(ours *v1alpha1.Endpoint, v *value) bool {
	return v == nil || !v.multi && !v.record.Targets.SameTargets(ours.Targets) ||
		v.record.RecordTTL != ours.RecordTTL || !sameProviderSpecific(v.record.ProviderSpecific, ours.ProviderSpecific)
}

// claimExpired reports whether another owner's claim is of an owner that is gone: listed in
// Input.Expired, or vouched for by a lease Input.LeaseExpired counts expired.
func (p *planner) claimExpired(c *registry.Claim) bool {
	if p.expired[c.Owner] {
		return true
	}
	l := c.Lease()
	return p.isRetired(c) || l != "" && l != p.lease && p.leaseExpired != nil && p.leaseExpired(l)
}

func (p *planner) gatherClaimants(s *slot) {
	if s.record != nil {
		for _, c := range s.record.Claims {
			// Our own legacy claim (a Kuadrant release before version 1 ran under our owner ID)
			// holds the record like anyone's until we claim it ourselves.
			if c.Owner == p.owner && (!c.Legacy || s.ours != nil) {
				continue
			}
			// A legacy TXT names no lease and is shared by its owners: no plan withdraws it.
			wish := p.wishOf(c, s.key)
			cl := claimant{owner: c.Owner, wish: wish, unknown: wish == nil, expired: !c.Legacy && p.claimExpired(c), held: true, retired: p.isRetired(c)}
			if cl.unknown && s.current != nil {
				// Kuadrant's owners do not write their wish; the record as published is the best
				// reading of it, and keeps the record as it is when such an owner wins.
				cl.wish = s.current
			}
			if cl.expired {
				s.withdrawn = append(s.withdrawn, c)
			}
			s.claimants = append(s.claimants, cl)
		}
	}
	if s.ours != nil && s.taken == nil {
		s.claimants = append(s.claimants, claimant{owner: p.owner, wish: s.ours, held: s.ourClaim != nil})
	}
	slices.SortFunc(s.claimants, func(a, b claimant) int { return strings.Compare(a.owner, b.owner) })
	for _, c := range s.claimants {
		if c.expired {
			s.gone = append(s.gone, c)
		}
	}
	switch {
	case slices.ContainsFunc(s.claimants, func(c claimant) bool { return !c.expired }):
		s.claimants = slices.DeleteFunc(s.claimants, func(c claimant) bool { return c.expired })
	case len(s.claimants) > 0 && !slices.ContainsFunc(s.claimants, func(c claimant) bool { return !c.retired }):
		// Only inactive groups' owners hold the record: it goes with them (Input.CleanupGroups).
		s.claimants = nil
	default:
		// Only expired owners hold the record: it stays as they left it.
		s.withdrawn = nil
	}
	for _, c := range s.claimants {
		if c.wish != nil {
			s.eligible = append(s.eligible, c)
		}
	}
}

// withdrawGoneMembers withdraws, with their owners, the members of a set group (the weighted or geo
// sets of one name and type) that only gone owners hold, where a live owner holds another member
// that is published (or that we publish now) and stays, its kind being the one the name publishes
// (cname): a dead cluster's weighted leaf, or the geo only it served, would otherwise keep drawing a
// share of the answers. The live members keep the name. The default geo is not one: it is where
// every client no other geo takes goes, and without it they would get no answer at all.
func (p *planner) withdrawGoneMembers(slots []*slot, cname bool) {
	live := func(c claimant) bool { return !c.expired }
	for _, s := range slots {
		if s.key.SetIdentifier == "" || s.human || s.current == nil || len(s.claimants) == 0 || slices.ContainsFunc(s.claimants, live) ||
			registry.DefaultGeo(s.current) {
			continue
		}
		for _, o := range slots {
			// Published, or ours and about to be: the plan must not find another member to withdraw
			// for when it is planned again.
			stays := o.cname() == cname && (o.current != nil || o.ours != nil && o.taken == nil && o.blocker == nil)
			if o != s && o.key.RecordType == s.key.RecordType && o.key.SetIdentifier != "" && !o.human && stays &&
				slices.ContainsFunc(o.claimants, live) {
				s.keptBy = o
				break
			}
		}
		if s.keptBy == nil {
			continue
		}
		s.withdrawn = nil
		for _, c := range s.record.Claims {
			if c.Owner != p.owner && !c.Legacy {
				s.withdrawn = append(s.withdrawn, c)
			}
		}
		s.claimants, s.eligible = nil, nil
	}
}

// wishOf is what a claim's owner wants for key: what its claim says, or else what Input.Known
// tells; nil when neither does.
func (p *planner) wishOf(c *registry.Claim, key v1alpha1.EndpointKey) *v1alpha1.Endpoint {
	if c.Wish != nil || c.Legacy || p.known == nil || c.Owner == p.owner {
		return c.Wish
	}
	return p.known(c.Owner, key)
}

// blocker returns the record nobody owns that keeps the key from being published: the human's
// record at the key itself, or, for a key not yet published, one that its record would clash with
// (a CNAME beside anything, or the human's record of the same type).
func blocker(s *slot, unclaimed []*v1alpha1.Endpoint) *v1alpha1.Endpoint {
	if s.human {
		return s.current
	}
	if s.current != nil {
		return nil
	}
	for _, u := range unclaimed {
		if s.cname() || u.RecordType == v1alpha1.RecordTypeCNAME || u.RecordType == s.key.RecordType {
			return u
		}
	}
	return nil
}

func (p *planner) recordChange(s *slot, v *value) {
	// A record already published changes only by the hand of an owner that claims it, before or
	// after the plan (the gate holds us to that too): where claims and record disagree, the
	// record's own claimants put it right.
	claims := s.record != nil && s.record.Claim(p.owner) != nil || s.txt != nil && s.taken == nil
	switch {
	case s.human:
	case v != nil && s.current != nil && !claims:
		p.retireTargets(s)
	case v != nil && s.current == nil:
		p.changes.Create = append(p.changes.Create, v.record)
	case v != nil && !sameRecord(v.record, s.current):
		p.changes.UpdateOld = append(p.changes.UpdateOld, s.current)
		p.changes.UpdateNew = append(p.changes.UpdateNew, v.record)
	case v == nil && s.current != nil:
		p.changes.Delete = append(p.changes.Delete, s.current)
	}
}

// claimChange writes our ownership TXT for a desired key, removes it from a key no longer desired,
// and removes expired owners' claims being withdrawn. A human's record is never claimed (the claim
// would make it look like ours), and a TXT in the place of our claim is never overwritten.
func (p *planner) claimChange(s *slot) {
	if s.human {
		return
	}
	var ourClaim *registry.Claim
	if s.record != nil {
		ourClaim = s.record.Claim(p.owner)
	}
	deleted := map[*registry.Claim]bool{}
	ourStays := s.txt != nil && s.taken == nil
	switch {
	case ourStays && ourClaim == nil:
		p.changes.Create = append(p.changes.Create, s.txt)
	case ourStays && !sameRecord(ourClaim.TXT, s.txt):
		p.changes.UpdateOld = append(p.changes.UpdateOld, ourClaim.TXT)
		p.changes.UpdateNew = append(p.changes.UpdateNew, s.txt)
	case s.ours == nil && ourClaim != nil:
		p.changes.Delete = append(p.changes.Delete, ourClaim.TXT)
		deleted[ourClaim] = true
	}
	for _, c := range s.withdrawn {
		p.changes.Delete = append(p.changes.Delete, c.TXT)
		deleted[c] = true
		if p.isRetired(c) {
			p.retired[c.Owner], p.retiredAt[s.key.DNSName] = true, true
		} else {
			p.withdrawn[c.Owner] = true
		}
	}
	p.requireRemainingClaim(s, deleted, ourStays)
}

// requireRemainingClaim makes a batch that changes a record or withdraws claims from it, and leaves
// it standing on other owners' claims alone, depend on one of those claims. Another owner may be
// withdrawing that claim at this very moment from a view that still shows ours: without the
// requirement both batches would apply and leave a record no owner claims, which nobody could ever
// change or remove. With it, whichever batch comes second fails as stale, and its owner plans again.
// Where our own claim stays on the record, it holds the record, and nothing is required.
func (p *planner) requireRemainingClaim(s *slot, deleted map[*registry.Claim]bool, ourStays bool) {
	if ourStays || s.record == nil {
		return
	}
	if s.keptBy != nil {
		// The member goes for the sake of the live one: that one's owner may be leaving it at this
		// very moment, which would leave the group to the gone owners had it stayed.
		p.requireLiveClaim(s.keptBy)
		return
	}
	created := slices.ContainsFunc(p.changes.Create, func(e *v1alpha1.Endpoint) bool { return e.Key() == s.key })
	updated := slices.ContainsFunc(p.changes.UpdateNew, func(e *v1alpha1.Endpoint) bool { return e.Key() == s.key })
	gone := s.current == nil || slices.ContainsFunc(p.changes.Delete, func(e *v1alpha1.Endpoint) bool { return e == s.current })
	if gone && !created {
		if s.current == nil && len(deleted) > 0 {
			s.needsKind = true // once every change at the name is known (planName)
		}
		return
	}
	if !created && !updated && len(deleted) == 0 {
		return // this batch does nothing to the record
	}
	for _, c := range s.record.Claims { // sorted by owner: the lowest remaining claim is required
		if !deleted[c] {
			p.changes.Require = append(p.changes.Require, c.TXT)
			return
		}
	}
}

// requireLiveClaim makes the batch depend on the lowest live claim on the key, unless it is ours
// (our plan keeps it).
func (p *planner) requireLiveClaim(s *slot) {
	for _, c := range s.claimants {
		if c.expired {
			continue
		}
		if c.owner != p.owner {
			if claim := s.record.Claim(c.owner); claim != nil {
				p.changes.Require = append(p.changes.Require, claim.TXT)
			}
		}
		return
	}
}

// requireWinningKind makes a batch that withdraws claims from a key that lost its name's record-type
// conflict depend on a record of the kind that won. Publishing the key (on its remaining claimants'
// behalf, by an owner leaving the name or joining it with a lower ID) takes every record of the
// winning kind away, since a CNAME shares its name with nothing; if that happened at this moment, our
// withdrawal and the publication would both apply and leave a record nobody claims. With the
// requirement, whichever batch comes second fails as stale and is planned again.
func (p *planner) requireWinningKind(s *slot) {
	for _, r := range p.zone.AtName(s.key.DNSName) { // sorted by key
		if r.Endpoint != nil && r.Owned() && (r.Key.RecordType == v1alpha1.RecordTypeCNAME) != s.cname() &&
			!slices.ContainsFunc(slices.Concat(p.changes.Delete, p.changes.UpdateOld), func(e *v1alpha1.Endpoint) bool { return e.Key() == r.Key }) {
			p.changes.Require = append(p.changes.Require, r.Endpoint)
			return
		}
	}
}

// report records what we publish for a desired key and where our wish is not what is published.
func (p *planner) report(s *slot, v *value, kindWinner, publishedTypes string) {
	ours := s.ours
	if ours == nil {
		return
	}
	conflict := func(field, wished, published, winner string) {
		p.conflicts = append(p.conflicts, Conflict{
			DNSName: ours.DNSName, RecordType: ours.RecordType, SetIdentifier: ours.SetIdentifier,
			Field: field, Ours: wished, Published: published, WinnerOwner: winner,
		})
	}
	switch {
	case s.blocker != nil && s.blocker.RecordType == ours.RecordType:
		conflict(FieldTargets, formatTargets(ours.Targets), formatTargets(s.blocker.Targets), "")
	case s.blocker != nil:
		conflict(FieldType, ours.RecordType, s.blocker.RecordType, "")
	case s.taken != nil:
		conflict(FieldOwnership, formatTargets(s.txt.Targets), formatTargets(s.taken.Targets), "")
	case v == nil:
		conflict(FieldType, ours.RecordType, publishedTypes, kindWinner)
	default:
		p.published = append(p.published, ours.DeepCopy())
		if !v.multi && !v.record.Targets.SameTargets(ours.Targets) {
			conflict(FieldTargets, formatTargets(ours.Targets), formatTargets(v.record.Targets), v.winner)
		}
		if v.record.RecordTTL != ours.RecordTTL {
			winner := v.winner
			if v.ttlWinner != "" {
				winner = v.ttlWinner
			}
			conflict(FieldTTL, formatTTL(ours.RecordTTL), formatTTL(v.record.RecordTTL), winner)
		}
		if !sameProviderSpecific(v.record.ProviderSpecific, ours.ProviderSpecific) {
			conflict(FieldProviderSpecific, formatProviderSpecific(ours.ProviderSpecific), formatProviderSpecific(v.record.ProviderSpecific), v.winner)
		}
	}
}
