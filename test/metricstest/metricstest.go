// Package metricstest reads the controller-runtime metrics registry in tests. It needs nothing but
// Go, so plain unit tests can use it (package testenv pulls in envtest).
package metricstest

import "sigs.k8s.io/controller-runtime/pkg/metrics"

// Value reads the first series of a counter or gauge of the controller-runtime metrics registry
// whose labels include these, and whether there is one.
func Value(metric string, labels map[string]string) (float64, bool) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range families {
		if f.GetName() != metric {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue next
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue(), true
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}
