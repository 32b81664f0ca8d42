package route53

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	r53 "github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
)

func weighted(name, id string, weight, ttl int64, values ...string) *types.ResourceRecordSet {
	rs := set(name, types.RRTypeA, values...)
	rs.SetIdentifier, rs.Weight, rs.TTL = aws.String(id), aws.Int64(weight), aws.Int64(ttl)
	return rs
}

// expectInvalidChangeBatch checks that err is Route 53's InvalidChangeBatch with exactly the
// message given (Route 53 brackets the list of problems).
func expectInvalidChangeBatch(t *testing.T, err error, message string) {
	t.Helper()
	var invalid *types.InvalidChangeBatch
	if !errors.As(err, &invalid) {
		t.Fatalf("got %v, want InvalidChangeBatch", err)
	}
	if got := invalid.ErrorMessage(); got != message {
		t.Errorf("InvalidChangeBatch message\n got %s\nwant %s", got, message)
	}
}

func TestDuplicateValueIsRefused(t *testing.T) {
	emu, c, zoneID := client(t, Options{RequestsPerSecond: -1})
	err := submit(t, c, zoneID, change(types.ChangeActionCreate, set("d.example.com", types.RRTypeA, "192.0.2.1", "192.0.2.2", "192.0.2.1")))
	expectInvalidChangeBatch(t, err, "[Duplicate Resource Record: '192.0.2.1']")
	if dump := fmt.Sprint(emu.Dump("example.com")); strings.Contains(dump, "d.example.com.") {
		t.Errorf("the refused set landed: %s", dump)
	}
}

// Schema failures are InvalidInput, not InvalidChangeBatch, with Route 53's messages, and they
// refuse the batch before its other problems are looked at.
func TestSchemaFailuresAreInvalidInput(t *testing.T) {
	emu, c, zoneID := client(t, Options{RequestsPerSecond: -1})
	existing := set("a.example.com", types.RRTypeA, "192.0.2.1")
	if err := submit(t, c, zoneID, change(types.ChangeActionCreate, existing)); err != nil {
		t.Fatal(err)
	}
	noTTL := set("n.example.com", types.RRTypeA, "192.0.2.1")
	noTTL.TTL = nil
	noValues := set("v.example.com.", types.RRTypeA)
	alias := &types.ResourceRecordSet{Name: aws.String("al.example.com."), Type: types.RRTypeA, TTL: aws.Int64(60),
		AliasTarget: &types.AliasTarget{HostedZoneId: aws.String(zoneID), DNSName: aws.String("a.example.com."), EvaluateTargetHealth: false}}
	noID := set("w.example.com", types.RRTypeA, "192.0.2.1")
	noID.Weight = aws.Int64(10)
	bothGeo := set("g.example.com", types.RRTypeA, "192.0.2.1")
	bothGeo.SetIdentifier = aws.String("eu")
	bothGeo.GeoLocation = &types.GeoLocation{ContinentCode: aws.String("EU"), CountryCode: aws.String("IE")}
	longContinent := set("g.example.com", types.RRTypeA, "192.0.2.1")
	longContinent.SetIdentifier = aws.String("default")
	longContinent.GeoLocation = &types.GeoLocation{ContinentCode: aws.String("Default")}
	heavy := weighted("h.example.com", "x", 256, 60, "192.0.2.1")
	exactlyOne := "Invalid request: Expected exactly one of [AliasTarget, all of [TTL, and ResourceRecords], or TrafficPolicyInstanceId], "
	for _, tc := range []struct {
		name   string
		action types.ChangeAction
		rs     *types.ResourceRecordSet
		want   string
	}{
		{"no TTL", types.ChangeActionCreate, noTTL,
			exactlyOne + "but found none in Change with [Action=CREATE, Name=n.example.com, Type=A, SetIdentifier=null]"},
		{"no values", types.ChangeActionUpsert, noValues,
			exactlyOne + "but found none in Change with [Action=UPSERT, Name=v.example.com., Type=A, SetIdentifier=null]"},
		{"alias with a TTL", types.ChangeActionCreate, alias,
			exactlyOne + "but found more than one in Change with [Action=CREATE, Name=al.example.com., Type=A, SetIdentifier=null]"},
		{"weight without SetIdentifier", types.ChangeActionUpsert, noID,
			"Invalid request: Missing field 'SetIdentifier' in Change with [Action=UPSERT, Name=w.example.com, Type=A, SetIdentifier=null]"},
		{"ContinentCode with CountryCode", types.ChangeActionCreate, bothGeo,
			"Invalid request: Specifying ContinentCode with CountryCode or SubdivisionCode is not allowed in Change with [Action=CREATE, Name=g.example.com, Type=A, SetIdentifier=eu]"},
		{"ContinentCode of 7 characters", types.ChangeActionCreate, longContinent,
			"Invalid XML ; cvc-length-valid: Value 'Default' with length = '7' is not facet-valid with respect to length '2' for type 'ContinentCode'."},
		{"weight above 255", types.ChangeActionCreate, heavy,
			"Invalid XML ; cvc-maxInclusive-valid: Value '256' is not facet-valid with respect to maxInclusive '255' for type 'ResourceRecordSetWeight'."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := emu.Dump("example.com")
			// The batch also re-creates an existing set: the schema failure is what Route 53 reports.
			err := submit(t, c, zoneID, change(types.ChangeActionCreate, existing), change(tc.action, tc.rs))
			var invalid *types.InvalidInput
			var batch *types.InvalidChangeBatch
			switch {
			case errors.As(err, &batch):
				t.Fatalf("got InvalidChangeBatch %v, want InvalidInput", err)
			case !errors.As(err, &invalid):
				t.Fatalf("got %v, want InvalidInput", err)
			case invalid.ErrorMessage() != tc.want:
				t.Errorf("InvalidInput message\n got %s\nwant %s", invalid.ErrorMessage(), tc.want)
			}
			if after := emu.Dump("example.com"); !slices.Equal(before, after) {
				t.Errorf("a refused batch changed the zone: %v -> %v", before, after)
			}
		})
	}
}

