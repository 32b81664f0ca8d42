package registry

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

func ep(name, recordType string, targets ...string) *v1alpha1.Endpoint {
	return &v1alpha1.Endpoint{DNSName: name, RecordType: recordType, Targets: targets}
}

// The expected names are Kuadrant's own test fixtures (dns-operator registry name_mapper_test.go and
// txt_test.go) with Kuadrant's production prefix "kuadrant-" and wildcard replacement "wildcard".
func TestTXTName(t *testing.T) {
	for _, tc := range []struct {
		owner, recordType, name, want string
	}{
		{"owner1", "A", "example.com", "kuadrant-2tqs20a7-a-example.com"},
		{"owner1", "CNAME", "foobar.test-zone.example.org", "kuadrant-2tqs20a7-cname-foobar.test-zone.example.org"},
		{"owner1", "CNAME", "*.wildcard.test-zone.example.org", "kuadrant-2tqs20a7-cname-wildcard.wildcard.test-zone.example.org"},
		{"owner1", "CNAME", "multiple.test-zone.example.org", "kuadrant-2tqs20a7-cname-multiple.test-zone.example.org"},
		{"owner1", "AAAA", "Dualstack.Test-Zone.Example.org.", "kuadrant-2tqs20a7-aaaa-dualstack.test-zone.example.org"},
		{"owner2", "NS", "sub.example.com", "kuadrant-1rq9q4sc-ns-sub.example.com"},
	} {
		if got := TXTName(tc.owner, tc.recordType, tc.name); got != tc.want {
			t.Errorf("TXTName(%q, %q, %q) = %q, want %q", tc.owner, tc.recordType, tc.name, got, tc.want)
		}
	}
}

func TestParseTXTName(t *testing.T) {
	for _, tc := range []struct {
		txtName                string
		hash, recordType, name string
		ok                     bool
	}{
		{"kuadrant-2tqs20a7-a-example.com", "2tqs20a7", "A", "example.com", true},
		{"kuadrant-11111111-cname-example.com", "11111111", "CNAME", "example.com", true},
		{"KUADRANT-2tqs20a7-CNAME-Example.com.", "2tqs20a7", "CNAME", "example.com", true},
		{"kuadrant-2tqs20a7-cname-wildcard.a.example.com", "2tqs20a7", "CNAME", "*.a.example.com", true},
		{"kuadrant-2tqs20a7-a-wildcard", "2tqs20a7", "A", "*", true},
		// Only a whole "wildcard" label stands for "*".
		{"kuadrant-2tqs20a7-a-wildcardly.example.com", "2tqs20a7", "A", "wildcardly.example.com", true},
		{"kuadrant-2tqs20a7-ns-a-b.example.com", "2tqs20a7", "NS", "a-b.example.com", true},
		// Not ours: other prefixes, pre-version-1 names, types Kuadrant does not read.
		{"txt-2tqs20a7-a-example.com", "", "", "", false},
		{"kuadrant-a-example.com", "", "", "", false},
		{"kuadrant-cname-bar.example.com", "", "", "", false},
		{"kuadrant-2tqs20a7-txt-example.com", "", "", "", false},
		{"kuadrant-2tqs20a7-mx-example.com", "", "", "", false},
		{"kuadrant-2tqs20a7-a-", "", "", "", false},
		{"kuadrant--a-example.com", "", "", "", false},
		{"example.com", "", "", "", false},
		{"", "", "", "", false},
	} {
		hash, recordType, name, ok := ParseTXTName(tc.txtName)
		if hash != tc.hash || recordType != tc.recordType || name != tc.name || ok != tc.ok {
			t.Errorf("ParseTXTName(%q) = %q, %q, %q, %v; want %q, %q, %q, %v", tc.txtName, hash, recordType, name, ok, tc.hash, tc.recordType, tc.name, tc.ok)
		}
	}
}

