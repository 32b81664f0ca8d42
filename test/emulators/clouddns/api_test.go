package clouddns

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	dns "google.golang.org/api/dns/v1"
	"google.golang.org/api/googleapi"
)

func expectError(t *testing.T, what string, err error, wantCode int, wantReason string) {
	t.Helper()
	if gotCode, gotReason := code(err); gotCode != wantCode || gotReason != wantReason {
		t.Errorf("%s: got HTTP %d %s (%v), want %d %s", what, gotCode, gotReason, err, wantCode, wantReason)
	}
}

func TestManagedZonesGetByNameAndID(t *testing.T) {
	s, svc := client(t, Options{Zones: []string{"example.com", "example.org"}, RequestsPerSecond: -1})
	byName, err := svc.ManagedZones.Get("p", ZoneName("example.org")).Context(t.Context()).Do()
	if err != nil {
		t.Fatal(err)
	}
	if byName.DnsName != "example.org." || byName.Name != ZoneName("example.org") || byName.Id == 0 || len(byName.NameServers) == 0 {
		t.Errorf("managedZones.get by name: %+v", byName)
	}
	id := strconv.FormatUint(byName.Id, 10)
	byID, err := svc.ManagedZones.Get("p", id).Context(t.Context()).Do()
	if err != nil {
		t.Fatal(err)
	}
	if byID.Name != byName.Name || byID.DnsName != byName.DnsName {
		t.Errorf("managedZones.get by ID %s gave %s (%s), want %s", id, byID.Name, byID.DnsName, byName.Name)
	}
	// The other calls take the ID in place of the name too.
	if _, err := svc.ResourceRecordSets.List("p", id).Context(t.Context()).Do(); err != nil {
		t.Errorf("resourceRecordSets.list by zone ID: %v", err)
	}
	_, err = svc.ManagedZones.Get("p", "zone-missing").Context(t.Context()).Do()
	expectError(t, "managedZones.get of a missing zone", err, http.StatusNotFound, "notFound")
	_, err = svc.ManagedZones.Get("p", "999999").Context(t.Context()).Do()
	expectError(t, "managedZones.get of a missing ID", err, http.StatusNotFound, "notFound")
	if n := s.Calls()[OpGetManagedZone]; n != 4 {
		t.Errorf("Calls()[%s] = %d, want 4", OpGetManagedZone, n)
	}
}

func TestManagedZonesListDnsNameAndFilter(t *testing.T) {
	_, svc := client(t, Options{Zones: []string{"a.example.com", "b.example.com", "example.com"}, RequestsPerSecond: -1})
	for _, tc := range []struct {
		dnsName string
		want    string
	}{
		{"b.example.com.", "[b.example.com.]"},
		{"example.com.", "[example.com.]"}, // exactly that name, not the zones under it
		{"B.Example.com", "[b.example.com.]"},
		{"c.example.com.", "[]"},
	} {
		var got []string
		err := svc.ManagedZones.List("p").DnsName(tc.dnsName).MaxResults(1).Pages(t.Context(), func(r *dns.ManagedZonesListResponse) error {
			for _, z := range r.ManagedZones {
				got = append(got, z.DnsName)
			}
			return nil
		})
		if err != nil || fmt.Sprint(got) != tc.want {
			t.Errorf("managedZones.list dnsName=%s: %v (%v), want %s", tc.dnsName, got, err, tc.want)
		}
	}
	// managedZones.list has no filter parameter: one sent is refused, not ignored.
	_, err := svc.ManagedZones.List("p").Context(t.Context()).Do(googleapi.QueryParameter("filter", `dnsName="example.com."`))
	expectError(t, "managedZones.list with a filter", err, http.StatusBadRequest, "invalid")
}

