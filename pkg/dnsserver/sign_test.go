package dnsserver

import (
	"crypto"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/pkg/dnssec"
)

// signTime is the clock of the signing tests: signatures depend on it, and replicas given the
// same one must agree.
var signTime = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

// signingKeys makes a key set: "csk" one active CSK; "ksk+zsk" an active KSK and ZSK; "zsk-rollover"
// a KSK and two active ZSKs, as while a ZSK rollover's signatures overlap (plus a published one).
func signingKeys(t testing.TB, shape string, alg uint8) *dnssec.KeySet {
	t.Helper()
	gen := func(role dnssec.Role, state dnssec.State, wantDS bool) dnssec.Key {
		k, err := dnssec.Generate("example.com", alg, role)
		if err != nil {
			t.Fatal(err)
		}
		k.State, k.WantDS = state, wantDS
		return k
	}
	switch shape {
	case "csk":
		return &dnssec.KeySet{Keys: []dnssec.Key{gen(dnssec.CSK, dnssec.Active, true)}}
	case "ksk+zsk":
		return &dnssec.KeySet{Keys: []dnssec.Key{gen(dnssec.KSK, dnssec.Active, true), gen(dnssec.ZSK, dnssec.Active, false)}}
	case "zsk-rollover":
		return &dnssec.KeySet{Keys: []dnssec.Key{gen(dnssec.KSK, dnssec.Active, true), gen(dnssec.ZSK, dnssec.Active, false),
			gen(dnssec.ZSK, dnssec.Active, false), gen(dnssec.ZSK, dnssec.Published, false)}}
	}
	t.Fatalf("no key shape %q", shape)
	return nil
}

func signedZone(ks *dnssec.KeySet) ZoneData {
	return ZoneData{Endpoints: exampleZone(), Nameservers: []string{"ns1.example.com", "ns2.example.net"},
		Changed: signTime.Add(-time.Hour), Signing: ks}
}

// signedServer serves example.com signed with ks, at signTime unless now says otherwise.
func signedServer(t testing.TB, ks *dnssec.KeySet, now func() time.Time, geoDB string) *Server {
	t.Helper()
	if now == nil {
		now = func() time.Time { return signTime }
	}
	s := startServer(t, Options{GeoIPDatabase: geoDB, Now: now, Random: seededRandom(5)})
	if st := setZone(t, s, "example.com", signedZone(ks)); len(st.Skipped) != 0 {
		t.Fatalf("skipped: %q", st.Skipped)
	}
	return s
}

func doQuery() queryOpts { return queryOpts{edns: true, do: true} }

