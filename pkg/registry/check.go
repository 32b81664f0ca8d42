package registry

import (
	"errors"
	"fmt"
	"slices"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/batch"
)

// ErrRefused is wrapped by every refusal of Check.
var ErrRefused = errors.New("ownership check refused the change")

// Check is the ownership gate, run on the exact batch handed to a backend, last thing before it is
// sent, against the zone z the batch was planned for (the zone before the batch). The plan already
// keeps to what an owner may touch; Check refuses again, so a bug in the plan, or in how batches are
// put together, cannot delete or rewrite a neighbour's record. owners are the owners whose plans the
// batch holds (one cluster's publish cycle sums several).
//
// Ownership TXTs: the batch creates and updates only its owners' own (a TXT whose value names the
// owner, at the name TXTName gives), never one on a key whose record exists unowned (that would
// adopt a human's record), and deletes only its owners' own or those of an owner in expired whose
// lease ran out, the latter only while a live owner keeps a claim on the record. A legacy TXT
// (ParseLegacyTXT) is never created or updated, and is deleted only where it is redundant: each
// owner it names keeps its version-1 claim on the same record after the batch.
//
// Records: nothing touches a record nobody owns. Within that:
//   - Create: the key must not exist, must be claimed after the batch, one of the owners must claim
//     something at its name before or after (a leaving winner publishes the next claimant's wish),
//     and it must not shadow what stays at the name (a CNAME beside other types, or another type
//     beside a CNAME).
//   - Update: one of the owners claims the key itself, before or after the batch, and the record
//     stays claimed after it.
//   - Delete: one of the owners claimed the key and no claim is left on it after the batch (its
//     last owner left), or it is a member of a set group only expired owners held, withdrawn by a
//     party to the name while a live member stays (goneMember), or the key lost a record-type
//     conflict seen by a party to the name: a claimed record of the other kind (CNAME vs.
//     A/AAAA/NS) stays at the name and wins (otherKindWins: the kind a live owner already holds
//     published stays; otherwise the lowest claimant's kind wins). Losers keep their claims, so the
//     deletion is visible and reversible.
//   - Require: every required set is in the zone with the required values.
//
// And no batch leaves a record without any claim, it would look like a human's record forever; a
// batch that withdraws a claim from a record other owners keep claiming requires one of their claims
// (batch.Changes.Require), so two owners leaving at once cannot both leave it behind. Malformed
// batches (UpdateOld and UpdateNew not pairwise of one key, a key changed twice) are refused too.
func (z *Zone) Check(owners []string, expired []string, changes *batch.Changes) error {
	if changes == nil {
		return nil
	}
	g, err := z.newGate(owners, expired, changes)
	if err != nil {
		return err
	}
	return g.check(changes)
}

func (g *gate) check(changes *batch.Changes) error {
	for _, e := range changes.Create {
		if err := g.checkCreate(e); err != nil {
			return err
		}
	}
	for i := range changes.UpdateNew {
		if err := g.checkUpdate(changes.UpdateOld[i], changes.UpdateNew[i]); err != nil {
			return err
		}
	}
	for _, e := range changes.Delete {
		if err := g.checkDelete(e); err != nil {
			return err
		}
	}
	for _, e := range changes.Require {
		if cur := g.zone.endpoints[e.Key()]; cur == nil || !cur.SameValues(e) {
			return refuse("requires %s", mismatch(e, cur))
		}
	}
	if err := g.checkWithdrawals(); err != nil {
		return err
	}
	return g.checkHeld(changes)
}

func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrRefused}, args...)...)
}

// gate is what Check knows about one batch: which keys it creates and deletes, and the claims it
// creates and withdraws.
type gate struct {
	zone    *Zone
	owners  map[string]bool
	expired map[string]bool
	created map[v1alpha1.EndpointKey]*v1alpha1.Endpoint
	// createdAt holds the created endpoints by name.
	createdAt map[string][]*v1alpha1.Endpoint
	deleted   map[v1alpha1.EndpointKey]bool
	required  map[v1alpha1.EndpointKey]bool
	// newClaims are the claims the batch creates, by claimed record; newNames the names where the
	// batch's owners create them.
	newClaims map[v1alpha1.EndpointKey][]*Claim
	newNames  map[string]bool
	// withdrawn are the claims the batch deletes.
	withdrawn []*Claim
	// active: the zone's active failover groups for a cleanup batch (CheckCleanup), else nil.
	active []string
}