func TestRecordSetMethods(t *testing.T) {
	s, svc := client(t, Options{Zones: []string{"example.com"}, RequestsPerSecond: -1})
	zone := ZoneName("example.com")
	created, err := svc.ResourceRecordSets.Create("p", zone, a("www.example.com.", 60, "192.0.2.1", "192.0.2.2")).Context(t.Context()).Do()
	if err != nil {
		t.Fatal(err)
	}
	if created.Name != "www.example.com." || created.Kind != "dns#resourceRecordSet" || len(created.Rrdatas) != 2 {
		t.Errorf("create returned %+v", created)
	}
	_, err = svc.ResourceRecordSets.Create("p", zone, a("www.example.com.", 300, "192.0.2.9")).Context(t.Context()).Do()
	expectError(t, "create of an existing set", err, http.StatusConflict, "alreadyExists")
	if gerr := (*googleapi.Error)(nil); errors.As(err, &gerr) && gerr.Message != "The resource 'entity.rrset' named 'www.example.com. (A)' already exists" {
		t.Errorf("alreadyExists message %q", gerr.Message)
	}
	_, err = svc.ResourceRecordSets.Create("p", zone, &dns.ResourceRecordSet{Name: "www.example.com.", Type: "CNAME", Ttl: 60, Rrdatas: []string{"x.example.net."}}).Context(t.Context()).Do()
	expectError(t, "create of a CNAME beside an A", err, http.StatusBadRequest, "cnameResourceRecordSetConflict")
	_, err = svc.ResourceRecordSets.Create("p", zone, a("www.example.org.", 60, "192.0.2.1")).Context(t.Context()).Do()
	expectError(t, "create outside the zone", err, http.StatusBadRequest, "invalid")

	got, err := svc.ResourceRecordSets.Get("p", zone, "www.example.com.", "A").Context(t.Context()).Do()
	if err != nil || canonical(got) != canonical(created) {
		t.Errorf("get: %+v (%v), want %+v", got, err, created)
	}
	_, err = svc.ResourceRecordSets.Get("p", zone, "www.example.com.", "AAAA").Context(t.Context()).Do()
	expectError(t, "get of a missing set", err, http.StatusNotFound, "notFound")

	// A patch replaces the fields it sends and keeps the others.
	patched, err := svc.ResourceRecordSets.Patch("p", zone, "www.example.com.", "A", &dns.ResourceRecordSet{Ttl: 300}).Context(t.Context()).Do()
	if err != nil || patched.Ttl != 300 || fmt.Sprint(patched.Rrdatas) != "[192.0.2.1 192.0.2.2]" {
		t.Errorf("patch of the TTL: %+v (%v)", patched, err)
	}
	before := snapshot(s, zone)
	policy := &dns.RRSetRoutingPolicy{Wrr: &dns.RRSetRoutingPolicyWrrPolicy{Items: []*dns.RRSetRoutingPolicyWrrPolicyWrrPolicyItem{{Weight: 1, Rrdatas: []string{"192.0.2.3"}}}}}
	_, err = svc.ResourceRecordSets.Patch("p", zone, "www.example.com.", "A", &dns.ResourceRecordSet{RoutingPolicy: policy}).Context(t.Context()).Do()
	expectError(t, "patch leaving rrdatas and a routing policy", err, http.StatusBadRequest, "invalid")
	_, err = svc.ResourceRecordSets.Patch("p", zone, "www.example.com.", "A", &dns.ResourceRecordSet{Rrdatas: []string{"not-an-ip"}}).Context(t.Context()).Do()
	expectError(t, "patch with a bad rrdata", err, http.StatusBadRequest, "invalid")
	_, err = svc.ResourceRecordSets.Patch("p", zone, "www.example.com.", "A", &dns.ResourceRecordSet{Name: "web.example.com."}).Context(t.Context()).Do()
	expectError(t, "patch of the name", err, http.StatusBadRequest, "invalid")
	if after := snapshot(s, zone); after != before {
		t.Errorf("refused patches changed the zone")
	}
	_, err = svc.ResourceRecordSets.Patch("p", zone, "gone.example.com.", "A", &dns.ResourceRecordSet{Ttl: 60}).Context(t.Context()).Do()
	expectError(t, "patch of a missing set", err, http.StatusNotFound, "notFound")

	if _, err := svc.ResourceRecordSets.Delete("p", zone, "www.example.com.", "A").Context(t.Context()).Do(); err != nil {
		t.Fatalf("delete: %v", err)
	}
	_, err = svc.ResourceRecordSets.Get("p", zone, "www.example.com.", "A").Context(t.Context()).Do()
	expectError(t, "get after delete", err, http.StatusNotFound, "notFound")
	_, err = svc.ResourceRecordSets.Delete("p", zone, "www.example.com.", "A").Context(t.Context()).Do()
	expectError(t, "delete of a missing set", err, http.StatusNotFound, "notFound")
	calls := s.Calls()
	if calls[OpCreateRRSet] != 4 || calls[OpGetRRSet] != 3 || calls[OpPatchRRSet] != 5 || calls[OpDeleteRRSet] != 2 {
		t.Errorf("calls %v", calls)
	}
}

