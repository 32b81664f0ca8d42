package registry

import (
	"strings"
	"sync"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// Owner-named records are TXT records in which one owner states something about itself that other
// owners read (its health: package health). Each is named
//
//	dnspolicy-<kind>-<hash8(ownerID)>.<name>
//
// and only that owner creates, changes or deletes it. It needs no ownership TXT, since its name says
// whose it is. Kuadrant names begin with "kuadrant-", so none collides with one; Kuadrant's
// dns-operator sees a TXT it does not own, which it leaves alone.

// namedPrefix starts every owner-named record.
const namedPrefix = "dnspolicy-"

// NamedRecordName is the name of ownerID's owner-named record of kind (lower-case letters) about
// name.
func NamedRecordName(kind, ownerID, name string) string {
	return namedPrefix + kind + "-" + ownerHash(ownerID) + "." + v1alpha1.NormalizeName(name)
}

// namedOwnerHash returns the owner hash in the name of an owner-named record, and false for any
// other endpoint.
func namedOwnerHash(e *v1alpha1.Endpoint) (string, bool) {
	if e == nil || e.RecordType != v1alpha1.RecordTypeTXT || e.SetIdentifier != "" {
		return "", false
	}
	first, _, ok := strings.Cut(v1alpha1.NormalizeName(e.DNSName), ".")
	if !ok {
		return "", false
	}
	rest, ok := strings.CutPrefix(first, namedPrefix)
	if !ok {
		return "", false
	}
	i := strings.LastIndexByte(rest, '-')
	if i <= 0 || len(rest)-i-1 != 8 || strings.Trim(rest[:i], "abcdefghijklmnopqrstuvwxyz") != "" {
		return "", false
	}
	return rest[i+1:], true
}

// checkNamed decides a change to an owner-named record: only its owner makes one. named is false for
// any other endpoint, which the other rules decide.
func (g *gate) checkNamed(e *v1alpha1.Endpoint, verb string) (bool, error) {
	h, ok := namedOwnerHash(e)
	if !ok {
		return false, nil
	}
	for o := range g.owners {
		if cachedOwnerHash(o) == h {
			return true, nil
		}
	}
	return true, refuse("%s %s, the record of another owner (%s)", verb, describe(e), h)
}

// Sightings remember, for each owner-named record a process reads, since when it holds its value by
// this process's clock: since the process saw it change, or since it first saw it. Readers judge
// other owners' statements this way, never by comparing a time written by another clock with theirs.
type Sightings struct {
	mu   sync.Mutex
	seen map[string]Sighting
}

// Sighting is what Sightings know of one record.
type Sighting struct {
	Value string
	// Since is when the value was first seen, or seen changing.
	Since time.Time
	// Changed: Since is when the value was seen changing, not when it was first seen.
	Changed bool
}

// Observe records the value of the record at key (the zone and name) as read at now, and returns
// since when it holds it.
func (s *Sightings) Observe(key, value string, now time.Time) Sighting {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[string]Sighting{}
	}
	cur, ok := s.seen[key]
	switch {
	case !ok:
		cur = Sighting{Value: value, Since: now}
	case cur.Value != value:
		cur = Sighting{Value: value, Since: now, Changed: true}
	}
	s.seen[key] = cur
	return cur
}

// Retain forgets every sighting whose key begins with prefix and is not in keep: the records a read
// no longer finds are forgotten, so that what is kept follows the zone rather than grows with it.
func (s *Sightings) Retain(prefix string, keep map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.seen {
		if strings.HasPrefix(k, prefix) && !keep[k] {
			delete(s.seen, k)
		}
	}
}

// Len returns how many records are remembered.
func (s *Sightings) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

// Bookkeeping reports whether an endpoint is the registry's, not a record: an ownership TXT (either
// format) or an owner-named record (a lease, a health statement). An authoritative record published
// into a zone (delegation) leaves these out: they are its contributors' bookkeeping inside the
// record, and the zone gets the authoritative record's own.
func Bookkeeping(e *v1alpha1.Endpoint) bool {
	if _, ok := namedOwnerHash(e); ok {
		return true
	}
	if _, ok := ParseTXT(e); ok {
		return true
	}
	_, ok := ParseLegacyTXT(e)
	return ok
}
