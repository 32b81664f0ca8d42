package dnsserver

import (
	"sync/atomic"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// Counters are plain atomics bumped on the hot path and turned into Prometheus metrics only when
// scraped (Server.Collector), so a query pays a few uncontended additions and no label lookups.

// statTypes are the query types counted by name; any other is counted as "other".
var statTypes = []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeCNAME, dns.TypeTXT, dns.TypeNS, dns.TypeSOA,
	dns.TypeMX, dns.TypeSRV, dns.TypePTR, dns.TypeANY, dns.TypeAXFR, dns.TypeIXFR}

// statRcodes are the rcodes counted by name; any other is counted as "other".
var statRcodes = []int{dns.RcodeSuccess, dns.RcodeFormatError, dns.RcodeServerFailure, dns.RcodeNameError,
	dns.RcodeNotImplemented, dns.RcodeRefused, dns.RcodeNotAuth}

var (
	typeIndex  [256]uint8
	rcodeIndex [16]uint8
)

func init() {
	for i := range typeIndex {
		typeIndex[i] = uint8(len(statTypes))
	}
	for i, t := range statTypes {
		typeIndex[t] = uint8(i)
	}
	for i := range rcodeIndex {
		rcodeIndex[i] = uint8(len(statRcodes))
	}
	for i, c := range statRcodes {
		rcodeIndex[c] = uint8(i)
	}
}

// statShards spreads the query counters of a zone over copies, one per reader (UDP readers take
// one each, TCP connections share them round-robin), so readers on different cores never write to
// the same cache line; a scrape adds the copies up.
const statShards = 8

// queryStats counts answers by query type and rcode, for one zone (or for names in no zone).
type queryStats struct {
	n [13][8]atomic.Uint64
}

type shardedQueryStats [statShards]queryStats

func (q *queryStats) add(qtype uint16, rcode int) {
	t := uint8(len(statTypes))
	if qtype < 256 {
		t = typeIndex[qtype]
	}
	q.n[t][rcodeIndex[rcode&0xF]].Add(1)
}

// Refusal and drop reasons, the values of the reason label.
const (
	refusedNoZone      = "not authoritative"
	refusedTransfer    = "transfer not allowed"
	refusedOther       = "other"
	connLimitTotal     = "total"
	connLimitPerSource = "per source"
)

// serverStats are the server-wide counters.
type serverStats struct {
	unzoned          shardedQueryStats
	nextShard        atomic.Uint32
	truncatedUDP     atomic.Uint64
	truncatedTCP     atomic.Uint64
	refusedNoZone    atomic.Uint64
	refusedTransfer  atomic.Uint64
	refusedOther     atomic.Uint64
	panicsUDP        atomic.Uint64
	panicsTCP        atomic.Uint64
	connsOpen        atomic.Int64
	connsRejTotal    atomic.Uint64
	connsRejSource   atomic.Uint64
	connsQueryLimit  atomic.Uint64
	connsIdle        atomic.Uint64
	connsWriteTimout atomic.Uint64
	rrlSlipped       atomic.Uint64
	rrlDropped       atomic.Uint64
	geoReloadOK      atomic.Uint64
	geoReloadFailed  atomic.Uint64
	tsigFailed       atomic.Uint64
	notifyFailed     atomic.Uint64
}

// zoneStats are the counters of one zone; they live as long as the zone is served.
type zoneStats struct {
	queries         shardedQueryStats
	transfersOK     atomic.Uint64
	transfersFailed atomic.Uint64
	buildsOK        atomic.Uint64
	buildsFailed    atomic.Uint64
	// refusals is how many endpoints or sets the last build left out.
	refusals atomic.Int64
}

