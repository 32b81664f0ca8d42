package dnsserver

import (
	"math"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

func exampleServer(t *testing.T, opts Options) *Server {
	t.Helper()
	if opts.GeoIPDatabase == "" {
		opts.GeoIPDatabase = writeGeoDB(t)
	}
	s := startServer(t, opts)
	st := setZone(t, s, "example.com", ZoneData{Endpoints: exampleZone(), Nameservers: []string{"ns1.example.com", "ns2.example.net"}})
	if len(st.Skipped) != 0 {
		t.Fatalf("skipped endpoints: %q", st.Skipped)
	}
	return s
}

func TestAnswers(t *testing.T) {
	s := exampleServer(t, Options{})
	soa := func(m *dns.Msg) bool {
		return len(m.Ns) == 1 && m.Ns[0].Header().Rrtype == dns.TypeSOA && m.Ns[0].Header().Name == "example.com."
	}
	for _, tc := range []struct {
		name      string
		qname     string
		qtype     uint16
		rcode     int
		answer    []string
		withSOA   bool
		notAuth   bool
		authority []string
		extra     []string
	}{
		{name: "A", qname: "www.example.com.", qtype: dns.TypeA,
			answer: []string{"www.example.com.\t0\tIN\tA\t192.0.2.10", "www.example.com.\t0\tIN\tA\t192.0.2.11"}},
		{name: "AAAA", qname: "www.example.com.", qtype: dns.TypeAAAA,
			answer: []string{"www.example.com.\t0\tIN\tAAAA\t2001:db8::10"}},
		{name: "CNAME chain followed in one answer", qname: "chain.example.com.", qtype: dns.TypeA,
			answer: []string{"chain.example.com.\t0\tIN\tCNAME\tapp.example.com.", "app.example.com.\t0\tIN\tCNAME\twww.example.com.",
				"www.example.com.\t0\tIN\tA\t192.0.2.10", "www.example.com.\t0\tIN\tA\t192.0.2.11"}},
		{name: "CNAME queried itself", qname: "app.example.com.", qtype: dns.TypeCNAME,
			answer: []string{"app.example.com.\t0\tIN\tCNAME\twww.example.com."}},
		{name: "CNAME out of zone ends the chain", qname: "ext.example.com.", qtype: dns.TypeA,
			answer: []string{"ext.example.com.\t0\tIN\tCNAME\ttarget.example.org."}},
		{name: "CNAME to a missing name is NXDOMAIN with the chain", qname: "dangling.example.com.", qtype: dns.TypeA, rcode: dns.RcodeNameError,
			answer: []string{"dangling.example.com.\t0\tIN\tCNAME\tmissing.example.com."}, withSOA: true},
		{name: "CNAME loop ends", qname: "loop1.example.com.", qtype: dns.TypeA,
			answer: []string{"loop1.example.com.\t0\tIN\tCNAME\tloop2.example.com.", "loop2.example.com.\t0\tIN\tCNAME\tloop1.example.com.",
				"loop1.example.com.\t0\tIN\tCNAME\tloop2.example.com.", "loop2.example.com.\t0\tIN\tCNAME\tloop1.example.com.",
				"loop1.example.com.\t0\tIN\tCNAME\tloop2.example.com.", "loop2.example.com.\t0\tIN\tCNAME\tloop1.example.com.",
				"loop1.example.com.\t0\tIN\tCNAME\tloop2.example.com.", "loop2.example.com.\t0\tIN\tCNAME\tloop1.example.com."}},
		{name: "TXT", qname: "txt.example.com.", qtype: dns.TypeTXT,
			answer: []string{"txt.example.com.\t0\tIN\tTXT\t\"hello world\""}},
		{name: "MX", qname: "mail.example.com.", qtype: dns.TypeMX,
			answer: []string{"mail.example.com.\t0\tIN\tMX\t10 mx.example.com."}},
		{name: "NXDOMAIN", qname: "nope.example.com.", qtype: dns.TypeA, rcode: dns.RcodeNameError, withSOA: true},
		{name: "NODATA", qname: "txt.example.com.", qtype: dns.TypeA, withSOA: true},
		{name: "empty non-terminal is NODATA", qname: "b.c.example.com.", qtype: dns.TypeA, withSOA: true},
		{name: "below an empty non-terminal is NXDOMAIN", qname: "x.c.example.com.", qtype: dns.TypeA, rcode: dns.RcodeNameError, withSOA: true},
		{name: "outside our zones is REFUSED", qname: "www.example.org.", qtype: dns.TypeA, rcode: dns.RcodeRefused, notAuth: true},
		{name: "parent of our zone is REFUSED", qname: "com.", qtype: dns.TypeNS, rcode: dns.RcodeRefused, notAuth: true},
		{name: "names match case-insensitively", qname: "WwW.ExAmPlE.CoM.", qtype: dns.TypeAAAA,
			answer: []string{"WwW.ExAmPlE.CoM.\t0\tIN\tAAAA\t2001:db8::10"}},
		{name: "wildcard synthesises the queried name", qname: "anything.wild.example.com.", qtype: dns.TypeA,
			answer: []string{"anything.wild.example.com.\t0\tIN\tA\t192.0.2.30"}},
		{name: "wildcard covers several labels", qname: "x.y.wild.example.com.", qtype: dns.TypeA,
			answer: []string{"x.y.wild.example.com.\t0\tIN\tA\t192.0.2.30"}},
		{name: "wildcard does not answer a name that exists", qname: "host.wild.example.com.", qtype: dns.TypeA, withSOA: true},
		{name: "wildcard answers NODATA for other types", qname: "other.wild.example.com.", qtype: dns.TypeAAAA, withSOA: true},
		{name: "the wildcard name itself", qname: "*.wild.example.com.", qtype: dns.TypeA,
			answer: []string{"*.wild.example.com.\t0\tIN\tA\t192.0.2.30"}},
		{name: "wildcard below the wildcard is NXDOMAIN", qname: "a.*.wild.example.com.", qtype: dns.TypeA, rcode: dns.RcodeNameError, withSOA: true},
		{name: "the parent of a wildcard is an empty non-terminal", qname: "wild.example.com.", qtype: dns.TypeA, withSOA: true},
		{name: "wildcard CNAME is followed", qname: "foo.alias.example.com.", qtype: dns.TypeA,
			answer: []string{"foo.alias.example.com.\t0\tIN\tCNAME\twww.example.com.", "www.example.com.\t0\tIN\tA\t192.0.2.10", "www.example.com.\t0\tIN\tA\t192.0.2.11"}},
		{name: "apex NS with glue", qname: "example.com.", qtype: dns.TypeNS,
			answer: []string{"example.com.\t0\tIN\tNS\tns1.example.com.", "example.com.\t0\tIN\tNS\tns2.example.net."},
			extra:  []string{"ns1.example.com.\t0\tIN\tA\t192.0.2.1"}},
		{name: "delegation is a referral", qname: "www.sub.example.com.", qtype: dns.TypeA, notAuth: true,
			authority: []string{"sub.example.com.\t0\tIN\tNS\tns.sub.example.com."},
			extra:     []string{"ns.sub.example.com.\t0\tIN\tA\t192.0.2.53"}},
		{name: "ANY is answered with one record set", qname: "www.example.com.", qtype: dns.TypeANY,
			answer: []string{"www.example.com.\t0\tIN\tA\t192.0.2.10", "www.example.com.\t0\tIN\tA\t192.0.2.11"}},
		{name: "ANY on an alias is the alias", qname: "app.example.com.", qtype: dns.TypeANY,
			answer: []string{"app.example.com.\t0\tIN\tCNAME\twww.example.com."}},
		{name: "ANY on an empty non-terminal is NODATA", qname: "c.example.com.", qtype: dns.TypeANY, withSOA: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, tcp := range []bool{false, true} {
				m := exchange(t, s, tc.qname, tc.qtype, queryOpts{tcp: tcp})
				if m.Rcode != tc.rcode {
					t.Fatalf("tcp=%v rcode %s, want %s\n%s", tcp, dns.RcodeToString[m.Rcode], dns.RcodeToString[tc.rcode], m)
				}
				if m.Authoritative == tc.notAuth {
					t.Errorf("tcp=%v AA=%v", tcp, m.Authoritative)
				}
				if m.RecursionAvailable {
					t.Errorf("RA set")
				}
				if !m.RecursionDesired {
					t.Errorf("RD not copied")
				}
				if got := rrText(m.Answer); !slices.Equal(got, tc.answer) {
					t.Errorf("tcp=%v answer\n%q\nwant\n%q", tcp, got, tc.answer)
				}
				if tc.withSOA && !soa(m) {
					t.Errorf("tcp=%v want the SOA in authority, got %v", tcp, m.Ns)
				}
				if tc.authority != nil && !slices.Equal(rrText(m.Ns), tc.authority) {
					t.Errorf("authority %q, want %q", rrText(m.Ns), tc.authority)
				}
				if !tc.withSOA && tc.authority == nil && len(m.Ns) != 0 {
					t.Errorf("unexpected authority %v", m.Ns)
				}
				if got := rrText(m.Extra); !slices.Equal(got, tc.extra) && !(len(got) == 0 && tc.extra == nil) {
					t.Errorf("additional %q, want %q", got, tc.extra)
				}
			}
		})
	}
}

