//go:build integration

package dnsrecord_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
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
