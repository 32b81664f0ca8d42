package registry

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/batch"
)

// Record is one record key of a zone with the claims on it. A key can be claimed without being
// published (its claimants lost a conflict), and published without claims (a human's record).
type Record struct {
	// Key is the record's identity, its name lower-cased and without a trailing dot.
	Key v1alpha1.EndpointKey
	// Endpoint is the record as read, or nil when the key is only claimed.
	Endpoint *v1alpha1.Endpoint
	// Claims are the ownership claims on the key, sorted by owner: every version-1 claim, and the
	// legacy claims (Claim.Legacy) of owners that wrote no version-1 claim for it.
	Claims []*Claim
	// written are the version-1 claims and legacy the legacy ones, each sorted by owner.
	written, legacy []*Claim
}

// Owned reports whether any owner claims the record. An unowned record is never ours to change.
func (r *Record) Owned() bool { return len(r.Claims) > 0 }

// Claim returns the version-1 claim of one owner, the one that owner writes, or nil. An owner's
// legacy claim, which nobody writes, is only in Claims.
func (r *Record) Claim(owner string) *Claim {
	for _, c := range r.written {
		if c.Owner == owner {
			return c
		}
	}
	return nil
}

// Owners lists the owners claiming the record, sorted.
func (r *Record) Owners() []string {
	owners := make([]string, len(r.Claims))
	for i, c := range r.Claims {
		owners[i] = c.Owner
	}
	return owners
}

// Zone is a zone's content split into records and the ownership claims on them, indexed by key, by
// name and by owner. Read builds it from a full read of the zone; Apply keeps it current with the
// batches written since, each at a cost that grows with the batch, not with the zone. A Zone is not
// safe for concurrent use.
type Zone struct {
	records map[v1alpha1.EndpointKey]*Record
	// byName holds the record keys at each name, published or only claimed, sorted.
	byName map[string][]*Record
	// endpoints holds every endpoint read, ownership TXTs included, by its own key.
	endpoints map[v1alpha1.EndpointKey]*v1alpha1.Endpoint
	// atName holds every endpoint read by its own name.
	atName map[string][]*v1alpha1.Endpoint
	// claims holds the version-1 ownership TXTs by the TXT's own key, legacy the claims of each
	// legacy TXT.
	claims map[v1alpha1.EndpointKey]*Claim
	legacy map[v1alpha1.EndpointKey][]*Claim
	// ownerNames counts each owner's claims at each record name.
	ownerNames map[string]ownerNames
}

// ownerNames counts one owner's claims at each record name: at a few names in a slice, at more in
// a map. Most owners claim at one name (a DNSRecord's host), where a map per owner was a fifth of
// a zone's index.
type ownerNames struct {
	few  []nameCount
	many map[string]int
}

type nameCount struct {
	name string
	n    int
}

// fewNames is the most names an owner's claims are counted at in a slice.
const fewNames = 8

// Errors of Apply, told apart with errors.Is.
var (
	// ErrStale: the zone does not hold what the batch assumes (a set to delete, update or require is
	// missing or holds other values, a set to create exists). Re-planning on a fresh read settles it.
	ErrStale = errors.New("the zone differs from what the batch assumes")
	// ErrMalformed: the batch contradicts itself whatever the zone holds.
	ErrMalformed = errors.New("malformed batch")
)

