package dnspolicy

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	reconcileDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "dnspolicy_dnspolicy_reconcile_duration_seconds",
		Help:    "Time of one pass over a Gateway and the DNSPolicies targeting it.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
	})
	// Passes per policy make a hot loop visible: a policy whose count climbs while nothing it
	// depends on changes is being judged too often.
	policyPasses = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dnspolicy_dnspolicy_reconciles_total",
		Help: "Passes that judged a DNSPolicy.",
	}, []string{"namespace", "name"})
)

func init() {
	metrics.Registry.MustRegister(reconcileDuration, policyPasses)
}
