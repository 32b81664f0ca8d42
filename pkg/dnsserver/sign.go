package dnsserver

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"time"
	"unsafe"

	"github.com/go-logr/logr"
	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/pkg/dnssec"
)

// Signature validity. A signature is made when its set is first served and kept until it enters
// its refresh window, so what a resolver caches is always valid for a week or more. Inception is an
// hour (plus jitter) in the past, for validators whose clocks run behind ours.
const (
	sigRefresh  = 7 * 24 * time.Hour
	sigBucket   = 7 * 24 * time.Hour
	sigLifetime = sigBucket + sigRefresh
	sigSkew     = time.Hour
	// dnskeyTTL is the TTL of the DNSKEY, CDS and CDNSKEY sets when the keys carry none.
	dnskeyTTL = 3600
)

// signed is what a signed answer appends for one record set: its RRSIGs, and for a denial the NSEC
// they cover, both encoded as record sets with a patched owner pointer, like the zone's own sets.
type signed struct {
	nsec  *rrset // a denial's NSEC; nil for the signatures of a zone's set
	rrsig *rrset
	// refresh is when (Unix seconds) the signatures enter their refresh window and are made again.
	refresh int64
}

// signFailed is how long a set that could not be signed is served unsigned before signing is tried
// again: a failure is logged once per this, not once per query.
const signFailed = 60

// size is what the entry costs the cache: its wire, its key and the bookkeeping around them.
func (sg *signed) size(key int) int {
	n := key + 160
	for _, s := range []*rrset{sg.rrsig, sg.nsec} {
		if s != nil {
			n += len(s.wire) + 2*len(s.starts) + 64
		}
	}
	return n
}

// zoneSigning is a signed zone's keys and signature caches, one per snapshot: a new snapshot (new
// content or new keys) signs afresh. The zone's own sets keep their signatures beside their wire
// (rrset.sig, node.proof), so those are bounded by the zone; what depends on the query name
// (denials of names that do not exist, wildcard answers) goes to a cache bounded in bytes.
type zoneSigning struct {
	origin      string
	apex        []byte
	keySigners  []*dnssec.Key
	zoneSigners []*dnssec.Key
	// nsecTTL is the TTL of denials: min(SOA TTL, SOA MINIMUM) (RFC 9077).
	nsecTTL uint32
	// dynamic, stats and log are set by attach, before the snapshot is served.
	dynamic *sigCache
	stats   *zoneStats
	log     logr.Logger
}

// attach gives a signed snapshot what it needs from the server to answer: its cache of
// name-dependent signatures (bounded by maxBytes), the zone's counters and the log.
func (z *zoneSigning) attach(stats *zoneStats, log logr.Logger, maxBytes int) {
	z.stats, z.log, z.dynamic = stats, log, newSigCache(maxBytes)
}

// addKeys makes the apex DNSKEY, CDS and CDNSKEY sets from a valid key set and marks the snapshot
// signed. An invalid set fails the build: the zone keeps serving what it served before.
func (b *builder) addKeys(ks *dnssec.KeySet, soa *dns.SOA) error {
	if err := ks.Valid(); err != nil {
		return fmt.Errorf("zone %s: DNSSEC keys: %w", b.origin, err)
	}
	for _, k := range ks.Keys {
		fmt.Fprintf(b.digest, "KEY %s %s %s %v %v\n", k.ID, k.Role, k.State, k.WantDS, k.DNSKEY)
	}
	published := ks.Published()
	ttl := uint32(0)
	for _, k := range published {
		if t := k.DNSKEY.Hdr.Ttl; t > 0 && (ttl == 0 || t < ttl) {
			ttl = t
		}
	}
	if ttl == 0 {
		ttl = dnskeyTTL
	}
	var keys, cds, cdnskey []dns.RR
	for _, k := range published {
		keys = append(keys, &dns.DNSKEY{Hdr: header(b.origin, dns.TypeDNSKEY, ttl), Flags: k.DNSKEY.Flags,
			Protocol: k.DNSKEY.Protocol, Algorithm: k.DNSKEY.Algorithm, PublicKey: k.DNSKEY.PublicKey})
	}
	for _, k := range ks.WantDS() {
		ds := k.DS()
		if ds == nil {
			return fmt.Errorf("zone %s: DNSSEC key %s: no DS can be made from its DNSKEY", b.origin, k.ID)
		}
		cds = append(cds, &dns.CDS{DS: dns.DS{Hdr: header(b.origin, dns.TypeCDS, ttl), KeyTag: ds.KeyTag,
			Algorithm: ds.Algorithm, DigestType: ds.DigestType, Digest: ds.Digest}})
		cdnskey = append(cdnskey, &dns.CDNSKEY{DNSKEY: dns.DNSKEY{Hdr: header(b.origin, dns.TypeCDNSKEY, ttl),
			Flags: k.DNSKEY.Flags, Protocol: k.DNSKEY.Protocol, Algorithm: k.DNSKEY.Algorithm, PublicKey: k.DNSKEY.PublicKey}})
	}
	apexNode := b.snap.nodes[string(b.apex)]
	for _, set := range [][]dns.RR{keys, cds, cdnskey} {
		if len(set) == 0 {
			continue
		}
		enc, err := encodeSet(b.origin, set)
		if err != nil {
			return fmt.Errorf("zone %s: %s: %w", b.origin, dns.TypeToString[set[0].Header().Rrtype], err)
		}
		apexNode.sets = append(apexNode.sets, typeSet{rrtype: set[0].Header().Rrtype, static: enc})
	}
	b.snap.signing = &zoneSigning{
		origin:      b.origin,
		apex:        b.apex,
		keySigners:  ownKeys(ks.KeySigners()),
		zoneSigners: ownKeys(ks.ZoneSigners()),
		nsecTTL:     min(soa.Hdr.Ttl, soa.Minttl),
	}
	return nil
}