var (
	descQueries     = prometheus.NewDesc("dnspolicy_dnsserver_queries_total", "Queries answered, by zone (\"\" for names in no zone), query type and rcode.", []string{"zone", "type", "rcode"}, nil)
	descTruncated   = prometheus.NewDesc("dnspolicy_dnsserver_truncated_total", "Answers sent with TC set because they did not fit (rate-limit slips not included).", []string{"transport"}, nil)
	descRefused     = prometheus.NewDesc("dnspolicy_dnsserver_refused_total", "Queries answered REFUSED, by reason.", []string{"reason"}, nil)
	descPanics      = prometheus.NewDesc("dnspolicy_dnsserver_panics_recovered_total", "Panics recovered while answering (the packet or connection is dropped, the server keeps serving).", []string{"transport"}, nil)
	descConns       = prometheus.NewDesc("dnspolicy_dnsserver_tcp_connections", "Open TCP connections.", nil, nil)
	descConnsRej    = prometheus.NewDesc("dnspolicy_dnsserver_tcp_connections_rejected_total", "TCP connections closed at accept because a connection limit was reached.", []string{"limit"}, nil)
	descConnsClosed = prometheus.NewDesc("dnspolicy_dnsserver_tcp_connections_closed_total", "TCP connections closed by the server, by cause.", []string{"cause"}, nil)
	descRRL         = prometheus.NewDesc("dnspolicy_dnsserver_rate_limited_total", "UDP answers held back by response rate limiting: slipped (sent truncated) or dropped.", []string{"action"}, nil)
	descTransfers   = prometheus.NewDesc("dnspolicy_dnsserver_transfers_total", "Zone transfers (AXFR, IXFR) streamed, by zone and result.", []string{"zone", "result"}, nil)
	descBuilds      = prometheus.NewDesc("dnspolicy_dnsserver_zone_builds_total", "Zone builds, by zone and result (error: the zone kept its previous content).", []string{"zone", "result"}, nil)
	descRefusals    = prometheus.NewDesc("dnspolicy_dnsserver_zone_refused_records", "Endpoints or record sets the last build of a zone left out (each reported on its source record).", []string{"zone"}, nil)
	descGeo         = prometheus.NewDesc("dnspolicy_dnsserver_geo_reloads_total", "Geo database reloads after the file changed, by result (error: the previous database is kept).", []string{"result"}, nil)
	descTSIG        = prometheus.NewDesc("dnspolicy_dnsserver_tsig_failures_total", "Signed messages that failed verification (unknown key, bad signature, bad time).", nil, nil)
	descNotify      = prometheus.NewDesc("dnspolicy_dnsserver_notify_failures_total", "NOTIFY messages a secondary never acknowledged after every retry.", nil, nil)
)

// Collector returns the server's Prometheus metrics; register it once (the controller registers it
// with the manager's registry).
func (s *Server) Collector() prometheus.Collector { return (*collector)(s) }

type collector Server

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descQueries, descTruncated, descRefused, descPanics, descConns, descConnsRej,
		descConnsClosed, descRRL, descTransfers, descBuilds, descRefusals, descGeo, descTSIG, descNotify} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := (*Server)(c)
	st := &s.stats
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	queries := func(zone string, q *shardedQueryStats) {
		for t := range q[0].n {
			for rc := range q[0].n[t] {
				var v uint64
				for i := range q {
					v += q[i].n[t][rc].Load()
				}
				if v > 0 {
					counter(descQueries, v, zone, typeName(t), rcodeName(rc))
				}
			}
		}
	}
	queries("", &st.unzoned)
	counter(descTruncated, st.truncatedUDP.Load(), "udp")
	counter(descTruncated, st.truncatedTCP.Load(), "tcp")
	counter(descRefused, st.refusedNoZone.Load(), refusedNoZone)
	counter(descRefused, st.refusedTransfer.Load(), refusedTransfer)
	counter(descRefused, st.refusedOther.Load(), refusedOther)
	counter(descPanics, st.panicsUDP.Load(), "udp")
	counter(descPanics, st.panicsTCP.Load(), "tcp")
	ch <- prometheus.MustNewConstMetric(descConns, prometheus.GaugeValue, float64(st.connsOpen.Load()))
	counter(descConnsRej, st.connsRejTotal.Load(), connLimitTotal)
	counter(descConnsRej, st.connsRejSource.Load(), connLimitPerSource)
	counter(descConnsClosed, st.connsQueryLimit.Load(), "query limit")
	counter(descConnsClosed, st.connsIdle.Load(), "idle")
	counter(descConnsClosed, st.connsWriteTimout.Load(), "write timeout")
	counter(descRRL, st.rrlSlipped.Load(), "slip")
	counter(descRRL, st.rrlDropped.Load(), "drop")
	counter(descGeo, st.geoReloadOK.Load(), "ok")
	counter(descGeo, st.geoReloadFailed.Load(), "error")
	counter(descTSIG, st.tsigFailed.Load())
	counter(descNotify, st.notifyFailed.Load())
	for _, e := range *s.zones.Load() {
		zone := e.snap.Load().origin
		zs := &e.stats
		queries(zone, &zs.queries)
		counter(descTransfers, zs.transfersOK.Load(), zone, "ok")
		counter(descTransfers, zs.transfersFailed.Load(), zone, "error")
		counter(descBuilds, zs.buildsOK.Load(), zone, "ok")
		counter(descBuilds, zs.buildsFailed.Load(), zone, "error")
		ch <- prometheus.MustNewConstMetric(descRefusals, prometheus.GaugeValue, float64(zs.refusals.Load()), zone)
	}
}

func typeName(i int) string {
	if i < len(statTypes) {
		return dns.TypeToString[statTypes[i]]
	}
	return "other"
}

func rcodeName(i int) string {
	if i < len(statRcodes) {
		return dns.RcodeToString[statRcodes[i]]
	}
	return "other"
}
