package dnsserver

import (
	"sync/atomic"
	"time"

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

// queryStats counts answers by query type and by a cell: the rcode for an answer without a source
// (REFUSED, FORMERR, transfers), else the source, which implies the rcode (sourceRcode). One counter
// add per query gives both queries_total and answers_total, as cheap as counting rcodes alone.
type queryStats struct {
	n [13][numCells]atomic.Uint64
}

// Cells: the counted rcodes (statRcodes and "other"), then a cell per source.
const (
	rcodeCells = 8
	numCells   = rcodeCells + int(numSources) - 1
)

type shardedQueryStats [statShards]queryStats

// add counts an answer. An answer whose rcode is not the one its source implies (none is) is
// counted by rcode, so queries_total stays exact whatever answers_total misses.
func (q *queryStats) add(qtype uint16, rcode int, src answerSource) {
	t := uint8(len(statTypes))
	if qtype < 256 {
		t = typeIndex[qtype]
	}
	cell := int(rcodeIndex[rcode&0xF])
	if src != srcNone && sourceRcode[src] == rcode {
		cell = rcodeCells + int(src) - 1
	}
	q.n[t][cell].Add(1)
}

// answerSource is the path of resolve that produced an answer from a zone's data: the value of the
// source label. An answer that went through several record sets (a CNAME chain) has one source: a
// terminal outcome (referral, NXDOMAIN, NODATA, a refused set) if it ended in one, else the first geo
// choice on the way, else a weighted choice, else whether a wildcard answered.
type answerSource uint8

const (
	// srcNone: not an answer from a zone's data (REFUSED, FORMERR, zone transfers); not counted.
	srcNone answerSource = iota
	srcStatic
	srcWildcard
	srcWeighted
	// srcGeo: the client's country or continent matched a member of a geo set.
	srcGeo
	// srcGeoDefault: no member matched (or the client could not be located) and the "*" member answered.
	srcGeoDefault
	// srcGeoFallback: no member matched and the set has no "*" member: the first one answered.
	srcGeoFallback
	srcDelegation
	srcNXDomain
	// srcCompactNX: a name that does not exist, in a signed answer to a client that did not set CO:
	// NOERROR with a compact denial (RFC 9824).
	srcCompactNX
	srcNoData
	// srcRefusedSet: the set the query asked for was refused by the build (SERVFAIL).
	srcRefusedSet
	numSources
)

var sourceNames = [numSources]string{"", "static", "wildcard", "weighted", "geo", "geo_default", "geo_fallback",
	"delegation", "nxdomain", "nxdomain_compact", "nodata", "refused_set"}

// sourceRcode is the rcode resolve answers each source with.
var sourceRcode = [numSources]int{srcNXDomain: dns.RcodeNameError, srcRefusedSet: dns.RcodeServerFailure}

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
	latency          [statShards]latencyShard
}

// Transports, the index of a latencyShard's histograms.
const (
	transportUDP = 0
	transportTCP = 1
)

// observeLatency adds n answers of one transport that took d each, from reading the query to
// writing the answer.
func (st *serverStats) observeLatency(shard, transport int, d time.Duration, n int) {
	st.latency[shard].t[transport].observe(d, uint64(n))
}

// zoneStats are the counters of one zone; they live as long as the zone is served.
type zoneStats struct {
	queries shardedQueryStats
	// geo counts answers by the geo code of the set that answered; nil until the zone has a geo set.
	geo             atomic.Pointer[geoCounters]
	transfersOK     atomic.Uint64
	transfersFailed atomic.Uint64
	buildsOK        atomic.Uint64
	buildsFailed    atomic.Uint64
	// refusals is how many endpoints or sets the last build left out.
	refusals atomic.Int64
	// signatures counts RRSIGs made; sigEvictions entries the signature cache let go for room.
	signatures   atomic.Uint64
	sigEvictions atomic.Uint64
}

// Geo answers are counted by the code of the member that answered: the client's country or
// continent when it matched one (so always one the zone's sets name), or "*". A slot per possible
// two-letter country and continent and one for "*" bound the label whatever clients send.
const (
	geoLetters     = 26 * 26
	geoDefaultSlot = 2 * geoLetters
	geoSlotCount   = geoDefaultSlot + 1
	noGeoSlot      = -1
)

// geoCell counts the answers of one geo code, a counter per shard, each padded to its own cache
// line so that readers on different cores never write to the same line.
type geoCell [statShards]struct {
	n atomic.Uint64
	_ [56]byte
}

// geoCounters hold a cell per geo code any build of the zone configured. Cells are added when a zone
// is built (ensure), before a snapshot using them is served, and never removed, so the query path
// only loads pointers, and a code dropped from the zone keeps its count until the zone goes.
type geoCounters [geoSlotCount]atomic.Pointer[geoCell]

