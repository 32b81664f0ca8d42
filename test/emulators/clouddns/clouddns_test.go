package clouddns

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	dns "google.golang.org/api/dns/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
)

// client starts an emulator and returns the real client pointed at it.
func client(t *testing.T, opts Options) (*Server, *dns.Service) {
	t.Helper()
	opts.Project = "p"
	s := New(opts)
	srv, url, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	svc, err := dns.NewService(t.Context(), option.WithEndpoint(url), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	return s, svc
}

func code(err error) (int, string) {
	var gerr *googleapi.Error
	if !errors.As(err, &gerr) {
		return 0, ""
	}
	reason := ""
	if len(gerr.Errors) > 0 {
		reason = gerr.Errors[0].Reason
	}
	return gerr.Code, reason
}

func snapshot(s *Server, zone string) string {
	var out string
	for _, rs := range s.RecordSets(zone) {
		out += canonical(rs) + "\n"
	}
	return out
}

func a(name string, ttl int64, ips ...string) *dns.ResourceRecordSet {
	return &dns.ResourceRecordSet{Name: name, Type: "A", Ttl: ttl, Rrdatas: ips}
}

func TestListenRefusesNonLoopback(t *testing.T) {
	if _, _, err := New(Options{}).Listen("0.0.0.0:0"); err == nil {
		t.Fatal("Listen on every address succeeded, want it refused")
	}
}

func TestChangeRules(t *testing.T) {
	s, svc := client(t, Options{Zones: []string{"example.com"}, RequestsPerSecond: -1})
	zone := ZoneName("example.com")
	create := func(c *dns.Change) error {
		_, err := svc.Changes.Create("p", zone, c).Context(t.Context()).Do()
		return err
	}
	if err := create(&dns.Change{Additions: []*dns.ResourceRecordSet{a("www.example.com.", 60, "192.0.2.1")}}); err != nil {
		t.Fatal(err)
	}
	wrr := func(weights ...float64) *dns.ResourceRecordSet {
		rs := &dns.ResourceRecordSet{Name: "w.example.com.", Type: "CNAME", Ttl: 60, RoutingPolicy: &dns.RRSetRoutingPolicy{Wrr: &dns.RRSetRoutingPolicyWrrPolicy{}}}
		for i, w := range weights {
			rs.RoutingPolicy.Wrr.Items = append(rs.RoutingPolicy.Wrr.Items, &dns.RRSetRoutingPolicyWrrPolicyWrrPolicyItem{Weight: w, Rrdatas: []string{fmt.Sprintf("gw%d.example.net.", i)}})
		}
		return rs
	}
	geo := func(locations ...string) *dns.ResourceRecordSet {
		rs := &dns.ResourceRecordSet{Name: "g.example.com.", Type: "CNAME", Ttl: 60, RoutingPolicy: &dns.RRSetRoutingPolicy{Geo: &dns.RRSetRoutingPolicyGeoPolicy{}}}
		for _, l := range locations {
			rs.RoutingPolicy.Geo.Items = append(rs.RoutingPolicy.Geo.Items, &dns.RRSetRoutingPolicyGeoPolicyGeoPolicyItem{Location: l, Rrdatas: []string{l + ".example.net."}})
		}
		return rs
	}
	many := make([]*dns.ResourceRecordSet, MaxAdditionsPerChange+1)
	for i := range many {
		many[i] = a(fmt.Sprintf("r%d.example.com.", i), 60, "192.0.2.1")
	}
	for _, tc := range []struct {
		name   string
		change *dns.Change
		code   int
		reason string
	}{
		{"deletion with other values", &dns.Change{Deletions: []*dns.ResourceRecordSet{a("www.example.com.", 60, "192.0.2.9")}}, 412, "conditionNotMet"},
		{"deletion with another TTL", &dns.Change{Deletions: []*dns.ResourceRecordSet{a("www.example.com.", 300, "192.0.2.1")}}, 412, "conditionNotMet"},
		{"deletion of a missing set", &dns.Change{Deletions: []*dns.ResourceRecordSet{a("gone.example.com.", 60, "192.0.2.1")}}, 404, "notFound"},
		{"addition of an existing set", &dns.Change{Additions: []*dns.ResourceRecordSet{a("www.example.com.", 60, "192.0.2.2")}}, 409, "alreadyExists"},
		{"CNAME beside A", &dns.Change{Additions: []*dns.ResourceRecordSet{{Name: "www.example.com.", Type: "CNAME", Ttl: 60, Rrdatas: []string{"x.example.net."}}}}, 400, "cnameResourceRecordSetConflict"},
		{"CNAME at the apex", &dns.Change{Additions: []*dns.ResourceRecordSet{{Name: "example.com.", Type: "CNAME", Ttl: 60, Rrdatas: []string{"x.example.net."}}}}, 400, "cnameResourceRecordSetConflict"},
		{"name outside the zone", &dns.Change{Additions: []*dns.ResourceRecordSet{a("www.example.org.", 60, "192.0.2.1")}}, 400, "invalid"},
		{"negative weight", &dns.Change{Additions: []*dns.ResourceRecordSet{wrr(1, -1)}}, 400, "invalid"},
		{"unknown region", &dns.Change{Additions: []*dns.ResourceRecordSet{geo("europe-west1", "GEO-EU")}}, 400, "invalid"},
		{"region twice", &dns.Change{Additions: []*dns.ResourceRecordSet{geo("europe-west1", "europe-west1")}}, 400, "invalid"},
		{"rrdatas and a policy", &dns.Change{Additions: []*dns.ResourceRecordSet{func() *dns.ResourceRecordSet { rs := wrr(1); rs.Rrdatas = []string{"x.example.net."}; return rs }()}}, 400, "invalid"},
		{"too many additions", &dns.Change{Additions: many}, 403, "quotaExceeded"},
		{"empty change", &dns.Change{}, 400, "required"},
		// The valid first part must not apply when the second fails.
		{"partly valid", &dns.Change{Additions: []*dns.ResourceRecordSet{a("new.example.com.", 60, "192.0.2.1"), a("www.example.com.", 60, "192.0.2.1")}}, 409, "alreadyExists"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot(s, zone)
			gotCode, gotReason := code(create(tc.change))
			if gotCode != tc.code || gotReason != tc.reason {
				t.Errorf("got HTTP %d %s, want %d %s", gotCode, gotReason, tc.code, tc.reason)
			}
			if after := snapshot(s, zone); after != before {
				t.Errorf("a rejected change modified the zone")
			}
		})
	}

	// A deletion and an addition of one name apply together: A replaced by a CNAME, weight 0 kept.
	if err := create(&dns.Change{
		Deletions: []*dns.ResourceRecordSet{a("www.example.com.", 60, "192.0.2.1")},
		Additions: []*dns.ResourceRecordSet{{Name: "www.example.com.", Type: "CNAME", Ttl: 60, Rrdatas: []string{"x.example.net."}}, wrr(0, 2), geo("europe-west1", "us-east1")},
	}); err != nil {
		t.Fatal(err)
	}
	resp, err := svc.ResourceRecordSets.List("p", zone).Name("w.example.com.").Context(t.Context()).Do()
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Rrsets) != 1 || resp.Rrsets[0].RoutingPolicy.Wrr.Items[0].Weight != 0 || len(resp.Rrsets[0].RoutingPolicy.Wrr.Items) != 2 {
		t.Errorf("WRR set read back as %+v", resp.Rrsets)
	}
	// Deleting it needs the exact policy.
	if c, _ := code(create(&dns.Change{Deletions: []*dns.ResourceRecordSet{wrr(1, 2)}})); c != http.StatusPreconditionFailed {
		t.Errorf("deleting a WRR set with other weights: HTTP %d, want 412", c)
	}
	if err := create(&dns.Change{Deletions: []*dns.ResourceRecordSet{wrr(0, 2)}}); err != nil {
		t.Errorf("deleting the WRR set as read: %v", err)
	}
}