func TestFormatValue(t *testing.T) {
	for _, tc := range []struct {
		labels map[string]string
		want   string
	}{
		// Kuadrant's txt_test.go literals.
		{map[string]string{"owner": "owner1", "version": "1"}, `"heritage=external-dns,external-dns/owner=owner1,external-dns/version=1"`},
		{map[string]string{"version": "1", "resource": "ingress/default/my-ingress", "owner": "owner1"},
			`"heritage=external-dns,external-dns/owner=owner1,external-dns/resource=ingress/default/my-ingress,external-dns/version=1"`},
		{nil, `"heritage=external-dns"`},
		{map[string]string{"version": "1", "owner": "o", TTLKey: "60", TargetsKey: "1.1.1.1;2.2.2.2"},
			`"heritage=external-dns,external-dns/claim-targets=1.1.1.1;2.2.2.2,external-dns/claim-ttl=60,external-dns/owner=o,external-dns/version=1"`},
	} {
		if got := FormatValue(tc.labels); got != tc.want {
			t.Errorf("FormatValue(%v) = %s, want %s", tc.labels, got, tc.want)
		}
		back, err := ParseValue(tc.want)
		if err != nil {
			t.Fatalf("ParseValue(%s): %v", tc.want, err)
		}
		if len(tc.labels) == 0 && len(back) == 0 {
			continue
		}
		if !reflect.DeepEqual(back, tc.labels) {
			t.Errorf("ParseValue(%s) = %v, want %v", tc.want, back, tc.labels)
		}
	}
}

func TestParseValue(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  map[string]string
		err   error
	}{
		{`"heritage=external-dns,external-dns/owner=owner1,external-dns/version=1"`, map[string]string{"owner": "owner1", "version": "1"}, nil},
		{`heritage=external-dns,external-dns/owner=owner1`, map[string]string{"owner": "owner1"}, nil},
		{`"heritage=external-dns,external-dns/foo=bar"`, map[string]string{"foo": "bar"}, nil},
		// Tokens that are not exactly key=value are skipped, as external-dns does.
		{`"heritage=external-dns,external-dns/owner=a=b,junk,external-dns/version=1,=,other/x=y"`, map[string]string{"version": "1", "": ""}, nil},
		{`""heritage=external-dns""`, map[string]string{}, nil},
		{`"random"`, nil, ErrNoHeritage},
		{``, nil, ErrNoHeritage},
		{`"external-dns/owner=owner1"`, nil, ErrNoHeritage},
		{`"heritage=mate,external-dns/owner=owner1"`, nil, ErrNoHeritage},
		{`"heritage=external-dns,heritage=other"`, nil, ErrNoHeritage},
	} {
		got, err := ParseValue(tc.value)
		if !errors.Is(err, tc.err) {
			t.Errorf("ParseValue(%s) error = %v, want %v", tc.value, err, tc.err)
			continue
		}
		if tc.err == nil {
			// "=" alone splits into two empty halves and is skipped for not being external-dns/.
			delete(tc.want, "")
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseValue(%s) = %v, want %v", tc.value, got, tc.want)
			}
		}
	}
}

func TestNewTXT(t *testing.T) {
	rec := ep("*.a.example.com", "A", "2.2.2.2", "1.1.1.1").WithSetIdentifier("eu").WithProviderSpecific("geo-code", "GEO-EU")
	rec.RecordTTL = 60
	want := &v1alpha1.Endpoint{
		DNSName:    "kuadrant-2tqs20a7-a-wildcard.a.example.com",
		RecordType: "TXT",
		// Byte for byte what Kuadrant's dns-operator writes (its e2e suite pins this value).
		Targets:          v1alpha1.Targets{`"heritage=external-dns,external-dns/owner=owner1,external-dns/version=1"`},
		SetIdentifier:    "eu",
		RecordTTL:        60,
		Labels:           v1alpha1.Labels{"ownedRecord": "*.a.example.com"},
		ProviderSpecific: v1alpha1.ProviderSpecific{{Name: "geo-code", Value: "GEO-EU"}},
	}
	wish := want.DeepCopy()
	wish.Targets = v1alpha1.Targets{`"heritage=external-dns,external-dns/claim-targets=1.1.1.1;2.2.2.2,external-dns/claim-ttl=60,external-dns/owner=owner1,external-dns/version=1"`}
	leased := want.DeepCopy()
	leased.Targets = v1alpha1.Targets{`"heritage=external-dns,external-dns/claim-lease=k1,external-dns/claim-targets=1.1.1.1;2.2.2.2,external-dns/claim-ttl=60,external-dns/owner=owner1,external-dns/version=1"`}
	for _, tc := range []struct {
		name string
		new  func() (*v1alpha1.Endpoint, error)
		want *v1alpha1.Endpoint
	}{
		{"NewTXT", func() (*v1alpha1.Endpoint, error) { return NewTXT("owner1", rec) }, want},
		{"NewWishTXT", func() (*v1alpha1.Endpoint, error) { return NewWishTXT("owner1", "", rec) }, wish},
		{"NewWishTXT leased", func() (*v1alpha1.Endpoint, error) { return NewWishTXT("owner1", "k1", rec) }, leased},
	} {
		txt, err := tc.new()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(txt, tc.want) {
			t.Errorf("%s =\n%#v\nwant\n%#v", tc.name, txt, tc.want)
		}
		rec.ProviderSpecific[0].Value = "changed"
		if txt.ProviderSpecific[0].Value != "GEO-EU" {
			t.Errorf("%s: the TXT shares its routing properties with the record", tc.name)
		}
		rec.ProviderSpecific[0].Value = "GEO-EU"
	}

	for _, tc := range []struct {
		owner string
		rec   *v1alpha1.Endpoint
	}{
		{"", ep("a.example.com", "A", "1.1.1.1")},
		{"own,er", ep("a.example.com", "A", "1.1.1.1")},
		{"a&&b", ep("a.example.com", "A", "1.1.1.1")},
		{"owner1", ep("a.example.com", "TXT", "x")},
		{"owner1", ep("a.example.com", "MX", "10 mx.example.com")},
		{"owner1", ep("a.example.com", "A")},
		{"owner1", ep("a.example.com", "CNAME", "a;b")},
		{"owner1", ep("a.example.com", "CNAME", "a=b")},
		{"owner1", ep("a.example.com", "CNAME", "")},
	} {
		if _, err := NewTXT(tc.owner, tc.rec); err == nil {
			t.Errorf("NewTXT(%q, %v) did not fail", tc.owner, tc.rec)
		}
		if _, err := NewWishTXT(tc.owner, "", tc.rec); err == nil {
			t.Errorf("NewWishTXT(%q, %v) did not fail", tc.owner, tc.rec)
		}
	}
	// A wish must fit a TXT string.
	if _, err := NewWishTXT("owner1", "", ep("a.example.com", "CNAME", strings.Repeat("x", 200))); err == nil {
		t.Error("NewWishTXT took a target too long for a TXT string")
	}
}

