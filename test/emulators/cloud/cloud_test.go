package cloud

import (
	"strings"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// Each cloud's Secret reaches its emulator through the backend: a record written through the
// provider shows in Dump and reads back, and the write is counted as one.
func TestEachCloudIsReachableThroughItsSecret(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			c, err := Start(name)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			const zoneName = "reach.example.com"
			c.AddZone(zoneName)
			c.AddHiddenZone("hidden.example.com")
			backend, err := c.Constructor()(t.Context(), c.Secret("ns", "creds"), providers.Env{Namespace: "ns"})
			if err != nil {
				t.Fatal(err)
			}
			p := backend.Zones
			zones, err := p.Zones(t.Context())
			if err != nil || len(zones) != 1 || zones[0].DNSName != zoneName {
				t.Fatalf("Zones() = %v, %v; want only %s", zones, err, zoneName)
			}
			ep := v1alpha1.NewEndpoint("www."+zoneName, "A", 60, "192.0.2.1")
			if err := p.Apply(t.Context(), zones[0], nil, &providers.Changes{Create: []*v1alpha1.Endpoint{ep}}); err != nil {
				t.Fatal(err)
			}
			if dump := strings.Join(c.Dump(zoneName), "\n"); !strings.Contains(dump, "192.0.2.1") {
				t.Errorf("Dump does not show the record:\n%s", dump)
			}
			eps, err := c.ReadBack(t.Context(), zoneName)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, got := range eps {
				found = found || (got.DNSName == "www."+zoneName && got.RecordType == "A")
			}
			if !found {
				t.Errorf("ReadBack = %v, want www.%s A", eps, zoneName)
			}
			if c.Writes() < 1 {
				t.Errorf("no write counted: %s", FormatCalls(c.Calls()))
			}
		})
	}
}
