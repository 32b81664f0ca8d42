package dnsserver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
	"github.com/dnspolicy/dnspolicy-controller/test/geodb"
)

// Client addresses by location in the test database.
var (
	clientIE     = netip.MustParseAddr("81.17.23.20")
	clientUS     = netip.MustParseAddr("8.8.4.4")
	clientDE     = netip.MustParseAddr("5.9.10.11")
	clientJP     = netip.MustParseAddr("133.1.2.3")
	clientAfrica = netip.MustParseAddr("41.32.1.1")     // continent only: AF, no country
	clientNone   = netip.MustParseAddr("203.0.113.7")   // not in the database
	clientDE6    = netip.MustParseAddr("2a01:4f8::1")   // IPv6, DE
	loopbackIE   = netip.MustParseAddr("127.0.100.1")   // a source address, for queries without ECS
	loopbackNone = netip.MustParseAddr("127.0.0.1")     // the default source address
	ecsOff       = netip.MustParseAddr("198.51.100.42") // used with source prefix 0
)

// writeGeoDB builds a small MaxMind-format country database.
func writeGeoDB(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "geo.mmdb")
	if err := geodb.Write(path,
		geodb.Network{CIDR: "81.17.0.0/16", Country: "IE", Continent: "EU"},
		geodb.Network{CIDR: "127.0.100.0/24", Country: "IE", Continent: "EU"},
		geodb.Network{CIDR: "8.8.0.0/16", Country: "US", Continent: "NA"},
		geodb.Network{CIDR: "5.9.0.0/16", Country: "DE", Continent: "EU"},
		geodb.Network{CIDR: "2a01:4f8::/32", Country: "DE", Continent: "EU"},
		geodb.Network{CIDR: "133.0.0.0/8", Country: "JP", Continent: "AS"},
		geodb.Network{CIDR: "41.32.0.0/11", Continent: "AF"},
	); err != nil {
		t.Fatal(err)
	}
	return path
}

// seededRandom is a reproducible weighted choice, safe for the server's concurrent readers.
func seededRandom(seed uint64) func(uint64) uint64 {
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(seed, seed^0x9E3779B97F4A7C15))
	return func(n uint64) uint64 {
		mu.Lock()
		defer mu.Unlock()
		return r.Uint64N(n)
	}
}

// startServer starts a server on a free loopback port and stops it when the test ends.
//
// The port lies below the kernel's ephemeral range (test/freeport). dig's sockets set
// SO_REUSEPORT, as ours do, so a dig whose random source port happened to be the server's shared it
// and was handed queries meant for the server ("query response not set").
func startServer(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.NameserverAddresses == nil {
		opts.NameserverAddresses = testNameserverAddresses
	}
	var s *Server
	for attempt := 0; ; attempt++ {
		opts.Addr = freeport.Addr(t)
		var err error
		if s, err = New(opts); err != nil {
			t.Fatal(err)
		}
		if err = s.Start(); err == nil {
			break
		} else if attempt == 5 {
			t.Fatal(err)
		}
		// Another test took the port between the pick and the bind: pick again.
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return s
}

func setZone(t testing.TB, s *Server, name string, data ZoneData) ZoneStatus {
	t.Helper()
	st, err := s.SetZone(name, data)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// queryOpts shape a test query.
type queryOpts struct {
	tcp     bool
	edns    bool
	udpSize uint16
	ecs     *netip.Prefix
	source  netip.Addr
	do      bool
}

func withECS(addr netip.Addr, bits int) queryOpts {
	p := netip.PrefixFrom(addr, bits).Masked()
	return queryOpts{edns: true, ecs: &p}
}

// exchange sends one query with the miekg/dns client and returns the answer.
func exchange(t testing.TB, s *Server, name string, qtype uint16, o queryOpts) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.RecursionDesired = true
	if o.edns || o.ecs != nil {
		size := o.udpSize
		if size == 0 {
			size = 1232
		}
		m.SetEdns0(size, o.do)
		if o.ecs != nil {
			e := &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, SourceNetmask: uint8(o.ecs.Bits()), Address: o.ecs.Addr().AsSlice()}
			e.Family = 1
			if o.ecs.Addr().Is6() {
				e.Family = 2
			}
			m.IsEdns0().Option = append(m.IsEdns0().Option, e)
		}
	}
	c := &dns.Client{Net: "udp", Timeout: 5 * time.Second}
	if o.tcp {
		c.Net = "tcp"
	}
	if o.source.IsValid() {
		c.Dialer = &net.Dialer{LocalAddr: &net.UDPAddr{IP: o.source.AsSlice()}}
		if o.tcp {
			c.Dialer = &net.Dialer{LocalAddr: &net.TCPAddr{IP: o.source.AsSlice()}}
		}
	}
	if o.udpSize != 0 {
		c.UDPSize = o.udpSize
	}
	resp, _, err := c.Exchange(m, s.Addr().String())
	if err != nil {
		t.Fatalf("%s %s: %v", name, dns.TypeToString[qtype], err)
	}
	if resp.Id != m.Id {
		t.Fatalf("answer ID %d, query ID %d", resp.Id, m.Id)
	}
	return resp
}

