package registry

import (
	"fmt"
	"strings"
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

// A grouped owner's TXT is the one Kuadrant's grouped controller writes, byte for byte (external-dns
// serializes the keys sorted); an ungrouped owner's is unchanged.
func TestNewTXTInGroup(t *testing.T) {
	const owner = "abc12345"
	record := v1alpha1.NewEndpoint("app.example.com", "A", 60, "192.168.1.1", "192.168.1.2")
	txt, err := NewTXTInGroup(owner, "group1", record)
	if err != nil {
		t.Fatal(err)
	}
	want := `"heritage=external-dns,external-dns/group=group1,external-dns/owner=abc12345,external-dns/targets=192.168.1.1;192.168.1.2,external-dns/version=1"`
	if len(txt.Targets) != 1 || txt.Targets[0] != want {
		t.Errorf("NewTXTInGroup = %q, want %s", txt.Targets, want)
	}
	if txt.DNSName != TXTName(owner, "A", "app.example.com") {
		t.Errorf("name %s", txt.DNSName)
	}
	c, ok := ParseTXT(txt)
	if !ok || c.Labels[GroupKey] != "group1" || c.Wish != nil {
		t.Errorf("read back: %+v, %v", c, ok)
	}
	plain, err := NewTXTInGroup(owner, "", record)
	if err != nil {
		t.Fatal(err)
	}
	kuadrant, _ := NewTXT(owner, record)
	if plain.Targets[0] != kuadrant.Targets[0] || plain.Targets[0] != `"heritage=external-dns,external-dns/owner=abc12345,external-dns/version=1"` {
		t.Errorf("ungrouped TXT changed: %q", plain.Targets)
	}
	if _, err := NewTXTInGroup(owner, "a&&b", record); err == nil {
		t.Error("a group with a separator was written")
	}
}

// Where the targets would not fit the one TXT string, the value says the group alone; a wish TXT
// spread over several strings says it in each, so each string reads alike.
func TestNewTXTInGroupLongTargets(t *testing.T) {
	var ips []string
	for i := range 40 {
		ips = append(ips, fmt.Sprintf("10.0.%d.%d", i, i))
	}
	record := v1alpha1.NewEndpoint("app.example.com", "A", 60, ips...)
	txt, err := NewTXTInGroup("abc12345", "east", record)
	if err != nil {
		t.Fatal(err)
	}
	if len(txt.Targets) != 1 || strings.Contains(txt.Targets[0], "external-dns/targets=") || !strings.Contains(txt.Targets[0], "external-dns/group=east") {
		t.Errorf("long targets: %q", txt.Targets)
	}
	wish, err := NewWishTXTInGroup("abc12345", "east", "lease1", record)
	if err != nil {
		t.Fatal(err)
	}
	if len(wish.Targets) < 2 {
		t.Fatalf("the wish fits one string: %q", wish.Targets)
	}
	for _, v := range wish.Targets {
		if len(v)-2 > maxValueLength || !strings.Contains(v, "external-dns/group=east") || strings.Contains(v, "external-dns/targets=") {
			t.Errorf("wish string %s", v)
		}
	}
	c, ok := ParseTXT(wish)
	if !ok || c.Wish == nil || len(c.Wish.Targets) != len(ips) || c.Labels[GroupKey] != "east" {
		t.Errorf("wish read back: %+v, %v", c, ok)
	}
}
