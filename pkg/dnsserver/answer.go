package dnsserver

import (
	"encoding/binary"
	"slices"

	"github.com/miekg/dns"
)

// maxUDPDefault is the largest UDP answer we send unless configured otherwise: the size that avoids
// IP fragmentation on common paths (DNS flag day 2020).
const maxUDPDefault = 1232

// optReserve is the most our OPT record takes: 11 bytes, and a client subnet option of up to 20.
const optReserve = 11 + 4 + 4 + 16

// responder answers queries for one worker (a UDP reader or a TCP connection). Its buffers are
// reused, so a query allocates nothing.
type responder struct {
	s     *Server
	req   request
	out   []byte
	cands []int
	// loc is the client's location, looked up at most once per query, when a geo set needs it.
	loc      location
	located  bool
	tailored bool
	counts   [3]uint16 // answer, authority, additional
	// xfr is a zone transfer to stream instead of a single answer (TCP only).
	xfr *transfer
	// entry is the zone the query fell in, if any; signer its verified TSIG, if any.
	entry  *zoneEntry
	signer *tsigSigner
	// refusal says why the answer is REFUSED, for the metrics.
	refusal string
	// rcode is the (extended) rcode of the answer finish built.
	rcode int
	// source is the path that produced the answer, for the metrics; geoLevel is the level of the
	// first geo choice on the way (geoCandidates), -1 for none; weighted says a weighted set chose.
	source   answerSource
	geoLevel int8
	weighted bool
	// shard is this responder's copy of the query counters.
	shard int
	// overflow: a record set was left out because the answer would have grown past the largest
	// message; the answer is sent truncated.
	overflow bool
	// sign is the zone's signing when the answer is signed (a signed zone, a query with DO).
	sign *zoneSigning
	// nowUnix is the answer's time for signatures, read when first needed (clock); keyBuf holds a
	// signature cache key.
	nowUnix int64
	keyBuf  [1 + 8 + 256]byte
}

// maxAnswer is the most bytes the sections of an answer may take: a whole DNS message. Nothing is
// copied past it, so a responder's buffer keeps its size whatever the zone holds.
const maxAnswer = dns.MaxMsgSize

// answerBufferSize is a responder's buffer: an answer and the OPT record finish adds after it.
const answerBufferSize = maxAnswer + optReserve

func newResponder(s *Server) *responder {
	return &responder{s: s, out: make([]byte, 0, answerBufferSize), cands: make([]int, 0, 16),
		shard: int(s.stats.nextShard.Add(1) % statShards)}
}

// handle answers one message and returns the bytes to send back, or nil to send nothing. The result
// is valid until the next call.
func (r *responder) handle(msg []byte) []byte {
	r.xfr, r.entry, r.signer, r.refusal, r.source = nil, nil, nil, "", srcNone
	var out []byte
	switch r.req.parse(msg) {
	case drop:
		return nil
	case formErr:
		out = r.formErr()
	default:
		if r.req.tsig {
			out = r.s.handleSigned(r)
		} else {
			out = r.answer(nil)
		}
	}
	r.count(out)
	return out
}

// count adds an answer to the metrics: by zone, type and rcode or source, geo answers by code, and
// truncations and refusals.
func (r *responder) count(out []byte) {
	st := &r.s.stats
	q := &st.unzoned[r.shard]
	if r.entry != nil {
		q = &r.entry.stats.queries[r.shard]
	}
	if r.xfr != nil {
		q.add(r.req.qtype, dns.RcodeSuccess, srcNone)
		return
	}
	if len(out) < headerLen {
		return
	}
	rcode := int(out[3] & 0xF)
	q.add(r.req.qtype, rcode, r.source)
	if r.source == srcGeo || r.source == srcGeoDefault {
		r.entry.stats.countGeo(r.geoSlot(), r.shard)
	}
	if out[2]&(flagTC>>8) != 0 {
		if r.req.tcp {
			st.truncatedTCP.Add(1)
		} else {
			st.truncatedUDP.Add(1)
		}
	}
	if rcode == dns.RcodeRefused {
		switch r.refusal {
		case refusedNoZone:
			st.refusedNoZone.Add(1)
		case refusedTransfer:
			st.refusedTransfer.Add(1)
		default:
			st.refusedOther.Add(1)
		}
	}
}

