package dnsserver

import (
	"bytes"
	"fmt"
	"slices"
	"sync"

	"github.com/miekg/dns"
)

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
			apex := k == string(z.apex)
			if ts.refused || ts.rrtype == dns.TypeSOA || (ts.rrtype == dns.TypeNS && apex) || (z.signing != nil && apex && signsKeys(ts.rrtype)) {
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
