package dnsserver

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// gather returns the metrics of the server's collector named name.
func gather(t *testing.T, s *Server, name string) []*dto.Metric {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(s.Collector())
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()
		}
	}
	return nil
}

// labelValues returns, in order, the values of one label over a zone's series of a metric.
func labelValues(t *testing.T, s *Server, metric, zone, label string) []string {
	t.Helper()
	var out []string
	for _, m := range gather(t, s, metric) {
		var z, v string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "zone":
				z = l.GetValue()
			case label:
				v = l.GetValue()
			}
		}
		if z == zone {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// Every query answered from a zone's data is counted once by the path that produced it, and the
// answers a geo set chose by the code that matched: the client's country or continent when one of
// the zone's sets names it, else "*". A client's own code that no set names (AF) is never a label.
func TestAnswerSourceMetrics(t *testing.T) {
	s := startServer(t, Options{GeoIPDatabase: writeGeoDB(t)})
	eps := append(exampleZone(),
		// A geo set without a default: a client matching none of it gets the first member.
		geoEP("nodefault.example.com", "fr.example.net", "FR", "FR"),
		geoEP("nodefault.example.com", "oc.example.net", "GEO-OC", "GEO-OC"),
		ep("huge.example.com", "TXT", 60, strings.Repeat("x", 70*1024)))
	setZone(t, s, "example.com", ZoneData{Endpoints: eps})
	ecs := func(a netip.Addr) queryOpts { return withECS(a, 24) }
	queries := []struct {
		name  string
		qtype uint16
		o     queryOpts
		want  string
	}{
		{"www.example.com.", dns.TypeA, queryOpts{}, "static"},
		{"chain.example.com.", dns.TypeA, queryOpts{}, "static"},
		{"www.example.com.", dns.TypeANY, queryOpts{}, "static"},
		{"x.wild.example.com.", dns.TypeA, queryOpts{}, "wildcard"},
		{"x.alias.example.com.", dns.TypeA, queryOpts{}, "wildcard"},
		{"ie.klb.api.example.com.", dns.TypeA, queryOpts{}, "weighted"},
		{"api.example.com.", dns.TypeA, ecs(clientIE), "geo"},
		{"api.example.com.", dns.TypeA, ecs(clientUS), "geo"},
		{"api.example.com.", dns.TypeA, ecs(clientJP), "geo"},
		{"api.example.com.", dns.TypeA, ecs(clientDE), "geo"},
		{"api.example.com.", dns.TypeA, ecs(clientNone), "geo_default"},
		{"api.example.com.", dns.TypeA, ecs(clientAfrica), "geo_default"},
		{"api.example.com.", dns.TypeA, queryOpts{}, "geo_default"},
		{"nodefault.example.com.", dns.TypeA, ecs(clientJP), "geo_fallback"},
		{"a.sub.example.com.", dns.TypeA, queryOpts{}, "delegation"},
		{"nope.example.com.", dns.TypeA, queryOpts{}, "nxdomain"},
		{"dangling.example.com.", dns.TypeA, queryOpts{}, "nxdomain"},
		{"www.example.com.", dns.TypeTXT, queryOpts{}, "nodata"},
		{"b.c.example.com.", dns.TypeA, queryOpts{}, "nodata"},
		{"huge.example.com.", dns.TypeTXT, queryOpts{tcp: true}, "refused_set"},
	}
	want := map[string]float64{}
	for _, q := range queries {
		exchange(t, s, q.name, q.qtype, q.o)
		want[q.want]++
	}
	// Not answers from the zone's data: a name in no zone, and a zone transfer nobody may make.
	exchange(t, s, "www.example.org.", dns.TypeA, queryOpts{})
	exchange(t, s, "example.com.", dns.TypeAXFR, queryOpts{tcp: true})

	zone := `zone="example.com."`
	if got := labelValues(t, s, "dnspolicy_dnsserver_answers_total", "example.com.", "source"); !slices.Equal(got, slices.Sorted(slices.Values(sourceNames[1:]))) {
		t.Errorf("sources exported: %q, want every one of %q", got, sourceNames[1:])
	}
	for _, src := range sourceNames[1:] {
		if v := metricValue(t, s, "dnspolicy_dnsserver_answers_total", zone, `source="`+src+`"`); v != want[src] {
			t.Errorf("answers{source=%q} = %v, want %v", src, v, want[src])
		}
	}
	if v := metricValue(t, s, "dnspolicy_dnsserver_answers_total", `zone=""`); v != 0 {
		t.Errorf("answers outside every zone = %v, want none", v)
	}
	// The same counters give the queries by rcode: each source's answers under its rcode, and the
	// refused transfer under REFUSED.
	for rcode, want := range map[string]float64{"NOERROR": float64(len(queries)) - want["nxdomain"] - want["refused_set"],
		"NXDOMAIN": want["nxdomain"], "SERVFAIL": want["refused_set"], "REFUSED": 1} {
		if v := metricValue(t, s, "dnspolicy_dnsserver_queries_total", zone, `rcode="`+rcode+`"`); v != want {
			t.Errorf("queries{rcode=%q} = %v, want %v", rcode, v, want)
		}
	}

	wantGeo := map[string]float64{"IE": 1, "US": 1, "JP": 1, "GEO-EU": 1, "*": 3, "FR": 0, "GEO-OC": 0}
	if got, codes := labelValues(t, s, "dnspolicy_dnsserver_geo_answers_total", "example.com.", "geo"), slices.Sorted(func(yield func(string) bool) {
		for c := range wantGeo {
			if !yield(c) {
				return
			}
		}
	}); !slices.Equal(got, codes) {
		t.Errorf("geo codes exported: %q, want the zone's codes %q", got, codes)
	}
	var geoSum float64
	for code, n := range wantGeo {
		v := metricValue(t, s, "dnspolicy_dnsserver_geo_answers_total", zone, `geo="`+code+`"`)
		if v != n {
			t.Errorf("geo_answers{geo=%q} = %v, want %v", code, v, n)
		}
		geoSum += v
	}
	if geoSum != want["geo"]+want["geo_default"] {
		t.Errorf("geo answers add up to %v, answers by geo and geo_default to %v", geoSum, want["geo"]+want["geo_default"])
	}
}

// An answer whose rcode is not the one its source implies is counted by its rcode alone, so the
// queries by rcode stay exact.
func TestQueryStatsKeepTheRcode(t *testing.T) {
	var q queryStats
	q.add(dns.TypeA, dns.RcodeSuccess, srcNXDomain)
	q.add(dns.TypeA, dns.RcodeNameError, srcNXDomain)
	q.add(dns.TypeA, dns.RcodeRefused, srcNone)
	noerror, refused := int(rcodeIndex[dns.RcodeSuccess]), int(rcodeIndex[dns.RcodeRefused])
	nx := rcodeCells + int(srcNXDomain) - 1
	a := typeIndex[dns.TypeA]
	if q.n[a][noerror].Load() != 1 || q.n[a][nx].Load() != 1 || q.n[a][refused].Load() != 1 {
		t.Errorf("NOERROR %d, nxdomain %d, REFUSED %d; want 1 each", q.n[a][noerror].Load(), q.n[a][nx].Load(), q.n[a][refused].Load())
	}
}

// A code a build of the zone named keeps its series after the zone drops it, so a counter never
// goes back; a new code gets one before any query can reach it.
func TestGeoAnswersSurviveRebuilds(t *testing.T) {
	s := startServer(t, Options{GeoIPDatabase: writeGeoDB(t)})
	setZone(t, s, "example.com", ZoneData{Endpoints: []*v1alpha1.Endpoint{
		geoEP("h.example.com", "ie.example.net", "IE", "IE"), geoEP("h.example.com", "any.example.net", "default", "*"),
	}})
	exchange(t, s, "h.example.com.", dns.TypeA, withECS(clientIE, 24))
	setZone(t, s, "example.com", ZoneData{Endpoints: []*v1alpha1.Endpoint{
		geoEP("h.example.com", "us.example.net", "US", "US"), geoEP("h.example.com", "any.example.net", "default", "*"),
	}})
	exchange(t, s, "h.example.com.", dns.TypeA, withECS(clientUS, 24))
	exchange(t, s, "h.example.com.", dns.TypeA, withECS(clientIE, 24))
	for code, want := range map[string]float64{"IE": 1, "US": 1, "*": 1} {
		if v := metricValue(t, s, "dnspolicy_dnsserver_geo_answers_total", `geo="`+code+`"`); v != want {
			t.Errorf("geo_answers{geo=%q} = %v, want %v", code, v, want)
		}
	}
}

// histogram returns the query duration histogram of a transport.
func histogram(t *testing.T, s *Server, transport string) *dto.Histogram {
	t.Helper()
	for _, m := range gather(t, s, "dnspolicy_dnsserver_query_duration_seconds") {
		if m.GetLabel()[0].GetValue() == transport {
			return m.GetHistogram()
		}
	}
	t.Fatalf("no query duration histogram for %s", transport)
	return nil
}

// Each query answered over UDP or TCP is timed once, in its transport's histogram, with the
// buckets of an in-memory server; a zone transfer is not a query's time and is left out.
func TestQueryDurationHistogram(t *testing.T) {
	s := startServer(t, Options{TSIGKeys: testKeys, TransferKeys: testTransferKeys})
	simpleZone(t, s)
	const udp, tcp = 7, 3
	for range udp {
		exchange(t, s, "www.example.com.", dns.TypeA, queryOpts{})
	}
	for range tcp {
		exchange(t, s, "www.example.com.", dns.TypeA, queryOpts{tcp: true})
	}
	if _, err := transferZone(t, s, "example.com.", dns.TypeAXFR, 0, testKey, testSecret); err != nil {
		t.Fatal(err)
	}
	for transport, want := range map[string]uint64{"udp": udp, "tcp": tcp} {
		// The server times a query once its answer is written, which may be just after the
		// client read it.
		deadline := time.Now().Add(5 * time.Second)
		h := histogram(t, s, transport)
		for h.GetSampleCount() < want && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			h = histogram(t, s, transport)
		}
		if h.GetSampleCount() != want {
			t.Errorf("%s: %d queries timed, want %d", transport, h.GetSampleCount(), want)
		}
		if h.GetSampleSum() <= 0 {
			t.Errorf("%s: durations add up to %v", transport, h.GetSampleSum())
		}
		var bounds []float64
		prev := uint64(0)
		for _, b := range h.GetBucket() {
			bounds = append(bounds, b.GetUpperBound())
			if b.GetCumulativeCount() < prev || b.GetCumulativeCount() > h.GetSampleCount() {
				t.Errorf("%s: bucket le=%v holds %d after %d, of %d", transport, b.GetUpperBound(), b.GetCumulativeCount(), prev, h.GetSampleCount())
			}
			prev = b.GetCumulativeCount()
		}
		if want := []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1}; !slices.Equal(bounds, want) {
			t.Errorf("%s: buckets %v, want %v", transport, bounds, want)
		}
	}
}

