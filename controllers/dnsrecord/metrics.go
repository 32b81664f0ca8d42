package dnsrecord

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	reconcileDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "dnspolicy_dnsrecord_reconcile_duration_seconds",
		Help:    "Time to reconcile one DNSRecord, provider calls included.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
	})
	// Passes per record make a hot loop visible: a record whose count climbs without its spec
	// changing is retrying too fast.
	recordPasses = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dnspolicy_dnsrecord_reconciles_total",
		Help: "Reconcile passes of a DNSRecord.",
	}, []string{"namespace", "name"})
	recordWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dnspolicy_dnsrecord_writes_total",
		Help: "Batches applied to a zone on behalf of a DNSRecord.",
	}, []string{"namespace", "name"})
	conflicts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dnspolicy_dnsrecord_conflicts_total",
		Help: "Reconciles that found this owner's wish not published because another owner's won, by field.",
	}, []string{"field"})
	ownersWithdrawn = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dnspolicy_lease_withdrawals_total",
		Help: "Owners of other clusters withdrawn from shared names because their lease expired, by zone.",
	}, []string{"zone"})
	recordsByReason = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dnspolicy_dnsrecords",
		Help: "DNSRecords by the reason of their Ready condition.",
	}, []string{"reason"})
)

func init() {
	metrics.Registry.MustRegister(reconcileDuration, recordPasses, recordWrites, conflicts, ownersWithdrawn, recordsByReason)
}

// reasons tracks the Ready reason of every record this process reconciles, for recordsByReason.
type reasons struct {
	mu sync.Mutex
	by map[types.NamespacedName]string
}

func (r *reasons) set(key types.NamespacedName, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.by == nil {
		r.by = map[types.NamespacedName]string{}
	}
	if old, ok := r.by[key]; ok {
		if old == reason {
			return
		}
		recordsByReason.WithLabelValues(old).Dec()
	}
	if reason == "" {
		delete(r.by, key)
		recordWrites.DeleteLabelValues(key.Namespace, key.Name)
		recordPasses.DeleteLabelValues(key.Namespace, key.Name)
		return
	}
	r.by[key] = reason
	recordsByReason.WithLabelValues(reason).Inc()
}