func TestSOAAndTTLs(t *testing.T) {
	s := exampleServer(t, Options{})
	m := exchange(t, s, "example.com.", dns.TypeSOA, queryOpts{})
	if len(m.Answer) != 1 {
		t.Fatalf("SOA answer %v", m.Answer)
	}
	soa := m.Answer[0].(*dns.SOA)
	if soa.Ns != "ns1.example.com." || soa.Mbox != "hostmaster.example.com." || soa.Minttl != soaMinimum {
		t.Errorf("SOA %s", soa)
	}
	if serial, _ := s.Serial("example.com"); soa.Serial != serial {
		t.Errorf("SOA serial %d, Serial() %d", soa.Serial, serial)
	}
	m = exchange(t, s, "api.example.com.", dns.TypeA, withECS(clientUS, 24))
	var ttls []uint32
	for _, rr := range m.Answer {
		ttls = append(ttls, rr.Header().Ttl)
	}
	if want := []uint32{300, 300, 60, 60}; !slices.Equal(ttls, want) {
		t.Errorf("TTLs %v, want %v (300 upper CNAMEs, 60 leaves)", ttls, want)
	}
}

func TestGeoChoice(t *testing.T) {
	s := exampleServer(t, Options{Random: seededRandom(1)})
	for _, tc := range []struct {
		name      string
		opts      queryOpts
		geoTarget string
		addrs     []string
		scope     int
	}{
		{name: "country IE", opts: withECS(clientIE, 24), geoTarget: "ie.klb.api.example.com.", scope: 16},
		{name: "country US", opts: withECS(clientUS, 24), geoTarget: "us.klb.api.example.com.", addrs: []string{"198.51.100.3"}, scope: 16},
		{name: "country JP", opts: withECS(clientJP, 24), geoTarget: "jp.klb.api.example.com.", addrs: []string{"198.51.100.4"}, scope: 8},
		{name: "continent EU for DE", opts: withECS(clientDE, 24), geoTarget: "geo-eu.klb.api.example.com.", addrs: []string{"198.51.100.2"}, scope: 16},
		{name: "continent EU for DE over IPv6", opts: withECS(clientDE6, 56), geoTarget: "geo-eu.klb.api.example.com.", addrs: []string{"198.51.100.2"}, scope: 32},
		{name: "default for a continent without a set", opts: withECS(clientAfrica, 24), geoTarget: "us.klb.api.example.com.", addrs: []string{"198.51.100.3"}, scope: 11},
		{name: "default for an address not in the database", opts: withECS(clientNone, 24), geoTarget: "us.klb.api.example.com.", addrs: []string{"198.51.100.3"}, scope: -1},
		{name: "source prefix 0 asks for the untailored answer", opts: withECS(ecsOff, 0), geoTarget: "us.klb.api.example.com.", addrs: []string{"198.51.100.3"}},
		{name: "source address without ECS", opts: queryOpts{source: loopbackIE}, geoTarget: "ie.klb.api.example.com."},
		{name: "source address not in the database", opts: queryOpts{source: loopbackNone}, geoTarget: "us.klb.api.example.com.", addrs: []string{"198.51.100.3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := exchange(t, s, "api.example.com.", dns.TypeA, tc.opts)
			targets := cnameTargets(m)
			if len(targets) != 3 || targets[0] != "klb.api.example.com." || targets[1] != tc.geoTarget {
				t.Fatalf("chain %q, want klb then %s\n%s", targets, tc.geoTarget, m)
			}
			if tc.addrs != nil && !slices.Equal(addresses(m), tc.addrs) {
				t.Errorf("addresses %q, want %q", addresses(m), tc.addrs)
			}
			if tc.opts.ecs == nil {
				return
			}
			opt := m.IsEdns0()
			if opt == nil || len(opt.Option) != 1 {
				t.Fatalf("no ECS echoed: %v", opt)
			}
			e := opt.Option[0].(*dns.EDNS0_SUBNET)
			if int(e.SourceNetmask) != tc.opts.ecs.Bits() || !e.Address.Equal(tc.opts.ecs.Addr().AsSlice()) {
				t.Errorf("ECS echoed as %s, sent %s", e, tc.opts.ecs)
			}
			if tc.scope >= 0 && int(e.SourceScope) != tc.scope {
				t.Errorf("ECS scope %d, want %d", e.SourceScope, tc.scope)
			}
		})
	}
}

