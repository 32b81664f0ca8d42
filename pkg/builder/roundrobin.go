package builder

import (
	"slices"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// RoundRobin returns what a record's load-balanced tree becomes where the DNS server answers every
// client alike (a backend that declares providers.Capabilities.NoRoutingPolicies, such as an RFC
// 2136 server): the union of the tree's leaves as one set at the host, in the simple strategy's
// shape (A for IPv4 leaves, AAAA for IPv6 leaves, a CNAME to the gateways' hostnames only when there
// is no address), which is what a resolver gets from a round robin over the leaves. Publishing the
// tree's geo and weighted sets as plain sets instead would answer with one branch for all of it.
//
// Leaves are found by following CNAMEs from host through the record's own names: the addresses of
// the A and AAAA records reached, and the targets of the CNAMEs reached that name no record of the
// set (a gateway's hostname), across every geo. A leaf reached only through sets of weight 0 is left
// out, as a weighted answer would leave it out, unless every leaf is. TTLs are the leaves' shortest.
//
// Endpoints that are no part of the tree and carry no routing property (written by hand beside it)
// are kept as they are. A record without weighted or geo sets is returned unchanged, with false.
// The input is not changed.
func RoundRobin(host string, endpoints []*v1alpha1.Endpoint) ([]*v1alpha1.Endpoint, bool) {
	if !slices.ContainsFunc(endpoints, routed) {
		return endpoints, false
	}
	host = v1alpha1.NormalizeName(host)
	byName := map[string][]*v1alpha1.Endpoint{}
	for _, ep := range endpoints {
		name := v1alpha1.NormalizeName(ep.DNSName)
		byName[name] = append(byName[name], ep)
	}

	var (
		weighted, zero leafSet // leaves reached through a positive weight (or none), and only through 0
		seen           = map[string]bool{}
		ttl            v1alpha1.TTL
	)
	// walk visits name, reached through sets of weight 0 only when zeroPath.
	var walk func(name string, zeroPath bool)
	walk = func(name string, zeroPath bool) {
		key := name
		if zeroPath {
			key += "\x00zero"
		}
		if seen[key] {
			return
		}
		seen[key] = true
		for _, ep := range byName[name] {
			z := zeroPath
			if w, ok := ep.GetProviderSpecific(v1alpha1.ProviderSpecificWeight); ok && w == "0" {
				z = true
			}
			set := &weighted
			if z {
				set = &zero
			}
			for _, t := range ep.Targets {
				switch ep.RecordType {
				case v1alpha1.RecordTypeA, v1alpha1.RecordTypeAAAA:
					set.add(ep.RecordType, t)
				case v1alpha1.RecordTypeCNAME:
					if target := v1alpha1.NormalizeName(t); len(byName[target]) > 0 {
						walk(target, z)
						continue
					}
					set.add(v1alpha1.RecordTypeCNAME, v1alpha1.NormalizeName(t))
				default:
					continue
				}
				if ep.RecordTTL > 0 && (ttl == 0 || ep.RecordTTL < ttl) {
					ttl = ep.RecordTTL
				}
			}
		}
	}
	walk(host, false)
	leaves := weighted
	if leaves.empty() {
		leaves = zero
	}
	if ttl == 0 {
		ttl = DefaultTTL
	}

	var out []*v1alpha1.Endpoint
	reached := func(name string) bool { return seen[name] || seen[name+"\x00zero"] }
	for _, ep := range endpoints {
		if !reached(v1alpha1.NormalizeName(ep.DNSName)) && !routed(ep) {
			out = append(out, ep)
		}
	}
	t := targets{ipv4: leaves.a, ipv6: leaves.aaaa, hostnames: leaves.cname}
	for _, s := range []*[]string{&t.ipv4, &t.ipv6, &t.hostnames} {
		*s = slices.Compact(slices.Sorted(slices.Values(*s)))
	}
	if !t.empty() {
		for _, ep := range simple(host, t) {
			ep.RecordTTL = ttl
			out = append(out, ep)
		}
	}
	sortEndpoints(out)
	return out, true
}

// routed reports whether an endpoint is a weighted or geo set.
func routed(ep *v1alpha1.Endpoint) bool {
	_, weight := ep.GetProviderSpecific(v1alpha1.ProviderSpecificWeight)
	_, geo := ep.GetProviderSpecific(v1alpha1.ProviderSpecificGeoCode)
	return ep.SetIdentifier != "" || weight || geo
}

// leafSet collects leaf targets by record type.
type leafSet struct{ a, aaaa, cname []string }

func (s *leafSet) add(recordType, target string) {
	switch recordType {
	case v1alpha1.RecordTypeA:
		s.a = append(s.a, target)
	case v1alpha1.RecordTypeAAAA:
		s.aaaa = append(s.aaaa, target)
	default:
		s.cname = append(s.cname, target)
	}
}

func (s leafSet) empty() bool { return len(s.a)+len(s.aaaa)+len(s.cname) == 0 }
