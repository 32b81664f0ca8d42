//go:build integration

package coredns

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
	zonechoice "github.com/dnspolicy/dnspolicy-controller/pkg/zone"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/conformance"
)

func hostZones(t *testing.T, c client.Client, namespace string, zones ...string) providers.HostZones {
	t.Helper()
	hz := newBackend(t, c, namespace, zones...).Hosts
	if hz == nil {
		t.Fatal("the coredns backend does not declare providers.HostZones")
	}
	return hz
}

// The provider records are written with passes the whole provider suite, one authoritative record
// being one zone: the zone of a root host that is the coredns zone's apex.
func TestHostConformance(t *testing.T) {
	ns := newNamespace(t)
	conformance.Run(t, conformance.Harness{
		NewZone: func(t *testing.T) (providers.Provider, providers.Zone) {
			name := fmt.Sprintf("h%d.conformance.example.com", zoneCount.Add(1))
			hz := hostZones(t, env.Client, ns, name)
			z, err := hz.HostZone(name)
			if err != nil {
				t.Fatal(err)
			}
			// Zones lists the authoritative records that exist: this one is created empty, as
			// Kuadrant's dns-operator creates it before its first write.
			r := &v1alpha1.DNSRecord{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: z.Zone.ID, Labels: RecordLabels(name, name)},
				Spec:       v1alpha1.DNSRecordSpec{RootHost: name},
			}
			if err := env.Client.Create(t.Context(), r); err != nil {
				t.Fatal(err)
			}
			return hz.HostProvider(), z.Zone
		},
	})
}

// The zone of a record is the authoritative record of its root host, as Kuadrant names it: its ID is
// authoritative-record-<hash8(rootHost)> (a leading "*." dropped), the status reports the root host
// as the zone's name, and the engine plans in the coredns zone that holds it.
func TestHostZone(t *testing.T) {
	hz := hostZones(t, env.Client, "ns", "example.com", "app.example.org")
	for _, tc := range []struct{ root, id, domain, zone string }{
		{"app.example.com", "authoritative-record-" + hash.Base36("app.example.com", 8), "app.example.com", "example.com"},
		{"*.App.Example.com", "authoritative-record-" + hash.Base36("app.example.com", 8), "app.example.com", "example.com"},
		{"app.example.org", "authoritative-record-" + hash.Base36("app.example.org", 8), "app.example.org", "app.example.org"},
		{"www.app.example.org", "authoritative-record-" + hash.Base36("www.app.example.org", 8), "www.app.example.org", "app.example.org"},
	} {
		got, err := hz.HostZone(tc.root)
		want := providers.HostZone{Zone: providers.Zone{ID: tc.id, DNSName: tc.zone}, DomainName: tc.domain}
		if err != nil || got != want {
			t.Errorf("HostZone(%s) = %+v, %v; want %+v", tc.root, got, err, want)
		}
	}
	if _, err := hz.HostZone("app.example.net"); providers.KindOf(err) != providers.Permanent || !errors.Is(err, zonechoice.ErrNoZone) {
		t.Errorf("HostZone of a host in no zone: %v, want a permanent ErrNoZone", err)
	}
	if name := hz.HostProvider().Name(); name != "endpoint" {
		t.Errorf("records are labelled %q, want endpoint (Kuadrant writes them through its endpoint provider)", name)
	}
	if l := hz.AuthoritativeLabels(providers.Zone{ID: "example.com", DNSName: "example.com"}); fmt.Sprint(l) != "map[kuadrant.io/coredns-zone-name:example.com]" {
		t.Errorf("AuthoritativeLabels = %v", l)
	}
}

// CheckEndpoints answers with Kuadrant's messages, which its suite matches on the authoritative
// record's Ready condition.
func TestCheckEndpoints(t *testing.T) {
	hz := hostZones(t, env.Client, "ns", "example.com")
	geoEP := func(code string) *v1alpha1.Endpoint {
		return cname("klb.app.example.com", "x.klb.app.example.com").WithSetIdentifier(code).WithProviderSpecific(v1alpha1.ProviderSpecificGeoCode, code)
	}
	weightEP := func(w string) *v1alpha1.Endpoint {
		return cname("eu.klb.app.example.com", "gw.example.net").WithSetIdentifier("gw").WithProviderSpecific(v1alpha1.ProviderSpecificWeight, w)
	}
	for _, tc := range []struct {
		ep   *v1alpha1.Endpoint
		want string
	}{
		{geoEP("US"), ""}, {geoEP("GEO-EU"), ""}, {geoEP("*"), ""}, {weightEP("100"), ""}, {a("app.example.com"), ""},
		{geoEP("notageocode"), "unexpected geo code. Prefix with GEO- for continents or use ISO_3166 Alpha 2 supported code for countries"},
		{geoEP("GEO-XX"), "unexpected continent code. XX"},
		{weightEP("-1"), "invalid weight expected a value >= 0"},
	} {
		err := hz.CheckEndpoints([]*v1alpha1.Endpoint{a("app.example.com"), tc.ep})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want accepted", tc.ep, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want || providers.KindOf(err) != providers.Permanent):
			t.Errorf("%s: %v, want the permanent error %q", tc.ep, err, tc.want)
		}
	}
}