// TestWeightedSplit checks the weighted step over 3,000 queries: weights 30 and 90 share the IE
// traffic 1:3 (a chi-square test, one degree of freedom, p = 0.001), and weight 0 gets none.
func TestWeightedSplit(t *testing.T) {
	s := exampleServer(t, Options{Random: seededRandom(42)})
	const n = 3000
	counts := map[string]int{}
	for range n {
		m := exchange(t, s, "api.example.com.", dns.TypeA, withECS(clientIE, 24))
		a := addresses(m)
		if len(a) != 1 {
			t.Fatalf("answer %v", m.Answer)
		}
		counts[a[0]]++
	}
	if counts["198.51.100.5"] != 0 {
		t.Errorf("weight 0 chosen %d times", counts["198.51.100.5"])
	}
	want := map[string]float64{"198.51.100.1": n * 0.25, "198.51.100.2": n * 0.75}
	chi := 0.0
	for addr, e := range want {
		d := float64(counts[addr]) - e
		chi += d * d / e
	}
	if chi > 10.83 || counts["198.51.100.1"]+counts["198.51.100.2"] != n {
		t.Errorf("split %v, chi-square %.2f exceeds 10.83", counts, chi)
	}
	t.Logf("split %v, chi-square %.2f", counts, chi)
}

