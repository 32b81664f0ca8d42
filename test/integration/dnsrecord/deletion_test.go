//go:build integration

package dnsrecord_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
	"github.com/dnspolicy/dnspolicy-controller/test/integration/internal/recordplane"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// restartable is one namespace of the first control plane, whose controller a test can stop and
// start again (a crash, or a restart with other flags).
type restartable struct {
	*cluster
	env *testenv.Env
}

func newRestartable(t *testing.T) *restartable {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "del-"}}
	if err := envs[0].Client.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	return &restartable{cluster: &cluster{name: "cluster-0", c: envs[0].Client, ns: ns.Name}, env: envs[0]}
}

// start runs a record controller for the namespace with factory and returns its stop function.
func (r *restartable) start(t *testing.T, factory *providers.Factory, opts dnsrecord.Options) func() {
	t.Helper()
	return recordplane.StartIn(t, r.env, r.ns, recordplane.Controller{App: app.Options{EnableRecordController: true}, Factory: factory, Record: opts})
}

func inmemFactory(store *inmemory.Store) *providers.Factory {
	f := providers.NewFactory()
	f.Register(v1alpha1.SecretTypeInMemory, inmemory.NewConstructor(store))
	return f
}

func (cl *cluster) providerSecret(t *testing.T, name string, typ corev1.SecretType, zones string, labels map[string]string) {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cl.ns, Labels: labels},
		Type:       typ,
		StringData: map[string]string{v1alpha1.InMemInitZonesKey: zones},
	}
	if err := cl.c.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
}

func (cl *cluster) deleteSecret(t *testing.T, name string) {
	t.Helper()
	if err := cl.c.Delete(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cl.ns}}); err != nil {
		t.Fatal(err)
	}
}

// ownedBy creates a record with an explicit owner ID and provider Secret ("" for the default one).
func (cl *cluster) ownedBy(t *testing.T, name, owner, secret, host string, eps ...*v1alpha1.Endpoint) {
	t.Helper()
	r := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cl.ns},
		Spec:       v1alpha1.DNSRecordSpec{OwnerID: owner, RootHost: host, Endpoints: eps},
	}
	if secret != "" {
		r.Spec.ProviderRef = &v1alpha1.ProviderRef{Name: secret}
	}
	if err := cl.c.Create(t.Context(), r); err != nil {
		t.Fatal(err)
	}
}

func (cl *cluster) waitReady(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		eventually(t, 20*time.Second, func() string {
			if c := ready(cl.get(t, name)); c == nil || c.Status != metav1.ConditionTrue {
				return fmt.Sprintf("%s: Ready %v", name, c)
			}
			return ""
		})
	}
}

// exists reports whether the record is still there, and its Ready condition.
func (cl *cluster) exists(t *testing.T, name string) (*v1alpha1.DNSRecord, bool) {
	t.Helper()
	r := &v1alpha1.DNSRecord{}
	err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: cl.ns, Name: name}, r)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return r, true
}

// eventMessage waits for an event of reason about the record and returns its message.
func eventMessage(t *testing.T, cl *cluster, name, reason string) string {
	t.Helper()
	var msg string
	eventually(t, 10*time.Second, func() string {
		list := &corev1.EventList{}
		if err := cl.c.List(t.Context(), list, client.InNamespace(cl.ns)); err != nil {
			return err.Error()
		}
		for _, e := range list.Items {
			if e.Reason == reason && e.InvolvedObject.Name == name && e.Type == corev1.EventTypeWarning {
				msg = e.Message
				return ""
			}
		}
		return fmt.Sprintf("no Warning %s event for %s in %s (%d events)", reason, name, cl.ns, len(list.Items))
	})
	return msg
}

// claimsOf returns the zone's lines that belong to owner: its ownership TXTs.
func claimsOf(t *testing.T, store *inmemory.Store, z, owner string, eps ...*v1alpha1.Endpoint) []string {
	t.Helper()
	var names []string
	for _, ep := range eps {
		names = append(names, registry.TXTName(owner, ep.RecordType, ep.DNSName))
	}
	var out []string
	for _, l := range zone(t, store, z) {
		if slices.Contains(names, strings.Fields(l)[0]) {
			out = append(out, l)
		}
	}
	return out
}