// geoSlot is the slot of a country (continent false) or continent code packed by geoKey, or
// noGeoSlot for a code that is not two letters A-Z (no database returns one).
func geoSlot(key uint16, continent bool) int {
	a, b := int(key>>8)-'A', int(key&0xFF)-'A'
	if a < 0 || a >= 26 || b < 0 || b >= 26 {
		return noGeoSlot
	}
	if continent {
		return geoLetters + a*26 + b
	}
	return a*26 + b
}

// geoLabel is the value of the geo label of a slot, as the code is written on an endpoint.
func geoLabel(slot int) string {
	if slot == geoDefaultSlot {
		return "*"
	}
	prefix := ""
	if slot >= geoLetters {
		prefix, slot = continentPrefix, slot-geoLetters
	}
	return prefix + string([]byte{byte('A' + slot/26), byte('A' + slot%26)})
}

// ensureGeo makes the cells of a snapshot's geo slots. Called with Server.mu held, before the
// snapshot is stored.
func (zs *zoneStats) ensureGeo(slots []int) {
	if len(slots) == 0 {
		return
	}
	g := zs.geo.Load()
	if g == nil {
		g = new(geoCounters)
		zs.geo.Store(g)
	}
	for _, slot := range slots {
		if g[slot].Load() == nil {
			g[slot].Store(new(geoCell))
		}
	}
}

// countGeo adds a geo answer; a slot without a cell (which ensureGeo rules out) is not counted.
func (zs *zoneStats) countGeo(slot, shard int) {
	if slot == noGeoSlot {
		return
	}
	if g := zs.geo.Load(); g != nil {
		if c := g[slot].Load(); c != nil {
			c[shard].n.Add(1)
		}
	}
}

// latencyBounds are the upper bounds of the query duration buckets: an answer from memory takes
// tens of microseconds, so the buckets start there; 100 ms and over means the process was starved
// of CPU (or a TCP client read slowly), not that answering was slow.
var latencyBounds = [...]time.Duration{50 * time.Microsecond, 100 * time.Microsecond, 250 * time.Microsecond,
	500 * time.Microsecond, time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond}

// latencyStats is a histogram of query durations for one transport: a count per bucket (the last
// for durations over every bound) and the sum.
type latencyStats struct {
	buckets  [len(latencyBounds) + 1]atomic.Uint64
	sumNanos atomic.Uint64
}

// latencyShard is one shard's histograms, by transport (0 UDP, 1 TCP), padded so that two shards
// never share a cache line.
type latencyShard struct {
	t [2]latencyStats
	_ [64]byte
}

// observe adds n queries that took d each (a batch of datagrams read and written together).
func (l *latencyStats) observe(d time.Duration, n uint64) {
	i := 0
	for i < len(latencyBounds) && d > latencyBounds[i] {
		i++
	}
	l.buckets[i].Add(n)
	l.sumNanos.Add(uint64(d) * n)
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
	descAnswers     = prometheus.NewDesc("dnspolicy_dnsserver_answers_total", "Answers from a zone's data, by zone and the path that produced them (static, wildcard, weighted, geo, geo_default, geo_fallback, delegation, nxdomain, nxdomain_compact, nodata, refused_set).", []string{"zone", "source"}, nil)
	descGeoAnswers  = prometheus.NewDesc("dnspolicy_dnsserver_geo_answers_total", "Answers chosen by a geo set, by zone and the geo code that matched (a country, GEO-<continent>, or * for the default).", []string{"zone", "geo"}, nil)
	descSignatures  = prometheus.NewDesc("dnspolicy_dnsserver_dnssec_signatures_total", "RRSIGs made by a signed zone (each set is signed when first served and again when its signatures near expiry, once per signing key).", []string{"zone"}, nil)
	descSigCache    = prometheus.NewDesc("dnspolicy_dnsserver_dnssec_cache_entries", "Entries in a signed zone's cache of signatures that depend on the query name (denials of names that do not exist, wildcard answers).", []string{"zone"}, nil)
	descSigBytes    = prometheus.NewDesc("dnspolicy_dnsserver_dnssec_cache_bytes", "Bytes that cache holds; its bound per signed zone is --dnssec-signature-cache-bytes (16 MiB by default).", []string{"zone"}, nil)
	descSigEvicted  = prometheus.NewDesc("dnspolicy_dnsserver_dnssec_cache_evictions_total", "Entries that cache let go to stay within its bound; a steady rate means a flood of names that do not exist, or a bound too small.", []string{"zone"}, nil)
	descDuration    = prometheus.NewDesc("dnspolicy_dnsserver_query_duration_seconds", "Time from reading a query to writing its answer (zone transfers not included), by transport.", []string{"transport"}, nil)
)

