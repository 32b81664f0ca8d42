package dnsserver

import (
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnssec"
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
	// Signing, when set and valid, signs the zone's answers with its keys (DNSSEC); nil serves the
	// zone unsigned.
	Signing *dnssec.KeySet
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
func buildZone(origin string, data ZoneData, serial uint32, nsAddrs map[string][]netip.Addr, maxTTL int64) (*snapshot, refusals, error) {
	b, err := newBuilder(origin, data, maxTTL)
	if err != nil {
		return nil, refusals{}, err
	}
	b.reserveNameservers(nsAddrs)
	b.addSources(data)
	b.placeGroups(serial)
	soa, err := b.addApex(serial)
	if err != nil {
		return nil, b.refused, err
	}
	if data.Signing != nil {
		if err := b.addKeys(data.Signing, soa); err != nil {
			return nil, b.refused, err
		}
	}
	b.link(soa)
	return b.snap, b.refused, nil
}

// builder is one build of a zone, in the order buildZone runs its steps: the endpoints of every
// source are checked and collected into groups (one per name and type), then each group is encoded
// and placed at its node, then the apex and the links between nodes are made.
type builder struct {
	origin      string
	apex        []byte
	nameservers []string // canonical; the first is the SOA's primary
	hostmaster  string
	maxTTL      int64
	// reserved are the zone's nameserver names inside it (reserveNameservers).
	reserved map[string]bool
	// groups are the record sets being collected, by name/type.
	groups  map[string]*group
	held    *claims
	refused refusals
	snap    *snapshot
	// digest identifies the content, everything but the serial (snapshot.digest).
	digest hash.Hash
	// signed: the zone has keys, and the DNSSEC records are the server's to make.
	signed bool
}

// newBuilder reads the zone's own names: its apex, nameservers and SOA mailbox. An error here is
// the server's configuration, not a record: the zone cannot be built at all.
func newBuilder(origin string, data ZoneData, maxTTL int64) (*builder, error) {
	apex, err := wireName(origin)
	if err != nil {
		return nil, fmt.Errorf("zone %q: %w", origin, err)
	}
	nameservers := slices.Clone(data.Nameservers)
	if len(nameservers) == 0 {
		nameservers = []string{"ns1." + origin}
	}
	for i, ns := range nameservers {
		if nameservers[i], err = canonicalName(ns); err != nil {
			return nil, fmt.Errorf("nameserver %q: %w", ns, err)
		}
	}
	hostmaster := "hostmaster." + origin
	if data.Hostmaster != "" {
		if hostmaster, err = canonicalName(data.Hostmaster); err != nil {
			return nil, fmt.Errorf("hostmaster %q: %w", data.Hostmaster, err)
		}
	}
	return &builder{origin: origin, apex: apex, nameservers: nameservers, hostmaster: hostmaster, maxTTL: maxTTL,
		reserved: map[string]bool{}, groups: map[string]*group{}, held: newClaims(origin), signed: data.Signing != nil}, nil
}

// reserveNameservers gives the zone's nameserver names inside it to the server: resolvers sent to
// the zone look their addresses up there, so a record holding one, or delegating a name above one,
// would take the whole zone. Their addresses come from the server's configuration (nsAddrs).
func (b *builder) reserveNameservers(nsAddrs map[string][]netip.Addr) {
	for _, ns := range b.nameservers {
		if !dns.IsSubDomain(b.origin, ns) || b.reserved[ns] {
			continue
		}
		b.reserved[ns] = true
		for _, addr := range nsAddrs[ns] {
			rrtype, rr := dns.TypeAAAA, dns.RR(&dns.AAAA{Hdr: header(ns, dns.TypeAAAA, soaMinimum), AAAA: addr.AsSlice()})
			if addr.Is4() {
				rrtype, rr = dns.TypeA, &dns.A{Hdr: header(ns, dns.TypeA, soaMinimum), A: addr.AsSlice()}
			}
			key := ns + "/" + strconv.Itoa(int(rrtype))
			g := b.groups[key]
			if g == nil {
				g = &group{name: ns, rrtype: rrtype, members: map[string]*draft{"": {ttl: soaMinimum, records: map[string]dns.RR{}}}}
				b.groups[key] = g
			}
			g.members[""].records[addr.String()] = rr
		}
	}
}

// addSources collects every source's endpoints, in the order the sources came to be: where two
// cannot both be served, the earlier keeps the name. Endpoints without a source come first.
func (b *builder) addSources(data ZoneData) {
	sources := slices.Clone(data.Sources)
	slices.SortStableFunc(sources, func(a, b Source) int {
		return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.Name, b.Name))
	})
	if len(data.Endpoints) > 0 {
		sources = append([]Source{{Endpoints: data.Endpoints}}, sources...)
	}
	for i, src := range sources {
		for _, ep := range src.Endpoints {
			if ep != nil {
				b.addEndpoint(i, src.Name, ep)
			}
		}
	}
}