func TestWeightedSetsShareOneTTL(t *testing.T) {
	emu, c, zoneID := client(t, Options{RequestsPerSecond: -1})
	if err := submit(t, c, zoneID, change(types.ChangeActionCreate, weighted("w.example.com", "a", 10, 60, "192.0.2.1"))); err != nil {
		t.Fatal(err)
	}
	// A member with another TTL beside one the batch leaves alone.
	err := submit(t, c, zoneID, change(types.ChangeActionCreate, weighted("w.example.com", "b", 20, 300, "192.0.2.2")))
	expectInvalidChangeBatch(t, err, "[RRSet with DNS name w.example.com. and type A, SetIdentifier b cannot be created as weighted sets must contain the same TTL.]")
	// Two new members that disagree with each other.
	err = submit(t, c, zoneID,
		change(types.ChangeActionCreate, weighted("x.example.com", "a", 10, 60, "192.0.2.1")),
		change(types.ChangeActionCreate, weighted("x.example.com", "b", 10, 120, "192.0.2.2")))
	expectInvalidChangeBatch(t, err, "[RRSet with DNS name x.example.com. and type A, SetIdentifier b cannot be created as weighted sets must contain the same TTL.]")
	// Changing the TTL of the whole group in one batch is how it is done.
	if err := submit(t, c, zoneID,
		change(types.ChangeActionDelete, weighted("w.example.com", "a", 10, 60, "192.0.2.1")),
		change(types.ChangeActionCreate, weighted("w.example.com", "a", 10, 300, "192.0.2.1")),
		change(types.ChangeActionCreate, weighted("w.example.com", "b", 20, 300, "192.0.2.2"))); err != nil {
		t.Fatalf("moving every member to one new TTL: %v", err)
	}
	want := []string{"w.example.com. A 300 set=a weight=10 192.0.2.1", "w.example.com. A 300 set=b weight=20 192.0.2.2"}
	if got := emu.Dump("example.com"); !slices.Equal(got[2:], want) {
		t.Errorf("zone holds %v, want the apex and %v", got, want)
	}
}

