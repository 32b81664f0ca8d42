package providers

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Calls counts provider API calls: they cost money and hit rate limits, so they are the first thing
// to watch.
var calls = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "dnspolicy_provider_calls_total",
	Help: "Calls to DNS providers by provider, operation (zones, records, apply) and result (success, transient, permanent, stale_view).",
}, []string{"provider", "operation", "result"})

func init() { metrics.Registry.MustRegister(calls) }

// Instrument wraps a provider so each call is counted in dnspolicy_provider_calls_total.
func Instrument(p Provider) Provider { return instrumented{p} }

type instrumented struct{ Provider }

func count(p Provider, op string, err error) {
	result := "success"
	if err != nil {
		result = map[ErrorKind]string{Transient: "transient", Permanent: "permanent", StaleView: "stale_view"}[KindOf(err)]
	}
	calls.WithLabelValues(p.Name(), op, result).Inc()
}

func (i instrumented) Zones(ctx context.Context) ([]Zone, error) {
	z, err := i.Provider.Zones(ctx)
	count(i.Provider, "zones", err)
	return z, err
}

func (i instrumented) Records(ctx context.Context, zone Zone) (View, error) {
	r, err := i.Provider.Records(ctx, zone)
	count(i.Provider, "records", err)
	return r, err
}

func (i instrumented) Apply(ctx context.Context, zone Zone, state State, changes *Changes) error {
	err := i.Provider.Apply(ctx, zone, state, changes)
	count(i.Provider, "apply", err)
	return err
}
