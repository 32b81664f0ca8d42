package dnsrecord

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"k8s.io/apimachinery/pkg/types"
)

// memory is what the controller keeps about each record between passes, one entry per record in
// one map, so that a record that goes is forgotten in one call (memory.forget, from
// Reconciler.forget). What other parts keep per record (the backend cache, the publish queues, the
// health tracker) is dropped by Reconciler.forget too, through their own calls.
type memory struct {
	mu      sync.Mutex
	records map[types.NamespacedName]*remembered
	// byOwner finds the record of an owner ID for the passes the publisher asks for (Replan). It is
	// an index of records' owner, kept in step with it.
	byOwner map[string]types.NamespacedName
}

// remembered is what the controller keeps about one record.
type remembered struct {
	// reason is the Ready reason the record is counted under in recordsByReason; "" while it is
	// counted under none.
	reason string
	// series are the label values of its Kuadrant series (metrics.go).
	series kuadrantSeries
	// interval is its current re-check interval (recheck); 0 while it has none. A quiet pass does
	// not write the status, so this, not the status's validFor, is what doubles.
	interval time.Duration
	// owner is the owner ID its last publish pass used, for Replan; "" before one.
	owner string
}

// entry returns key's entry, made if missing. m.mu is held.
func (m *memory) entry(key types.NamespacedName) *remembered { return entryIn(&m.records, key) }

// entryIn returns (*m)[key], made (and the map with it) if missing.
func entryIn[K comparable, V any](m *map[K]*V, key K) *V {
	if *m == nil {
		*m = map[K]*V{}
	}
	v := (*m)[key]
	if v == nil {
		v = new(V)
		(*m)[key] = v
	}
	return v
}

// setReason counts the record under its Ready reason (recordsByReason).
func (m *memory) setReason(key types.NamespacedName, reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entry(key)
	if e.reason == reason {
		return
	}
	if e.reason != "" {
		recordsByReason.WithLabelValues(e.reason).Dec()
	}
	e.reason = reason
	recordsByReason.WithLabelValues(reason).Inc()
}

// interval returns the record's re-check interval, if it has one.
func (m *memory) interval(key types.NamespacedName) (time.Duration, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.records[key]; e != nil && e.interval != 0 {
		return e.interval, true
	}
	return 0, false
}

func (m *memory) setInterval(key types.NamespacedName, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entry(key).interval = d
}

// remember notes that key publishes as owner, for Replan.
func (m *memory) remember(owner string, key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byOwner == nil {
		m.byOwner = map[string]types.NamespacedName{}
	}
	m.entry(key).owner = owner
	m.byOwner[owner] = key
}

// recordsOf returns the records known to publish as owners.
func (m *memory) recordsOf(owners []string) []types.NamespacedName {
	m.mu.Lock()
	defer m.mu.Unlock()
	var keys []types.NamespacedName
	for _, o := range owners {
		if k, ok := m.byOwner[o]; ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// forget drops everything kept about key, and its metric series (a pass counts in recordSeries
// before it knows whether the record is there, so those go even for a record never remembered).
func (m *memory) forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	recordSeries.forget(key)
	groupLabels := prometheus.Labels{"dns_record_namespace": key.Namespace, "dns_record_name": key.Name}
	groupInfo.DeletePartialMatch(groupLabels)
	groupActive.DeletePartialMatch(groupLabels)
	e := m.records[key]
	if e == nil {
		return
	}
	delete(m.records, key)
	if e.owner != "" {
		delete(m.byOwner, e.owner)
	}
	if e.reason != "" {
		recordsByReason.WithLabelValues(e.reason).Dec()
	}
	dropSeries(e.series, kuadrantSeries{})
}
