package publish

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
)

func newZone(t *testing.T) (*inmemory.Store, providers.Zone) {
	t.Helper()
	store := inmemory.NewStore()
	return store, store.EnsureZone("example.com")
}

func provider(store *inmemory.Store) providers.Provider {
	return inmemory.New(store, inmemory.Options{})
}

// slow keeps cached views for the whole test, as a controller between refreshes.
func slow() Options {
	return Options{MaxAge: time.Hour, Gather: 50 * time.Millisecond, MaxGather: time.Second, StaleRetries: 3}
}

func a(name string, ips ...string) *v1alpha1.Endpoint {
	return v1alpha1.NewEndpoint(name, v1alpha1.RecordTypeA, 60, ips...)
}

func publish(t *testing.T, p *Publisher, prov providers.Provider, zone providers.Zone, req Request) Outcome {
	t.Helper()
	out, err := p.Publish(context.Background(), prov, "account", zone, req)
	if err != nil {
		t.Fatalf("publish %s: %v", req.OwnerID, err)
	}
	return out
}

func records(t *testing.T, store *inmemory.Store, zone providers.Zone) map[string]string {
	t.Helper()
	eps, err := store.Snapshot(zone.ID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, ep := range eps {
		if ep.RecordType != v1alpha1.RecordTypeTXT {
			out[ep.DNSName+" "+ep.RecordType] = fmt.Sprint(ep.Targets)
		}
	}
	return out
}

// Requests arriving together share one listing, one batch and one read that checks the batch.
func TestBurstBecomesOneCycle(t *testing.T) {
	store, zone := newZone(t)
	p, prov := New(slow()), provider(store)
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			name := fmt.Sprintf("h%d.example.com", i)
			out := publish(t, p, prov, zone, Request{OwnerID: fmt.Sprintf("owner-%02d", i), Desired: []*v1alpha1.Endpoint{a(name, "10.0.0.1")}})
			if !out.Wrote || !out.Validated {
				t.Errorf("%s: wrote %v validated %v", name, out.Wrote, out.Validated)
			}
		}(i)
	}
	wg.Wait()
	calls := store.ZoneCalls(zone.ID)
	if calls.Apply != 1 || calls.Records != 2 {
		t.Errorf("50 requests together: %d batches and %d listings, want 1 batch and 2 listings (plan, check)", calls.Apply, calls.Records)
	}
	if n := len(records(t, store, zone)); n != 50 {
		t.Errorf("zone holds %d records, want 50", n)
	}
}

// A lone request waits Gather for company; a burst's cycle starts a few of its own gaps after its
// last request, not a whole Gather later (MinGather).
func TestGatherShrinksInsideABurst(t *testing.T) {
	store, zone := newZone(t)
	o := slow()
	o.Gather, o.MinGather, o.MaxGather = 3*time.Second, 10*time.Millisecond, 10*time.Second
	p, prov := New(o), provider(store)
	start := time.Now()
	publish(t, p, prov, zone, Request{OwnerID: "lone", Desired: []*v1alpha1.Endpoint{a("lone.example.com", "10.0.0.1")}})
	if took := time.Since(start); took < o.Gather {
		t.Errorf("a lone request was served after %s, want after Gather (%s)", took, o.Gather)
	}

	var wg sync.WaitGroup
	start = time.Now()
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			publish(t, p, prov, zone, Request{OwnerID: fmt.Sprintf("burst-%02d", i), Desired: []*v1alpha1.Endpoint{a(fmt.Sprintf("b%d.example.com", i), "10.0.0.2")}})
		}(i)
	}
	wg.Wait()
	// The bound is Gather: with a fixed wait the burst would take at least that long, while its own
	// gaps (microseconds, milliseconds on a loaded machine) make its wait MinGather.
	if took := time.Since(start); took >= o.Gather {
		t.Errorf("a burst of 20 was served after %s, want well before Gather (%s)", took, o.Gather)
	}
}

// gatedProvider holds its first listing until release is closed, and closes entered when it starts.
type gatedProvider struct {
	providers.Provider
	once             sync.Once
	entered, release chan struct{}
}

