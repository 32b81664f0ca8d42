package dnssec

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// SecretType is the type of the Secret holding a zone's keys.
const SecretType = "dnspolicy.io/dnssec-keys"

// StateKey is the Secret key of the keyring's public part: each key's ID, role, state, DNSKEY and
// times, as JSON. Each key's private half is at "<ID>.private", PKCS#8 in PEM, the form openssl,
// Go and most HSM tools read.
const StateKey = "keys.json"

const privateSuffix = ".private"

// Keyring is a zone's keys with the times the rollover state machine needs: what the zone's Secret
// holds, read on every pass and written when a rollover moves.
type Keyring struct {
	// Zone is the zone's name, fully qualified and lower case.
	Zone string
	Keys []Key
	// Times are each key's times, by key ID.
	Times map[string]KeyTimes
}

// KeyTimes are when a key's rollover events happened, as the controller's clock saw them.
type KeyTimes struct {
	// Changed is when the key entered its current state.
	Changed time.Time `json:"changed"`
	// DSSeen is when the parent was first seen holding a DS for the key, while the key waited for
	// it; zero when it was not (or not looked for).
	DSSeen time.Time `json:"dsSeen,omitzero"`
}

// KeySet is the keys as the server signs with them.
func (r *Keyring) KeySet() *KeySet { return &KeySet{Keys: slices.Clone(r.Keys)} }

// stored is the JSON of StateKey.
type stored struct {
	Zone string      `json:"zone"`
	Keys []storedKey `json:"keys"`
}

type storedKey struct {
	ID     string `json:"id"`
	Role   Role   `json:"role"`
	State  State  `json:"state"`
	WantDS bool   `json:"wantDS,omitempty"`
	// DNSKEY is the key's DNSKEY record in zone-file form: public, and checked against the private
	// half when read, so a Secret whose halves were mixed up is refused.
	DNSKEY string `json:"dnskey"`
	KeyTimes
}

// keyIDPattern is what a key ID may be: a Secret's data key is "<ID>.private", and Secret data keys
// allow only these characters.
var keyIDPattern = regexp.MustCompile(`^[a-zA-Z0-9][-_a-zA-Z0-9]*$`)

// Marshal is the Secret data of a keyring. Errors name key IDs, never key material.
func Marshal(r Keyring) (map[string][]byte, error) {
	out := map[string][]byte{}
	st := stored{Zone: dns.CanonicalName(r.Zone)}
	for i := range r.Keys {
		k := &r.Keys[i]
		if !keyIDPattern.MatchString(k.ID) {
			return nil, fmt.Errorf("key ID %q: only letters, digits, - and _", k.ID)
		}
		if k.DNSKEY == nil {
			return nil, fmt.Errorf("key %s has no DNSKEY", k.ID)
		}
		if _, dup := out[k.ID+privateSuffix]; dup {
			return nil, fmt.Errorf("key ID %s is used twice", k.ID)
		}
		if k.Signer != nil {
			der, err := x509.MarshalPKCS8PrivateKey(k.Signer)
			if err != nil {
				return nil, fmt.Errorf("key %s: the private key cannot be written as PKCS#8", k.ID)
			}
			out[k.ID+privateSuffix] = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
		} else if k.State != Removed {
			return nil, fmt.Errorf("key %s has no private key", k.ID)
		}
		st.Keys = append(st.Keys, storedKey{ID: k.ID, Role: k.Role, State: k.State, WantDS: k.WantDS,
			DNSKEY: k.DNSKEY.String(), KeyTimes: r.Times[k.ID]})
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return nil, err
	}
	out[StateKey] = append(b, '\n')
	return out, nil
}

// Parse reads a keyring from the Secret data of zone. Every key must be whole: a DNSKEY of its
// zone and of an algorithm we sign with, a role and state we know, and (unless removed) a private
// key matching the DNSKEY. Errors name the key ID and what is wrong, never key material.
func Parse(zone string, data map[string][]byte) (Keyring, error) {
	zone = dns.CanonicalName(zone)
	r := Keyring{Zone: zone, Times: map[string]KeyTimes{}}
	raw, ok := data[StateKey]
	if !ok {
		return r, fmt.Errorf("no %s", StateKey)
	}
	var st stored
	if err := json.Unmarshal(raw, &st); err != nil {
		return r, fmt.Errorf("%s is not the keys' JSON: %w", StateKey, err)
	}
	if st.Zone != "" && dns.CanonicalName(st.Zone) != zone {
		return r, fmt.Errorf("%s holds the keys of zone %s, not %s", StateKey, st.Zone, zone)
	}
	seen := map[string]bool{}
	for _, sk := range st.Keys {
		k, err := parseKey(zone, sk, data[sk.ID+privateSuffix])
		if err != nil {
			return r, err
		}
		if seen[k.ID] {
			return r, fmt.Errorf("key %s is listed twice", k.ID)
		}
		seen[k.ID] = true
		r.Keys = append(r.Keys, k)
		r.Times[k.ID] = sk.KeyTimes
	}
	return r, nil
}