// Read splits a zone's endpoints (TXT included, as a provider returns them) into records and claims.
// It never fails: a TXT that is not a well-formed version-1 ownership record is a plain record owned
// by nobody. Of two endpoints with one key (a backend that returns duplicates) the first is kept.
// The zone holds the endpoints given, not copies: callers hand over what they read.
func Read(endpoints []*v1alpha1.Endpoint) *Zone {
	n := len(endpoints)
	z := &Zone{
		records:    make(map[v1alpha1.EndpointKey]*Record, n/2),
		byName:     make(map[string][]*Record, n/2),
		endpoints:  make(map[v1alpha1.EndpointKey]*v1alpha1.Endpoint, n),
		atName:     make(map[string][]*v1alpha1.Endpoint, n),
		claims:     make(map[v1alpha1.EndpointKey]*Claim, n/2),
		legacy:     map[v1alpha1.EndpointKey][]*Claim{},
		ownerNames: map[string]ownerNames{},
	}
	for _, e := range endpoints {
		if e == nil {
			continue
		}
		key := e.Key()
		if _, dup := z.endpoints[key]; dup {
			continue
		}
		z.endpoints[key] = e
		z.atName[key.DNSName] = append(z.atName[key.DNSName], e)
		if c, ok := parseTXT(e, cachedOwnerHash); ok {
			z.claims[key] = c
			continue
		}
		if cs, ok := ParseLegacyTXT(e); ok {
			z.legacy[key] = cs
			continue
		}
		z.record(key).Endpoint = e
	}
	for _, c := range z.claims {
		r := z.record(c.Record)
		r.written = append(r.written, c)
	}
	for _, cs := range z.legacy {
		for _, c := range cs {
			r := z.record(c.Record)
			r.legacy = append(r.legacy, c)
		}
	}
	for _, r := range z.records {
		if len(r.written) > 1 {
			slices.SortFunc(r.written, byOwner)
		}
		if len(r.legacy) > 1 {
			slices.SortFunc(r.legacy, byOwner)
		}
		if len(r.written)+len(r.legacy) > 0 {
			z.refresh(r)
		}
	}
	for _, rs := range z.byName {
		sortRecords(rs)
	}
	return z
}

// ReadAgain makes the zone, read before, hold a new read of it (the endpoints, as Read takes them)
// in place, and changes only what changed: an endpoint that holds what it held is swapped for the
// one read without parsing or indexing it again. Most of a zone does not change between two reads,
// and building a whole new index per read was most of the engine's allocation at scale (a zone of
// 20,000 endpoints read twice a cycle) and, with the old index and the read alive beside it, its
// peak memory. The zone answers as Read(endpoints) would, but for the order of endpoints at one
// name, which Apply does not keep either.
func (z *Zone) ReadAgain(endpoints []*v1alpha1.Endpoint) {
	read := make(map[v1alpha1.EndpointKey]struct{}, len(endpoints))
	for _, e := range endpoints {
		if e == nil {
			continue
		}
		key := e.Key()
		if _, dup := read[key]; dup {
			continue
		}
		read[key] = struct{}{}
		switch cur := z.endpoints[key]; {
		case cur == nil:
			z.add(e)
		case identical(cur, e):
			z.swap(cur, e)
		default:
			z.remove(key)
			z.add(e)
		}
	}
	if len(z.endpoints) == len(read) {
		return // it holds every key read, so no other
	}
	for key := range z.endpoints {
		if _, ok := read[key]; !ok {
			z.remove(key)
		}
	}
}

// identical reports whether two endpoints hold the same in every field, so that one can stand for
// the other in an index built from either.
func identical(a, b *v1alpha1.Endpoint) bool {
	return a.DNSName == b.DNSName && a.RecordType == b.RecordType && a.SetIdentifier == b.SetIdentifier &&
		a.RecordTTL == b.RecordTTL && slices.Equal(a.Targets, b.Targets) && maps.Equal(a.Labels, b.Labels) &&
		slices.Equal(a.ProviderSpecific, b.ProviderSpecific)
}

// swap puts e, identical to old, where old is in the index, so the zone holds the endpoints of the
// latest read as Read's does.
func (z *Zone) swap(old, e *v1alpha1.Endpoint) {
	key := e.Key()
	z.endpoints[key] = e
	if at := z.atName[key.DNSName]; at != nil {
		if i := slices.Index(at, old); i >= 0 {
			at[i] = e
		}
	}
	if c := z.claims[key]; c != nil {
		c.TXT = e
		return
	}
	if cs := z.legacy[key]; cs != nil {
		for _, c := range cs {
			c.TXT = e
		}
		return
	}
	if r := z.records[key]; r != nil && r.Endpoint == old {
		r.Endpoint = e
	}
}

func byOwner(a, b *Claim) int { return strings.Compare(a.Owner, b.Owner) }

// refresh sets r.Claims from its version-1 and legacy claims, and counts them by owner.
func (z *Zone) refresh(r *Record) {
	for _, c := range r.Claims {
		z.countClaim(c, -1)
	}
	claims := slices.Clone(r.written)
	for _, c := range r.legacy {
		if r.Claim(c.Owner) == nil {
			claims = append(claims, c)
		}
	}
	if len(r.legacy) > 0 {
		slices.SortStableFunc(claims, byOwner)
	}
	r.Claims = claims
	for _, c := range r.Claims {
		z.countClaim(c, 1)
	}
}

