package registry

import (
	"reflect"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// mustTXT is owner's claim on rec, stating its wish.
func mustTXT(t testing.TB, owner string, rec *v1alpha1.Endpoint) *v1alpha1.Endpoint {
	t.Helper()
	txt, err := NewWishTXT(owner, "", rec)
	if err != nil {
		t.Fatal(err)
	}
	return txt
}

// kuadrantTXT is an ownership TXT as Kuadrant's dns-operator writes it: no wish.
func kuadrantTXT(owner, recordType, name string) *v1alpha1.Endpoint {
	return ep(TXTName(owner, recordType, name), "TXT", FormatValue(map[string]string{"owner": owner, "version": "1"}))
}

// The zone of Kuadrant's registry test (txt_test.go, testTXTRegistryRecordsPrefixed), with Kuadrant's
// production prefix, plus records shared by two owners and a claim without a record.
func TestRead(t *testing.T) {
	zoneEndpoints := []*v1alpha1.Endpoint{
		ep("foo.test-zone.example.org", "CNAME", "foo.loadbalancer.com"),
		ep("kuadrant-2tqs20a7-cname-bar.test-zone.example.org", "CNAME", "baz.test-zone.example.org"),
		ep("qux.test-zone.example.org", "TXT", "random"),
		ep("foobar.test-zone.example.org", "CNAME", "foobar.loadbalancer.com"),
		ep("foobar.test-zone.example.org", "TXT"),
		ep("*.wildcard.test-zone.example.org", "CNAME", "foo.loadbalancer.com"),
		ep("kuadrant-2tqs20a7-cname-wildcard.wildcard.test-zone.example.org", "TXT", `"heritage=external-dns,external-dns/owner=owner1,external-dns/version=1"`),
		ep("multiple.test-zone.example.org", "CNAME", "lb1.loadbalancer.com").WithSetIdentifier("test-set-1"),
		ep("kuadrant-cname-multiple.test-zone.example.org", "TXT", `"heritage=external-dns,external-dns/owner=owner1"`).WithSetIdentifier("test-set-1"),
		ep("multiple.test-zone.example.org", "CNAME", "lb2.loadbalancer.com").WithSetIdentifier("test-set-2"),
		ep("kuadrant-2tqs20a7-cname-multiple.test-zone.example.org", "TXT", `"heritage=external-dns,external-dns/owner=owner1,external-dns/version=1"`).WithSetIdentifier("test-set-2"),
		ep("dualstack.test-zone.example.org", "A", "1.1.1.1"),
		ep("kuadrant-2tqs20a7-a-dualstack.test-zone.example.org", "TXT", `"heritage=external-dns,external-dns/owner=owner1,external-dns/version=1"`),
		ep("dualstack.test-zone.example.org", "AAAA", "2001:DB8::1"),
		kuadrantTXT("owner2", "AAAA", "dualstack.test-zone.example.org"),
		ep("shared.test-zone.example.org", "A", "1.1.1.1", "2.2.2.2"),
		mustTXT(t, "owner1", ep("shared.test-zone.example.org", "A", "1.1.1.1")),
		mustTXT(t, "owner2", ep("shared.test-zone.example.org", "A", "2.2.2.2")),
		mustTXT(t, "owner2", ep("lost.test-zone.example.org", "CNAME", "elsewhere.example.net")),
		nil,
		// A duplicate from a confused backend: the first is kept.
		ep("foo.test-zone.example.org", "CNAME", "other.loadbalancer.com"),
	}
	z := Read(zoneEndpoints)

	type row struct {
		key    v1alpha1.EndpointKey
		target string // first target of the record, "" when only claimed
		owners []string
	}
	key := func(name, recordType, set string) v1alpha1.EndpointKey {
		return v1alpha1.EndpointKey{DNSName: name, RecordType: recordType, SetIdentifier: set}
	}
	want := []row{
		{key("*.wildcard.test-zone.example.org", "CNAME", ""), "foo.loadbalancer.com", []string{"owner1"}},
		{key("dualstack.test-zone.example.org", "A", ""), "1.1.1.1", []string{"owner1"}},
		{key("dualstack.test-zone.example.org", "AAAA", ""), "2001:DB8::1", []string{"owner2"}},
		{key("foo.test-zone.example.org", "CNAME", ""), "foo.loadbalancer.com", []string{}},
		{key("foobar.test-zone.example.org", "CNAME", ""), "foobar.loadbalancer.com", []string{}},
		{key("foobar.test-zone.example.org", "TXT", ""), "", []string{}},
		{key("kuadrant-2tqs20a7-cname-bar.test-zone.example.org", "CNAME", ""), "baz.test-zone.example.org", []string{}},
		{key("lost.test-zone.example.org", "CNAME", ""), "", []string{"owner2"}},
		// Held by owner1's pre-version-1 TXT, which is a claim, not a record.
		{key("multiple.test-zone.example.org", "CNAME", "test-set-1"), "lb1.loadbalancer.com", []string{"owner1"}},
		{key("multiple.test-zone.example.org", "CNAME", "test-set-2"), "lb2.loadbalancer.com", []string{"owner1"}},
		{key("qux.test-zone.example.org", "TXT", ""), "random", []string{}},
		{key("shared.test-zone.example.org", "A", ""), "1.1.1.1", []string{"owner1", "owner2"}},
	}
	var got []row
	for _, r := range z.Records() {
		target := ""
		if r.Endpoint != nil && len(r.Endpoint.Targets) > 0 {
			target = r.Endpoint.Targets[0]
		}
		got = append(got, row{r.Key, target, r.Owners()})
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Records():\n got %v\nwant %v", got, want)
	}
	// The empty TXT at foobar has a record but no target.
	if r := z.Record(key("foobar.test-zone.example.org", "TXT", "")); r == nil || r.Endpoint == nil || r.Owned() {
		t.Errorf("the empty TXT is %+v", r)
	}
	if r := z.Record(key("lost.test-zone.example.org", "CNAME", "")); r == nil || r.Endpoint != nil || r.Claim("owner2").Wish == nil {
		t.Errorf("the claim without a record is %+v", r)
	}
	if r := z.Record(key("Shared.Test-Zone.Example.org.", "A", "")); r == nil || r.Claim("owner1") == nil || r.Claim("owner3") != nil {
		t.Errorf("Record does not normalize the name, or Claim finds the wrong owner: %+v", r)
	}
	if c := z.Record(key("dualstack.test-zone.example.org", "AAAA", "")).Claim("owner2"); c.Wish != nil {
		t.Errorf("a TXT written by Kuadrant has a wish: %+v", c.Wish)
	}
	if got, want := z.Names("owner1"), []string{"*.wildcard.test-zone.example.org", "dualstack.test-zone.example.org", "multiple.test-zone.example.org", "shared.test-zone.example.org"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Names(owner1) = %v, want %v", got, want)
	}
	if got := len(z.AtName("dualstack.test-zone.example.org.")); got != 2 {
		t.Errorf("AtName(dualstack) has %d records, want 2", got)
	}

	unclaimed := func(name string) []string {
		var out []string
		for _, e := range z.Unclaimed(name) {
			out = append(out, e.RecordType+" "+e.DNSName)
		}
		return out
	}
	for name, want := range map[string][]string{
		"dualstack.test-zone.example.org":                     nil,
		"foobar.test-zone.example.org":                        {"CNAME foobar.test-zone.example.org", "TXT foobar.test-zone.example.org"},
		"multiple.test-zone.example.org":                      nil,
		"kuadrant-cname-multiple.test-zone.example.org":       {"TXT kuadrant-cname-multiple.test-zone.example.org"},
		"kuadrant-2tqs20a7-a-dualstack.test-zone.example.org": {"TXT kuadrant-2tqs20a7-a-dualstack.test-zone.example.org"},
		"nothing.test-zone.example.org":                       nil,
	} {
		if got := unclaimed(name); !reflect.DeepEqual(got, want) {
			t.Errorf("Unclaimed(%s) = %v, want %v", name, got, want)
		}
	}
}

// LabelOwners labels each claimed record as Kuadrant's dns-operator labels what it writes into an
// authoritative record: owner=<owner IDs, sorted, joined by "&&">, legacy owners included, on the
// record alone. Claims, records nobody claims, and other labels stay as they are; what it changes is
// a copy.
func TestLabelOwners(t *testing.T) {
	shared := ep("app.example.com", "A", "10.0.0.1", "10.0.0.2", "10.0.0.3")
	shared.Labels = v1alpha1.Labels{"team": "web"}
	weighted := ep("w.example.com", "CNAME", "lb.example.net")
	weighted.SetIdentifier = "lb"
	alone := ep("one.example.com", "AAAA", "2001:db8::1")
	alone.Labels = v1alpha1.Labels{OwnerLabel: "cluster-b"} // as Kuadrant left it: already right
	human := ep("human.example.com", "A", "192.0.2.1")
	claimWeighted := kuadrantTXT("cluster-c", "CNAME", "w.example.com")
	claimWeighted.SetIdentifier = "lb"
	in := []*v1alpha1.Endpoint{
		shared, weighted, alone, human, nil,
		// Owners in no order; the Kuadrant-form and the wish-stating claims count alike.
		kuadrantTXT("cluster-c", "A", "app.example.com"),
		mustTXT(t, "cluster-a", shared),
		kuadrantTXT("cluster-b", "A", "app.example.com"),
		claimWeighted,
		kuadrantTXT("cluster-b", "AAAA", "one.example.com"),
		// A legacy TXT names owners that wrote no version-1 claim, and one that did (cluster-a).
		ep("kuadrant-a-app.example.com", "TXT", `"heritage=external-dns,external-dns/owner=cluster-a&&cluster-d"`),
	}
	before := make([]*v1alpha1.Endpoint, len(in))
	for i, e := range in {
		before[i] = e.DeepCopy()
	}
	out := LabelOwners(in)
	if !reflect.DeepEqual(in, before) {
		t.Fatal("LabelOwners changed its input")
	}
	if len(out) != len(in) {
		t.Fatalf("%d endpoints out of %d", len(out), len(in))
	}
	want := map[int]v1alpha1.Labels{
		0: {"team": "web", OwnerLabel: "cluster-a&&cluster-b&&cluster-c&&cluster-d"},
		1: {OwnerLabel: "cluster-c"},
	}
	for i, e := range out {
		w, changed := want[i]
		switch {
		case changed && !reflect.DeepEqual(e.Labels, w):
			t.Errorf("%s: labels %v, want %v", e.DNSName, e.Labels, w)
		case changed && e == in[i]:
			t.Errorf("%s: labelled in place, not on a copy", e.DNSName)
		case changed && (e.Key() != before[i].Key() || !e.SameValues(before[i])):
			t.Errorf("%s: more than its labels changed: %v", e.DNSName, e)
		case !changed && e != in[i]:
			t.Errorf("endpoint %d (%v) replaced, want it as given", i, in[i])
		}
	}
}
