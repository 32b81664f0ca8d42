package dnsserver

import (
	"net/netip"
	"testing"

	"github.com/miekg/dns"
)

// benchQuery packs a query as a resolver would send it: RD set, EDNS, optionally a client subnet.
func benchQuery(b *testing.B, name string, qtype uint16, ecs netip.Addr) []byte {
	b.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.SetEdns0(1232, false)
	if ecs.IsValid() {
		m.IsEdns0().Option = []dns.EDNS0{&dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: ecs.AsSlice()}}
	}
	out, err := m.Pack()
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// benchHandler measures the handler path: parse, look up, answer, as a UDP reader runs it.
func benchHandler(b *testing.B, s *Server, queries [][]byte) {
	b.Helper()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := newResponder(s)
		r.req.client = loopbackNone
		i := 0
		for pb.Next() {
			out := r.handle(queries[i%len(queries)])
			if len(out) < headerLen || (out[3]&0xF != dns.RcodeSuccess && out[3]&0xF != dns.RcodeNameError) {
				b.Errorf("bad answer %x", out)
				return
			}
			i++
		}
	})
}

func BenchmarkServeStatic(b *testing.B) {
	s, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	setZone(b, s, "example.com", ZoneData{Endpoints: exampleZone()})
	benchHandler(b, s, [][]byte{
		benchQuery(b, "www.example.com.", dns.TypeA, netip.Addr{}),
		benchQuery(b, "WWW.example.com.", dns.TypeAAAA, netip.Addr{}),
		benchQuery(b, "chain.example.com.", dns.TypeA, netip.Addr{}),
		benchQuery(b, "nope.example.com.", dns.TypeA, netip.Addr{}),
	})
}

func BenchmarkServeGeoWeighted(b *testing.B) {
	s, err := New(Options{GeoIPDatabase: writeGeoDB(b)})
	if err != nil {
		b.Fatal(err)
	}
	setZone(b, s, "example.com", ZoneData{Endpoints: exampleZone()})
	benchHandler(b, s, [][]byte{
		benchQuery(b, "api.example.com.", dns.TypeA, clientIE),
		benchQuery(b, "api.example.com.", dns.TypeA, clientUS),
		benchQuery(b, "api.example.com.", dns.TypeA, clientDE),
		benchQuery(b, "api.example.com.", dns.TypeA, clientJP),
		benchQuery(b, "api.example.com.", dns.TypeA, clientNone),
	})
}
