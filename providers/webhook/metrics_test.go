package webhook

import (
	"net/http"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/test/metricstest"
)

// httpRequests reads Kuadrant's http_client_requests_total from the controller's registry.
func httpRequests(client, code, method string) float64 {
	v, _ := metricstest.Value("http_client_requests_total", map[string]string{"client": client, "code": code, "method": method})
	return v
}

// Each request to the webhook provider, retries included, counts in Kuadrant's
// http_client_requests_total under client "webhook".
func TestRequestsCountAsKuadrantsHTTPClientMetrics(t *testing.T) {
	srv, _ := faultServer(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) })
	p := faulty(t, srv.URL)
	before := httpRequests(ProviderName, "502", "get")
	if _, err := p.Zones(t.Context()); err == nil {
		t.Fatal("Zones succeeded against a server answering 502")
	}
	if got := httpRequests(ProviderName, "502", "get") - before; got != 3 {
		t.Errorf("%v requests counted for one call of three attempts, want 3", got)
	}
}
