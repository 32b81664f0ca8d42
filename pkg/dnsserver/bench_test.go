package dnsserver

import (
	"fmt"

	"net/netip"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"

	"github.com/miekg/dns"
)

// benchQuery packs a query as a resolver would send it: RD set, EDNS, optionally a client subnet.
func benchQuery(b testing.TB, name string, qtype uint16, ecs netip.Addr) []byte {
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

// BenchmarkBuildLargeReferral builds the zone of the tenancy tier's one large record (1.2 MB of
// referral glue: an NS set of 250 names below a cut, each with 300 addresses): its bytes per
// operation are what one such record costs the controller's heap each time its zone is built.
func BenchmarkBuildLargeReferral(b *testing.B) {
	const sub = "deep.example.com"
	var eps []*v1alpha1.Endpoint
	var names []string
	for i := range 250 {
		name := fmt.Sprintf("ns%d.%s", i, sub)
		names = append(names, name)
		addrs := make([]string, 300)
		for j := range addrs {
			addrs[j] = netip.AddrFrom4([4]byte{10, byte(i), byte(j >> 8), byte(j)}).String()
		}
		eps = append(eps, v1alpha1.NewEndpoint(name, "A", 60, addrs...))
	}
	eps = append(eps, v1alpha1.NewEndpoint(sub, "NS", 60, names...))
	data := ZoneData{Sources: []Source{{Name: "team/big", Endpoints: eps}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := buildZone("example.com.", data, 1, nil, 86400); err != nil {
			b.Fatal(err)
		}
	}
}