// TestWeightedDefaultRandom runs the weighted step on the default random source: every target with
// weight is chosen, within a wide tolerance (the chance of a false failure is below 1e-9).
func TestWeightedDefaultRandom(t *testing.T) {
	s := exampleServer(t, Options{})
	const n = 2000
	ones := 0
	for range n {
		m := exchange(t, s, "ie.klb.api.example.com.", dns.TypeCNAME, withECS(clientIE, 24))
		switch c := cnameTargets(m); c[0] {
		case "c1.klb.api.example.com.":
			ones++
		case "c5.klb.api.example.com.":
			t.Fatalf("weight 0 chosen")
		}
	}
	// Binomial(2000, 0.25): mean 500, sd 19.4; 6.1 sd either side.
	if math.Abs(float64(ones)-500) > 6.1*19.4 {
		t.Errorf("weight 30 of 120 chosen %d of %d times", ones, n)
	}
}

func TestAllZeroWeightsAreChosenEvenly(t *testing.T) {
	s := startServer(t, Options{Random: seededRandom(7)})
	setZone(t, s, "example.com", ZoneData{Endpoints: []*v1alpha1.Endpoint{
		weightedEP("w.example.com", "a.example.net", 0),
		weightedEP("w.example.com", "b.example.net", 0),
	}})
	counts := map[string]int{}
	for range 400 {
		counts[cnameTargets(exchange(t, s, "w.example.com.", dns.TypeA, queryOpts{}))[0]]++
	}
	if counts["a.example.net."] < 150 || counts["b.example.net."] < 150 {
		t.Errorf("split %v", counts)
	}
}

