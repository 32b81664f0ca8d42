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

// hanging is a loopback server whose /hang requests wait until released (one per value sent on
// release, all when it is closed) or cancelled; other paths answer 200 at once.
type hanging struct {
	port    int
	started atomic.Int64
	// startedBefore is started when the last request of another path came.
	startedBefore atomic.Int64
	// blocked receives a token as each /hang request starts.
	blocked chan struct{}
	release chan struct{}
}

func newHanging(t *testing.T) *hanging {
	t.Helper()
	h := &hanging{blocked: make(chan struct{}, 1024), release: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/hang" {
			h.startedBefore.Store(h.started.Load())
			return
		}
		h.started.Add(1)
		h.blocked <- struct{}{}
		select {
		case <-h.release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	h.port = srv.Listener.Addr().(*net.TCPAddr).Port
	return h
}

func (h *hanging) spec(path string) Spec {
	return Spec{Protocol: "HTTP", Address: "127.0.0.1", Port: h.port, Path: path, Interval: time.Hour, FailureThreshold: 1}
}

// waitBlocked waits until n more /hang requests have started.
func (h *hanging) waitBlocked(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-h.blocked:
		case <-time.After(waitFor):
			t.Fatalf("%d hanging checks started, want %d more", h.started.Load(), n)
		}
	}
}

func fairOptions(workers int) Options {
	return Options{Targets: allowLoopback, Workers: workers, Timeout: time.Hour, FirstCheckSpread: time.Nanosecond}
}

// One namespace with thousands of probes due, whose checks hang, does not starve another's: when the
// first holds every worker, the first worker freed goes to the other namespace's probe, while
// thousands of the first's wait.
func TestTenantsShareTheWorkers(t *testing.T) {
	const workers, flood = 4, 3000
	h := newHanging(t)
	p := start(t, fairOptions(workers))
	for i := range flood {
		p.Set("flood/"+strconv.Itoa(i), h.spec("/hang"), State{})
	}
	h.waitBlocked(t, workers) // the flood holds every worker
	p.Set("quiet/p", h.spec("/"), State{})
	// One hung check ends: the worker it frees goes to the other namespace, not the flood's next.
	h.release <- struct{}{}
	if r := p.next(t, "quiet/p", "a probe due while the flood holds every worker", func(Result) bool { return true }); r.Outcome != OutcomePassed {
		t.Fatalf("%+v", r)
	}
	if n := h.startedBefore.Load(); n != workers {
		t.Errorf("%d checks of the flood started before the other namespace's, want %d", n, workers)
	}
	close(h.release)
}

// The share does not leave workers idle: a namespace above its share still gets the workers no
// other namespace has a check for.
func TestFreeWorkersDoNotIdle(t *testing.T) {
	const workers = 4
	h := newHanging(t)
	p := start(t, fairOptions(workers))
	p.Set("slow/p", h.spec("/hang"), State{})
	h.waitBlocked(t, 1)
	for i := range 100 {
		p.Set("busy/"+strconv.Itoa(i), h.spec("/hang"), State{})
	}
	// Two namespaces active: a share of 2 each, but the one running 1 has nothing more due.
	h.waitBlocked(t, workers-1)
	close(h.release)
}
