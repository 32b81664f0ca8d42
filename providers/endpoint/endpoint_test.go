//go:build integration

package endpoint

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/conformance"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// env is the one control plane the tests of this package share.
var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.MainOne(m, testenv.Options{WithoutGatewayAPI: true}, &env))
}

var zoneCount atomic.Int64

// newNamespace creates a namespace of its own for one test.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "endpoint-"}}
	if err := env.Client.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// newZoneRecord creates a DNSRecord holding a zone and deletes it when the test ends.
func newZoneRecord(t *testing.T, namespace, rootHost string, labels map[string]string, endpoints ...*v1alpha1.Endpoint) *v1alpha1.DNSRecord {
	t.Helper()
	r := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("zone-%d", zoneCount.Add(1)), Labels: labels},
		Spec:       v1alpha1.DNSRecordSpec{RootHost: rootHost, Endpoints: endpoints},
	}
	if err := env.Client.Create(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), r) })
	return r
}

var zoneLabel = map[string]string{"kuadrant.io/zone-record": "true"}

func newProvider(t *testing.T, c client.Client, namespace string, data map[string]string) providers.Provider {
	t.Helper()
	backend, err := New(t.Context(), secret(namespace, data), providers.Env{Client: c, Namespace: namespace})
	if err != nil {
		t.Fatal(err)
	}
	return backend.Zones
}

func secret(namespace string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "endpoint-provider"},
		Type:       v1alpha1.SecretTypeEndpoint,
		Data:       map[string][]byte{},
	}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func zoneOf(r *v1alpha1.DNSRecord) providers.Zone {
	return providers.Zone{ID: r.Name, DNSName: r.Spec.RootHost}
}

func TestConformance(t *testing.T) {
	ns := newNamespace(t)
	conformance.Run(t, conformance.Harness{
		NewZone: func(t *testing.T) (providers.Provider, providers.Zone) {
			r := newZoneRecord(t, ns, fmt.Sprintf("z%d.conformance.example.com", zoneCount.Add(1)), zoneLabel)
			return newProvider(t, env.Client, ns, nil), zoneOf(r)
		},
	})
}