func (z *Zone) newGate(owners, expired []string, c *batch.Changes) (*gate, error) {
	if len(c.UpdateOld) != len(c.UpdateNew) {
		return nil, refuse("%d old and %d new endpoints in the updates", len(c.UpdateOld), len(c.UpdateNew))
	}
	g := &gate{
		zone:      z,
		owners:    map[string]bool{},
		expired:   map[string]bool{},
		created:   map[v1alpha1.EndpointKey]*v1alpha1.Endpoint{},
		createdAt: map[string][]*v1alpha1.Endpoint{},
		deleted:   map[v1alpha1.EndpointKey]bool{},
		required:  map[v1alpha1.EndpointKey]bool{},
		newClaims: map[v1alpha1.EndpointKey][]*Claim{},
		newNames:  map[string]bool{},
	}
	for _, o := range owners {
		g.owners[o] = true
	}
	for _, o := range expired {
		g.expired[o] = !g.owners[o]
	}
	seen := map[v1alpha1.EndpointKey]bool{}
	once := func(e *v1alpha1.Endpoint) error {
		if e == nil {
			return refuse("a nil endpoint")
		}
		if seen[e.Key()] {
			return refuse("%s is changed twice in one batch", describe(e))
		}
		seen[e.Key()] = true
		return nil
	}
	for _, e := range c.Create {
		if err := once(e); err != nil {
			return nil, err
		}
		g.created[e.Key()] = e
		g.createdAt[e.Key().DNSName] = append(g.createdAt[e.Key().DNSName], e)
		if claim, ok := parseTXT(e, cachedOwnerHash); ok {
			g.newClaims[claim.Record] = append(g.newClaims[claim.Record], claim)
			if g.owners[claim.Owner] {
				g.newNames[claim.Record.DNSName] = true
			}
		}
	}
	for i, e := range c.UpdateNew {
		if err := once(e); err != nil {
			return nil, err
		}
		if c.UpdateOld[i] == nil || c.UpdateOld[i].Key() != e.Key() {
			return nil, refuse("update %d replaces %s with an endpoint of another key", i, describe(c.UpdateOld[i]))
		}
		// An update names the exact old values, so it holds the claim it rewrites in place as
		// firmly as a requirement.
		g.required[e.Key()] = true
	}
	for _, e := range c.Delete {
		if err := once(e); err != nil {
			return nil, err
		}
		g.deleted[e.Key()] = true
		if claim := z.claims[e.Key()]; claim != nil {
			g.withdrawn = append(g.withdrawn, claim)
		}
	}
	for _, e := range c.Require {
		if e == nil {
			return nil, refuse("a nil requirement")
		}
		if seen[e.Key()] {
			return nil, refuse("%s is required and changed in one batch", describe(e))
		}
		seen[e.Key()] = true
		g.required[e.Key()] = true
	}
	return g, nil
}

func describe(e *v1alpha1.Endpoint) string {
	if e == nil {
		return "a nil endpoint"
	}
	s := fmt.Sprintf("%s %s", e.RecordType, e.DNSName)
	if e.SetIdentifier != "" {
		s += fmt.Sprintf(" (set %q)", e.SetIdentifier)
	}
	return s
}

