package dnsserver

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
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
	sigLifetime = 14 * 24 * time.Hour
	sigRefresh  = 7 * 24 * time.Hour
	sigBucket   = 24 * time.Hour
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

// size is what the entry costs the cache: its wire, its key and the bookkeeping around them.
func (sg *signed) size(key int) int {
	n := key + len(sg.rrsig.wire) + 2*len(sg.rrsig.starts) + 160
	if sg.nsec != nil {
		n += len(sg.nsec.wire) + 2*len(sg.nsec.starts) + 64
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
		keySigners:  ks.KeySigners(),
		zoneSigners: ks.ZoneSigners(),
		nsecTTL:     min(soa.Hdr.Ttl, soa.Minttl),
	}
	return nil
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
// when it is made again. Time is cut into day-long buckets whose boundaries are shifted per set by
// a hash of zone, owner and type; inception and expiration are the bucket's start moved by a hash
// that adds the bucket. So replicas signing the same set in the same bucket agree to the second,
// and the zone's sets reach their refresh windows spread over a day rather than all at once.
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
	exp := start + int64(sigLifetime/time.Second) + int64((jitter>>32)%uint64(bucket))
	return uint32(inc), uint32(exp), exp - int64(sigRefresh/time.Second)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// sign makes the RRSIGs of a set at owner (a lower-cased wire name): one per key of the set's
// signers, so a key rollover's old and new keys both sign while they overlap. Nil when the set
// cannot be signed (logged: the answer goes out without signatures, which validators reject, rather
// than not at all).
func (z *zoneSigning) sign(s *rrset, owner []byte, now int64) *signed {
	rrs, err := s.records(owner)
	if err != nil || len(rrs) == 0 {
		z.log.Error(err, "decoding a record set to sign", "zone", z.origin)
		return nil
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
			return nil
		}
		sigs = append(sigs, sig)
	}
	set, err := encodeSet(z.origin, sigs)
	if err != nil {
		z.log.Error(err, "encoding signatures", "zone", z.origin)
		return nil
	}
	z.stats.signatures.Add(uint64(len(sigs)))
	return &signed{rrsig: set, refresh: refresh}
}

// denial makes the NSEC of compact denial (RFC 9824) at owner, a lower-cased wire name, with its
// signatures: the name exists with the given types, and the next name is its immediate successor
// ("\000.<owner>"), so the NSEC covers no other name and nothing can be walked.
func (z *zoneSigning) denial(owner []byte, types []uint16, now int64) *signed {
	name, _, err := dns.UnpackDomainName(owner, 0)
	if err != nil {
		return nil
	}
	nsec := &dns.NSEC{Hdr: header(name, dns.TypeNSEC, z.nsecTTL), NextDomain: successor(name, owner), TypeBitMap: types}
	set, err := encodeSet(z.origin, []dns.RR{nsec})
	if err != nil {
		z.log.Error(err, "encoding a denial", "zone", z.origin)
		return nil
	}
	sg := z.sign(set, owner, now)
	if sg == nil {
		return nil
	}
	sg.nsec = set
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
			if sg = z.sign(s, owner, now); sg == nil {
				return rdata
			}
			s.sig.Store(sg)
		}
	} else {
		key := r.dynKey(dynWildcard, unsafe.Pointer(s), owner)
		if sg = z.dynamic.get(key, now); sg == nil {
			if sg = z.sign(s, owner, now); sg == nil {
				return rdata
			}
			z.dynamic.put(key, sg, z.stats)
		}
	}
	r.putSet(sg.rrsig, ownerPos, sec)
	return rdata
}

// putProof appends the signed NSEC saying what the name at ownerPos (owner, lower-cased wire)
// holds, to the authority section. n is its node; nil for a name that does not exist (NXNAME).
// wild says the name was synthesised from the wildcard node n.
func (r *responder) putProof(n *node, owner []byte, ownerPos int, wild bool) {
	z := r.sign
	if z == nil || r.overflow {
		return
	}
	now := r.clock()
	var sg *signed
	switch {
	case n != nil && !wild:
		if sg = n.proof.Load(); sg == nil || now >= sg.refresh {
			if sg = z.denial(owner, n.types(), now); sg == nil {
				return
			}
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
		if sg = z.denial(owner, types, now); sg == nil {
			return
		}
		z.dynamic.put(key, sg, z.stats)
	}
	r.putSet(sg.nsec, ownerPos, 1)
	r.putSet(sg.rrsig, ownerPos, 1)
}

// sigCache holds the signed entries that depend on the query name, within a byte bound: a flood of
// random names evicts entries rather than growing memory. It is split in shards, each under its own
// lock, held only for a map lookup or insert; signing happens outside it, so a miss never stalls
// other answers (two concurrent misses may both sign; either result is kept).
type sigCache struct {
	shards   [sigShards]sigShard
	maxShard int
}

const sigShards = 16

// DefaultDNSSECCacheBytes bounds each signed zone's cache of name-dependent signatures.
const DefaultDNSSECCacheBytes = 16 << 20

type sigShard struct {
	mu    sync.Mutex
	m     map[string]*signed
	bytes int
}

func newSigCache(maxBytes int) *sigCache {
	c := &sigCache{maxShard: max(maxBytes/sigShards, 1)}
	for i := range c.shards {
		c.shards[i].m = map[string]*signed{}
	}
	return c
}

func (c *sigCache) shard(key []byte) *sigShard {
	h := uint32(2166136261)
	for _, b := range key {
		h = (h ^ uint32(b)) * 16777619
	}
	return &c.shards[h%sigShards]
}

// get returns the entry for key, or nil when there is none or it is due for refresh.
func (c *sigCache) get(key []byte, now int64) *signed {
	sh := c.shard(key)
	sh.mu.Lock()
	sg := sh.m[string(key)]
	sh.mu.Unlock()
	if sg == nil || now >= sg.refresh {
		return nil
	}
	return sg
}

// put adds an entry, evicting others until the shard is within its share of the bound. Go's map
// iteration starts at a random place, so what is evicted is a random entry: cheap, and under a
// flood the flood's own entries are the ones most likely to go.
func (c *sigCache) put(key []byte, sg *signed, st *zoneStats) {
	sh := c.shard(key)
	size := sg.size(len(key))
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if old := sh.m[string(key)]; old != nil {
		sh.bytes -= old.size(len(key))
	}
	sh.m[string(key)] = sg
	sh.bytes += size
	for sh.bytes > c.maxShard && len(sh.m) > 1 {
		for k, v := range sh.m {
			if k == string(key) {
				continue
			}
			delete(sh.m, k)
			sh.bytes -= v.size(len(k))
			st.sigEvictions.Add(1)
			break
		}
	}
}

// usage counts the cache's entries and bytes.
func (c *sigCache) usage() (entries, bytes int) {
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		entries += len(sh.m)
		bytes += sh.bytes
		sh.mu.Unlock()
	}
	return entries, bytes
}