func TestSeveralGeoCodesPerSet(t *testing.T) {
	s := startServer(t, Options{GeoIPDatabase: writeGeoDB(t)})
	const h = "multi.example.com"
	eu := ep(h, "CNAME", 300, "eu.example.net").WithSetIdentifier("europe")
	eu.ProviderSpecific = v1alpha1.ProviderSpecific{{Name: "geo-code", Value: "IE, DE"}, {Name: "geo-code", Value: "GEO-AF"}}
	setZone(t, s, "example.com", ZoneData{Endpoints: []*v1alpha1.Endpoint{
		eu,
		// Kuadrant's shape: one code per endpoint, the same target under several set identifiers.
		geoEP(h, "apac.example.net", "JP", "JP"),
		geoEP(h, "apac.example.net", "GEO-OC", "GEO-OC"),
		geoEP(h, "world.example.net", "default", "*"),
	}})
	for addr, want := range map[netip.Addr]string{
		clientIE: "eu.example.net.", clientDE: "eu.example.net.", clientAfrica: "eu.example.net.",
		clientJP: "apac.example.net.", clientUS: "world.example.net.",
	} {
		m := exchange(t, s, h+".", dns.TypeA, withECS(addr, 24))
		if got := cnameTargets(m); len(got) != 1 || got[0] != want {
			t.Errorf("%s: %q, want %s", addr, got, want)
		}
	}
}

func TestNoGeoDatabaseServesTheDefault(t *testing.T) {
	s := startServer(t, Options{})
	setZone(t, s, "example.com", ZoneData{Endpoints: exampleZone()})
	m := exchange(t, s, "api.example.com.", dns.TypeA, withECS(clientIE, 24))
	if got := cnameTargets(m); got[1] != "us.klb.api.example.com." {
		t.Errorf("chain %q, want the default", got)
	}
	if e := m.IsEdns0().Option[0].(*dns.EDNS0_SUBNET); e.SourceScope != 0 {
		t.Errorf("scope %d without geo data", e.SourceScope)
	}
}

func TestNoGeoMatchAndNoDefaultIsDeterministic(t *testing.T) {
	s := startServer(t, Options{GeoIPDatabase: writeGeoDB(t)})
	setZone(t, s, "example.com", ZoneData{Endpoints: []*v1alpha1.Endpoint{
		geoEP("g.example.com", "us.example.net", "US", "US"),
		geoEP("g.example.com", "de.example.net", "DE", "DE"),
	}})
	for range 20 {
		if got := cnameTargets(exchange(t, s, "g.example.com.", dns.TypeA, withECS(clientJP, 24))); got[0] != "de.example.net." {
			t.Fatalf("JP client got %q, want the first set by identifier", got)
		}
	}
}

