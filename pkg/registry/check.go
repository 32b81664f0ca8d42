package registry

import (
	"errors"
	"fmt"
	"slices"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// ErrRefused is wrapped by every refusal of Check.
var ErrRefused = errors.New("ownership check refused the change")

// Check is the second ownership check, run on a batch right before it is applied to the zone z was
// read from: the plan already keeps to what an owner may touch, and Check refuses again, so a bug in
// the plan cannot delete or rewrite a neighbour's record.
//
// Ownership TXTs: the owner creates and updates only its own (a TXT whose value names it, at the
// name TXTName gives), never one on a key whose record exists unowned (that would adopt a human's
// record), and deletes only its own or those of an owner in expired whose lease ran out, the
// latter only while a live owner keeps a claim on the record.
//
// Records: nothing touches a record nobody owns, and only an owner holding a claim at the record's
// name (before or after the batch) touches a record there. Within that:
//   - Create: the key must not exist, must be claimed after the batch, and must not shadow what
//     stays at the name (a CNAME beside other types, or another type beside a CNAME).
//   - Update: the record must stay claimed after the batch. Its claimants need not include the
//     owner: where owners disagree every claimant publishes the same winner's value.
//   - Delete: either no claim is left on the key after the batch (its last owner left), or the key
//     lost a record-type conflict: a record of the other kind (CNAME vs. A/AAAA/NS) stays at the
//     name, claimed by an owner no higher than every remaining claimant of the deleted record (the
//     lowest claimant's kind wins). Losers keep their claims, so the deletion is visible and
//     reversible.
//
// And no batch leaves a record without any claim: it would look like a human's record forever.
// Malformed batches (UpdateOld and UpdateNew not pairwise of one key, a key changed twice) are
// refused too.
func (z *Zone) Check(ownerID string, expired []string, changes *providers.Changes) error {
	if changes == nil {
		return nil
	}
	b, err := z.newBatch(ownerID, expired, changes)
	if err != nil {
		return err
	}
	for _, e := range changes.Create {
		if err := b.checkCreate(e); err != nil {
			return err
		}
	}
	for i := range changes.UpdateNew {
		if err := b.checkUpdate(changes.UpdateOld[i], changes.UpdateNew[i]); err != nil {
			return err
		}
	}
	for _, e := range changes.Delete {
		if err := b.checkDelete(e); err != nil {
			return err
		}
	}
	return b.checkWithdrawals()
}

func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrRefused}, args...)...)
}

// batch is what Check knows about one batch: which keys it creates and deletes, and the claims it
// creates and withdraws.
type batch struct {
	zone    *Zone
	owner   string
	expired map[string]bool
	created map[v1alpha1.EndpointKey]*v1alpha1.Endpoint
	// createdAt holds the created endpoints by name.
	createdAt map[string][]*v1alpha1.Endpoint
	deleted   map[v1alpha1.EndpointKey]bool
	// newClaims are the claims the batch creates, by claimed record; ourNewNames the names where
	// they are the owner's.
	newClaims   map[v1alpha1.EndpointKey][]*Claim
	ourNewNames map[string]bool
	// parse reads an ownership TXT, hashing each owner once.
	parse func(*v1alpha1.Endpoint) (*Claim, bool)
	// withdrawn are the claims the batch deletes.
	withdrawn []*Claim
}