func (g *gatedProvider) Records(ctx context.Context, zone providers.Zone) (providers.View, error) {
	g.once.Do(func() {
		close(g.entered)
		<-g.release
	})
	return g.Provider.Records(ctx, zone)
}

// A request that comes while a burst's cycle runs (its reconcile scheduled late) is the burst's:
// its cycle starts a few of the burst's gaps after it, not a whole Gather later as a lone one's.
func TestBurstStragglerDoesNotWaitGather(t *testing.T) {
	store, zone := newZone(t)
	o := slow()
	o.Gather, o.MinGather, o.MaxGather = 3*time.Second, 10*time.Millisecond, 10*time.Second
	p := New(o)
	prov := &gatedProvider{Provider: provider(store), entered: make(chan struct{}), release: make(chan struct{})}
	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			publish(t, p, prov, zone, Request{OwnerID: fmt.Sprintf("burst-%02d", i), Desired: []*v1alpha1.Endpoint{a(fmt.Sprintf("b%d.example.com", i), "10.0.0.2")}})
		}(i)
	}
	<-prov.entered // the burst's cycle has taken its requests and is reading the zone
	var took time.Duration
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		publish(t, p, prov, zone, Request{OwnerID: "straggler", Desired: []*v1alpha1.Endpoint{a("s.example.com", "10.0.0.3")}})
		took = time.Since(start)
	}()
	close(prov.release)
	wg.Wait()
	if took >= o.Gather {
		t.Errorf("a request that came while its burst's cycle ran was served after %s, want well before Gather (%s)", took, o.Gather)
	}
	if calls := store.ZoneCalls(zone.ID); calls.Apply != 2 {
		t.Errorf("%d batches, want 2: the burst's and the straggler's", calls.Apply)
	}
}

// A backend's batch limit cuts a cycle into several batches without splitting one request.
func TestBatchLimit(t *testing.T) {
	store, zone := newZone(t)
	store.SetMaxChangesPerBatch(5) // each request is a record and its ownership TXT: 2 changes
	p, prov := New(slow()), provider(store)
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			publish(t, p, prov, zone, Request{OwnerID: fmt.Sprintf("owner-%02d", i), Desired: []*v1alpha1.Endpoint{a(fmt.Sprintf("h%d.example.com", i), "10.0.0.1")}})
		}(i)
	}
	wg.Wait()
	if n := len(records(t, store, zone)); n != 10 {
		t.Errorf("zone holds %d records, want 10", n)
	}
	if calls := store.ZoneCalls(zone.ID); calls.Apply < 5 {
		t.Errorf("%d batches for 20 changes with a limit of 5 (2 requests a batch), want at least 5", calls.Apply)
	}
}

// limitedProvider takes batches of at most maxTargets targets, as Route 53 counts resource records.
type limitedProvider struct {
	providers.Provider
	maxTargets int
}

func (p limitedProvider) Capabilities() providers.Capabilities {
	c := p.Provider.Capabilities()
	c.BatchFits = func(changes *providers.Changes) bool {
		n := 0
		for _, eps := range [][]*v1alpha1.Endpoint{changes.Create, changes.UpdateOld, changes.UpdateNew, changes.Delete} {
			for _, ep := range eps {
				n += len(ep.Targets)
			}
		}
		return n <= p.maxTargets
	}
	return c
}

// A backend's own measure of a batch (BatchFits) cuts a cycle where its limit falls.
func TestBatchFits(t *testing.T) {
	store, zone := newZone(t)
	p, prov := New(slow()), limitedProvider{Provider: provider(store), maxTargets: 8}
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// A record with three targets and its ownership TXT: 4 targets a request.
			publish(t, p, prov, zone, Request{OwnerID: fmt.Sprintf("owner-%02d", i), Desired: []*v1alpha1.Endpoint{a(fmt.Sprintf("h%d.example.com", i), "10.0.0.1", "10.0.0.2", "10.0.0.3")}})
		}(i)
	}
	wg.Wait()
	if n := len(records(t, store, zone)); n != 10 {
		t.Errorf("zone holds %d records, want 10", n)
	}
	if calls := store.ZoneCalls(zone.ID); calls.Apply != 5 {
		t.Errorf("%d batches for 40 targets with a limit of 8 (2 requests a batch), want 5", calls.Apply)
	}
	// A request no batch can take is refused alone.
	out, err := p.Publish(t.Context(), prov, "", zone, Request{OwnerID: "big", Desired: []*v1alpha1.Endpoint{
		a("big.example.com", "10.0.1.1", "10.0.1.2", "10.0.1.3", "10.0.1.4", "10.0.1.5", "10.0.1.6", "10.0.1.7", "10.0.1.8")}})
	if providers.KindOf(err) != providers.Permanent || out.Wrote {
		t.Errorf("a request over the limit: wrote %v, err %v; want a Permanent error and no write", out.Wrote, err)
	}
}