// addEndpoint adds one endpoint of source number src (named name, "" for none) to its group, or
// refuses it.
func (b *builder) addEndpoint(src int, name string, ep *v1alpha1.Endpoint) {
	var srcs []string
	if name != "" {
		srcs = []string{name}
	}
	skip := func(format string, args ...any) {
		b.refused.add(srcs, fmt.Sprintf("%s: %s", describe(ep), fmt.Sprintf(format, args...)))
	}
	owner, rrtype, ttl, why := b.check(src, ep)
	if why != "" {
		skip("%s", why)
		return
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
		skip("%d targets, more than the %d one endpoint may have", len(ep.Targets), v1alpha1.MaxTargets)
	} else {
		values, rrs, problems, tooLarge = parseTargets(owner, rrtype, ttl, ep.Targets)
	}
	for _, p := range problems {
		skip("%s", p)
	}
	if len(rrs) == 0 && !tooLarge {
		if len(problems) == 0 {
			skip("no targets")
		}
		return
	}
	b.held.add(src, owner, rrtype)
	key := owner + "/" + strconv.Itoa(int(rrtype))
	g := b.groups[key]
	if g == nil {
		g = &group{name: owner, rrtype: rrtype, members: map[string]*draft{}}
		b.groups[key] = g
	}
	if name != "" && !slices.Contains(g.sources, name) {
		g.sources = append(g.sources, name)
	}
	// A record too large to send makes its whole set unservable: the rest alone would be a
	// wrong answer.
	if tooLarge {
		g.tooLarge = true
		g.told = append(g.told, name)
	}
	d := g.members[ep.SetIdentifier]
	if d == nil {
		d = &draft{setID: ep.SetIdentifier, ttl: ttl, records: make(map[string]dns.RR, len(values))}
		g.members[ep.SetIdentifier] = d
	}
	d.add(ttl, values, rrs, ep.ProviderSpecific)
}

