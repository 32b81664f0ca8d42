package dnsserver

import (
	"fmt"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnssec"
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

// signedBenchServer serves the example zone signed with one CSK (algorithm 13, the common one).
func signedBenchServer(b *testing.B, opts Options) *Server {
	b.Helper()
	opts.Now = func() time.Time { return signTime }
	s, err := New(opts)
	if err != nil {
		b.Fatal(err)
	}
	setZone(b, s, "example.com", signedZone(signingKeys(b, "csk", dnssec.ECDSAP256SHA256)))
	return s
}

// doQueries packs queries with DO set, as a validating resolver sends them.
func doQueries(b *testing.B, ecs []netip.Addr, names ...string) [][]byte {
	var out [][]byte
	for _, name := range names {
		for _, a := range ecs {
			m := new(dns.Msg)
			m.SetQuestion(name, dns.TypeA)
			m.SetEdns0(1232, true)
			if a.IsValid() {
				m.IsEdns0().Option = []dns.EDNS0{&dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: a.AsSlice()}}
			}
			q, err := m.Pack()
			if err != nil {
				b.Fatal(err)
			}
			out = append(out, q)
		}
	}
	return out
}

// BenchmarkServeSignedStatic is BenchmarkServeStatic's queries with DO, signatures from the cache
// (the first answers sign them).
func BenchmarkServeSignedStatic(b *testing.B) {
	s := signedBenchServer(b, Options{})
	benchHandler(b, s, doQueries(b, []netip.Addr{{}}, "www.example.com.", "WWW.example.com.", "chain.example.com.", "nope.example.com."))
}

// BenchmarkServeSignedGeoWeighted is BenchmarkServeGeoWeighted's queries with DO.
func BenchmarkServeSignedGeoWeighted(b *testing.B) {
	s := signedBenchServer(b, Options{GeoIPDatabase: writeGeoDB(b)})
	benchHandler(b, s, doQueries(b, []netip.Addr{clientIE, clientUS, clientDE, clientJP, clientNone}, "api.example.com."))
}

// BenchmarkServeSignedRandomNXDomain asks for a new name each time: every answer signs a denial
// (algorithm 13) and puts it in the bounded cache, the cost of a random-name flood.
func BenchmarkServeSignedRandomNXDomain(b *testing.B) {
	s := signedBenchServer(b, Options{})
	var n atomic.Uint64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := newResponder(s)
		r.req.client = loopbackNone
		m := new(dns.Msg)
		m.SetEdns0(1232, true)
		buf := make([]byte, 0, 512)
		for pb.Next() {
			m.SetQuestion(fmt.Sprintf("r%d.example.com.", n.Add(1)), dns.TypeA)
			q, err := m.PackBuffer(buf)
			if err != nil {
				b.Error(err)
				return
			}
			if out := r.handle(q); len(out) < headerLen || out[3]&0xF != dns.RcodeSuccess || out[9] != 4 {
				b.Errorf("bad answer %x", out)
				return
			}
		}
	})
}