func (g *gate) checkCreate(e *v1alpha1.Endpoint) error {
	if _, exists := g.zone.endpoints[e.Key()]; exists {
		return refuse("creates %s, which already exists", describe(e))
	}
	if named, err := g.checkNamed(e, "creates"); named {
		return err
	}
	if e.RecordType == v1alpha1.RecordTypeTXT {
		claim, ok := parseTXT(e, cachedOwnerHash)
		if !ok || !g.owners[claim.Owner] {
			return refuse("creates TXT %s, which is not an ownership record of %s", e.DNSName, g.ownerList())
		}
		if r := g.zone.records[claim.Record]; r != nil && r.Endpoint != nil && !r.Owned() {
			return refuse("claims %s, a record nobody owns", describe(r.Endpoint))
		}
		return nil
	}
	// A leaving winner publishes the next claimant's wish, so a record is created by any party to
	// its name, for whoever claims it.
	if err := g.checkParty(e); err != nil {
		return err
	}
	if len(g.claimsAfter(e.Key())) == 0 {
		return refuse("creates %s, which nobody would own", describe(e))
	}
	for _, other := range g.remainingAt(e.Key().DNSName) {
		if other.Key() != e.Key() && (e.RecordType == v1alpha1.RecordTypeCNAME) != (other.RecordType == v1alpha1.RecordTypeCNAME) {
			return refuse("creates %s beside %s: a CNAME cannot share its name", describe(e), describe(other))
		}
	}
	return nil
}

func (g *gate) checkUpdate(old, updated *v1alpha1.Endpoint) error {
	if named, err := g.checkNamed(old, "updates"); named {
		return err
	}
	if old.RecordType == v1alpha1.RecordTypeTXT {
		claim := g.zone.claims[old.Key()]
		if claim == nil || !g.owners[claim.Owner] {
			return refuse("updates TXT %s, which is not an ownership record of %s", old.DNSName, g.ownerList())
		}
		if n, ok := parseTXT(updated, cachedOwnerHash); !ok || n.Owner != claim.Owner {
			return refuse("updates TXT %s into something that is not an ownership record of %s", old.DNSName, claim.Owner)
		}
		return nil
	}
	r, err := g.owned(old, "updates")
	if err != nil {
		return err
	}
	after := g.claimsAfter(old.Key())
	if len(after) == 0 {
		return refuse("updates %s and leaves it without an owner", describe(old))
	}
	if !g.ownersClaim(r.Owners()) && !g.ownersClaim(after) {
		return g.checkRetiredUpdate(old, updated)
	}
	return nil
}

func (g *gate) checkDelete(e *v1alpha1.Endpoint) error {
	if named, err := g.checkNamed(e, "deletes"); named {
		return err
	}
	if e.RecordType == v1alpha1.RecordTypeTXT {
		if legacy := g.zone.legacy[e.Key()]; legacy != nil {
			return g.checkLegacyDelete(e, legacy)
		}
		claim := g.zone.claims[e.Key()]
		if claim == nil {
			return refuse("deletes TXT %s, which is not an ownership record", e.DNSName)
		}
		if !g.owners[claim.Owner] && !g.expired[claim.Owner] && !g.retired(claim) {
			return refuse("deletes TXT %s of owner %s", e.DNSName, claim.Owner)
		}
		return nil
	}
	r, err := g.owned(e, "deletes")
	if err != nil {
		return err
	}
	after := g.claimsAfter(e.Key())
	if len(after) == 0 && g.ownersClaim(r.Owners()) {
		return nil // its last owners left
	}
	if len(after) == 0 && g.goneMember(r) {
		return g.checkParty(e) // a set group's member only gone owners held, withdrawn with them
	}
	if len(after) > 0 && g.otherKindWins(e, after) {
		return g.checkParty(e) // it lost a record-type conflict, as a party to the name sees
	}
	if len(after) == 0 && g.allRetired(r) {
		return g.checkRetiredDelete(e) // only inactive groups held it (CheckCleanup)
	}
	if len(after) > 0 {
		return refuse("deletes %s, which %v still claim", describe(e), after)
	}
	return refuse("deletes %s, which %s does not claim", describe(e), g.ownerList())
}

// checkLegacyDelete lets a legacy TXT go only where each of its owners keeps its version-1 claim
// on the record: deleting it then changes no one's ownership.
func (g *gate) checkLegacyDelete(e *v1alpha1.Endpoint, legacy []*Claim) error {
	r := g.zone.records[legacy[0].Record]
	for _, c := range legacy {
		if v1 := r.Claim(c.Owner); v1 == nil || g.deleted[v1.TXT.Key()] {
			return refuse("deletes legacy TXT %s, whose owner %s keeps no version-1 claim on %s %s", e.DNSName, c.Owner, c.Record.RecordType, c.Record.DNSName)
		}
	}
	return nil
}

