package registry

import (
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// A grouped Kuadrant controller's ownership TXT (its GroupRegistry adds external-dns/group and
// external-dns/targets, the record's targets joined by ";"; the value as in Kuadrant's inmemory
// provider test at 57b9db50) is read as that owner's claim: the group and its targets are kept with
// the claim's labels, and, as for every TXT Kuadrant writes, its wish is the record as published.
func TestParseKuadrantGroupedTXT(t *testing.T) {
	const owner = "abc12345"
	for _, value := range []string{
		// external-dns's serialization: keys sorted.
		`"heritage=external-dns,external-dns/group=group1,external-dns/owner=abc12345,external-dns/targets=192.168.1.1;192.168.1.2;192.168.1.3,external-dns/version=1"`,
		// Kuadrant's test fixture, keys in another order.
		`"heritage=external-dns,external-dns/owner=abc12345,external-dns/targets=192.168.1.1;192.168.1.2;192.168.1.3,external-dns/group=group1,external-dns/version=1"`,
	} {
		txt := v1alpha1.NewEndpoint(TXTName(owner, "A", "app.example.com"), "TXT", 60, value)
		c, ok := ParseTXT(txt)
		if !ok {
			t.Fatalf("ParseTXT(%s) refused a grouped Kuadrant TXT", value)
		}
		if c.Owner != owner || c.Record != (v1alpha1.EndpointKey{DNSName: "app.example.com", RecordType: "A"}) {
			t.Errorf("claim of %s on %v", c.Owner, c.Record)
		}
		if c.Labels["group"] != "group1" || c.Labels["targets"] != "192.168.1.1;192.168.1.2;192.168.1.3" {
			t.Errorf("group labels not kept: %v", c.Labels)
		}
		if c.Wish != nil {
			t.Errorf("a Kuadrant TXT states no wish, got %v", c.Wish)
		}
	}
	z := Read([]*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint("app.example.com", "A", 60, "192.168.1.1", "192.168.1.2", "192.168.1.3"),
		v1alpha1.NewEndpoint(TXTName(owner, "A", "app.example.com"), "TXT", 60,
			`"heritage=external-dns,external-dns/group=group1,external-dns/owner=abc12345,external-dns/targets=192.168.1.1;192.168.1.2;192.168.1.3,external-dns/version=1"`),
	})
	r := z.Record(v1alpha1.EndpointKey{DNSName: "app.example.com", RecordType: "A"})
	if r == nil || r.Claim(owner) == nil {
		t.Fatalf("the zone does not give the record to the grouped owner: %+v", r)
	}
}