// A wish too long for one TXT string is spread over several, each a complete value within 255
// octets that Kuadrant's reader accepts on its own, and reads back whole.
func TestNewTXTSplitsLongValues(t *testing.T) {
	var targets []string
	for i := 0; i < 40; i++ {
		targets = append(targets, fmt.Sprintf("2001:db8:ffff:ffff:ffff:ffff:ffff:%04x", i))
	}
	rec := ep("v6.example.com", "AAAA", targets...)
	owner := strings.Repeat("o", 36)
	txt, err := NewWishTXT(owner, "", rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(txt.Targets) < 2 {
		t.Fatalf("%d targets in %d value", len(rec.Targets), len(txt.Targets))
	}
	for _, v := range txt.Targets {
		if n := len(strings.Trim(v, `"`)); n > 255 {
			t.Errorf("value of %d octets: %s", n, v)
		}
		labels, err := ParseValue(v)
		if err != nil || labels[OwnerKey] != owner || labels[VersionKey] != "1" {
			t.Errorf("value %s does not stand alone: %v, %v", v, labels, err)
		}
	}
	claim, ok := ParseTXT(txt)
	if !ok || claim.Wish == nil {
		t.Fatalf("ParseTXT(%v) = %v, %v", txt, claim, ok)
	}
	if !claim.Wish.Targets.SameTargets(rec.Targets) {
		t.Errorf("read back %v, want %v", claim.Wish.Targets, rec.Targets)
	}
}

func TestParseTXT(t *testing.T) {
	kuadrant := `"heritage=external-dns,external-dns/owner=owner1,external-dns/version=1"`
	ours := `"heritage=external-dns,external-dns/claim-targets=lb.example.net,external-dns/claim-ttl=300,external-dns/owner=owner1,external-dns/version=1"`
	for _, tc := range []struct {
		name string
		txt  *v1alpha1.Endpoint
		// want is nil when the TXT must not be read as an ownership record.
		want *Claim
	}{
		{
			name: "written by Kuadrant: owner known, wish unknown",
			txt:  ep("kuadrant-2tqs20a7-cname-foobar.test-zone.example.org", "TXT", kuadrant),
			want: &Claim{
				Owner:  "owner1",
				Record: v1alpha1.EndpointKey{DNSName: "foobar.test-zone.example.org", RecordType: "CNAME"},
				Labels: map[string]string{"owner": "owner1", "version": "1"},
			},
		},
		{
			name: "Kuadrant set identifier and an unknown label",
			txt: ep("kuadrant-2tqs20a7-cname-multiple.test-zone.example.org", "TXT",
				`"heritage=external-dns,external-dns/owner=owner1,external-dns/resource=ingress/default/my-ingress,external-dns/version=1"`).WithSetIdentifier("test-set-1"),
			want: &Claim{
				Owner:  "owner1",
				Record: v1alpha1.EndpointKey{DNSName: "multiple.test-zone.example.org", RecordType: "CNAME", SetIdentifier: "test-set-1"},
				Labels: map[string]string{"owner": "owner1", "version": "1", "resource": "ingress/default/my-ingress"},
			},
		},
		{
			name: "Kuadrant wildcard",
			txt:  ep("kuadrant-2tqs20a7-cname-wildcard.wildcard.test-zone.example.org", "TXT", kuadrant),
			want: &Claim{
				Owner:  "owner1",
				Record: v1alpha1.EndpointKey{DNSName: "*.wildcard.test-zone.example.org", RecordType: "CNAME"},
				Labels: map[string]string{"owner": "owner1", "version": "1"},
			},
		},
		{
			name: "ours: wish with routing properties",
			txt:  ep("kuadrant-2tqs20a7-cname-klb.example.com", "TXT", ours).WithSetIdentifier("default").WithProviderSpecific("geo-code", "*"),
			want: &Claim{
				Owner:  "owner1",
				Record: v1alpha1.EndpointKey{DNSName: "klb.example.com", RecordType: "CNAME", SetIdentifier: "default"},
				Labels: map[string]string{"owner": "owner1", "version": "1", TargetsKey: "lb.example.net", TTLKey: "300"},
				Wish: &v1alpha1.Endpoint{DNSName: "klb.example.com", RecordType: "CNAME", SetIdentifier: "default", Targets: v1alpha1.Targets{"lb.example.net"},
					RecordTTL: 300, ProviderSpecific: v1alpha1.ProviderSpecific{{Name: "geo-code", Value: "*"}}},
			},
		},
		{
			name: "ours, split over two strings",
			txt: ep("kuadrant-2tqs20a7-a-a.example.com", "TXT",
				`"heritage=external-dns,external-dns/claim-targets=2.2.2.2,external-dns/claim-ttl=60,external-dns/owner=owner1,external-dns/version=1"`,
				`"heritage=external-dns,external-dns/claim-targets=1.1.1.1;3.3.3.3,external-dns/claim-ttl=60,external-dns/owner=owner1,external-dns/version=1"`),
			want: &Claim{
				Owner:  "owner1",
				Record: v1alpha1.EndpointKey{DNSName: "a.example.com", RecordType: "A"},
				Labels: map[string]string{"owner": "owner1", "version": "1", TargetsKey: "1.1.1.1;2.2.2.2;3.3.3.3", TTLKey: "60"},
				Wish:   &v1alpha1.Endpoint{DNSName: "a.example.com", RecordType: "A", Targets: v1alpha1.Targets{"1.1.1.1", "2.2.2.2", "3.3.3.3"}, RecordTTL: 60},
			},
		},
		{
			name: "claim-targets without claim-ttl: wish unknown",
			txt:  ep("kuadrant-2tqs20a7-a-a.example.com", "TXT", `"heritage=external-dns,external-dns/claim-targets=1.1.1.1,external-dns/owner=owner1,external-dns/version=1"`),
			want: &Claim{
				Owner:  "owner1",
				Record: v1alpha1.EndpointKey{DNSName: "a.example.com", RecordType: "A"},
				Labels: map[string]string{"owner": "owner1", "version": "1", TargetsKey: "1.1.1.1"},
			},
		},
		{"not a TXT", ep("kuadrant-2tqs20a7-a-a.example.com", "CNAME", kuadrant), nil},
		{"no value", ep("kuadrant-2tqs20a7-a-a.example.com", "TXT"), nil},
		{"no heritage", ep("kuadrant-2tqs20a7-a-a.example.com", "TXT", `"random"`), nil},
		{"other heritage", ep("kuadrant-2tqs20a7-a-a.example.com", "TXT", `"heritage=mate,external-dns/owner=owner1,external-dns/version=1"`), nil},
		{"one string without heritage", ep("kuadrant-2tqs20a7-a-a.example.com", "TXT", kuadrant, `"garbage"`), nil},
		{"pre-version-1 value", ep("kuadrant-2tqs20a7-a-a.example.com", "TXT", `"heritage=external-dns,external-dns/owner=owner1"`), nil},
		{"pre-version-1 name", ep("kuadrant-cname-bar.example.com", "TXT", `"heritage=external-dns,external-dns/owner=owner1"`), nil},
		{"another version", ep("kuadrant-2tqs20a7-a-a.example.com", "TXT", `"heritage=external-dns,external-dns/owner=owner1,external-dns/version=2"`), nil},
		{"no owner", ep("kuadrant-2tqs20a7-a-a.example.com", "TXT", `"heritage=external-dns,external-dns/version=1"`), nil},
		{"pre-version-1 joined owners", ep("kuadrant-2tqs20a7-a-a.example.com", "TXT", `"heritage=external-dns,external-dns/owner=owner1&&owner2,external-dns/version=1"`), nil},
		// Kuadrant's hand-written fixture: the hash is not owner2's (1rq9q4sc).
		{"hash of another owner", ep("kuadrant-b1e3677c-cname-tar.test-zone.example.org", "TXT",
			`"heritage=external-dns,external-dns/owner=owner2,external-dns/version=1,external-dns/resource=ingress/default/my-ingress"`), nil},
		{"other prefix", ep("txt-2tqs20a7-a-a.example.com", "TXT", kuadrant), nil},
		{"star instead of wildcard", ep("kuadrant-2tqs20a7-a-*.example.com", "TXT", kuadrant), nil},
		{"strings that disagree", ep("kuadrant-2tqs20a7-a-a.example.com", "TXT",
			`"heritage=external-dns,external-dns/claim-targets=1.1.1.1,external-dns/claim-ttl=60,external-dns/owner=owner1,external-dns/version=1"`,
			`"heritage=external-dns,external-dns/claim-targets=2.2.2.2,external-dns/claim-ttl=300,external-dns/owner=owner1,external-dns/version=1"`), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseTXT(tc.txt)
			if tc.want == nil {
				if ok {
					t.Fatalf("read as an ownership record: %+v", got)
				}
				return
			}
			if !ok {
				t.Fatal("not read as an ownership record")
			}
			tc.want.TXT = tc.txt
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got\n%+v\nwant\n%+v\nwish %+v, want %+v", got, tc.want, got.Wish, tc.want.Wish)
			}
		})
	}
}

