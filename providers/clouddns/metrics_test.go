package clouddns

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"testing"

	emulator "github.com/dnspolicy/dnspolicy-controller/test/emulators/clouddns"
	"github.com/dnspolicy/dnspolicy-controller/test/metricstest"
)

// httpRequests reads Kuadrant's http_client_requests_total from the controller's registry.
func httpRequests(client, code, method string) float64 {
	v, _ := metricstest.Value("http_client_requests_total", map[string]string{"client": client, "code": code, "method": method})
	return v
}

// Each request of the SDK counts in Kuadrant's http_client_requests_total under client "google",
// through the transport the SDK builds over ours.
func TestRequestsCountAsKuadrantsHTTPClientMetrics(t *testing.T) {
	_, url := startEmulator(t, emulator.Options{Zones: []string{"example.com"}})
	p := newProvider(t, url)
	before := httpRequests("google", "200", "get")
	if _, err := p.Zones(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := httpRequests("google", "200", "get") - before; got < 1 {
		t.Errorf("%v requests counted for listing the zones, want at least 1", got)
	}
}

// With a service-account key (no emulator), the SDK's authenticating transport is built over ours:
// the options are accepted together, and nothing is sent before the first call.
func TestAuthenticatedClientBuildsOverTheInstrumentedTransport(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	sa, err := json.Marshal(map[string]string{
		"type": "service_account", "client_email": "dns@p.iam.gserviceaccount.com", "private_key_id": "k1",
		"private_key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), "token_uri": "http://127.0.0.1:1/token",
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewWithOptions(t.Context(), Options{Project: "p", CredentialsJSON: sa}); err != nil {
		t.Fatalf("NewWithOptions with a service-account key: %v", err)
	}
}
