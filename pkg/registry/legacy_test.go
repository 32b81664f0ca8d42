package registry

import (
	"errors"
	"reflect"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/batch"
)

// The legacy values are those of Kuadrant's dns-operator registry tests (internal/external-dns/
// registry/txt_test.go at 57b9db50, testTXTRegistryRecordsPrefixed: "txt-cname-bar...",
// "txt-cname-multiple..." with set identifier test-set-1, "txt-aaaa-dualstack..."), with Kuadrant's
// production prefix "kuadrant-" and wildcard replacement "wildcard" (internal/controller/
// dnsrecord_controller.go). "owner1&&owner2" is how that release joined the owners of one record
// (internal/external-dns/plan/labels.go LabelDelimiter, txt_test.go newEndpointWithOwner).
func TestParseLegacyTXT(t *testing.T) {
	for _, tc := range []struct {
		txt    *v1alpha1.Endpoint
		key    v1alpha1.EndpointKey
		owners []string
	}{
		{ep("kuadrant-cname-bar.test-zone.example.org", "TXT", `"heritage=external-dns,external-dns/owner=owner1"`),
			v1alpha1.EndpointKey{DNSName: "bar.test-zone.example.org", RecordType: "CNAME"}, []string{"owner1"}},
		{ep("kuadrant-cname-multiple.test-zone.example.org", "TXT", `"heritage=external-dns,external-dns/owner=owner1"`).WithSetIdentifier("test-set-1"),
			v1alpha1.EndpointKey{DNSName: "multiple.test-zone.example.org", RecordType: "CNAME", SetIdentifier: "test-set-1"}, []string{"owner1"}},
		{ep("kuadrant-aaaa-dualstack.test-zone.example.org", "TXT", `"heritage=external-dns,external-dns/owner=owner2"`),
			v1alpha1.EndpointKey{DNSName: "dualstack.test-zone.example.org", RecordType: "AAAA"}, []string{"owner2"}},
		{ep("KUADRANT-A-Shared.Test-Zone.Example.org.", "TXT", `"heritage=external-dns,external-dns/owner=owner2&&owner1,external-dns/resource=ingress/default/my-ingress"`),
			v1alpha1.EndpointKey{DNSName: "shared.test-zone.example.org", RecordType: "A"}, []string{"owner1", "owner2"}},
		{ep("kuadrant-cname-wildcard.wildcard.test-zone.example.org", "TXT", `"heritage=external-dns,external-dns/owner=owner1"`),
			v1alpha1.EndpointKey{DNSName: "*.wildcard.test-zone.example.org", RecordType: "CNAME"}, []string{"owner1"}},
		{ep("kuadrant-ns-a-b.example.com", "TXT", `"heritage=external-dns,external-dns/owner=o1"`, `"heritage=external-dns,external-dns/owner=o1"`),
			v1alpha1.EndpointKey{DNSName: "a-b.example.com", RecordType: "NS"}, []string{"o1"}},
	} {
		claims, ok := ParseLegacyTXT(tc.txt)
		if !ok {
			t.Errorf("%s: not read as a legacy claim", tc.txt.DNSName)
			continue
		}
		var owners []string
		for _, c := range claims {
			owners = append(owners, c.Owner)
			if c.Record != tc.key || !c.Legacy || c.Wish != nil || c.TXT != tc.txt || c.Labels[OwnerKey] != c.Owner {
				t.Errorf("%s: claim %+v, want record %v, legacy, no wish", tc.txt.DNSName, c, tc.key)
			}
		}
		if !reflect.DeepEqual(owners, tc.owners) {
			t.Errorf("%s: owners %v, want %v", tc.txt.DNSName, owners, tc.owners)
		}
		if _, ok := ParseTXT(tc.txt); ok {
			t.Errorf("%s: also read as a version-1 claim", tc.txt.DNSName)
		}
	}
	for _, txt := range []*v1alpha1.Endpoint{
		// Version 1 (Kuadrant's txt_test.go EP5), and a legacy name with a version.
		ep("kuadrant-2tqs20a7-cname-wildcard.wildcard.test-zone.example.org", "TXT", `"heritage=external-dns,external-dns/owner=owner1,external-dns/version=1"`),
		ep("kuadrant-cname-bar.test-zone.example.org", "TXT", `"heritage=external-dns,external-dns/owner=owner1,external-dns/version=1"`),
		// external-dns's names without the type (Kuadrant never wrote them: its generateTXTRecord
		// had that branch commented out), other prefixes, types Kuadrant does not read.
		ep("kuadrant-bar.test-zone.example.org", "TXT", `"heritage=external-dns,external-dns/owner=owner1"`),
		ep("txt-cname-bar.test-zone.example.org", "TXT", `"heritage=external-dns,external-dns/owner=owner1"`),
		ep("kuadrant-mx-bar.test-zone.example.org", "TXT", `"heritage=external-dns,external-dns/owner=owner1"`),
		ep("kuadrant-cname-", "TXT", `"heritage=external-dns,external-dns/owner=owner1"`),
		// Not an ownership value: no heritage (Kuadrant's EP3 "random"), no owner, an empty owner
		// among several, strings that disagree, no value, not a TXT.
		ep("kuadrant-cname-bar.test-zone.example.org", "TXT", "random"),
		ep("kuadrant-cname-bar.test-zone.example.org", "TXT", `"heritage=external-dns,external-dns/resource=x"`),
		ep("kuadrant-cname-bar.test-zone.example.org", "TXT", `"heritage=external-dns,external-dns/owner=owner1&&"`),
		ep("kuadrant-cname-bar.test-zone.example.org", "TXT", `"heritage=external-dns,external-dns/owner=owner1"`, `"heritage=external-dns,external-dns/owner=owner2"`),
		ep("kuadrant-cname-bar.test-zone.example.org", "TXT"),
		ep("kuadrant-cname-bar.test-zone.example.org", "CNAME", "heritage=external-dns"),
	} {
		if claims, ok := ParseLegacyTXT(txt); ok {
			t.Errorf("%s %v read as legacy claims %v", txt.DNSName, txt.Targets, claims)
		}
	}
}

