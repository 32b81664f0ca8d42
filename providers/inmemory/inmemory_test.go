package inmemory

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/conformance"
)

func secret(zones string) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "inmem"},
		Type:       v1alpha1.SecretTypeInMemory,
		Data:       map[string][]byte{},
	}
	if zones != "" {
		s.Data[v1alpha1.InMemInitZonesKey] = []byte(zones)
	}
	return s
}

// newZone builds a provider through the constructor, as the controllers do, with a zone of its own.
func newZone(t *testing.T, store *Store) (providers.Provider, providers.Zone) {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())) + ".example.com"
	backend, err := NewConstructor(store)(t.Context(), secret(name), providers.Env{})
	if err != nil {
		t.Fatalf("constructor: %v", err)
	}
	p := backend.Zones
	return p, providers.Zone{ID: ZoneID(name), DNSName: name}
}

func TestConformance(t *testing.T) {
	store := NewStore()
	conformance.Run(t, conformance.Harness{
		NewZone: func(t *testing.T) (providers.Provider, providers.Zone) { return newZone(t, store) },
	})
}

func TestConformanceWithBatchLimit(t *testing.T) {
	store := NewStore()
	store.SetMaxChangesPerBatch(5)
	conformance.Run(t, conformance.Harness{
		NewZone: func(t *testing.T) (providers.Provider, providers.Zone) { return newZone(t, store) },
	})
}

func TestParseOptions(t *testing.T) {
	for _, tc := range []struct {
		name, zones string
		want        []string
		wantErr     bool
	}{
		{name: "absent"},
		{name: "blank", zones: "  "},
		{name: "one", zones: "example.com", want: []string{"example.com"}},
		{name: "normalised and deduplicated", zones: " Example.COM., b.example.org,,example.com ",
			want: []string{"example.com", "b.example.org"}},
		{name: "invalid", zones: "example.com,not a zone", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := ParseOptions(secret(tc.zones))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("ParseOptions(%q) succeeded, want an error", tc.zones)
				}
				msg := err.Error()
				if !strings.Contains(msg, "ns/inmem") || !strings.Contains(msg, v1alpha1.InMemInitZonesKey) ||
					strings.Contains(msg, "not a zone") {
					t.Errorf("error %q must name the secret and the key, and not the value", msg)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseOptions(%q): %v", tc.zones, err)
			}
			if fmt.Sprint(opts.InitZones) != fmt.Sprint(tc.want) {
				t.Errorf("InitZones = %v, want %v", opts.InitZones, tc.want)
			}
		})
	}
}

// Three clusters' Secrets, in different namespaces, see and write one zone of a shared store.
func TestProvidersShareAStore(t *testing.T) {
	ctx := t.Context()
	store := NewStore()
	var ps []providers.Provider
	for i := range 3 {
		s := secret("Shared.example.com")
		s.Namespace = fmt.Sprintf("cluster-%d", i)
		backend, err := NewConstructor(store)(ctx, s, providers.Env{Namespace: s.Namespace})
		if err != nil {
			t.Fatal(err)
		}
		p := backend.Zones
		ps = append(ps, p)
	}
	zones, err := ps[2].Zones(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := providers.Zone{ID: ZoneID("shared.example.com"), DNSName: "shared.example.com"}
	if len(zones) != 1 || zones[0] != want {
		t.Fatalf("Zones() = %v, want [%v]", zones, want)
	}
	if want.ID == want.DNSName {
		t.Errorf("zone ID equals the zone name; it must differ so code confusing the two fails")
	}
	for i, p := range ps {
		ep := v1alpha1.NewEndpoint(fmt.Sprintf("c%d.shared.example.com", i), v1alpha1.RecordTypeA, 60, "192.0.2.1")
		if err := p.Apply(ctx, want, nil, &providers.Changes{Create: []*v1alpha1.Endpoint{ep}}); err != nil {
			t.Fatal(err)
		}
	}
	gotView, err := ps[0].Records(ctx, want)
	got := gotView.Endpoints
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Errorf("Records() = %v, want the three clusters' records", got)
	}
}

