package dnsrecord

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
)

// The series every record has, four per record, are kept as plain numbers in one table and
// exported at each scrape (as Kuadrant reports its records from its cache at each scrape): a
// client_golang vector keeps about a kilobyte of objects per series, and at 10,000 records its
// 40,000 series were 44 MB, a third of the controller's live heap. Series only some records have
// (groups, authoritative specs) stay vectors.
var (
	descRecordPasses = prometheus.NewDesc("dnspolicy_dnsrecord_reconciles_total",
		// Passes per record make a hot loop visible: a record whose count climbs without its spec
		// changing is retrying too fast.
		"Reconcile passes of a DNSRecord.", []string{"namespace", "name"}, nil)
	descRecordWrites = prometheus.NewDesc("dnspolicy_dnsrecord_writes_total",
		"Batches applied to a zone on behalf of a DNSRecord.", []string{"namespace", "name"}, nil)
	// Kuadrant's, with its names, help and labels (metrics.go).
	descKuadrantWriteCounter = prometheus.NewDesc("dns_provider_write_counter",
		"Counts DNS provider write operations for a current generation of the DNS record",
		[]string{"dns_record_name", "dns_record_namespace"}, nil)
	descKuadrantRecordReady = prometheus.NewDesc("dns_provider_record_ready",
		"Reports the ready state of the dns record. 0 - not ready, 1 - ready. It also provides some metadata of the record in question",
		[]string{"dns_record_name", "dns_record_namespace", "dns_record_root_host", "dns_record_is_delegating"}, nil)
)

// recordSeries is the process's table of per-record series. It is one for the process, as the
// vectors it replaces were: several record controllers in one process (tests) count into the same
// series.
var recordSeries = &seriesTable{}

// seriesTable holds each record's series values.
type seriesTable struct {
	mu      sync.Mutex
	records map[types.NamespacedName]*seriesValues
}

// seriesValues are one record's series. observed says whether a pass has set Kuadrant's two yet
// (before that the record has neither).
type seriesValues struct {
	passes, writes float64
	observed       bool
	writeCounter   float64
	// ready are the label values of dns_provider_record_ready; readiness its value.
	ready     []string
	readiness float64
}

// values returns key's values, made if missing; t.mu is held.
func (t *seriesTable) values(key types.NamespacedName) *seriesValues {
	return entryIn(&t.records, key)
}

// pass counts a reconcile pass of key.
func (t *seriesTable) pass(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.values(key).passes++
}

// wrote counts a batch applied for key.
func (t *seriesTable) wrote(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.values(key).writes++
}

// observe sets Kuadrant's two series of key; ready replaces the label values the record had.
func (t *seriesTable) observe(key types.NamespacedName, writeCounter float64, ready []string, readiness float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v := t.values(key)
	v.observed, v.writeCounter, v.ready, v.readiness = true, writeCounter, ready, readiness
}

// forget drops key's series.
func (t *seriesTable) forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.records, key)
}

func (t *seriesTable) Describe(ch chan<- *prometheus.Desc) {
	ch <- descRecordPasses
	ch <- descRecordWrites
	ch <- descKuadrantWriteCounter
	ch <- descKuadrantRecordReady
}

// Collect exports a copy of the table taken under its lock, so that reconciles do not wait on the
// scrape.
func (t *seriesTable) Collect(ch chan<- prometheus.Metric) {
	type row struct {
		key types.NamespacedName
		seriesValues
	}
	t.mu.Lock()
	rows := make([]row, 0, len(t.records))
	for key, v := range t.records {
		rows = append(rows, row{key, *v})
	}
	t.mu.Unlock()
	for _, r := range rows {
		key, v := r.key, r.seriesValues
		// Each series is born at the first event it counts or the first pass that sets it, as the
		// vectors' were.
		if v.passes > 0 {
			ch <- prometheus.MustNewConstMetric(descRecordPasses, prometheus.CounterValue, v.passes, key.Namespace, key.Name)
		}
		if v.writes > 0 {
			ch <- prometheus.MustNewConstMetric(descRecordWrites, prometheus.CounterValue, v.writes, key.Namespace, key.Name)
		}
		if v.observed {
			ch <- prometheus.MustNewConstMetric(descKuadrantWriteCounter, prometheus.GaugeValue, v.writeCounter, key.Name, key.Namespace)
			ch <- prometheus.MustNewConstMetric(descKuadrantRecordReady, prometheus.GaugeValue, v.readiness, v.ready...)
		}
	}
}