// A record whose status lost its endpoints and zone (the controller stopped after writing to the
// zone and before its status patch; here the status is emptied while no controller runs) still
// withdraws every claim it holds in the zone when it is deleted, and nothing of the other owner's.
func TestDeletionWithdrawsWhatTheStatusLost(t *testing.T) {
	store := inmemory.NewStore()
	const z = "lost.example.com"
	host := "app." + z
	store.EnsureZone(z)
	r := newRestartable(t)
	r.secret(t, z)
	stop := r.start(t, inmemFactory(store), fastOptions())
	mine := []*v1alpha1.Endpoint{a(host, 60, "10.1.0.1"), a("www."+host, 60, "10.1.0.3")}
	r.ownedBy(t, "web", "owner-web", "provider", host, mine...)
	r.ownedBy(t, "other", "owner-other", "provider", host, a(host, 60, "10.1.0.2"))
	r.waitReady(t, "web", "other")
	eventually(t, 20*time.Second, func() string {
		return same(records(t, store, z), []string{host + " A 60 10.1.0.1,10.1.0.2", "www." + host + " A 60 10.1.0.3"})
	})
	if got := claimsOf(t, store, z, "owner-web", mine...); len(got) != 2 {
		t.Fatalf("want two claims of owner-web in the zone, got %v", got)
	}

	stop()
	rec := r.get(t, "web")
	patch := client.MergeFrom(rec.DeepCopy())
	rec.Status.Endpoints, rec.Status.ZoneID, rec.Status.ZoneDomainName, rec.Status.OwnerID = nil, "", "", ""
	if err := r.c.Status().Patch(t.Context(), rec, patch); err != nil {
		t.Fatal(err)
	}
	// The patch is a merge patch: nil fields are dropped, so check what the API server holds.
	if got := r.get(t, "web"); len(got.Status.Endpoints) != 0 || got.Status.ZoneID != "" {
		t.Fatalf("status not emptied: %d endpoints, zone %q", len(got.Status.Endpoints), got.Status.ZoneID)
	}
	r.delete(t, "web")
	r.start(t, inmemFactory(store), fastOptions())

	eventually(t, 20*time.Second, func() string {
		if _, ok := r.exists(t, "web"); ok {
			return "web still there"
		}
		if got := claimsOf(t, store, z, "owner-web", mine...); len(got) != 0 {
			return fmt.Sprintf("claims of owner-web left in the zone: %v", got)
		}
		return same(records(t, store, z), []string{host + " A 60 10.1.0.2"})
	})
	if got := claimsOf(t, store, z, "owner-other", a(host, 60)); len(got) != 1 {
		t.Errorf("the other owner's claim must stay: %v", got)
	}
}

// switchable is a backend that can be told to answer as it would once its credentials are revoked
// or its zone is deleted.
type switchable struct {
	providers.Provider
	revoked, zoneDeleted *atomic.Bool
}

const switchableType corev1.SecretType = "test.dnspolicy.io/switchable"

var errRevoked = providers.Errorf(providers.Permanent, "InvalidClientTokenId: The security token included in the request is invalid")

func (p switchable) Zones(ctx context.Context) ([]providers.Zone, error) {
	if p.revoked.Load() {
		return nil, errRevoked
	}
	zones, err := p.Provider.Zones(ctx)
	if p.zoneDeleted.Load() {
		zones = slices.DeleteFunc(zones, func(z providers.Zone) bool { return strings.HasPrefix(z.DNSName, "gone.") })
	}
	return zones, err
}

func (p switchable) check(z providers.Zone) error {
	if p.revoked.Load() {
		return errRevoked
	}
	if p.zoneDeleted.Load() && strings.HasPrefix(z.DNSName, "gone.") {
		return providers.Errorf(providers.Permanent, "NoSuchHostedZone: No hosted zone found with ID: %s", z.ID)
	}
	return nil
}

func (p switchable) Records(ctx context.Context, z providers.Zone) (providers.View, error) {
	if err := p.check(z); err != nil {
		return providers.View{}, err
	}
	return p.Provider.Records(ctx, z)
}

func (p switchable) Apply(ctx context.Context, z providers.Zone, st providers.State, c *providers.Changes) error {
	if err := p.check(z); err != nil {
		return err
	}
	return p.Provider.Apply(ctx, z, st, c)
}

