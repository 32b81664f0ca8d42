package dnsrecord

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord/publish"
	"github.com/dnspolicy/dnspolicy-controller/pkg/conditions"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
)

// ownersFixture is a Reconciler over a fake client (with the owner-ID index, as the manager's
// cache has it) publishing into an inmemory zone example.com, reachable from namespaces team-a and
// team-b.
type ownersFixture struct {
	r     *Reconciler
	c     client.Client
	store *inmemory.Store
	zone  providers.Zone
	t0    time.Time
}

func newOwnersFixture(t *testing.T) *ownersFixture {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(scheme).
		WithIndex(&v1alpha1.DNSRecord{}, ownerIDField, indexOwnerID).
		WithStatusSubresource(&v1alpha1.DNSRecord{})
	for _, ns := range []string{"team-a", "team-b"} {
		b = b.WithObjects(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "provider", Namespace: ns}, Type: v1alpha1.SecretTypeInMemory,
			Data: map[string][]byte{v1alpha1.InMemInitZonesKey: []byte("example.com")}})
	}
	c := b.Build()
	store := inmemory.NewStore()
	factory := providers.NewFactory()
	factory.Register(v1alpha1.SecretTypeInMemory, inmemory.NewConstructor(store))
	pub := publish.New(publish.DefaultOptions())
	t.Cleanup(pub.Close)
	r := &Reconciler{Client: c, SecretReader: c, Factory: factory, Publisher: pub, Recorder: events.NewFakeRecorder(100), Options: DefaultOptions()}
	r.init()
	return &ownersFixture{r: r, c: c, store: store, zone: store.EnsureZone("example.com"), t0: time.Now().Add(-time.Hour).Truncate(time.Second)}
}

// record creates a record using owner ID "shared", created age seconds after the fixture's start.
func (f *ownersFixture) record(t *testing.T, ns, name string, age int, target string, finalizer bool) *v1alpha1.DNSRecord {
	t.Helper()
	rec := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: metav1.NewTime(f.t0.Add(time.Duration(age) * time.Second))},
		Spec: v1alpha1.DNSRecordSpec{OwnerID: "shared", RootHost: "www.example.com", ProviderRef: &v1alpha1.ProviderRef{Name: "provider"},
			Endpoints: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("www.example.com", v1alpha1.RecordTypeA, 60, target)}},
	}
	if finalizer {
		controllerutil.AddFinalizer(rec, v1alpha1.RecordFinalizer)
	}
	if err := f.c.Create(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// reconcile runs passes of one record until it asks for no early retry (a write not yet validated).
func (f *ownersFixture) reconcile(t *testing.T, rec *v1alpha1.DNSRecord) {
	t.Helper()
	for i := 0; i < 10; i++ {
		res, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(rec)})
		if err != nil {
			t.Fatalf("%s/%s: %v", rec.Namespace, rec.Name, err)
		}
		if res.RequeueAfter != f.r.Options.ValidationRetry {
			return
		}
	}
	t.Fatalf("%s/%s: never validated", rec.Namespace, rec.Name)
}

func (f *ownersFixture) get(t *testing.T, rec *v1alpha1.DNSRecord) *v1alpha1.DNSRecord {
	t.Helper()
	got := &v1alpha1.DNSRecord{}
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(rec), got); err != nil {
		t.Fatal(err)
	}
	return got
}

func (f *ownersFixture) zoneLines(t *testing.T) []string {
	t.Helper()
	eps, err := f.store.Snapshot(f.zone.ID)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range eps {
		out = append(out, fmt.Sprintf("%s %s %v", e.DNSName, e.RecordType, e.Targets))
	}
	return out
}

func ready(rec *v1alpha1.DNSRecord) string {
	c := conditions.Get(rec.Status.Conditions, v1alpha1.ConditionTypeReady)
	if c == nil {
		return "none"
	}
	return string(c.Status) + " " + c.Reason + ": " + c.Message
}