func TestPaginationAndChangeStatus(t *testing.T) {
	s, svc := client(t, Options{Zones: []string{"a.example.com", "b.example.com", "c.example.com"}, PageSize: 2, RequestsPerSecond: -1})
	var zones []string
	err := svc.ManagedZones.List("p").Pages(t.Context(), func(r *dns.ManagedZonesListResponse) error {
		for _, z := range r.ManagedZones {
			zones = append(zones, z.DnsName)
		}
		return nil
	})
	if err != nil || fmt.Sprint(zones) != "[a.example.com. b.example.com. c.example.com.]" {
		t.Fatalf("zones %v, %v", zones, err)
	}
	zone := ZoneName("a.example.com")
	var adds []*dns.ResourceRecordSet
	for i := range 5 {
		adds = append(adds, a(fmt.Sprintf("r%d.a.example.com.", i), 60, "192.0.2.1"))
	}
	c, err := svc.Changes.Create("p", zone, &dns.Change{Additions: adds}).Context(t.Context()).Do()
	if err != nil || c.Status != "pending" {
		t.Fatalf("create: %+v, %v", c, err)
	}
	got, err := svc.Changes.Get("p", zone, c.Id).Context(t.Context()).Do()
	if err != nil || got.Status != "pending" {
		t.Fatalf("first get: %+v, %v", got, err)
	}
	if got, err = svc.Changes.Get("p", zone, c.Id).Context(t.Context()).Do(); err != nil || got.Status != "done" {
		t.Fatalf("second get: %+v, %v", got, err)
	}
	n := 0
	pages := 0
	err = svc.ResourceRecordSets.List("p", zone).Pages(t.Context(), func(r *dns.ResourceRecordSetsListResponse) error {
		n += len(r.Rrsets)
		pages++
		return nil
	})
	if err != nil || n != 7 || pages != 4 {
		t.Errorf("listed %d sets in %d pages (%v), want 7 (5 + SOA + NS) in 4", n, pages, err)
	}
	calls := s.Calls()
	if calls[OpListManagedZones] != 2 || calls[OpCreateChange] != 1 || calls[OpGetChange] != 2 || calls[OpListRRSets] != 4 {
		t.Errorf("calls %v", calls)
	}
}