func (z *Zone) newBatch(owner string, expired []string, c *providers.Changes) (*batch, error) {
	if len(c.UpdateOld) != len(c.UpdateNew) {
		return nil, refuse("%d old and %d new endpoints in the updates", len(c.UpdateOld), len(c.UpdateNew))
	}
	b := &batch{
		zone:        z,
		owner:       owner,
		expired:     map[string]bool{},
		created:     map[v1alpha1.EndpointKey]*v1alpha1.Endpoint{},
		createdAt:   map[string][]*v1alpha1.Endpoint{},
		deleted:     map[v1alpha1.EndpointKey]bool{},
		newClaims:   map[v1alpha1.EndpointKey][]*Claim{},
		ourNewNames: map[string]bool{},
	}
	hashOf := memoHash()
	b.parse = func(e *v1alpha1.Endpoint) (*Claim, bool) { return parseTXT(e, hashOf) }
	for _, o := range expired {
		b.expired[o] = o != owner
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
		b.created[e.Key()] = e
		b.createdAt[e.Key().DNSName] = append(b.createdAt[e.Key().DNSName], e)
		if claim, ok := b.parse(e); ok {
			b.newClaims[claim.Record] = append(b.newClaims[claim.Record], claim)
			if claim.Owner == owner {
				b.ourNewNames[claim.Record.DNSName] = true
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
	}
	for _, e := range c.Delete {
		if err := once(e); err != nil {
			return nil, err
		}
		b.deleted[e.Key()] = true
		if claim := z.claims[e.Key()]; claim != nil {
			b.withdrawn = append(b.withdrawn, claim)
		}
	}
	return b, nil
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

func (b *batch) checkCreate(e *v1alpha1.Endpoint) error {
	if _, exists := b.zone.endpoints[e.Key()]; exists {
		return refuse("creates %s, which already exists", describe(e))
	}
	if e.RecordType == v1alpha1.RecordTypeTXT {
		claim, ok := b.parse(e)
		if !ok || claim.Owner != b.owner {
			return refuse("creates TXT %s, which is not an ownership record of %s", e.DNSName, b.owner)
		}
		if r := b.zone.records[claim.Record]; r != nil && r.Endpoint != nil && !r.Owned() {
			return refuse("claims %s, a record nobody owns", describe(r.Endpoint))
		}
		return nil
	}
	if err := b.checkParty(e, "creates"); err != nil {
		return err
	}
	if len(b.claimsAfter(e.Key())) == 0 {
		return refuse("creates %s, which nobody would own", describe(e))
	}
	for _, other := range b.remainingAt(e.Key().DNSName) {
		if other.Key() != e.Key() && (e.RecordType == v1alpha1.RecordTypeCNAME) != (other.RecordType == v1alpha1.RecordTypeCNAME) {
			return refuse("creates %s beside %s: a CNAME cannot share its name", describe(e), describe(other))
		}
	}
	return nil
}

func (b *batch) checkUpdate(old, updated *v1alpha1.Endpoint) error {
	if old.RecordType == v1alpha1.RecordTypeTXT {
		claim := b.zone.claims[old.Key()]
		if claim == nil || claim.Owner != b.owner {
			return refuse("updates TXT %s, which is not an ownership record of %s", old.DNSName, b.owner)
		}
		if n, ok := b.parse(updated); !ok || n.Owner != b.owner {
			return refuse("updates TXT %s into something that is not an ownership record of %s", old.DNSName, b.owner)
		}
		return nil
	}
	if err := b.checkOwned(old, "updates"); err != nil {
		return err
	}
	if len(b.claimsAfter(old.Key())) == 0 {
		return refuse("updates %s and leaves it without an owner", describe(old))
	}
	return nil
}

func (b *batch) checkDelete(e *v1alpha1.Endpoint) error {
	if e.RecordType == v1alpha1.RecordTypeTXT {
		claim := b.zone.claims[e.Key()]
		if claim == nil {
			return refuse("deletes TXT %s, which is not an ownership record", e.DNSName)
		}
		if claim.Owner != b.owner && !b.expired[claim.Owner] {
			return refuse("deletes TXT %s of owner %s", e.DNSName, claim.Owner)
		}
		return nil
	}
	if err := b.checkOwned(e, "deletes"); err != nil {
		return err
	}
	if owners := b.claimsAfter(e.Key()); len(owners) > 0 && !b.otherKindWins(e, owners[0]) {
		return refuse("deletes %s, which %v still claim", describe(e), owners)
	}
	return nil
}

// checkOwned lets an update or delete through only for a record in the zone that some owner claims,
// at a name where this owner is a party.
func (b *batch) checkOwned(e *v1alpha1.Endpoint, verb string) error {
	r := b.zone.records[e.Key()]
	if r == nil || r.Endpoint == nil {
		return refuse("%s %s, which is not in the zone", verb, describe(e))
	}
	if !r.Owned() {
		return refuse("%s %s, which nobody owns", verb, describe(e))
	}
	return b.checkParty(e, verb)
}

func (b *batch) checkParty(e *v1alpha1.Endpoint, verb string) error {
	name := e.Key().DNSName
	for _, r := range b.zone.byName[name] {
		if r.Claim(b.owner) != nil {
			return nil
		}
	}
	if b.ourNewNames[name] {
		return nil
	}
	return refuse("%s %s, where %s claims nothing", verb, describe(e), b.owner)
}

// claimsAfter lists the owners claiming a record key once the batch is applied.
func (b *batch) claimsAfter(key v1alpha1.EndpointKey) []string {
	var owners []string
	if r := b.zone.records[key]; r != nil {
		for _, c := range r.Claims {
			if !b.deleted[c.TXT.Key()] {
				owners = append(owners, c.Owner)
			}
		}
	}
	for _, c := range b.newClaims[key] {
		if !slices.Contains(owners, c.Owner) {
			owners = append(owners, c.Owner)
		}
	}
	slices.Sort(owners)
	return owners
}

// remainingAt lists the endpoints at a name once the batch is applied.
func (b *batch) remainingAt(name string) []*v1alpha1.Endpoint {
	var out []*v1alpha1.Endpoint
	for _, e := range b.zone.atName[name] {
		if !b.deleted[e.Key()] {
			out = append(out, e)
		}
	}
	return append(out, b.createdAt[name]...)
}

// otherKindWins reports whether a claimed record of the other kind (CNAME vs. A/AAAA/NS) stays at
// e's name, claimed by an owner no higher than lowest, the lowest remaining claimant of e: the plan's
// rule for which kind a name publishes.
func (b *batch) otherKindWins(e *v1alpha1.Endpoint, lowest string) bool {
	cname := e.RecordType == v1alpha1.RecordTypeCNAME
	for _, other := range b.remainingAt(e.Key().DNSName) {
		if !slices.Contains(OwnedTypes, other.RecordType) || (other.RecordType == v1alpha1.RecordTypeCNAME) == cname {
			continue
		}
		if owners := b.claimsAfter(other.Key()); len(owners) > 0 && owners[0] <= lowest {
			return true
		}
	}
	return false
}

func (b *batch) existsAfter(key v1alpha1.EndpointKey) bool {
	if _, ok := b.created[key]; ok {
		return true
	}
	r := b.zone.records[key]
	return r != nil && r.Endpoint != nil && !b.deleted[key]
}

// checkWithdrawals refuses deleted claims that orphan their record, and expired owners' claims
// withdrawn where no live owner keeps the record.
func (b *batch) checkWithdrawals() error {
	for _, c := range b.withdrawn {
		owners := b.claimsAfter(c.Record)
		if len(owners) == 0 && b.existsAfter(c.Record) {
			return refuse("deletes the last claim on %s %s and leaves the record without an owner", c.Record.RecordType, c.Record.DNSName)
		}
		if c.Owner == b.owner {
			continue
		}
		live := slices.ContainsFunc(owners, func(o string) bool { return !b.expired[o] })
		if !live {
			return refuse("withdraws expired owner %s from %s %s, which no live owner claims", c.Owner, c.Record.RecordType, c.Record.DNSName)
		}
	}
	return nil
}