// owned returns the record of a key some owner claims, refusing a key that is not in the zone or that
// nobody owns.
func (g *gate) owned(e *v1alpha1.Endpoint, verb string) (*Record, error) {
	r := g.zone.records[e.Key()]
	if r == nil || r.Endpoint == nil {
		return nil, refuse("%s %s, which is not in the zone", verb, describe(e))
	}
	if !r.Owned() {
		return nil, refuse("%s %s, which nobody owns", verb, describe(e))
	}
	return r, nil
}

// checkParty refuses a change at a name where none of the batch's owners claims anything, before or
// after the batch.
func (g *gate) checkParty(e *v1alpha1.Endpoint) error {
	name := e.Key().DNSName
	for _, r := range g.zone.byName[name] {
		if g.ownersClaim(r.Owners()) {
			return nil
		}
	}
	if g.newNames[name] {
		return nil
	}
	return refuse("changes %s, where %s claims nothing", describe(e), g.ownerList())
}

// ownersClaim reports whether one of the batch's owners is among claimants.
func (g *gate) ownersClaim(claimants []string) bool {
	return slices.ContainsFunc(claimants, func(o string) bool { return g.owners[o] })
}

func (g *gate) ownerList() string {
	owners := make([]string, 0, len(g.owners))
	for o := range g.owners {
		owners = append(owners, o)
	}
	slices.Sort(owners)
	if len(owners) == 1 {
		return owners[0]
	}
	return fmt.Sprint(owners)
}

// claimsAfter lists the owners claiming a record key once the batch is applied.
func (g *gate) claimsAfter(key v1alpha1.EndpointKey) []string {
	var owners []string
	if r := g.zone.records[key]; r != nil {
		for _, c := range r.Claims {
			if !g.deleted[c.TXT.Key()] {
				owners = append(owners, c.Owner)
			}
		}
	}
	for _, c := range g.newClaims[key] {
		if !slices.Contains(owners, c.Owner) {
			owners = append(owners, c.Owner)
		}
	}
	slices.Sort(owners)
	return owners
}

// remainingAt lists the endpoints at a name once the batch is applied.
func (g *gate) remainingAt(name string) []*v1alpha1.Endpoint {
	var out []*v1alpha1.Endpoint
	for _, e := range g.zone.atName[name] {
		if !g.deleted[e.Key()] {
			out = append(out, e)
		}
	}
	return append(out, g.createdAt[name]...)
}

// otherKindWins reports whether a claimed record of the other kind (CNAME vs. A/AAAA/NS) stays at
// e's name and wins the plan's rule for which kind a name publishes over e, which claimants (sorted)
// claim after the batch: the kind already published stays while a live owner that claimed one of its
// records before still wants it (the incumbent); where neither kind is held so, or both are, the kind
// of the first claimant wins, live owners before gone ones, each in owner order. The gate knows an
// owner to be gone when it is in expired; the plan may count more gone (by a lease the gate is not
// told about), so a deletion for others' claims is let through where the other kind is held, or
// first in either order (owner order alone, or live owners first). The batch's own record, where its
// claim stays on e, is held to the rule exactly: e goes only to a held other kind where e's kind is
// not held, or, where both or neither are, to a first claimant.
func (g *gate) otherKindWins(e *v1alpha1.Endpoint, claimants []string) bool {
	cname := e.RecordType == v1alpha1.RecordTypeCNAME
	ours := g.ownersClaim(claimants)
	otherHeld, otherFirst, otherLower := false, false, false
	for _, other := range g.remainingAt(e.Key().DNSName) {
		if !slices.Contains(OwnedTypes, other.RecordType) || (other.RecordType == v1alpha1.RecordTypeCNAME) == cname {
			continue
		}
		owners := g.claimsAfter(other.Key())
		if len(owners) == 0 {
			continue
		}
		otherHeld = otherHeld || g.held(other.Key(), false)
		otherFirst = otherFirst || !g.comesFirst(claimants, owners)
		otherLower = otherLower || owners[0] <= claimants[0]
	}
	if !ours {
		return otherHeld || otherFirst || otherLower
	}
	ownHeld := false
	for _, r := range g.zone.byName[e.Key().DNSName] {
		if slices.Contains(OwnedTypes, r.Key.RecordType) && (r.Key.RecordType == v1alpha1.RecordTypeCNAME) == cname {
			ownHeld = ownHeld || g.held(r.Key, true)
		}
	}
	if otherHeld != ownHeld {
		return otherHeld
	}
	return otherFirst
}

