package dnsserver

import (
	"encoding/binary"
	"net/netip"

	"github.com/miekg/dns"
)

// The hot path reads queries and writes answers as bytes, without building message objects: a
// query costs a few map lookups and copies of precomputed records, and no allocations.

const (
	headerLen = 12
	// ednsECS is the EDNS Client Subnet option code (RFC 7871).
	ednsECS = 8
	// rcodeBadVers is the extended rcode for an unsupported EDNS version (RFC 6891).
	rcodeBadVers = 16
)

// Header flag bits.
const (
	flagQR = 1 << 15
	flagAA = 1 << 10
	flagTC = 1 << 9
	flagRD = 1 << 8
	flagCD = 1 << 4
)

// parseResult says what to do with a message.
type parseResult int

const (
	parsed parseResult = iota
	// drop: not a query (too short, or a response); never answer it.
	drop
	// formErr: malformed; answer FORMERR, echoing the question when it was readable.
	formErr
)

// request is a parsed query. It is reused for every query a worker handles.
type request struct {
	msg     []byte
	id      uint16
	flags   uint16
	opcode  int
	qtype   uint16
	qclass  uint16
	lbuf    [256]byte
	lname   []byte // the question name, lower-cased, wire form
	qEnd    int    // end of the question section in msg; 0 when it was not readable
	edns    bool
	version uint8
	do      bool
	// co is the Compact Answers OK flag (RFC 9824 4).
	co      bool
	udpSize uint16
	ecs     ecsOption
	tsig    bool
	// ixfrSerial is the serial an IXFR query says the client has.
	ixfrSerial uint32
	hasIXFR    bool
	client     netip.Addr
	tcp        bool
}

// ecsOption is an EDNS Client Subnet option of a query.
type ecsOption struct {
	present bool
	family  uint16
	source  uint8
	addr    netip.Addr
	raw     [16]byte
	rawLen  int
}

// parse reads a query. Only what an authoritative answer needs is read; the answer and authority
// sections are walked over, apart from the SOA an IXFR query carries.
func (q *request) parse(msg []byte) parseResult {
	*q = request{msg: msg, client: q.client, tcp: q.tcp}
	if len(msg) < headerLen {
		return drop
	}
	q.id = binary.BigEndian.Uint16(msg)
	q.flags = binary.BigEndian.Uint16(msg[2:])
	if q.flags&flagQR != 0 {
		return drop
	}
	q.opcode = int(q.flags>>11) & 0xF
	qd := binary.BigEndian.Uint16(msg[4:])
	an := int(binary.BigEndian.Uint16(msg[6:]))
	ns := int(binary.BigEndian.Uint16(msg[8:]))
	ar := int(binary.BigEndian.Uint16(msg[10:]))
	if qd != 1 {
		return formErr
	}
	off := headerLen
	n := 0
	for {
		if off >= len(msg) {
			return formErr
		}
		l := int(msg[off])
		if l&0xC0 != 0 {
			// A question name cannot be compressed: nothing precedes it to point at.
			return formErr
		}
		if n+l+1 > 255 || off+l+1 > len(msg) {
			return formErr
		}
		copy(q.lbuf[n:], msg[off:off+l+1])
		n += l + 1
		off += l + 1
		if l == 0 {
			break
		}
	}
	q.lname = q.lbuf[:n]
	lowerWire(q.lname)
	if off+4 > len(msg) {
		return formErr
	}
	q.qtype = binary.BigEndian.Uint16(msg[off:])
	q.qclass = binary.BigEndian.Uint16(msg[off+2:])
	off += 4
	q.qEnd = off

	for i := 0; i < an+ns+ar; i++ {
		start := off
		var ok bool
		if off, ok = skipName(msg, off); !ok || off+10 > len(msg) {
			return formErr
		}
		rrtype := binary.BigEndian.Uint16(msg[off:])
		class := binary.BigEndian.Uint16(msg[off+2:])
		ttl := binary.BigEndian.Uint32(msg[off+4:])
		rdlen := int(binary.BigEndian.Uint16(msg[off+8:]))
		rdata := off + 10
		if rdata+rdlen > len(msg) {
			return formErr
		}
		off = rdata + rdlen
		switch {
		case i >= an && i < an+ns && rrtype == dns.TypeSOA && q.qtype == dns.TypeIXFR:
			if s, ok := soaSerial(msg, rdata, off); ok {
				q.ixfrSerial, q.hasIXFR = s, true
			}
		case i >= an+ns && rrtype == dns.TypeOPT:
			if q.edns || msg[start] != 0 {
				return formErr
			}
			q.edns = true
			q.udpSize = class
			q.version = uint8(ttl >> 16)
			q.do = ttl&(1<<15) != 0
			q.co = ttl&(1<<14) != 0
			if !q.parseOptions(msg[rdata:off]) {
				return formErr
			}
		case i >= an+ns && rrtype == dns.TypeTSIG:
			// TSIG must be the last record (RFC 8945 5.1).
			if i != an+ns+ar-1 {
				return formErr
			}
			q.tsig = true
		}
	}
	return parsed
}

func (q *request) parseOptions(opts []byte) bool {
	for len(opts) > 0 {
		if len(opts) < 4 {
			return false
		}
		code := binary.BigEndian.Uint16(opts)
		l := int(binary.BigEndian.Uint16(opts[2:]))
		if 4+l > len(opts) {
			return false
		}
		if code == ednsECS {
			if q.ecs.present || !q.ecs.parse(opts[4:4+l]) {
				return false
			}
		}
		opts = opts[4+l:]
	}
	return true
}

// parse reads an ECS option. RFC 7871 6: an unknown family, a prefix longer than the family allows,
// or an address with more bytes or bits than the prefix is malformed (FORMERR).
func (e *ecsOption) parse(b []byte) bool {
	if len(b) < 4 {
		return false
	}
	e.present = true
	e.family = binary.BigEndian.Uint16(b)
	e.source = b[2]
	addr := b[4:]
	size := 0
	switch e.family {
	case 1:
		size = 4
	case 2:
		size = 16
	default:
		return false
	}
	if int(e.source) > size*8 || len(addr) != (int(e.source)+7)/8 {
		return false
	}
	if rem := e.source % 8; rem != 0 && addr[len(addr)-1]&(0xFF>>rem) != 0 {
		return false
	}
	e.rawLen = copy(e.raw[:], addr)
	var full [16]byte
	copy(full[:], addr)
	if e.family == 1 {
		e.addr = netip.AddrFrom4([4]byte(full[:4]))
	} else {
		e.addr = netip.AddrFrom16(full)
	}
	return true
}

// skipName walks over a possibly compressed name.
func skipName(msg []byte, off int) (int, bool) {
	for {
		if off >= len(msg) {
			return 0, false
		}
		l := int(msg[off])
		switch {
		case l == 0:
			return off + 1, true
		case l&0xC0 == 0xC0:
			if off+2 > len(msg) {
				return 0, false
			}
			return off + 2, true
		case l&0xC0 != 0:
			return 0, false
		}
		off += l + 1
	}
}

func soaSerial(msg []byte, off, end int) (uint32, bool) {
	var ok bool
	if off, ok = skipName(msg, off); !ok {
		return 0, false
	}
	if off, ok = skipName(msg, off); !ok || off+4 > end {
		return 0, false
	}
	return binary.BigEndian.Uint32(msg[off:]), true
}
