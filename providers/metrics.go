package providers

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Calls counts provider API calls: they cost money and hit rate limits, so they are the first thing
// to watch.
var calls = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "dnspolicy_provider_calls_total",
	Help: "Calls to DNS providers by provider, operation (zones, records, apply) and result (success, transient, permanent, stale_view).",
}, []string{"provider", "operation", "result"})

// callDuration times the same calls: an apply is one batch written to a zone, so its latency is the
// write latency a zone sees, whatever the backend (HTTP SDKs and DNS UPDATE alike).
var callDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "dnspolicy_provider_call_duration_seconds",
	Help:    "Time of calls to DNS providers by provider and operation (zones, records, apply), retries inside the backend included.",
	Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
}, []string{"provider", "operation"})

// Kuadrant's HTTP client metrics (its internal/metrics/http.go), with its names, help and labels:
// every HTTP request a backend's SDK (client "aws", "google", "azure") or the health prober
// (client "probe") sends, retries included.
var (
	httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "http_client_requests_total",
		Help: "A counter for requests from the wrapped client.",
	}, []string{"client", "code", "method"})
	httpLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "http_client_request_latency_seconds",
		Help:    "A histogram of request latencies.",
		Buckets: prometheus.DefBuckets,
	}, []string{"client", "code", "method"})
	httpInFlight = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "http_client_in_flight_requests",
		Help: "A gauge of in-flight requests for the wrapped client.",
	}, []string{"client"})
)

func init() {
	metrics.Registry.MustRegister(calls, callDuration, httpRequests, httpLatency, httpInFlight)
}

// InstrumentTransport wraps rt (nil: http.DefaultTransport) so that each request counts in the
// http_client_* metrics under client.
func InstrumentTransport(client string, rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	labels := prometheus.Labels{"client": client}
	return promhttp.InstrumentRoundTripperInFlight(httpInFlight.With(labels),
		promhttp.InstrumentRoundTripperCounter(httpRequests.MustCurryWith(labels),
			promhttp.InstrumentRoundTripperDuration(httpLatency.MustCurryWith(labels), rt)))
}

// Instrument wraps a provider so each call is counted in dnspolicy_provider_calls_total and timed in
// dnspolicy_provider_call_duration_seconds.
func Instrument(p Provider) Provider { return instrumented{p} }

type instrumented struct{ Provider }

func count(p Provider, op string, start time.Time, err error) {
	callDuration.WithLabelValues(p.Name(), op).Observe(time.Since(start).Seconds())
	result := "success"
	if err != nil {
		result = map[ErrorKind]string{Transient: "transient", Permanent: "permanent", StaleView: "stale_view"}[KindOf(err)]
	}
	calls.WithLabelValues(p.Name(), op, result).Inc()
}

func (i instrumented) Zones(ctx context.Context) ([]Zone, error) {
	start := time.Now()
	z, err := i.Provider.Zones(ctx)
	count(i.Provider, "zones", start, err)
	return z, err
}

func (i instrumented) Records(ctx context.Context, zone Zone) (View, error) {
	start := time.Now()
	r, err := i.Provider.Records(ctx, zone)
	count(i.Provider, "records", start, err)
	return r, err
}

func (i instrumented) Apply(ctx context.Context, zone Zone, state State, changes *Changes) error {
	start := time.Now()
	err := i.Provider.Apply(ctx, zone, state, changes)
	count(i.Provider, "apply", start, err)
	return err
}
