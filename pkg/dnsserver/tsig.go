package dnsserver

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/miekg/dns"
)

// maxFudge caps the time a signed message is accepted for, either side of its signing time, whatever
// fudge the message itself claims: a captured signed request can be replayed only within it.
const maxFudge = 300

// TSIGKey is a shared secret that signs zone transfers and NOTIFY messages (RFC 8945).
type TSIGKey struct {
	// Name is the key's name, as both peers know it.
	Name string
	// Algorithm is hmac-sha256, hmac-sha384 or hmac-sha512; empty means hmac-sha256.
	Algorithm string
	// Secret is the key, base64-encoded, as tsig-keygen prints it.
	Secret string
}

// tsigAlgorithms are the algorithms accepted, with their MAC sizes. SHA-1 and SHA-224 are left out on
// purpose (RFC 8945 6: SHA-1 is deprecated; nobody deploys SHA-224).
var tsigAlgorithms = map[string]int{dns.HmacSHA256: 32, dns.HmacSHA384: 48, dns.HmacSHA512: 64}

// tsigKey is a validated key.
type tsigKey struct {
	name      string // canonical
	algorithm string // canonical, e.g. "hmac-sha256."
	secret    string
	// reserve is room to keep in an answer for the TSIG record this key signs it with.
	reserve int
}

// maxTSIGReserve bounds tsigKey.reserve: the longest key name, hmac-sha512.
const maxTSIGReserve = 255 + tsigFixed + 64

// tsigFixed is the size of a TSIG record apart from its owner name and MAC: type, class, TTL and
// length (10), the algorithm name (at most 13), time (6), fudge, MAC size, original ID, error and
// other length (2 each), and room for a 6-byte other data (BADTIME).
const tsigFixed = 10 + 13 + 6 + 2 + 2 + 2 + 2 + 2 + 6

func newTSIGKey(k TSIGKey) (*tsigKey, error) {
	name, err := canonicalName(k.Name)
	if err != nil {
		return nil, fmt.Errorf("TSIG key %q: %w", k.Name, err)
	}
	alg := dns.CanonicalName(k.Algorithm)
	if k.Algorithm == "" {
		alg = dns.HmacSHA256
	}
	mac, ok := tsigAlgorithms[alg]
	if !ok {
		return nil, fmt.Errorf("TSIG key %q: algorithm %q is not one of hmac-sha256, hmac-sha384, hmac-sha512", k.Name, k.Algorithm)
	}
	raw, err := base64.StdEncoding.DecodeString(k.Secret)
	if err != nil {
		return nil, fmt.Errorf("TSIG key %q: the secret is not base64", k.Name)
	}
	if len(raw) < 16 {
		return nil, fmt.Errorf("TSIG key %q: the secret has %d bytes; use at least 16 (tsig-keygen makes %d)", k.Name, len(raw), mac)
	}
	return &tsigKey{name: name, algorithm: alg, secret: k.Secret, reserve: len(name) + 1 + tsigFixed + mac}, nil
}

// ParseTSIGKeys reads BIND key statements, the format tsig-keygen prints and named.conf includes:
//
//	key "xfr" { algorithm hmac-sha256; secret "base64..."; };
//
// Comments (#, //, /* */) are allowed. It is how keys reach the server from a file or a Secret, so
// that no secret is ever a command-line flag visible in a pod spec.
func ParseTSIGKeys(text string) ([]TSIGKey, error) {
	toks, err := tokenize(text)
	if err != nil {
		return nil, err
	}
	var keys []TSIGKey
	seen := map[string]bool{}
	next := func() string {
		if len(toks) == 0 {
			return ""
		}
		t := toks[0]
		toks = toks[1:]
		return t
	}
	expect := func(want string) error {
		if got := next(); got != want {
			return fmt.Errorf("TSIG keys: expected %q, found %q", want, got)
		}
		return nil
	}
	for len(toks) > 0 {
		if err := expect("key"); err != nil {
			return nil, err
		}
		k := TSIGKey{Name: strings.Trim(next(), `"`)}
		if k.Name == "" || k.Name == "{" {
			return nil, errors.New("TSIG keys: a key statement needs a name")
		}
		if err := expect("{"); err != nil {
			return nil, err
		}
		for len(toks) > 0 && toks[0] != "}" {
			field, value := next(), strings.Trim(next(), `"`)
			switch field {
			case "algorithm":
				k.Algorithm = value
			case "secret":
				k.Secret = value
			default:
				return nil, fmt.Errorf("TSIG key %q: unknown field %q", k.Name, field)
			}
			if err := expect(";"); err != nil {
				return nil, fmt.Errorf("key %q: %w", k.Name, err)
			}
		}
		if err := expect("}"); err != nil {
			return nil, err
		}
		if err := expect(";"); err != nil {
			return nil, err
		}
		if k.Secret == "" {
			return nil, fmt.Errorf("TSIG key %q has no secret", k.Name)
		}
		if _, err := newTSIGKey(k); err != nil {
			return nil, err
		}
		if seen[dns.CanonicalName(k.Name)] {
			return nil, fmt.Errorf("TSIG key %q is defined twice", k.Name)
		}
		seen[dns.CanonicalName(k.Name)] = true
		keys = append(keys, k)
	}
	return keys, nil
}