func listNames(t *testing.T, c *r53.Client, in *r53.ListResourceRecordSetsInput) ([]string, int) {
	t.Helper()
	var names []string
	pages := 0
	paginator := r53.NewListResourceRecordSetsPaginator(c, in)
	for paginator.HasMorePages() {
		page, err := paginator.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, rs := range page.ResourceRecordSets {
			entry := aws.ToString(rs.Name) + "/" + string(rs.Type)
			if rs.SetIdentifier != nil {
				entry += "/" + *rs.SetIdentifier
			}
			names = append(names, entry)
		}
	}
	return names, pages
}

// Route 53 lists by name with the labels reversed and the trailing dot kept, compared as ASCII, then
// by type; pages resume where the one before stopped, inside a name or a weighted group too.
func TestRecordSetsPageInRoute53Order(t *testing.T) {
	_, c, zoneID := client(t, Options{RequestsPerSecond: -1})
	var changes []types.Change
	for _, name := range []string{"c.example.com", "a.b.example.com", "*.example.com", "a.example.com", "b.example.com", "a-b.example.com"} {
		changes = append(changes, change(types.ChangeActionCreate, set(name, types.RRTypeA, "192.0.2.1")))
	}
	changes = append(changes, change(types.ChangeActionCreate, set("a.example.com", types.RRTypeTxt, `"t"`)),
		change(types.ChangeActionCreate, set("a.example.com", types.RRTypeAaaa, "2001:db8::1")))
	for _, id := range []string{"w3", "w1", "w2"} {
		changes = append(changes, change(types.ChangeActionCreate, weighted("w.example.com", id, 1, 60, "192.0.2.1")))
	}
	if err := submit(t, c, zoneID, changes...); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"example.com./NS", "example.com./SOA", // com.example.
		`\052.example.com./A`,                                           // com.example.\052.
		"a-b.example.com./A",                                            // com.example.a-b. ("-" sorts before ".")
		"a.example.com./A", "a.example.com./AAAA", "a.example.com./TXT", // com.example.a.
		"b.example.com./A", "a.b.example.com./A", "c.example.com./A",
		"w.example.com./A/w1", "w.example.com./A/w2", "w.example.com./A/w3",
	}
	for _, size := range []int32{1, 2, 3, 300} {
		got, pages := listNames(t, c, &r53.ListResourceRecordSetsInput{HostedZoneId: aws.String(zoneID), MaxItems: aws.Int32(size)})
		if !slices.Equal(got, want) {
			t.Errorf("pages of %d listed\n %v, want\n %v", size, got, want)
		}
		if wantPages := (len(want) + int(size) - 1) / int(size); pages != wantPages {
			t.Errorf("pages of %d: %d pages, want %d", size, pages, wantPages)
		}
	}
	for _, tc := range []struct {
		name, rrType string
		want         string
	}{
		{"a.example.com", "", "a.example.com./A"}, // not a-b, which sorts before it
		{"a.example.com", "TXT", "a.example.com./TXT"},
		{"a.example.com", "NS", "a.example.com./TXT"}, // the first type >= NS at that name
		{"aa.example.com", "", "b.example.com./A"},    // a name not there: the next one
	} {
		out, err := c.ListResourceRecordSets(t.Context(), &r53.ListResourceRecordSetsInput{HostedZoneId: aws.String(zoneID),
			StartRecordName: aws.String(tc.name), StartRecordType: types.RRType(tc.rrType), MaxItems: aws.Int32(1)})
		if err != nil {
			t.Fatal(err)
		}
		if got := aws.ToString(out.ResourceRecordSets[0].Name) + "/" + string(out.ResourceRecordSets[0].Type); got != tc.want {
			t.Errorf("from name %s type %q: first %s, want %s", tc.name, tc.rrType, got, tc.want)
		}
	}
}

