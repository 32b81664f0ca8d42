package registry

import (
	"slices"
	"sort"
	"strings"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// Record is one record key of a zone with the claims on it. A key can be claimed without being
// published (its claimants lost a conflict), and published without claims (a human's record).
type Record struct {
	// Key is the record's identity, its name lower-cased and without a trailing dot.
	Key v1alpha1.EndpointKey
	// Endpoint is the record as read, or nil when the key is only claimed.
	Endpoint *v1alpha1.Endpoint
	// Claims are the ownership TXTs on the key, sorted by owner.
	Claims []*Claim
}

// Owned reports whether any owner claims the record. An unowned record is never ours to change.
func (r *Record) Owned() bool { return len(r.Claims) > 0 }

// Claim returns the claim of one owner, or nil.
func (r *Record) Claim(owner string) *Claim {
	for _, c := range r.Claims {
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

// Zone is a zone's content split into records and the ownership claims on them. It is read once
// per plan and is not changed afterwards.
type Zone struct {
	records map[v1alpha1.EndpointKey]*Record
	// byName holds the record keys at each name, published or only claimed.
	byName map[string][]*Record
	// endpoints holds every endpoint read, ownership TXTs included, by its own key.
	endpoints map[v1alpha1.EndpointKey]*v1alpha1.Endpoint
	// atName holds every endpoint read by its own name.
	atName map[string][]*v1alpha1.Endpoint
	// claims holds the ownership TXTs by the TXT's own key.
	claims map[v1alpha1.EndpointKey]*Claim
}

// Read splits a zone's endpoints (TXT included, as a provider returns them) into records and claims.
// It never fails: a TXT that is not a well-formed version-1 ownership record is a plain record owned
// by nobody. Of two endpoints with one key (a backend that returns duplicates) the first is kept.
func Read(endpoints []*v1alpha1.Endpoint) *Zone {
	n := len(endpoints)
	z := &Zone{
		records:   make(map[v1alpha1.EndpointKey]*Record, n),
		byName:    make(map[string][]*Record, n),
		endpoints: make(map[v1alpha1.EndpointKey]*v1alpha1.Endpoint, n),
		atName:    make(map[string][]*v1alpha1.Endpoint, n),
		claims:    make(map[v1alpha1.EndpointKey]*Claim, n),
	}
	hashOf := memoHash()
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
		if c, ok := parseTXT(e, hashOf); ok {
			z.claims[key] = c
			continue
		}
		z.record(key).Endpoint = e
	}
	for _, c := range z.claims {
		r := z.record(c.Record)
		r.Claims = append(r.Claims, c)
	}
	for _, r := range z.records {
		if len(r.Claims) > 1 {
			slices.SortFunc(r.Claims, func(a, b *Claim) int { return strings.Compare(a.Owner, b.Owner) })
		}
	}
	for _, rs := range z.byName {
		sortRecords(rs)
	}
	return z
}

// memoHash returns ownerHash remembering its answers: a zone or a batch holds few owners and many
// TXTs, and the hash is most of the cost of reading one.
func memoHash() func(string) string {
	hashes := map[string]string{}
	return func(owner string) string {
		h, ok := hashes[owner]
		if !ok {
			h = ownerHash(owner)
			hashes[owner] = h
		}
		return h
	}
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
	var names []string
	for name, rs := range z.byName {
		for _, r := range rs {
			if r.Claim(owner) != nil {
				names = append(names, name)
				break
			}
		}
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
