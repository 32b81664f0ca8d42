package prober

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/test/metricstest"
)

func proberPanics() float64 {
	v, _ := metricstest.Value("dnspolicy_goroutine_panics_total", map[string]string{"component": "prober"})
	return v
}

// panicOnce is a transport whose first request panics, as a bug in a check would.
type panicOnce struct {
	http.RoundTripper
	panicked atomic.Bool
}

func (p *panicOnce) RoundTrip(r *http.Request) (*http.Response, error) {
	if p.panicked.CompareAndSwap(false, true) {
		panic("check bug")
	}
	return p.RoundTripper.RoundTrip(r)
}

// A check that panics fails like a check that errs, is counted, and the probe is checked again at
// its interval: the worker carries on.
func TestPanickingCheckFailsAndTheProbeCarriesOn(t *testing.T) {
	srv := newServer(t, nil)
	before := proberPanics()
	p := start(t, Options{Workers: 1, Targets: allowLoopback, WrapTransport: func(rt http.RoundTripper) http.RoundTripper { return &panicOnce{RoundTripper: rt} }})
	p.Set("p", Spec{Protocol: "HTTP", Address: "127.0.0.1", Port: srv.port(t), Path: "/healthz", Interval: 50 * time.Millisecond, FailureThreshold: 5}, State{})
	first := p.next(t, "p", "the check that panicked", func(Result) bool { return true })
	if first.Outcome != OutcomeError || first.State.ConsecutiveFailures != 1 {
		t.Errorf("the check that panicked: %+v, want an error counted as a failure", first)
	}
	if n := proberPanics() - before; n != 1 {
		t.Errorf("%v panics counted, want 1", n)
	}
	p.next(t, "p", "the next check", healthyIs(true))
}

// A delivery that panics loses that result, not the worker: the next result is delivered.
func TestPanickingDeliveryCarriesOn(t *testing.T) {
	srv := newServer(t, nil)
	before := proberPanics()
	results := make(chan Result, 64)
	var delivered atomic.Int64
	p := New(Options{Workers: 1, Targets: allowLoopback, FirstCheckSpread: time.Millisecond, OnResult: func(r Result) {
		if delivered.Add(1) == 1 {
			panic("callback bug")
		}
		results <- r
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	p.Set("p", Spec{Protocol: "HTTP", Address: "127.0.0.1", Port: srv.port(t), Path: "/healthz", Interval: 50 * time.Millisecond}, State{})
	select {
	case <-results:
	case <-time.After(waitFor):
		t.Fatal("no result delivered after the delivery that panicked")
	}
	if n := proberPanics() - before; n != 1 {
		t.Errorf("%v panics counted, want 1", n)
	}
}