// Every permanent error on deletion releases the record OrphanGrace after its deletion, not before
// and not never, with a Warning event naming the zone and the records left in it.
func TestDeletionReleasesOnPermanentErrors(t *testing.T) {
	const grace = 5 * time.Second
	opts := fastOptions()
	opts.OrphanGrace = grace

	cases := []struct {
		name   string
		zone   string
		reason string
		// publish runs the controller until the record is Ready, and returns what breaks the
		// deletion (it may restart the controller).
		breakIt func(t *testing.T, r *restartable, stop func(), revoked, zoneDeleted *atomic.Bool)
		says    string
	}{{
		name: "revoked credentials", zone: "revoked.example.com", reason: v1alpha1.ReasonProviderError,
		breakIt: func(t *testing.T, r *restartable, stop func(), revoked, _ *atomic.Bool) { revoked.Store(true) },
		says:    "InvalidClientTokenId",
	}, {
		name: "deleted zone", zone: "gone.example.com", reason: v1alpha1.ReasonProviderError,
		breakIt: func(t *testing.T, r *restartable, stop func(), _, zoneDeleted *atomic.Bool) { zoneDeleted.Store(true) },
		says:    "is no longer listed by provider secret",
	}, {
		name: "disabled backend", zone: "disabled.example.com", reason: v1alpha1.ReasonUnsupportedProvider,
		breakIt: func(t *testing.T, r *restartable, stop func(), _, _ *atomic.Bool) {
			// The controller restarts without the Secret's type (its --providers flag changed).
			stop()
			r.start(t, inmemFactory(inmemory.NewStore()), opts)
		},
		says: `has type "test.dnspolicy.io/switchable", which is not supported or not enabled`,
	}, {
		name: "secret deleted while the controller was down", zone: "nosecret.example.com", reason: v1alpha1.ReasonProviderSecretMissing,
		breakIt: func(t *testing.T, r *restartable, stop func(), _, _ *atomic.Bool) {
			// A restarted controller has no backend built from the Secret to clean up with.
			stop()
			r.deleteSecret(t, "provider")
			r.start(t, inmemFactory(inmemory.NewStore()), opts)
		},
		says: "not found",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := inmemory.NewStore()
			store.EnsureZone(tc.zone)
			var revoked, zoneDeleted atomic.Bool
			inmem := inmemory.NewConstructor(store)
			factory := inmemFactory(store)
			factory.Register(switchableType, func(ctx context.Context, s *corev1.Secret, env providers.Env) (providers.Backend, error) {
				if revoked.Load() {
					return providers.Backend{}, errRevoked
				}
				b, err := inmem(ctx, s, env)
				b.Zones = switchable{Provider: b.Zones, revoked: &revoked, zoneDeleted: &zoneDeleted}
				return b, err
			})
			r := newRestartable(t)
			r.providerSecret(t, "provider", switchableType, tc.zone, nil)
			stop := r.start(t, factory, opts)
			host := "app." + tc.zone
			r.ownedBy(t, "web", "owner-web", "provider", host, a(host, 60, "10.2.0.1"))
			r.waitReady(t, "web")

			tc.breakIt(t, r, stop, &revoked, &zoneDeleted)
			r.delete(t, "web")
			// The grace runs from metadata.deletionTimestamp, which has a precision of seconds.
			deleted := r.get(t, "web").DeletionTimestamp.Time
			// Held while the grace runs, saying why and what happens next.
			eventually(t, grace, func() string {
				rec, ok := r.exists(t, "web")
				if !ok {
					if time.Since(deleted) < grace {
						t.Fatalf("released %s after deletion, before the grace of %s", time.Since(deleted), grace)
					}
					return ""
				}
				if c := ready(rec); c == nil || c.Reason != tc.reason || !strings.Contains(c.Message, tc.says) || !strings.Contains(c.Message, "released without withdrawing them 5s after its deletion") {
					return fmt.Sprintf("Ready %v, want %s saying %q and when it is released", c, tc.reason, tc.says)
				}
				return ""
			})
			eventually(t, grace+15*time.Second, func() string {
				if _, ok := r.exists(t, "web"); ok {
					return fmt.Sprintf("still there %s after deletion", time.Since(deleted).Round(time.Second))
				}
				return ""
			})
			if d := time.Since(deleted); d < grace {
				t.Errorf("released after %s, before the grace of %s", d, grace)
			}
			msg := eventMessage(t, r.cluster, "web", tc.reason)
			for _, want := range []string{"released 5s after deletion without withdrawing its records", tc.says, "zone " + tc.zone, host + " A", "owner-web"} {
				if !strings.Contains(msg, want) {
					t.Errorf("event must name %q: %s", want, msg)
				}
			}
			// What the event says is left is left.
			if got := records(t, store, tc.zone); !slices.Equal(got, []string{host + " A 60 10.2.0.1"}) {
				t.Errorf("zone holds %v", got)
			}
		})
	}
}