// An owner leaving with a view from before another owner claimed the same record must not take the
// record away: removals are planned on a fresh read.
func TestWithdrawalSeesClaimsMadeSinceTheView(t *testing.T) {
	store, zone := newZone(t)
	first, second := New(slow()), New(slow()) // two clusters, two cached views
	prov := provider(store)
	rec := a("app.example.com", "10.0.0.1")
	out := publish(t, first, prov, zone, Request{OwnerID: "owner-a", Desired: []*v1alpha1.Endpoint{rec}})
	publish(t, second, prov, zone, Request{OwnerID: "owner-b", Desired: []*v1alpha1.Endpoint{rec.DeepCopy()}})
	// first's view predates owner-b's claim; it withdraws.
	publish(t, first, prov, zone, Request{OwnerID: "owner-a", Previous: out.Plan.Published})
	if got := records(t, store, zone)["app.example.com A"]; got != "[10.0.0.1]" {
		t.Fatalf("owner-b still claims app.example.com, but the zone holds %q", got)
	}
}

// A write against a stale view fails at the backend and is re-planned on a fresh read.
func TestStaleViewIsReplanned(t *testing.T) {
	store, zone := newZone(t)
	first, second := New(slow()), New(slow())
	prov := provider(store)
	publish(t, first, prov, zone, Request{OwnerID: "owner-a", Desired: []*v1alpha1.Endpoint{a("app.example.com", "10.0.0.1")}})
	publish(t, second, prov, zone, Request{OwnerID: "owner-b", Desired: []*v1alpha1.Endpoint{a("app.example.com", "10.0.0.2")}})
	// first still believes the record holds only 10.0.0.1; adding a target fails, then succeeds.
	out := publish(t, first, prov, zone, Request{OwnerID: "owner-a", Desired: []*v1alpha1.Endpoint{a("app.example.com", "10.0.0.1", "10.0.0.3")}})
	if !out.Wrote || !out.Validated {
		t.Errorf("wrote %v validated %v", out.Wrote, out.Validated)
	}
	if got := records(t, store, zone)["app.example.com A"]; got != "[10.0.0.1 10.0.0.2 10.0.0.3]" {
		t.Errorf("zone holds %s, want every owner's targets", got)
	}
}

// Nothing to write costs nothing: a re-check against a fresh cached view makes no provider call.
func TestQuietRecheckMakesNoCalls(t *testing.T) {
	store, zone := newZone(t)
	p, prov := New(slow()), provider(store)
	out := publish(t, p, prov, zone, Request{OwnerID: "owner-a", Desired: []*v1alpha1.Endpoint{a("app.example.com", "10.0.0.1")}})
	before := store.ZoneCalls(zone.ID)
	again := publish(t, p, prov, zone, Request{OwnerID: "owner-a", Previous: out.Plan.Published, Desired: []*v1alpha1.Endpoint{a("app.example.com", "10.0.0.1")}})
	if again.Wrote || !again.Validated {
		t.Errorf("re-check wrote %v validated %v", again.Wrote, again.Validated)
	}
	if after := store.ZoneCalls(zone.ID); after != before {
		t.Errorf("re-check made provider calls: %+v -> %+v", before, after)
	}
}

// timedProvider takes delay per batch, or hangs until its context ends, and notes how much time
// each batch's context left it.
type timedProvider struct {
	providers.Provider
	delay time.Duration
	hang  bool

	mu   sync.Mutex
	left []time.Duration
}

