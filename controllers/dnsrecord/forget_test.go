package dnsrecord

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord/backends"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord/publish"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
)

// Everything the controller keeps per record (its reason, re-check interval, owner, backend,
// publish queue and health statements read) goes when the record does: the maps shrink back to zero.
func TestForgetDropsEverythingKeptForARecord(t *testing.T) {
	store := inmemory.NewStore()
	zone := store.EnsureZone("example.com")
	f := providers.NewFactory()
	f.Register(v1alpha1.SecretTypeInMemory, inmemory.NewConstructor(store))
	r := &Reconciler{Publisher: publish.New(publish.Options{MaxAge: time.Hour, Gather: time.Millisecond, MaxGather: time.Millisecond})}
	t.Cleanup(r.Publisher.Close)
	r.backends = &backends.Cache{Factory: f}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "dns", UID: "uid-1", ResourceVersion: "1"}, Type: v1alpha1.SecretTypeInMemory}

	keys := []types.NamespacedName{{Namespace: "ns", Name: "r1"}, {Namespace: "ns", Name: "r2"}}
	for i, key := range keys {
		b, err := r.backends.Backend(context.Background(), key, secret, providers.Env{})
		if err != nil {
			t.Fatal(err)
		}
		owner := key.Name
		r.memory.setReason(key, v1alpha1.ReasonProviderSuccess)
		r.memory.setInterval(key, time.Minute)
		r.memory.remember(owner, key)
		r.tracker.Read(key.String(), b.Account+"/"+zone.ID, "app.example.com")
		if _, err := r.Publisher.Publish(context.Background(), b.Provider, b.Account, zone, publish.Request{Record: key.String(), OwnerID: owner,
			Desired: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("app.example.com", v1alpha1.RecordTypeA, 60, fmt.Sprintf("192.0.2.%d", i+1))}}); err != nil {
			t.Fatal(err)
		}
	}
	if q, held := r.Publisher.Queues(); q != 1 || held != 2 {
		t.Fatalf("two records of one zone: %d queues held %d times, want 1 and 2", q, held)
	}

	for _, key := range keys {
		r.forget(key)
	}
	// Reasons, intervals and owners are one entry per record (memory.go).
	if n := len(r.memory.records); n != 0 {
		t.Errorf("%d records' reasons, intervals and owners kept", n)
	}
	if n := len(r.memory.byOwner); n != 0 {
		t.Errorf("%d owners kept for replans", n)
	}
	if _, records := r.backends.Len(); records != 0 {
		t.Errorf("%d records' backends kept", records)
	}
	if hosts, readers := r.tracker.Len(); hosts != 0 || readers != 0 {
		t.Errorf("%d hosts' statements kept for %d readers", hosts, readers)
	}
	if q, held := r.Publisher.Queues(); q != 0 || held != 0 {
		t.Errorf("%d publish queues held %d times", q, held)
	}
}
