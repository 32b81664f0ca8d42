package backends

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
)

const testType corev1.SecretType = "test.dnspolicy.io/counted"

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// counting returns a cache whose constructor counts the backends it builds, and whose zone listings
// are counted by the inmemory store.
func counting(t *testing.T) (*Cache, *int, *inmemory.Store, *clock) {
	t.Helper()
	store := inmemory.NewStore()
	store.EnsureZone("example.com")
	builds := 0
	inmem := inmemory.NewConstructor(store)
	f := providers.NewFactory()
	f.Register(testType, func(ctx context.Context, s *corev1.Secret, env providers.Env) (providers.Backend, error) {
		builds++
		return inmem(ctx, s, env)
	})
	clk := &clock{t: time.Unix(1_000_000, 0)}
	return &Cache{Factory: f, Idle: time.Hour, Now: clk.now}, &builds, store, clk
}

func secret(uid, version string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "provider", UID: types.UID(uid), ResourceVersion: version},
		Type:       testType,
	}
}

var (
	web = types.NamespacedName{Namespace: "ns", Name: "web"}
	api = types.NamespacedName{Namespace: "ns", Name: "api"}
)

func TestOneBackendPerSecretVersion(t *testing.T) {
	c, builds, _, _ := counting(t)
	ctx := context.Background()
	b1, err := c.Backend(ctx, web, secret("u1", "1"), providers.Env{})
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := c.Backend(ctx, api, secret("u1", "1"), providers.Env{})
	if b1 != b2 || *builds != 1 {
		t.Errorf("two records of one Secret version: %d builds, same backend %v", *builds, b1 == b2)
	}
	if b1.Account != "ns/provider/u1" {
		t.Errorf("account %q", b1.Account)
	}
	b3, _ := c.Backend(ctx, web, secret("u1", "2"), providers.Env{})
	if b3 == b1 || *builds != 2 {
		t.Errorf("a changed Secret must build a new backend (%d builds)", *builds)
	}
	// The other record still remembers the backend it used.
	if last, ok := c.Last(api); !ok || last != b1 {
		t.Error("a record's last backend is kept until it publishes again")
	}
}

func TestUnsupportedTypeIsAnError(t *testing.T) {
	c, _, _, _ := counting(t)
	s := secret("u1", "1")
	s.Type = "kuadrant.io/disabled"
	_, err := c.Backend(context.Background(), web, s, providers.Env{})
	if err == nil || providers.KindOf(err) != providers.Permanent {
		t.Fatalf("want a Permanent error, got %v", err)
	}
	if _, ok := c.Last(web); ok {
		t.Error("nothing is remembered for a backend that was not built")
	}
}

func TestDeletedSecretKeptAsLastBackend(t *testing.T) {
	c, builds, _, _ := counting(t)
	ctx := context.Background()
	b, _ := c.Backend(ctx, web, secret("u1", "1"), providers.Env{})
	c.SecretChanged("u1", "")
	if n, _ := c.Len(); n != 0 {
		t.Errorf("a deleted Secret's backend must be dropped from the Secret index (%d kept)", n)
	}
	last, ok := c.Last(web)
	if !ok || last != b {
		t.Fatal("the record's last backend must survive its Secret, for clean-up")
	}
	// A Secret recreated under the same UID (it cannot be, but the index must not serve the old
	// version) builds anew.
	if _, err := c.Backend(ctx, web, secret("u1", "1"), providers.Env{}); err != nil || *builds != 2 {
		t.Errorf("after deletion the Secret index must build again (%d builds)", *builds)
	}
	c.Forget(web)
	if _, ok := c.Last(web); ok {
		t.Error("a forgotten record keeps nothing")
	}
}

func TestSecretChangedKeepsCurrentVersion(t *testing.T) {
	c, builds, _, _ := counting(t)
	ctx := context.Background()
	c.Backend(ctx, web, secret("u1", "5"), providers.Env{})
	c.SecretChanged("u1", "5") // an update that is the version we hold (a status-less resync)
	c.Backend(ctx, web, secret("u1", "5"), providers.Env{})
	if *builds != 1 {
		t.Errorf("the current version must stay cached (%d builds)", *builds)
	}
	c.SecretChanged("u1", "6")
	if n, _ := c.Len(); n != 0 {
		t.Error("an older version is dropped when the Secret changes")
	}
}

func TestIdleEntriesEvicted(t *testing.T) {
	c, _, _, clk := counting(t)
	ctx := context.Background()
	c.Backend(ctx, web, secret("u1", "1"), providers.Env{})
	c.Backend(ctx, api, secret("u2", "1"), providers.Env{})
	clk.t = clk.t.Add(40 * time.Minute)
	c.Backend(ctx, api, secret("u2", "1"), providers.Env{}) // api stays in use
	clk.t = clk.t.Add(30 * time.Minute)
	if _, ok := c.Last(web); ok {
		t.Error("a record unused for longer than Idle must be forgotten")
	}
	if _, ok := c.Last(api); !ok {
		t.Error("a record used within Idle must be kept")
	}
	if secrets, records := c.Len(); secrets != 1 || records != 1 {
		t.Errorf("kept %d backends by Secret and %d by record, want 1 and 1", secrets, records)
	}
}