func (p *timedProvider) Apply(ctx context.Context, zone providers.Zone, st providers.State, changes *providers.Changes) error {
	deadline, ok := ctx.Deadline()
	p.mu.Lock()
	if ok {
		p.left = append(p.left, time.Until(deadline))
	} else {
		p.left = append(p.left, -1)
	}
	p.mu.Unlock()
	if p.hang {
		<-ctx.Done()
		return providers.NewError(providers.Transient, ctx.Err())
	}
	select {
	case <-time.After(p.delay):
	case <-ctx.Done():
		return providers.NewError(providers.Transient, ctx.Err())
	}
	return p.Provider.Apply(ctx, zone, st, changes)
}

// Each batch has CallTimeout to itself: a cycle of batches that together take longer than one
// CallTimeout (a backend pacing its writes to the cloud's rate limit) completes.
func TestEachBatchHasItsOwnBound(t *testing.T) {
	store, zone := newZone(t)
	store.SetMaxChangesPerBatch(2) // one request (a record and its ownership TXT) per batch
	opts := slow()
	opts.CallTimeout = 300 * time.Millisecond
	p := New(opts)
	prov := &timedProvider{Provider: provider(store), delay: 100 * time.Millisecond}
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			out := publish(t, p, prov, zone, Request{OwnerID: fmt.Sprintf("owner-%02d", i), Desired: []*v1alpha1.Endpoint{a(fmt.Sprintf("h%d.example.com", i), "10.0.0.1")}})
			if !out.Wrote || !out.Validated {
				t.Errorf("h%d: wrote %v validated %v", i, out.Wrote, out.Validated)
			}
		}(i)
	}
	wg.Wait()
	prov.mu.Lock()
	defer prov.mu.Unlock()
	if len(prov.left) != 6 {
		t.Fatalf("%d batches, want 6", len(prov.left))
	}
	for i, left := range prov.left {
		// Every batch starts with (nearly) the whole CallTimeout, however many went before it.
		if left < 250*time.Millisecond || left > opts.CallTimeout {
			t.Errorf("batch %d started with %s of its bound left, want about %s", i, left, opts.CallTimeout)
		}
	}
	if n := len(records(t, store, zone)); n != 6 {
		t.Errorf("zone holds %d records, want 6", n)
	}
}

