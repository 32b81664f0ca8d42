package registry

import (
	"reflect"
	"strings"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// FuzzParseTXT: reading never panics; whatever is read as a claim is consistent (its name is the
// one its owner writes) and, when it carries a wish, writing that wish again reads back the same.
func FuzzParseTXT(f *testing.F) {
	f.Add("kuadrant-2tqs20a7-cname-foobar.example.org", `"heritage=external-dns,external-dns/owner=owner1,external-dns/version=1"`, "", "")
	f.Add("kuadrant-2tqs20a7-a-wildcard.example.org", `"heritage=external-dns,external-dns/claim-targets=1.1.1.1;2.2.2.2,external-dns/claim-ttl=60,external-dns/owner=owner1,external-dns/version=1"`, "", "set")
	f.Add("kuadrant-2tqs20a7-a-a.example.org",
		`"heritage=external-dns,external-dns/claim-targets=1.1.1.1,external-dns/claim-ttl=60,external-dns/owner=owner1,external-dns/version=1"`,
		`"heritage=external-dns,external-dns/claim-targets=3.3.3.3,external-dns/claim-ttl=60,external-dns/owner=owner1,external-dns/version=1"`, "")
	f.Add("kuadrant-b1e3677c-cname-tar.example.org", `"heritage=external-dns,external-dns/owner=owner2,external-dns/version=1"`, "", "")
	f.Add("kuadrant-cname-bar.example.org", `"heritage=external-dns,external-dns/owner=owner1&&owner2"`, "", "set")
	f.Add("foo", `"random"`, `"heritage=x"`, "")
	f.Add("kuadrant-2tqs20a7-ns-", `""`, `"heritage=external-dns,,=,==,external-dns/=,external-dns/owner=owner1"`, "")
	f.Fuzz(func(t *testing.T, name, value1, value2, set string) {
		txt := &v1alpha1.Endpoint{DNSName: name, RecordType: "TXT", Targets: v1alpha1.Targets{value1}, SetIdentifier: set}
		if value2 != "" {
			txt.Targets = append(txt.Targets, value2)
		}
		for _, v := range txt.Targets {
			// Quotes inside a pair may be trimmed away on reading: only quote-free pairs round-trip.
			labels, err := ParseValue(v)
			if err != nil || hasQuote(labels) {
				continue
			}
			if again, err := ParseValue(FormatValue(labels)); err != nil || !reflect.DeepEqual(again, labels) {
				t.Errorf("ParseValue(FormatValue(%v)) = %v, %v", labels, again, err)
			}
		}
		legacy, isLegacy := ParseLegacyTXT(txt)
		for _, c := range legacy {
			if ValidOwnerID(c.Owner) != nil || c.Record.SetIdentifier != set || !c.Legacy || c.Wish != nil {
				t.Fatalf("legacy claim %+v read from %v", c, txt)
			}
		}
		claim, ok := ParseTXT(txt)
		if ok && isLegacy {
			t.Fatalf("%v read both as a version-1 claim and as a legacy one", txt)
		}
		if !ok {
			return
		}
		if ValidOwnerID(claim.Owner) != nil {
			t.Fatalf("claim of an invalid owner %q", claim.Owner)
		}
		if got := TXTName(claim.Owner, claim.Record.RecordType, claim.Record.DNSName); got != strings.ToLower(strings.TrimSuffix(name, ".")) {
			t.Fatalf("claim read from %q would be written at %q", name, got)
		}
		if claim.Record.SetIdentifier != set {
			t.Fatalf("claim on set %q read from a TXT of set %q", claim.Record.SetIdentifier, set)
		}
		if claim.Wish == nil {
			return
		}
		again, err := NewWishTXT(claim.Owner, claim.Lease(), claim.Wish)
		if err != nil {
			// A wish read from a hand-made TXT may hold a target too long to write back.
			return
		}
		back, ok := ParseTXT(again)
		if !ok || back.Wish == nil || !back.Wish.Targets.SameTargets(claim.Wish.Targets) || back.Wish.RecordTTL != claim.Wish.RecordTTL || back.Record != claim.Record {
			t.Fatalf("wish %+v written as %v reads back as %+v", claim.Wish, again, back)
		}
	})
}

func hasQuote(labels map[string]string) bool {
	for k, v := range labels {
		if strings.Contains(k+v, `"`) {
			return true
		}
	}
	return false
}