func TestStartRecordTypeNeedsStartRecordName(t *testing.T) {
	_, c, zoneID := client(t, Options{RequestsPerSecond: -1})
	_, err := c.ListResourceRecordSets(t.Context(), &r53.ListResourceRecordSetsInput{HostedZoneId: aws.String(zoneID), StartRecordType: types.RRTypeA})
	var invalid *types.InvalidInput
	if !errors.As(err, &invalid) {
		t.Errorf("StartRecordType without StartRecordName: got %v, want InvalidInput", err)
	}
}

func TestListHostedZonesByName(t *testing.T) {
	emu, c, first := client(t, Options{RequestsPerSecond: -1})
	second := emu.AddZone("example.com") // an account may hold two zones of one name
	for _, name := range []string{"example.org", "b.a.example.net", "a.example.net", "a-b.example.net"} {
		emu.AddZone(name)
	}
	want := []string{"example.com./" + first, "example.com./" + second, "a-b.example.net./", "a.example.net./", "b.a.example.net./", "example.org./"}
	got := func(zones []types.HostedZone) []string {
		var out []string
		for _, z := range zones {
			entry := aws.ToString(z.Name) + "/"
			if aws.ToString(z.Name) == "example.com." {
				entry += strings.TrimPrefix(aws.ToString(z.Id), "/hostedzone/")
			}
			out = append(out, entry)
		}
		return out
	}
	var listed []string
	in := &r53.ListHostedZonesByNameInput{MaxItems: aws.Int32(2)}
	for pages := 0; ; pages++ {
		out, err := c.ListHostedZonesByName(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(out.DNSName) != aws.ToString(in.DNSName) || aws.ToString(out.HostedZoneId) != aws.ToString(in.HostedZoneId) {
			t.Errorf("page %d echoes dnsname %q hostedzoneid %q, want the request's %q %q", pages,
				aws.ToString(out.DNSName), aws.ToString(out.HostedZoneId), aws.ToString(in.DNSName), aws.ToString(in.HostedZoneId))
		}
		listed = append(listed, got(out.HostedZones)...)
		if !out.IsTruncated {
			if out.NextDNSName != nil || out.NextHostedZoneId != nil {
				t.Errorf("the last page names a next zone %v %v", out.NextDNSName, out.NextHostedZoneId)
			}
			break
		}
		in = &r53.ListHostedZonesByNameInput{MaxItems: aws.Int32(2), DNSName: out.NextDNSName, HostedZoneId: out.NextHostedZoneId}
	}
	if !slices.Equal(listed, want) {
		t.Errorf("listed %v, want %v", listed, want)
	}
	out, err := c.ListHostedZonesByName(t.Context(), &r53.ListHostedZonesByNameInput{DNSName: aws.String("example.net"), MaxItems: aws.Int32(1)})
	if err != nil {
		t.Fatal(err)
	}
	if g := got(out.HostedZones); !slices.Equal(g, []string{"a-b.example.net./"}) {
		t.Errorf("from dnsname example.net: %v, want the first zone after it, a-b.example.net.", g)
	}
	_, err = c.ListHostedZonesByName(t.Context(), &r53.ListHostedZonesByNameInput{HostedZoneId: aws.String(first)})
	var invalid *types.InvalidInput
	if !errors.As(err, &invalid) {
		t.Errorf("hostedzoneid without dnsname: got %v, want InvalidInput", err)
	}
	if n := emu.Calls()[OpListHostedZonesByName]; n != 5 {
		t.Errorf("Calls()[%s] = %d, want 5", OpListHostedZonesByName, n)
	}
}
