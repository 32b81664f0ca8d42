// Package goroutine keeps the controller's long-running goroutines alive through a panic in one
// unit of their work (a publish cycle, a probe's check, a peer's pull, a DNS query): the panic is
// logged with its stack, counted in dnspolicy_goroutine_panics_total by component, and the
// goroutine carries on with its next unit. The unit that panicked is not retried at once: the caller
// answers it as failed (Recover's then), and whoever retries it does so on its usual schedule or
// backoff, so a unit that always panics costs what a unit that always fails costs.
//
// A panic is a bug: the metric is for alerting on it, the log for finding it.
package goroutine

import (
	"fmt"
	"runtime/debug"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The components whose goroutines recover.
const (
	Publish   = "publish"
	Prober    = "prober"
	Peers     = "peers"
	DNSServer = "dnsserver"
)

var panics = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "dnspolicy_goroutine_panics_total",
	Help: "Panics recovered in long-running goroutines by component (publish, prober, peers, dnsserver); the goroutine carried on. Any increase is a bug.",
}, []string{"component"})

func init() {
	metrics.Registry.MustRegister(panics)
	// Every component's series exists from the start, so an alert on its increase sees the first.
	for _, c := range []string{Publish, Prober, Peers, DNSServer} {
		panics.WithLabelValues(c)
	}
}

// Recover, deferred by a unit of a long-running goroutine's work, stops a panic in it: it logs the
// panic with its stack and counts it (Recovered), then calls then (if not nil) with the panic's
// value so the caller can answer the unit as failed. It must be deferred directly:
//
//	defer goroutine.Recover(goroutine.Publish, log, func(v any) { ... })
func Recover(component string, log logr.Logger, then func(v any)) {
	v := recover()
	if v == nil {
		return
	}
	Recovered(component, v, log)
	if then != nil {
		then(v)
	}
}

// Recovered logs a panic recovered in component, with its stack and keysAndValues, and counts it.
// For code that calls recover itself (the DNS server's handlers, which also count by transport).
func Recovered(component string, v any, log logr.Logger, keysAndValues ...any) {
	panics.WithLabelValues(component).Inc()
	log.Error(fmt.Errorf("panic: %v", v), "recovered a panic; carrying on",
		append([]any{"component", component, "stack", string(debug.Stack())}, keysAndValues...)...)
}