// rrText renders records without TTLs for comparison.
func rrText(rrs []dns.RR) []string {
	out := make([]string, 0, len(rrs))
	for _, rr := range rrs {
		c := dns.Copy(rr)
		c.Header().Ttl = 0
		out = append(out, c.String())
	}
	return out
}

// lastTarget follows an answer's chain to its address records and returns them.
func addresses(m *dns.Msg) []string {
	var out []string
	for _, rr := range m.Answer {
		switch v := rr.(type) {
		case *dns.A:
			out = append(out, v.A.String())
		case *dns.AAAA:
			out = append(out, v.AAAA.String())
		}
	}
	return out
}

func cnameTargets(m *dns.Msg) []string {
	var out []string
	for _, rr := range m.Answer {
		if c, ok := rr.(*dns.CNAME); ok {
			out = append(out, c.Target)
		}
	}
	return out
}

func ep(name, rrtype string, ttl int64, targets ...string) *v1alpha1.Endpoint {
	return &v1alpha1.Endpoint{DNSName: name, RecordType: rrtype, RecordTTL: v1alpha1.TTL(ttl), Targets: targets}
}

func geoEP(name, target, setID, geo string) *v1alpha1.Endpoint {
	return ep(name, "CNAME", 300, target).WithSetIdentifier(setID).WithProviderSpecific(v1alpha1.ProviderSpecificGeoCode, geo)
}

func weightedEP(name, target string, weight int) *v1alpha1.Endpoint {
	return ep(name, "CNAME", 60, target).WithSetIdentifier(target).WithProviderSpecific(v1alpha1.ProviderSpecificWeight, fmt.Sprint(weight))
}

// exampleZone is a zone exercising every answer shape: simple and chained names, empty
// non-terminals, wildcards, a delegation, a large set, and a loadbalanced host in Kuadrant's shape
// (geo IE, US, JP, GEO-EU and the "*" default; weights within IE).
// testNameserverAddresses are the addresses of example.com's nameserver, served from the server's
// configuration as glue and as its A record.
var testNameserverAddresses = map[string][]netip.Addr{"ns1.example.com": {netip.MustParseAddr("192.0.2.1")}}

func exampleZone() []*v1alpha1.Endpoint {
	eps := []*v1alpha1.Endpoint{
		ep("www.example.com", "A", 60, "192.0.2.10", "192.0.2.11"),
		ep("www.example.com", "AAAA", 60, "2001:db8::10"),
		ep("app.example.com", "CNAME", 60, "www.example.com"),
		ep("chain.example.com", "CNAME", 60, "app.example.com"),
		ep("txt.example.com", "TXT", 60, "hello world"),
		ep("ext.example.com", "CNAME", 60, "target.example.org"),
		ep("dangling.example.com", "CNAME", 60, "missing.example.com"),
		ep("loop1.example.com", "CNAME", 60, "loop2.example.com"),
		ep("loop2.example.com", "CNAME", 60, "loop1.example.com"),
		ep("a.b.c.example.com", "A", 60, "192.0.2.20"),
		ep("*.wild.example.com", "A", 60, "192.0.2.30"),
		ep("host.wild.example.com", "TXT", 60, "not the wildcard"),
		ep("*.alias.example.com", "CNAME", 60, "www.example.com"),
		ep("sub.example.com", "NS", 300, "ns.sub.example.com"),
		ep("ns.sub.example.com", "A", 300, "192.0.2.53"),
		ep("mail.example.com", "MX", 300, "10 mx.example.com"),
	}
	var big []string
	for i := 1; i <= 100; i++ {
		big = append(big, fmt.Sprintf("10.0.%d.%d", i/250, i%250))
	}
	eps = append(eps, ep("big.example.com", "A", 60, big...), ep("mid.example.com", "A", 60, big[:40]...))
	return append(eps, loadbalancedAPI()...)
}

// loadbalancedAPI is api.example.com as dns-operator writes it for four clusters.
func loadbalancedAPI() []*v1alpha1.Endpoint {
	const h = "api.example.com"
	return []*v1alpha1.Endpoint{
		ep(h, "CNAME", 300, "klb."+h),
		geoEP("klb."+h, "ie.klb."+h, "IE", "IE"),
		geoEP("klb."+h, "us.klb."+h, "US", "US"),
		geoEP("klb."+h, "jp.klb."+h, "JP", "JP"),
		geoEP("klb."+h, "geo-eu.klb."+h, "GEO-EU", "GEO-EU"),
		geoEP("klb."+h, "us.klb."+h, "default", "*"),
		weightedEP("ie.klb."+h, "c1.klb."+h, 30),
		weightedEP("ie.klb."+h, "c2.klb."+h, 90),
		weightedEP("ie.klb."+h, "c5.klb."+h, 0),
		weightedEP("us.klb."+h, "c3.klb."+h, 120),
		weightedEP("jp.klb."+h, "c4.klb."+h, 120),
		weightedEP("geo-eu.klb."+h, "c2.klb."+h, 120),
		ep("c1.klb."+h, "A", 60, "198.51.100.1"),
		ep("c2.klb."+h, "A", 60, "198.51.100.2"),
		ep("c3.klb."+h, "A", 60, "198.51.100.3"),
		ep("c4.klb."+h, "A", 60, "198.51.100.4"),
		ep("c5.klb."+h, "A", 60, "198.51.100.5"),
	}
}
