package clouddns

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"

	emulator "github.com/dnspolicy/dnspolicy-controller/test/emulators/clouddns"
)

// httpRequests reads Kuadrant's http_client_requests_total from the controller's registry.
func httpRequests(t *testing.T, client, code, method string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "http_client_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["client"] == client && l["code"] == code && l["method"] == method {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// Each request of the SDK counts in Kuadrant's http_client_requests_total under client "google",
// through the transport the SDK builds over ours.
func TestRequestsCountAsKuadrantsHTTPClientMetrics(t *testing.T) {
	_, url := startEmulator(t, emulator.Options{Zones: []string{"example.com"}})
	p := newProvider(t, url)
	before := httpRequests(t, "google", "200", "get")
	if _, err := p.Zones(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := httpRequests(t, "google", "200", "get") - before; got < 1 {
		t.Errorf("%v requests counted for listing the zones, want at least 1", got)
	}
}
