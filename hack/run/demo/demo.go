// Package demo is what `make run` seeds a local control plane with (hack/run): two Gateways
// standing for two clusters, one in Ireland (the default geo) and one in the US, each with a
// loadbalanced DNSPolicy publishing one hostname, and the geo database the embedded DNS server
// locates clients with. It is a package of its own so that tests outside hack/run (the answers
// kubectl dns explain prints for the demo) build exactly this demo.
package demo

import (
	dnsv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
)

const (
	// Namespace holds the Gateways, their policies and the provider Secret.
	Namespace = "dnspolicy-demo"
	// Zone is the zone the embedded DNS server serves.
	Zone = "demo.example.com"
	// Host is the hostname of every Gateway's listener.
	Host = "api.demo.example.com"
	// Listener is the name of that listener.
	Listener = "api"
	// Weight is the weight of every policy's loadbalancing.
	Weight = 120
)

// Network is one client network of the demo geo database.
type Network struct{ CIDR, Client, Country, Continent string }

// Networks are the three documentation ranges of RFC 5737, which no real client has, so the
// database cannot be mistaken for real geo data.
var Networks = []Network{
	{"192.0.2.0/24", "192.0.2.1", "IE", "EU"},
	{"198.51.100.0/24", "198.51.100.1", "US", "NA"},
	{"203.0.113.0/24", "203.0.113.1", "DE", "EU"},
}

// Gateway is one demo Gateway: its address (private, unrouted) and its place in the tree.
type Gateway struct {
	Name, Address, Geo string
	DefaultGeo         bool
}

// Gateways are the two Gateways.
var Gateways = []Gateway{
	{"eu-gateway", "172.31.1.10", "IE", true},
	{"us-gateway", "172.31.2.10", "US", false},
}

// LoadBalancing is the loadBalancing of the Gateway's DNSPolicy.
func (g Gateway) LoadBalancing() *dnsv1.LoadBalancingSpec {
	return &dnsv1.LoadBalancingSpec{Weight: Weight, Geo: g.Geo, DefaultGeo: g.DefaultGeo}
}