func TestStrictness(t *testing.T) {
	const zoneName = "strict.example.com"
	a := func(name string, targets ...string) *v1alpha1.Endpoint {
		return v1alpha1.NewEndpoint(name+"."+zoneName, v1alpha1.RecordTypeA, 60, targets...)
	}
	for _, tc := range []struct {
		name    string
		changes providers.Changes
		want    providers.ErrorKind
	}{
		{"update of a missing set", providers.Changes{
			UpdateOld: []*v1alpha1.Endpoint{a("missing", "192.0.2.1")},
			UpdateNew: []*v1alpha1.Endpoint{a("missing", "192.0.2.2")},
		}, providers.StaleView},
		{"update from values the zone no longer holds", providers.Changes{
			UpdateOld: []*v1alpha1.Endpoint{a("www", "192.0.2.9")},
			UpdateNew: []*v1alpha1.Endpoint{a("www", "192.0.2.2")},
		}, providers.StaleView},
		{"delete of values the zone no longer holds", providers.Changes{
			Delete: []*v1alpha1.Endpoint{a("www", "192.0.2.9")},
		}, providers.StaleView},
		{"delete with another TTL", providers.Changes{
			Delete: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("www."+zoneName, v1alpha1.RecordTypeA, 300, "192.0.2.1")},
		}, providers.StaleView},
		{"create of an existing set", providers.Changes{
			Create: []*v1alpha1.Endpoint{a("www", "192.0.2.2")},
		}, providers.StaleView},
		{"CNAME beside a set the zone holds", providers.Changes{
			Create: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("www."+zoneName, v1alpha1.RecordTypeCNAME, 60, "x.example.net")},
		}, providers.StaleView},
		{"CNAME beside a set of the same batch", providers.Changes{
			Create: []*v1alpha1.Endpoint{a("new", "192.0.2.1"), v1alpha1.NewEndpoint("new."+zoneName, v1alpha1.RecordTypeCNAME, 60, "x.example.net")},
		}, providers.Permanent},
		{"CNAME beside a set the batch updates", providers.Changes{
			UpdateOld: []*v1alpha1.Endpoint{a("www", "192.0.2.1")},
			UpdateNew: []*v1alpha1.Endpoint{a("www", "192.0.2.2")},
			Create:    []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("www."+zoneName, v1alpha1.RecordTypeCNAME, 60, "x.example.net")},
		}, providers.Permanent},
		{"same set created twice", providers.Changes{
			Create: []*v1alpha1.Endpoint{a("new", "192.0.2.1"), a("new", "192.0.2.2")},
		}, providers.Permanent},
		{"same set deleted twice", providers.Changes{
			Delete: []*v1alpha1.Endpoint{a("www", "192.0.2.1"), a("www", "192.0.2.1")},
		}, providers.Permanent},
		{"same set deleted and updated", providers.Changes{
			Delete:    []*v1alpha1.Endpoint{a("www", "192.0.2.1")},
			UpdateOld: []*v1alpha1.Endpoint{a("www", "192.0.2.1")},
			UpdateNew: []*v1alpha1.Endpoint{a("www", "192.0.2.2")},
		}, providers.Permanent},
		{"update that changes the key", providers.Changes{
			UpdateOld: []*v1alpha1.Endpoint{a("www", "192.0.2.1")},
			UpdateNew: []*v1alpha1.Endpoint{a("other", "192.0.2.1")},
		}, providers.Permanent},
		{"unpaired update", providers.Changes{
			UpdateOld: []*v1alpha1.Endpoint{a("www", "192.0.2.1")},
		}, providers.Permanent},
		{"name outside the zone", providers.Changes{
			Create: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("www.example.org", v1alpha1.RecordTypeA, 60, "192.0.2.1")},
		}, providers.Permanent},
		{"name that only ends like the zone", providers.Changes{
			Create: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("notstrict.example.com", v1alpha1.RecordTypeA, 60, "192.0.2.1")},
		}, providers.Permanent},
		{"no targets", providers.Changes{Create: []*v1alpha1.Endpoint{a("new")}}, providers.Permanent},
		{"empty target", providers.Changes{Create: []*v1alpha1.Endpoint{a("new", "")}}, providers.Permanent},
		{"no type", providers.Changes{
			Create: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("new."+zoneName, "", 60, "192.0.2.1")},
		}, providers.Permanent},
		{"nil set", providers.Changes{Create: []*v1alpha1.Endpoint{nil}}, providers.Permanent},
		{"CNAME at the apex", providers.Changes{
			Create: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(zoneName, v1alpha1.RecordTypeCNAME, 60, "x.example.net")},
		}, providers.Permanent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			store := NewStore()
			zone := store.EnsureZone(zoneName)
			p := New(store, Options{})
			if err := p.Apply(ctx, zone, nil, &providers.Changes{Create: []*v1alpha1.Endpoint{a("www", "192.0.2.1")}}); err != nil {
				t.Fatal(err)
			}
			before, _ := store.Snapshot(zone.ID)
			err := p.Apply(ctx, zone, nil, &tc.changes)
			if err == nil {
				t.Fatal("Apply succeeded, want an error")
			}
			if got := providers.KindOf(err); got != tc.want {
				t.Errorf("error %q is %v, want %v", err, got, tc.want)
			}
			after, _ := store.Snapshot(zone.ID)
			if fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("zone changed by a rejected batch: %v, was %v", after, before)
			}
		})
	}
}

