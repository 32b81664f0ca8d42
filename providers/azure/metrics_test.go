package azure

import (
	"testing"

	emulator "github.com/dnspolicy/dnspolicy-controller/test/emulators/azure"
	"github.com/dnspolicy/dnspolicy-controller/test/metricstest"
)

// httpRequests reads Kuadrant's http_client_requests_total from the controller's registry.
func httpRequests(client, code, method string) float64 {
	v, _ := metricstest.Value("http_client_requests_total", map[string]string{"client": client, "code": code, "method": method})
	return v
}

// Each request of the SDK, through the transport it was given, counts in Kuadrant's
// http_client_requests_total under client "azure".
func TestRequestsCountAsKuadrantsHTTPClientMetrics(t *testing.T) {
	store := emulator.NewStore(subscription)
	p := emulated(t, store)
	before := httpRequests("azure", "200", "get")
	newZone(t, store, p)
	if got := httpRequests("azure", "200", "get") - before; got < 1 {
		t.Errorf("%v requests counted for listing the zones, want at least 1", got)
	}
}