func TestZoneListReused(t *testing.T) {
	c, _, store, clk := counting(t)
	ctx := context.Background()
	b, _ := c.Backend(ctx, web, secret("u1", "1"), providers.Env{})
	for range 3 {
		zones, err := b.Zones(ctx, clk.now(), time.Minute)
		if err != nil || len(zones) != 1 {
			t.Fatalf("zones %v, %v", zones, err)
		}
	}
	if n := store.Calls().Zones; n != 1 {
		t.Errorf("%d listings for three lookups within max age, want 1", n)
	}
	clk.t = clk.t.Add(ZoneRelistAfter)
	b.Zones(ctx, clk.now(), ZoneRelistAfter)
	if n := store.Calls().Zones; n != 2 {
		t.Errorf("%d listings: a list as old as maxAge must be read again", n)
	}
}

type failingZones struct{ providers.Provider }

func (failingZones) Zones(context.Context) ([]providers.Zone, error) {
	return nil, errors.New("denied")
}

func TestFailedListingNotCached(t *testing.T) {
	b := &Backend{Provider: failingZones{}}
	if _, err := b.Zones(context.Background(), time.Now(), time.Minute); err == nil {
		t.Fatal("want the listing error")
	}
	if !b.zonesAt.IsZero() {
		t.Error("a failed listing must not count as a list")
	}
}

func TestCurrentServesOnlyTheBuiltVersion(t *testing.T) {
	c, builds, _, _ := counting(t)
	ctx := context.Background()
	if _, ok := c.Current(web, "u1", "1"); ok {
		t.Fatal("nothing built yet: Current must miss")
	}
	b, _ := c.Backend(ctx, web, secret("u1", "1"), providers.Env{})
	got, ok := c.Current(api, "u1", "1")
	if !ok || got != b || *builds != 1 {
		t.Fatalf("the built version must be served without a build (ok %v, same %v, %d builds)", ok, got == b, *builds)
	}
	if last, ok := c.Last(api); !ok || last != b {
		t.Error("Current must remember the backend as the record's last, as Backend does")
	}
	if _, ok := c.Current(web, "u1", "2"); ok {
		t.Error("a newer version of the Secret must miss (it has to be read and built)")
	}
	c.SecretChanged("u1", "")
	if _, ok := c.Current(web, "u1", "1"); ok {
		t.Error("a deleted Secret's backend must not be served as current")
	}
}

// hostZoned gives each root host a zone record (providers.HostZones).
type hostZoned struct {
	host providers.Provider
}

func (h hostZoned) HostProvider() providers.Provider                   { return h.host }
func (hostZoned) HostZone(string) (providers.HostZone, error)          { return providers.HostZone{}, nil }
func (hostZoned) CheckEndpoints([]*v1alpha1.Endpoint) error            { return nil }
func (hostZoned) AuthoritativeLabels(providers.Zone) map[string]string { return nil }

type wrapped struct{ providers.Provider }

// A HostZones backend is kept as such, and its host provider wrapped as the backend is (metrics).
func TestHostZonesBackend(t *testing.T) {
	store := inmemory.NewStore()
	inner, err := inmemory.NewConstructor(store)(context.Background(), secret("u1", "1"), providers.Env{})
	if err != nil {
		t.Fatal(err)
	}
	hostBackend, err := inmemory.NewConstructor(store)(context.Background(), secret("u1", "1"), providers.Env{})
	if err != nil {
		t.Fatal(err)
	}
	host := hostBackend.Zones
	f := providers.NewFactory()
	f.Register(testType, func(context.Context, *corev1.Secret, providers.Env) (providers.Backend, error) {
		return providers.Backend{Zones: inner.Zones, Hosts: hostZoned{host: host}}, nil
	})
	c := &Cache{Factory: f, Wrap: func(p providers.Provider) providers.Provider { return wrapped{p} }}
	b, err := c.Backend(context.Background(), web, secret("u1", "1"), providers.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Hosts == nil {
		t.Fatal("a HostZones backend is not kept as one")
	}
	if w, ok := b.HostProvider.(wrapped); !ok || w.Provider != host {
		t.Errorf("HostProvider = %#v, want the backend's host provider, wrapped", b.HostProvider)
	}
	if _, ok := b.Provider.(wrapped); !ok {
		t.Errorf("Provider = %#v, want it wrapped", b.Provider)
	}
}
