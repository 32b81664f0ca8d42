package peers

import (
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// PeerStatus is what the pool knows of one peer.
type PeerStatus struct {
	Peer Peer
	// Cluster is the lease key its export names, "" before a good pull.
	Cluster string
	// LastPull is when its export was last pulled and accepted; zero for never.
	LastPull time.Time
	// Serial and Records are the accepted export's SOA serial and record count.
	Serial  uint32
	Records int
	// Stale: the peer counts as gone (its owners are withdrawn where a live owner claims).
	Stale bool
	// Refused: nothing of the peer is merged for what its export claims (Error says what): the
	// last merge left its export out, or none of its exports was ever accepted.
	Refused bool
	// Error is why the last pull failed, "" after a good one.
	Error string
	// Discovered: found in the zone's NS set, not configured.
	Discovered bool
}

// Status reports the peers of a zone, by address; this cluster's own server, found in the NS set,
// is none.
func (p *Pool) Status(zone string) []PeerStatus {
	zone = v1alpha1.NormalizeName(zone)
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []PeerStatus
	for _, st := range p.peers {
		if st.peer.Zone != zone || st.self {
			continue
		}
		s := PeerStatus{Peer: st.peer, LastPull: st.lastOK, Stale: st.stale, Error: errText(st.err), Discovered: st.discovered,
			Refused: st.left || st.last == nil && st.err != nil && (ReasonOf(st.err) == ReasonOwners || ReasonOf(st.err) == ReasonClaimed)}
		if st.last != nil {
			s.Cluster, s.Serial, s.Records = st.last.Export.Cluster, st.last.Serial, st.last.Records
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b PeerStatus) int { return strings.Compare(a.Peer.Addr, b.Peer.Addr) })
	return out
}

// Metrics.
var (
	descPulls = prometheus.NewDesc("dnspolicy_peer_pulls_total",
		"Pulls of peers' exports, by zone, peer and result (ok, or the reason it failed: unreachable, refused, tsig, garbage, owners, claimed; an export refused at the merge for claimed counts once more).",
		[]string{"zone", "peer", "result"}, nil)
	descLastPull = prometheus.NewDesc("dnspolicy_peer_last_pull_timestamp_seconds",
		"When a peer's export was last pulled and accepted (Unix time; absent before the first).", []string{"zone", "peer"}, nil)
	descSerial = prometheus.NewDesc("dnspolicy_peer_serial",
		"The SOA serial of a peer's last accepted export.", []string{"zone", "peer"}, nil)
	descRecords = prometheus.NewDesc("dnspolicy_peer_records",
		"Records in a peer's last accepted export.", []string{"zone", "peer"}, nil)
	descStale = prometheus.NewDesc("dnspolicy_peer_stale",
		"1 while a peer counts as gone (its export not pulled, or its lease not changing, for its lease duration).", []string{"zone", "peer"}, nil)
	descDiscoveries = prometheus.NewDesc("dnspolicy_peer_discoveries_total",
		"Lookups of a zone's NS set for its peers, by result (ok, failed).", []string{"zone", "result"}, nil)
)

// Collector exports the pool's metrics.
func (p *Pool) Collector() prometheus.Collector { return collector{p} }

type collector struct{ p *Pool }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPulls, descLastPull, descSerial, descRecords, descStale, descDiscoveries} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	for _, d := range c.p.opts.Discover {
		for _, result := range []string{"ok", "failed"} {
			ch <- prometheus.MustNewConstMetric(descDiscoveries, prometheus.CounterValue, float64(c.p.discoveries[d.Zone][result]), d.Zone, result)
		}
	}
	for _, st := range c.p.peers {
		if st.self {
			continue
		}
		zone, addr := st.peer.Zone, st.peer.Addr
		for _, result := range []string{"ok", ReasonUnreachable, ReasonRefused, ReasonTSIG, ReasonGarbage, ReasonOwners, ReasonClaimed} {
			ch <- prometheus.MustNewConstMetric(descPulls, prometheus.CounterValue, float64(st.pulls[result]), zone, addr, result)
		}
		stale := 0.0
		if st.stale {
			stale = 1
		}
		ch <- prometheus.MustNewConstMetric(descStale, prometheus.GaugeValue, stale, zone, addr)
		if st.last != nil {
			ch <- prometheus.MustNewConstMetric(descLastPull, prometheus.GaugeValue, float64(st.lastOK.UnixNano())/1e9, zone, addr)
			ch <- prometheus.MustNewConstMetric(descSerial, prometheus.GaugeValue, float64(st.last.Serial), zone, addr)
			ch <- prometheus.MustNewConstMetric(descRecords, prometheus.GaugeValue, float64(st.last.Records), zone, addr)
		}
	}
}
