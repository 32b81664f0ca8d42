package azure

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"

	emulator "github.com/dnspolicy/dnspolicy-controller/test/emulators/azure"
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

// Each request of the SDK, through the transport it was given, counts in Kuadrant's
// http_client_requests_total under client "azure".
func TestRequestsCountAsKuadrantsHTTPClientMetrics(t *testing.T) {
	store := emulator.NewStore(subscription)
	p := emulated(t, store)
	before := httpRequests(t, "azure", "200", "get")
	newZone(t, store, p)
	if got := httpRequests(t, "azure", "200", "get") - before; got < 1 {
		t.Errorf("%v requests counted for listing the zones, want at least 1", got)
	}
}