// A duration falls in the first bucket whose bound it does not exceed (Prometheus' le), and past the
// last in the overflow bucket, counted in the histogram's count only.
func TestLatencyBuckets(t *testing.T) {
	var l latencyStats
	l.observe(50*time.Microsecond, 1)
	l.observe(51*time.Microsecond, 2)
	l.observe(100*time.Millisecond, 1)
	l.observe(time.Second, 1)
	want := [len(latencyBounds) + 1]uint64{0: 1, 1: 2, 10: 1, 11: 1}
	for i := range want {
		if got := l.buckets[i].Load(); got != want[i] {
			t.Errorf("bucket %d: %d, want %d", i, got, want[i])
		}
	}
	if got, want := time.Duration(l.sumNanos.Load()), 50*time.Microsecond+102*time.Microsecond+1100*time.Millisecond; got != want {
		t.Errorf("sum %v, want %v", got, want)
	}
}

// Geo slots name the code as an endpoint writes it; a code that is not two letters has no slot.
func TestGeoSlots(t *testing.T) {
	for _, c := range []struct {
		code      string
		continent bool
		label     string
	}{{"IE", false, "IE"}, {"ZZ", false, "ZZ"}, {"AA", false, "AA"}, {"EU", true, "GEO-EU"}, {"AF", true, "GEO-AF"}} {
		slot := geoSlot(geoKey(c.code), c.continent)
		if slot == noGeoSlot || slot == geoDefaultSlot || geoLabel(slot) != c.label {
			t.Errorf("%s (continent %v): slot %d, label %q, want %q", c.code, c.continent, slot, geoLabel(slot), c.label)
		}
	}
	if geoLabel(geoDefaultSlot) != v1alpha1.WildcardGeo {
		t.Errorf("default slot label %q", geoLabel(geoDefaultSlot))
	}
	for _, code := range []string{"ie", "1E", "I-", "[A"} {
		if slot := geoSlot(geoKey(code), false); slot != noGeoSlot {
			t.Errorf("%q has slot %d, want none", code, slot)
		}
	}
}