func TestRateLimitAndFaults(t *testing.T) {
	_, svc := client(t, Options{Zones: []string{"example.com"}, RequestsPerSecond: 0.001, Burst: 3})
	var limited int
	for range 5 {
		if _, err := svc.ManagedZones.List("p").Context(t.Context()).Do(); err != nil {
			if c, reason := code(err); c != http.StatusTooManyRequests || reason != "rateLimitExceeded" {
				t.Fatalf("got %v, want 429 rateLimitExceeded", err)
			}
			limited++
		}
	}
	if limited != 2 {
		t.Errorf("%d of 5 requests limited with a burst of 3, want 2", limited)
	}

	s2, svc2 := client(t, Options{Zones: []string{"example.com"}, RequestsPerSecond: -1})
	for _, kind := range []string{FaultServerError, FaultDrop} {
		s2.SetFaults(Faults{Rate: 1, Kinds: []string{kind}})
		_, err := svc2.ManagedZones.List("p").Context(t.Context()).Do()
		if err == nil {
			t.Errorf("fault %s: request succeeded", kind)
		}
		if c, _ := code(err); kind == FaultServerError && c != http.StatusServiceUnavailable {
			t.Errorf("fault %s: got %v, want 503", kind, err)
		}
	}
	s2.SetFaults(Faults{})
	if _, err := svc2.ManagedZones.List("p").Context(t.Context()).Do(); err != nil {
		t.Errorf("after faults are off: %v", err)
	}
}

// A listing that runs while sets before its cursor are deleted still returns every set that was
// there throughout: page tokens continue after the last set returned, not at an offset.
func TestPaginationSurvivesConcurrentDeletions(t *testing.T) {
	s, svc := client(t, Options{RequestsPerSecond: -1})
	zone := s.AddZone("example.com")
	var adds []*dns.ResourceRecordSet
	for i := range 10 {
		adds = append(adds, a(fmt.Sprintf("h%d.example.com.", i), 60, "192.0.2.1"))
	}
	if _, err := svc.Changes.Create("p", zone, &dns.Change{Additions: adds}).Do(); err != nil {
		t.Fatal(err)
	}
	first, err := svc.ResourceRecordSets.List("p", zone).MaxResults(4).Do()
	if err != nil {
		t.Fatal(err)
	}
	// Delete the first two record sets of the zone's order, both on the page already read.
	if _, err := svc.Changes.Create("p", zone, &dns.Change{Deletions: adds[:2]}).Do(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, rs := range first.Rrsets {
		seen[rs.Name+" "+rs.Type] = true
	}
	for token := first.NextPageToken; token != ""; {
		page, err := svc.ResourceRecordSets.List("p", zone).MaxResults(4).PageToken(token).Do()
		if err != nil {
			t.Fatal(err)
		}
		for _, rs := range page.Rrsets {
			if seen[rs.Name+" "+rs.Type] {
				t.Errorf("%s %s listed twice", rs.Name, rs.Type)
			}
			seen[rs.Name+" "+rs.Type] = true
		}
		token = page.NextPageToken
	}
	for _, rs := range adds[2:] {
		if !seen[rs.Name+" A"] {
			t.Errorf("%s, in the zone throughout, was skipped by the listing", rs.Name)
		}
	}
}
