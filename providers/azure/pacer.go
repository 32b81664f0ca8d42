package azure

import (
	"context"
	"strings"
	"sync"
	"time"
)

// Azure DNS takes at most 200 record-set writes (create, update, delete) per zone in any minute and
// answers the next one with 429 and a Retry-After. Providers built by one constructor pace their
// writes to that limit per zone, so a burst (64 loadbalanced records are about 900 record-set
// writes) runs at the zone's rate instead of collecting 429s; a 429 that still comes (other
// clusters writing the same zone) is retried by the SDK after its Retry-After (see retryOptions).
const (
	// writesPerWindow record-set writes per zone in any window.
	writesPerWindow = 200
	window          = time.Minute
	// windowMargin is added to the window: the cloud records a write when it reaches it, the pacer
	// when the answer comes back, and clocks differ; a second per minute costs under 2% of the rate.
	windowMargin = time.Second
)

// pacer holds, per zone, when its recent record-set writes went out, and makes a write wait while
// the zone has had writesPerWindow writes in the last window.
type pacer struct {
	limit  int
	window time.Duration
	now    func() time.Time
	sleep  func(context.Context, time.Duration) error

	mu    sync.Mutex
	zones map[string][]time.Time // per zone ID: times of the writes still in the window, oldest first
}

func newPacer(limit int, window time.Duration, now func() time.Time, sleep func(context.Context, time.Duration) error) *pacer {
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = sleepContext
	}
	return &pacer{limit: limit, window: window, now: now, sleep: sleep, zones: map[string][]time.Time{}}
}

// reserve waits until the zone can take another write, counts the write, and returns the function
// that notes when it was answered (from then on the write's window runs). A limit of 0 or less
// paces nothing.
func (p *pacer) reserve(ctx context.Context, zoneID string) (done func(), err error) {
	if p == nil || p.limit <= 0 {
		return func() {}, nil
	}
	key := strings.ToLower(zoneID)
	for {
		p.mu.Lock()
		now := p.now()
		writes := p.zones[key]
		for len(writes) > 0 && !writes[0].Add(p.window).After(now) {
			writes = writes[1:]
		}
		if len(writes) < p.limit {
			p.zones[key] = append(writes, now)
			p.mu.Unlock()
			return func() { p.answered(key, now) }, nil
		}
		p.zones[key] = writes
		wait := writes[0].Add(p.window).Sub(now)
		p.mu.Unlock()
		if err := p.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// answered moves a write's time from when it was sent to when it was answered. The writes of one
// zone go out one at a time (Apply holds the zone's lock), so it is the newest one.
func (p *pacer) answered(key string, sent time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if writes := p.zones[key]; len(writes) > 0 && writes[len(writes)-1].Equal(sent) {
		writes[len(writes)-1] = p.now()
	}
}

func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