// ownKeys copies keys, so that a caller reusing its KeySet cannot change what a served zone signs
// with. The public and private keys themselves are not changed by anyone once made.
func ownKeys(keys []*dnssec.Key) []*dnssec.Key {
	out := make([]*dnssec.Key, len(keys))
	for i, k := range keys {
		c := *k
		out[i] = &c
	}
	return out
}

// signsKeys says whether a type at the apex is signed by the key-signing keys. These sets are made
// from the keys: a signed zone's endpoints may not hold them, and transfers leave them out (a
// secondary signs with its own keys).
func signsKeys(rrtype uint16) bool {
	return rrtype == dns.TypeDNSKEY || rrtype == dns.TypeCDS || rrtype == dns.TypeCDNSKEY
}

// signingProblem says why an endpoint cannot be in a signed zone: the DNSSEC records are the
// server's to make.
func signingProblem(name, origin string, rrtype uint16) string {
	switch {
	case rrtype == dns.TypeRRSIG || rrtype == dns.TypeNSEC || rrtype == dns.TypeNSEC3 || rrtype == dns.TypeNSEC3PARAM:
		return fmt.Sprintf("the zone is signed: %s records are made by the server", dns.TypeToString[rrtype])
	case name == origin && signsKeys(rrtype):
		return fmt.Sprintf("the zone is signed: the apex %s comes from the zone's keys", dns.TypeToString[rrtype])
	}
	return ""
}

