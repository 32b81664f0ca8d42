package goroutine

import (
	"testing"

	"github.com/go-logr/logr"

	"github.com/dnspolicy/dnspolicy-controller/test/metricstest"
)

// A panic in a unit of work is stopped, counted and handed to then; the loop goes on to the next
// unit.
func TestRecover(t *testing.T) {
	before, ok := metricstest.Value("dnspolicy_goroutine_panics_total", map[string]string{"component": Peers})
	if !ok {
		t.Fatal("no series for peers before any panic")
	}
	var failed []any
	done := 0
	for i := range 3 {
		func() {
			defer Recover(Peers, logr.Discard(), func(v any) { failed = append(failed, v) })
			if i == 1 {
				panic("unit 1")
			}
			done++
		}()
	}
	after, _ := metricstest.Value("dnspolicy_goroutine_panics_total", map[string]string{"component": Peers})
	if after-before != 1 || len(failed) != 1 || failed[0] != "unit 1" || done != 2 {
		t.Errorf("counted %v panics, handed %v, finished %d units; want 1, [unit 1], 2", after-before, failed, done)
	}
}
