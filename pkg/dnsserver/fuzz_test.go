package dnsserver

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnssec"
)

// FuzzHandler feeds arbitrary messages to the handler, over UDP and TCP semantics. The handler must
// never panic, and whatever it sends must be a well-formed response to that query that fits the
// transport. Seeds: testdata/fuzz/FuzzHandler and the queries below.
func FuzzHandler(f *testing.F) {
	s, err := New(Options{GeoIPDatabase: writeGeoDB(f), TSIGKeys: testKeys, TransferKeys: testTransferKeys})
	if err != nil {
		f.Fatal(err)
	}
	// Signed: answers without DO are the unsigned zone's, so both paths are fuzzed.
	setZone(f, s, "example.com", ZoneData{Endpoints: exampleZone(), Signing: signingKeys(f, "ksk+zsk", dnssec.ECDSAP256SHA256)})
	setZone(f, s, "k.example.com", ZoneData{Endpoints: kuadrantZone(f)})

	seed := func(m *dns.Msg) {
		b, err := m.Pack()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
		f.Add(b, true)
	}
	for _, q := range []struct {
		name  string
		qtype uint16
	}{
		{"api.example.com.", dns.TypeA}, {"x.wild.example.com.", dns.TypeAAAA}, {"www.sub.example.com.", dns.TypeA},
		{"example.com.", dns.TypeAXFR}, {"example.com.", dns.TypeIXFR}, {"big.example.com.", dns.TypeANY},
	} {
		m := new(dns.Msg).SetQuestion(q.name, q.qtype)
		seed(m)
		m.SetEdns0(512, true)
		m.IsEdns0().Option = []dns.EDNS0{&dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: clientIE.AsSlice()}}
		seed(m)
		m.IsEdns0().SetCo()
		seed(m)
	}
	for _, q := range []string{"nope.example.com.", "b.c.example.com.", "sub.example.com."} {
		m := new(dns.Msg).SetQuestion(q, dns.TypeDS)
		m.SetEdns0(1232, true)
		seed(m)
	}
	signed := new(dns.Msg).SetQuestion("example.com.", dns.TypeSOA)
	signed.SetTsig(testKey, dns.HmacSHA256, 300, time.Now().Unix())
	b, _, err := dns.TsigGenerate(signed, testSecret, "", false)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b, false)

	r := newResponder(s)
	r.req.client = loopbackIE
	f.Fuzz(func(t *testing.T, msg []byte, tcp bool) {
		r.req.tcp = tcp
		in := bytes.Clone(msg)
		out := r.handle(msg)
		if r.xfr != nil || out == nil {
			return
		}
		resp := new(dns.Msg)
		if err := resp.Unpack(out); err != nil {
			t.Fatalf("answer does not parse: %v\nquery %x\nanswer %x", err, in, out)
		}
		if !resp.Response || resp.Id != uint16(in[0])<<8|uint16(in[1]) {
			t.Fatalf("not a response to the query: %v", resp)
		}
		if !tcp && len(out) > max(r.s.maxUDP, dns.MinMsgSize) && resp.IsTsig() == nil {
			t.Fatalf("UDP answer of %d bytes", len(out))
		}
	})
}

// FuzzZone builds zones from arbitrary endpoints, as DNSRecords can hold anything the API accepts,
// signed, and asks for the fuzzed name, with DO and without. Building must never panic or fail (what cannot be served is
// refused with a reason), and every answer must be a well-formed response that fits its transport.
func FuzzZone(f *testing.F) {
	f.Add("www.example.com", "A", int64(60), "192.0.2.1", "192.0.2.2", "", "", "", dns.TypeA)
	f.Add("api.example.com", "CNAME", int64(300), "klb.api.example.com", "x.example.org", "IE", "IE,GEO-EU", "120", dns.TypeA)
	f.Add("t.example.com", "TXT", int64(0), `"a" "b"`, strings.Repeat("z", 70000), "", "", "", dns.TypeTXT)
	f.Add("example.com", "NS", int64(1), "ns.evil.example.", "", "", "", "", dns.TypeNS)
	f.Add("sub.example.com", "NS", int64(1), "ns.sub.example.com", "", "a", "*", "x", dns.TypeA)
	f.Add("*.w.example.com", "MX", int64(-1), "10 mx.example.com", "bad", "", "", "", dns.TypeANY)
	f.Add(`a\000b.example.com`, "SRV", int64(1<<40), "0 0 0 .", "1 2 3 t.example.com", "s", "US", "18446744073709551615", dns.TypeSRV)
	keys := signingKeys(f, "csk", dnssec.ED25519)
	f.Fuzz(func(t *testing.T, name, rrtype string, ttl int64, t1, t2, setID, geo, weight string, qtype uint16) {
		s, err := New(Options{Random: func(n uint64) uint64 { return n / 2 }})
		if err != nil {
			t.Fatal(err)
		}
		fuzzed := &v1alpha1.Endpoint{DNSName: name, RecordType: rrtype, RecordTTL: v1alpha1.TTL(ttl), Targets: v1alpha1.Targets{t1, t2}, SetIdentifier: setID}
		if geo != "" {
			fuzzed.ProviderSpecific = append(fuzzed.ProviderSpecific, v1alpha1.ProviderSpecificProperty{Name: v1alpha1.ProviderSpecificGeoCode, Value: geo})
		}
		if weight != "" {
			fuzzed.ProviderSpecific = append(fuzzed.ProviderSpecific, v1alpha1.ProviderSpecificProperty{Name: v1alpha1.ProviderSpecificWeight, Value: weight})
		}
		second := *fuzzed
		second.SetIdentifier += "-2"
		second.Targets = v1alpha1.Targets{t2}
		eps := append(exampleZone(), fuzzed, &second)
		if _, err := s.SetZone("example.com", ZoneData{Sources: []Source{{Name: "ns/fuzz", Endpoints: eps}}, Signing: keys}); err != nil {
			t.Fatalf("building: %v", err)
		}
		qname := dns.Fqdn(name)
		if _, ok := dns.IsDomainName(qname); !ok {
			qname = "www.example.com."
		}
		for i := range 4 {
			tcp, do := i&1 == 1, i&2 == 2
			r := newResponder(s)
			r.req.client, r.req.tcp = loopbackIE, tcp
			q := new(dns.Msg).SetQuestion(qname, qtype)
			q.SetEdns0(1232, do)
			msg, err := q.Pack()
			if err != nil {
				return
			}
			out := r.handle(msg)
			if out == nil {
				continue
			}
			resp := new(dns.Msg)
			if err := resp.Unpack(out); err != nil {
				t.Fatalf("answer does not parse: %v\nanswer %x", err, out)
			}
			if !tcp && len(out) > 1232 {
				t.Fatalf("UDP answer of %d bytes", len(out))
			}
		}
	})
}

