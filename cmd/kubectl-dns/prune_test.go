package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/batch"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// legacyTXT is the TXT a Kuadrant release before "version 1" wrote for a record (pkg/registry
// ParseLegacyTXT has the sources): one per record, owners joined by "&&", no version.
func legacyTXT(typ, name, owners string) *v1alpha1.Endpoint {
	return v1alpha1.NewEndpoint("kuadrant-"+typ+"-"+name, "TXT", 300, `"heritage=external-dns,external-dns/owner=`+owners+`"`)
}

func TestPruneLegacy(t *testing.T) {
	m := newMemZone(t)
	www := v1alpha1.NewEndpoint("www.example.com", "A", 60, "10.0.0.1", "10.0.0.9")
	old := v1alpha1.NewEndpoint("old.example.com", "CNAME", 300, "lb.example.net")
	wwwLegacy, oldLegacy := legacyTXT("a", "www.example.com", "owner-a&&owner-k"), legacyTXT("cname", "old.example.com", "owner-k")
	// A human's TXT named like a legacy one, with a value external-dns did not write.
	lookalike := v1alpha1.NewEndpoint("kuadrant-a-human.example.com", "TXT", 300, `"v=spf1 -all"`)
	m.apply(&batch.Changes{Create: []*v1alpha1.Endpoint{www, wwwLegacy, old, oldLegacy, lookalike}})
	ctx := context.Background()

	// Nobody migrated: nothing to delete, and each legacy TXT says who has not.
	var out bytes.Buffer
	if err := pruneLegacy(ctx, &out, m.target(), false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"keeping legacy TXT kuadrant-a-www.example.com ",
		": owner-a, owner-k wrote no version-1 claim on A www.example.com (not migrated yet)\n",
		": owner-k wrote no version-1 claim on CNAME old.example.com (not migrated yet)\n",
		"no redundant legacy TXT in the zone: nothing to do\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("prune-legacy lacks %q:\n%s", want, out.String())
		}
	}

	// owner-a migrates (our controller, with its wish) and owner-k (Kuadrant's, version 1).
	m.publish("owner-a", "cluster-a", []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("www.example.com", "A", 60, "10.0.0.1")})
	kClaim := v1alpha1.NewEndpoint(registry.TXTName("owner-k", "A", "www.example.com"), "TXT", 300,
		registry.FormatValue(map[string]string{registry.OwnerKey: "owner-k", registry.VersionKey: registry.FormatVersion}))
	m.apply(&batch.Changes{Create: []*v1alpha1.Endpoint{kClaim}})
	if got := m.read().Endpoint(www.Key()); got == nil || !slices.Equal(got.Targets, []string{"10.0.0.1", "10.0.0.9"}) {
		t.Fatalf("owner-a's pass changed the record held by legacy claims: %v", got)
	}

	out.Reset()
	if err := pruneLegacy(ctx, &out, m.target(), true); err != nil {
		t.Fatal(err)
	}
	dry := out.String()
	for _, want := range []string{
		"deleting redundant legacy TXTs: 1 changes (ownership gate passed for owner-a, owner-k)\n",
		"  delete TXT kuadrant-a-www.example.com \"heritage=external-dns,external-dns/owner=owner-a&&owner-k\" ttl 300\n",
		"  require unchanged TXT " + registry.TXTName("owner-a", "A", "www.example.com") + " ",
		"  require unchanged TXT " + registry.TXTName("owner-k", "A", "www.example.com") + " ",
		"keeping legacy TXT kuadrant-cname-old.example.com ",
		"dry run: nothing was changed\n",
	} {
		if !strings.Contains(dry, want) {
			t.Errorf("prune-legacy --dry-run lacks %q:\n%s", want, dry)
		}
	}
	if m.read().Endpoint(wwwLegacy.Key()) == nil {
		t.Fatal("the dry run deleted the legacy TXT")
	}

	out.Reset()
	if err := pruneLegacy(ctx, &out, m.target(), false); err != nil {
		t.Fatal(err)
	}
	if applied := strings.TrimSuffix(out.String(), "deleted 1 legacy TXTs\n"); applied != strings.TrimSuffix(dry, "dry run: nothing was changed\n") {
		t.Errorf("the real run printed\n%s\nthe dry run\n%s", out.String(), dry)
	}
	z := m.read()
	if z.Endpoint(wwwLegacy.Key()) != nil {
		t.Error("the redundant legacy TXT is still there")
	}
	for _, e := range []*v1alpha1.Endpoint{oldLegacy, lookalike, kClaim} {
		if got := z.Endpoint(e.Key()); got == nil || !got.SameValues(e) {
			t.Errorf("%s is %v after pruning", e.DNSName, got)
		}
	}
	if r := z.Record(www.Key()); r == nil || !slices.Equal(r.Owners(), []string{"owner-a", "owner-k"}) || !slices.Equal(r.Endpoint.Targets, www.Targets) {
		t.Errorf("www.example.com after pruning: %+v", r)
	}
	if r := z.Record(old.Key()); r == nil || !slices.Equal(r.Owners(), []string{"owner-k"}) {
		t.Errorf("old.example.com lost its legacy owner: %+v", r)
	}
}