// The authoritative record of a root host, as records write it: created by the first write with
// Kuadrant's name and labels, the provider label of its own pass, and the Secret as providerRef;
// holding the ownership TXT of the root host, which is not under it; completed when Kuadrant's
// dns-operator or an earlier version of this controller made it; deleted by the write that empties
// it. A DNSRecord of that name that is no authoritative record is never written.
func TestHostProviderAuthoritativeRecord(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t)
	hz := hostZones(t, env.Client, ns, "example.com")
	p := hz.HostProvider()
	z, err := hz.HostZone("app.example.com")
	if err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: ns, Name: z.Zone.ID}

	view, err := p.Records(ctx, z.Zone)
	if err != nil || len(view.Endpoints) != 0 {
		t.Fatalf("Records before the first write = %v, %v; want none", view.Endpoints, err)
	}
	tree := loadbalanced("app.example.com")
	if err := p.Apply(ctx, z.Zone, view.State, &providers.Changes{Create: tree}); err != nil {
		t.Fatal(err)
	}
	var got v1alpha1.DNSRecord
	if err := env.Client.Get(ctx, key, &got); err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{
		"kuadrant.io/authoritative-record":      "true",
		"kuadrant.io/authoritative-record-hash": hash.Base36("app.example.com", 8),
		"kuadrant.io/coredns-zone-name":         "example.com",
		"kuadrant.io/dns-provider-name":         "coredns",
	}
	if fmt.Sprint(got.Labels) != fmt.Sprint(wantLabels) || got.Spec.RootHost != "app.example.com" ||
		got.Spec.ProviderRef == nil || got.Spec.ProviderRef.Name != "coredns-provider" || len(got.Spec.Endpoints) != len(tree) {
		t.Errorf("authoritative record: labels %v root %s providerRef %v, %d endpoints; want labels %v, root app.example.com, providerRef coredns-provider, %d endpoints",
			got.Labels, got.Spec.RootHost, got.Spec.ProviderRef, len(got.Spec.Endpoints), wantLabels, len(tree))
	}
	read, err := p.Records(ctx, z.Zone)
	if err != nil || fmt.Sprint(names(read.Endpoints)) != fmt.Sprint(names(tree)) {
		t.Errorf("Records = %v, %v; want %v", names(read.Endpoints), err, names(tree))
	}

	// A record Kuadrant's dns-operator made carries its two labels and no more until its own pass.
	patch := client.MergeFrom(got.DeepCopy())
	delete(got.Labels, v1alpha1.CoreDNSZoneNameLabel)
	delete(got.Labels, v1alpha1.ProviderNameLabel)
	got.Spec.ProviderRef = nil
	if err := env.Client.Patch(ctx, &got, patch); err != nil {
		t.Fatal(err)
	}
	read, _ = p.Records(ctx, z.Zone)
	if err := p.Apply(ctx, z.Zone, read.State, &providers.Changes{Create: []*v1alpha1.Endpoint{a("www.app.example.com")}}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, key, &got); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Labels) != fmt.Sprint(wantLabels) || got.Spec.ProviderRef == nil || got.Spec.ProviderRef.Name != "coredns-provider" {
		t.Errorf("after a write, the record Kuadrant made has labels %v providerRef %v; want %v and coredns-provider", got.Labels, got.Spec.ProviderRef, wantLabels)
	}

	read, _ = p.Records(ctx, z.Zone)
	if err := p.Apply(ctx, z.Zone, read.State, &providers.Changes{Delete: read.Endpoints}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, key, &got); err == nil {
		t.Errorf("the emptied authoritative record still exists")
	}

	// A DNSRecord of that name that is no authoritative record is someone else's.
	other, err := hz.HostZone("other.example.com")
	if err != nil {
		t.Fatal(err)
	}
	squatter := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: other.Zone.ID},
		Spec:       v1alpha1.DNSRecordSpec{RootHost: "other.example.com"},
	}
	if err := env.Client.Create(ctx, squatter); err != nil {
		t.Fatal(err)
	}
	err = p.Apply(ctx, other.Zone, nil, &providers.Changes{Create: []*v1alpha1.Endpoint{a("other.example.com")}})
	if providers.KindOf(err) != providers.Permanent || !strings.Contains(err.Error(), "is not an authoritative record") {
		t.Errorf("writing over a DNSRecord that is no authoritative record: %v, want a permanent refusal", err)
	}
}