func (z *Zone) countClaim(c *Claim, delta int) {
	on, name := z.ownerNames[c.Owner], c.Record.DNSName
	if on.many != nil {
		if on.many[name] += delta; on.many[name] <= 0 {
			delete(on.many, name)
			if len(on.many) == 0 {
				delete(z.ownerNames, c.Owner)
			}
		}
		return
	}
	switch i := slices.IndexFunc(on.few, func(nc nameCount) bool { return nc.name == name }); {
	case i >= 0:
		if on.few[i].n += delta; on.few[i].n <= 0 {
			on.few = slices.Delete(on.few, i, i+1)
		}
	case delta <= 0:
		return
	case len(on.few) < fewNames:
		on.few = append(on.few, nameCount{name: name, n: delta})
	default:
		on.many = make(map[string]int, 2*fewNames)
		for _, nc := range on.few {
			on.many[nc.name] = nc.n
		}
		on.many[name], on.few = delta, nil
	}
	if len(on.few) == 0 && on.many == nil {
		delete(z.ownerNames, c.Owner)
		return
	}
	z.ownerNames[c.Owner] = on
}

func (z *Zone) record(key v1alpha1.EndpointKey) *Record {
	r, ok := z.records[key]
	if !ok {
		r = &Record{Key: key}
		z.records[key] = r
		z.byName[key.DNSName] = append(z.byName[key.DNSName], r)
	}
	return r
}

// Records returns every record key of the zone, published or only claimed, sorted by key.
func (z *Zone) Records() []*Record {
	rs := make([]*Record, 0, len(z.records))
	for _, r := range z.records {
		rs = append(rs, r)
	}
	sortRecords(rs)
	return rs
}

// Record returns one record key, or nil when the zone neither holds nor claims it.
func (z *Zone) Record(key v1alpha1.EndpointKey) *Record {
	key.DNSName = v1alpha1.NormalizeName(key.DNSName)
	return z.records[key]
}

// Endpoint returns the endpoint of one key as read, ownership TXTs included, or nil.
func (z *Zone) Endpoint(key v1alpha1.EndpointKey) *v1alpha1.Endpoint {
	key.DNSName = v1alpha1.NormalizeName(key.DNSName)
	return z.endpoints[key]
}

// AtName returns the record keys at one name, sorted.
func (z *Zone) AtName(name string) []*Record {
	return z.byName[v1alpha1.NormalizeName(name)]
}