func TestDeleteAndCreateOfOneSetInABatch(t *testing.T) {
	ctx := t.Context()
	store := NewStore()
	zone := store.EnsureZone("example.com")
	p := New(store, Options{})
	old := v1alpha1.NewEndpoint("www.example.com", v1alpha1.RecordTypeA, 60, "192.0.2.1")
	replacement := v1alpha1.NewEndpoint("www.example.com", v1alpha1.RecordTypeA, 300, "192.0.2.2")
	for _, c := range []*providers.Changes{
		{Create: []*v1alpha1.Endpoint{old}},
		{Delete: []*v1alpha1.Endpoint{old}, Create: []*v1alpha1.Endpoint{replacement}},
	} {
		if err := p.Apply(ctx, zone, nil, c); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := store.Snapshot(zone.ID)
	if len(got) != 1 || got[0].String() != replacement.String() {
		t.Errorf("zone holds %v, want only %v", got, replacement)
	}
}

func TestUnknownZone(t *testing.T) {
	p := New(NewStore(), Options{})
	zone := providers.Zone{ID: ZoneID("nowhere.example.com"), DNSName: "nowhere.example.com"}
	if _, err := p.Records(t.Context(), zone); providers.KindOf(err) != providers.Permanent {
		t.Errorf("Records of an unknown zone: %v, want a permanent error", err)
	}
	if err := p.Apply(t.Context(), zone, nil, &providers.Changes{}); providers.KindOf(err) != providers.Permanent {
		t.Errorf("Apply to an unknown zone: %v, want a permanent error", err)
	}
}

func TestReturnsCopies(t *testing.T) {
	ctx := t.Context()
	store := NewStore()
	zone := store.EnsureZone("example.com")
	p := New(store, Options{})
	ep := v1alpha1.NewEndpoint("www.example.com", v1alpha1.RecordTypeA, 60, "192.0.2.1").
		WithProviderSpecific(v1alpha1.ProviderSpecificWeight, "10")
	if err := p.Apply(ctx, zone, nil, &providers.Changes{Create: []*v1alpha1.Endpoint{ep}}); err != nil {
		t.Fatal(err)
	}
	ep.Targets[0] = "198.51.100.1"
	readView, _ := p.Records(ctx, zone)
	read := readView.Endpoints
	read[0].Targets[0] = "198.51.100.2"
	read[0].ProviderSpecific[0].Value = "99"
	adjusted, _ := p.AdjustEndpoints(read)
	adjusted[0].DNSName = "changed.example.com"
	snap, _ := store.Snapshot(zone.ID)
	snap[0].RecordTTL = 1

	got, _ := store.Snapshot(zone.ID)
	want := "www.example.com 60 IN A 192.0.2.1"
	if got[0].String() != want || got[0].ProviderSpecific[0].Value != "10" {
		t.Errorf("zone holds %v, want %s with weight 10: the store shares memory with a caller", got[0], want)
	}
}

func TestCallCounts(t *testing.T) {
	ctx := t.Context()
	store := NewStore()
	a, b := store.EnsureZone("a.example.com"), store.EnsureZone("b.example.com")
	p1, p2 := New(store, Options{}), New(store, Options{})
	mustDo := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := p1.Zones(ctx)
	mustDo(err)
	_, err = p1.Records(ctx, a)
	mustDo(err)
	_, err = p2.Records(ctx, a)
	mustDo(err)
	_, err = p2.Records(ctx, b)
	mustDo(err)
	mustDo(p1.Apply(ctx, a, nil, &providers.Changes{Create: []*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint("www.a.example.com", v1alpha1.RecordTypeA, 60, "192.0.2.1")}}))
	if err := p2.Apply(ctx, a, nil, &providers.Changes{Delete: []*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint("gone.a.example.com", v1alpha1.RecordTypeA, 60, "192.0.2.1")}}); err == nil {
		t.Fatal("deleting a missing set succeeded")
	}

	for _, tc := range []struct {
		what      string
		got, want Calls
	}{
		{"store", store.Calls(), Calls{Zones: 1, Records: 3, Apply: 2}},
		{"store, zone a", store.ZoneCalls(a.ID), Calls{Records: 2, Apply: 2}},
		{"store, zone b", store.ZoneCalls(b.ID), Calls{Records: 1}},
		{"p1", p1.Calls(), Calls{Zones: 1, Records: 1, Apply: 1}},
		{"p2, zone a", p2.ZoneCalls(a.ID), Calls{Records: 1, Apply: 1}},
		{"p2, zone b", p2.ZoneCalls(b.ID), Calls{Records: 1}},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: calls %+v, want %+v", tc.what, tc.got, tc.want)
		}
	}
}