// check says why an endpoint of source number src cannot be served, before its targets are read;
// when it can, its canonical name, type and TTL.
func (b *builder) check(src int, ep *v1alpha1.Endpoint) (name string, rrtype uint16, ttl uint32, why string) {
	name, err := canonicalName(ep.DNSName)
	if err != nil {
		return "", 0, 0, fmt.Sprintf("invalid name: %v", err)
	}
	if !dns.IsSubDomain(b.origin, name) {
		return "", 0, 0, fmt.Sprintf("outside zone %s", b.origin)
	}
	rrtype, ok := dns.StringToType[strings.ToUpper(ep.RecordType)]
	switch {
	case !ok || rrtype == dns.TypeOPT || rrtype == dns.TypeANY || rrtype == dns.TypeAXFR ||
		rrtype == dns.TypeIXFR || rrtype == dns.TypeTSIG:
		return "", 0, 0, fmt.Sprintf("record type %q is not served", ep.RecordType)
	case name == b.origin && (rrtype == dns.TypeSOA || rrtype == dns.TypeNS):
		// The zone's own SOA and NS say who serves it; a tenant's record must not re-delegate it.
		return "", 0, 0, fmt.Sprintf("the apex %s comes from the server's configuration, not from records", dns.TypeToString[rrtype])
	case rrtype == dns.TypeSOA:
		return "", 0, 0, "an SOA record can only be at the zone apex"
	case rrtype == dns.TypeCNAME && name == b.origin:
		return "", 0, 0, "a CNAME cannot be at the zone apex"
	}
	if why := reservedProblem(name, rrtype, b.origin, b.reserved); why != "" {
		return "", 0, 0, why
	}
	if b.signed {
		if why := signingProblem(name, b.origin, rrtype); why != "" {
			return "", 0, 0, why
		}
	}
	if why := b.held.conflict(src, name, rrtype); why != "" {
		return "", 0, 0, why
	}
	if ep.RecordTTL < 0 {
		return "", 0, 0, "negative TTL"
	}
	// The caps every DNSRecord is validated against, which the record controller does not
	// apply to authoritative records.
	if int64(ep.RecordTTL) > b.maxTTL {
		return "", 0, 0, fmt.Sprintf("TTL %d, more than the %d allowed (--max-ttl)", ep.RecordTTL, b.maxTTL)
	}
	if w, over := weightOver(ep); over {
		return "", 0, 0, fmt.Sprintf("weight %d, more than the %d every provider accepts", w, v1alpha1.MaxWeight)
	}
	ttl = uint32(ep.RecordTTL)
	if ttl == 0 {
		ttl = defaultTTL
	}
	return name, rrtype, ttl, ""
}

// nodeAt is the node of a name, made with every missing name between it and the apex: those exist,
// possibly empty (RFC 4592 2.2.2).
func (b *builder) nodeAt(name string) *node {
	nodes := b.snap.nodes
	w, _ := wireName(name)
	n := nodes[string(w)]
	if n == nil {
		n = &node{}
		nodes[string(w)] = n
		for parent := name; parent != b.origin; {
			next, _ := dns.NextLabel(parent, 0)
			parent = parent[next:]
			pw, _ := wireName(parent)
			if nodes[string(pw)] != nil {
				break
			}
			nodes[string(pw)] = &node{}
		}
	}
	return n
}

// placeGroups makes the snapshot's nodes and encodes each group at its node, in name order, adding
// each to the digest.
func (b *builder) placeGroups(serial uint32) {
	b.snap = &snapshot{origin: b.origin, apex: b.apex, serial: serial, nodes: map[string]*node{}}
	b.nodeAt(b.origin)
	// A nameserver name exists even without configured addresses (NODATA), so that no wildcard
	// answers for it.
	for ns := range b.reserved {
		b.nodeAt(ns)
	}
	keys := make([]string, 0, len(b.groups))
	for k := range b.groups {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	// Names holding a CNAME and other data: the other data wins, as a resolver would refuse the mix.
	other := map[string]bool{}
	for _, k := range keys {
		if g := b.groups[k]; g.rrtype != dns.TypeCNAME {
			other[g.name] = true
		}
	}
	b.digest = sha256.New()
	fmt.Fprintf(b.digest, "%s %s\n", b.hostmaster, b.nameservers[0])
	for _, k := range keys {
		g := b.groups[k]
		if g.rrtype == dns.TypeCNAME && other[g.name] {
			b.refused.add(g.sources, fmt.Sprintf("%s CNAME: other records share the name", g.name))
			continue
		}
		b.placeGroup(g)
	}
}

// placeGroup encodes one group and puts it at its node: as a set the name answers with, as a
// delegation (NS below the apex), or, when it cannot be sent, as a set that answers SERVFAIL.
func (b *builder) placeGroup(g *group) {
	if strings.HasPrefix(g.name, "*.") {
		b.snap.hasWild = true
	}
	ts, drafts, encErr := b.encodeGroup(g)
	for _, d := range drafts {
		values, _ := d.sorted()
		fmt.Fprintf(b.digest, "%s %d %q %d %q %q %v\n", g.name, g.rrtype, d.setID, d.ttl, values, d.geo, weightText(d.weight))
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
			b.refused.add(untold, fmt.Sprintf("%s %s: %v; the record set is not served", g.name, dns.TypeToString[g.rrtype], encErr))
		}
		if g.rrtype != dns.TypeNS {
			n := b.nodeAt(g.name)
			n.sets = append(n.sets, typeSet{rrtype: g.rrtype, refused: true})
		}
		return
	}
	n := b.nodeAt(g.name)
	if g.rrtype != dns.TypeNS {
		n.sets = append(n.sets, ts)
		return
	}
	// NS below the apex delegates: the records are a referral, never an answer.
	b.snap.hasCuts = true
	n.cut = ts.static
	if ts.routed != nil {
		n.cut = ts.routed.static
	}
}