// comesFirst reports whether the first of a's owners comes before the first of b's, live owners
// (not in expired) before gone ones, each in owner order. Both are sorted and not empty.
func (g *gate) comesFirst(a, b []string) bool {
	first := func(owners []string) (bool, string) {
		for _, o := range owners {
			if !g.expired[o] {
				return false, o
			}
		}
		return true, owners[0]
	}
	ga, oa := first(a)
	gb, ob := first(b)
	if ga != gb {
		return !ga
	}
	return oa < ob
}

// held reports whether a record was published before the batch and stays (or, with deleting,
// whether or not the batch deletes it: held when the plan chose), with a claim that was in the zone before the batch and stays, of an owner
// not counted expired: an incumbent holds it.
func (g *gate) held(key v1alpha1.EndpointKey, deleting bool) bool {
	r := g.zone.records[key]
	if r == nil || r.Endpoint == nil || g.deleted[key] && !deleting {
		return false
	}
	return slices.ContainsFunc(r.Claims, func(c *Claim) bool { return !g.deleted[c.TXT.Key()] && !g.expired[c.Owner] })
}

func (g *gate) existsAfter(key v1alpha1.EndpointKey) bool {
	if _, ok := g.created[key]; ok {
		return true
	}
	r := g.zone.records[key]
	return r != nil && r.Endpoint != nil && !g.deleted[key]
}

// checkWithdrawals refuses deleted claims that orphan their record, and expired owners' claims
// withdrawn where no live owner keeps the record.
func (g *gate) checkWithdrawals() error {
	for _, c := range g.withdrawn {
		owners := g.claimsAfter(c.Record)
		if len(owners) == 0 && g.existsAfter(c.Record) {
			return refuse("deletes the last claim on %s %s and leaves the record without an owner", c.Record.RecordType, c.Record.DNSName)
		}
		if !g.owners[c.Owner] {
			live := slices.ContainsFunc(owners, func(o string) bool { return !g.expired[o] })
			retiredOnly := g.retired(c) && g.allRetired(g.zone.records[c.Record]) && !g.existsAfter(c.Record)
			if !live && !retiredOnly && !(g.deleted[c.Record] && g.goneMember(g.zone.records[c.Record])) {
				return refuse("withdraws expired owner %s from %s %s, which no live owner claims", c.Owner, c.Record.RecordType, c.Record.DNSName)
			}
		}
	}
	return nil
}

// goneMember reports whether r is a member of a set group (the weighted or geo sets of one name and
// type), other than the default geo, whose every claim is of an expired owner and deleted by the batch, while another member of
// the group stays published, held by a live owner that the batch requires or is: the plan's rule for
// withdrawing a gone cluster's leaf or geo, which never leaves the group to gone owners alone.
func (g *gate) goneMember(r *Record) bool {
	if r == nil || r.Key.SetIdentifier == "" || !r.Owned() || r.Endpoint == nil || DefaultGeo(r.Endpoint) {
		return false
	}
	gone := false
	for _, c := range r.Claims {
		// Every claim goes: an expired owner's, or one of the batch's owners leaving.
		if c.Legacy || !g.expired[c.Owner] && !g.owners[c.Owner] || !g.deleted[c.TXT.Key()] {
			return false
		}
		gone = gone || g.expired[c.Owner]
	}
	if !gone {
		return false
	}
	for _, m := range g.zone.byName[r.Key.DNSName] {
		if m == r || m.Key.RecordType != r.Key.RecordType || m.Key.SetIdentifier == "" || !g.existsAfter(m.Key) {
			continue
		}
		for _, c := range m.Claims {
			if !g.expired[c.Owner] && !g.deleted[c.TXT.Key()] && (g.owners[c.Owner] || g.required[c.TXT.Key()]) {
				return true
			}
		}
		// Or the batch's owner claims the published member now (it joins the group as the gone
		// owners leave it).
		if slices.ContainsFunc(g.newClaims[m.Key], func(c *Claim) bool { return g.owners[c.Owner] }) {
			return true
		}
	}
	// Or a member the batch itself creates, with its owner's claim.
	for _, e := range g.createdAt[r.Key.DNSName] {
		k := e.Key()
		if k.RecordType == r.Key.RecordType && k.SetIdentifier != "" && k != r.Key &&
			slices.ContainsFunc(g.newClaims[k], func(c *Claim) bool { return g.owners[c.Owner] }) {
			return true
		}
	}
	return false
}

