package builder

import (
	"slices"
	"testing"

	gatewayapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

func build(t *testing.T, host string, weight int, addresses ...gatewayapiv1.GatewayStatusAddress) []*v1alpha1.Endpoint {
	t.Helper()
	eps, err := Build(Input{Hostname: host, Addresses: addresses, GatewayName: "gw", GatewayNamespace: "ns",
		ClusterID: kuadrantClusterID, LoadBalancing: lb("GEO-EU", weight, true)})
	if err != nil {
		t.Fatal(err)
	}
	return eps
}

func lines(eps []*v1alpha1.Endpoint) []string {
	var out []string
	for _, ep := range eps {
		out = append(out, ep.String())
	}
	return out
}

func TestRoundRobin(t *testing.T) {
	for _, c := range []struct {
		name      string
		host      string
		endpoints []*v1alpha1.Endpoint
		want      []string
	}{
		{
			name: "a tree of addresses becomes the host's A and AAAA",
			host: "app.example.com",
			endpoints: build(t, "app.example.com", 120,
				ipAddr("192.0.2.2"), ipAddr("192.0.2.1"), ipAddr("2001:db8::1"), hostAddr("lb.example.net")),
			// Addresses win over the hostname, as in the simple strategy.
			want: []string{"app.example.com 60 IN A 192.0.2.1,192.0.2.2", "app.example.com 60 IN AAAA 2001:db8::1"},
		},
		{
			name:      "a tree of hostnames becomes the host's CNAME",
			host:      "*.apps.example.com",
			endpoints: build(t, "*.apps.example.com", 120, hostAddr("lb.example.net")),
			want:      []string{"*.apps.example.com 60 IN CNAME lb.example.net"},
		},
		{
			name: "the leaves of every geo and weight are in the union; those of weight 0 only when all are",
			host: "app.example.com",
			endpoints: append(append(build(t, "app.example.com", 120, ipAddr("192.0.2.1")),
				// Another geo's subtree and a leaf of weight 0, as other clusters' records would
				// hold them (one record holding them is how a hand-written tree looks).
				v1alpha1.NewEndpoint("klb.app.example.com", v1alpha1.RecordTypeCNAME, 300, "us.klb.app.example.com").
					WithSetIdentifier("US").WithProviderSpecific(v1alpha1.ProviderSpecificGeoCode, "US"),
				v1alpha1.NewEndpoint("us.klb.app.example.com", v1alpha1.RecordTypeCNAME, 60, "us1.klb.app.example.com").
					WithSetIdentifier("us1").WithProviderSpecific(v1alpha1.ProviderSpecificWeight, "10"),
				v1alpha1.NewEndpoint("us.klb.app.example.com", v1alpha1.RecordTypeCNAME, 60, "us2.klb.app.example.com").
					WithSetIdentifier("us2").WithProviderSpecific(v1alpha1.ProviderSpecificWeight, "0"),
				v1alpha1.NewEndpoint("us1.klb.app.example.com", v1alpha1.RecordTypeA, 30, "198.51.100.1"),
				v1alpha1.NewEndpoint("us2.klb.app.example.com", v1alpha1.RecordTypeA, 60, "198.51.100.2")),
				// Beside the tree, by hand: kept.
				v1alpha1.NewEndpoint("txt.app.example.com", v1alpha1.RecordTypeTXT, 60, "hello")),
			want: []string{"app.example.com 30 IN A 192.0.2.1,198.51.100.1", "txt.app.example.com 60 IN TXT hello"},
		},
		{
			name:      "leaves all of weight 0 are all published",
			host:      "app.example.com",
			endpoints: build(t, "app.example.com", 0, ipAddr("192.0.2.1")),
			want:      []string{"app.example.com 60 IN A 192.0.2.1"},
		},
		{
			name:      "a record without routing is left alone",
			host:      "app.example.com",
			endpoints: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("app.example.com", v1alpha1.RecordTypeA, 60, "192.0.2.1")},
			want:      []string{"app.example.com 60 IN A 192.0.2.1"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := lines(c.endpoints)
			got, flattened := RoundRobin(c.host, c.endpoints)
			if g := lines(got); !slices.Equal(g, c.want) {
				t.Errorf("RoundRobin =\n%v\nwant\n%v", g, c.want)
			}
			if routedIn := slices.ContainsFunc(c.endpoints, routed); flattened != routedIn {
				t.Errorf("flattened = %v, want %v", flattened, routedIn)
			}
			if slices.ContainsFunc(got, routed) {
				t.Errorf("the result holds a weighted or geo set: %v", lines(got))
			}
			if !slices.Equal(lines(c.endpoints), before) {
				t.Errorf("the input changed")
			}
		})
	}
}