func TestReadLegacy(t *testing.T) {
	shared := ep("shared.example.com", "A", "1.1.1.1", "2.2.2.2")
	legacy := ep("kuadrant-a-shared.example.com", "TXT", `"heritage=external-dns,external-dns/owner=owner1&&owner2"`)
	owner1 := mustTXT(t, "owner1", ep("shared.example.com", "A", "1.1.1.1"))
	owner2 := kuadrantTXT("owner2", "A", "shared.example.com")
	key := v1alpha1.EndpointKey{DNSName: "shared.example.com", RecordType: "A"}
	describe := func(z *Zone) []string {
		var out []string
		for _, c := range z.Record(key).Claims {
			s := c.Owner
			if c.Legacy {
				s += " legacy"
			}
			out = append(out, s)
		}
		return out
	}

	// Only the legacy TXT: both its owners hold the record; neither has a claim it writes.
	z := Read([]*v1alpha1.Endpoint{shared, legacy})
	if got, want := describe(z), []string{"owner1 legacy", "owner2 legacy"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("claims %v, want %v", got, want)
	}
	if r := z.Record(key); !r.Owned() || r.Claim("owner1") != nil || len(z.AtName("kuadrant-a-shared.example.com")) != 0 {
		t.Errorf("the record held by a legacy TXT: owned %v, written claim %v; the TXT is a record: %v", r.Owned(), r.Claim("owner1"), z.AtName("kuadrant-a-shared.example.com"))
	}
	if got := z.Names("owner2"); !reflect.DeepEqual(got, []string{"shared.example.com"}) {
		t.Errorf("Names(owner2) = %v", got)
	}
	if z.Redundant(legacy.Key()) || len(z.LegacyTXTs()) != 1 {
		t.Errorf("redundant %v, legacy TXTs %v", z.Redundant(legacy.Key()), z.LegacyTXTs())
	}

	// owner1 migrated (our version-1 TXT): its legacy claim is hidden, owner2's still counts.
	if err := z.Apply(&batch.Changes{Create: []*v1alpha1.Endpoint{owner1}}); err != nil {
		t.Fatal(err)
	}
	if got, want := describe(z), []string{"owner1", "owner2 legacy"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after owner1's version-1 TXT: claims %v, want %v", got, want)
	}
	if z.Redundant(legacy.Key()) {
		t.Error("redundant while owner2 wrote no version-1 TXT")
	}
	// owner2 migrated too (a Kuadrant version-1 TXT): the legacy TXT is redundant.
	if err := z.Apply(&batch.Changes{Create: []*v1alpha1.Endpoint{owner2}}); err != nil {
		t.Fatal(err)
	}
	if got, want := describe(z), []string{"owner1", "owner2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after both version-1 TXTs: claims %v, want %v", got, want)
	}
	if !z.Redundant(legacy.Key()) {
		t.Error("not redundant once each owner wrote its version-1 TXT")
	}
	// Apply keeps the zone as a fresh read of it, in whatever order the TXTs come.
	fresh := Read([]*v1alpha1.Endpoint{owner2, legacy, shared, owner1})
	if !reflect.DeepEqual(describe(fresh), describe(z)) || !reflect.DeepEqual(fresh.Names("owner1"), z.Names("owner1")) {
		t.Errorf("read %v, applied %v", describe(fresh), describe(z))
	}
	// Taking owner1's version-1 TXT away brings its legacy claim back.
	if err := z.Apply(&batch.Changes{Delete: []*v1alpha1.Endpoint{owner1}}); err != nil {
		t.Fatal(err)
	}
	if got, want := describe(z), []string{"owner1 legacy", "owner2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after owner1's TXT left: claims %v, want %v", got, want)
	}
	// Deleting the legacy TXT leaves only version-1 claims.
	if err := z.Apply(&batch.Changes{Delete: []*v1alpha1.Endpoint{legacy}}); err != nil {
		t.Fatal(err)
	}
	if got, want := describe(z), []string{"owner2"}; !reflect.DeepEqual(got, want) || len(z.LegacyTXTs()) != 0 {
		t.Errorf("after the legacy TXT left: claims %v, want %v; legacy TXTs %v", got, want, z.LegacyTXTs())
	}
}

