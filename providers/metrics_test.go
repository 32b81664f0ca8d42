package providers

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
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

// slowProvider answers each call after a pause, the apply with a throttling error.
type slowProvider struct{ Provider }

func (slowProvider) Name() string { return "test-slow" }

func (slowProvider) Zones(context.Context) ([]Zone, error) { return nil, nil }

func (slowProvider) Apply(context.Context, Zone, State, *Changes) error {
	time.Sleep(20 * time.Millisecond)
	return NewError(Transient, errors.New("throttled"))
}

// The engine's calls count by result in dnspolicy_provider_calls_total and are timed by provider
// and operation in dnspolicy_provider_call_duration_seconds (no result label: a histogram per
// result would triple the series for nothing a dashboard reads).
func TestInstrumentCountsAndTimesCalls(t *testing.T) {
	p := Instrument(slowProvider{})
	if _, err := p.Zones(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(context.Background(), Zone{}, nil, &Changes{}); KindOf(err) != Transient {
		t.Fatalf("apply: %v, want the backend's transient error", err)
	}
	if got := testutil.ToFloat64(calls.WithLabelValues("test-slow", "zones", "success")); got != 1 {
		t.Errorf("calls{zones,success} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(calls.WithLabelValues("test-slow", "apply", "transient")); got != 1 {
		t.Errorf("calls{apply,transient} = %v, want 1", got)
	}
	if n := testutil.CollectAndCount(callDuration, "dnspolicy_provider_call_duration_seconds"); n != 2 {
		t.Errorf("%d duration series, want 2 (zones and apply)", n)
	}
	// The apply slept 20 ms: its sum says so, and it falls in no bucket below 20 ms.
	h := &dto.Metric{}
	if err := callDuration.WithLabelValues("test-slow", "apply").(prometheus.Histogram).Write(h); err != nil {
		t.Fatal(err)
	}
	if s := h.GetHistogram().GetSampleSum(); s < 0.02 {
		t.Errorf("apply duration sum = %v s, want at least the 20 ms the backend slept", s)
	}
	if c := h.GetHistogram().GetSampleCount(); c != 1 {
		t.Errorf("apply duration count = %d, want 1", c)
	}
	for _, b := range h.GetHistogram().GetBucket() {
		if b.GetUpperBound() < 0.02 && b.GetCumulativeCount() != 0 {
			t.Errorf("bucket le=%v holds %d applies, want 0", b.GetUpperBound(), b.GetCumulativeCount())
		}
	}
}