func TestEDNS(t *testing.T) {
	s := exampleServer(t, Options{})
	t.Run("OPT echoed with our size and DO", func(t *testing.T) {
		m := exchange(t, s, "www.example.com.", dns.TypeA, queryOpts{edns: true, udpSize: 4096, do: true})
		opt := m.IsEdns0()
		if opt == nil || opt.UDPSize() != maxUDPDefault || !opt.Do() || opt.Version() != 0 {
			t.Fatalf("OPT %v", opt)
		}
	})
	t.Run("no OPT without EDNS", func(t *testing.T) {
		if m := exchange(t, s, "www.example.com.", dns.TypeA, queryOpts{}); m.IsEdns0() != nil {
			t.Fatal("OPT in answer to a query without one")
		}
	})
	t.Run("large answer truncated over UDP, whole over TCP", func(t *testing.T) {
		for _, o := range []queryOpts{{}, {edns: true, udpSize: 1232}, {edns: true, udpSize: 4096}} {
			m := exchange(t, s, "big.example.com.", dns.TypeA, o)
			if !m.Truncated || len(m.Answer) != 0 {
				t.Errorf("udp %+v: TC=%v answers=%d", o, m.Truncated, len(m.Answer))
			}
		}
		m := exchange(t, s, "big.example.com.", dns.TypeA, queryOpts{tcp: true})
		if m.Truncated || len(m.Answer) != 100 {
			t.Errorf("tcp: TC=%v answers=%d", m.Truncated, len(m.Answer))
		}
	})
	t.Run("UDP size honoured", func(t *testing.T) {
		// mid.example.com's answer is about 700 bytes: over 512, under 1232. A size below 512 counts
		// as 512 (RFC 6891 6.2.5).
		for _, tc := range []struct {
			o  queryOpts
			tc bool
		}{
			{queryOpts{}, true},
			{queryOpts{edns: true, udpSize: 300}, true},
			{queryOpts{edns: true, udpSize: 512}, true},
			{queryOpts{edns: true, udpSize: 800}, false},
			{queryOpts{edns: true, udpSize: 1232}, false},
		} {
			m := exchange(t, s, "mid.example.com.", dns.TypeA, tc.o)
			if m.Truncated != tc.tc || (!tc.tc && len(m.Answer) != 40) {
				t.Errorf("%+v: TC=%v answers=%d", tc.o, m.Truncated, len(m.Answer))
			}
		}
	})
	t.Run("unknown EDNS version is BADVERS", func(t *testing.T) {
		m := new(dns.Msg)
		m.SetQuestion("www.example.com.", dns.TypeA)
		m.SetEdns0(1232, false)
		m.IsEdns0().SetVersion(1)
		resp, _, err := (&dns.Client{}).Exchange(m, s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Rcode != dns.RcodeBadVers || len(resp.Answer) != 0 {
			t.Errorf("rcode %s", dns.RcodeToString[resp.Rcode])
		}
	})
}

func TestSerialGrowsOnChangeOnly(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := startServer(t, Options{})
	data := ZoneData{Endpoints: []*v1alpha1.Endpoint{ep("a.example.com", "A", 60, "192.0.2.1")}, Changed: now}
	first := setZone(t, s, "example.com", data)
	if first.Serial != uint32(now.Unix()) || !first.Changed {
		t.Fatalf("first %+v", first)
	}
	// The same content again (a resync) keeps the serial.
	again := setZone(t, s, "example.com", ZoneData{Endpoints: []*v1alpha1.Endpoint{ep("A.example.com.", "A", 60, "192.0.2.1")}, Changed: now.Add(50 * time.Second)})
	if again.Changed || again.Serial != first.Serial {
		t.Fatalf("resync changed the zone: %+v", again)
	}
	// A change within the same second still moves the serial.
	data.Endpoints = append(data.Endpoints, ep("b.example.com", "A", 60, "192.0.2.2"))
	second := setZone(t, s, "example.com", data)
	if second.Serial != first.Serial+1 {
		t.Fatalf("second serial %d after %d", second.Serial, first.Serial)
	}
	third := setZone(t, s, "example.com", ZoneData{Endpoints: data.Endpoints[:1], Changed: now.Add(60 * time.Second)})
	if third.Serial != uint32(now.Unix()+60) {
		t.Fatalf("third serial %d", third.Serial)
	}
	m := exchange(t, s, "example.com.", dns.TypeSOA, queryOpts{})
	if got := m.Answer[0].(*dns.SOA).Serial; got != third.Serial {
		t.Errorf("served serial %d, want %d", got, third.Serial)
	}
	if m := exchange(t, s, "b.example.com.", dns.TypeA, queryOpts{}); m.Rcode != dns.RcodeNameError {
		t.Errorf("removed name answered %s", dns.RcodeToString[m.Rcode])
	}
}

func TestZonesAreIndependent(t *testing.T) {
	s := startServer(t, Options{})
	setZone(t, s, "example.com", ZoneData{Endpoints: []*v1alpha1.Endpoint{ep("a.example.com", "A", 60, "192.0.2.1")}})
	setZone(t, s, "sub.example.com", ZoneData{Endpoints: []*v1alpha1.Endpoint{ep("a.sub.example.com", "A", 60, "192.0.2.2")}})
	if got := addresses(exchange(t, s, "a.sub.example.com.", dns.TypeA, queryOpts{})); !slices.Equal(got, []string{"192.0.2.2"}) {
		t.Errorf("most specific zone not chosen: %q", got)
	}
	parent := s.findZone(mustWire(t, "example.com"))
	setZone(t, s, "sub.example.com", ZoneData{Endpoints: []*v1alpha1.Endpoint{ep("a.sub.example.com", "A", 60, "192.0.2.3")}})
	if s.findZone(mustWire(t, "example.com")) != parent {
		t.Errorf("a change to another zone rebuilt example.com")
	}
	s.RemoveZone("sub.example.com")
	if m := exchange(t, s, "a.sub.example.com.", dns.TypeA, queryOpts{}); m.Rcode != dns.RcodeNameError {
		t.Errorf("after removing the subzone the parent answers: %s", dns.RcodeToString[m.Rcode])
	}
	s.RemoveZone("example.com")
	if m := exchange(t, s, "a.example.com.", dns.TypeA, queryOpts{}); m.Rcode != dns.RcodeRefused {
		t.Errorf("removed zone answered %s", dns.RcodeToString[m.Rcode])
	}
}

func mustWire(t *testing.T, name string) []byte {
	t.Helper()
	w, err := wireName(name)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestSwapUnderQueries changes a zone while clients query it: every answer is one whole version.
func TestSwapUnderQueries(t *testing.T) {
	s := startServer(t, Options{})
	versions := [][]*v1alpha1.Endpoint{
		{ep("www.example.com", "A", 60, "192.0.2.1", "192.0.2.2"), ep("alias.example.com", "CNAME", 60, "www.example.com")},
		{ep("www.example.com", "A", 60, "192.0.2.3"), ep("alias.example.com", "CNAME", 60, "www.example.com"), ep("new.example.com", "A", 60, "192.0.2.4")},
	}
	want := [][]string{{"192.0.2.1", "192.0.2.2"}, {"192.0.2.3"}}
	setZone(t, s, "example.com", ZoneData{Endpoints: versions[0]})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				got := addresses(exchange(t, s, "alias.example.com.", dns.TypeA, queryOpts{}))
				if !slices.Equal(got, want[0]) && !slices.Equal(got, want[1]) {
					t.Errorf("answer mixes versions: %q", got)
					return
				}
			}
		})
	}
	for i := range 200 {
		setZone(t, s, "example.com", ZoneData{Endpoints: versions[i%2]})
	}
	close(stop)
	wg.Wait()
}