// answer builds the answer for the parsed query. signer, when not nil, is the verified TSIG of the
// query: transfers are allowed, and room is kept for signing the answer.
func (r *responder) answer(signer *tsigSigner) []byte {
	q := &r.req
	r.signer = signer
	r.located, r.tailored, r.overflow = false, false, false
	r.source, r.geoLevel, r.weighted = srcNone, -1, false
	r.sign, r.nowUnix = nil, 0
	r.counts = [3]uint16{}
	r.begin(true)
	if q.edns && q.version != 0 {
		return r.finish(rcodeBadVers, 0)
	}
	if q.opcode != dns.OpcodeQuery {
		// We are the primary: a NOTIFY to us is refused; other opcodes (UPDATE, ...) are not ours.
		if q.opcode == dns.OpcodeNotify {
			return r.finish(dns.RcodeRefused, 0)
		}
		return r.finish(dns.RcodeNotImplemented, 0)
	}
	if q.qclass != dns.ClassINET && q.qclass != dns.ClassANY {
		return r.finish(dns.RcodeRefused, 0)
	}
	r.entry = r.s.findZone(q.lname)
	if r.entry == nil {
		r.refusal = refusedNoZone
		return r.finish(dns.RcodeRefused, 0)
	}
	snap := r.entry.snap.Load()
	switch q.qtype {
	case dns.TypeAXFR, dns.TypeIXFR:
		return r.transferAnswer(snap, signer)
	}
	if r.entry.export {
		// An export is for peers' transfers, never for resolvers.
		r.refusal = refusedTransfer
		return r.finish(dns.RcodeRefused, 0)
	}
	rcode, flags := r.resolve(snap)
	return r.finish(rcode, flags)
}

// resolve writes the answer, authority and additional records for a query inside snap's zone and
// returns the rcode and header flags.
func (r *responder) resolve(snap *snapshot) (int, uint16) {
	q := &r.req
	name := q.lname
	namePos := headerLen
	wild := false
	if snap.signing != nil {
		if q.qtype == dns.TypeNXNAME {
			// A meta type, only ever in the bitmap of a denial (RFC 9824 3.5).
			return dns.RcodeFormatError, 0
		}
		if q.do {
			r.sign = snap.signing
		}
	}
	for step := 0; ; step++ {
		n, kind, cutOff := snap.find(name)
		// synth: this step's records come from a wildcard, so their signatures depend on the name.
		synth := kind == wildcard
		switch kind {
		case nxDomain:
			return r.nxDomain(snap, name, namePos)
		case wildcard:
			wild = true
		case delegation:
			if cutOff == 0 && q.qtype == dns.TypeDS && snap.signing != nil {
				// The DS of a child is the parent's to answer (RFC 4035 3.1.4.1): we hold none.
				r.source = srcNoData
				r.noData(snap, n, name, namePos, false)
				return dns.RcodeSuccess, flagAA
			}
			r.source = srcDelegation
			r.putSet(n.cut, namePos+cutOff, 1)
			// The NS set of a referral is the child's and not signed; the signed NSEC at the cut
			// proves the child has no DS, so resolvers treat it as unsigned (RFC 4035 3.1.4).
			r.putProof(n, name[cutOff:], namePos+cutOff, false)
			r.putGlue(n.cutGlue)
			// A referral is not authoritative, unless it follows an alias of ours (RFC 1034 4.3.2).
			if step == 0 {
				return dns.RcodeSuccess, 0
			}
			return dns.RcodeSuccess, flagAA
		}
		if q.qtype == dns.TypeANY {
			// RFC 8482: one record set is enough, and keeps ANY from amplifying.
			if len(n.sets) == 0 {
				r.source = srcNoData
				r.noData(snap, n, name, namePos, synth)
				return dns.RcodeSuccess, flagAA
			}
			if n.sets[0].refused {
				r.source = srcRefusedSet
				return dns.RcodeServerFailure, 0
			}
			r.putSigned(r.pick(&n.sets[0]), name, namePos, 0, synth)
			r.source = r.answered(wild)
			return dns.RcodeSuccess, flagAA
		}
		if ts := n.find(q.qtype); ts != nil {
			if ts.refused {
				// A set the build refused (too large to send): fail rather than deny it exists.
				r.source = srcRefusedSet
				return dns.RcodeServerFailure, 0
			}
			r.putSigned(r.pick(ts), name, namePos, 0, synth)
			if q.qtype == dns.TypeNS && step == 0 && len(name) == len(snap.apex) {
				r.putGlue(snap.nsGlue)
			}
			r.source = r.answered(wild)
			return dns.RcodeSuccess, flagAA
		}
		if n.cname == nil {
			r.source = srcNoData
			r.noData(snap, n, name, namePos, synth)
			return dns.RcodeSuccess, flagAA
		}
		if n.cname.refused {
			r.source = srcRefusedSet
			return dns.RcodeServerFailure, 0
		}
		set := r.pick(n.cname)
		rdata := r.putSigned(set, name, namePos, 0, synth)
		if !set.inZone || step+1 == maxChain || r.overflow {
			r.source = r.answered(wild)
			return dns.RcodeSuccess, flagAA
		}
		// Follow the alias: the next owner is the target just written, uncompressed, in the answer.
		name = set.target
		namePos = rdata
	}
}

