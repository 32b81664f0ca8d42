//go:build integration

package dnsrecord_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
	"github.com/dnspolicy/dnspolicy-controller/test/integration/internal/recordplane"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// createMany creates n records at once (concurrently, as a policy controller or a GitOps sync does).
func createMany(t testing.TB, cl *cluster, n int, z string) {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			host := fmt.Sprintf("h%03d.%s", i, z)
			r := &v1alpha1.DNSRecord{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("r%03d", i), Namespace: cl.ns},
				Spec: v1alpha1.DNSRecordSpec{
					RootHost: host, ProviderRef: &v1alpha1.ProviderRef{Name: "provider"},
					Endpoints: []*v1alpha1.Endpoint{a(host, 60, fmt.Sprintf("10.%d.%d.1", i/250, i%250))},
				},
			}
			if err := cl.c.Create(t.Context(), r); err != nil {
				errs <- err
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// allReady reports how many of the namespace's records are Ready.
func allReady(t testing.TB, cl *cluster) (n, total int) {
	list := &v1alpha1.DNSRecordList{}
	if err := cl.c.List(t.Context(), list, client.InNamespace(cl.ns)); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		if c := ready(&list.Items[i]); c != nil && c.Status == metav1.ConditionTrue {
			n++
		}
	}
	return n, len(list.Items)
}

// 200 records created at once in one zone: all reach Ready, with at most 10 listings and 10 batches
// of that zone.
func TestManyRecordsFewProviderCalls(t *testing.T) {
	store := inmemory.NewStore()
	opts := dnsrecord.DefaultOptions() // production timings: the steady-state re-check must not add calls
	cls := startClusters(t, 1, store, opts, nil)
	const z = "bulk.example.com"
	zoneID := store.EnsureZone(z).ID
	cls[0].secret(t, z)
	createMany(t, cls[0], 200, z)
	eventually(t, 60*time.Second, func() string {
		if r, n := allReady(t, cls[0]); r != 200 || n != 200 {
			return fmt.Sprintf("%d of %d records Ready", r, n)
		}
		return ""
	})
	calls := store.ZoneCalls(zoneID)
	t.Logf("200 records in zone %s: %d record listings, %d change batches", z, calls.Records, calls.Apply)
	fmt.Printf("200 records in one zone: %d record listings, %d change batches\n", calls.Records, calls.Apply)
	if calls.Records > 10 || calls.Apply > 10 {
		t.Errorf("provider calls for 200 records: %d listings and %d batches, want at most 10 each", calls.Records, calls.Apply)
	}
	if got := len(records(t, store, z)); got != 200 {
		t.Errorf("zone holds %d records, want 200", got)
	}
}

// BenchmarkReady64 creates 64 records at once and measures the time until all are Ready (Kuadrant's
// dns-operator needs about 5.8 s here, waiting out a fixed 5 s validation pass). The clock starts
// with the controller running and one record already published with the provider Secret (see
// warmUp), and Ready is followed through a watch (see watchReady).
func BenchmarkReady64(b *testing.B) {
	const n = 64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		store := inmemory.NewStore()
		z := fmt.Sprintf("bench%d.example.com", i)
		store.EnsureZone(z)
		cl := startClusters(b, 1, store, dnsrecord.DefaultOptions(), nil)[0]
		cl.secret(b, z)
		warmUp(b, cl, z)
		wait := watchReady(b, cl)
		b.StartTimer()
		start := time.Now()
		createMany(b, cl, n, z)
		wait(n)
		b.ReportMetric(time.Since(start).Seconds(), "s-to-all-ready")
	}
}

// warmUp publishes one record with the namespace's provider Secret and waits until it is Ready, so
// a benchmark's clock starts with the controller running, as when a policy creates its records in a
// cluster whose controller already runs: the manager's start (its informers listing and syncing, a
// second or more on a loaded machine) and the first build of the backend are not in the figure.
func warmUp(t testing.TB, cl *cluster, z string) {
	t.Helper()
	host := "warm." + z
	cl.record(t, "warm", host, a(host, 60, "192.0.2.1"))
	eventually(t, 60*time.Second, func() string {
		if c := ready(cl.get(t, "warm")); c == nil || c.Status != metav1.ConditionTrue {
			return "warm-up record not Ready"
		}
		return ""
	})
}