func TestSkippedEndpoints(t *testing.T) {
	s := startServer(t, Options{})
	st := setZone(t, s, "example.com", ZoneData{Endpoints: []*v1alpha1.Endpoint{
		ep("ok.example.com", "A", 60, "192.0.2.1", "not-an-ip"),
		ep("other.example.org", "A", 60, "192.0.2.1"),
		ep("example.com", "CNAME", 60, "elsewhere.example.net"),
		ep("both.example.com", "A", 60, "192.0.2.2"),
		ep("both.example.com", "CNAME", 60, "elsewhere.example.net"),
		ep("v6.example.com", "A", 60, "2001:db8::1"),
	}})
	if len(st.Skipped) != 5 {
		t.Errorf("skipped %q", st.Skipped)
	}
	for _, want := range []string{"not-an-ip", "outside zone", "apex", "other records share the name", "2001:db8::1"} {
		if !slices.ContainsFunc(st.Skipped, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("no skip mentions %q: %q", want, st.Skipped)
		}
	}
	if got := addresses(exchange(t, s, "ok.example.com.", dns.TypeA, queryOpts{})); !slices.Equal(got, []string{"192.0.2.1"}) {
		t.Errorf("the valid target is not served: %q", got)
	}
	if got := addresses(exchange(t, s, "both.example.com.", dns.TypeA, queryOpts{})); !slices.Equal(got, []string{"192.0.2.2"}) {
		t.Errorf("%q", got)
	}
}