func tokenize(text string) ([]string, error) {
	var toks []string
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case unicode.IsSpace(rune(c)):
			i++
		case c == '#' || strings.HasPrefix(text[i:], "//"):
			for i < len(text) && text[i] != '\n' {
				i++
			}
		case strings.HasPrefix(text[i:], "/*"):
			end := strings.Index(text[i+2:], "*/")
			if end < 0 {
				return nil, errors.New("TSIG keys: unterminated comment")
			}
			i += end + 4
		case c == '{' || c == '}' || c == ';':
			toks = append(toks, string(c))
			i++
		case c == '"':
			end := strings.IndexByte(text[i+1:], '"')
			if end < 0 {
				return nil, errors.New("TSIG keys: unterminated string")
			}
			toks = append(toks, text[i:i+end+2])
			i += end + 2
		default:
			j := i
			for j < len(text) && !unicode.IsSpace(rune(text[j])) && !strings.ContainsRune("{};\"", rune(text[j])) {
				j++
			}
			toks = append(toks, text[i:j])
			i = j
		}
	}
	return toks, nil
}

// tsigSigner signs the answers to a query whose TSIG verified.
type tsigSigner struct {
	key *tsigKey
	mac string
}

// handleSigned answers a query carrying TSIG. The query must verify against one of our keys with
// the key's algorithm, signed within min(its fudge, 300 s) of our clock; the answer is signed with
// the same key. A query that does not verify is answered NOTAUTH with the TSIG error (RFC 8945 5.2),
// so the peer learns why.
func (s *Server) handleSigned(r *responder) []byte {
	req := new(dns.Msg)
	if err := req.Unpack(r.req.msg); err != nil {
		return r.formErr()
	}
	t := req.IsTsig()
	if t == nil {
		return r.formErr()
	}
	key := s.keys[dns.CanonicalName(t.Hdr.Name)]
	if key == nil || dns.CanonicalName(t.Algorithm) != key.algorithm {
		s.stats.tsigFailed.Add(1)
		return s.tsigError(req, t, dns.RcodeBadKey, nil)
	}
	if err := dns.TsigVerify(r.req.msg, key.secret, "", false); err != nil && !errors.Is(err, dns.ErrTime) {
		s.stats.tsigFailed.Add(1)
		return s.tsigError(req, t, dns.RcodeBadSig, nil)
	} else if err != nil || !s.inTime(t) {
		s.stats.tsigFailed.Add(1)
		return s.tsigError(req, t, dns.RcodeBadTime, key)
	}
	signer := &tsigSigner{key: key, mac: t.MAC}
	out := r.answer(signer)
	if r.xfr != nil {
		return nil
	}
	signed, err := s.sign(signer, out)
	if err != nil {
		s.log.Error(err, "signing an answer", "key", key.name)
		return nil
	}
	return signed
}

// inTime checks a verified TSIG's time against our clock, with the fudge capped at maxFudge.
func (s *Server) inTime(t *dns.TSIG) bool {
	now := s.now().Unix()
	fudge := int64(min(t.Fudge, maxFudge))
	signed := int64(t.TimeSigned)
	return signed >= now-fudge && signed <= now+fudge
}

// sign adds a TSIG record to a packed answer.
func (s *Server) sign(t *tsigSigner, out []byte) ([]byte, error) {
	m := new(dns.Msg)
	if err := m.Unpack(out); err != nil {
		return nil, err
	}
	m.Compress = true
	m.SetTsig(t.key.name, t.key.algorithm, maxFudge, s.now().Unix())
	signed, _, err := dns.TsigGenerate(m, t.key.secret, t.mac, false)
	return signed, err
}

func (s *Server) tsigError(req *dns.Msg, t *dns.TSIG, code uint16, key *tsigKey) []byte {
	resp := new(dns.Msg)
	resp.SetRcode(req, dns.RcodeNotAuth)
	resp.Extra = nil
	// Fqdn: a garbled algorithm unpacks as "", which miekg/dns would pack with a wrong length.
	reply := &dns.TSIG{Hdr: dns.RR_Header{Name: dns.Fqdn(t.Hdr.Name), Rrtype: dns.TypeTSIG, Class: dns.ClassANY},
		Algorithm: dns.Fqdn(t.Algorithm), Fudge: t.Fudge, OrigId: req.Id, Error: code, TimeSigned: t.TimeSigned}
	secret, mac := "", ""
	if code == dns.RcodeBadTime && key != nil {
		// The peer's clock is off (or the request is a replay): tell it ours, signed (RFC 8945 5.2.3).
		var now [8]byte
		binary.BigEndian.PutUint64(now[:], uint64(s.now().Unix()))
		reply.OtherLen = 6
		reply.OtherData = fmt.Sprintf("%x", now[2:])
		secret, mac = key.secret, t.MAC
	}
	resp.Extra = append(resp.Extra, reply)
	out, _, err := dns.TsigGenerate(resp, secret, mac, false)
	if err != nil {
		return nil
	}
	return out
}