// A batch that hangs is cut at CallTimeout: its waiters get the error instead of waiting forever.
func TestHungBatchIsCut(t *testing.T) {
	store, zone := newZone(t)
	opts := slow()
	opts.CallTimeout = 200 * time.Millisecond
	p := New(opts)
	prov := &timedProvider{Provider: provider(store), hang: true}
	start := time.Now()
	_, err := p.Publish(context.Background(), prov, "account", zone, Request{OwnerID: "owner-a", Desired: []*v1alpha1.Endpoint{a("app.example.com", "10.0.0.1")}})
	if providers.KindOf(err) != providers.Transient {
		t.Fatalf("Publish = %v, want the Transient error of the cut batch", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the hung batch held the request for %s, want about %s", took, opts.CallTimeout)
	}
}

// tornProvider's first reads return the zone without its ownership TXT records, as a listing that
// ran while another owner wrote a record and its TXT can.
type tornProvider struct {
	providers.Provider
	mu    sync.Mutex
	torn  int
	reads int
}

func (p *tornProvider) Records(ctx context.Context, zone providers.Zone) (providers.View, error) {
	read, err := p.Provider.Records(ctx, zone)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reads++
	if err != nil || p.torn == 0 {
		return read, err
	}
	p.torn--
	read.Endpoints = slices.DeleteFunc(read.Endpoints, func(ep *v1alpha1.Endpoint) bool { return ep.RecordType == v1alpha1.RecordTypeTXT })
	return read, nil
}

// A record seen without its ownership TXT is confirmed by a second read before anyone is told it
// lost to a record no owner claims; a record no owner really claims still is one.
func TestUnclaimedRecordIsConfirmedByASecondRead(t *testing.T) {
	store, zone := newZone(t)
	p := New(slow())
	owned := publish(t, p, provider(store), zone, Request{OwnerID: "owner-a", Desired: []*v1alpha1.Endpoint{a("app.example.com", "10.0.0.1")}})
	if !owned.Validated {
		t.Fatal("owner-a's record not published")
	}
	torn := &tornProvider{Provider: provider(store), torn: 1}
	other := New(slow()) // another cluster, whose first read of the zone is torn
	out := publish(t, other, torn, zone, Request{OwnerID: "owner-b", Desired: []*v1alpha1.Endpoint{a("app.example.com", "10.0.0.2")}})
	for _, c := range out.Plan.Conflicts {
		t.Errorf("owner-b told of a conflict from a torn read: %+v", c)
	}
	if got := records(t, store, zone)["app.example.com A"]; got != "[10.0.0.1 10.0.0.2]" {
		t.Errorf("app.example.com holds %q, want both owners' targets", got)
	}

	// A human's record stays a record no owner claims, after the second read.
	store2, zone2 := newZone(t)
	human := provider(store2)
	if err := human.Apply(t.Context(), zone2, nil, &providers.Changes{Create: []*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint("human.example.com", "CNAME", 60, "elsewhere.example.net")}}); err != nil {
		t.Fatal(err)
	}
	third := New(slow())
	wish := Request{OwnerID: "owner-c", Desired: []*v1alpha1.Endpoint{a("human.example.com", "10.0.0.3")}}
	out = publish(t, third, provider(store2), zone2, wish)
	if len(out.Plan.Conflicts) == 0 || out.Plan.Conflicts[0].WinnerOwner != "" {
		t.Errorf("conflicts with a human's record = %+v, want one with no winner owner", out.Plan.Conflicts)
	}
	// Once confirmed, the human's record is not re-read for on every re-check.
	before := store2.ZoneCalls(zone2.ID)
	wish.Previous = out.Plan.Published
	if again := publish(t, third, provider(store2), zone2, wish); len(again.Plan.Conflicts) == 0 {
		t.Error("the re-check lost the conflict with the human's record")
	}
	if after := store2.ZoneCalls(zone2.ID); after != before {
		t.Errorf("re-check of a confirmed conflict made provider calls: %+v -> %+v", before, after)
	}
}

// pickyProvider refuses, as permanent, any batch that writes a record at one name: a record the
// backend cannot take, in a batch it shares with records it can.
type pickyProvider struct {
	providers.Provider
	refuse string
}

func (p pickyProvider) Apply(ctx context.Context, zone providers.Zone, st providers.State, c *providers.Changes) error {
	for _, ep := range slices.Concat(c.Create, c.UpdateNew) {
		if ep.DNSName == p.refuse {
			return providers.Errorf(providers.Permanent, "InvalidChangeBatch: %s cannot be written", ep.DNSName)
		}
	}
	return p.Provider.Apply(ctx, zone, st, c)
}

// A batch refused as permanent is retried with each request alone: the bad record fails alone, and
// the records it shared the batch with are published in the same cycle.
func TestPermanentFailureFailsOnlyItsRequest(t *testing.T) {
	store, zone := newZone(t)
	p := New(slow())
	prov := pickyProvider{Provider: provider(store), refuse: "bad.example.com"}
	names := []string{"good1.example.com", "bad.example.com", "good2.example.com"}
	errs := make([]error, len(names))
	outs := make([]Outcome, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = p.Publish(t.Context(), prov, "account", zone, Request{OwnerID: fmt.Sprintf("owner-%d", i), Desired: []*v1alpha1.Endpoint{a(name, "10.0.0.1")}})
		}()
	}
	wg.Wait()
	for i, name := range names {
		switch {
		case name == "bad.example.com" && providers.KindOf(errs[i]) != providers.Permanent:
			t.Errorf("%s: error %v, want the backend's permanent refusal", name, errs[i])
		case name != "bad.example.com" && (errs[i] != nil || !outs[i].Wrote || !outs[i].Validated):
			t.Errorf("%s: error %v, wrote %v, validated %v; want it published beside the bad record", name, errs[i], outs[i].Wrote, outs[i].Validated)
		}
	}
	got := records(t, store, zone)
	if _, ok := got["bad.example.com A"]; ok || len(got) != 2 {
		t.Errorf("zone holds %v, want the two good records only", got)
	}
	if calls := store.ZoneCalls(zone.ID); calls.Apply != 2 {
		t.Errorf("%d batches applied, want 2 (the good records alone after the shared batch failed)", calls.Apply)
	}
}

