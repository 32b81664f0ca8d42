package prober

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// One namespace with thousands of probes due, whose checks hang, does not starve another's: when the
// first holds every worker, the first worker freed goes to the other namespace's probe, while
// thousands of the first's wait.
func TestTenantsShareTheWorkers(t *testing.T) {
	const workers, flood = 4, 3000
	var started atomic.Int64
	blocked := make(chan struct{}, workers) // one token per check of the flood that has started
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/hang" {
			return
		}
		started.Add(1)
		select {
		case blocked <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	spec := func(path string) Spec {
		return Spec{Protocol: "HTTP", Address: "127.0.0.1", Port: port, Path: path, Interval: time.Hour, FailureThreshold: 1}
	}
	p := start(t, Options{Targets: allowLoopback, Workers: workers, Timeout: time.Hour, FirstCheckSpread: time.Nanosecond})

	for i := range flood {
		p.Set("flood/"+strconv.Itoa(i), spec("/hang"), State{})
	}
	// Wait until the flood holds every worker.
	for range workers {
		select {
		case <-blocked:
		case <-time.After(waitFor):
			t.Fatalf("%d checks of the flood started, want %d", started.Load(), workers)
		}
	}
	p.Set("quiet/p", spec("/"), State{})
	// One hung check ends: the worker it frees goes to the other namespace, not the flood's next.
	release <- struct{}{}
	if r := p.next(t, "quiet/p", "a probe due while the flood holds every worker", func(Result) bool { return true }); r.Outcome != OutcomePassed {
		t.Fatalf("%+v", r)
	}
	if n := started.Load(); n != workers {
		t.Errorf("%d checks of the flood started before the other namespace's, want %d", n, workers)
	}
	close(release)
}
