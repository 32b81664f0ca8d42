package providers

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Kuadrant's http_client_* series, by client, code and method as its promhttp wrapping labels them.
func TestInstrumentTransport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	defer srv.Close()
	client := &http.Client{Transport: InstrumentTransport("test-client", nil)}
	for _, method := range []string{http.MethodGet, http.MethodGet, http.MethodPost} {
		req, err := http.NewRequest(method, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if got := testutil.ToFloat64(httpRequests.WithLabelValues("test-client", "200", "get")); got != 2 {
		t.Errorf("http_client_requests_total{code=200,method=get} = %v, want 2", got)
	}
	if got := testutil.ToFloat64(httpRequests.WithLabelValues("test-client", "429", "post")); got != 1 {
		t.Errorf("http_client_requests_total{code=429,method=post} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(httpInFlight.WithLabelValues("test-client")); got != 0 {
		t.Errorf("http_client_in_flight_requests = %v after the requests, want 0", got)
	}
	if n := testutil.CollectAndCount(httpLatency, "http_client_request_latency_seconds"); n < 2 {
		t.Errorf("%d latency series, want one per code and method", n)
	}
}