func parseKey(zone string, sk storedKey, private []byte) (Key, error) {
	if !keyIDPattern.MatchString(sk.ID) {
		return Key{}, fmt.Errorf("key ID %q: only letters, digits, - and _", sk.ID)
	}
	k := Key{ID: sk.ID, Role: sk.Role, State: sk.State, WantDS: sk.WantDS}
	if !slices.Contains([]Role{KSK, ZSK, CSK}, k.Role) {
		return k, fmt.Errorf("key %s: role %q is not ksk, zsk or csk", k.ID, k.Role)
	}
	if !slices.Contains([]State{Published, Active, Retired, Removed}, k.State) {
		return k, fmt.Errorf("key %s: state %q is not published, active, retired or removed", k.ID, k.State)
	}
	rr, err := dns.NewRR(sk.DNSKEY)
	if err != nil || rr == nil {
		return k, fmt.Errorf("key %s: dnskey is not a DNSKEY record", k.ID)
	}
	dk, ok := rr.(*dns.DNSKEY)
	if !ok {
		return k, fmt.Errorf("key %s: dnskey is a %s record, not a DNSKEY", k.ID, dns.TypeToString[rr.Header().Rrtype])
	}
	if dns.CanonicalName(dk.Hdr.Name) != zone {
		return k, fmt.Errorf("key %s: its DNSKEY is of %s, not of zone %s", k.ID, dk.Hdr.Name, zone)
	}
	if dk.Algorithm != ECDSAP256SHA256 && dk.Algorithm != ED25519 {
		return k, fmt.Errorf("key %s: algorithm %d is not one we sign with (13 or 15)", k.ID, dk.Algorithm)
	}
	if sep := dk.Flags&1 == 1; sep != (k.Role != ZSK) || dk.Flags&256 == 0 {
		return k, fmt.Errorf("key %s: DNSKEY flags %d do not fit role %s (256 for a ZSK, 257 for a KSK or CSK)", k.ID, dk.Flags, k.Role)
	}
	k.DNSKEY = dk
	if len(private) == 0 {
		if k.State != Removed {
			return k, fmt.Errorf("key %s: no private key (%s%s)", k.ID, k.ID, privateSuffix)
		}
		return k, nil
	}
	signer, err := parsePrivate(private)
	if err != nil {
		return k, fmt.Errorf("key %s: %s%s: %w", k.ID, k.ID, privateSuffix, err)
	}
	if !matches(dk, signer.Public()) {
		return k, fmt.Errorf("key %s: the private key in %s%s is not the one of its DNSKEY", k.ID, k.ID, privateSuffix)
	}
	k.Signer = signer
	return k, nil
}

// parsePrivate reads a PKCS#8 PEM private key. Its errors never quote the input.
func parsePrivate(b []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("not a PEM block of type PRIVATE KEY (PKCS#8)")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("not a PKCS#8 private key")
	}
	switch s := key.(type) {
	case *ecdsa.PrivateKey:
		return s, nil
	case ed25519.PrivateKey:
		return s, nil
	}
	return nil, fmt.Errorf("a %T, not an ECDSA or Ed25519 key", key)
}

// matches says whether pub is the public key a DNSKEY carries (RFC 6605 3: X and Y of the point;
// RFC 8080 3: the Ed25519 key itself).
func matches(dk *dns.DNSKEY, pub crypto.PublicKey) bool {
	var raw []byte
	switch p := pub.(type) {
	case *ecdsa.PublicKey:
		b, err := p.Bytes()
		if err != nil || dk.Algorithm != ECDSAP256SHA256 || len(b) != 65 {
			return false
		}
		raw = b[1:] // after the uncompressed point's 0x04
	case ed25519.PublicKey:
		if dk.Algorithm != ED25519 {
			return false
		}
		raw = p
	default:
		return false
	}
	return dk.PublicKey == base64.StdEncoding.EncodeToString(raw)
}

// Describe says what each key is and does, in a fixed order and without times, so that a status
// built from it changes only when a key's state does.
func (r *Keyring) Describe() string {
	var parts []string
	for i := range r.Keys {
		k := &r.Keys[i]
		s := fmt.Sprintf("%s (%s, tag %d, %s", k.ID, strings.ToUpper(string(k.Role)), k.KeyTag(), k.State)
		if k.WantDS && k.State != Removed {
			s += ", DS wanted"
		}
		parts = append(parts, s+")")
	}
	return strings.Join(parts, ", ")
}