// exchangeCO sends a DO query with the Compact Answers OK flag.
func exchangeCO(t testing.TB, s *Server, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.SetEdns0(1232, true)
	m.IsEdns0().SetCo()
	resp, err := dns.Exchange(m, s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// servedKeys asks the server for its DNSKEY set and checks it against ks.
func servedKeys(t testing.TB, s *Server, ks *dnssec.KeySet) map[uint16]*dns.DNSKEY {
	t.Helper()
	m := exchange(t, s, "example.com.", dns.TypeDNSKEY, doQuery())
	keys := map[uint16]*dns.DNSKEY{}
	for _, rr := range m.Answer {
		if k, ok := rr.(*dns.DNSKEY); ok {
			keys[k.KeyTag()] = k
		}
	}
	if len(keys) != len(ks.Published()) {
		t.Fatalf("DNSKEY set has %d keys, want the %d published:\n%v", len(keys), len(ks.Published()), m)
	}
	return keys
}

type setKey struct {
	sec   int
	owner string
	rtype uint16
}

// verifySigned checks every RRSIG of an answer with miekg's Verify against the served keys, and that
// every set that must be signed is, once per key that signs it. Unsigned by design: the NS set of a
// referral and glue. It returns the RRSIGs.
func verifySigned(t testing.TB, m *dns.Msg, keys map[uint16]*dns.DNSKEY, ks *dnssec.KeySet) []*dns.RRSIG {
	t.Helper()
	sets := map[setKey][]dns.RR{}
	sigs := map[setKey][]*dns.RRSIG{}
	var all []*dns.RRSIG
	for sec, rrs := range [][]dns.RR{m.Answer, m.Ns} {
		for _, rr := range rrs {
			owner := strings.ToLower(rr.Header().Name)
			if sig, ok := rr.(*dns.RRSIG); ok {
				k := setKey{sec, owner, sig.TypeCovered}
				sigs[k] = append(sigs[k], sig)
				all = append(all, sig)
				continue
			}
			k := setKey{sec, owner, rr.Header().Rrtype}
			sets[k] = append(sets[k], rr)
		}
	}
	for k, sigs := range sigs {
		if sets[k] == nil {
			t.Errorf("RRSIG for %s %s covers nothing in the answer", k.owner, dns.TypeToString[k.rtype])
		}
		for _, sig := range sigs {
			key := keys[sig.KeyTag]
			if key == nil {
				t.Errorf("RRSIG %s by key %d, not in the DNSKEY set", sig, sig.KeyTag)
				continue
			}
			if err := sig.Verify(key, sets[k]); err != nil {
				t.Errorf("RRSIG %s does not verify over %v: %v", sig, sets[k], err)
			}
			if !sig.ValidityPeriod(signTime) {
				t.Errorf("RRSIG %s not valid at %s", sig, signTime)
			}
			if want := uint8(dns.CountLabel(k.owner)); sig.Labels != want {
				t.Errorf("RRSIG %s: labels %d, want %d (the owner's, as if it existed)", sig, sig.Labels, want)
			}
		}
	}
	for k := range sets {
		if k.sec == 1 && k.rtype == dns.TypeNS {
			continue // a referral's NS set is the child's
		}
		signers := ks.ZoneSigners()
		if signsKeys(k.rtype) {
			signers = ks.KeySigners()
		}
		var tags []uint16
		for _, sig := range sigs[k] {
			tags = append(tags, sig.KeyTag)
		}
		for _, key := range signers {
			if !slices.Contains(tags, key.KeyTag()) {
				t.Errorf("%s %s: no RRSIG by key %s (have %v)", k.owner, dns.TypeToString[k.rtype], key.ID, tags)
			}
		}
		if len(tags) != len(signers) {
			t.Errorf("%s %s: %d RRSIGs, want one per signing key (%d)", k.owner, dns.TypeToString[k.rtype], len(tags), len(signers))
		}
	}
	return all
}

// nsecOf returns the answer's NSEC records in the authority section.
func nsecOf(m *dns.Msg) []*dns.NSEC {
	var out []*dns.NSEC
	for _, rr := range m.Ns {
		if n, ok := rr.(*dns.NSEC); ok {
			out = append(out, n)
		}
	}
	return out
}

// checkDenial checks an answer's one NSEC is a compact denial at owner listing types.
func checkDenial(t testing.TB, m *dns.Msg, owner string, types ...uint16) {
	t.Helper()
	ns := nsecOf(m)
	if len(ns) != 1 {
		t.Fatalf("%d NSEC records, want 1:\n%v", len(ns), m)
	}
	n := ns[0]
	if !strings.EqualFold(n.Hdr.Name, owner) || n.NextDomain != `\000.`+owner {
		t.Errorf("NSEC %s, want owner %s and next \\000.%s", n, owner, owner)
	}
	slices.Sort(types)
	if !slices.Equal(n.TypeBitMap, types) {
		t.Errorf("NSEC bitmap %v, want %v", typeNames(n.TypeBitMap), typeNames(types))
	}
	if n.Hdr.Ttl != soaMinimum {
		t.Errorf("NSEC TTL %d, want min(SOA TTL, SOA MINIMUM) = %d", n.Hdr.Ttl, soaMinimum)
	}
	var soa bool
	for _, rr := range m.Ns {
		soa = soa || rr.Header().Rrtype == dns.TypeSOA
	}
	if !soa {
		t.Errorf("no SOA in the authority section:\n%v", m)
	}
}

func typeNames(ts []uint16) []string {
	var out []string
	for _, t := range ts {
		out = append(out, dns.Type(t).String())
	}
	return out
}

func TestSignedAnswersVerify(t *testing.T) {
	geo := writeGeoDB(t)
	for _, c := range []struct {
		shape string
		alg   uint8
	}{{"csk", dnssec.ECDSAP256SHA256}, {"ksk+zsk", dnssec.ED25519}, {"zsk-rollover", dnssec.ECDSAP256SHA256}} {
		t.Run(fmt.Sprintf("%s alg %d", c.shape, c.alg), func(t *testing.T) {
			ks := signingKeys(t, c.shape, c.alg)
			s := signedServer(t, ks, nil, geo)
			keys := servedKeys(t, s, ks)
			ecs := func(a netip.Addr) queryOpts {
				o := withECS(a, 24)
				o.do = true
				return o
			}
			positive := []struct {
				name  string
				qtype uint16
				o     queryOpts
				want  []string // answer records, without RRSIGs, TTLs dropped
			}{
				{"www.example.com.", dns.TypeA, doQuery(), []string{"www.example.com.\t0\tIN\tA\t192.0.2.10", "www.example.com.\t0\tIN\tA\t192.0.2.11"}},
				{"WWW.Example.com.", dns.TypeAAAA, doQuery(), []string{"WWW.Example.com.\t0\tIN\tAAAA\t2001:db8::10"}},
				{"chain.example.com.", dns.TypeA, doQuery(), nil},
				{"x.wild.example.com.", dns.TypeA, doQuery(), []string{"x.wild.example.com.\t0\tIN\tA\t192.0.2.30"}},
				{"deep.x.alias.example.com.", dns.TypeA, doQuery(), nil},
				{"api.example.com.", dns.TypeA, ecs(clientIE), nil},
				{"api.example.com.", dns.TypeA, ecs(clientUS), nil},
				{"api.example.com.", dns.TypeA, ecs(clientJP), nil},
				{"ie.klb.api.example.com.", dns.TypeCNAME, doQuery(), nil},
				{"example.com.", dns.TypeSOA, doQuery(), nil},
				{"example.com.", dns.TypeNS, doQuery(), nil},
				{"example.com.", dns.TypeDNSKEY, doQuery(), nil},
				{"example.com.", dns.TypeCDS, doQuery(), nil},
				{"example.com.", dns.TypeCDNSKEY, doQuery(), nil},
				{"mail.example.com.", dns.TypeMX, doQuery(), nil},
			}
			for _, q := range positive {
				m := exchange(t, s, q.name, q.qtype, q.o)
				if m.Rcode != dns.RcodeSuccess || !m.Authoritative || len(m.Answer) == 0 {
					t.Errorf("%s %s: %v", q.name, dns.TypeToString[q.qtype], m)
					continue
				}
				sigs := verifySigned(t, m, keys, ks)
				if len(sigs) == 0 {
					t.Errorf("%s %s: no RRSIG", q.name, dns.TypeToString[q.qtype])
				}
				if q.want != nil {
					var got []dns.RR
					for _, rr := range m.Answer {
						if rr.Header().Rrtype != dns.TypeRRSIG {
							got = append(got, rr)
						}
					}
					if g := rrText(got); !slices.Equal(g, q.want) {
						t.Errorf("%s: %q, want %q", q.name, g, q.want)
					}
				}
			}
			// The CNAME chain and the geo answers are the unsigned ones plus signatures.
			if got := cnameTargets(exchange(t, s, "api.example.com.", dns.TypeA, ecs(clientIE))); len(got) < 3 {
				t.Errorf("api for IE: chain %q", got)
			}

			t.Run("CDS lists the keys that want a DS", func(t *testing.T) {
				m := exchange(t, s, "example.com.", dns.TypeCDS, queryOpts{})
				var tags []uint16
				for _, rr := range m.Answer {
					tags = append(tags, rr.(*dns.CDS).KeyTag)
				}
				var want []uint16
				for _, k := range ks.WantDS() {
					want = append(want, k.KeyTag())
				}
				if !slices.Equal(tags, want) {
					t.Errorf("CDS key tags %v, want %v", tags, want)
				}
				if d := m.Answer[0].(*dns.CDS); d.DigestType != dns.SHA256 || !strings.EqualFold(d.Digest, ks.WantDS()[0].DS().Digest) {
					t.Errorf("CDS %s, want SHA-256 digest of %s", d, ks.WantDS()[0].ID)
				}
			})

			t.Run("NODATA", func(t *testing.T) {
				m := exchange(t, s, "www.example.com.", dns.TypeTXT, doQuery())
				if m.Rcode != dns.RcodeSuccess || len(m.Answer) != 0 {
					t.Fatalf("%v", m)
				}
				verifySigned(t, m, keys, ks)
				checkDenial(t, m, "www.example.com.", dns.TypeA, dns.TypeAAAA, dns.TypeRRSIG, dns.TypeNSEC)
			})
			t.Run("the NSEC of a name asked for", func(t *testing.T) {
				// An answer, not a denial: a NODATA whose NSEC lists NSEC would contradict itself.
				m := exchange(t, s, "www.example.com.", dns.TypeNSEC, doQuery())
				if m.Rcode != dns.RcodeSuccess || len(m.Ns) != 0 {
					t.Fatalf("%v", m)
				}
				verifySigned(t, m, keys, ks)
				var nsec *dns.NSEC
				for _, rr := range m.Answer {
					if n, ok := rr.(*dns.NSEC); ok {
						nsec = n
					}
				}
				if nsec == nil || nsec.Hdr.Name != "www.example.com." ||
					!slices.Equal(nsec.TypeBitMap, []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeRRSIG, dns.TypeNSEC}) {
					t.Fatalf("answer %v: want www's NSEC", m.Answer)
				}
			})
			t.Run("NODATA at the apex", func(t *testing.T) {
				m := exchange(t, s, "example.com.", dns.TypeTXT, doQuery())
				verifySigned(t, m, keys, ks)
				want := []uint16{dns.TypeSOA, dns.TypeNS, dns.TypeDNSKEY, dns.TypeCDS, dns.TypeCDNSKEY, dns.TypeRRSIG, dns.TypeNSEC}
				checkDenial(t, m, "example.com.", want...)
			})
			t.Run("NODATA at a wildcard", func(t *testing.T) {
				m := exchange(t, s, "y.wild.example.com.", dns.TypeTXT, doQuery())
				verifySigned(t, m, keys, ks)
				checkDenial(t, m, "y.wild.example.com.", dns.TypeA, dns.TypeRRSIG, dns.TypeNSEC)
			})
			t.Run("empty non-terminal", func(t *testing.T) {
				m := exchange(t, s, "b.c.example.com.", dns.TypeA, doQuery())
				if m.Rcode != dns.RcodeSuccess || len(m.Answer) != 0 {
					t.Fatalf("%v", m)
				}
				verifySigned(t, m, keys, ks)
				checkDenial(t, m, "b.c.example.com.", dns.TypeRRSIG, dns.TypeNSEC)
			})
			t.Run("NXDOMAIN is NOERROR with NXNAME", func(t *testing.T) {
				m := exchange(t, s, "nope.example.com.", dns.TypeA, doQuery())
				if m.Rcode != dns.RcodeSuccess || len(m.Answer) != 0 || !m.Authoritative {
					t.Fatalf("%v", m)
				}
				verifySigned(t, m, keys, ks)
				checkDenial(t, m, "nope.example.com.", dns.TypeRRSIG, dns.TypeNSEC, dns.TypeNXNAME)
				if m.IsEdns0().Co() {
					t.Error("CO set in the answer to a query without it")
				}
			})
			t.Run("NXDOMAIN with CO", func(t *testing.T) {
				m := exchangeCO(t, s, "nope.example.com.", dns.TypeA)
				if m.Rcode != dns.RcodeNameError || !m.IsEdns0().Co() {
					t.Fatalf("rcode %s, CO %v; want NXDOMAIN and CO:\n%v", dns.RcodeToString[m.Rcode], m.IsEdns0().Co(), m)
				}
				verifySigned(t, m, keys, ks)
				checkDenial(t, m, "nope.example.com.", dns.TypeRRSIG, dns.TypeNSEC, dns.TypeNXNAME)
			})
			t.Run("NXDOMAIN at the end of a chain", func(t *testing.T) {
				m := exchange(t, s, "dangling.example.com.", dns.TypeA, doQuery())
				verifySigned(t, m, keys, ks)
				checkDenial(t, m, "missing.example.com.", dns.TypeRRSIG, dns.TypeNSEC, dns.TypeNXNAME)
			})
			t.Run("DS at a cut", func(t *testing.T) {
				m := exchange(t, s, "sub.example.com.", dns.TypeDS, doQuery())
				if m.Rcode != dns.RcodeSuccess || !m.Authoritative || len(m.Answer) != 0 {
					t.Fatalf("%v", m)
				}
				verifySigned(t, m, keys, ks)
				checkDenial(t, m, "sub.example.com.", dns.TypeNS, dns.TypeRRSIG, dns.TypeNSEC)
			})
			t.Run("referral", func(t *testing.T) {
				m := exchange(t, s, "a.sub.example.com.", dns.TypeA, doQuery())
				if m.Authoritative || len(m.Answer) != 0 {
					t.Fatalf("%v", m)
				}
				verifySigned(t, m, keys, ks)
				ns := nsecOf(m)
				if len(ns) != 1 || ns[0].Hdr.Name != "sub.example.com." || !slices.Equal(ns[0].TypeBitMap, []uint16{dns.TypeNS, dns.TypeRRSIG, dns.TypeNSEC}) {
					t.Errorf("referral's NSEC %v, want sub.example.com. NS RRSIG NSEC", ns)
				}
				for _, rr := range m.Ns {
					if sig, ok := rr.(*dns.RRSIG); ok && sig.TypeCovered == dns.TypeNS {
						t.Errorf("the child's NS set is signed: %s", sig)
					}
				}
				if len(m.Extra) < 2 {
					t.Errorf("no glue: %v", m)
				}
			})
			t.Run("NXNAME queries are FORMERR", func(t *testing.T) {
				if m := exchange(t, s, "www.example.com.", dns.TypeNXNAME, doQuery()); m.Rcode != dns.RcodeFormatError {
					t.Errorf("%v", m)
				}
			})
		})
	}
}

// TestSignedWithoutDO: without DO an answer carries no DNSSEC records and is byte for byte the
// unsigned zone's; only the apex key sets are there for every client.
func TestSignedWithoutDO(t *testing.T) {
	geo := writeGeoDB(t)
	ks := signingKeys(t, "csk", dnssec.ECDSAP256SHA256)
	signed := signedServer(t, ks, nil, geo)
	unsigned := startServer(t, Options{GeoIPDatabase: geo, Now: func() time.Time { return signTime }, Random: seededRandom(5)})
	data := signedZone(nil)
	setZone(t, unsigned, "example.com", data)

	for _, q := range []struct {
		name  string
		qtype uint16
		ecs   netip.Addr
	}{
		{"www.example.com.", dns.TypeA, netip.Addr{}},
		{"chain.example.com.", dns.TypeA, netip.Addr{}},
		{"x.wild.example.com.", dns.TypeA, netip.Addr{}},
		{"api.example.com.", dns.TypeA, clientIE},
		{"api.example.com.", dns.TypeA, clientJP},
		{"www.example.com.", dns.TypeTXT, netip.Addr{}},
		{"nope.example.com.", dns.TypeA, netip.Addr{}},
		{"b.c.example.com.", dns.TypeA, netip.Addr{}},
		{"a.sub.example.com.", dns.TypeA, netip.Addr{}},
		{"example.com.", dns.TypeSOA, netip.Addr{}},
		{"example.com.", dns.TypeNS, netip.Addr{}},
	} {
		query := benchQuery(t, q.name, q.qtype, q.ecs)
		a := newResponder(signed)
		a.req.client = loopbackNone
		b := newResponder(unsigned)
		b.req.client = loopbackNone
		got, want := a.handle(query), b.handle(query)
		if string(got) != string(want) {
			t.Errorf("%s %s without DO: signed zone answers\n%x\nunsigned\n%x", q.name, dns.TypeToString[q.qtype], got, want)
		}
	}
	m := exchange(t, signed, "example.com.", dns.TypeDNSKEY, queryOpts{})
	if len(m.Answer) != 1 || m.Answer[0].Header().Rrtype != dns.TypeDNSKEY {
		t.Errorf("DNSKEY without DO: %v", m)
	}
	for _, q := range []string{"www.example.com.", "nope.example.com."} {
		m := exchange(t, signed, q, dns.TypeA, queryOpts{edns: true})
		for _, rr := range append(append(m.Answer, m.Ns...), m.Extra...) {
			if rt := rr.Header().Rrtype; rt == dns.TypeRRSIG || rt == dns.TypeNSEC {
				t.Errorf("%s without DO has %s", q, rr)
			}
		}
		if q == "nope.example.com." && m.Rcode != dns.RcodeNameError {
			t.Errorf("NXDOMAIN without DO answers %s", dns.RcodeToString[m.Rcode])
		}
	}
}

// TestSignedReplicasAgree: two servers with the same keys and clock make signatures with the same
// inception and expiration, within the validity window.
func TestSignedReplicasAgree(t *testing.T) {
	ks := signingKeys(t, "ksk+zsk", dnssec.ECDSAP256SHA256)
	a := signedServer(t, ks, nil, "")
	// The second replica's clock is a few hours later, within the same day.
	b := signedServer(t, ks, func() time.Time { return signTime.Add(3 * time.Minute) }, "")
	validity := func(s *Server, name string, qtype uint16) []string {
		var out []string
		m := exchange(t, s, name, qtype, doQuery())
		for _, rr := range append(m.Answer, m.Ns...) {
			if sig, ok := rr.(*dns.RRSIG); ok {
				inc, exp := time.Unix(int64(sig.Inception), 0), time.Unix(int64(sig.Expiration), 0)
				if !inc.Before(signTime.Add(-sigSkew)) || inc.Before(signTime.Add(-sigBucket-2*sigSkew)) {
					t.Errorf("%s inception %s: want an hour or more before %s, within a day", sig, inc, signTime)
				}
				if exp.Before(signTime.Add(sigLifetime-sigBucket)) || exp.After(signTime.Add(sigLifetime+sigBucket)) {
					t.Errorf("%s expiration %s: want about %s after %s", sig, exp, sigLifetime, signTime)
				}
				out = append(out, fmt.Sprintf("%s %d %d %d", sig.Hdr.Name, sig.TypeCovered, sig.Inception, sig.Expiration))
			}
		}
		return out
	}
	var spread []string
	for _, q := range []struct {
		name  string
		qtype uint16
	}{{"www.example.com.", dns.TypeA}, {"www.example.com.", dns.TypeAAAA}, {"example.com.", dns.TypeDNSKEY},
		{"nope.example.com.", dns.TypeA}, {"x.wild.example.com.", dns.TypeA}, {"txt.example.com.", dns.TypeTXT}} {
		va, vb := validity(a, q.name, q.qtype), validity(b, q.name, q.qtype)
		if len(va) == 0 || !slices.Equal(va, vb) {
			t.Errorf("%s %s: replicas sign with %q and %q", q.name, dns.TypeToString[q.qtype], va, vb)
		}
		spread = append(spread, va...)
	}
	// Different sets have different validity, so re-signing spreads out.
	exps := map[string]bool{}
	for _, v := range spread {
		exps[strings.Fields(v)[3]] = true
	}
	if len(exps) < 3 {
		t.Errorf("expirations %q: want them spread", spread)
	}
}

// TestSignedRefresh: a signature is made once, served from the cache, and made again once it
// enters its refresh window.
func TestSignedRefresh(t *testing.T) {
	ks := signingKeys(t, "csk", dnssec.ECDSAP256SHA256)
	var now atomic.Int64
	now.Store(signTime.Unix())
	s := signedServer(t, ks, func() time.Time { return time.Unix(now.Load(), 0) }, "")
	sigOf := func() *dns.RRSIG {
		m := exchange(t, s, "www.example.com.", dns.TypeA, doQuery())
		for _, rr := range m.Answer {
			if sig, ok := rr.(*dns.RRSIG); ok {
				return sig
			}
		}
		t.Fatalf("no RRSIG: %v", m)
		return nil
	}
	first := sigOf()
	made := signatures(s)
	if again := sigOf(); again.Signature != first.Signature || signatures(s) != made {
		t.Errorf("the second answer signed again (%d signatures made, were %d)", signatures(s), made)
	}
	// Just before the refresh window the cached signature still serves.
	refresh := int64(first.Expiration) - int64(sigRefresh/time.Second)
	now.Store(refresh - 1)
	if sigOf().Signature != first.Signature {
		t.Error("signed again before the refresh window")
	}
	now.Store(refresh)
	next := sigOf()
	if next.Signature == first.Signature || next.Expiration <= first.Expiration || signatures(s) != made+1 {
		t.Errorf("in the refresh window: %s, was %s", next, first)
	}
	if !next.ValidityPeriod(time.Unix(refresh, 0)) {
		t.Errorf("re-made signature %s not valid now", next)
	}
}

func signatures(s *Server) uint64 {
	return exampleEntry(s).stats.signatures.Load()
}

// exampleEntry is example.com's zone entry.
func exampleEntry(s *Server) *zoneEntry {
	w, _ := wireName("example.com.")
	return (*s.zones.Load())[string(w)]
}

// TestSignedInvalidKeys: a key set that cannot sign fails SetZone, and the zone keeps what it served.
func TestSignedInvalidKeys(t *testing.T) {
	ks := signingKeys(t, "csk", dnssec.ED25519)
	s := signedServer(t, ks, nil, "")
	before := servedKeys(t, s, ks)
	bad := signingKeys(t, "ksk+zsk", dnssec.ED25519)
	bad.Keys[0].State = dnssec.Published // nothing signs the DNSKEY set
	data := signedZone(bad)
	data.Changed = signTime
	if _, err := s.SetZone("example.com", data); err == nil || !strings.Contains(err.Error(), "DNSSEC keys") {
		t.Fatalf("SetZone with keys that cannot sign: %v", err)
	}
	after := servedKeys(t, s, ks)
	if len(after) != len(before) || after[ks.Keys[0].KeyTag()] == nil {
		t.Errorf("keys after a failed SetZone: %v, were %v", after, before)
	}
	m := exchange(t, s, "www.example.com.", dns.TypeA, doQuery())
	verifySigned(t, m, after, ks)
}

// TestSignedCacheBound: a flood of random names answered with signed denials keeps the cache of
// name-dependent signatures within its bound, evicting.
func TestSignedCacheBound(t *testing.T) {
	const bound = 64 << 10
	ks := signingKeys(t, "csk", dnssec.ED25519)
	s, err := New(Options{Now: func() time.Time { return signTime }, DNSSECCacheBytes: bound, NameserverAddresses: testNameserverAddresses})
	if err != nil {
		t.Fatal(err)
	}
	setZone(t, s, "example.com", signedZone(ks))
	r := newResponder(s)
	const names = 3000
	for i := range names {
		q := benchQueryDO(t, fmt.Sprintf("r%d.example.com.", i), dns.TypeA)
		if out := r.handle(q); len(out) < headerLen || out[3]&0xF != dns.RcodeSuccess {
			t.Fatalf("answer %x", out)
		}
	}
	snap := exampleEntry(s).snap.Load()
	entries, bytes := snap.signing.dynamic.usage()
	evicted := snap.signing.stats.sigEvictions.Load()
	t.Logf("%d names: %d entries, %d bytes, %d evicted", names, entries, bytes, evicted)
	if bytes > bound || entries >= names || evicted == 0 || evicted+uint64(entries) != names {
		t.Errorf("%d entries of %d bytes after %d names (%d evicted), bound %d", entries, bytes, names, evicted, bound)
	}
	zone := `zone="example.com."`
	for metric, want := range map[string]float64{
		// One signature per denial, and one for the SOA they all carry.
		"dnspolicy_dnsserver_dnssec_signatures_total":      names + 1,
		"dnspolicy_dnsserver_dnssec_cache_entries":         float64(entries),
		"dnspolicy_dnsserver_dnssec_cache_bytes":           float64(bytes),
		"dnspolicy_dnsserver_dnssec_cache_evictions_total": float64(evicted),
		"dnspolicy_dnsserver_answers_total":                names,
	} {
		labels := []string{zone}
		if metric == "dnspolicy_dnsserver_answers_total" {
			labels = append(labels, `source="nxdomain_compact"`)
		}
		if v := metricValue(t, s, metric, labels...); v != want {
			t.Errorf("%s = %v, want %v", metric, v, want)
		}
	}
}

// benchQueryDO packs a query with DO set.
func benchQueryDO(t testing.TB, name string, qtype uint16) []byte {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.SetEdns0(1232, true)
	out, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSignedTruncation: signatures count toward the client's UDP size; an answer that no longer fits
// is truncated, and TCP carries it whole.
func TestSignedTruncation(t *testing.T) {
	ks := signingKeys(t, "zsk-rollover", dnssec.ECDSAP256SHA256)
	s := signedServer(t, ks, nil, "")
	plain := exchange(t, s, "mid.example.com.", dns.TypeA, queryOpts{edns: true, udpSize: 1232})
	plain.Compress = true // as we sent it
	size := uint16(plain.Len() + 20)
	m := exchange(t, s, "mid.example.com.", dns.TypeA, queryOpts{edns: true, do: true, udpSize: size})
	if !m.Truncated || len(m.Answer) != 0 {
		t.Errorf("signed answer over %d bytes not truncated: %v", size, m)
	}
	m = exchange(t, s, "mid.example.com.", dns.TypeA, queryOpts{tcp: true, edns: true, do: true})
	if m.Truncated || len(m.Answer) != 40+2 {
		t.Errorf("over TCP: %d records, truncated %v", len(m.Answer), m.Truncated)
	}
}

// brokenSigner is a private key whose hardware (an HSM, say) fails.
type brokenSigner struct{ crypto.Signer }

func (brokenSigner) Sign(io.Reader, []byte, crypto.SignerOpts) ([]byte, error) {
	return nil, errors.New("token removed")
}

// TestSignFailure: a key that fails to sign leaves answers unsigned (validators reject them, but
// clients without DNSSEC are served), and the failure is logged once a minute, not once per query.
func TestSignFailure(t *testing.T) {
	ks := signingKeys(t, "csk", dnssec.ECDSAP256SHA256)
	ks.Keys[0].Signer = brokenSigner{ks.Keys[0].Signer}
	var logged atomic.Int64
	var now atomic.Int64
	now.Store(signTime.Unix())
	s := startServer(t, Options{Now: func() time.Time { return time.Unix(now.Load(), 0) },
		Log: funcr.New(func(_, args string) {
			if strings.Contains(args, "token removed") {
				logged.Add(1)
			}
		}, funcr.Options{})})
	setZone(t, s, "example.com", signedZone(ks))
	for range 5 {
		m := exchange(t, s, "www.example.com.", dns.TypeA, doQuery())
		if len(m.Answer) != 2 || m.Rcode != dns.RcodeSuccess {
			t.Fatalf("%v", m)
		}
	}
	if n := logged.Load(); n != 1 {
		t.Errorf("failure logged %d times over 5 queries, want once", n)
	}
	now.Add(signFailed)
	exchange(t, s, "www.example.com.", dns.TypeA, doQuery())
	if n := logged.Load(); n != 2 {
		t.Errorf("failure logged %d times after a minute, want twice", n)
	}
}

// TestSignaturesCarried: a change of the zone keeps the signatures of the sets it did not change,
// and signs the changed ones afresh.
func TestSignaturesCarried(t *testing.T) {
	ks := signingKeys(t, "csk", dnssec.ECDSAP256SHA256)
	s := signedServer(t, ks, nil, "")
	keys := servedKeys(t, s, ks)
	sigOf := func(name string, qtype uint16) string {
		m := exchange(t, s, name, qtype, doQuery())
		verifySigned(t, m, keys, ks)
		var out []string
		for _, rr := range append(m.Answer, m.Ns...) {
			if sig, ok := rr.(*dns.RRSIG); ok {
				out = append(out, sig.Signature)
			}
		}
		return strings.Join(out, " ")
	}
	www, txt, nodata := sigOf("www.example.com.", dns.TypeA), sigOf("txt.example.com.", dns.TypeTXT), sigOf("www.example.com.", dns.TypeMX)
	made := signatures(s)
	data := signedZone(ks)
	for _, e := range data.Endpoints {
		if e.DNSName == "txt.example.com" {
			e.Targets = []string{"changed"}
		}
	}
	data.Changed = signTime
	if st := setZone(t, s, "example.com", data); !st.Changed {
		t.Fatal("zone did not change")
	}
	if got := sigOf("www.example.com.", dns.TypeA); got != www {
		t.Errorf("www A signed again after an unrelated change")
	}
	if got := sigOf("txt.example.com.", dns.TypeTXT); got == txt {
		t.Errorf("changed TXT set served with its old signature")
	}
	// NODATA: the NSEC at www is carried, the SOA (new serial) signed again.
	if got := strings.Fields(sigOf("www.example.com.", dns.TypeMX)); len(got) != 2 || got[1] != strings.Fields(nodata)[1] || got[0] == strings.Fields(nodata)[0] {
		t.Errorf("NODATA signatures %q, were %q: want the SOA's new and the NSEC's kept", got, nodata)
	}
	if n := signatures(s) - made; n != 2 {
		t.Errorf("%d signatures made after the change, want 2 (the TXT set, the SOA)", n)
	}
}
