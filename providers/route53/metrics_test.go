package route53

import (
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/providers"
	emulator "github.com/dnspolicy/dnspolicy-controller/test/emulators/route53"
	"github.com/dnspolicy/dnspolicy-controller/test/metricstest"
)

// httpRequests reads Kuadrant's http_client_requests_total from the controller's registry.
func httpRequests(client, code, method string) float64 {
	v, _ := metricstest.Value("http_client_requests_total", map[string]string{"client": client, "code": code, "method": method})
	return v
}

// Each request of the SDK counts in Kuadrant's http_client_requests_total under client "aws".
func TestRequestsCountAsKuadrantsHTTPClientMetrics(t *testing.T) {
	_, url := start(t, emulator.Options{Zones: []string{"a.example.com", "b.example.com", "c.example.com"}, ZonesPageSize: 2, AccessKeys: []string{testKeyID}})
	backend, err := New(t.Context(), emulatorSecret(url), providers.Env{})
	if err != nil {
		t.Fatal(err)
	}
	p := backend.Zones
	before := httpRequests("aws", "200", "get")
	if _, err := p.Zones(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := httpRequests("aws", "200", "get") - before; got != 2 {
		t.Errorf("%v requests counted for two pages of ListHostedZones, want 2", got)
	}
}
