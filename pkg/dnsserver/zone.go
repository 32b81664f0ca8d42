package dnsserver

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// Zone timers. Secondaries learn of changes by NOTIFY, so refresh only bounds how stale a secondary
// that missed one can get. Negative answers are cached briefly because names appear as soon as a
// Gateway gets an address.
const (
	soaRefresh = 300
	soaRetry   = 60
	soaExpire  = 604800
	soaMinimum = 60
	// defaultTTL is used for endpoints without a TTL, as Kuadrant's CoreDNS plugin does.
	defaultTTL = 60
	// maxChain bounds how many CNAMEs one answer follows, so a loop in the data ends.
	maxChain = 8
)

// rrset is one record set encoded for the wire once, when the zone is built. Every record starts with
// a two-byte compression pointer for its owner name, patched per answer to wherever that name sits in
// the message; everything after it is copied as is. Names inside the data are not compressed, so any
// of them can later be pointed at. The records are not kept in any other form: for a large set the
// parsed records took five times the wire's memory, and only zone transfers and glue need them, which
// decode the wire (records).
type rrset struct {
	ttl    uint32
	wire   []byte
	starts []uint16
	// target is the lower-cased wire name a CNAME points to; inZone says whether to follow it.
	target []byte
	inZone bool
}

// member is one record set of a routed set: one setIdentifier, with its routing properties.
type member struct {
	set        *rrset
	countries  []uint16
	continents []uint16
	isDefault  bool
	weight     uint64
}

// routedSet is the records sharing a name and type but told apart by setIdentifier: an answer holds
// one member, chosen by the client's location and by weight.
type routedSet struct {
	members  []member
	geo      bool
	weighted bool
	// static is what a client that cannot be located, ignoring weights, is served; zone transfers
	// carry it, since a secondary cannot route.
	static *rrset
}

// typeSet is what a name holds for one type: either plain records or a routed set.
type typeSet struct {
	rrtype uint16
	static *rrset
	routed *routedSet
	// refused marks a set the build could not serve (see encodeSet): its queries get SERVFAIL.
	refused bool
}

// glue is an address record set for a nameserver name inside the zone.
type glue struct {
	name []byte
	sets []*rrset
}

// node is one name of the zone. A node without sets is an empty non-terminal: it exists, so it
// blocks wildcard synthesis and answers NODATA.
type node struct {
	sets  []typeSet // sorted by type
	cname *typeSet
	// cut holds the NS records of a delegation point below the apex, with their glue.
	cut     *rrset
	cutGlue []glue
}

func (n *node) find(rrtype uint16) *typeSet {
	for i := range n.sets {
		if n.sets[i].rrtype == rrtype {
			return &n.sets[i]
		}
	}
	return nil
}

// snapshot is one immutable version of a zone. Queries read it without locks; a change builds a new
// one and swaps it in.
type snapshot struct {
	origin  string // lower-cased, fully qualified
	apex    []byte // origin in wire form
	serial  uint32
	nodes   map[string]*node // key: lower-cased wire name
	soa     *rrset
	ns      *rrset
	nsGlue  []glue
	hasCuts bool
	hasWild bool
	// soaRR is the SOA record, for transfers and NOTIFY.
	soaRR *dns.SOA
	// export holds an export's records (its snapshot has no nodes): what a transfer sends after
	// the SOA.
	export []dns.RR
	// digest identifies the content (everything but the serial), to tell a real change from a resync.
	digest [sha256.Size]byte
}

// lookupKind says how a name was found.
type lookupKind int

const (
	exact lookupKind = iota
	// wildcard: the name does not exist and the wildcard of its closest encloser answers (RFC 4592).
	wildcard
	nxDomain
	// delegation: the name is at or below a zone cut; the node is the cut.
	delegation
)