// putGlue adds the addresses of nameservers to the additional section, a whole nameserver's at a
// time, as many as fit: glue helps resolvers but is not needed for a correct answer, so it never
// makes one truncated. Each is measured before it is copied, so a referral to thousands of
// addresses costs what one message holds.
func (r *responder) putGlue(gl []glue) {
	room := r.limit() - optReserve - len(r.out)
	for _, g := range gl {
		size := g.size()
		if size > room {
			continue
		}
		room -= size
		for _, set := range g.sets {
			r.putSetNamed(set, g.name, 2)
		}
	}
}

// negative adds the zone's SOA to the authority section, telling resolvers how long to cache the
// absence (RFC 2308).
func (r *responder) negative(snap *snapshot) {
	r.putSigned(snap.soa, snap.apex, headerLen+len(r.req.lname)-len(snap.apex), 1, false)
}

// pick returns the records to serve for a type set: the set itself, or the member a routed set
// chooses for this client.
func (r *responder) pick(ts *typeSet) *rrset {
	if ts.static != nil {
		return ts.static
	}
	rs := ts.routed
	var cands []int
	if rs.geo {
		if len(rs.members) > 1 {
			r.tailored = true
		}
		var level int8
		cands, level = rs.geoCandidates(r.location(), r.cands[:0])
		if r.geoLevel < 0 {
			r.geoLevel = level
		}
	} else {
		r.weighted = r.weighted || rs.weighted
		cands = r.cands[:0]
		for i := range rs.members {
			cands = append(cands, i)
		}
	}
	r.cands = cands
	if rs.weighted && len(cands) > 1 {
		var total uint64
		for _, c := range cands {
			total += rs.members[c].weight
		}
		if total == 0 {
			return rs.members[cands[r.s.random(uint64(len(cands)))]].set
		}
		v := r.s.random(total)
		for _, c := range cands {
			w := rs.members[c].weight
			if v < w {
				return rs.members[c].set
			}
			v -= w
		}
	}
	return rs.members[cands[0]].set
}

// Geo levels, in the order geoCandidates tries them.
const (
	geoCountry int8 = iota
	geoContinent
	geoDefault
	geoAll
)

// geoCandidates returns the members for a location, and the level that gave them: those for its
// country, else its continent, else the default ("*"), else all. Within a level the order is by set
// identifier, so replicas agree on the first.
func (rs *routedSet) geoCandidates(loc location, buf []int) ([]int, int8) {
	for level := geoCountry; level <= geoAll; level++ {
		out := buf[:0]
		for i := range rs.members {
			m := &rs.members[i]
			var hit bool
			switch level {
			case geoCountry:
				hit = loc.country != 0 && slices.Contains(m.countries, loc.country)
			case geoContinent:
				hit = loc.continent != 0 && slices.Contains(m.continents, loc.continent)
			case geoDefault:
				hit = m.isDefault
			default:
				hit = true
			}
			if hit {
				out = append(out, i)
			}
		}
		if len(out) > 0 {
			return out, level
		}
	}
	return buf[:0], geoAll
}

