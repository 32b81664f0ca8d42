//go:build integration

// Package dnssec proves the embedded server's signed answers the way the world will judge them:
// BIND and Unbound validating from a signed parent that holds the zone's DS, delv, Zonemaster,
// and a proxy that damages answers on their way. The zone is the make-run demo's (its loadbalanced
// host, geo answers for three client networks), plus a delegated child with no DS.
package dnssec

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"k8s.io/utils/ptr"
	gatewayapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/hack/run/demo"
	"github.com/dnspolicy/dnspolicy-controller/pkg/builder"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnssec"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnsserver"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/test/bind"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
	"github.com/dnspolicy/dnspolicy-controller/test/geodb"
	"github.com/dnspolicy/dnspolicy-controller/test/resolver"
)

const (
	parentZone = "example.com."
	// child is delegated by the demo zone to a server of its own, unsigned: an insecure delegation.
	child     = "child." + demo.Zone + "."
	childHost = "www." + child
	childAddr = "192.0.2.99"
	// clusterID stands for the kube-system namespace's UID of the demo's one cluster.
	clusterID = "6f2c1d4e-8a3b-4c5d-9e7f-0a1b2c3d4e5f"
)

// The addresses the zone data gives the name servers (glue, the zone's own NS address), as
// Zonemaster sees them; resolvers reach the servers through their forward and stub zones instead.
var (
	nsAddress      = netip.MustParseAddr("127.0.0.10")
	childNSAddress = netip.MustParseAddr("127.0.0.12")
)

// demoEndpoints is what the demo's authoritative record holds after `make run`: both Gateways'
// loadbalanced trees for the host (shared records once), each record's ownership claim, and the
// delegation of child.
func demoEndpoints(t *testing.T) []*v1alpha1.Endpoint {
	t.Helper()
	var out []*v1alpha1.Endpoint
	published := map[v1alpha1.EndpointKey]bool{}
	for _, g := range demo.Gateways {
		eps, err := builder.Build(builder.Input{
			Hostname:    demo.Host,
			Addresses:   []gatewayapiv1.GatewayStatusAddress{{Type: ptr.To(gatewayapiv1.IPAddressType), Value: g.Address}},
			GatewayName: g.Name, GatewayNamespace: demo.Namespace, ClusterID: clusterID, LoadBalancing: g.LoadBalancing(),
		})
		if err != nil {
			t.Fatal(err)
		}
		owner := hash.Base36(g.Name, 8)
		for _, ep := range eps {
			if !published[ep.Key()] {
				published[ep.Key()] = true
				out = append(out, ep)
			}
			claim, err := registry.NewTXT(owner, ep)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, claim)
		}
	}
	return append(out,
		v1alpha1.NewEndpoint(strings.TrimSuffix(child, "."), "NS", 300, "ns."+strings.TrimSuffix(child, ".")),
		v1alpha1.NewEndpoint("ns."+strings.TrimSuffix(child, "."), "A", 300, childNSAddress.String()))
}

// keys makes the zone's keys with pkg/dnssec as the key controller does: one CSK, or a KSK and a
// ZSK, all active, the parent's DS pointing at the key that signs the DNSKEY set.
func keys(t *testing.T, alg uint8, split bool) *dnssec.KeySet {
	t.Helper()
	gen := func(role dnssec.Role) dnssec.Key {
		k, err := dnssec.Generate(demo.Zone, alg, role)
		if err != nil {
			t.Fatal(err)
		}
		k.State, k.WantDS = dnssec.Active, role != dnssec.ZSK
		return k
	}
	if split {
		return &dnssec.KeySet{Keys: []dnssec.Key{gen(dnssec.KSK), gen(dnssec.ZSK)}}
	}
	return &dnssec.KeySet{Keys: []dnssec.Key{gen(dnssec.CSK)}}
}

// world is our server signing the demo zone, its signed parent holding the DS, and the child's
// unsigned server.
type world struct {
	ours, parent, child netip.AddrPort
	anchor              []dns.RR // the parent's key's DS: where the resolvers' trust starts
	ds                  []dns.RR // the demo zone's DS, as the parent holds it
}

func startWorld(t *testing.T, ks *dnssec.KeySet) world {
	t.Helper()
	var networks []geodb.Network
	for _, n := range demo.Networks {
		networks = append(networks, geodb.Network{CIDR: n.CIDR, Country: n.Country, Continent: n.Continent})
	}
	geo := filepath.Join(t.TempDir(), "geo.mmdb")
	if err := geodb.Write(geo, networks...); err != nil {
		t.Fatal(err)
	}
	s, err := dnsserver.New(dnsserver.Options{Addr: freeport.Addr(t), GeoIPDatabase: geo,
		NameserverAddresses: map[string][]netip.Addr{"ns1." + demo.Zone: {nsAddress}}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.SetZone(demo.Zone, dnsserver.ZoneData{Endpoints: demoEndpoints(t), Nameservers: []string{"ns1." + demo.Zone}, Signing: ks})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Skipped) > 0 {
		t.Fatalf("the demo zone was not served whole: %q", st.Skipped)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	w := world{ours: s.Addr()}
	for _, k := range ks.WantDS() {
		w.ds = append(w.ds, k.DS())
	}
	// The DS is computed from the DNSKEY our server serves, as the zone's operator would hand it in.
	if served := resolver.DS(t, w.ours, demo.Zone); len(served) != len(w.ds) || served[0].String() != w.ds[0].String() {
		t.Fatalf("our server's SEP keys give DS %v, the key set wants %v", served, w.ds)
	}
	w.parent, w.anchor = resolver.StartParent(t, parentZone,
		resolver.Delegation{Zone: demo.Zone, NS: "ns1." + demo.Zone, Address: nsAddress, DS: w.ds})
	w.child = netip.MustParseAddrPort(freeport.Addr(t))
	bind.StartPrimary(t, w.child.String(), child, fmt.Sprintf("$TTL 300\n@ SOA ns hostmaster 1 3600 600 86400 60\n@ NS ns\nns A %s\nwww A %s\n", childNSAddress, childAddr))
	return w
}

// config sends the parent, the demo zone (to demoServer: ours, or a proxy in front of it) and the
// child to their servers, trusting the parent's key.
func (w world) config(demoServer netip.AddrPort, ecs bool) resolver.Config {
	return resolver.Config{Anchors: w.anchor, ECS: ecs, Zones: []resolver.Zone{
		{Name: parentZone, Server: w.parent}, {Name: demo.Zone, Server: demoServer}, {Name: child, Server: w.child}}}
}

// keyShapes are the key sets the tests sign with: each algorithm, with a CSK and with a KSK and ZSK.
var keyShapes = []struct {
	name  string
	alg   uint8
	split bool
}{
	{"ECDSAP256SHA256/CSK", dnssec.ECDSAP256SHA256, false},
	{"ECDSAP256SHA256/KSK+ZSK", dnssec.ECDSAP256SHA256, true},
	{"ED25519/CSK", dnssec.ED25519, false},
	{"ED25519/KSK+ZSK", dnssec.ED25519, true},
}