// What NewWishTXT writes, ParseTXT reads back: owner, record key and wish. The names are Kuadrant's
// fixtures (txt_test.go) with the production prefix; the values are Kuadrant's plus our two keys.
func TestTXTRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		rec        *v1alpha1.Endpoint
		name, text string
	}{
		{
			rec:  &v1alpha1.Endpoint{DNSName: "foobar.test-zone.example.org", RecordType: "CNAME", Targets: v1alpha1.Targets{"foobar.loadbalancer.com"}, RecordTTL: 300},
			name: "kuadrant-2tqs20a7-cname-foobar.test-zone.example.org",
			text: `"heritage=external-dns,external-dns/claim-targets=foobar.loadbalancer.com,external-dns/claim-ttl=300,external-dns/owner=owner1,external-dns/version=1"`,
		},
		{
			rec:  &v1alpha1.Endpoint{DNSName: "*.wildcard.test-zone.example.org", RecordType: "CNAME", Targets: v1alpha1.Targets{"foo.loadbalancer.com"}, RecordTTL: 60},
			name: "kuadrant-2tqs20a7-cname-wildcard.wildcard.test-zone.example.org",
			text: `"heritage=external-dns,external-dns/claim-targets=foo.loadbalancer.com,external-dns/claim-ttl=60,external-dns/owner=owner1,external-dns/version=1"`,
		},
		{
			rec: &v1alpha1.Endpoint{DNSName: "multiple.test-zone.example.org", RecordType: "CNAME", Targets: v1alpha1.Targets{"lb1.loadbalancer.com"}, RecordTTL: 60,
				SetIdentifier: "test-set-1", ProviderSpecific: v1alpha1.ProviderSpecific{{Name: "weight", Value: "120"}}},
			name: "kuadrant-2tqs20a7-cname-multiple.test-zone.example.org",
			text: `"heritage=external-dns,external-dns/claim-targets=lb1.loadbalancer.com,external-dns/claim-ttl=60,external-dns/owner=owner1,external-dns/version=1"`,
		},
		{
			rec: &v1alpha1.Endpoint{DNSName: "klb.example.com", RecordType: "CNAME", Targets: v1alpha1.Targets{"ie.klb.example.com"}, RecordTTL: 300,
				SetIdentifier: "default", ProviderSpecific: v1alpha1.ProviderSpecific{{Name: "geo-code", Value: "*"}}},
			name: "kuadrant-2tqs20a7-cname-klb.example.com",
			text: `"heritage=external-dns,external-dns/claim-targets=ie.klb.example.com,external-dns/claim-ttl=300,external-dns/owner=owner1,external-dns/version=1"`,
		},
		{
			rec:  &v1alpha1.Endpoint{DNSName: "Dualstack.Test-Zone.Example.org.", RecordType: "AAAA", Targets: v1alpha1.Targets{"2001:db8::2", "2001:DB8::1"}},
			name: "kuadrant-2tqs20a7-aaaa-dualstack.test-zone.example.org",
			text: `"heritage=external-dns,external-dns/claim-targets=2001:DB8::1;2001:db8::2,external-dns/claim-ttl=0,external-dns/owner=owner1,external-dns/version=1"`,
		},
		{
			rec:  &v1alpha1.Endpoint{DNSName: "example.com", RecordType: "NS", Targets: v1alpha1.Targets{"ns1.example.net", "ns2.example.net"}, RecordTTL: 3600},
			name: "kuadrant-2tqs20a7-ns-example.com",
			text: `"heritage=external-dns,external-dns/claim-targets=ns1.example.net;ns2.example.net,external-dns/claim-ttl=3600,external-dns/owner=owner1,external-dns/version=1"`,
		},
	} {
		txt, err := NewWishTXT("owner1", "", tc.rec)
		if err != nil {
			t.Fatal(err)
		}
		if txt.DNSName != tc.name || !reflect.DeepEqual(txt.Targets, v1alpha1.Targets{tc.text}) || txt.SetIdentifier != tc.rec.SetIdentifier ||
			txt.RecordTTL != tc.rec.RecordTTL || !reflect.DeepEqual(txt.ProviderSpecific, tc.rec.ProviderSpecific) {
			t.Errorf("%v: NewWishTXT = %+v, want %s %s", tc.rec, txt, tc.name, tc.text)
		}
		claim, ok := ParseTXT(txt)
		if !ok {
			t.Fatalf("%v: ParseTXT(%v) failed", tc.rec, txt)
		}
		if claim.Owner != "owner1" || claim.Record != tc.rec.Key() {
			t.Errorf("%v: claim of %s on %v", tc.rec, claim.Owner, claim.Record)
		}
		w := claim.Wish
		if w == nil || !w.Targets.SameTargets(tc.rec.Targets) || w.RecordTTL != tc.rec.RecordTTL || w.SetIdentifier != tc.rec.SetIdentifier ||
			!reflect.DeepEqual(w.ProviderSpecific, tc.rec.ProviderSpecific) || w.RecordType != tc.rec.RecordType {
			t.Errorf("%v: wish read back as %+v", tc.rec, w)
		}
		// Kuadrant's TXT reads back as the same claim, saying nothing of the wish.
		bare, err := NewTXT("owner1", tc.rec)
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := ParseTXT(bare); !ok || bare.DNSName != tc.name || c.Owner != "owner1" || c.Record != tc.rec.Key() || c.Wish != nil {
			t.Errorf("%v: NewTXT = %v reads back as %+v, %v", tc.rec, bare, c, ok)
		}
	}
}

// What an authoritative record leaves out when it is published: its contributors' ownership TXTs
// (both formats) and owner-named records; records, a human's TXT among them, stay.
func TestBookkeeping(t *testing.T) {
	a := ep("app.example.com", v1alpha1.RecordTypeA, "192.0.2.1")
	claim, err := NewTXT("owner1", a)
	if err != nil {
		t.Fatal(err)
	}
	legacy := ep("kuadrant-a-app.example.com", v1alpha1.RecordTypeTXT, `"heritage=external-dns,external-dns/owner=owner1"`)
	named := ep(NamedRecordName("lease", "owner1", "example.com"), v1alpha1.RecordTypeTXT, `"x"`)
	human := ep("app.example.com", v1alpha1.RecordTypeTXT, `"v=spf1 -all"`)
	for _, tc := range []struct {
		e    *v1alpha1.Endpoint
		want bool
	}{{a, false}, {claim, true}, {legacy, true}, {named, true}, {human, false}} {
		if got := Bookkeeping(tc.e); got != tc.want {
			t.Errorf("Bookkeeping(%s %s %v) = %v, want %v", tc.e.DNSName, tc.e.RecordType, tc.e.Targets, got, tc.want)
		}
	}
}