// Concurrent writers of one zone: every batch either applies whole or fails as StaleView, and no
// write is lost. Run with -race.
func TestConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	store := NewStore()
	zone := store.EnsureZone("example.com")
	const writers, rounds = 4, 50
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := New(store, Options{})
			for r := range rounds {
				// Each writer adds its own target to one shared A record, re-reading when its view is stale.
				target := fmt.Sprintf("10.0.%d.%d", w, r)
				for {
					readView, err := p.Records(ctx, zone)
					read := readView.Endpoints
					if err != nil {
						errs <- err
						return
					}
					changes := &providers.Changes{}
					if len(read) == 0 {
						changes.Create = []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("www.example.com", v1alpha1.RecordTypeA, 60, target)}
					} else {
						next := read[0].DeepCopy()
						next.Targets = append(next.Targets, target)
						changes.UpdateOld, changes.UpdateNew = read, []*v1alpha1.Endpoint{next}
					}
					err = p.Apply(ctx, zone, nil, changes)
					if err == nil {
						break
					}
					if providers.KindOf(err) != providers.StaleView {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, _ := store.Snapshot(zone.ID)
	if len(got) != 1 || len(got[0].Targets) != writers*rounds {
		t.Fatalf("zone holds %d sets, want one with %d targets", len(got), writers*rounds)
	}
}

func TestApplyChangesDropsNilRecords(t *testing.T) {
	www := v1alpha1.NewEndpoint("www.example.com", v1alpha1.RecordTypeA, 60, "192.0.2.1")
	api := v1alpha1.NewEndpoint("api.example.com", v1alpha1.RecordTypeA, 60, "192.0.2.2")
	got, err := providers.ApplyChanges("example.com", []*v1alpha1.Endpoint{nil, www}, &providers.Changes{Create: []*v1alpha1.Endpoint{api}})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint([]*v1alpha1.Endpoint{www, api}) {
		t.Errorf("ApplyChanges = %v, want [%v %v]", got, www, api)
	}
}