// DefaultGeo reports whether e is the default geo's set: the one clients of every geo no other set
// names are answered from.
func DefaultGeo(e *v1alpha1.Endpoint) bool {
	code, ok := e.GetProviderSpecific(v1alpha1.ProviderSpecificGeoCode)
	return ok && code == v1alpha1.WildcardGeo
}

// winningKindRequired reports whether a claimed record of the other kind than key's (CNAME vs.
// A/AAAA/NS) at key's name is required, or none is published there (nothing then keeps key
// unpublished but records nobody owns, which no owner removes).
func (g *gate) winningKindRequired(key v1alpha1.EndpointKey) bool {
	cname := key.RecordType == v1alpha1.RecordTypeCNAME
	published := false
	for _, r := range g.zone.byName[key.DNSName] {
		if r.Endpoint == nil || !r.Owned() || (r.Key.RecordType == v1alpha1.RecordTypeCNAME) == cname || g.deleted[r.Key] {
			continue
		}
		published = true
		if g.required[r.Key] {
			return true
		}
	}
	return !published
}

// checkHeld refuses a batch that creates or updates a record, or withdraws a claim from one, and
// leaves it standing on other owners' existing claims alone without requiring one of them: their
// owners may be withdrawing those claims at the same moment, and the record would be left with none.
// Likewise a claim withdrawn from a key that is not published (it lost its name's record-type
// conflict) while other claims on it stay needs a record of the winning type required: taking that
// away is what would publish the key on the remaining claimants' behalf.
func (g *gate) checkHeld(changes *batch.Changes) error {
	touched := map[v1alpha1.EndpointKey]bool{}
	for _, e := range slices.Concat(changes.Create, changes.UpdateNew) {
		if e.RecordType != v1alpha1.RecordTypeTXT {
			touched[e.Key()] = true
		}
	}
	for _, c := range g.withdrawn {
		touched[c.Record] = true
	}
	for _, c := range g.withdrawn {
		if after := g.claimsAfter(c.Record); !g.existsAfter(c.Record) && len(after) == 0 || g.ownersClaim(after) {
			// Gone with its last claim, or held by a claim of the batch's own owners, which
			// nobody else can withdraw at this moment.
			continue
		}
		published := g.zone.records[c.Record] != nil && g.zone.records[c.Record].Endpoint != nil
		if !published && !g.existsAfter(c.Record) && !g.winningKindRequired(c.Record) {
			return refuse("withdraws the claim of %s on %s %s, which lost to the other record type at its name, without requiring a record of that type",
				c.Owner, c.Record.RecordType, c.Record.DNSName)
		}
	}
	for key := range touched {
		after := g.claimsAfter(key)
		if !g.existsAfter(key) || len(after) == 0 || g.ownersClaim(after) || len(g.newClaims[key]) > 0 {
			continue
		}
		held := false
		if r := g.zone.records[key]; r != nil {
			for _, c := range r.Claims {
				held = held || (g.required[c.TXT.Key()] && !g.deleted[c.TXT.Key()])
			}
		}
		if !held {
			return refuse("leaves %s %s to the claims of %v without requiring one of them", key.RecordType, key.DNSName, after)
		}
	}
	return nil
}
