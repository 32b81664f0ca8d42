//go:build integration

package dnsserver

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/pkg/dnssec"
	"github.com/dnspolicy/dnspolicy-controller/test/bind"
)

// TestDigDNSSEC reads signed answers with Debian's dig +dnssec.
func TestDigDNSSEC(t *testing.T) {
	ks := signingKeys(t, "ksk+zsk", dnssec.ECDSAP256SHA256)
	s := signedServer(t, ks, nil, writeGeoDB(t))
	t.Run("positive answer", func(t *testing.T) {
		r := dig(t, s, "+dnssec", "www.example.com", "A")
		if r.status != "NOERROR" || !slices.Contains(r.answer, "www.example.com. A 192.0.2.10") || len(r.answer) != 3 ||
			!strings.HasPrefix(r.answer[2], "www.example.com. RRSIG A 13 3 60 ") {
			t.Errorf("%q\n%s", r.answer, r.out)
		}
	})
	t.Run("without DO", func(t *testing.T) {
		if r := dig(t, s, "www.example.com", "A"); len(r.answer) != 2 || strings.Contains(r.out, "RRSIG") {
			t.Errorf("%q\n%s", r.answer, r.out)
		}
	})
	t.Run("DNSKEY", func(t *testing.T) {
		r := dig(t, s, "+dnssec", "example.com", "DNSKEY")
		keys, sigs := 0, 0
		for _, a := range r.answer {
			keys += strings.Count(a, " DNSKEY 25")
			sigs += strings.Count(a, " RRSIG DNSKEY 13 2 ")
		}
		if keys != 2 || sigs != 1 {
			t.Errorf("%d keys, %d signatures (want 2 and the KSK's)\n%s", keys, sigs, r.out)
		}
	})
	t.Run("compact NXDOMAIN", func(t *testing.T) {
		r := dig(t, s, "+dnssec", "nope.example.com", "A")
		if r.status != "NOERROR" || r.counts["ANSWER"] != 0 || r.counts["AUTHORITY"] != 4 ||
			!strings.Contains(r.out, "nope.example.com.\t60\tIN\tNSEC\t\\000.nope.example.com. RRSIG NSEC TYPE128") {
			t.Errorf("%+v\n%s", r, r.out)
		}
	})
	t.Run("geo answer signed", func(t *testing.T) {
		r := dig(t, s, "+dnssec", "api.example.com", "A", "+subnet=133.1.2.0/24")
		var sigs int
		for _, a := range r.answer {
			if strings.Contains(a, " RRSIG ") {
				sigs++
			}
		}
		if len(r.answer) != 8 || sigs != 4 || !strings.Contains(r.out, "198.51.100.4") {
			t.Errorf("%q\n%s", r.answer, r.out)
		}
	})
}

// TestDelvValidates has BIND's delv validate our answers from a trust anchor for the zone's KSK:
// positive, wildcard, geo, NODATA and compact NXDOMAIN answers, both algorithms.
func TestDelvValidates(t *testing.T) {
	bin := bind.Tool(t, "delv")
	for _, alg := range []uint8{dnssec.ECDSAP256SHA256, dnssec.ED25519} {
		t.Run(fmt.Sprint("algorithm ", alg), func(t *testing.T) {
			ks := signingKeys(t, "ksk+zsk", alg)
			s := signedServer(t, ks, nil, writeGeoDB(t))
			ksk := ks.KeySigners()[0].DNSKEY
			anchors := filepath.Join(t.TempDir(), "anchors.conf")
			if err := os.WriteFile(anchors, fmt.Appendf(nil, "trust-anchors {\n  example.com. static-key %d %d %d %q;\n};\n",
				ksk.Flags, ksk.Protocol, ksk.Algorithm, ksk.PublicKey), 0o600); err != nil {
				t.Fatal(err)
			}
			ap := s.Addr()
			for _, q := range []struct{ name, qtype, want string }{
				{"www.example.com", "A", "; fully validated"},
				{"x.wild.example.com", "A", "; fully validated"},
				{"api.example.com", "A", "; fully validated"},
				{"www.example.com", "TXT", "; negative response, fully validated"},
				{"nope.example.com", "A", "; negative response, fully validated"},
				{"b.c.example.com", "A", "; negative response, fully validated"},
			} {
				out, err := exec.Command(bin, "@"+ap.Addr().String(), "-p", strconv.Itoa(int(ap.Port())), "-a", anchors,
					"+root=example.com", q.name, q.qtype).CombinedOutput()
				if err != nil || !strings.Contains(string(out), q.want) {
					t.Errorf("delv %s %s: %v, want %q\n%s", q.name, q.qtype, err, q.want, out)
				}
			}
		})
	}
}
