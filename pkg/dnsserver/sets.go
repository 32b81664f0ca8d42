package dnsserver

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// group is the endpoints of one name and type, keyed by set identifier, while a zone is built.
type group struct {
	name    string
	rrtype  uint16
	members map[string]*draft
	// sources are the sources that contributed, to tell them when the set is refused.
	sources []string
	// tooLarge: a record of the set cannot be sent in one message (reported with its endpoint, to
	// the sources in told).
	tooLarge bool
	told     []string
}

// draft is one record set before encoding.
type draft struct {
	setID   string
	ttl     uint32
	records map[string]dns.RR // by normalised value, so duplicates collapse
	geo     []string
	weight  *uint64
	// values and rrs are the records in order, once sorted (sorted).
	values []string
	rrs    []dns.RR
}

// add merges one endpoint's records and routing properties into the draft: the same record set
// from several sources serves the union of their targets, at the lowest TTL.
func (d *draft) add(ttl uint32, values []string, rrs []dns.RR, props []v1alpha1.ProviderSpecificProperty) {
	d.ttl = min(d.ttl, ttl)
	for i, v := range values {
		if d.records[v] == nil {
			d.records[v] = rrs[i]
		}
	}
	for _, p := range props {
		switch p.Name {
		case v1alpha1.ProviderSpecificGeoCode:
			for code := range strings.SplitSeq(p.Value, ",") {
				if code = strings.TrimSpace(code); code != "" && !slices.Contains(d.geo, code) {
					d.geo = append(d.geo, code)
				}
			}
		case v1alpha1.ProviderSpecificWeight:
			// Kuadrant's plugin reads a weight it cannot parse as 0; so do we, so both serve the
			// same. Weights above v1alpha1.MaxWeight were refused, so a set's sum cannot overflow.
			w, _ := strconv.ParseUint(strings.TrimSpace(p.Value), 10, 64)
			d.weight = &w
		}
	}
}

func weightText(w *uint64) string {
	if w == nil {
		return "-"
	}
	return strconv.FormatUint(*w, 10)
}

// sorted returns the records of a draft ordered by value, with the set's TTL. It sorts once: the
// build reads a set's records up to three times (to encode it, for the unlocated view of a routed
// set, for the digest), and a large set's sorted copies were a good part of a build's garbage.
// Callers do not change what it returns.
func (d *draft) sorted() (values []string, rrs []dns.RR) {
	if d.values != nil {
		return d.values, d.rrs
	}
	values = make([]string, 0, len(d.records))
	for v := range d.records {
		values = append(values, v)
	}
	slices.Sort(values)
	rrs = make([]dns.RR, len(values))
	for i, v := range values {
		rrs[i] = d.records[v]
		rrs[i].Header().Ttl = d.ttl
	}
	d.values, d.rrs = values, rrs
	return values, rrs
}

func sortedDrafts(m map[string]*draft) []*draft {
	out := make([]*draft, 0, len(m))
	for _, d := range m {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b *draft) int { return strings.Compare(a.setID, b.setID) })
	return out
}

// newRoutedSet encodes each member. A CNAME member holds one target (the first, sorted), as a name
// can only alias one other.
func newRoutedSet(origin string, rrtype uint16, drafts []*draft) (*routedSet, error) {
	rs := &routedSet{}
	for _, d := range drafts {
		_, rrs := d.sorted()
		if rrtype == dns.TypeCNAME {
			rrs = rrs[:1]
		}
		set, err := encodeSet(origin, rrs)
		if err != nil {
			return nil, fmt.Errorf("set identifier %q: %w", d.setID, err)
		}
		m := member{set: set}
		for _, code := range d.geo {
			rs.geo = true
			switch {
			case code == v1alpha1.WildcardGeo:
				m.isDefault = true
			case strings.HasPrefix(code, continentPrefix) && len(code) == len(continentPrefix)+2:
				m.continents = append(m.continents, geoKey(code[len(continentPrefix):]))
			case len(code) == 2:
				m.countries = append(m.countries, geoKey(code))
			}
		}
		if d.weight != nil {
			rs.weighted = true
			m.weight = *d.weight
		}
		rs.members = append(rs.members, m)
	}
	var err error
	if rs.static, err = rs.unlocated(origin, rrtype, drafts); err != nil {
		return nil, fmt.Errorf("all members together (served to secondaries): %w", err)
	}
	return rs, nil
}

// appendGeoSlots adds the geo counters of the set's codes to slots, each once.
func (rs *routedSet) appendGeoSlots(slots []int) []int {
	add := func(slot int) {
		if slot != noGeoSlot && !slices.Contains(slots, slot) {
			slots = append(slots, slot)
		}
	}
	for _, m := range rs.members {
		for _, c := range m.countries {
			add(geoSlot(c, false))
		}
		for _, c := range m.continents {
			add(geoSlot(c, true))
		}
		if m.isDefault {
			add(geoDefaultSlot)
		}
	}
	return slots
}

// unlocated is the static view of a routed set. Address and text sets serve every member's records
// (a multi-value answer, as the rfc2136 backend degrades weighted sets); a CNAME set serves the member
// an unlocated client gets at the geo step, and the heaviest at the weighted step.
func (rs *routedSet) unlocated(origin string, rrtype uint16, drafts []*draft) (*rrset, error) {
	if rrtype != dns.TypeCNAME {
		var all []dns.RR
		seen := map[string]bool{}
		ttl := uint32(1<<31 - 1)
		for _, m := range rs.members {
			ttl = min(ttl, m.set.ttl)
		}
		for _, d := range drafts {
			values, rrs := d.sorted()
			for i, rr := range rrs {
				if !seen[values[i]] {
					seen[values[i]] = true
					c := dns.Copy(rr)
					c.Header().Ttl = ttl
					all = append(all, c)
				}
			}
		}
		return encodeSet(origin, all)
	}
	cands, _ := rs.geoCandidates(location{}, nil)
	best := cands[0]
	for _, c := range cands[1:] {
		if rs.members[c].weight > rs.members[best].weight {
			best = c
		}
	}
	return rs.members[best].set, nil
}
