//go:build integration

package peers

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/test/bind"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
)

// A real BIND holding the parent zone answers the NS set as a referral with glue, and a name of the
// parent zone outside the delegation as authoritative data: Lookup finds all three servers.
func TestLookupThroughBIND(t *testing.T) {
	addr := freeport.Addr(t)
	db := `$TTL 60
@ IN SOA ns.example.com. hostmaster.example.com. 1 60 60 600 60
@ IN NS ns.example.com.
ns IN A 127.0.0.1
gslb IN NS ns1.gslb.example.com.
gslb IN NS ns2.gslb.example.com.
gslb IN NS ns3.example.com.
ns1.gslb IN A 127.0.0.2
ns2.gslb IN A 127.0.0.3
ns2.gslb IN AAAA ::1
ns3 IN A 127.0.0.4
`
	bind.StartPrimary(t, addr, "example.com", db)
	d := Discovery{Zone: testZone, Servers: []string{addr}, Port: 26199}
	want := []string{"127.0.0.2:26199", "127.0.0.3:26199", "127.0.0.4:26199", "[::1]:26199"}
	var addrs []string
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if addrs, _, err = Lookup(context.Background(), d, time.Second); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond) // BIND loading its zone
	}
	if err != nil || !slices.Equal(addrs, want) {
		t.Fatalf("Lookup through BIND: %v, %v; want %v", addrs, err, want)
	}
}