func TestParseOptions(t *testing.T) {
	for _, tc := range []struct {
		name      string
		data      map[string]string
		selects   map[string]string
		rejects   map[string]string
		errKey    string
		errDetail string
	}{
		{name: "defaults", selects: zoneLabel, rejects: map[string]string{"kuadrant.io/zone-record": "false"}},
		{name: "default GVR spelled out", data: map[string]string{v1alpha1.EndpointGVRKey: v1alpha1.DefaultEndpointGVR}, selects: zoneLabel},
		{name: "GVR with underscore", data: map[string]string{v1alpha1.EndpointGVRKey: "kuadrant.io_v1alpha1.dnsrecords"}, selects: zoneLabel},
		{name: "other label", data: map[string]string{v1alpha1.EndpointZoneRecordLabelKey: "example.org/zone=yes"},
			selects: map[string]string{"example.org/zone": "yes"}, rejects: zoneLabel},
		{name: "set-based selector", data: map[string]string{v1alpha1.EndpointZoneRecordLabelKey: "zone in (a,b),!legacy"},
			selects: map[string]string{"zone": "b"}, rejects: map[string]string{"zone": "a", "legacy": ""}},
		{name: "other resource", data: map[string]string{v1alpha1.EndpointGVRKey: "kuadrant.io/v1alpha1.dnshealthcheckprobes"},
			errKey: v1alpha1.EndpointGVRKey, errDetail: "other than " + v1alpha1.DefaultEndpointGVR},
		{name: "other group", data: map[string]string{v1alpha1.EndpointGVRKey: "example.org/v1alpha1.dnsrecords"},
			errKey: v1alpha1.EndpointGVRKey, errDetail: "other than"},
		{name: "malformed GVR", data: map[string]string{v1alpha1.EndpointGVRKey: "dnsrecords"},
			errKey: v1alpha1.EndpointGVRKey, errDetail: "group/version.resource"},
		{name: "malformed label", data: map[string]string{v1alpha1.EndpointZoneRecordLabelKey: "a=b=c"},
			errKey: v1alpha1.EndpointZoneRecordLabelKey, errDetail: "not a label selector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := ParseOptions(secret("ns", tc.data))
			if tc.errKey != "" {
				if err == nil {
					t.Fatal("ParseOptions succeeded, want an error")
				}
				msg := err.Error()
				if !strings.Contains(msg, "ns/endpoint-provider") || !strings.Contains(msg, tc.errKey) ||
					!strings.Contains(msg, tc.errDetail) {
					t.Errorf("error %q must name the secret, the key %s and say %q", msg, tc.errKey, tc.errDetail)
				}
				for _, v := range tc.data {
					if v != v1alpha1.DefaultEndpointGVR && strings.Contains(msg, v) {
						t.Errorf("error %q carries the value of the key", msg)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !opts.ZoneSelector.Matches(labels.Set(tc.selects)) {
				t.Errorf("selector %s does not select %v", opts.ZoneSelector, tc.selects)
			}
			if tc.rejects != nil && opts.ZoneSelector.Matches(labels.Set(tc.rejects)) {
				t.Errorf("selector %s selects %v", opts.ZoneSelector, tc.rejects)
			}
		})
	}
}

func TestNewNeedsClientAndNamespace(t *testing.T) {
	for _, e := range []providers.Env{{Namespace: "ns"}, {Client: env.Client}} {
		if _, err := New(t.Context(), secret("ns", nil), e); err == nil {
			t.Errorf("New with env %+v succeeded, want an error", e)
		}
	}
}

// Only DNSRecords of the Secret's namespace carrying the configured label are zones.
func TestZoneLabel(t *testing.T) {
	ctx := t.Context()
	ns, other := newNamespace(t), newNamespace(t)
	custom := newZoneRecord(t, ns, "custom.example.com", map[string]string{"example.org/zone": "yes"})
	standard := newZoneRecord(t, ns, "Standard.example.com", zoneLabel)
	newZoneRecord(t, ns, "plain.example.com", nil)
	newZoneRecord(t, other, "elsewhere.example.com", map[string]string{"example.org/zone": "yes"})

	customProvider := newProvider(t, env.Client, ns, map[string]string{v1alpha1.EndpointZoneRecordLabelKey: "example.org/zone=yes"})
	for _, tc := range []struct {
		p    providers.Provider
		want providers.Zone
	}{
		{customProvider, providers.Zone{ID: custom.Name, DNSName: "custom.example.com"}},
		{newProvider(t, env.Client, ns, nil), providers.Zone{ID: standard.Name, DNSName: "standard.example.com"}},
	} {
		zones, err := tc.p.Zones(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(zones) != 1 || zones[0] != tc.want {
			t.Errorf("Zones() = %v, want [%v]", zones, tc.want)
		}
	}
	if _, err := customProvider.Records(ctx, zoneOf(standard)); providers.KindOf(err) != providers.Permanent {
		t.Errorf("Records of a DNSRecord without the zone label: %v, want a permanent error", err)
	}
	if _, err := customProvider.Records(ctx, providers.Zone{ID: "missing", DNSName: "missing.example.com"}); providers.KindOf(err) != providers.Permanent {
		t.Errorf("Records of a missing DNSRecord: %v, want a permanent error", err)
	}
}

// A zone written by someone else (Kuadrant's dns-operator) reads back as written, and a batch
// changes only spec.endpoints, leaving the other fields of the DNSRecord alone.
func TestApplyTouchesOnlyEndpoints(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t)
	existing := v1alpha1.NewEndpoint("www.app.example.com", v1alpha1.RecordTypeA, 60, "192.0.2.1").
		WithSetIdentifier("eu").WithProviderSpecific(v1alpha1.ProviderSpecificGeoCode, "GEO-EU")
	existing.Labels = v1alpha1.Labels{"owner": "someone"}
	r := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app", Labels: zoneLabel,
			Annotations: map[string]string{"example.org/note": "kept"}},
		Spec: v1alpha1.DNSRecordSpec{RootHost: "app.example.com", OwnerID: "zone-owner",
			ProviderRef: &v1alpha1.ProviderRef{Name: "upstream"}, Endpoints: []*v1alpha1.Endpoint{existing}},
	}
	if err := env.Client.Create(ctx, r); err != nil {
		t.Fatal(err)
	}

	p := newProvider(t, env.Client, ns, nil)
	readView, err := p.Records(ctx, zoneOf(r))
	read := readView.Endpoints
	if err != nil {
		t.Fatal(err)
	}
	if len(read) != 1 || read[0].String() != existing.String() || read[0].Labels["owner"] != "someone" {
		t.Fatalf("Records() = %v, want %v with its labels", read, existing)
	}
	// A CNAME at the zone's root is valid here: a Kuadrant authoritative record is rooted at the
	// hostname it publishes.
	root := v1alpha1.NewEndpoint("app.example.com", v1alpha1.RecordTypeCNAME, 300, "klb.app.example.com")
	if err := p.Apply(ctx, zoneOf(r), nil, &providers.Changes{Create: []*v1alpha1.Endpoint{root}}); err != nil {
		t.Fatal(err)
	}

	var after v1alpha1.DNSRecord
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(r), &after); err != nil {
		t.Fatal(err)
	}
	if after.Spec.OwnerID != "zone-owner" || after.Spec.ProviderRef == nil || after.Spec.ProviderRef.Name != "upstream" ||
		after.Annotations["example.org/note"] != "kept" || after.Spec.RootHost != "app.example.com" {
		t.Errorf("Apply changed more than spec.endpoints: %+v", after)
	}
	if len(after.Spec.Endpoints) != 2 || after.Spec.Endpoints[0].Labels["owner"] != "someone" {
		t.Errorf("spec.endpoints = %v, want the existing set with its labels and the new CNAME", after.Spec.Endpoints)
	}
}

