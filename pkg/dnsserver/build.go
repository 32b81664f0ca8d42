package dnsserver

import (
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// ZoneData is the full content of one zone.
type ZoneData struct {
	// Endpoints are served as if they came from one unnamed source.
	Endpoints []*v1alpha1.Endpoint
	// Sources are the authoritative records of the zone, each with its endpoints; what cannot be
	// served is reported per source (ZoneStatus.Refused), so it can be told to the record at fault.
	Sources []Source
	// Nameservers are the NS targets at the apex (the provider Secret's NAMESERVERS); the first is the
	// SOA's primary server. Empty means "ns1.<zone>".
	Nameservers []string
	// Hostmaster is the SOA mailbox as a domain name; empty means "hostmaster.<zone>".
	Hostmaster string
	// Secondaries are host:port addresses sent a NOTIFY whenever the zone changes.
	Secondaries []string
	// Export, when set, is what this cluster alone publishes in the zone, offered to the servers of
	// other clusters as ExportName(zone) (Options.Exports says to whom). Nil stops offering it.
	Export *Export
	// Changed is when the content last changed at its source. The SOA serial is its Unix time (or the
	// previous serial plus one when that is not larger), so replicas fed the same data and time serve
	// the same serial. Zero means the time of the call.
	Changed time.Time
}

// Source is one contributor of endpoints to a zone, such as an authoritative DNSRecord.
type Source struct {
	// Name identifies the source in ZoneStatus.Refused, e.g. "namespace/name".
	Name      string
	Endpoints []*v1alpha1.Endpoint
	// Created is when the source came to be (a DNSRecord's creationTimestamp). Where two sources'
	// records cannot both be served, the earlier source keeps the name (ties by Name), so a newer
	// one can never take away what an older one serves (see claims).
	Created time.Time
}

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

// describe names an endpoint in a refusal, briefly: a refusal is shown in a status condition, and
// the endpoints refused for size hold thousands of targets or kilobytes of text.
func describe(ep *v1alpha1.Endpoint) string {
	s := fmt.Sprintf("%.80s %s", ep.DNSName, ep.RecordType)
	if ep.SetIdentifier != "" {
		s += fmt.Sprintf(" (set %.40q)", ep.SetIdentifier)
	}
	if targets := strings.Join(ep.Targets, ","); len(targets) <= 100 {
		return s + " " + targets
	}
	return s + fmt.Sprintf(" (%d targets)", len(ep.Targets))
}

// weightOver returns an endpoint's weight when it is over v1alpha1.MaxWeight. A weight too large
// for 64 bits is over too.
func weightOver(ep *v1alpha1.Endpoint) (uint64, bool) {
	for _, p := range ep.ProviderSpecific {
		if p.Name != v1alpha1.ProviderSpecificWeight {
			continue
		}
		w, err := strconv.ParseUint(strings.TrimSpace(p.Value), 10, 64)
		if errors.Is(err, strconv.ErrRange) {
			return w, true
		}
		if err == nil && w > v1alpha1.MaxWeight {
			return w, true
		}
	}
	return 0, false
}

// refusals collects what a build left out, by source.
type refusals struct {
	all      []string
	bySource map[string][]string
}

func (r *refusals) add(sources []string, msg string) {
	r.all = append(r.all, msg)
	for _, src := range sources {
		if r.bySource == nil {
			r.bySource = map[string][]string{}
		}
		r.bySource[src] = append(r.bySource[src], msg)
	}
}

// buildZone turns endpoints into a snapshot. Endpoints and record sets that cannot be served are
// left out and described in the refusals; the rest of the zone is served. nsAddrs are the addresses
// of nameserver names, by canonical name (Options.NameserverAddresses); maxTTL caps every TTL
// (Options.MaxTTL).
func buildZone(origin string, data ZoneData, serial uint32, nsAddrs map[string][]netip.Addr, maxTTL int64) (snap *snapshot, refused refusals, err error) {
	apex, err := wireName(origin)
	if err != nil {
		return nil, refused, fmt.Errorf("zone %q: %w", origin, err)
	}
	nameservers := slices.Clone(data.Nameservers)
	if len(nameservers) == 0 {
		nameservers = []string{"ns1." + origin}
	}
	for i, ns := range nameservers {
		if nameservers[i], err = canonicalName(ns); err != nil {
			return nil, refused, fmt.Errorf("nameserver %q: %w", ns, err)
		}
	}
	hostmaster := "hostmaster." + origin
	if data.Hostmaster != "" {
		if hostmaster, err = canonicalName(data.Hostmaster); err != nil {
			return nil, refused, fmt.Errorf("hostmaster %q: %w", data.Hostmaster, err)
		}
	}

	// The zone's nameserver names inside it belong to the server: resolvers sent to the zone look
	// their addresses up there, so a record holding one, or delegating a name above one, would
	// take the whole zone. Their addresses come from the server's configuration.
	reserved := map[string]bool{}
	groups := map[string]*group{}
	for _, ns := range nameservers {
		if !dns.IsSubDomain(origin, ns) || reserved[ns] {
			continue
		}
		reserved[ns] = true
		for _, addr := range nsAddrs[ns] {
			rrtype, rr := dns.TypeAAAA, dns.RR(&dns.AAAA{Hdr: header(ns, dns.TypeAAAA, soaMinimum), AAAA: addr.AsSlice()})
			if addr.Is4() {
				rrtype, rr = dns.TypeA, &dns.A{Hdr: header(ns, dns.TypeA, soaMinimum), A: addr.AsSlice()}
			}
			key := ns + "/" + strconv.Itoa(int(rrtype))
			g := groups[key]
			if g == nil {
				g = &group{name: ns, rrtype: rrtype, members: map[string]*draft{"": {ttl: soaMinimum, records: map[string]dns.RR{}}}}
				groups[key] = g
			}
			g.members[""].records[addr.String()] = rr
		}
	}

	// Sources in the order they came to be: where two cannot both be served, the earlier keeps
	// the name. Endpoints without a source come first.
	sources := slices.Clone(data.Sources)
	slices.SortStableFunc(sources, func(a, b Source) int {
		return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.Name, b.Name))
	})
	if len(data.Endpoints) > 0 {
		sources = append([]Source{{Endpoints: data.Endpoints}}, sources...)
	}
	held := newClaims(origin)
	for i, src := range sources {
		srcs := []string{src.Name}
		if src.Name == "" {
			srcs = nil
		}
		skip := func(ep *v1alpha1.Endpoint, format string, args ...any) {
			refused.add(srcs, fmt.Sprintf("%s: %s", describe(ep), fmt.Sprintf(format, args...)))
		}
		for _, ep := range src.Endpoints {
			if ep == nil {
				continue
			}
			name, err := canonicalName(ep.DNSName)
			if err != nil {
				skip(ep, "invalid name: %v", err)
				continue
			}
			if !dns.IsSubDomain(origin, name) {
				skip(ep, "outside zone %s", origin)
				continue
			}
			rrtype, ok := dns.StringToType[strings.ToUpper(ep.RecordType)]
			if !ok || rrtype == dns.TypeOPT || rrtype == dns.TypeANY || rrtype == dns.TypeAXFR ||
				rrtype == dns.TypeIXFR || rrtype == dns.TypeTSIG {
				skip(ep, "record type %q is not served", ep.RecordType)
				continue
			}
			if name == origin && (rrtype == dns.TypeSOA || rrtype == dns.TypeNS) {
				// The zone's own SOA and NS say who serves it; a tenant's record must not re-delegate it.
				skip(ep, "the apex %s comes from the server's configuration, not from records", dns.TypeToString[rrtype])
				continue
			}
			if rrtype == dns.TypeSOA {
				skip(ep, "an SOA record can only be at the zone apex")
				continue
			}
			if rrtype == dns.TypeCNAME && name == origin {
				skip(ep, "a CNAME cannot be at the zone apex")
				continue
			}
			if why := reservedProblem(name, rrtype, origin, reserved); why != "" {
				skip(ep, "%s", why)
				continue
			}
			if why := held.conflict(i, name, rrtype); why != "" {
				skip(ep, "%s", why)
				continue
			}
			if ep.RecordTTL < 0 {
				skip(ep, "negative TTL")
				continue
			}
			// The caps every DNSRecord is validated against, which the record controller does not
			// apply to authoritative records.
			if int64(ep.RecordTTL) > maxTTL {
				skip(ep, "TTL %d, more than the %d allowed (--max-ttl)", ep.RecordTTL, maxTTL)
				continue
			}
			if w, over := weightOver(ep); over {
				skip(ep, "weight %d, more than the %d every provider accepts", w, v1alpha1.MaxWeight)
				continue
			}
			ttl := uint32(ep.RecordTTL)
			if ttl == 0 {
				ttl = defaultTTL
			}
			var values []string
			var rrs []dns.RR
			var problems []string
			var tooLarge bool
			if len(ep.Targets) > v1alpha1.MaxTargets {
				// The bound every DNSRecord is validated against; authoritative records, whose
				// endpoints the record controller does not validate, are held to it here, before
				// their targets cost anything. Like a set too large to send, the set is not served.
				tooLarge = true
				skip(ep, "%d targets, more than the %d one endpoint may have", len(ep.Targets), v1alpha1.MaxTargets)
			} else {
				values, rrs, problems, tooLarge = parseTargets(name, rrtype, ttl, ep.Targets)
			}
			for _, p := range problems {
				skip(ep, "%s", p)
			}
			if len(rrs) == 0 && !tooLarge {
				if len(problems) == 0 {
					skip(ep, "no targets")
				}
				continue
			}
			held.add(i, name, rrtype)
			key := name + "/" + strconv.Itoa(int(rrtype))
			g := groups[key]
			if g == nil {
				g = &group{name: name, rrtype: rrtype, members: map[string]*draft{}}
				groups[key] = g
			}
			if src.Name != "" && !slices.Contains(g.sources, src.Name) {
				g.sources = append(g.sources, src.Name)
			}
			// A record too large to send makes its whole set unservable: the rest alone would be a
			// wrong answer.
			if tooLarge {
				g.tooLarge = true
				g.told = append(g.told, src.Name)
			}
			d := g.members[ep.SetIdentifier]
			if d == nil {
				d = &draft{setID: ep.SetIdentifier, ttl: ttl, records: make(map[string]dns.RR, len(values))}
				g.members[ep.SetIdentifier] = d
			}
			// The same record set from several sources serves the union of their targets.
			d.ttl = min(d.ttl, ttl)
			for i, v := range values {
				if d.records[v] == nil {
					d.records[v] = rrs[i]
				}
			}
			for _, p := range ep.ProviderSpecific {
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
	}

	snap = &snapshot{origin: origin, apex: apex, serial: serial, nodes: map[string]*node{}}
	nodeAt := func(name string) *node {
		w, _ := wireName(name)
		n := snap.nodes[string(w)]
		if n == nil {
			n = &node{}
			snap.nodes[string(w)] = n
			// Every name between a record and the apex exists, possibly empty (RFC 4592 2.2.2).
			for parent := name; parent != origin; {
				next, _ := dns.NextLabel(parent, 0)
				parent = parent[next:]
				pw, _ := wireName(parent)
				if snap.nodes[string(pw)] != nil {
					break
				}
				snap.nodes[string(pw)] = &node{}
			}
		}
		return n
	}
	nodeAt(origin)
	// A nameserver name exists even without configured addresses (NODATA), so that no wildcard
	// answers for it.
	for ns := range reserved {
		nodeAt(ns)
	}

	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	// Names holding a CNAME and other data: the other data wins, as a resolver would refuse the mix.
	other := map[string]bool{}
	for _, k := range keys {
		if g := groups[k]; g.rrtype != dns.TypeCNAME {
			other[g.name] = true
		}
	}

	apexNS := slices.Clone(nameservers)
	digest := sha256.New()
	fmt.Fprintf(digest, "%s %s\n", hostmaster, nameservers[0])
	for _, k := range keys {
		g := groups[k]
		if g.rrtype == dns.TypeCNAME && other[g.name] {
			refused.add(g.sources, fmt.Sprintf("%s CNAME: other records share the name", g.name))
			continue
		}
		if strings.HasPrefix(g.name, "*.") {
			snap.hasWild = true
		}
		ts := typeSet{rrtype: g.rrtype}
		drafts := sortedDrafts(g.members)
		var encErr error
		switch {
		case g.tooLarge:
			encErr = errors.New("a record of the set is over the size one DNS message can carry")
		case len(drafts) == 1 && drafts[0].geo == nil && drafts[0].weight == nil:
			values, rrs := drafts[0].sorted()
			if g.rrtype == dns.TypeCNAME && len(rrs) > 1 {
				refused.add(g.sources, fmt.Sprintf("%s CNAME: several targets, serving %s", g.name, values[0]))
				rrs = rrs[:1]
			}
			ts.static, encErr = encodeSet(origin, rrs)
		default:
			ts.routed, encErr = newRoutedSet(origin, g.rrtype, drafts)
		}
		for _, d := range drafts {
			values, _ := d.sorted()
			fmt.Fprintf(digest, "%s %d %q %d %q %q %v\n", g.name, g.rrtype, d.setID, d.ttl, values, d.geo, weightText(d.weight))
		}
		if encErr != nil {
			// The set cannot be sent in one message. Serving part of it would be a wrong answer; the
			// name answers SERVFAIL for this type instead, so resolvers neither cache a denial nor a
			// partial set, and the rest of the zone is served.
			var untold []string
			for _, src := range g.sources {
				if !slices.Contains(g.told, src) {
					untold = append(untold, src)
				}
			}
			if !g.tooLarge || len(untold) > 0 {
				refused.add(untold, fmt.Sprintf("%s %s: %v; the record set is not served", g.name, dns.TypeToString[g.rrtype], encErr))
			}
			if g.rrtype != dns.TypeNS {
				n := nodeAt(g.name)
				n.sets = append(n.sets, typeSet{rrtype: g.rrtype, refused: true})
			}
			continue
		}
		n := nodeAt(g.name)
		switch {
		case g.rrtype == dns.TypeNS:
			// NS below the apex delegates: the records are a referral, never an answer.
			snap.hasCuts = true
			n.cut = ts.static
			if ts.routed != nil {
				n.cut = ts.routed.static
			}
		default:
			n.sets = append(n.sets, ts)
		}
	}

	slices.Sort(apexNS)
	apexNS = slices.Compact(apexNS)
	fmt.Fprintf(digest, "NS %q\n", apexNS)
	var nsRRs []dns.RR
	for _, ns := range apexNS {
		nsRRs = append(nsRRs, &dns.NS{Hdr: header(origin, dns.TypeNS, soaMinimum), Ns: ns})
	}
	primary := nameservers[0]
	soa := &dns.SOA{Hdr: header(origin, dns.TypeSOA, soaMinimum), Ns: primary, Mbox: hostmaster,
		Serial: serial, Refresh: soaRefresh, Retry: soaRetry, Expire: soaExpire, Minttl: soaMinimum}
	if snap.soa, err = encodeSet(origin, []dns.RR{soa}); err != nil {
		return nil, refused, fmt.Errorf("zone %s: SOA: %w", origin, err)
	}
	if snap.ns, err = encodeSet(origin, nsRRs); err != nil {
		return nil, refused, fmt.Errorf("zone %s: nameservers: %w", origin, err)
	}
	apexNode := snap.nodes[string(apex)]
	apexNode.sets = append(apexNode.sets, typeSet{rrtype: dns.TypeNS, static: snap.ns}, typeSet{rrtype: dns.TypeSOA, static: snap.soa})

	for _, n := range snap.nodes {
		slices.SortFunc(n.sets, func(a, b typeSet) int { return cmp.Compare(a.rrtype, b.rrtype) })
		for i := range n.sets {
			if n.sets[i].rrtype == dns.TypeCNAME {
				n.cname = &n.sets[i]
			}
		}
	}
	snap.nsGlue = snap.glueFor(snap.ns)
	for _, n := range snap.nodes {
		if n.cut != nil {
			n.cutGlue = snap.glueFor(n.cut)
		}
	}
	snap.soaRR = soa
	copy(snap.digest[:], digest.Sum(nil))
	return snap, refused, nil
}

// reservedProblem says why a record cannot be at name: the name is one of the zone's own
// nameservers, or a delegation there would take one out of the zone. Empty when it can.
func reservedProblem(name string, rrtype uint16, origin string, reserved map[string]bool) string {
	if reserved[name] && (name != origin || rrtype == dns.TypeA || rrtype == dns.TypeAAAA) {
		return fmt.Sprintf("%s is a nameserver of zone %s: its addresses come from the server's configuration (--dns-nameserver-addresses), not from records", name, origin)
	}
	if rrtype == dns.TypeNS && name != origin {
		for ns := range reserved {
			if dns.IsSubDomain(name, ns) {
				return fmt.Sprintf("a delegation at %s would take the zone's nameserver %s out of zone %s", name, ns, origin)
			}
		}
	}
	return ""
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
	cands := rs.geoCandidates(location{}, nil)
	best := cands[0]
	for _, c := range cands[1:] {
		if rs.members[c].weight > rs.members[best].weight {
			best = c
		}
	}
	return rs.members[best].set, nil
}