// answered is the source of an answer that holds records: the first geo choice on the way, else a
// weighted choice, else whether a wildcard answered. A set with both geo codes and weights chose by
// geo first, so it counts as geo.
func (r *responder) answered(wild bool) answerSource {
	switch {
	case r.geoLevel == geoCountry || r.geoLevel == geoContinent:
		return srcGeo
	case r.geoLevel == geoDefault:
		return srcGeoDefault
	case r.geoLevel == geoAll:
		return srcGeoFallback
	case r.weighted:
		return srcWeighted
	case wild:
		return srcWildcard
	}
	return srcStatic
}

// geoSlot is the geo counter of the first geo choice: the code that matched, or "*".
func (r *responder) geoSlot() int {
	switch r.geoLevel {
	case geoCountry:
		return geoSlot(r.loc.country, false)
	case geoContinent:
		return geoSlot(r.loc.continent, true)
	case geoDefault:
		return geoDefaultSlot
	}
	return noGeoSlot
}

// location finds the client: the EDNS Client Subnet address when the query has one, else the
// source address. A subnet of prefix 0 asks for an answer not tailored to any client (RFC 7871
// 7.1.2), which is the one for an unknown location.
func (r *responder) location() location {
	if r.located {
		return r.loc
	}
	r.located = true
	r.loc = location{}
	g := r.s.geo.Load()
	if g == nil {
		return r.loc
	}
	q := &r.req
	switch {
	case q.ecs.present && q.ecs.source > 0:
		r.loc = g.locate(q.ecs.addr)
	case !q.ecs.present && q.client.IsValid():
		r.loc = g.locate(q.client)
	}
	return r.loc
}

// begin writes the header and the question.
func (r *responder) begin(withQuestion bool) {
	q := &r.req
	r.out = r.out[:headerLen]
	binary.BigEndian.PutUint16(r.out, q.id)
	binary.BigEndian.PutUint16(r.out[2:], flagQR|q.flags&(0xF<<11|flagRD|flagCD))
	clear(r.out[4:headerLen])
	if withQuestion && q.qEnd > 0 {
		r.out = append(r.out, q.msg[headerLen:q.qEnd]...)
		r.out[5] = 1
	}
}

// putSet appends a record set whose owner name is at ownerPos in the message, into section sec (0
// answer, 1 authority, 2 additional), and returns where the data of its last record starts.
func (r *responder) putSet(s *rrset, ownerPos, sec int) int {
	if ownerPos > 0x3FFF {
		return r.putSetNamed(s, r.nameAt(ownerPos), sec)
	}
	if !r.fits(len(s.wire)) {
		return 0
	}
	r.counts[sec] += uint16(len(s.starts))
	base := len(r.out)
	r.out = append(r.out, s.wire...)
	ptr := 0xC000 | uint16(ownerPos)
	for _, st := range s.starts {
		binary.BigEndian.PutUint16(r.out[base+int(st):], ptr)
	}
	return base + int(s.starts[len(s.starts)-1]) + 12
}

// putSetNamed appends a record set with its owner name written out in full.
func (r *responder) putSetNamed(s *rrset, name []byte, sec int) int {
	if !r.fits(s.namedSize(name)) {
		return 0
	}
	r.counts[sec] += uint16(len(s.starts))
	rdata := 0
	for i, st := range s.starts {
		end := len(s.wire)
		if i+1 < len(s.starts) {
			end = int(s.starts[i+1])
		}
		rdata = len(r.out) + len(name) + 10
		r.out = append(r.out, name...)
		r.out = append(r.out, s.wire[st+2:end]...)
	}
	return rdata
}

// fits says whether n more bytes keep the answer within maxAnswer; when they would not, the answer
// is marked to be sent truncated and nothing is copied.
func (r *responder) fits(n int) bool {
	if len(r.out)+n > maxAnswer {
		r.overflow = true
		return false
	}
	return true
}