func TestWildcardRootHost(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t)
	r := newZoneRecord(t, ns, "*.wild.example.com", zoneLabel)
	p := newProvider(t, env.Client, ns, nil)
	zones, err := p.Zones(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(zones) != 1 || zones[0].DNSName != "*.wild.example.com" {
		t.Fatalf("Zones() = %v, want the root host as the zone name", zones)
	}
	for _, name := range []string{"*.wild.example.com", "a.wild.example.com"} {
		ep := v1alpha1.NewEndpoint(name, v1alpha1.RecordTypeA, 60, "192.0.2.1")
		if err := p.Apply(ctx, zoneOf(r), nil, &providers.Changes{Create: []*v1alpha1.Endpoint{ep}}); err != nil {
			t.Errorf("Apply(create %s): %v", ep, err)
		}
	}
	// The DNSRecord API admits neither; the backend says so before it writes.
	for _, name := range []string{"wild.example.com", "a.example.com"} {
		ep := v1alpha1.NewEndpoint(name, v1alpha1.RecordTypeA, 60, "192.0.2.1")
		err := p.Apply(ctx, zoneOf(r), nil, &providers.Changes{Create: []*v1alpha1.Endpoint{ep}})
		if providers.KindOf(err) != providers.Permanent || !strings.Contains(fmt.Sprint(err), "not in zone") {
			t.Errorf("Apply(create %s): %v, want the backend to refuse a name outside the zone", ep, err)
		}
	}
}

// racingClient lets another writer change the object between the backend's read and its write.
type racingClient struct {
	client.Client
	beforePatch func()
}

func (c racingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.beforePatch()
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func TestConcurrentWriteIsStaleView(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t)
	theirs := v1alpha1.NewEndpoint("theirs.race.example.com", v1alpha1.RecordTypeA, 60, "192.0.2.1")
	r := newZoneRecord(t, ns, "race.example.com", zoneLabel)
	rival := newProvider(t, env.Client, ns, nil)
	p := newProvider(t, racingClient{Client: env.Client, beforePatch: func() {
		if err := rival.Apply(ctx, zoneOf(r), nil, &providers.Changes{Create: []*v1alpha1.Endpoint{theirs}}); err != nil {
			t.Errorf("the rival's write: %v", err)
		}
	}}, ns, nil)

	ours := v1alpha1.NewEndpoint("ours.race.example.com", v1alpha1.RecordTypeA, 60, "192.0.2.2")
	err := p.Apply(ctx, zoneOf(r), nil, &providers.Changes{Create: []*v1alpha1.Endpoint{ours}})
	if providers.KindOf(err) != providers.StaleView {
		t.Fatalf("Apply after a concurrent write: %v, want a stale-view error", err)
	}
	readView, err := rival.Records(ctx, zoneOf(r))
	read := readView.Endpoints
	if err != nil {
		t.Fatal(err)
	}
	if len(read) != 1 || read[0].String() != theirs.String() {
		t.Errorf("zone holds %v, want only the rival's %v", read, theirs)
	}
}