// A request's wish is worked out against the view it is planned from, and its owner-named records
// are created, changed and deleted with its plan, in the same batch; another owner's stay.
func TestWishAndNamedRecords(t *testing.T) {
	store, zone := newZone(t)
	p, prov := New(slow()), provider(store)
	named := func(owner, value string) *v1alpha1.Endpoint {
		return v1alpha1.NewEndpoint(registry.NamedRecordName("health", owner, "app.example.com"), v1alpha1.RecordTypeTXT, 60, value)
	}
	o1Name, o2Name := named("o1", "").DNSName, named("o2", "").DNSName
	publish(t, p, prov, zone, Request{OwnerID: "o2", Desired: []*v1alpha1.Endpoint{a("app.example.com", "10.0.0.2")},
		Named: []string{o2Name}, Wish: func(*registry.Zone) ([]*v1alpha1.Endpoint, []*v1alpha1.Endpoint) {
			return []*v1alpha1.Endpoint{a("app.example.com", "10.0.0.2")}, []*v1alpha1.Endpoint{named("o2", `"o2 says"`)}
		}})
	var seen string
	wish := func(value string) func(*registry.Zone) ([]*v1alpha1.Endpoint, []*v1alpha1.Endpoint) {
		return func(z *registry.Zone) ([]*v1alpha1.Endpoint, []*v1alpha1.Endpoint) {
			if e := z.Endpoint(v1alpha1.EndpointKey{DNSName: o2Name, RecordType: v1alpha1.RecordTypeTXT}); e != nil {
				seen = e.Targets[0]
			}
			return []*v1alpha1.Endpoint{a("app.example.com", "10.0.0.1")}, []*v1alpha1.Endpoint{named("o1", value)}
		}
	}
	before := store.ZoneCalls(zone.ID).Apply
	out := publish(t, p, prov, zone, Request{OwnerID: "o1", Named: []string{o1Name}, Wish: wish(`"o1 v1"`)})
	if !out.Wrote || !out.Validated || seen != `"o2 says"` {
		t.Fatalf("first wish: wrote %v validated %v, saw o2's record as %q", out.Wrote, out.Validated, seen)
	}
	if got := store.ZoneCalls(zone.ID).Apply - before; got != 1 {
		t.Errorf("the record and the owner-named one took %d batches, want 1", got)
	}
	value := func(name string) string {
		eps, _ := store.Snapshot(zone.ID)
		for _, ep := range eps {
			if ep.DNSName == name {
				return ep.Targets[0]
			}
		}
		return ""
	}
	if value(o1Name) != `"o1 v1"` || records(t, store, zone)["app.example.com A"] != "[10.0.0.1 10.0.0.2]" {
		t.Fatalf("zone after the wish: %v, o1's record %q", records(t, store, zone), value(o1Name))
	}
	out = publish(t, p, prov, zone, Request{OwnerID: "o1", Previous: out.Plan.Published, Named: []string{o1Name}, Wish: wish(`"o1 v2"`)})
	if !out.Wrote || !out.Validated || value(o1Name) != `"o1 v2"` {
		t.Errorf("changed wish: wrote %v validated %v, o1's record %q", out.Wrote, out.Validated, value(o1Name))
	}
	// Withdrawing everything, with no wish: the owner-named record goes too; o2's stays.
	out = publish(t, p, prov, zone, Request{OwnerID: "o1", Previous: out.Plan.Published, Named: []string{o1Name}})
	if !out.Validated || value(o1Name) != "" || value(o2Name) != `"o2 says"` {
		t.Errorf("withdrawal: validated %v, o1's record %q, o2's %q", out.Validated, value(o1Name), value(o2Name))
	}
	// An owner cannot manage another's owner-named record.
	_, err := p.Publish(context.Background(), prov, "account", zone, Request{OwnerID: "o1", Named: []string{o2Name}})
	if err == nil || value(o2Name) != `"o2 says"` {
		t.Errorf("o1 deleting o2's record: %v, o2's record %q", err, value(o2Name))
	}
}
