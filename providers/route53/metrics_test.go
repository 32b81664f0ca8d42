package route53

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/dnspolicy/dnspolicy-controller/providers"
	emulator "github.com/dnspolicy/dnspolicy-controller/test/emulators/route53"
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

// Each request of the SDK counts in Kuadrant's http_client_requests_total under client "aws".
func TestRequestsCountAsKuadrantsHTTPClientMetrics(t *testing.T) {
	_, url := start(t, emulator.Options{Zones: []string{"a.example.com", "b.example.com", "c.example.com"}, ZonesPageSize: 2, AccessKeys: []string{testKeyID}})
	p, err := New(t.Context(), emulatorSecret(url), providers.Env{})
	if err != nil {
		t.Fatal(err)
	}
	before := httpRequests(t, "aws", "200", "get")
	if _, err := p.Zones(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := httpRequests(t, "aws", "200", "get") - before; got != 2 {
		t.Errorf("%v requests counted for two pages of ListHostedZones, want 2", got)
	}
}
