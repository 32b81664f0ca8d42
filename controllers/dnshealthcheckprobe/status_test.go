package dnshealthcheckprobe

import (
	"testing"
	"time"
)

// The write policy: what changes a reader acts on is written at once; an unchanged or already
// unhealthy probe only refreshes.
func TestNeedsWrite(t *testing.T) {
	const threshold = 2
	refresh := 5 * time.Minute
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	healthy := view{healthy: 1, status: 200, generation: 1}
	failing := func(n int) view {
		v := view{healthy: 1, failures: n, reason: "Status code: 500", status: 500, generation: 1}
		if n > threshold {
			v.healthy = 0
		}
		return v
	}
	for _, tc := range []struct {
		name     string
		old, now view
		age      time.Duration
		want     bool
	}{
		{"unchanged", healthy, healthy, time.Second, false},
		{"unchanged, refresh due", healthy, healthy, refresh, true},
		{"first failure", healthy, failing(1), time.Second, true},
		{"second failure (at the threshold)", failing(1), failing(2), time.Second, true},
		{"turns unhealthy", failing(2), failing(3), time.Second, true},
		{"more failures once unhealthy", failing(3), failing(9), time.Second, false},
		{"more failures once unhealthy, refresh due", failing(3), failing(9), refresh, true},
		{"another reason", failing(3), view{healthy: 0, failures: 4, reason: "Timeout", generation: 1}, time.Second, true},
		{"new generation", healthy, view{healthy: 1, status: 200, generation: 2}, time.Second, true},
		{"passes again", failing(5), healthy, time.Second, true},
		{"unknown to healthy", view{healthy: -1}, healthy, time.Second, true},
	} {
		if got := needsWrite(tc.old, tc.now, t0, t0.Add(tc.age), threshold, refresh); got != tc.want {
			t.Errorf("%s: needsWrite = %v, want %v", tc.name, got, tc.want)
		}
	}
}
