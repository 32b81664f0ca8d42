//go:build integration

package dnsrecord_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
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
// dns-operator needs about 5.8 s here, waiting out a fixed 5 s validation pass).
func BenchmarkReady64(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		store := inmemory.NewStore()
		z := fmt.Sprintf("bench%d.example.com", i)
		store.EnsureZone(z)
		cl := startClusters(b, 1, store, dnsrecord.DefaultOptions(), nil)[0]
		cl.secret(b, z)
		b.StartTimer()
		start := time.Now()
		createMany(b, cl, 64, z)
		for {
			if r, _ := allReady(b, cl); r == 64 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s-to-all-ready")
	}
}

// BenchmarkReady1000 creates 1,000 records at once in one zone and measures the time until all are
// Ready, and the controller's writes to the API server per record until then. The writes are counted
// by a wrapper around the manager's own HTTP transport (POST, PUT, PATCH and DELETE it sends), so
// the benchmark's creates and reads, and other managers in the process, are not among them.
func BenchmarkReady1000(b *testing.B) {
	const n = 1000
	var seconds, perRecord float64 // summed over the iterations, reported as means
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		store := inmemory.NewStore()
		z := fmt.Sprintf("bench1000-%d.example.com", i)
		store.EnsureZone(z)
		factory := providers.NewFactory()
		factory.Register(v1alpha1.SecretTypeInMemory, inmemory.NewConstructor(store))
		writes := &writeCounter{}
		ns, stop := startCountedManager(b, writes, factory)
		cl := &cluster{name: "cluster-0", c: envs[0].Client, ns: ns}
		cl.secret(b, z)
		writes.reset() // the manager's start-up, not the records
		b.StartTimer()
		start := time.Now()
		createMany(b, cl, n, z)
		for {
			// Listing 1,000 records is work for the API server the controller shares: poll at
			// 100 ms, not BenchmarkReady64's 10 ms.
			if r, _ := allReady(b, cl); r == n {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		elapsed := time.Since(start)
		b.StopTimer()
		total, by := writes.counts()
		seconds += elapsed.Seconds()
		perRecord += float64(total) / n
		b.Logf("%d records Ready in %s; controller writes until then: %d (%s)", n, elapsed.Round(time.Millisecond), total, by)
		if got := len(records(b, store, z)); got != n {
			b.Fatalf("zone holds %d records, want %d", got, n)
		}
		// A manager left running would re-check its 1,000 records during the next iteration.
		stop()
	}
	b.ReportMetric(seconds/float64(b.N), "s-to-all-ready")
	b.ReportMetric(perRecord/float64(b.N), "writes/record")
}

// startCountedManager starts, on the first control plane, a manager running the DNSRecord
// controller as the binary does (as testenv.StartManager does), watching a fresh namespace, with its
// API-server writes counted by writes. It returns the namespace and a stop that ends the manager;
// testenv.StartManager's managers run until the benchmark ends, and one left running would re-check
// its 1,000 records during the next iteration.
func startCountedManager(b *testing.B, writes *writeCounter, factory *providers.Factory) (string, func()) {
	b.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench1000-"}}
	if err := envs[0].Client.Create(context.Background(), ns); err != nil {
		b.Fatal(err)
	}
	cfg := rest.CopyConfig(envs[0].Config)
	cfg.QPS = -1 // as the binary runs (app.NewManager)
	cfg.Wrap(writes.wrap)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 testenv.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns.Name: {}}},
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := app.AddControllers(mgr, app.Options{EnableRecordController: true}, factory, dnsrecord.DefaultOptions()); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			b.Errorf("manager for %s: %v", ns.Name, err)
		}
	}()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	b.Cleanup(stop)
	return ns.Name, stop
}

// writeCounter counts the API-server writes one client sends, by method and resource.
type writeCounter struct {
	mu sync.Mutex
	by map[string]int
	n  atomic.Int64
}

func (w *writeCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		switch req.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			w.n.Add(1)
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

func (w *writeCounter) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.by = nil
	w.n.Store(0)
}

// counts returns the total and a breakdown such as "PATCH dnsrecords=1000, PATCH dnsrecords/status=2000".
func (w *writeCounter) counts() (int64, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var parts []string
	for k, v := range w.by {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(parts)
	return w.n.Load(), strings.Join(parts, ", ")
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