// Names returns the names of the records claimed by owner, sorted.
func (z *Zone) Names(owner string) []string {
	on := z.ownerNames[owner]
	names := make([]string, 0, len(on.few)+len(on.many))
	for _, nc := range on.few {
		names = append(names, nc.name)
	}
	for name := range on.many {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Unclaimed returns the endpoints at a name that no claim covers: records nobody owns and every TXT
// (ownership TXTs are the registry's own; they sit at a name only when a host is named like one).
// They are what an owner must neither change nor shadow with a CNAME.
func (z *Zone) Unclaimed(name string) []*v1alpha1.Endpoint {
	var out []*v1alpha1.Endpoint
	for _, e := range z.atName[v1alpha1.NormalizeName(name)] {
		if r := z.records[e.Key()]; e.RecordType == v1alpha1.RecordTypeTXT || r == nil || !r.Owned() {
			out = append(out, e)
		}
	}
	return out
}

// Apply changes the zone as the batch changes the zone it was planned for: deletions, then updates,
// then creations. It first checks that the zone holds what the batch assumes (what it deletes,
// updates and requires, with the same values; nothing where it creates) and changes nothing
// otherwise (ErrStale, or ErrMalformed for a batch that contradicts itself). The zone keeps the
// batch's endpoints, not copies.
func (z *Zone) Apply(c *batch.Changes) error {
	if c == nil {
		return nil
	}
	if len(c.UpdateOld) != len(c.UpdateNew) {
		return fmt.Errorf("%w: %d old and %d new values of updated record sets", ErrMalformed, len(c.UpdateOld), len(c.UpdateNew))
	}
	gone := map[v1alpha1.EndpointKey]bool{}
	for _, e := range slices.Concat(c.Delete, c.UpdateOld) {
		if e == nil {
			return fmt.Errorf("%w: an empty record set", ErrMalformed)
		}
		if gone[e.Key()] {
			return fmt.Errorf("%w: %s is deleted or updated twice", ErrMalformed, describe(e))
		}
		gone[e.Key()] = true
		if cur := z.endpoints[e.Key()]; cur == nil || !cur.SameValues(e) {
			return fmt.Errorf("%w: %s", ErrStale, mismatch(e, cur))
		}
	}
	for i, e := range c.UpdateNew {
		if e == nil || e.Key() != c.UpdateOld[i].Key() {
			return fmt.Errorf("%w: update %d changes the name, type or set identifier of %s", ErrMalformed, i, describe(c.UpdateOld[i]))
		}
	}
	written := map[v1alpha1.EndpointKey]bool{}
	for _, e := range slices.Concat(c.UpdateNew, c.Create) {
		if e == nil {
			return fmt.Errorf("%w: an empty record set", ErrMalformed)
		}
		if written[e.Key()] {
			return fmt.Errorf("%w: %s is written twice", ErrMalformed, describe(e))
		}
		written[e.Key()] = true
	}
	for _, e := range c.Create {
		if gone[e.Key()] {
			return fmt.Errorf("%w: %s is deleted and created in one batch", ErrMalformed, describe(e))
		}
		if cur := z.endpoints[e.Key()]; cur != nil {
			return fmt.Errorf("%w: cannot create %s: the zone holds %s", ErrStale, describe(e), cur)
		}
	}
	for _, e := range c.Require {
		if e == nil {
			return fmt.Errorf("%w: an empty requirement", ErrMalformed)
		}
		if gone[e.Key()] || written[e.Key()] {
			return fmt.Errorf("%w: %s is required and changed by one batch", ErrMalformed, describe(e))
		}
		if cur := z.endpoints[e.Key()]; cur == nil || !cur.SameValues(e) {
			return fmt.Errorf("%w: required %s", ErrStale, mismatch(e, cur))
		}
	}
	for _, e := range slices.Concat(c.Delete, c.UpdateOld) {
		z.remove(e.Key())
	}
	for _, e := range slices.Concat(c.UpdateNew, c.Create) {
		z.add(e)
	}
	return nil
}

// Revert undoes Apply of the same batch.
func (z *Zone) Revert(c *batch.Changes) error {
	return z.Apply(inverse(c))
}

// inverse is the batch that undoes c: what c creates is deleted, what it deletes is created, and
// updates run backwards.
func inverse(c *batch.Changes) *batch.Changes {
	return &batch.Changes{Create: c.Delete, Delete: c.Create, UpdateOld: c.UpdateNew, UpdateNew: c.UpdateOld, Require: c.Require}
}

func mismatch(want, cur *v1alpha1.Endpoint) string {
	if cur == nil {
		return describe(want) + " is not in the zone"
	}
	return fmt.Sprintf("%s holds %s, not %s", describe(want), cur, want)
}

func (z *Zone) add(e *v1alpha1.Endpoint) {
	key := e.Key()
	z.endpoints[key] = e
	z.atName[key.DNSName] = append(z.atName[key.DNSName], e)
	if c, ok := parseTXT(e, cachedOwnerHash); ok {
		z.claims[key] = c
		r := z.record(c.Record)
		r.written = insertClaim(r.written, c)
		z.refresh(r)
		sortRecords(z.byName[c.Record.DNSName])
		return
	}
	if cs, ok := ParseLegacyTXT(e); ok {
		z.legacy[key] = cs
		for _, c := range cs {
			r := z.record(c.Record)
			r.legacy = insertClaim(r.legacy, c)
			z.refresh(r)
			sortRecords(z.byName[c.Record.DNSName])
		}
		return
	}
	z.record(key).Endpoint = e
	sortRecords(z.byName[key.DNSName])
}

func (z *Zone) remove(key v1alpha1.EndpointKey) {
	e := z.endpoints[key]
	if e == nil {
		return
	}
	delete(z.endpoints, key)
	z.atName[key.DNSName] = slices.DeleteFunc(z.atName[key.DNSName], func(x *v1alpha1.Endpoint) bool { return x == e })
	if len(z.atName[key.DNSName]) == 0 {
		delete(z.atName, key.DNSName)
	}
	if c := z.claims[key]; c != nil {
		delete(z.claims, key)
		r := z.records[c.Record]
		r.written = slices.DeleteFunc(r.written, func(x *Claim) bool { return x == c })
		z.refresh(r)
		z.dropIfEmpty(r)
		return
	}
	if cs := z.legacy[key]; cs != nil {
		delete(z.legacy, key)
		for _, c := range cs {
			r := z.records[c.Record]
			r.legacy = slices.DeleteFunc(r.legacy, func(x *Claim) bool { return x == c })
			z.refresh(r)
			z.dropIfEmpty(r)
		}
		return
	}
	if r := z.records[key]; r != nil {
		r.Endpoint = nil
		z.dropIfEmpty(r)
	}
}

// insertClaim inserts c into claims sorted by owner.
func insertClaim(claims []*Claim, c *Claim) []*Claim {
	i, _ := slices.BinarySearchFunc(claims, c.Owner, func(a *Claim, owner string) int { return strings.Compare(a.Owner, owner) })
	return slices.Insert(claims, i, c)
}

// LegacyTXT returns the claims of a legacy TXT (ParseLegacyTXT) by the TXT's key, or nil.
func (z *Zone) LegacyTXT(key v1alpha1.EndpointKey) []*Claim {
	key.DNSName = v1alpha1.NormalizeName(key.DNSName)
	return z.legacy[key]
}

// LegacyTXTs returns the legacy TXTs of the zone, sorted by key.
func (z *Zone) LegacyTXTs() []*v1alpha1.Endpoint {
	out := make([]*v1alpha1.Endpoint, 0, len(z.legacy))
	for key := range z.legacy {
		out = append(out, z.endpoints[key])
	}
	slices.SortFunc(out, func(a, b *v1alpha1.Endpoint) int { return compareKeys(a.Key(), b.Key()) })
	return out
}

// Redundant reports whether every owner of a legacy TXT has written its version-1 claim for the
// record the TXT describes: then the TXT says nothing the zone does not already say.
func (z *Zone) Redundant(key v1alpha1.EndpointKey) bool {
	cs := z.LegacyTXT(key)
	if len(cs) == 0 {
		return false
	}
	r := z.records[cs[0].Record]
	for _, c := range cs {
		if r.Claim(c.Owner) == nil {
			return false
		}
	}
	return true
}

func (z *Zone) dropIfEmpty(r *Record) {
	if r.Endpoint != nil || len(r.Claims) > 0 {
		return
	}
	delete(z.records, r.Key)
	name := r.Key.DNSName
	z.byName[name] = slices.DeleteFunc(z.byName[name], func(x *Record) bool { return x == r })
	if len(z.byName[name]) == 0 {
		delete(z.byName, name)
	}
}

func sortRecords(rs []*Record) {
	if len(rs) > 1 {
		slices.SortFunc(rs, func(a, b *Record) int { return compareKeys(a.Key, b.Key) })
	}
}

func compareKeys(a, b v1alpha1.EndpointKey) int {
	if c := strings.Compare(a.DNSName, b.DNSName); c != 0 {
		return c
	}
	if c := strings.Compare(a.RecordType, b.RecordType); c != 0 {
		return c
	}
	return strings.Compare(a.SetIdentifier, b.SetIdentifier)
}

// OwnerLabel is the endpoint label in which Kuadrant's dns-operator lists the owners of a record it
// writes into a zone kept as a DNSRecord (external-dns's endpoint.OwnerLabelKey).
const OwnerLabel = "owner"

// LabelOwners returns endpoints with every record that owners claim labelled with them, as
// Kuadrant's dns-operator labels the records it writes into a zone kept as a DNSRecord (an
// authoritative record): OwnerLabel is the claimants' owner IDs, sorted, joined by "&&". Its TXT
// registry gives a record the owners of the TXTs that claim it and its plan adds the writer, whose
// TXT the same write adds; so the label is the claims the zone holds after the write, which every
// owner computes alike. Ownership TXTs and records nobody claims keep their labels. An endpoint whose
// label changes is returned as a copy; the others are the ones given.
func LabelOwners(endpoints []*v1alpha1.Endpoint) []*v1alpha1.Endpoint {
	z := Read(endpoints)
	out := slices.Clone(endpoints)
	for i, e := range out {
		if e == nil {
			continue
		}
		r := z.Record(e.Key())
		if r == nil || r.Endpoint != e || !r.Owned() {
			continue
		}
		owners := strings.Join(slices.Compact(r.Owners()), ownerSeparator)
		if e.Labels[OwnerLabel] == owners {
			continue
		}
		e = e.DeepCopy()
		if e.Labels == nil {
			e.Labels = v1alpha1.Labels{}
		}
		e.Labels[OwnerLabel] = owners
		out[i] = e
	}
	return out
}
