// Package dnssec holds a zone's signing keys as the embedded DNS server uses them: which keys the
// zone publishes in its DNSKEY set, which sign the DNSKEY set (and CDS/CDNSKEY), which sign the rest
// of the zone, and which the parent should hold a DS for. The server (pkg/dnsserver) signs with a
// KeySet; the controller that reads keys from their Secret and moves them through rollovers builds
// it. The package computes only: no clock, no files, no cluster.
package dnssec

import (
	"crypto"
	"fmt"
	"strings"

	"github.com/miekg/dns"
)

// Algorithms we sign with: ECDSA P-256 with SHA-256 (13) and Ed25519 (15), the two RFC 8624 says to
// sign with and every validating resolver supports.
const (
	ECDSAP256SHA256 = dns.ECDSAP256SHA256
	ED25519         = dns.ED25519
)

// Role is what a key signs.
type Role string

const (
	// KSK signs the DNSKEY set (and CDS/CDNSKEY); the parent's DS points at it.
	KSK Role = "ksk"
	// ZSK signs every other record set.
	ZSK Role = "zsk"
	// CSK, a combined signing key, does both.
	CSK Role = "csk"
)

// State is where a key is in its life. Rollovers move keys through these in order; a key is never
// made active before it has been published for at least the DNSKEY set's TTL plus propagation.
type State string

const (
	// Published: in the DNSKEY set, signing nothing yet (a ZSK pre-published before it signs, a new
	// KSK whose DS the parent does not hold yet).
	Published State = "published"
	// Active: in the DNSKEY set and signing what its role signs.
	Active State = "active"
	// Retired: still in the DNSKEY set (cached signatures may still point at it) but signing nothing.
	Retired State = "retired"
	// Removed: gone from the zone; kept only until the Secret forgets it.
	Removed State = "removed"
)

// Key is one signing key of a zone.
type Key struct {
	// ID names the key in its Secret and in status; stable for the key's life.
	ID     string
	Role   Role
	State  State
	DNSKEY *dns.DNSKEY
	Signer crypto.Signer
	// WantDS says the parent should hold a DS for this key: it is listed in the CDS and CDNSKEY sets
	// (RFC 7344). A KSK's double-DS rollover sets it on the new key before the old one goes.
	WantDS bool
}

// KeyTag is the key's tag, as DS and RRSIG records name it.
func (k *Key) KeyTag() uint16 { return k.DNSKEY.KeyTag() }

// DS is the DS record for the parent, with a SHA-256 digest (RFC 4509), the one RFC 8624 says to use.
func (k *Key) DS() *dns.DS { return k.DNSKEY.ToDS(dns.SHA256) }

// signsKeys and signsZone say what an active key signs.
func (k *Key) signsKeys() bool { return k.State == Active && (k.Role == KSK || k.Role == CSK) }
func (k *Key) signsZone() bool { return k.State == Active && (k.Role == ZSK || k.Role == CSK) }

// KeySet is a zone's keys. The zone is signed when the set has at least one active key for each job
// (see Valid).
type KeySet struct {
	Keys []Key
}

// Published is the DNSKEY set: every key not removed.
func (s *KeySet) Published() []*Key { return s.filter(func(k *Key) bool { return k.State != Removed }) }

// KeySigners sign the DNSKEY, CDS and CDNSKEY sets.
func (s *KeySet) KeySigners() []*Key { return s.filter((*Key).signsKeys) }

// ZoneSigners sign every other record set.
func (s *KeySet) ZoneSigners() []*Key { return s.filter((*Key).signsZone) }

// WantDS are the keys the CDS and CDNSKEY sets list, and the DS records the parent should hold.
func (s *KeySet) WantDS() []*Key {
	return s.filter(func(k *Key) bool { return k.WantDS && k.State != Removed })
}

func (s *KeySet) filter(keep func(*Key) bool) []*Key {
	var out []*Key
	for i := range s.Keys {
		if keep(&s.Keys[i]) {
			out = append(out, &s.Keys[i])
		}
	}
	return out
}

// Valid says whether the set can sign a zone: some active key signs the DNSKEY set, some signs the
// rest, every published key has a DNSKEY of the algorithms we sign with, and every key that signs
// has its private half. A set that fails is not served signed: the server keeps the zone as it was.
func (s *KeySet) Valid() error {
	if len(s.KeySigners()) == 0 {
		return fmt.Errorf("no active KSK or CSK signs the DNSKEY set")
	}
	if len(s.ZoneSigners()) == 0 {
		return fmt.Errorf("no active ZSK or CSK signs the zone")
	}
	for i := range s.Keys {
		k := &s.Keys[i]
		if k.State == Removed {
			continue
		}
		if k.DNSKEY == nil {
			return fmt.Errorf("key %s has no DNSKEY", k.ID)
		}
		if a := k.DNSKEY.Algorithm; a != ECDSAP256SHA256 && a != ED25519 {
			return fmt.Errorf("key %s: algorithm %d is not one we sign with (13 or 15)", k.ID, a)
		}
		if k.State == Active && k.Signer == nil {
			return fmt.Errorf("key %s is active but has no private key", k.ID)
		}
	}
	return nil
}

// Generate makes a new key for zone with the given algorithm and role, in state Published. Its ID
// is its role, algorithm and key tag (e.g. "csk-13-12345"), unique within a zone's Secret.
func Generate(zone string, algorithm uint8, role Role) (Key, error) {
	var flags uint16 = 256 // ZONE
	if role == KSK || role == CSK {
		flags |= 1 // SEP (RFC 4034 2.1.1): what the parent's DS points at
	}
	pub := &dns.DNSKEY{
		Hdr:       dns.RR_Header{Name: dns.Fqdn(strings.ToLower(zone)), Rrtype: dns.TypeDNSKEY, Class: dns.ClassINET, Ttl: 3600},
		Flags:     flags,
		Protocol:  3,
		Algorithm: algorithm,
	}
	if algorithm != ECDSAP256SHA256 && algorithm != ED25519 {
		return Key{}, fmt.Errorf("algorithm %d: we sign with 13 (ECDSAP256SHA256) or 15 (ED25519)", algorithm)
	}
	// Both algorithms have one key size, 256 bits.
	priv, err := pub.Generate(256)
	if err != nil {
		return Key{}, err
	}
	signer, ok := priv.(crypto.Signer)
	if !ok {
		return Key{}, fmt.Errorf("algorithm %d: generated key cannot sign", algorithm)
	}
	return Key{
		ID:     fmt.Sprintf("%s-%d-%d", role, algorithm, pub.KeyTag()),
		Role:   role,
		State:  Published,
		DNSKEY: pub,
		Signer: signer,
	}, nil
}
