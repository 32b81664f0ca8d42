package azure

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	emulator "github.com/dnspolicy/dnspolicy-controller/test/emulators/azure"
)

// fakeClock is the clock of the emulator's rate limit and of the pacer: sleeping moves it on.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	slept time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.slept += d
	return nil
}

// 300 record-set writes in three batches, faster than the zone's 200 per minute: the writes beyond
// 200 wait for the zone's minute instead of meeting 429 (which, with the test's bounded retries,
// would fail the batch), and every write is sent once.
func TestWritesArePacedToTheZoneLimit(t *testing.T) {
	ctx := t.Context()
	store := emulator.NewStore(subscription)
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	store.SetClock(clock.Now)
	backend, err := NewConstructor(
		WithClientOptions(arm.ClientOptions{ClientOptions: azcore.ClientOptions{
			Transport: store.Transport(),
			Retry:     policy.RetryOptions{MaxRetries: 3, RetryDelay: time.Millisecond, MaxRetryDelay: 10 * time.Millisecond},
		}}),
		WithCredential(&azfake.TokenCredential{}),
		withPacing(writesPerWindow, window+windowMargin, clock.Now, clock.Sleep),
	)(ctx, secret(validJSON()), providers.Env{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	p := backend.Zones
	zone := newZone(t, store, p)
	const batches = 3
	for b := range batches {
		var eps []*v1alpha1.Endpoint
		for i := range MaxChangesPerBatch {
			eps = append(eps, a(fmt.Sprintf("b%d-r%03d.%s", b, i, zone.DNSName), "192.0.2.1"))
		}
		if err := p.Apply(ctx, zone, nil, &providers.Changes{Create: eps}); err != nil {
			t.Fatalf("batch %d: %v", b, err)
		}
	}
	if n := store.Calls()["RecordSets.CreateOrUpdate"]; n != batches*MaxChangesPerBatch {
		t.Errorf("%d record-set writes sent for %d record sets, want each once (none refused with 429)", n, batches*MaxChangesPerBatch)
	}
	gotView, err := p.Records(ctx, zone)
	got := gotView.Endpoints
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != batches*MaxChangesPerBatch {
		t.Errorf("zone holds %d record sets, want %d", len(got), batches*MaxChangesPerBatch)
	}
	// The 201st write waited for the first to leave the window (and the margin), no longer.
	if clock.slept < window || clock.slept > window+2*windowMargin {
		t.Errorf("the writes waited %s in all, want about %s", clock.slept, window+windowMargin)
	}
}

// The production retry policy waits out a 429's Retry-After (here the zone's writes were used by
// another cluster, whose writes this process's pacer does not see), up to the full minute Azure DNS
// may ask for, and bounds each try.
func TestRetryAfterIsWaitedOut(t *testing.T) {
	if o := retryOptions(); o.MaxRetryDelay < window || o.TryTimeout <= 0 || o.TryTimeout >= window {
		t.Fatalf("retry options %+v: want MaxRetryDelay of at least a minute and a per-try timeout", o)
	}
	if testing.Short() {
		t.Skip("waits 2 s of a Retry-After")
	}
	ctx := t.Context()
	store := emulator.NewStore(subscription)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now, realFrom := start, time.Time{} // once realFrom is set, the clock runs in real time from now
	store.SetClock(func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		if realFrom.IsZero() {
			return now
		}
		return now.Add(time.Since(realFrom))
	})
	other := emulated(t, store)
	zone := newZone(t, store, other)
	for b := range emulator.WritesPerMinute / MaxChangesPerBatch {
		var eps []*v1alpha1.Endpoint
		for i := range MaxChangesPerBatch {
			eps = append(eps, a(fmt.Sprintf("b%d-r%03d.%s", b, i, zone.DNSName), "192.0.2.1"))
		}
		if err := other.Apply(ctx, zone, nil, &providers.Changes{Create: eps}); err != nil {
			t.Fatal(err)
		}
	}
	// 58 s after the 200 writes, and running: the zone takes the next write in 2 s.
	mu.Lock()
	now, realFrom = start.Add(58*time.Second), time.Now()
	mu.Unlock()
	backend, err := NewConstructor( // the production retry policy
		WithClientOptions(arm.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: store.Transport()}}),
		WithCredential(&azfake.TokenCredential{}),
	)(ctx, secret(validJSON()), providers.Env{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	p := backend.Zones
	before := store.Calls()["RecordSets.CreateOrUpdate"]
	began := time.Now()
	if err := p.Apply(ctx, zone, nil, &providers.Changes{Create: []*v1alpha1.Endpoint{a("late."+zone.DNSName, "192.0.2.9")}}); err != nil {
		t.Fatalf("Apply after a 429 = %v, want the write to land after its Retry-After", err)
	}
	if n := store.Calls()["RecordSets.CreateOrUpdate"] - before; n != 2 {
		t.Errorf("the write was sent %d times, want twice (a 429, then after its Retry-After)", n)
	}
	if took := time.Since(began); took < time.Second {
		t.Errorf("the retry came after %s, before the Retry-After", took)
	}
}