// encodeGroup encodes a group as plain records or, when its members carry set identifiers, geo
// codes or weights, as a routed set. A CNAME set of several targets serves the first.
func (b *builder) encodeGroup(g *group) (typeSet, []*draft, error) {
	ts := typeSet{rrtype: g.rrtype}
	drafts := sortedDrafts(g.members)
	var err error
	switch {
	case g.tooLarge:
		err = errors.New("a record of the set is over the size one DNS message can carry")
	case len(drafts) == 1 && drafts[0].geo == nil && drafts[0].weight == nil:
		values, rrs := drafts[0].sorted()
		if g.rrtype == dns.TypeCNAME && len(rrs) > 1 {
			b.refused.add(g.sources, fmt.Sprintf("%s CNAME: several targets, serving %s", g.name, values[0]))
			rrs = rrs[:1]
		}
		ts.static, err = encodeSet(b.origin, rrs)
	default:
		ts.routed, err = newRoutedSet(b.origin, g.rrtype, drafts)
		if err == nil {
			b.snap.geoSlots = ts.routed.appendGeoSlots(b.snap.geoSlots)
		}
	}
	return ts, drafts, err
}

// addApex makes the zone's SOA and apex NS set from the server's configuration.
func (b *builder) addApex(serial uint32) (*dns.SOA, error) {
	origin, snap := b.origin, b.snap
	apexNS := slices.Clone(b.nameservers)
	slices.Sort(apexNS)
	apexNS = slices.Compact(apexNS)
	fmt.Fprintf(b.digest, "NS %q\n", apexNS)
	var nsRRs []dns.RR
	for _, ns := range apexNS {
		nsRRs = append(nsRRs, &dns.NS{Hdr: header(origin, dns.TypeNS, soaMinimum), Ns: ns})
	}
	soa := &dns.SOA{Hdr: header(origin, dns.TypeSOA, soaMinimum), Ns: b.nameservers[0], Mbox: b.hostmaster,
		Serial: serial, Refresh: soaRefresh, Retry: soaRetry, Expire: soaExpire, Minttl: soaMinimum}
	var err error
	if snap.soa, err = encodeSet(origin, []dns.RR{soa}); err != nil {
		return nil, fmt.Errorf("zone %s: SOA: %w", origin, err)
	}
	if snap.ns, err = encodeSet(origin, nsRRs); err != nil {
		return nil, fmt.Errorf("zone %s: nameservers: %w", origin, err)
	}
	apexNode := snap.nodes[string(b.apex)]
	apexNode.sets = append(apexNode.sets, typeSet{rrtype: dns.TypeNS, static: snap.ns}, typeSet{rrtype: dns.TypeSOA, static: snap.soa})
	return soa, nil
}

// link finishes the snapshot: each node's sets sorted by type with its CNAME found, the glue of
// the apex and of every delegation, the SOA record and the digest.
func (b *builder) link(soa *dns.SOA) {
	snap := b.snap
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
	copy(snap.digest[:], b.digest.Sum(nil))
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