// watchReady starts an informer of the namespace's records and returns a wait that blocks until n
// records other than warmUp's are Ready for their generation. A benchmark follows Ready this way
// rather than by listing every record every few milliseconds, which would compete with the
// controller for the API server it measures.
func watchReady(t testing.TB, cl *cluster) (wait func(n int)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := cache.New(envs[0].Config, cache.Options{Scheme: testenv.Scheme(), DefaultNamespaces: map[string]cache.Config{cl.ns: {}}})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := c.GetInformer(ctx, &v1alpha1.DNSRecord{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	isReady := map[string]bool{}
	count := 0
	changed := make(chan struct{}, 1)
	seen := func(obj any) {
		r, ok := obj.(*v1alpha1.DNSRecord)
		if !ok || r.Name == "warm" {
			return
		}
		c := ready(r)
		now := c != nil && c.Status == metav1.ConditionTrue && r.Status.ObservedGeneration == r.Generation
		mu.Lock()
		if now != isReady[r.Name] {
			isReady[r.Name] = now
			if now {
				count++
			} else {
				count--
			}
		}
		mu.Unlock()
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, obj any) { seen(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("records informer did not sync")
	}
	return func(n int) {
		defer cancel()
		timeout := time.After(5 * time.Minute)
		for {
			mu.Lock()
			got := count
			mu.Unlock()
			if got >= n {
				return
			}
			select {
			case <-changed:
			case <-timeout:
				t.Fatalf("%d of %d records Ready after 5 minutes", got, n)
			}
		}
	}
}

// BenchmarkReady1000 creates 1,000 records at once in one zone and measures the time until all are
// Ready, and the controller's writes to the API server per record until then (and all its requests,
// reads included). They are counted by a wrapper around the manager's own HTTP transport, so the
// benchmark's creates and reads, and other managers in the process, are not among them. The clock
// starts as BenchmarkReady64's does (warmUp), and Ready is followed through a watch.
func BenchmarkReady1000(b *testing.B) {
	const n = 1000
	var seconds, perRecord, perRecordAll, apiMS, etcdMS float64 // summed over the iterations, reported as means
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		store := inmemory.NewStore()
		z := fmt.Sprintf("bench1000-%d.example.com", i)
		store.EnsureZone(z)
		factory := providers.NewFactory()
		factory.Register(v1alpha1.SecretTypeInMemory, inmemory.NewConstructor(store))
		requests := &requestCounter{}
		ns, stop := startCountedManager(b, requests, factory)
		cl := &cluster{name: "cluster-0", c: envs[0].Client, ns: ns}
		cl.secret(b, z)
		warmUp(b, cl, z)
		wait := watchReady(b, cl)
		requests.reset() // the manager's start-up and the warm-up record, not the records
		apiCPU, etcdCPU := controlPlaneCPU(b)
		api0, etcd0 := apiCPU(), etcdCPU()
		b.StartTimer()
		start := time.Now()
		createMany(b, cl, n, z)
		created := time.Since(start)
		wait(n)
		elapsed := time.Since(start)
		b.StopTimer()
		api, etcd := apiCPU()-api0, etcdCPU()-etcd0
		apiMS += 1000 * api / n
		etcdMS += 1000 * etcd / n
		writes, all, by := requests.counts()
		seconds += elapsed.Seconds()
		perRecord += float64(writes) / n
		perRecordAll += float64(all) / n
		b.Logf("%d records created in %s, all Ready in %s; controller requests until then: %d writes, %d in all (%s); CPU of kube-apiserver %.1f s, etcd %.1f s",
			n, created.Round(time.Millisecond), elapsed.Round(time.Millisecond), writes, all, by, api, etcd)
		if got := len(records(b, store, z)); got != n+1 {
			b.Fatalf("zone holds %d records, want %d and the warm-up record", got, n)
		}
		// A manager left running would re-check its 1,000 records during the next iteration.
		stop()
	}
	b.ReportMetric(seconds/float64(b.N), "s-to-all-ready")
	b.ReportMetric(perRecord/float64(b.N), "writes/record")
	b.ReportMetric(perRecordAll/float64(b.N), "requests/record")
	b.ReportMetric(apiMS/float64(b.N), "apiserver-cpu-ms/record")
	b.ReportMetric(etcdMS/float64(b.N), "etcd-cpu-ms/record")
}

// startCountedManager starts, on the first control plane, a manager running the DNSRecord
// controller as the binary does (as testenv.StartManager does), watching a fresh namespace, with its
// API-server writes counted by writes. It returns the namespace and a stop that ends the manager;
// testenv.StartManager's managers run until the benchmark ends, and one left running would re-check
// its 1,000 records during the next iteration.
func startCountedManager(b testing.TB, requests *requestCounter, factory *providers.Factory) (string, func()) {
	b.Helper()
	ns := testenv.NewNamespace(b, envs[0], "counted-")
	stop := recordplane.StartIn(b, envs[0], ns, recordplane.Controller{
		App: app.Options{EnableRecordController: true}, Factory: factory, Record: dnsrecord.DefaultOptions(), Wrap: requests.wrap,
	})
	return ns, stop
}

// requestCounter counts the API-server requests one client sends, by method and resource.
type requestCounter struct {
	mu sync.Mutex
	by map[string]int
}

func (w *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.URL.Query().Get("watch") != "true" {
			w.mu.Lock()
			if w.by == nil {
				w.by = map[string]int{}
			}
			w.by[req.Method+" "+resource(req.URL.Path)]++
			w.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

func (w *requestCounter) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.by = nil
}

// count returns how many requests of method on resource were sent.
func (w *requestCounter) count(method, resource string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.by[method+" "+resource]
}

// counts returns the writes (POST, PUT, PATCH and DELETE), all requests, and a breakdown such as
// "GET secrets=3, PATCH dnsrecords=1000, PATCH dnsrecords/status=1000".
func (w *requestCounter) counts() (writes, all int, by string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var parts []string
	for k, v := range w.by {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v))
		all += v
		switch strings.Fields(k)[0] {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			writes += v
		}
	}
	sort.Strings(parts)
	return writes, all, strings.Join(parts, ", ")
}

// resource names what a request path writes: the resource, with /status for the status subresource
// (/apis/<group>/<version>/namespaces/<ns>/<resource>[/<name>[/status]]).
func resource(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i, p := range parts {
		if p == "namespaces" && i+2 < len(parts) {
			rest := parts[i+2:]
			if len(rest) >= 3 {
				return rest[0] + "/" + rest[2]
			}
			return rest[0]
		}
	}
	return path
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A record whose zone holds what it publishes is re-checked with a doubling interval, and those quiet
// passes write nothing: not the status (whose validFor would double with them), not the zone.
func TestQuietRechecksWriteNothing(t *testing.T) {
	store := inmemory.NewStore()
	opts := fastOptions()
	opts.MinRecheck, opts.MaxRecheck = 50*time.Millisecond, 1600*time.Millisecond
	cls := startClusters(t, 1, store, opts, nil)
	cl := cls[0]
	const z, host = "quiet.example.com", "app.quiet.example.com"
	store.EnsureZone(z)
	cl.secret(t, z)
	cl.record(t, "web", host, a(host, 60, "10.0.0.1"))
	var settled *v1alpha1.DNSRecord
	eventually(t, 20*time.Second, func() string {
		settled = cl.get(t, "web")
		if c := ready(settled); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Sprintf("ready %v", c)
		}
		return ""
	})
	applies := store.ZoneCalls(inmemory.ZoneID(z)).Apply
	// Six quiet passes double the interval from 50 ms to its 1.6 s ceiling.
	start := passes(cl, "web")
	eventually(t, 30*time.Second, func() string {
		if n := passes(cl, "web") - start; n < 7 {
			return fmt.Sprintf("%v quiet passes so far", n)
		}
		return ""
	})
	if r := cl.get(t, "web"); r.ResourceVersion != settled.ResourceVersion {
		t.Errorf("quiet passes rewrote the record: resourceVersion %s, was %s (validFor %s, was %s)",
			r.ResourceVersion, settled.ResourceVersion, r.Status.ValidFor, settled.Status.ValidFor)
	}
	if got := store.ZoneCalls(inmemory.ZoneID(z)).Apply; got != applies {
		t.Errorf("quiet passes wrote the zone %d times", got-applies)
	}
}