// A record deleted after its Secret withdraws its records with the backend built from the Secret
// while it existed, and is released without waiting for the grace period.
func TestDeletionAfterSecretUsesItsLastBackend(t *testing.T) {
	store := inmemory.NewStore()
	const z = "last.example.com"
	host := "app." + z
	store.EnsureZone(z)
	opts := fastOptions()
	opts.OrphanGrace = time.Hour // a release on the grace would fail the test
	r := newRestartable(t)
	r.secret(t, z)
	r.start(t, inmemFactory(store), opts)
	r.ownedBy(t, "web", "owner-web", "provider", host, a(host, 60, "10.3.0.1"))
	r.waitReady(t, "web")
	r.deleteSecret(t, "provider")
	r.delete(t, "web")
	eventually(t, 20*time.Second, func() string {
		if _, ok := r.exists(t, "web"); ok {
			return "web still there"
		}
		if lines := zone(t, store, z); len(lines) != 0 {
			return fmt.Sprintf("zone still holds %v", lines)
		}
		return ""
	})
}

// Two default-provider Secrets are not a missing Secret: the deleted record waits, well past the
// grace period, saying MultipleDefaultProviders, until one label goes; then it withdraws and goes.
func TestTwoDefaultSecretsNeverReleaseEarly(t *testing.T) {
	store := inmemory.NewStore()
	const z = "defaults.example.com"
	host := "app." + z
	store.EnsureZone(z)
	opts := fastOptions()
	const grace = 2 * time.Second
	opts.OrphanGrace = grace
	r := newRestartable(t)
	def := map[string]string{v1alpha1.DefaultProviderLabel: "true"}
	r.providerSecret(t, "provider-a", v1alpha1.SecretTypeInMemory, z, def)
	r.start(t, inmemFactory(store), opts)
	r.ownedBy(t, "web", "owner-web", "", host, a(host, 60, "10.4.0.1"))
	r.waitReady(t, "web")
	r.providerSecret(t, "provider-b", v1alpha1.SecretTypeInMemory, z, def)
	deleted := time.Now()
	r.delete(t, "web")
	eventually(t, 10*time.Second, func() string {
		rec, ok := r.exists(t, "web")
		if !ok {
			t.Fatal("released with two default providers")
		}
		if c := ready(rec); c == nil || c.Reason != v1alpha1.ReasonMultipleDefaultProviders || !strings.Contains(c.Message, "provider-a, provider-b") {
			return fmt.Sprintf("Ready %v, want %s naming both Secrets", c, v1alpha1.ReasonMultipleDefaultProviders)
		}
		return ""
	})
	// Three grace periods, and the passes of the rate limiter in between: never released.
	for time.Since(deleted) < 3*grace {
		rec, ok := r.exists(t, "web")
		if !ok || !slices.Contains(rec.Finalizers, v1alpha1.RecordFinalizer) {
			t.Fatalf("released %s after deletion with two default providers", time.Since(deleted))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got := records(t, store, z); !slices.Equal(got, []string{host + " A 60 10.4.0.1"}) {
		t.Fatalf("zone holds %v", got)
	}
	// One label goes: the record withdraws with the remaining default and is released.
	s := &corev1.Secret{}
	if err := r.c.Get(t.Context(), client.ObjectKey{Namespace: r.ns, Name: "provider-b"}, s); err != nil {
		t.Fatal(err)
	}
	delete(s.Labels, v1alpha1.DefaultProviderLabel)
	if err := r.c.Update(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() string {
		if _, ok := r.exists(t, "web"); ok {
			return "web still there"
		}
		if lines := zone(t, store, z); len(lines) != 0 {
			return fmt.Sprintf("zone still holds %v", lines)
		}
		return ""
	})
}