// Collector returns the server's Prometheus metrics; register it once (the controller registers it
// with the manager's registry).
func (s *Server) Collector() prometheus.Collector { return (*collector)(s) }

type collector Server

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descQueries, descTruncated, descRefused, descPanics, descConns, descConnsRej,
		descConnsClosed, descRRL, descTransfers, descBuilds, descRefusals, descGeo, descTSIG, descNotify, descAnswers,
		descGeoAnswers, descSignatures, descSigCache, descSigBytes, descSigEvicted, descDuration} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := (*Server)(c)
	st := &s.stats
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	queries("", &st.unzoned, ch)
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
	c.collectLatency(ch)
	for _, e := range *s.zones.Load() {
		zone := e.snap.Load().origin
		zs := &e.stats
		answers := queries(zone, &zs.queries, ch)
		if !e.export {
			collectAnswers(ch, zone, zs, &answers)
		}
		counter(descTransfers, zs.transfersOK.Load(), zone, "ok")
		counter(descTransfers, zs.transfersFailed.Load(), zone, "error")
		counter(descBuilds, zs.buildsOK.Load(), zone, "ok")
		counter(descBuilds, zs.buildsFailed.Load(), zone, "error")
		ch <- prometheus.MustNewConstMetric(descRefusals, prometheus.GaugeValue, float64(zs.refusals.Load()), zone)
		if z := e.snap.Load().signing; z != nil {
			entries, bytes := z.dynamic.usage()
			counter(descSignatures, zs.signatures.Load(), zone)
			counter(descSigEvicted, zs.sigEvictions.Load(), zone)
			ch <- prometheus.MustNewConstMetric(descSigCache, prometheus.GaugeValue, float64(entries), zone)
			ch <- prometheus.MustNewConstMetric(descSigBytes, prometheus.GaugeValue, float64(bytes), zone)
		}
	}
}

// queries sends the queries of a zone by type and rcode, the shards and, for each rcode, the cells
// of the sources answered with it added up; it returns the answers by source.
func queries(zone string, q *shardedQueryStats, ch chan<- prometheus.Metric) (answers [numSources]uint64) {
	for t := range q[0].n {
		var byRcode [rcodeCells]uint64
		for cell := range q[0].n[t] {
			var v uint64
			for i := range q {
				v += q[i].n[t][cell].Load()
			}
			if cell < rcodeCells {
				byRcode[cell] += v
				continue
			}
			src := answerSource(cell - rcodeCells + 1)
			answers[src] += v
			byRcode[rcodeIndex[sourceRcode[src]]] += v
		}
		for rc, v := range byRcode {
			if v > 0 {
				ch <- prometheus.MustNewConstMetric(descQueries, prometheus.CounterValue, float64(v), zone, typeName(t), rcodeName(rc))
			}
		}
	}
	return answers
}

// collectAnswers sends a zone's answers by source, every source even at 0 so that a panel shows a
// flat line rather than nothing, and its geo answers, every code the zone's sets ever named.
func collectAnswers(ch chan<- prometheus.Metric, zone string, zs *zoneStats, answers *[numSources]uint64) {
	for src := srcNone + 1; src < numSources; src++ {
		ch <- prometheus.MustNewConstMetric(descAnswers, prometheus.CounterValue, float64(answers[src]), zone, sourceNames[src])
	}
	g := zs.geo.Load()
	if g == nil {
		return
	}
	for slot := range g {
		cell := g[slot].Load()
		if cell == nil {
			continue
		}
		var v uint64
		for i := range cell {
			v += cell[i].n.Load()
		}
		ch <- prometheus.MustNewConstMetric(descGeoAnswers, prometheus.CounterValue, float64(v), zone, geoLabel(slot))
	}
}

// collectLatency sends the query duration histograms, the shards added up. The count is the sum of
// the buckets read; the sum of durations is read apart while queries go on, so it may be a few
// queries ahead of them, which no rate over a scrape interval notices.
func (c *collector) collectLatency(ch chan<- prometheus.Metric) {
	for transport, name := range []string{"udp", "tcp"} {
		var counts [len(latencyBounds) + 1]uint64
		var sum uint64
		for i := range c.stats.latency {
			l := &c.stats.latency[i].t[transport]
			for b := range counts {
				counts[b] += l.buckets[b].Load()
			}
			sum += l.sumNanos.Load()
		}
		buckets := make(map[float64]uint64, len(latencyBounds))
		var cumulative uint64
		for b, bound := range latencyBounds {
			cumulative += counts[b]
			buckets[bound.Seconds()] = cumulative
		}
		total := cumulative + counts[len(latencyBounds)]
		ch <- prometheus.MustNewConstHistogram(descDuration, total, time.Duration(sum).Seconds(), buckets, name)
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
