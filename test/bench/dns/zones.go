package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/test/geodb"
)

// staticZone is hosts A records, a CNAME per ten hosts, and the address of the zone's name server
// (BIND refuses to load a zone whose in-zone NS has none).
func staticZone() []*v1alpha1.Endpoint {
	eps := []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("ns1."+zoneName, "A", 300, "127.0.0.1")}
	for i := range hosts {
		eps = append(eps, v1alpha1.NewEndpoint(fmt.Sprintf("h%d.%s", i, zoneName), "A", 300,
			fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)))
	}
	for i := 0; i < hosts; i += 10 {
		eps = append(eps, v1alpha1.NewEndpoint(fmt.Sprintf("c%d.%s", i, zoneName), "CNAME", 300, fmt.Sprintf("h%d.%s", i, zoneName)))
	}
	return eps
}

// loadbalancedZone is a Kuadrant loadbalanced tree for api.<zone>: IE, US and a default geo, two
// weighted gateways behind each geo.
func loadbalancedZone() []*v1alpha1.Endpoint {
	h := "api." + zoneName
	eps := []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(h, "CNAME", 300, "klb."+h)}
	for _, g := range []struct{ id, code, target string }{{"IE", "IE", "ie"}, {"US", "US", "us"}, {"default", "*", "ie"}} {
		eps = append(eps, v1alpha1.NewEndpoint("klb."+h, "CNAME", 300, g.target+".klb."+h).
			WithSetIdentifier(g.id).WithProviderSpecific(v1alpha1.ProviderSpecificGeoCode, g.code))
	}
	for _, geo := range []string{"ie", "us"} {
		for i, w := range []string{"120", "60"} {
			leaf := fmt.Sprintf("%s%d.klb.%s", geo, i, h)
			eps = append(eps,
				v1alpha1.NewEndpoint(geo+".klb."+h, "CNAME", 60, leaf).WithSetIdentifier(leaf).WithProviderSpecific(v1alpha1.ProviderSpecificWeight, w),
				v1alpha1.NewEndpoint(leaf, "A", 60, fmt.Sprintf("172.31.%d.%d", len(geo), i+1)))
		}
	}
	return eps
}

func writeQueries(path string, eps []*v1alpha1.Endpoint) error {
	var b strings.Builder
	// A fixed shuffle, so every server gets the same queries in the same order.
	r := rand.New(rand.NewPCG(1, 2))
	order := r.Perm(len(eps))
	for _, i := range order {
		fmt.Fprintf(&b, "%s A\n", eps[i].DNSName)
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

func writeZoneFile(path string, eps []*v1alpha1.Endpoint) error {
	var b strings.Builder
	fmt.Fprintf(&b, "$ORIGIN %s.\n$TTL 300\n", zoneName)
	fmt.Fprintf(&b, "@ IN SOA ns1.%s. hostmaster.%s. 1 3600 600 86400 60\n@ IN NS ns1.%s.\n", zoneName, zoneName, zoneName)
	for _, ep := range eps {
		target := ep.Targets[0]
		if ep.RecordType == "CNAME" {
			target += "."
		}
		fmt.Fprintf(&b, "%s. %d IN %s %s\n", ep.DNSName, ep.RecordTTL, ep.RecordType, target)
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

func writeGeoDB(path string) error {
	return geodb.Write(path, geodb.Network{CIDR: "192.0.2.0/24", Country: "IE", Continent: "EU"},
		geodb.Network{CIDR: "198.51.100.0/24", Country: "US", Continent: "NA"})
}