func TestReplicasAnswerAlike(t *testing.T) {
	db := writeGeoDB(t)
	var servers []*Server
	for range 3 {
		s := startServer(t, Options{GeoIPDatabase: db})
		setZone(t, s, "example.com", ZoneData{Endpoints: exampleZone(), Changed: time.Unix(1_800_000_000, 0)})
		servers = append(servers, s)
	}
	for _, q := range []struct {
		name  string
		qtype uint16
		o     queryOpts
	}{
		{"api.example.com.", dns.TypeA, withECS(clientUS, 24)},
		{"api.example.com.", dns.TypeA, withECS(clientDE, 24)},
		{"api.example.com.", dns.TypeA, withECS(clientAfrica, 24)},
		{"example.com.", dns.TypeSOA, queryOpts{}},
		{"nope.example.com.", dns.TypeA, queryOpts{}},
	} {
		var first []string
		for i, s := range servers {
			m := exchange(t, s, q.name, q.qtype, q.o)
			got := append(rrText(m.Answer), rrText(m.Ns)...)
			if i == 0 {
				first = got
			} else if !slices.Equal(got, first) {
				t.Errorf("%s: replica %d answers %q, replica 0 %q", q.name, i, got, first)
			}
		}
	}
}

func withOption(m *dns.Msg, o dns.EDNS0) []byte {
	m = m.Copy()
	m.SetEdns0(1232, false)
	m.IsEdns0().Option = []dns.EDNS0{o}
	b, err := m.Pack()
	if err != nil {
		panic(err)
	}
	return b
}

func TestMalformedQueries(t *testing.T) {
	s := exampleServer(t, Options{})
	r := newResponder(s)
	valid := new(dns.Msg).SetQuestion("www.example.com.", dns.TypeA)
	packed, _ := valid.Pack()
	for _, tc := range []struct {
		name  string
		msg   []byte
		rcode int
		drop  bool
	}{
		{name: "short", msg: packed[:5], drop: true},
		{name: "a response", msg: func() []byte { b := slices.Clone(packed); b[2] |= 0x80; return b }(), drop: true},
		{name: "no question", msg: func() []byte { b := slices.Clone(packed[:headerLen]); b[5] = 0; return b }(), rcode: dns.RcodeFormatError},
		{name: "truncated question", msg: packed[:len(packed)-2], rcode: dns.RcodeFormatError},
		{name: "compressed question", msg: append(slices.Clone(packed[:headerLen]), 0xC0, 0x0C, 0, 1, 0, 1), rcode: dns.RcodeFormatError},
		{name: "update opcode", msg: func() []byte { b := slices.Clone(packed); b[2] |= dns.OpcodeUpdate << 3; return b }(), rcode: dns.RcodeNotImplemented},
		{name: "chaos class", msg: func() []byte { b := slices.Clone(packed); b[len(b)-1] = dns.ClassCHAOS; return b }(), rcode: dns.RcodeRefused},
		{name: "ECS address longer than its prefix", msg: withOption(valid, &dns.EDNS0_LOCAL{Code: dns.EDNS0SUBNET, Data: []byte{0, 1, 24, 0, 10, 0, 0, 5}}), rcode: dns.RcodeFormatError},
		{name: "ECS bits beyond its prefix", msg: withOption(valid, &dns.EDNS0_LOCAL{Code: dns.EDNS0SUBNET, Data: []byte{0, 1, 20, 0, 10, 0, 0xFF}}), rcode: dns.RcodeFormatError},
		{name: "ECS unknown family", msg: withOption(valid, &dns.EDNS0_LOCAL{Code: dns.EDNS0SUBNET, Data: []byte{0, 3, 0, 0}}), rcode: dns.RcodeFormatError},
		{name: "two OPT records", msg: func() []byte {
			m := valid.Copy()
			m.SetEdns0(1232, false)
			m.Extra = append(m.Extra, m.Extra[0])
			b, _ := m.Pack()
			return b
		}(), rcode: dns.RcodeFormatError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := r.handle(tc.msg)
			if tc.drop {
				if out != nil {
					t.Fatalf("answered %x", out)
				}
				return
			}
			m := new(dns.Msg)
			if err := m.Unpack(out); err != nil {
				t.Fatal(err)
			}
			if m.Rcode != tc.rcode {
				t.Errorf("rcode %s, want %s", dns.RcodeToString[m.Rcode], dns.RcodeToString[tc.rcode])
			}
		})
	}
}