// FuzzGlue builds zones whose referrals and additional sections are as large as a record allows
// (many nameservers of many addresses each, in-zone mail and service targets) and asks for them over
// UDP of any size and TCP: every answer parses, fits its transport, and carries each glue or
// additional name's addresses whole or not at all (a resolver must never cache half a set as the
// whole). The 1.2 MB record of issue "Tenants kept apart" is this at full size (test/install's
// tenancy tier).
func FuzzGlue(f *testing.F) {
	f.Add(uint8(250), uint16(300), true, uint8(3), uint16(1232), dns.TypeA, false)
	f.Add(uint8(2), uint16(1), false, uint8(0), uint16(512), dns.TypeNS, true)
	f.Add(uint8(40), uint16(1000), true, uint8(20), uint16(0), dns.TypeMX, false)
	f.Add(uint8(1), uint16(4000), false, uint8(1), uint16(65535), dns.TypeSRV, true)
	f.Fuzz(func(t *testing.T, nameservers uint8, addrs uint16, aaaa bool, mail uint8, udpSize uint16, qtype uint16, tcp bool) {
		// Bounded so one run builds quickly; the shapes, not the totals, are what is explored.
		n, per := int(nameservers)%64+1, int(addrs)%v1alpha1.MaxTargets+1
		s, err := New(Options{})
		if err != nil {
			t.Fatal(err)
		}
		glue := func(name string, i int) []*v1alpha1.Endpoint {
			four, six := make([]string, per), make([]string, per)
			for j := range per {
				four[j] = netip.AddrFrom4([4]byte{10, byte(i), byte(j >> 8), byte(j)}).String()
				six[j] = netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 14: byte(j >> 8), 15: byte(j)}).String()
			}
			eps := []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(name, "A", 60, four...)}
			if aaaa {
				eps = append(eps, v1alpha1.NewEndpoint(name, "AAAA", 60, six...))
			}
			return eps
		}
		var eps []*v1alpha1.Endpoint
		targets := make([]string, n)
		for i := range n {
			targets[i] = fmt.Sprintf("ns%d.deep.example.com", i)
			eps = append(eps, glue(targets[i], i)...)
		}
		eps = append(eps, v1alpha1.NewEndpoint("deep.example.com", "NS", 60, targets...))
		var mx, srv []string
		for i := range int(mail) % 32 {
			host := fmt.Sprintf("mx%d.example.com", i)
			mx = append(mx, fmt.Sprintf("%d %s", i, host))
			srv = append(srv, fmt.Sprintf("0 %d 443 %s", i, host))
			eps = append(eps, glue(host, 100+i)...)
		}
		if len(mx) > 0 {
			eps = append(eps, v1alpha1.NewEndpoint("example.com", "MX", 60, mx...), v1alpha1.NewEndpoint("_x._tcp.example.com", "SRV", 60, srv...))
		}
		if _, err := s.SetZone("example.com", ZoneData{Sources: []Source{{Name: "ns/glue", Endpoints: eps}}}); err != nil {
			t.Fatalf("building: %v", err)
		}
		for _, qname := range []string{"www.deep.example.com.", "example.com.", "_x._tcp.example.com."} {
			r := newResponder(s)
			r.req.client, r.req.tcp = loopbackIE, tcp
			q := new(dns.Msg).SetQuestion(qname, qtype)
			limit := 512
			if udpSize != 0 {
				q.SetEdns0(udpSize, false)
				limit = max(int(udpSize), 512)
			}
			msg, err := q.Pack()
			if err != nil {
				t.Fatal(err)
			}
			out := r.handle(msg)
			if out == nil {
				continue
			}
			if tcp {
				limit = dns.MaxMsgSize
			}
			if len(out) > limit {
				t.Fatalf("%s %s: answer of %d bytes over a limit of %d", qname, dns.TypeToString[qtype], len(out), limit)
			}
			resp := new(dns.Msg)
			if err := resp.Unpack(out); err != nil {
				t.Fatalf("answer does not parse: %v", err)
			}
			counts := map[string]int{}
			for _, rr := range resp.Extra {
				if t := rr.Header().Rrtype; t == dns.TypeA || t == dns.TypeAAAA {
					counts[rr.Header().Name+"/"+dns.TypeToString[t]]++
				}
			}
			for set, c := range counts {
				if c != per {
					t.Fatalf("%s %s: additional set %s carries %d of its %d addresses", qname, dns.TypeToString[qtype], set, c, per)
				}
			}
		}
	})
}
