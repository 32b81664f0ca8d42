//go:build integration

package dnsrecord_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
)

// A record's passes use the backend built from its provider Secret's current version, as the
// Secret metadata watch knows it, without reading the Secret again; a changed Secret is read and
// its new version's backend built at the pass its change queues.
func TestPassesReuseBackendOfCurrentSecret(t *testing.T) {
	store := inmemory.NewStore()
	const z = "reuse.example.com"
	store.EnsureZone(z)
	var mu sync.Mutex
	var built []string // the Secret versions backends were built from
	inmem := inmemory.NewConstructor(store)
	factory := providers.NewFactory()
	factory.Register(v1alpha1.SecretTypeInMemory, func(ctx context.Context, s *corev1.Secret, env providers.Env) (providers.Backend, error) {
		mu.Lock()
		built = append(built, s.ResourceVersion)
		mu.Unlock()
		return inmem(ctx, s, env)
	})
	builds := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(built)
	}
	requests := &requestCounter{}
	ns, _ := startCountedManager(t, requests, factory)
	cl := &cluster{name: "cluster-0", c: envs[0].Client, ns: ns}
	cl.secret(t, z)
	host := "web." + z
	cl.record(t, "web", host, a(host, 60, "192.0.2.1"))
	readyFor := func(target string) {
		t.Helper()
		eventually(t, 30*time.Second, func() string {
			r := cl.get(t, "web")
			if c := ready(r); c == nil || c.Status != metav1.ConditionTrue || r.Status.ObservedGeneration != r.Generation ||
				len(r.Status.Endpoints) != 1 || !slices.Equal(r.Status.Endpoints[0].Targets, []string{target}) {
				return fmt.Sprintf("record not Ready with %s: %+v", target, r.Status)
			}
			return ""
		})
	}
	readyFor("192.0.2.1")
	requests.reset()

	for i := 2; i <= 4; i++ {
		target := fmt.Sprintf("192.0.2.%d", i)
		r := cl.get(t, "web")
		r.Spec.Endpoints = []*v1alpha1.Endpoint{a(host, 60, target)}
		if err := cl.c.Update(t.Context(), r); err != nil {
			t.Fatal(err)
		}
		readyFor(target)
	}
	if n := requests.count("GET", "secrets"); n != 0 {
		t.Errorf("three passes read the provider Secret %d times, want 0 (its backend is built and its version unchanged)", n)
	}
	if got := builds(); len(got) != 1 {
		t.Fatalf("backends built from Secret versions %v, want one", got)
	}

	// A change of the Secret (a rotation; here a label) gives it a new version: the record's next
	// pass reads it and builds that version's backend.
	s := &corev1.Secret{}
	if err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: cl.ns, Name: "provider"}, s); err != nil {
		t.Fatal(err)
	}
	s.Labels = map[string]string{"rotated": "1"}
	if err := cl.c.Update(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() string {
		if got := builds(); len(got) != 2 || got[1] != s.ResourceVersion {
			return fmt.Sprintf("backends built from Secret versions %v, want a second from %s", got, s.ResourceVersion)
		}
		return ""
	})
	if n := requests.count("GET", "secrets"); n == 0 {
		t.Error("the changed Secret was not read")
	}
}