// find looks a lower-cased wire name up in the zone, which must hold it. For a delegation, cutOff is
// where the cut's name starts within name.
func (z *snapshot) find(name []byte) (n *node, kind lookupKind, cutOff int) {
	if !z.hasCuts {
		if n := z.nodes[string(name)]; n != nil {
			return n, exact, 0
		}
	}
	// Walk down from the apex. Every ancestor of an existing name exists, so the first missing one
	// ends the walk, and the last found is the closest encloser.
	apexOff := len(name) - len(z.apex)
	var labels [128]uint8
	k := 0
	for off := 0; off < apexOff; off += int(name[off]) + 1 {
		labels[k] = uint8(off)
		k++
	}
	encloser := apexOff
	for i := k - 1; i >= 0; i-- {
		off := int(labels[i])
		n := z.nodes[string(name[off:])]
		if n == nil {
			break
		}
		if n.cut != nil {
			return n, delegation, off
		}
		if off == 0 {
			return n, exact, 0
		}
		encloser = off
	}
	if k == 0 {
		return z.nodes[string(name)], exact, 0
	}
	if z.hasWild {
		var buf [256]byte
		buf[0], buf[1] = 1, '*'
		l := 2 + copy(buf[2:], name[encloser:])
		if n := z.nodes[string(buf[:l])]; n != nil {
			return n, wildcard, 0
		}
	}
	return nil, nxDomain, 0
}

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

// claims is which sources hold what, while a zone is built, so that a record of one source never
// takes away what another serves. Three kinds of record exclude the records of others: a delegation
// (NS below the apex) hides every name at and below it, a CNAME excludes any other data at its name,
// and data at a name excludes another's CNAME there or delegation at or above it. Of two sources
// whose records exclude each other, the one processed first (the earlier created) keeps its
// records; the other's are refused. Records of one source at one name and type merge, and several
// sources may share a name with other types, as the grants allow them to.
type claims struct {
	origin string
	// cut and alias are the source holding a delegation or a CNAME at a name.
	cut, alias map[string]int
	// at and below are the sources holding records at a name, and at or below it.
	at, below map[string][]int
}

func newClaims(origin string) *claims {
	return &claims{origin: origin, cut: map[string]int{}, alias: map[string]int{}, at: map[string][]int{}, below: map[string][]int{}}
}

// conflict says why source src may not hold a record of rrtype at name, given what earlier sources
// hold; empty when it may.
func (c *claims) conflict(src int, name string, rrtype uint16) string {
	const keeps = "; the record created first keeps a name"
	for n := name; ; {
		if h, ok := c.cut[n]; ok && h != src {
			return fmt.Sprintf("another record delegates %s%s", n, keeps)
		}
		if n == c.origin {
			break
		}
		next, _ := dns.NextLabel(n, 0)
		n = n[next:]
	}
	switch rrtype {
	case dns.TypeNS:
		if others(c.below[name], src) {
			return fmt.Sprintf("another record has records at or below %s%s", name, keeps)
		}
	case dns.TypeCNAME:
		if others(c.at[name], src) {
			return fmt.Sprintf("another record has records at %s%s", name, keeps)
		}
	default:
		if h, ok := c.alias[name]; ok && h != src {
			return fmt.Sprintf("another record has a CNAME at %s%s", name, keeps)
		}
	}
	return ""
}

// add records that source src holds a record of rrtype at name.
func (c *claims) add(src int, name string, rrtype uint16) {
	switch rrtype {
	case dns.TypeNS:
		c.cut[name] = src
	case dns.TypeCNAME:
		c.alias[name] = src
	}
	if !slices.Contains(c.at[name], src) {
		c.at[name] = append(c.at[name], src)
	}
	for n := name; ; {
		if slices.Contains(c.below[n], src) {
			// Added before, with every ancestor.
			break
		}
		c.below[n] = append(c.below[n], src)
		if n == c.origin {
			break
		}
		next, _ := dns.NextLabel(n, 0)
		n = n[next:]
	}
}