// A record in another namespace borrowing a published owner ID says OwnerIDInUse (naming the
// holder's namespace, nothing of its records), publishes nothing and holds no finalizer; deleted
// with a finalizer (put there by an earlier version), it is released without touching the zone.
func TestOwnerIDInUse(t *testing.T) {
	f := newOwnersFixture(t)
	holder := f.record(t, "team-a", "web", 0, "192.0.2.1", false)
	f.reconcile(t, holder)
	if got := ready(f.get(t, holder)); !strings.HasPrefix(got, "True") {
		t.Fatalf("holder: %s", got)
	}
	published := f.zoneLines(t)
	if !strings.Contains(strings.Join(published, "\n"), "www.example.com A [192.0.2.1]") {
		t.Fatalf("the holder's record is not in the zone: %v", published)
	}

	borrower := f.record(t, "team-b", "evil", 60, "203.0.113.66", false)
	f.reconcile(t, borrower)
	got := f.get(t, borrower)
	want := "False " + v1alpha1.ReasonOwnerIDInUse + ": " + fmt.Sprintf(v1alpha1.MessageOwnerIDInUse, "shared", "team-a")
	if ready(got) != want {
		t.Fatalf("borrower: %s\nwant %s", ready(got), want)
	}
	if controllerutil.ContainsFinalizer(got, v1alpha1.RecordFinalizer) || strings.Contains(ready(got), "192.0.2.1") {
		t.Fatalf("borrower holds a finalizer or reads the holder's records: %+v", got)
	}
	if after := f.zoneLines(t); fmt.Sprint(after) != fmt.Sprint(published) {
		t.Fatalf("the borrower changed the zone:\n  before %v\n  after  %v", published, after)
	}

	// Deleted while holding a finalizer: released, nothing withdrawn.
	old := f.record(t, "team-b", "old", 120, "203.0.113.66", true)
	if err := f.c.Delete(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, old)
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(old), &v1alpha1.DNSRecord{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the borrower deleted was not released: %v", err)
	}
	if after := f.zoneLines(t); fmt.Sprint(after) != fmt.Sprint(published) {
		t.Fatalf("deleting the borrower withdrew from the zone:\n  before %v\n  after  %v", published, after)
	}

	// Another record of the holder's namespace shares the ID (Kuadrant's records of one owner).
	sibling := f.record(t, "team-a", "api", 180, "192.0.2.2", false)
	f.reconcile(t, sibling)
	if got := ready(f.get(t, sibling)); !strings.HasPrefix(got, "True") {
		t.Fatalf("a record of the holder's namespace: %s", got)
	}
}

// When the record holding an owner ID goes, the records of other namespaces waiting on it are queued,
// and the oldest of them holds the ID and publishes.
func TestOwnerIDFreedRequeues(t *testing.T) {
	f := newOwnersFixture(t)
	holder := f.record(t, "team-a", "web", 0, "192.0.2.1", false)
	f.reconcile(t, holder)
	waiter := f.record(t, "team-b", "web", 60, "198.51.100.7", false)
	f.reconcile(t, waiter)
	if got := ready(f.get(t, waiter)); !strings.Contains(got, v1alpha1.ReasonOwnerIDInUse) {
		t.Fatalf("waiter: %s", got)
	}

	gone := f.get(t, holder)
	if err := f.c.Delete(context.Background(), gone); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, holder) // withdraws, releases: the holder is gone
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(holder), &v1alpha1.DNSRecord{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the holder was not released: %v", err)
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	f.r.ownerEvents().Delete(context.Background(), event.DeleteEvent{Object: gone}, q)
	if q.Len() != 1 {
		t.Fatalf("%d records queued, want the waiter", q.Len())
	}
	if req, _ := q.Get(); req.NamespacedName != client.ObjectKeyFromObject(waiter) {
		t.Fatalf("queued %v, want %v", req, client.ObjectKeyFromObject(waiter))
	}
	f.reconcile(t, waiter)
	if got := ready(f.get(t, waiter)); !strings.HasPrefix(got, "True") {
		t.Fatalf("the waiter once the holder left: %s", got)
	}
	if zone := strings.Join(f.zoneLines(t), "\n"); !strings.Contains(zone, "www.example.com A [198.51.100.7]") || strings.Contains(zone, "192.0.2.1") {
		t.Fatalf("zone after the hand-over:\n%s", zone)
	}

}

// A record shaped as a delegation primary's authoritative record (anyone may write one) is
// published into its zone like any record, so it borrows no owner ID either: refused while live,
// released without touching the zone when deleted.
func TestOwnerIDInUseByAuthoritativeRecord(t *testing.T) {
	f := newOwnersFixture(t)
	holder := f.record(t, "team-a", "web", 0, "192.0.2.1", false)
	f.reconcile(t, holder)
	published := f.zoneLines(t)
	for i, finalizer := range []bool{false, true} {
		rec := &v1alpha1.DNSRecord{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("authoritative-record-%d", i), Namespace: "team-b",
				CreationTimestamp: metav1.NewTime(f.t0.Add(time.Minute)), Labels: map[string]string{v1alpha1.AuthoritativeRecordLabel: "true"}},
			Spec: v1alpha1.DNSRecordSpec{OwnerID: "shared", RootHost: "www.example.com", ProviderRef: &v1alpha1.ProviderRef{Name: "provider"},
				Endpoints: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("www.example.com", v1alpha1.RecordTypeA, 60, "203.0.113.66")}},
		}
		if finalizer {
			controllerutil.AddFinalizer(rec, v1alpha1.RecordFinalizer)
		}
		if err := f.c.Create(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		if finalizer {
			if err := f.c.Delete(context.Background(), rec); err != nil {
				t.Fatal(err)
			}
		}
		f.reconcile(t, rec)
		if finalizer {
			if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(rec), &v1alpha1.DNSRecord{}); !apierrors.IsNotFound(err) {
				t.Fatalf("the deleted borrower was not released: %v", err)
			}
		} else if got := ready(f.get(t, rec)); !strings.Contains(got, v1alpha1.ReasonOwnerIDInUse) {
			t.Fatalf("borrower: %s, want OwnerIDInUse", got)
		}
		if after := f.zoneLines(t); fmt.Sprint(after) != fmt.Sprint(published) {
			t.Fatalf("the borrower (finalizer %v) changed the zone:\n  before %v\n  after  %v", finalizer, published, after)
		}
	}
}
