package dnsserver

import (
	"slices"
	"unsafe"

	"github.com/miekg/dns"
)

// Compact denial of existence (RFC 9824): a name that does not exist, or lacks the type asked, is
// answered with one NSEC at the name itself, saying it exists with only the types it has (or with
// NXNAME, for a name that does not exist), and whose next name is the name's immediate successor.
// Such an NSEC covers no other name, so no chain of them can be walked to list the zone, and it is
// made on line for the name asked, like any other signature.

// noData answers that the name (n, at namePos) holds no set of the type asked: the SOA, and in a
// signed answer the NSEC listing what it holds.
func (r *responder) noData(snap *snapshot, n *node, name []byte, namePos int, wild bool) {
	if r.sign != nil && r.req.qtype == dns.TypeNSEC {
		// The NSEC of a name that exists is what was asked: an answer, not a denial (a denial
		// listing NSEC in its own bitmap would contradict itself, and validators refuse it).
		r.putProofIn(n, name, namePos, wild, 0)
		return
	}
	r.negative(snap)
	r.putProof(n, name, namePos, wild)
}

// nxDomain answers for a name that does not exist. Signed, it is a compact denial (RFC 9824): the
// name is said to exist with nothing but the NXNAME marker, so the answer is NOERROR unless the
// client said it understands compact answers (CO), and no NSEC reveals a neighbouring name.
func (r *responder) nxDomain(snap *snapshot, name []byte, namePos int) (int, uint16) {
	r.source = srcNXDomain
	r.negative(snap)
	if r.sign == nil {
		return dns.RcodeNameError, flagAA
	}
	r.putProof(nil, name, namePos, false)
	if r.req.co {
		return dns.RcodeNameError, flagAA
	}
	r.source = srcCompactNX
	return dns.RcodeSuccess, flagAA
}

// denial makes the NSEC of compact denial (RFC 9824) at owner, a lower-cased wire name, with its
// signatures: the name exists with the given types, and the next name is its immediate successor
// ("\000.<owner>"), so the NSEC covers no other name and nothing can be walked.
func (z *zoneSigning) denial(owner []byte, types []uint16, now int64) *signed {
	name, _, err := dns.UnpackDomainName(owner, 0)
	if err != nil {
		z.log.Error(err, "reading a name to deny", "zone", z.origin)
		return &signed{refresh: now + signFailed}
	}
	nsec := &dns.NSEC{Hdr: header(name, dns.TypeNSEC, z.nsecTTL), NextDomain: successor(name, owner), TypeBitMap: types}
	set, err := encodeSet(z.origin, []dns.RR{nsec})
	if err != nil {
		z.log.Error(err, "encoding a denial", "zone", z.origin)
		return &signed{refresh: now + signFailed}
	}
	sg := z.sign(set, owner, now)
	if sg.rrsig != nil {
		sg.nsec = set
	}
	return sg
}

// successor is the name right after name in canonical order: "\000." before it, or, when that
// would be longer than a name may be, the name with the last byte of its first label raised
// (RFC 4471 3.1.2's successor for names at the length limit).
func successor(name string, owner []byte) string {
	if len(owner)+2 <= 255 {
		return `\000.` + name
	}
	w := slices.Clone(owner)
	if last := int(w[0]); last > 0 && w[last] < 0xFF {
		w[last]++
	}
	next, _, _ := dns.UnpackDomainName(w, 0)
	return next
}

// types lists what a name holds for its NSEC bitmap, RRSIG and NSEC added: at a delegation only NS
// (no DS: we sign no DS for the child), else every set of the node.
func (n *node) types(extra ...uint16) []uint16 {
	var out []uint16
	if n.cut != nil {
		out = append(out, dns.TypeNS)
	} else {
		for _, ts := range n.sets {
			out = append(out, ts.rrtype)
		}
	}
	out = append(out, dns.TypeRRSIG, dns.TypeNSEC)
	out = append(out, extra...)
	slices.Sort(out)
	return slices.Compact(out)
}

// putProof appends the signed NSEC saying what the name at ownerPos (owner, lower-cased wire)
// holds, to the authority section. n is its node; nil for a name that does not exist (NXNAME).
// wild says the name was synthesised from the wildcard node n.
func (r *responder) putProof(n *node, owner []byte, ownerPos int, wild bool) {
	r.putProofIn(n, owner, ownerPos, wild, 1)
}

// putProofIn is putProof into section sec: the answer section when the NSEC itself was asked for.
func (r *responder) putProofIn(n *node, owner []byte, ownerPos int, wild bool, sec int) {
	z := r.sign
	if z == nil || r.overflow {
		return
	}
	now := r.clock()
	var sg *signed
	switch {
	case n != nil && !wild:
		if sg = n.proof.Load(); sg == nil || now >= sg.refresh {
			sg = z.denial(owner, n.types(), now)
			n.proof.Store(sg)
		}
	default:
		kind, from, types := dynNXName, unsafe.Pointer(nil), []uint16(nil)
		if n != nil {
			kind, from = dynWildNoData, unsafe.Pointer(n)
		}
		key := r.dynKey(kind, from, owner)
		if sg = z.dynamic.get(key, now); sg != nil {
			break
		}
		if n != nil {
			types = n.types()
		} else {
			types = []uint16{dns.TypeRRSIG, dns.TypeNSEC, dns.TypeNXNAME}
		}
		sg = z.denial(owner, types, now)
		z.dynamic.put(key, sg, z.stats)
	}
	if sg.nsec != nil {
		r.putSet(sg.nsec, ownerPos, sec)
		r.putSet(sg.rrsig, ownerPos, sec)
	}
}