func TestRecordSetListFilters(t *testing.T) {
	_, svc := client(t, Options{Zones: []string{"example.com"}, RequestsPerSecond: -1})
	zone := ZoneName("example.com")
	if _, err := svc.Changes.Create("p", zone, &dns.Change{Additions: []*dns.ResourceRecordSet{
		a("www.example.com.", 60, "192.0.2.1"),
		{Name: "www.example.com.", Type: "TXT", Ttl: 60, Rrdatas: []string{`"t"`}},
		a("a.www.example.com.", 60, "192.0.2.1"),
		a("notwww.example.com.", 60, "192.0.2.1"),
	}}).Context(t.Context()).Do(); err != nil {
		t.Fatal(err)
	}
	list := func(call *dns.ResourceRecordSetsListCall) ([]string, error) {
		var got []string
		err := call.MaxResults(1).Pages(t.Context(), func(r *dns.ResourceRecordSetsListResponse) error {
			for _, rs := range r.Rrsets {
				got = append(got, rs.Name+"/"+rs.Type)
			}
			return nil
		})
		return got, err
	}
	for _, tc := range []struct{ filter, want string }{
		{`name="www.example.com."`, "[www.example.com./A www.example.com./TXT]"},
		{`name="www.example.com." AND type="A"`, "[www.example.com./A]"},
		{`type="TXT" AND name="www.example.com."`, "[www.example.com./TXT]"},
		{`name=has_suffix("www.example.com.")`, "[a.www.example.com./A www.example.com./A www.example.com./TXT]"},
		{`name = has_suffix("www.example.com.") AND type = "A"`, "[a.www.example.com./A www.example.com./A]"},
	} {
		got, err := list(svc.ResourceRecordSets.List("p", zone).Filter(tc.filter))
		if err != nil || fmt.Sprint(got) != tc.want {
			t.Errorf("filter %s: %v (%v), want %s", tc.filter, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		what string
		call *dns.ResourceRecordSetsListCall
	}{
		{"type without name", svc.ResourceRecordSets.List("p", zone).Type("A")},
		{"filter with name", svc.ResourceRecordSets.List("p", zone).Filter(`name="www.example.com."`).Name("www.example.com.")},
		{"filter with type", svc.ResourceRecordSets.List("p", zone).Filter(`name="www.example.com."`).Type("A")},
		{"filter without a domain", svc.ResourceRecordSets.List("p", zone).Filter(`type="A"`)},
		{"filter with OR", svc.ResourceRecordSets.List("p", zone).Filter(`name="www.example.com." OR type="A"`)},
		{"filter the emulator does not implement", svc.ResourceRecordSets.List("p", zone).Filter(`name:"www"`)},
		{"filter naming the domain twice", svc.ResourceRecordSets.List("p", zone).Filter(`name="a." AND name="b."`)},
	} {
		_, err := tc.call.Context(t.Context()).Do()
		expectError(t, tc.what, err, http.StatusBadRequest, "invalid")
	}
	if got, err := list(svc.ResourceRecordSets.List("p", zone).Name("www.example.com.").Type("TXT")); err != nil || fmt.Sprint(got) != "[www.example.com./TXT]" {
		t.Errorf("name and type: %v (%v)", got, err)
	}
}

// A change over Cloud DNS's quotas is 403 quotaExceeded, one errors[] entry per quota broken
// (external-dns#1028), and changes nothing.
func TestChangeQuotas(t *testing.T) {
	s, svc := client(t, Options{Zones: []string{"example.com"}, RequestsPerSecond: -1})
	zone := ZoneName("example.com")
	var ips []string
	for i := range MaxRecordsPerRRSet + 1 {
		ips = append(ips, fmt.Sprintf("10.0.%d.%d", i/256, i%256))
	}
	long := `"` + strings.Repeat("x", 250) + `"`
	var big []*dns.ResourceRecordSet
	for i := range MaxRrdataBytesPerChange/len(long) + 1 {
		big = append(big, &dns.ResourceRecordSet{Name: fmt.Sprintf("t%d.example.com.", i), Type: "TXT", Ttl: 60, Rrdatas: []string{long}})
	}
	before := snapshot(s, zone)
	for _, tc := range []struct {
		name   string
		change *dns.Change
		want   []string
	}{
		{"rrdatas per set", &dns.Change{Additions: []*dns.ResourceRecordSet{a("many.example.com.", 60, ips...)}},
			[]string{"The change would exceed quota for resource records per rrset."}},
		{"rrdata bytes per change", &dns.Change{Additions: big},
			[]string{"The change would exceed quota for total rrdata size per change."}},
		{"two quotas", &dns.Change{Additions: append(slices.Clone(big), a("many.example.com.", 60, ips...))},
			[]string{"The change would exceed quota for resource records per rrset.", "The change would exceed quota for total rrdata size per change."}},
	} {
		_, err := svc.Changes.Create("p", zone, tc.change).Context(t.Context()).Do()
		expectError(t, tc.name, err, http.StatusForbidden, "quotaExceeded")
		var got []string
		if gerr := (*googleapi.Error)(nil); errors.As(err, &gerr) {
			for _, e := range gerr.Errors {
				got = append(got, e.Message)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: errors %q, want %q", tc.name, got, tc.want)
		}
	}
	if after := snapshot(s, zone); after != before {
		t.Errorf("a change over quota modified the zone")
	}
	// At the limits, the change applies.
	if _, err := svc.Changes.Create("p", zone, &dns.Change{Additions: []*dns.ResourceRecordSet{a("many.example.com.", 60, ips[:MaxRecordsPerRRSet]...)}}).Context(t.Context()).Do(); err != nil {
		t.Errorf("a set of %d rrdatas: %v", MaxRecordsPerRRSet, err)
	}
}
