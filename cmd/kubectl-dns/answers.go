package main

import (
	"slices"
	"strconv"
	"strings"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/health"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// maxChain bounds how many names a client's answer is followed through: a loadbalanced host takes
// four (host, klb, geo, leaf); more means a CNAME loop or a chain no resolver follows for long.
const maxChain = 16

// answer is one row of the answers view: what the clients of one geo get through one leaf of the
// tree, as the embedded DNS server chooses (a client gets its country's geo set, else its
// continent's, else the default set; within a weighted set, each member in proportion to its
// weight), which is also how Route 53 and Kuadrant's CoreDNS plugin choose.
type answer struct {
	// Geo is the geo set's code ("IE", "GEO-EU", "*" for the default set), or "" when the host has
	// no geo step: every client gets this row.
	Geo string
	// Weighted says whether a weighted step led here; Weight is the member's weight.
	Weighted bool
	Weight   uint64
	// Share is the fraction of the geo's clients that get this row, from 0 to 1.
	Share float64
	// Leaf is the last name of the zone on the way: the name whose records answer, or the name whose
	// CNAME leaves the zone.
	Leaf string
	// Addresses are the A and AAAA targets at Leaf, sorted; CNAME is the target outside the zone
	// (or the dangling name) a chain ends at instead.
	Addresses []string
	CNAME     string
	// Owners are the owners claiming the records that answer (the leaf's addresses, or the last
	// CNAME on the way), sorted.
	Owners []string
	// Keys are the records that answer (the leaf's address records, or the last CNAME on the way).
	Keys []v1alpha1.EndpointKey
	// Notes say what the zone shows against the row: an owner stating that its leaves fail their
	// health checks, a claim whose record is not published, a chain that ends nowhere.
	Notes []string
}

// answerView is every row for one host, and how the host was matched.
type answerView struct {
	Host string
	// Wildcard is the wildcard name that answers for Host when Host itself holds nothing.
	Wildcard string
	Rows     []answer
}

// answers walks the zone as read from host down its tree, as a resolver's query would, and returns
// one row per geo set and leaf. No row means nothing is published at host (nor at a wildcard
// covering it).
func answers(z *registry.Zone, zoneName, host string) answerView {
	host = v1alpha1.NormalizeName(host)
	v := answerView{Host: host}
	start := host
	if len(published(z, host)) == 0 && !strings.HasPrefix(host, v1alpha1.WildcardPrefix) {
		if _, parent, ok := strings.Cut(host, "."); ok && inZone(parent, zoneName) {
			if wc := v1alpha1.WildcardPrefix + parent; len(published(z, wc)) > 0 {
				v.Wildcard, start = wc, wc
			}
		}
	}
	if len(published(z, start)) == 0 {
		return v
	}
	w := walker{z: z, zoneName: zoneName, host: host}
	w.walk(start, answer{Share: 1}, nil, 0)
	v.Rows = w.rows
	return v
}

type walker struct {
	z        *registry.Zone
	zoneName string
	host     string
	rows     []answer
}

// walk follows name for the clients of row (its geo, weight and share so far); via is the last
// CNAME record on the way, whose owners own the row when the chain leaves the zone.
func (w *walker) walk(name string, row answer, via *registry.Record, depth int) {
	recs := published(w.z, name)
	var addrs, cnames []*registry.Record
	for _, r := range recs {
		switch r.Key.RecordType {
		case v1alpha1.RecordTypeA, v1alpha1.RecordTypeAAAA:
			addrs = append(addrs, r)
		case v1alpha1.RecordTypeCNAME:
			cnames = append(cnames, r)
		}
	}
	switch {
	case name == "":
		w.end(name, row, via, "a CNAME with no target: these clients get no address")
	case depth >= maxChain:
		w.end(name, row, via, "the CNAME chain is longer than "+strconv.Itoa(maxChain)+" names (a loop?): resolvers give up")
	case len(addrs) > 0:
		w.leaf(name, row, addrs)
	case len(cnames) == 0 && inZone(name, w.zoneName):
		w.end(name, row, via, "nothing is published at "+name+": these clients get no address")
	case len(cnames) == 0:
		row.Leaf, row.CNAME = lastName(via, name), name
		w.add(row, via)
	case slices.ContainsFunc(cnames, isGeo):
		w.geo(cnames, row, depth)
	case slices.ContainsFunc(cnames, isWeighted):
		w.weighted(cnames, row, depth)
	default:
		// A name aliases one name: the server serves the first target of the first set, sorted.
		w.walk(firstTarget(cnames[0]), row, cnames[0], depth+1)
	}
}

// geo splits the clients by the geo codes of a geo set: for each code, the first member (by set
// identifier) that lists it, as the server picks among several. Clients no code matches get the
// default set ("*"); without one, the embedded server answers them with the first member.
func (w *walker) geo(members []*registry.Record, row answer, depth int) {
	var codes []string
	for _, m := range members {
		for _, c := range geoCodes(m) {
			if !slices.Contains(codes, c) {
				codes = append(codes, c)
			}
		}
	}
	slices.SortFunc(codes, func(a, b string) int {
		// The default set last: it answers whoever the others do not.
		if (a == v1alpha1.WildcardGeo) != (b == v1alpha1.WildcardGeo) {
			if a == v1alpha1.WildcardGeo {
				return 1
			}
			return -1
		}
		return strings.Compare(a, b)
	})
	for _, c := range codes {
		i := slices.IndexFunc(members, func(m *registry.Record) bool { return slices.Contains(geoCodes(m), c) })
		r := row
		r.Geo = c
		w.walk(firstTarget(members[i]), r, members[i], depth+1)
	}
	if !slices.Contains(codes, v1alpha1.WildcardGeo) {
		r := row
		r.Geo = v1alpha1.WildcardGeo
		r.Notes = append(slices.Clone(r.Notes), "no default geo set: the embedded server answers other clients with the first set ("+members[0].Key.SetIdentifier+"), Route 53 with no address")
		w.walk(firstTarget(members[0]), r, members[0], depth+1)
	}
}

// weighted splits the clients of row among the members of a weighted set in proportion to their
// weights; when every weight is 0 the server picks evenly.
func (w *walker) weighted(members []*registry.Record, row answer, depth int) {
	var total uint64
	for _, m := range members {
		total += weightOf(m)
	}
	for _, m := range members {
		r := row
		r.Weighted, r.Weight = true, weightOf(m)
		if total == 0 {
			r.Share = row.Share / float64(len(members))
		} else {
			r.Share = row.Share * float64(r.Weight) / float64(total)
		}
		w.walk(firstTarget(m), r, m, depth+1)
	}
}

// leaf ends row at the address records of name.
func (w *walker) leaf(name string, row answer, addrs []*registry.Record) {
	row.Leaf = name
	for _, r := range addrs {
		for _, t := range r.Endpoint.Targets {
			if !slices.Contains(row.Addresses, t) {
				row.Addresses = append(row.Addresses, t)
			}
		}
	}
	slices.Sort(row.Addresses)
	// The owners of the leaf are those of its address records, and of the claims at the name that
	// are not published (a type that lost the name's conflict).
	var owned []*registry.Record
	for _, r := range w.z.AtName(name) {
		if r.Key.RecordType == v1alpha1.RecordTypeA || r.Key.RecordType == v1alpha1.RecordTypeAAAA || r.Endpoint == nil {
			owned = append(owned, r)
		}
	}
	w.add(row, owned...)
}

// end ends row at name with a note and no address.
func (w *walker) end(name string, row answer, via *registry.Record, note string) {
	row.Leaf = lastName(via, name)
	row.Notes = append(slices.Clone(row.Notes), note)
	w.add(row, via)
}

// add records row with the owners of recs and what the zone says against them.
func (w *walker) add(row answer, recs ...*registry.Record) {
	for _, r := range recs {
		if r == nil {
			continue
		}
		row.Keys = append(row.Keys, r.Key)
		for _, o := range r.Owners() {
			if !slices.Contains(row.Owners, o) {
				row.Owners = append(row.Owners, o)
			}
		}
		if r.Endpoint == nil {
			row.Notes = append(row.Notes, keyString(r.Key)+" is claimed by "+strings.Join(r.Owners(), ",")+" but not published (it lost the name's record-type conflict)")
		}
	}
	slices.Sort(row.Owners)
	for _, o := range row.Owners {
		if s, ok := health.Parse(healthAt(w.z, o, w.host)); ok && !s.Healthy {
			row.Notes = append(row.Notes, "UNHEALTHY: "+o+" states that none of its leaves passes its health checks (it withdraws them while another owner's pass)")
		}
	}
	w.rows = append(w.rows, row)
}

// published are the records at name that the zone publishes.
func published(z *registry.Zone, name string) []*registry.Record {
	var out []*registry.Record
	for _, r := range z.AtName(name) {
		if r.Endpoint != nil {
			out = append(out, r)
		}
	}
	return out
}

func lastName(via *registry.Record, name string) string {
	if via != nil {
		return via.Key.DNSName
	}
	return name
}

func firstTarget(r *registry.Record) string {
	targets := slices.Clone([]string(r.Endpoint.Targets))
	if len(targets) == 0 {
		return ""
	}
	slices.Sort(targets)
	return v1alpha1.NormalizeName(targets[0])
}

func geoCodes(r *registry.Record) []string {
	v, ok := r.Endpoint.GetProviderSpecific(v1alpha1.ProviderSpecificGeoCode)
	if !ok {
		return nil
	}
	var codes []string
	for c := range strings.SplitSeq(v, ",") {
		if c = strings.TrimSpace(c); c != "" {
			codes = append(codes, c)
		}
	}
	return codes
}

func isGeo(r *registry.Record) bool { return len(geoCodes(r)) > 0 }

func isWeighted(r *registry.Record) bool {
	_, ok := r.Endpoint.GetProviderSpecific(v1alpha1.ProviderSpecificWeight)
	return ok
}

// weightOf reads a weight as the server does: one it cannot parse is 0.
func weightOf(r *registry.Record) uint64 {
	v, _ := r.Endpoint.GetProviderSpecific(v1alpha1.ProviderSpecificWeight)
	w, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
	return w
}
