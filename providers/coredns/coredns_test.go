//go:build integration

package coredns

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
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

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "coredns-"}}
	if err := env.Client.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func secret(namespace string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "coredns-provider"},
		Type:       v1alpha1.SecretTypeCoreDNS,
		Data:       map[string][]byte{},
	}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func newProvider(t *testing.T, c client.Client, namespace string, zones ...string) providers.Provider {
	t.Helper()
	return newBackend(t, c, namespace, zones...).Zones
}

func newBackend(t *testing.T, c client.Client, namespace string, zones ...string) providers.Backend {
	t.Helper()
	backend, err := New(t.Context(), secret(namespace, map[string]string{v1alpha1.CoreDNSZonesKey: strings.Join(zones, ",")}),
		providers.Env{Client: c, Namespace: namespace})
	if err != nil {
		t.Fatal(err)
	}
	return backend
}

func zone(name string) providers.Zone { return providers.Zone{ID: name, DNSName: name} }

func TestConformance(t *testing.T) {
	ns := newNamespace(t)
	conformance.Run(t, conformance.Harness{
		NewZone: func(t *testing.T) (providers.Provider, providers.Zone) {
			name := fmt.Sprintf("z%d.conformance.example.com", zoneCount.Add(1))
			return newProvider(t, env.Client, ns, name), zone(name)
		},
	})
}

