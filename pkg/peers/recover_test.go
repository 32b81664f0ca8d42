package peers

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/test/metricstest"
)

// A pull that panics (here in Changed, which a puller calls) is logged and counted, and the puller
// pulls the peer again at its next interval.
func TestPanickingPullCarriesOn(t *testing.T) {
	panics := func() float64 {
		v, _ := metricstest.Value("dnspolicy_goroutine_panics_total", map[string]string{"component": "peers"})
		return v
	}
	before := panics()
	key := peerKey
	two := serve(t, three[1].exportAt(t, time.Now()))
	addr := two.Addr().String()
	var calls atomic.Int64
	p := New(Options{Peers: []Peer{{Zone: testZone, Addr: addr, Key: &key}}, Interval: 50 * time.Millisecond, Timeout: 2 * time.Second,
		Changed: func(string) {
			if calls.Add(1) == 1 {
				panic("merge bug")
			}
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
	for deadline := time.Now().Add(20 * time.Second); pulls(t, p, addr, "ok") < 3; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%v good pulls within 20 s of a pull that panicked, want 3", pulls(t, p, addr, "ok"))
		}
	}
	if n := panics() - before; n != 1 {
		t.Errorf("%v panics counted, want 1", n)
	}
}
