package dnshealthcheckprobe

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// probeClient is the client label of the checks' requests in Kuadrant's http_client_* metrics
// (providers.InstrumentTransport), as Kuadrant's probe workers label theirs.
const probeClient = "probe"

var (
	// probeCounter is Kuadrant's dns_health_probe_counter, with its labels: 1 for every probe the
	// scheduler runs (Kuadrant counts running probe workers).
	probeCounter = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dns_health_probe_counter",
		Help: "Count of active probes",
	}, []string{"dns_health_check_name", "dns_health_check_namespace", "dns_health_check_host"})
	checks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dnspolicy_health_probe_checks_total",
		Help: "Health checks run, by outcome (passed, status_code, timeout, connection_refused, tls, dns, unusable, error).",
	}, []string{"outcome"})
	checkDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "dnspolicy_health_probe_check_duration_seconds",
		Help:    "Time one health check took, name resolution to response headers.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	})
	probesByState = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dnspolicy_health_probes",
		Help: "DNSHealthCheckProbes this process runs, by the state their status reports (healthy, unhealthy, unknown).",
	}, []string{"state"})
	// Passes and status writes per probe make a hot loop visible, as for DNSRecords.
	passes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dnspolicy_health_probe_reconciles_total",
		Help: "Reconcile passes of a DNSHealthCheckProbe.",
	}, []string{"namespace", "name"})
	statusWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dnspolicy_health_probe_status_writes_total",
		Help: "Status writes of a DNSHealthCheckProbe.",
	}, []string{"namespace", "name"})
)

func init() {
	metrics.Registry.MustRegister(probeCounter, checks, checkDuration, probesByState, passes, statusWrites)
}