// validity is when a signature of an owner's set made at now (Unix seconds) starts and ends, and
// when it is made again. Time is cut into week-long buckets whose boundaries are shifted per set by
// a hash of zone, owner and type. A signature made in a bucket starts an hour or two (a hash of the
// bucket) before the bucket, ends sigLifetime after the bucket's start, and is made again when the
// bucket ends, a week before it expires. So every replica that signs the set in that bucket, at
// whatever moment, gives the same inception and expiration, and all make it again together; and the
// zone's sets reach their refresh spread over the week rather than all at once.
func (z *zoneSigning) validity(owner []byte, rrtype uint16, now int64) (inception, expiration uint32, refresh int64) {
	h := fnv.New64a()
	h.Write([]byte(z.origin))
	h.Write(owner)
	var t [8]byte
	binary.BigEndian.PutUint16(t[:], rrtype)
	h.Write(t[:2])
	sum := h.Sum64()
	bucket := int64(sigBucket / time.Second)
	phase := int64(sum % uint64(bucket))
	start := floorDiv(now+phase, bucket)*bucket - phase
	binary.BigEndian.PutUint64(t[:], uint64(start))
	h.Write(t[:])
	jitter := h.Sum64()
	skew := int64(sigSkew / time.Second)
	inc := start - skew - int64(jitter%uint64(skew))
	return uint32(inc), uint32(start + int64(sigLifetime/time.Second)), start + bucket
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// sign makes the RRSIGs of a set at owner (a lower-cased wire name): one per key of the set's
// signers, so a key rollover's old and new keys both sign while they overlap. When the set cannot
// be signed, the failure is logged and kept for signFailed seconds with no RRSIGs: the answers go out
// without signatures, which validators reject, rather than not at all.
func (z *zoneSigning) sign(s *rrset, owner []byte, now int64) *signed {
	failed := &signed{refresh: now + signFailed}
	rrs, err := s.records(owner)
	if err != nil {
		z.log.Error(err, "decoding a record set to sign", "zone", z.origin)
		return failed
	}
	rrtype := rrs[0].Header().Rrtype
	keys := z.zoneSigners
	if signsKeys(rrtype) && len(owner) == len(z.apex) {
		keys = z.keySigners
	}
	inception, expiration, refresh := z.validity(owner, rrtype, now)
	sigs := make([]dns.RR, 0, len(keys))
	for _, k := range keys {
		sig := &dns.RRSIG{Hdr: header(rrs[0].Header().Name, dns.TypeRRSIG, s.ttl), OrigTtl: s.ttl,
			Algorithm: k.DNSKEY.Algorithm, KeyTag: k.KeyTag(), SignerName: z.origin,
			Inception: inception, Expiration: expiration}
		if err := sig.Sign(k.Signer, rrs); err != nil {
			z.log.Error(err, "signing a record set", "zone", z.origin, "key", k.ID, "type", dns.TypeToString[rrtype])
			return failed
		}
		sigs = append(sigs, sig)
	}
	set, err := encodeSet(z.origin, sigs)
	if err != nil {
		z.log.Error(err, "encoding signatures", "zone", z.origin)
		return failed
	}
	z.stats.signatures.Add(uint64(len(sigs)))
	return &signed{rrsig: set, refresh: refresh}
}

// Kinds of dynamic cache entries: what the owner name is answered with.
const (
	dynWildcard byte = iota + 1 // a wildcard's set, synthesised at the owner
	dynWildNoData
	dynNXName
)

// clock is the answer's time in Unix seconds, read once per answer.
func (r *responder) clock() int64 {
	if r.nowUnix == 0 {
		r.nowUnix = r.s.now().Unix()
	}
	return r.nowUnix
}

// dynKey is the cache key of a name-dependent entry: its kind, the set or node it comes from (a
// pointer: the cache lives and dies with the snapshot holding both), and the owner.
func (r *responder) dynKey(kind byte, from unsafe.Pointer, owner []byte) []byte {
	k := append(r.keyBuf[:0], kind)
	k = binary.BigEndian.AppendUint64(k, uint64(uintptr(from)))
	return append(k, owner...)
}

// putSigned appends a set, as putSet does, and when the answer is signed, its RRSIGs after it in
// the same section. owner is the set's owner as a lower-cased wire name; wild says it was
// synthesised from a wildcard, so its signatures depend on the owner and are kept in the dynamic
// cache.
func (r *responder) putSigned(s *rrset, owner []byte, ownerPos, sec int, wild bool) int {
	rdata := r.putSet(s, ownerPos, sec)
	z := r.sign
	if z == nil || r.overflow {
		return rdata
	}
	now := r.clock()
	var sg *signed
	if !wild {
		if sg = s.sig.Load(); sg == nil || now >= sg.refresh {
			sg = z.sign(s, owner, now)
			s.sig.Store(sg)
		}
	} else {
		key := r.dynKey(dynWildcard, unsafe.Pointer(s), owner)
		if sg = z.dynamic.get(key, now); sg == nil {
			sg = z.sign(s, owner, now)
			z.dynamic.put(key, sg, z.stats)
		}
	}
	if sg.rrsig != nil {
		r.putSet(sg.rrsig, ownerPos, sec)
	}
	return rdata
}

// carrySignatures gives the sets and names of a new build of a zone the signatures the previous
// build made for them, where they are the same records signed by the same keys: a zone changes
// whenever one of its records does, and without this every change would sign every set again as
// it is next served. Called before next is served.
func carrySignatures(prev, next *snapshot) {
	if prev == nil || prev.signing == nil || !sameSigners(prev.signing, next.signing) || prev.signing.nsecTTL != next.signing.nsecTTL {
		return
	}
	for name, n := range next.nodes {
		old := prev.nodes[name]
		if old == nil {
			continue
		}
		if sg := old.proof.Load(); sg != nil && slices.Equal(old.types(), n.types()) {
			n.proof.Store(sg)
		}
		for i := range n.sets {
			ts := &n.sets[i]
			ots := old.find(ts.rrtype)
			if ots == nil || ts.refused || ots.refused {
				continue
			}
			carrySet(ots.static, ts.static)
			if ts.routed != nil && ots.routed != nil && len(ts.routed.members) == len(ots.routed.members) {
				for j := range ts.routed.members {
					carrySet(ots.routed.members[j].set, ts.routed.members[j].set)
				}
			}
		}
	}
}

// carrySet gives to the signatures of from, when both hold the same records.
func carrySet(from, to *rrset) {
	if from == nil || to == nil || from.ttl != to.ttl || !bytes.Equal(from.wire, to.wire) {
		return
	}
	if sg := from.sig.Load(); sg != nil {
		to.sig.Store(sg)
	}
}

// sameSigners says whether two builds sign with the same keys for the same jobs.
func sameSigners(a, b *zoneSigning) bool {
	same := func(x, y []*dnssec.Key) bool {
		return slices.EqualFunc(x, y, func(k, l *dnssec.Key) bool {
			return k.ID == l.ID && k.KeyTag() == l.KeyTag() && k.DNSKEY.Algorithm == l.DNSKEY.Algorithm
		})
	}
	return same(a.keySigners, b.keySigners) && same(a.zoneSigners, b.zoneSigners)
}