// A writer whose read is older than the zone's current values is refused, not allowed to overwrite.
func TestStaleValuesAreStaleView(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t)
	r := newZoneRecord(t, ns, "stale.example.com", zoneLabel,
		v1alpha1.NewEndpoint("www.stale.example.com", v1alpha1.RecordTypeA, 60, "192.0.2.1"))
	a, b := newProvider(t, env.Client, ns, nil), newProvider(t, env.Client, ns, nil)
	readByAView, err := a.Records(ctx, zoneOf(r))
	readByA := readByAView.Endpoints
	if err != nil {
		t.Fatal(err)
	}
	update := func(p providers.Provider, old *v1alpha1.Endpoint, target string) error {
		next := old.DeepCopy()
		next.Targets = append(next.Targets, target)
		return p.Apply(ctx, zoneOf(r), nil, &providers.Changes{UpdateOld: []*v1alpha1.Endpoint{old}, UpdateNew: []*v1alpha1.Endpoint{next}})
	}
	if err := update(b, readByA[0], "192.0.2.2"); err != nil {
		t.Fatal(err)
	}
	if err := update(a, readByA[0], "192.0.2.3"); providers.KindOf(err) != providers.StaleView {
		t.Errorf("update from stale values: %v, want a stale-view error", err)
	}
}

// Writers racing on one shared set through the API server lose no write when they re-read on
// StaleView, as the engine does.
func TestConcurrentWritersLoseNothing(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t)
	r := newZoneRecord(t, ns, "shared.example.com", zoneLabel,
		v1alpha1.NewEndpoint("www.shared.example.com", v1alpha1.RecordTypeA, 60, "192.0.2.1"))
	const writers, rounds = 3, 4
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		p := newProvider(t, env.Client, ns, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				target := fmt.Sprintf("10.0.%d.%d", w, i)
				for {
					readView, err := p.Records(ctx, zoneOf(r))
					read := readView.Endpoints
					if err != nil {
						errs <- err
						return
					}
					next := read[0].DeepCopy()
					next.Targets = append(next.Targets, target)
					err = p.Apply(ctx, zoneOf(r), nil, &providers.Changes{UpdateOld: read, UpdateNew: []*v1alpha1.Endpoint{next}})
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
	readView, err := newProvider(t, env.Client, ns, nil).Records(ctx, zoneOf(r))
	read := readView.Endpoints
	if err != nil {
		t.Fatal(err)
	}
	if len(read) != 1 || len(read[0].Targets) != 1+writers*rounds {
		t.Errorf("zone holds %v, want one set with %d targets", read, 1+writers*rounds)
	}
}

// Read through a cache that trails the writes, as the manager's is, the zone record is seen as
// written once AwaitPropagation returns.
func TestAwaitPropagationWaitsForTheCache(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t)
	r := newZoneRecord(t, ns, "app.example.com", zoneLabel)
	p := newProvider(t, testenv.LaggingClient(t, env, ns, 300*time.Millisecond), ns, nil)
	for i, ip := range []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"} {
		view, err := p.Records(ctx, zoneOf(r))
		if err != nil {
			t.Fatal(err)
		}
		changes := &providers.Changes{Create: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(fmt.Sprintf("w%d.app.example.com", i), v1alpha1.RecordTypeA, 60, ip)}}
		if err := p.Apply(ctx, zoneOf(r), view.State, changes); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if err := p.AwaitPropagation(ctx, zoneOf(r), view.State); err != nil {
			t.Fatalf("write %d: AwaitPropagation: %v", i, err)
		}
		after, err := p.Records(ctx, zoneOf(r))
		if err != nil {
			t.Fatal(err)
		}
		if len(after.Endpoints) != i+1 {
			t.Fatalf("after write %d and AwaitPropagation the zone reads %v, want %d sets", i, after.Endpoints, i+1)
		}
	}
}