func TestParseOptions(t *testing.T) {
	for _, tc := range []struct {
		name        string
		data        map[string]string
		zones       []string
		nameservers []string
		errKey      string
	}{
		{name: "zones", data: map[string]string{"ZONES": " Example.COM., b.example.org,,example.com"},
			zones: []string{"example.com", "b.example.org"}},
		{name: "nameservers", data: map[string]string{"ZONES": "example.com", "NAMESERVERS": "10.0.0.1:53, ns1.example.com,[2001:db8::1]:5353"},
			zones: []string{"example.com"}, nameservers: []string{"10.0.0.1:53", "ns1.example.com", "[2001:db8::1]:5353"}},
		{name: "no zones", data: map[string]string{"ZONES": " , "}, errKey: "ZONES"},
		{name: "missing zones", data: nil, errKey: "ZONES"},
		{name: "bad zone", data: map[string]string{"ZONES": "exa_mple.com"}, errKey: "ZONES"},
		{name: "zone too long for a label", data: map[string]string{"ZONES": strings.Repeat("a", 40) + "." + strings.Repeat("b", 40) + ".com"}, errKey: "ZONES"},
		{name: "bad nameserver", data: map[string]string{"ZONES": "example.com", "NAMESERVERS": "not a host:53"}, errKey: "NAMESERVERS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := ParseOptions(secret("ns", tc.data))
			if tc.errKey != "" {
				if err == nil || !strings.Contains(err.Error(), "ns/coredns-provider") || !strings.Contains(err.Error(), tc.errKey) {
					t.Fatalf("ParseOptions error = %v, want one naming the secret and key %s", err, tc.errKey)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(opts.Zones, tc.zones) || !slices.Equal(opts.Nameservers, tc.nameservers) {
				t.Errorf("ParseOptions = %+v, want zones %v nameservers %v", opts, tc.zones, tc.nameservers)
			}
		})
	}
}

func TestNewNeedsClientAndNamespace(t *testing.T) {
	s := secret("ns", map[string]string{v1alpha1.CoreDNSZonesKey: "example.com"})
	for _, e := range []providers.Env{{Namespace: "ns"}, {Client: env.Client}} {
		if _, err := New(t.Context(), s, e); err == nil {
			t.Errorf("New with env %+v succeeded, want an error", e)
		}
	}
}

func TestAdjustEndpointsValidatesGeo(t *testing.T) {
	p := &Provider{}
	for _, tc := range []struct {
		code, want string
	}{
		{"IE", ""}, {"GEO-EU", ""}, {"*", ""},
		{"XX", "unexpected geo code. Prefix with GEO- for continents or use ISO_3166 Alpha 2 supported code for countries"},
		{"GEO-XX", "unexpected continent code."},
	} {
		ep := v1alpha1.NewEndpoint("klb.app.example.com", v1alpha1.RecordTypeCNAME, 300, "x.klb.app.example.com").
			WithSetIdentifier(tc.code).WithProviderSpecific(v1alpha1.ProviderSpecificGeoCode, tc.code)
		out, err := p.AdjustEndpoints([]*v1alpha1.Endpoint{ep})
		if tc.want == "" {
			if err != nil || len(out) != 1 || out[0].String() != ep.String() {
				t.Errorf("geo %s: AdjustEndpoints = %v, %v; want it unchanged", tc.code, out, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || providers.KindOf(err) != providers.Permanent {
			t.Errorf("geo %s: error %v, want a permanent %q", tc.code, err, tc.want)
		}
	}
	bad := v1alpha1.NewEndpoint("eu.klb.app.example.com", v1alpha1.RecordTypeCNAME, 60, "gw.example.net").
		WithSetIdentifier("gw").WithProviderSpecific(v1alpha1.ProviderSpecificWeight, "-1")
	if _, err := p.AdjustEndpoints([]*v1alpha1.Endpoint{bad}); err == nil || !strings.Contains(err.Error(), "invalid weight expected a value >= 0") {
		t.Errorf("negative weight: %v", err)
	}
}

func txt(name, recordType string) *v1alpha1.Endpoint {
	owner := "owner-a"
	n := fmt.Sprintf("kuadrant-%s-%s-%s", hash.Base36(owner, 8), strings.ToLower(recordType), strings.Replace(name, "*", "wildcard", 1))
	return v1alpha1.NewEndpoint(n, v1alpha1.RecordTypeTXT, 300, `"heritage=external-dns,external-dns/owner=`+owner+`,external-dns/version=1"`)
}

func cname(name, target string) *v1alpha1.Endpoint {
	return v1alpha1.NewEndpoint(name, v1alpha1.RecordTypeCNAME, 300, target)
}

func a(name string) *v1alpha1.Endpoint {
	return v1alpha1.NewEndpoint(name, v1alpha1.RecordTypeA, 60, "192.0.2.1")
}

// loadbalanced is a Kuadrant loadbalanced tree for host with its ownership TXTs.
func loadbalanced(host string) []*v1alpha1.Endpoint {
	h := strings.TrimPrefix(host, "*.")
	return []*v1alpha1.Endpoint{
		cname("eu.klb."+h, "abc123-def456.klb."+h).WithSetIdentifier("abc123-def456.klb."+h).WithProviderSpecific("weight", "120"),
		txt("eu.klb."+h, "CNAME").WithSetIdentifier("abc123-def456.klb."+h).WithProviderSpecific("weight", "120"),
		cname("klb."+h, "eu.klb."+h).WithSetIdentifier("GEO-EU").WithProviderSpecific("geo-code", "GEO-EU"),
		txt("klb."+h, "CNAME").WithSetIdentifier("GEO-EU").WithProviderSpecific("geo-code", "GEO-EU"),
		a("abc123-def456.klb." + h),
		txt("abc123-def456.klb."+h, "A"),
		cname(host, "klb."+h),
		txt(host, "CNAME"),
	}
}

func authRecord(root string, eps ...*v1alpha1.Endpoint) *v1alpha1.DNSRecord {
	return &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Name: RecordName(root), Labels: RecordLabels(root, "example.com")},
		Spec:       v1alpha1.DNSRecordSpec{RootHost: root, Endpoints: eps},
	}
}

// TestRoute checks which authoritative record each change lands in: routing decides both the names
// of the records and whether Kuadrant's CoreDNS plugin and our server find the same zone content.
func TestRoute(t *testing.T) {
	for _, tc := range []struct {
		name     string
		existing []*v1alpha1.DNSRecord
		changes  providers.Changes
		// want maps each record's root host to the names of the changes it gets.
		want map[string][]string
		// created are the root hosts of the records made up.
		created []string
	}{
		{
			name:    "a loadbalanced tree lands in one record rooted at the host",
			changes: providers.Changes{Create: loadbalanced("app.example.com")},
			want:    map[string][]string{"app.example.com": names(loadbalanced("app.example.com"))},
			created: []string{"app.example.com"},
		},
		{
			name:    "a wildcard tree is rooted at the wildcard",
			changes: providers.Changes{Create: loadbalanced("*.app.example.com")},
			want:    map[string][]string{"*.app.example.com": names(loadbalanced("*.app.example.com"))},
			created: []string{"*.app.example.com"},
		},
		{
			name:    "an ownership TXT alone creates the record of the name it describes",
			changes: providers.Changes{Create: []*v1alpha1.Endpoint{txt("app.example.com", "A")}},
			want:    map[string][]string{"app.example.com": {txt("app.example.com", "A").DNSName}},
			created: []string{"app.example.com"},
		},
		{
			name:    "siblings get a record each",
			changes: providers.Changes{Create: []*v1alpha1.Endpoint{a("a.example.com"), a("b.example.com"), a("x.a.example.com")}},
			want:    map[string][]string{"a.example.com": {"a.example.com", "x.a.example.com"}, "b.example.com": {"b.example.com"}},
			created: []string{"a.example.com", "b.example.com"},
		},
		{
			name:    "the apex covers the whole zone",
			changes: providers.Changes{Create: []*v1alpha1.Endpoint{a("example.com"), a("www.example.com"), txt("example.com", "A")}},
			want:    map[string][]string{"example.com": {"example.com", "www.example.com", txt("example.com", "A").DNSName}},
			created: []string{"example.com"},
		},
		{
			name:     "an existing record covers names under it and the ownership TXT of its root",
			existing: []*v1alpha1.DNSRecord{authRecord("app.example.com", a("app.example.com"))},
			changes:  providers.Changes{Create: []*v1alpha1.Endpoint{a("www.app.example.com"), txt("app.example.com", "A")}},
			want:     map[string][]string{"app.example.com": {"www.app.example.com", txt("app.example.com", "A").DNSName}},
		},
		{
			name: "the most specific existing record wins",
			existing: []*v1alpha1.DNSRecord{
				authRecord("app.example.com", a("app.example.com")),
				authRecord("www.app.example.com", a("www.app.example.com")),
			},
			changes: providers.Changes{Create: []*v1alpha1.Endpoint{a("x.www.app.example.com"), a("y.app.example.com")}},
			want:    map[string][]string{"www.app.example.com": {"x.www.app.example.com"}, "app.example.com": {"y.app.example.com"}},
		},
		{
			name:     "a wildcard record does not cover its bare domain",
			existing: []*v1alpha1.DNSRecord{authRecord("*.app.example.com", a("*.app.example.com"))},
			changes:  providers.Changes{Create: []*v1alpha1.Endpoint{a("app.example.com"), a("x.app.example.com")}},
			want:     map[string][]string{"app.example.com": {"app.example.com"}, "*.app.example.com": {"x.app.example.com"}},
			created:  []string{"app.example.com"},
		},
		{
			name: "deletions and updates go to the record that holds the set",
			existing: []*v1alpha1.DNSRecord{
				authRecord("app.example.com", a("app.example.com"), a("x.www.app.example.com")),
				authRecord("www.app.example.com", a("www.app.example.com")),
			},
			changes: providers.Changes{
				Delete:    []*v1alpha1.Endpoint{a("x.www.app.example.com")},
				UpdateOld: []*v1alpha1.Endpoint{a("www.app.example.com")},
				UpdateNew: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("www.app.example.com", "A", 60, "192.0.2.9")},
			},
			want: map[string][]string{"app.example.com": {"x.www.app.example.com"}, "www.app.example.com": {"www.app.example.com"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			batches, created := route("example.com", tc.existing, &tc.changes)
			got := map[string][]string{}
			for name, b := range batches {
				if b.record.Name != name {
					t.Errorf("batch keyed %s holds record %s", name, b.record.Name)
				}
				got[b.record.Spec.RootHost] = names(slices.Concat(b.changes.Delete, b.changes.UpdateNew, b.changes.Create))
			}
			for root := range tc.want {
				slices.Sort(tc.want[root])
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("routed %v\nwant   %v", got, tc.want)
			}
			var roots []string
			for _, r := range created {
				roots = append(roots, r.Spec.RootHost)
				if r.Name != "authoritative-record-"+hash.Base36(r.Spec.RootHost, 8) {
					t.Errorf("record of %s is named %s", r.Spec.RootHost, r.Name)
				}
			}
			if !slices.Equal(roots, tc.created) {
				t.Errorf("created records for %v, want %v", roots, tc.created)
			}
		})
	}
}

func names(eps []*v1alpha1.Endpoint) []string {
	var out []string
	for _, ep := range eps {
		out = append(out, ep.DNSName)
	}
	slices.Sort(out)
	return out
}

func listAuthoritative(t *testing.T, ns string) []v1alpha1.DNSRecord {
	t.Helper()
	var list v1alpha1.DNSRecordList
	if err := env.Client.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// Records written through the provider are authoritative records of DESIGN 4b's shape; a record that
// loses its last endpoint is deleted; records of other zones and namespaces are not read.
func TestAuthoritativeRecordLifecycle(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t)
	p := newProvider(t, env.Client, ns, "example.com", "example.org")
	z := zone("example.com")

	tree := loadbalanced("app.example.com")
	if err := p.Apply(ctx, z, nil, &providers.Changes{Create: tree}); err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(ctx, zone("example.org"), nil, &providers.Changes{Create: []*v1alpha1.Endpoint{a("www.example.org")}}); err != nil {
		t.Fatal(err)
	}
	// A record with the same labels in another namespace is another zone's business.
	other := newNamespace(t)
	stray := authRecord("stray.example.com", a("stray.example.com"))
	stray.Namespace = other
	if err := env.Client.Create(ctx, stray); err != nil {
		t.Fatal(err)
	}

	items := listAuthoritative(t, ns)
	if len(items) != 2 {
		t.Fatalf("namespace holds %d records, want 2 authoritative records", len(items))
	}
	var app v1alpha1.DNSRecord
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "authoritative-record-" + hash.Base36("app.example.com", 8)}, &app); err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{
		"kuadrant.io/authoritative-record":      "true",
		"kuadrant.io/authoritative-record-hash": hash.Base36("app.example.com", 8),
		"kuadrant.io/coredns-zone-name":         "example.com",
		"kuadrant.io/dns-provider-name":         "coredns",
	}
	if fmt.Sprint(app.Labels) != fmt.Sprint(wantLabels) || app.Spec.RootHost != "app.example.com" || len(app.Spec.Endpoints) != len(tree) ||
		app.Spec.ProviderRef == nil || app.Spec.ProviderRef.Name != "coredns-provider" {
		t.Errorf("authoritative record: labels %v root %s %d endpoints; want labels %v, root app.example.com, %d endpoints",
			app.Labels, app.Spec.RootHost, len(app.Spec.Endpoints), wantLabels, len(tree))
	}
	readView, err := p.Records(ctx, z)
	read := readView.Endpoints
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(names(read)) != fmt.Sprint(names(tree)) {
		t.Errorf("Records(example.com) = %v, want %v", names(read), names(tree))
	}

	// A second contributor under the same root host accumulates into the same record.
	more := []*v1alpha1.Endpoint{a("other.app.example.com"), txt("other.app.example.com", "A")}
	if err := p.Apply(ctx, z, nil, &providers.Changes{Create: more}); err != nil {
		t.Fatal(err)
	}
	if items := listAuthoritative(t, ns); len(items) != 2 {
		t.Errorf("namespace holds %d records after a second contributor, want 2", len(items))
	}

	allView, err := p.Records(ctx, z)
	all := allView.Endpoints
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(ctx, z, nil, &providers.Changes{Delete: all}); err != nil {
		t.Fatal(err)
	}
	items = listAuthoritative(t, ns)
	if len(items) != 1 || items[0].Labels[v1alpha1.CoreDNSZoneNameLabel] != "example.org" {
		t.Errorf("after emptying example.com the namespace holds %d records, want only example.org's", len(items))
	}
}