// nameAt returns the uncompressed name written at pos. Only names we wrote uncompressed (the
// question and record data) are ever pointed at, so no pointer is followed.
func (r *responder) nameAt(pos int) []byte {
	end := pos
	for r.out[end] != 0 {
		end += int(r.out[end]) + 1
	}
	return r.out[pos : end+1]
}

// finish sets the rcode and counts, adds the OPT record, and truncates an answer that does not fit.
func (r *responder) finish(rcode int, flags uint16) []byte {
	q := &r.req
	r.rcode = rcode
	r.out[2] |= byte(flags >> 8)
	r.out[3] |= byte(rcode & 0xF)
	binary.BigEndian.PutUint16(r.out[6:], r.counts[0])
	binary.BigEndian.PutUint16(r.out[8:], r.counts[1])
	binary.BigEndian.PutUint16(r.out[10:], r.counts[2])
	if q.edns {
		r.putOPT(rcode)
	}
	if r.overflow || len(r.out) > r.limit() {
		// Too large: send the question alone with TC set, so the client retries over TCP (RFC 7766).
		return r.truncate()
	}
	return r.out
}

// truncate turns the answer just built into the question alone with TC set, keeping the rcode.
func (r *responder) truncate() []byte {
	q := &r.req
	r.out = r.out[:max(q.qEnd, headerLen)]
	r.out[2] |= flagTC >> 8
	clear(r.out[6:headerLen])
	if q.edns {
		r.putOPT(r.rcode)
	}
	return r.out
}

// limit is the largest answer the client takes: 512 bytes without EDNS, else the size it
// advertises, capped by ours; TCP takes a full message. Room for a TSIG record is kept.
func (r *responder) limit() int {
	q := &r.req
	limit := dns.MaxMsgSize
	if !q.tcp {
		limit = dns.MinMsgSize
		if q.edns {
			limit = max(dns.MinMsgSize, min(int(q.udpSize), r.s.maxUDP))
		}
	}
	if r.signer != nil {
		limit -= r.signer.key.reserve
	}
	return limit
}

// putOPT appends our OPT record: our UDP size, the DO bit echoed (RFC 3225), and the client subnet
// echoed with the scope the answer holds for (RFC 7871 7.2.1).
func (r *responder) putOPT(rcode int) {
	q := &r.req
	var b [11]byte
	binary.BigEndian.PutUint16(b[1:], dns.TypeOPT)
	binary.BigEndian.PutUint16(b[3:], uint16(r.s.maxUDP))
	b[5] = byte(rcode >> 4)
	if q.do {
		b[7] = 0x80
	}
	if q.co && r.sign != nil {
		// Our compact denials answer NXDOMAIN to this client (RFC 9824 4).
		b[7] |= 0x40
	}
	rdlen := 0
	if q.ecs.present {
		rdlen = 8 + q.ecs.rawLen
	}
	binary.BigEndian.PutUint16(b[9:], uint16(rdlen))
	r.out = append(r.out, b[:]...)
	if q.ecs.present {
		var scope uint8
		if r.tailored && q.ecs.source > 0 {
			scope = r.loc.bits
		}
		var e [8]byte
		binary.BigEndian.PutUint16(e[0:], ednsECS)
		binary.BigEndian.PutUint16(e[2:], uint16(4+q.ecs.rawLen))
		binary.BigEndian.PutUint16(e[4:], q.ecs.family)
		e[6], e[7] = q.ecs.source, scope
		r.out = append(r.out, e[:]...)
		r.out = append(r.out, q.ecs.raw[:q.ecs.rawLen]...)
	}
	binary.BigEndian.PutUint16(r.out[10:], binary.BigEndian.Uint16(r.out[10:])+1)
}

// formErr answers a malformed query: FORMERR, with the question when it could be read, and no OPT
// (the OPT may be what was malformed; RFC 6891 7).
func (r *responder) formErr() []byte {
	q := &r.req
	r.out = r.out[:0]
	r.counts = [3]uint16{}
	r.begin(q.qEnd > 0)
	q.edns = false
	return r.finish(dns.RcodeFormatError, 0)
}
