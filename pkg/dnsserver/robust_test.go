package dnsserver

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// A set of 5,000 addresses and a TXT of over 64 KiB cannot be sent in one DNS message, and an
// endpoint of more than v1alpha1.MaxTargets targets is over the bound every DNSRecord is held to.
// The zone is built without them: their names answer SERVFAIL over UDP and TCP (well-formed, never
// a denial a resolver would cache, never a partial set), each source says why, and the rest of the
// zone answers as before. Endpoints of at most 1,000 targets each make the large sets, as a
// validated record can hold no more per endpoint.
func TestOversizedSetsAreRefused(t *testing.T) {
	s := startServer(t, Options{})
	var many []string
	for i := range 5000 {
		many = append(many, fmt.Sprintf("10.%d.%d.%d", i/65536, i/256%256, i%256))
	}
	thousands := func(name string, n int) []*v1alpha1.Endpoint {
		var out []*v1alpha1.Endpoint
		for i := 0; i < n; i += v1alpha1.MaxTargets {
			out = append(out, ep(name, "A", 60, many[i:i+v1alpha1.MaxTargets]...))
		}
		return out
	}
	st := setZone(t, s, "example.com", ZoneData{Sources: []Source{
		{Name: "tenant/big", Endpoints: thousands("big.example.com", 5000)},
		{Name: "tenant/txt", Endpoints: []*v1alpha1.Endpoint{ep("txt.example.com", "TXT", 60, strings.Repeat("x", 70*1024))}},
		{Name: "tenant/wide", Endpoints: []*v1alpha1.Endpoint{ep("over.example.com", "A", 60, many[:v1alpha1.MaxTargets+1]...)}},
		// wide fits: 3,000 addresses are 48 KB over TCP.
		{Name: "tenant/ok", Endpoints: append([]*v1alpha1.Endpoint{ep("www.example.com", "A", 60, "192.0.2.10")},
			thousands("wide.example.com", 3000)...)},
	}})
	for src, why := range map[string]string{"tenant/big": "one DNS message can carry", "tenant/txt": "one DNS message can carry",
		"tenant/wide": "1001 targets, more than the 1000 one endpoint may have"} {
		if len(st.Refused[src]) != 1 || !strings.Contains(strings.Join(st.Refused[src], ""), why) {
			t.Errorf("%s: refusals %q", src, st.Refused[src])
		}
	}
	if len(st.Refused["tenant/ok"]) != 0 {
		t.Errorf("tenant/ok refused: %q", st.Refused["tenant/ok"])
	}
	for _, tcp := range []bool{false, true} {
		for _, q := range []struct {
			name  string
			qtype uint16
		}{{"big.example.com.", dns.TypeA}, {"txt.example.com.", dns.TypeTXT}, {"big.example.com.", dns.TypeANY}, {"over.example.com.", dns.TypeA}} {
			if r := exchange(t, s, q.name, q.qtype, queryOpts{tcp: tcp, edns: true}); r.Rcode != dns.RcodeServerFailure || len(r.Answer) != 0 {
				t.Errorf("%s %s (tcp=%v): %s with %d answers, want SERVFAIL", q.name, dns.TypeToString[q.qtype], tcp, dns.RcodeToString[r.Rcode], len(r.Answer))
			}
		}
		if r := exchange(t, s, "www.example.com.", dns.TypeA, queryOpts{tcp: tcp}); len(r.Answer) != 1 {
			t.Errorf("www (tcp=%v): %v", tcp, r)
		}
	}
	if r := exchange(t, s, "wide.example.com.", dns.TypeA, queryOpts{edns: true}); !r.Truncated {
		t.Errorf("3,000 addresses over UDP are not truncated")
	}
	if r := exchange(t, s, "wide.example.com.", dns.TypeA, queryOpts{tcp: true}); len(r.Answer) != 3000 {
		t.Errorf("3,000 addresses over TCP: %d answers", len(r.Answer))
	}
	if v := metricValue(t, s, "dnspolicy_dnsserver_zone_refused_records", `zone="example.com."`); v != 3 {
		t.Errorf("refused records metric %v", v)
	}
}

// Data over the protocol's limits is refused at build time with a reason, never packed: names over
// 63-byte labels or 255 bytes, as owners or targets. A quoted TXT string over 255 bytes is split
// into strings, as zone files are read.
func TestUnrepresentableRecordsAreRefused(t *testing.T) {
	s := startServer(t, Options{})
	long := strings.Repeat("a", 64)
	st := setZone(t, s, "example.com", ZoneData{Endpoints: []*v1alpha1.Endpoint{
		ep("q.example.com", "TXT", 60, `"`+strings.Repeat("y", 300)+`"`),
		ep(long+".example.com", "A", 60, "192.0.2.1"),
		ep(strings.Repeat("abcdefghi.", 26)+"example.com", "A", 60, "192.0.2.1"),
		ep("c.example.com", "CNAME", 60, long+".example.org"),
		ep("www.example.com", "A", 60, "192.0.2.10"),
	}})
	if len(st.Skipped) != 3 {
		t.Fatalf("skipped %q", st.Skipped)
	}
	if r := exchange(t, s, "q.example.com.", dns.TypeTXT, queryOpts{edns: true}); len(r.Answer) != 1 || len(strings.Join(r.Answer[0].(*dns.TXT).Txt, "")) != 300 {
		t.Errorf("long quoted TXT: %v", r)
	}
	if r := exchange(t, s, "www.example.com.", dns.TypeA, queryOpts{}); len(r.Answer) != 1 {
		t.Errorf("www: %v", r)
	}
}