// A write that races another writer of the same authoritative record fails whole as StaleView.
func TestConcurrentWriteIsStaleView(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t)
	z := zone("example.com")
	if err := newProvider(t, env.Client, ns, "example.com").Apply(ctx, z, nil, &providers.Changes{Create: []*v1alpha1.Endpoint{a("app.example.com")}}); err != nil {
		t.Fatal(err)
	}
	// Another writer gets in between this provider's read and its write.
	direct, err := client.NewWithWatch(env.Config, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	racing := interceptor.NewClient(direct, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			var r v1alpha1.DNSRecord
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &r); err != nil {
				return err
			}
			r.Spec.Endpoints = append(r.Spec.Endpoints, a("racer.app.example.com"))
			if err := c.Update(ctx, &r); err != nil {
				return err
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	err = newProvider(t, racing, ns, "example.com").Apply(ctx, z, nil, &providers.Changes{Create: []*v1alpha1.Endpoint{a("www.app.example.com")}})
	if providers.KindOf(err) != providers.StaleView {
		t.Fatalf("Apply after a concurrent write: %v, want a StaleView error", err)
	}
	readView, err := newProvider(t, env.Client, ns, "example.com").Records(ctx, z)
	read := readView.Endpoints
	if err != nil {
		t.Fatal(err)
	}
	if got := names(read); fmt.Sprint(got) != "[app.example.com racer.app.example.com]" {
		t.Errorf("zone holds %v, want the racer's write and not ours", got)
	}
}

func TestUnknownZone(t *testing.T) {
	p := newProvider(t, env.Client, "ns", "example.com")
	if _, err := p.Records(t.Context(), zone("example.net")); providers.KindOf(err) != providers.Permanent {
		t.Errorf("Records of a zone not in ZONES: %v, want a permanent error", err)
	}
}

// Read through a cache that trails the writes, as the manager's is, a zone is seen as written once
// AwaitPropagation returns: a creation, an update, and the deletion of the last authoritative
// record (which would otherwise still be read, and served, after its zone emptied).
func TestAwaitPropagationWaitsForTheCache(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t)
	p := newProvider(t, testenv.LaggingClient(t, env, ns, 300*time.Millisecond), ns, "example.com")
	z := zone("example.com")
	step := func(what string, changes func(read []*v1alpha1.Endpoint) *providers.Changes, want string) {
		t.Helper()
		view, err := p.Records(ctx, z)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Apply(ctx, z, view.State, changes(view.Endpoints)); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if err := p.AwaitPropagation(ctx, z, view.State); err != nil {
			t.Fatalf("%s: AwaitPropagation: %v", what, err)
		}
		after, err := p.Records(ctx, z)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(names(after.Endpoints)); got != want {
			t.Errorf("after %s and AwaitPropagation the zone reads %s, want %s", what, got, want)
		}
	}
	step("creating", func([]*v1alpha1.Endpoint) *providers.Changes {
		return &providers.Changes{Create: []*v1alpha1.Endpoint{a("app.example.com")}}
	}, "[app.example.com]")
	step("adding", func([]*v1alpha1.Endpoint) *providers.Changes {
		return &providers.Changes{Create: []*v1alpha1.Endpoint{a("www.app.example.com")}}
	}, "[app.example.com www.app.example.com]")
	step("emptying", func(read []*v1alpha1.Endpoint) *providers.Changes {
		return &providers.Changes{Delete: read}
	}, "[]")
	if items := listAuthoritative(t, ns); len(items) != 0 {
		t.Errorf("the emptied zone left %d authoritative records", len(items))
	}
}