func TestCheckLegacy(t *testing.T) {
	shared := ep("shared.example.com", "A", "1.1.1.1", "2.2.2.2")
	legacy := ep("kuadrant-a-shared.example.com", "TXT", `"heritage=external-dns,external-dns/owner=owner1&&owner2"`)
	owner1 := mustTXT(t, "owner1", ep("shared.example.com", "A", "1.1.1.1"))
	owner2 := kuadrantTXT("owner2", "A", "shared.example.com")
	onlyLegacy := ep("old.example.com", "CNAME", "lb.example.net")
	onlyLegacyTXT := ep("kuadrant-cname-old.example.com", "TXT", `"heritage=external-dns,external-dns/owner=owner1"`)
	half := Read([]*v1alpha1.Endpoint{shared, legacy, owner1, onlyLegacy, onlyLegacyTXT})
	full := Read([]*v1alpha1.Endpoint{shared, legacy, owner1, owner2, onlyLegacy, onlyLegacyTXT})
	updated := ep("kuadrant-a-shared.example.com", "TXT", `"heritage=external-dns,external-dns/owner=owner1"`)
	for _, tc := range []struct {
		name    string
		zone    *Zone
		owners  []string
		changes *batch.Changes
		ok      bool
	}{
		{"redundant legacy TXT deleted", full, []string{"owner1", "owner2"}, &batch.Changes{Delete: []*v1alpha1.Endpoint{legacy}}, true},
		{"owner2 has no version-1 claim", half, []string{"owner1", "owner2"}, &batch.Changes{Delete: []*v1alpha1.Endpoint{legacy}}, false},
		{"owner1's version-1 claim goes in the same batch", full, []string{"owner1", "owner2"}, &batch.Changes{Delete: []*v1alpha1.Endpoint{legacy, owner1}}, false},
		{"the only claim on a record", full, []string{"owner1"}, &batch.Changes{Delete: []*v1alpha1.Endpoint{onlyLegacyTXT}}, false},
		{"a record held by a legacy claim is owned", full, []string{"owner3"}, &batch.Changes{Delete: []*v1alpha1.Endpoint{onlyLegacy}}, false},
		{"a legacy TXT is never created", Read([]*v1alpha1.Endpoint{shared, owner1}), []string{"owner1"}, &batch.Changes{Create: []*v1alpha1.Endpoint{legacy}}, false},
		{"a legacy TXT is never rewritten", full, []string{"owner1"}, &batch.Changes{UpdateOld: []*v1alpha1.Endpoint{legacy}, UpdateNew: []*v1alpha1.Endpoint{updated}}, false},
	} {
		err := tc.zone.Check(tc.owners, nil, tc.changes)
		if tc.ok && err != nil || !tc.ok && !errors.Is(err, ErrRefused) {
			t.Errorf("%s: Check = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
