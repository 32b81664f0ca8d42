package dnsserver

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/miekg/dns"
)

// Zone timers. Secondaries learn of changes by NOTIFY, so refresh only bounds how stale a secondary
// that missed one can get. Negative answers are cached briefly because names appear as soon as a
// Gateway gets an address.
const (
	soaRefresh = 300
	soaRetry   = 60
	soaExpire  = 604800
	soaMinimum = 60
	// defaultTTL is used for endpoints without a TTL (an authoritative record's ownership TXTs, as
	// Kuadrant writes them). Kuadrant's CoreDNS plugin serves those with TTL 0, which no resolver
	// caches; a minute keeps them cacheable like the SOA's negative answers.
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
	// sig is the set's signatures in a signed zone, made when first served (sign.go).
	sig atomic.Pointer[signed]
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
	// proof is the name's signed NSEC in a signed zone, made when first needed (sign.go).
	proof atomic.Pointer[signed]
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
	// geoSlots are the geo counters its geo sets can count answers in (zoneStats.ensureGeo).
	geoSlots []int
	// digest identifies the content (everything but the serial), to tell a real change from a resync.
	digest [sha256.Size]byte
	// signing holds the keys and signature caches of a signed zone; nil when unsigned.
	signing *zoneSigning
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