// The apex NS and SOA come from the server's configuration: records cannot re-delegate the zone.
func TestApexNSAndSOAComeFromConfiguration(t *testing.T) {
	s := startServer(t, Options{})
	st := setZone(t, s, "example.com", ZoneData{Nameservers: []string{"ns1.example.com"}, Sources: []Source{{Name: "tenant/x", Endpoints: []*v1alpha1.Endpoint{
		ep("example.com", "NS", 300, "ns.evil.example.net"),
		ep("example.com", "SOA", 300, "ns.evil.example.net. h.evil.example.net. 1 2 3 4 5"),
		ep("example.com", "A", 60, "192.0.2.1"),
	}}}})
	if got := st.Refused["tenant/x"]; len(got) != 2 || !strings.Contains(got[0], "server's configuration") {
		t.Errorf("refusals %q", got)
	}
	r := exchange(t, s, "example.com.", dns.TypeNS, queryOpts{})
	if got := rrText(r.Answer); !slices.Equal(got, []string{"example.com.\t0\tIN\tNS\tns1.example.com."}) {
		t.Errorf("apex NS %q", got)
	}
	r = exchange(t, s, "example.com.", dns.TypeSOA, queryOpts{})
	if soa := r.Answer[0].(*dns.SOA); soa.Ns != "ns1.example.com." {
		t.Errorf("SOA %v", soa)
	}
}

// Answers are counted by zone, type and rcode; names outside every zone by reason.
func TestQueryMetrics(t *testing.T) {
	s := startServer(t, Options{})
	simpleZone(t, s)
	for range 3 {
		exchange(t, s, "www.example.com.", dns.TypeA, queryOpts{})
	}
	exchange(t, s, "nope.example.com.", dns.TypeA, queryOpts{})
	exchange(t, s, "www.example.org.", dns.TypeA, queryOpts{})
	for _, c := range []struct {
		labels []string
		want   float64
	}{
		{[]string{`zone="example.com."`, `type="A"`, `rcode="NOERROR"`}, 3},
		{[]string{`zone="example.com."`, `type="A"`, `rcode="NXDOMAIN"`}, 1},
		{[]string{`zone=""`, `rcode="REFUSED"`}, 1},
	} {
		if v := metricValue(t, s, "dnspolicy_dnsserver_queries_total", c.labels...); v != c.want {
			t.Errorf("queries %v = %v, want %v", c.labels, v, c.want)
		}
	}
	if v := metricValue(t, s, "dnspolicy_dnsserver_refused_total", `reason="not authoritative"`); v != 1 {
		t.Errorf("refused = %v", v)
	}
}

// An endpoint whose TTL is over the server's cap (a day unless Options.MaxTTL raises it) or whose
// weight is over v1alpha1.MaxWeight is refused, as the record controller refuses any record's: its
// source says why, and the rest of the zone is served.
func TestTTLAndWeightCaps(t *testing.T) {
	weighted := func(name, target, weight string) *v1alpha1.Endpoint {
		return ep(name, "CNAME", 60, target).WithSetIdentifier(target).WithProviderSpecific(v1alpha1.ProviderSpecificWeight, weight)
	}
	data := ZoneData{Sources: []Source{
		{Name: "tenant/ttl", Endpoints: []*v1alpha1.Endpoint{ep("long.example.com", "A", v1alpha1.DefaultMaxTTL+1, "192.0.2.1")}},
		{Name: "tenant/weight", Endpoints: []*v1alpha1.Endpoint{weighted("heavy.example.com", "a.example.net", "256"),
			weighted("heavy.example.com", "b.example.net", "18446744073709551616")}},
		{Name: "tenant/ok", Endpoints: []*v1alpha1.Endpoint{ep("day.example.com", "A", v1alpha1.DefaultMaxTTL, "192.0.2.2"),
			weighted("lb.example.com", "c.example.net", "255")}},
	}}
	st := setZone(t, startServer(t, Options{}), "example.com", data)
	for src, want := range map[string][]string{
		"tenant/ttl":    {"TTL 86401, more than the 86400 allowed (--max-ttl)"},
		"tenant/weight": {"weight 256, more than the 255 every provider accepts", "weight 18446744073709551615, more than the 255"},
	} {
		if got := strings.Join(st.Refused[src], "; "); len(st.Refused[src]) != len(want) || !strings.Contains(got, want[0]) || !strings.Contains(got, want[len(want)-1]) {
			t.Errorf("%s: refusals %q, want %q", src, st.Refused[src], want)
		}
	}
	if len(st.Refused["tenant/ok"]) != 0 {
		t.Errorf("tenant/ok refused: %q", st.Refused["tenant/ok"])
	}
	// An operator who raised the cap serves the longer TTL.
	if st := setZone(t, startServer(t, Options{MaxTTL: v1alpha1.MaxTTL}), "example.com", data); len(st.Refused["tenant/ttl"]) != 0 {
		t.Errorf("with the cap raised: %q", st.Refused["tenant/ttl"])
	}
}
