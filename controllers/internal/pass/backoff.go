package pass

import (
	"math/rand/v2"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Backoff is the per-key exponential backoff of failing passes: Min after the first failure,
// doubling with each consecutive one up to Max, until Forget. It is a workqueue rate limiter
// (workqueue.TypedRateLimiter), so a controller that returns its errors to controller-runtime uses
// it as its RateLimiter, and one that turns errors into RequeueAfter itself (to log them its own
// way) calls When and Forget.
type Backoff struct {
	Min, Max time.Duration

	mu       sync.Mutex
	failures map[reconcile.Request]int
}

// NewBackoff returns a backoff from lowest up to highest.
func NewBackoff(lowest, highest time.Duration) *Backoff {
	return &Backoff{Min: lowest, Max: highest}
}

// When counts a failure of key and returns how long it waits before its next pass.
func (b *Backoff) When(key reconcile.Request) time.Duration {
	b.mu.Lock()
	n := b.failures[key]
	if b.failures == nil {
		b.failures = map[reconcile.Request]int{}
	}
	b.failures[key] = n + 1
	b.mu.Unlock()
	d := b.Min << min(n, 30)
	if d <= 0 || d > b.Max {
		d = b.Max
	}
	return d
}

// Forget resets key's count: its last pass succeeded.
func (b *Backoff) Forget(key reconcile.Request) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.failures, key)
}

// NumRequeues is key's count of consecutive failures.
func (b *Backoff) NumRequeues(key reconcile.Request) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failures[key]
}

// Len is the number of keys counting failures.
func (b *Backoff) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.failures)
}

// Jitter spreads d by ±10%, so keys that failed or were written together do not come back together.
func Jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.9 + 0.2*rand.Float64()))
}