// others says whether a source other than src is among holders.
func others(holders []int, src int) bool {
	return slices.ContainsFunc(holders, func(h int) bool { return h != src })
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

// parseTargets turns endpoint targets into records; values are their normalised forms, for
// deduplication and change detection. The records are named "." (encodeSet writes the owner name
// apart), so encoding them needs no copy.
func parseTargets(name string, rrtype uint16, ttl uint32, targets []string) (values []string, rrs []dns.RR, problems []string, tooLarge bool) {
	hdr := header(".", rrtype, ttl)
	values, rrs = make([]string, 0, len(targets)), make([]dns.RR, 0, len(targets))
	var scratch [64]byte
	bp := packBuffers.Get().(*[]byte)
	defer packBuffers.Put(bp)
	buf := *bp
	add := func(value string, rr dns.RR) {
		if slices.Contains(values, value) {
			return
		}
		if rrtype == dns.TypeA || rrtype == dns.TypeAAAA || rrtype == dns.TypeCNAME || rrtype == dns.TypeNS {
			// An address, or one canonical name (at most 255 bytes), always fits and packs: no
			// copy to measure, which for the 1,000 targets of a large set was most of its garbage.
			values = append(values, value)
			rrs = append(rrs, rr)
			return
		}
		// Data over the protocol's limits (record data over what a message carries, a
		// character-string over 255 bytes) cannot be sent; say so here rather than fail when the
		// set is encoded.
		if size := dns.Len(rr); size > maxSetWire {
			tooLarge = true
			problems = append(problems, fmt.Sprintf("target %.40q... is %d bytes of record data, over the %d one DNS message can carry",
				value, size, maxSetWire))
			return
		}
		if _, err := dns.PackRR(rr, buf, 0, nil, false); err != nil {
			problems = append(problems, fmt.Sprintf("target %.40q... cannot be encoded: %v", value, err))
			return
		}
		values = append(values, value)
		rrs = append(rrs, rr)
	}
	for _, t := range targets {
		switch rrtype {
		case dns.TypeA, dns.TypeAAAA:
			ip, err := netip.ParseAddr(strings.TrimSpace(t))
			if err != nil || ip.Zone() != "" || (rrtype == dns.TypeA) != ip.Unmap().Is4() {
				problems = append(problems, fmt.Sprintf("target %q is not an %s address", t, dns.TypeToString[rrtype]))
				continue
			}
			ip = ip.Unmap()
			// The target is its own normal form when written as one, as it nearly always is:
			// a large set then costs no second string per address.
			value := t
			if text := ip.AppendTo(scratch[:0]); string(text) != t {
				value = string(text)
			}
			if rrtype == dns.TypeA {
				add(value, &dns.A{Hdr: hdr, A: ip.AsSlice()})
			} else {
				add(value, &dns.AAAA{Hdr: hdr, AAAA: ip.AsSlice()})
			}
		case dns.TypeCNAME, dns.TypeNS:
			target, err := canonicalName(t)
			if err != nil {
				problems = append(problems, fmt.Sprintf("target %q: %v", t, err))
				continue
			}
			if rrtype == dns.TypeCNAME {
				add(target, &dns.CNAME{Hdr: hdr, Target: target})
			} else {
				add(target, &dns.NS{Hdr: hdr, Ns: target})
			}
		case dns.TypeTXT:
			txt := txtStrings(t)
			add(fmt.Sprintf("%q", txt), &dns.TXT{Hdr: hdr, Txt: txt})
		default:
			rr, err := dns.NewRR(fmt.Sprintf("%s %d IN %s %s", name, ttl, dns.TypeToString[rrtype], t))
			if err != nil || rr == nil || rr.Header().Rrtype != rrtype {
				problems = append(problems, fmt.Sprintf("target %q is not valid %s data", t, dns.TypeToString[rrtype]))
				continue
			}
			rr.Header().Name = "."
			add(rr.String(), rr)
		}
	}
	return values, rrs, problems, tooLarge
}

// txtStrings reads a TXT target the way external-dns providers do: a quoted value is zone-file text
// (the quotes delimit one or more strings, as Route53 and RFC 2136 servers take it), anything else
// is the literal text, split into 255-byte strings. Kuadrant's ownership records are quoted, so
// clients see the value without quotes, as from Route53.
func txtStrings(target string) []string {
	if len(target) >= 2 && target[0] == '"' && target[len(target)-1] == '"' {
		if rr, err := dns.NewRR(". 0 IN TXT " + target); err == nil && rr != nil {
			if txt, ok := rr.(*dns.TXT); ok && len(txt.Txt) > 0 {
				return txt.Txt
			}
		}
	}
	// miekg/dns reads backslash escapes in TXT data; a literal backslash must be escaped.
	var out []string
	for len(target) > 255 {
		out = append(out, strings.ReplaceAll(target[:255], `\`, `\\`))
		target = target[255:]
	}
	return append(out, strings.ReplaceAll(target, `\`, `\\`))
}

// packBuffers hold a message's worth of bytes each, for encoding records while zones are built.
var packBuffers = sync.Pool{New: func() any { b := make([]byte, dns.MaxMsgSize); return &b }}

// maxSetWire is the largest record set we serve: it must fit in one message beside the header, the
// longest question, an OPT record with a client subnet and a TSIG record, so that every answer that
// holds it can be sent over TCP. It also keeps every offset inside a set within 16 bits.
const maxSetWire = dns.MaxMsgSize - headerLen - (255 + 4) - optReserve - maxTSIGReserve

// encodeSet packs records for the wire with a placeholder owner pointer each. It fails for records
// that do not pack (data over the protocol's limits) and for a set too large for one message.
func encodeSet(origin string, rrs []dns.RR) (*rrset, error) {
	s := &rrset{}
	if len(rrs) > 0 {
		s.ttl = rrs[0].Header().Ttl
	}
	// The set is packed in a scratch buffer and copied out once, at its size: a zone keeps it for
	// as long as it is served. Each record is packed one byte in, so that its root owner name (one
	// zero byte) and the byte before it become the owner pointer. The buffer holds a set at the
	// limit plus the largest record, so packing fails only for data over the protocol's limits.
	bp := setBuffers.Get().(*[]byte)
	defer setBuffers.Put(bp)
	buf := *bp
	s.starts = make([]uint16, 0, len(rrs))
	pos := 0
	for _, rr := range rrs {
		c := rr
		if rr.Header().Name != "." {
			c = dns.Copy(rr)
			c.Header().Name = "."
		}
		end, err := dns.PackRR(c, buf, pos+1, nil, false)
		if err != nil {
			return nil, fmt.Errorf("record %s cannot be encoded: %w", rr, err)
		}
		if end > maxSetWire {
			return nil, fmt.Errorf("%d records of %d bytes or more exceed the %d bytes one DNS message can carry",
				len(rrs), end, maxSetWire)
		}
		s.starts = append(s.starts, uint16(pos))
		buf[pos], buf[pos+1] = 0xC0, headerLen
		pos = end
	}
	s.wire = bytes.Clone(buf[:pos])
	if c, ok := firstCNAME(rrs); ok {
		s.target, _ = wireName(c.Target)
		s.inZone = dns.IsSubDomain(origin, c.Target)
	}
	return s, nil
}

// setBuffers hold a set at maxSetWire and one more record of the largest size each, for encodeSet.
var setBuffers = sync.Pool{New: func() any { b := make([]byte, 2*dns.MaxMsgSize); return &b }}

// records decodes the set's records, with owner (a wire name) as their name.
func (s *rrset) records(name []byte) ([]dns.RR, error) {
	rrs := make([]dns.RR, 0, len(s.starts))
	buf := make([]byte, 0, len(name)+dns.MaxMsgSize)
	for i, start := range s.starts {
		end := len(s.wire)
		if i+1 < len(s.starts) {
			end = int(s.starts[i+1])
		}
		buf = append(append(buf[:0], name...), s.wire[start+2:end]...)
		rr, _, err := dns.UnpackRR(buf, 0)
		if err != nil {
			return nil, fmt.Errorf("record %d of a set: %w", i, err)
		}
		rrs = append(rrs, rr)
	}
	return rrs, nil
}

func firstCNAME(rrs []dns.RR) (*dns.CNAME, bool) {
	if len(rrs) == 0 {
		return nil, false
	}
	c, ok := rrs[0].(*dns.CNAME)
	return c, ok
}

// glueFor finds static address records inside the zone for the targets of an NS set: of as many
// nameservers as one message can carry, as the rest could never be sent.
func (z *snapshot) glueFor(ns *rrset) []glue {
	var out []glue
	size := 0
	rrs, _ := ns.records(z.apex) // encoded by this build: it decodes
	for _, rr := range rrs {
		target := rr.(*dns.NS).Ns
		if !dns.IsSubDomain(z.origin, target) {
			continue
		}
		w, _ := wireName(target)
		n := z.nodes[string(w)]
		if n == nil {
			continue
		}
		g := glue{name: w}
		for _, t := range []uint16{dns.TypeA, dns.TypeAAAA} {
			if ts := n.find(t); ts != nil && !ts.refused {
				if ts.static != nil {
					g.sets = append(g.sets, ts.static)
				} else {
					g.sets = append(g.sets, ts.routed.static)
				}
			}
		}
		if gs := g.size(); len(g.sets) > 0 && size+gs <= maxSetWire {
			size += gs
			out = append(out, g)
		}
	}
	return out
}

// size is how many bytes the glue takes in a message, its name written in full in every record.
func (g *glue) size() int {
	n := 0
	for _, s := range g.sets {
		n += s.namedSize(g.name)
	}
	return n
}

// namedSize is how many bytes the set takes with its owner name written in full (putSetNamed).
func (s *rrset) namedSize(name []byte) int {
	return len(s.wire) + len(s.starts)*(len(name)-2)
}

// transferRecords lists the zone for AXFR: SOA, apex NS, then every other record set by name,
// decoded from the wire of each set. An export is its SOA and records.
func (z *snapshot) transferRecords() ([]dns.RR, error) {
	if z.export != nil {
		return append([]dns.RR{z.soaRR}, z.export...), nil
	}
	names := make([]string, 0, len(z.nodes))
	for k := range z.nodes {
		names = append(names, k)
	}
	slices.Sort(names)
	out := []dns.RR{z.soaRR}
	add := func(name []byte, s *rrset) error {
		rrs, err := s.records(name)
		out = append(out, rrs...)
		return err
	}
	if err := add(z.apex, z.ns); err != nil {
		return nil, err
	}
	for _, k := range names {
		n := z.nodes[k]
		for _, ts := range n.sets {
			if ts.refused || ts.rrtype == dns.TypeSOA || (ts.rrtype == dns.TypeNS && k == string(z.apex)) {
				continue
			}
			set := ts.static
			if set == nil {
				set = ts.routed.static
			}
			if err := add([]byte(k), set); err != nil {
				return nil, err
			}
		}
		if n.cut != nil {
			if err := add([]byte(k), n.cut); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func header(name string, rrtype uint16, ttl uint32) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: rrtype, Class: dns.ClassINET, Ttl: ttl}
}

// canonicalName lower-cases a name and makes it fully qualified.
func canonicalName(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return "", fmt.Errorf("empty name")
	}
	s = dns.Fqdn(s)
	if _, ok := dns.IsDomainName(s); !ok {
		return "", fmt.Errorf("not a domain name")
	}
	return s, nil
}

// wireName encodes a name in uncompressed wire form, lower-cased: the form names are looked up in.
func wireName(s string) ([]byte, error) {
	s, err := canonicalName(s)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 256)
	n, err := dns.PackDomainName(s, buf, 0, nil, false)
	if err != nil {
		return nil, err
	}
	lowerWire(buf[:n])
	return buf[:n:n], nil
}

// lowerWire lower-cases a wire-form name in place. Label length bytes are below 64, so only name
// bytes fall in 'A'..'Z'.
func lowerWire(b []byte) {
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
}

// geoKey packs a two-letter code into a number, so matching allocates nothing.
func geoKey(code string) uint16 {
	return binary.BigEndian.Uint16([]byte(code))
}
