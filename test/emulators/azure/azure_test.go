package azure

import (
	"fmt"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/dns/armdns"
)

// Listings of one zone are independent, as Azure's nextLink paging keeps them: two interleaved
// listings each see every record set once, and a listing abandoned after its first page hands none
// of its pages to the next one.
func TestListingsOfOneZoneAreIndependent(t *testing.T) {
	const sub, rg, zoneName = "00000000-0000-0000-0000-000000000001", "rg", "pages.example.com"
	s := NewStore(sub)
	s.AddZone(rg, zoneName)
	client, err := armdns.NewRecordSetsClient(sub, &azfake.TokenCredential{},
		&arm.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: s.Transport()}})
	if err != nil {
		t.Fatal(err)
	}
	const n = pageSize + 50 // two pages with the apex SOA and NS, within the zone's writes per minute
	for i := range n {
		set := armdns.RecordSet{Properties: &armdns.RecordSetProperties{TTL: to.Ptr[int64](60),
			ARecords: []*armdns.ARecord{{IPv4Address: to.Ptr("192.0.2.1")}}}}
		if _, err := client.CreateOrUpdate(t.Context(), rg, zoneName, fmt.Sprintf("h%03d", i), armdns.RecordTypeA, set, nil); err != nil {
			t.Fatal(err)
		}
	}
	want := n + 2

	abandoned := client.NewListAllByDNSZonePager(rg, zoneName, nil)
	if _, err := abandoned.NextPage(t.Context()); err != nil {
		t.Fatal(err)
	}

	pagers := []*runtime.Pager[armdns.RecordSetsClientListAllByDNSZoneResponse]{
		client.NewListAllByDNSZonePager(rg, zoneName, nil), client.NewListAllByDNSZonePager(rg, zoneName, nil),
	}
	seen := []map[string]int{{}, {}}
	for pagers[0].More() || pagers[1].More() {
		for i, pager := range pagers {
			if !pager.More() {
				continue
			}
			page, err := pager.NextPage(t.Context())
			if err != nil {
				t.Fatalf("listing %d: %v", i, err)
			}
			for _, rs := range page.Value {
				seen[i][*rs.Name+" "+*rs.Type]++
			}
		}
	}
	for i, names := range seen {
		if len(names) != want {
			t.Errorf("listing %d saw %d record sets, want %d", i, len(names), want)
		}
		for name, count := range names {
			if count != 1 {
				t.Errorf("listing %d saw %s %d times", i, name, count)
			}
		}
	}
}
