package dnsserver

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/miekg/dns"
)

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
