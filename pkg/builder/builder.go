// Package builder turns one Gateway listener, the Gateway's addresses and a DNSPolicy into the
// endpoints of that listener's DNSRecord.
//
// The shapes are Kuadrant's, name for name: clusters running Kuadrant and clusters running this
// controller publish into one shared zone, and a weighted or geo set only works when every owner
// names it identically. Each cluster contributes its own leaves under names derived from the cluster
// ID and the Gateway, and the same upper CNAMEs, which the zone merges across owners.
package builder

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	gatewayapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnspolicyv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/geo"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
)

const (
	// DefaultTTL is the TTL of simple records and of the leaves of the load-balanced tree: they change
	// when a Gateway's addresses or health change, so caches must let go quickly.
	DefaultTTL v1alpha1.TTL = 60
	// DefaultCNAMETTL is the TTL of the upper CNAMEs of the load-balanced tree, which change only with
	// the policy.
	DefaultCNAMETTL v1alpha1.TTL = 300

	// DefaultSetIdentifier identifies the catch-all geo set, published by the cluster whose policy has
	// defaultGeo.
	DefaultSetIdentifier = "default"

	// loadBalancerLabel starts the names of the load-balanced tree below the listener hostname.
	loadBalancerLabel = "klb"
	// shortCodeLength is the length of the hashes in a leaf name.
	shortCodeLength = 6
	// maxLabelLength is the longest DNS label.
	maxLabelLength = 63
)

// Input is what one listener's endpoints are built from.
type Input struct {
	// Hostname is the listener's hostname; it may start with "*.".
	Hostname string
	// Addresses are the Gateway's status.addresses. A nil type means IPAddress, as in Gateway API.
	// Addresses of other types (NamedAddress, implementation-specific ones) have no meaning in DNS and
	// are left out.
	Addresses []gatewayapiv1.GatewayStatusAddress
	// GatewayName and GatewayNamespace name the Gateway; they tell apart this cluster's Gateways in
	// the leaf name.
	GatewayName      string
	GatewayNamespace string
	// ClusterID identifies this cluster among those sharing the zone: the UID of its kube-system
	// Namespace, unhashed. Required with LoadBalancing.
	ClusterID string
	// LoadBalancing is the policy's loadBalancing; nil selects the simple strategy.
	LoadBalancing *dnspolicyv1.LoadBalancingSpec
	// ExcludeAddresses are the policy's excludeAddresses: IPs, CIDRs and hostnames not to publish.
	ExcludeAddresses []string
}

// Build returns the endpoints for one listener, sorted by dnsName + setIdentifier as Kuadrant sorts
// them. When every address is excluded, or the Gateway has none, it returns no endpoints and no
// error: there is nothing to publish, which is for the caller to report.
//
// Simple strategy, for hostname H:
//
//	H  A      every IPv4 address
//	H  AAAA   every IPv6 address
//	H  CNAME  the Gateway's hostnames (only when it has no IP address)
//
// Load-balanced strategy, for hostname H, H' = H without a leading "*.", geo code G, weight W:
//
//	name        type    target     set identifier  providerSpecific  TTL
//	H           CNAME   klb.H'                                        300
//	klb.H'      CNAME   g.klb.H'   G               geo-code=G        300
//	klb.H'      CNAME   g.klb.H'   default         geo-code=*        300  (defaultGeo only)
//	g.klb.H'    CNAME   T          T               weight=W          60   (one per target T)
//	c-h.klb.H'  A/AAAA  the Gateway's IPs                             60   (only if it has IPs)
//
// where g is G lower-cased, c = hash6(ClusterID) and h = hash6(GatewayName + "-" + GatewayNamespace).
// The targets T are the IP leaf c-h.klb.H' and each of the Gateway's hostnames. Geo codes are not
// checked here: which are valid depends on the DNS provider (see package geo).
//
// Unlike Kuadrant: IPv6 addresses go into AAAA records (Kuadrant writes them into A records, which no
// provider accepts); in the simple strategy address records win over a CNAME (Kuadrant publishes
// both, which DNS forbids); addresses are deduplicated; exclusions compare IPs by value and hostnames
// case-insensitively rather than as exact strings.
func Build(in Input) ([]*v1alpha1.Endpoint, error) {
	host := strings.ToLower(in.Hostname)
	if err := validateHostname(host); err != nil {
		return nil, err
	}
	if err := validateLoadBalancing(in); err != nil {
		return nil, err
	}
	t, err := targetsOf(in.Addresses, in.ExcludeAddresses)
	if err != nil {
		return nil, err
	}
	if t.empty() {
		return nil, nil
	}

	var endpoints []*v1alpha1.Endpoint
	if in.LoadBalancing == nil {
		endpoints = simple(host, t)
	} else {
		endpoints = loadBalanced(host, t, in)
	}
	sortEndpoints(endpoints)
	return endpoints, nil
}

func simple(host string, t targets) []*v1alpha1.Endpoint {
	var endpoints []*v1alpha1.Endpoint
	if len(t.ipv4) > 0 {
		endpoints = append(endpoints, v1alpha1.NewEndpoint(host, v1alpha1.RecordTypeA, DefaultTTL, t.ipv4...))
	}
	if len(t.ipv6) > 0 {
		endpoints = append(endpoints, v1alpha1.NewEndpoint(host, v1alpha1.RecordTypeAAAA, DefaultTTL, t.ipv6...))
	}
	// A name with a CNAME can have no other record, so address records win when both kinds exist.
	// Several hostnames make one multi-target CNAME, as in Kuadrant; the plan merges such CNAMEs
	// across owners and each provider publishes what it can of them.
	if len(endpoints) == 0 {
		endpoints = append(endpoints, v1alpha1.NewEndpoint(host, v1alpha1.RecordTypeCNAME, DefaultTTL, t.hostnames...))
	}
	return endpoints
}

func loadBalanced(host string, t targets, in Input) []*v1alpha1.Endpoint {
	lb := in.LoadBalancing
	lbName := loadBalancerLabel + "." + strings.TrimPrefix(host, v1alpha1.WildcardPrefix)
	geoLbName := strings.ToLower(lb.Geo) + "." + lbName

	var endpoints []*v1alpha1.Endpoint
	weighted := t.hostnames
	if len(t.ipv4)+len(t.ipv6) > 0 {
		leaf := strings.ToLower(fmt.Sprintf("%s-%s.%s",
			hash.Base36(in.ClusterID, shortCodeLength),
			hash.Base36(in.GatewayName+"-"+in.GatewayNamespace, shortCodeLength),
			lbName))
		if len(t.ipv4) > 0 {
			endpoints = append(endpoints, v1alpha1.NewEndpoint(leaf, v1alpha1.RecordTypeA, DefaultTTL, t.ipv4...))
		}
		if len(t.ipv6) > 0 {
			endpoints = append(endpoints, v1alpha1.NewEndpoint(leaf, v1alpha1.RecordTypeAAAA, DefaultTTL, t.ipv6...))
		}
		weighted = append(slices.Clone(weighted), leaf)
	}

	weight := strconv.Itoa(lb.Weight)
	for _, target := range weighted {
		endpoints = append(endpoints, v1alpha1.NewEndpoint(geoLbName, v1alpha1.RecordTypeCNAME, DefaultTTL, target).
			WithSetIdentifier(target).
			WithProviderSpecific(v1alpha1.ProviderSpecificWeight, weight))
	}

	endpoints = append(endpoints, v1alpha1.NewEndpoint(lbName, v1alpha1.RecordTypeCNAME, DefaultCNAMETTL, geoLbName).
		WithSetIdentifier(lb.Geo).
		WithProviderSpecific(v1alpha1.ProviderSpecificGeoCode, lb.Geo))
	if lb.DefaultGeo {
		endpoints = append(endpoints, v1alpha1.NewEndpoint(lbName, v1alpha1.RecordTypeCNAME, DefaultCNAMETTL, geoLbName).
			WithSetIdentifier(DefaultSetIdentifier).
			WithProviderSpecific(v1alpha1.ProviderSpecificGeoCode, v1alpha1.WildcardGeo))
	}

	return append(endpoints, v1alpha1.NewEndpoint(host, v1alpha1.RecordTypeCNAME, DefaultCNAMETTL, lbName))
}

// sortEndpoints orders by the concatenation of dnsName and setIdentifier, Kuadrant's order, so a
// record spec written by either controller for the same input is the same list. Record type breaks
// ties (a leaf's A and AAAA).
func sortEndpoints(endpoints []*v1alpha1.Endpoint) {
	slices.SortStableFunc(endpoints, func(a, b *v1alpha1.Endpoint) int {
		return cmp.Or(
			strings.Compare(a.DNSName+a.SetIdentifier, b.DNSName+b.SetIdentifier),
			strings.Compare(a.RecordType, b.RecordType))
	})
}

// validateHostname accepts what Kuadrant's builder accepts (at least two labels), minus what cannot
// be a DNS name: empty labels, and a "*" anywhere but as the whole first label.
func validateHostname(host string) error {
	invalid := fmt.Errorf("invalid hostname %q", host)
	labels := strings.Split(strings.TrimPrefix(host, v1alpha1.WildcardPrefix), ".")
	if len(labels) < 2 && !strings.HasPrefix(host, v1alpha1.WildcardPrefix) {
		return invalid
	}
	for _, l := range labels {
		if l == "" || len(l) > maxLabelLength || strings.Contains(l, "*") {
			return invalid
		}
	}
	return nil
}

func validateLoadBalancing(in Input) error {
	lb := in.LoadBalancing
	if lb == nil {
		return nil
	}
	if in.ClusterID == "" {
		return errors.New("cluster ID is required")
	}
	if lb.Weight < 0 {
		return geo.ErrWeight
	}
	// The geo code becomes a label of the geo set's name, so it must be one. "default" would collide
	// with the set identifier of the catch-all set.
	code := strings.ToLower(lb.Geo)
	if code == "" {
		return errors.New("geo code is required")
	}
	if len(code) > maxLabelLength || strings.ContainsFunc(code, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) {
		return fmt.Errorf("geo code %q cannot be used in a DNS name", lb.Geo)
	}
	if lb.Geo == DefaultSetIdentifier {
		return fmt.Errorf("geo code %q is reserved for the catch-all set", lb.Geo)
	}
	return nil
}

// targets are the addresses left to publish, deduplicated and sorted.
type targets struct {
	ipv4, ipv6, hostnames []string
}

func (t targets) empty() bool {
	return len(t.ipv4)+len(t.ipv6)+len(t.hostnames) == 0
}

func targetsOf(addresses []gatewayapiv1.GatewayStatusAddress, exclude []string) (targets, error) {
	excluded, err := parseExclusions(exclude)
	if err != nil {
		return targets{}, err
	}
	var t targets
	for _, a := range addresses {
		typ := gatewayapiv1.IPAddressType
		if a.Type != nil {
			typ = *a.Type
		}
		switch typ {
		case gatewayapiv1.IPAddressType:
			ip, err := netip.ParseAddr(a.Value)
			if err != nil || ip.Zone() != "" {
				return targets{}, fmt.Errorf("gateway address %q of type %s is not an IP address", a.Value, typ)
			}
			ip = ip.Unmap()
			if excluded.ip(ip) {
				continue
			}
			if ip.Is4() {
				t.ipv4 = append(t.ipv4, ip.String())
			} else {
				t.ipv6 = append(t.ipv6, ip.String())
			}
		case gatewayapiv1.HostnameAddressType:
			if !excluded.hostname(a.Value) && !slices.ContainsFunc(t.hostnames, func(h string) bool { return sameHostname(h, a.Value) }) {
				t.hostnames = append(t.hostnames, a.Value)
			}
		}
	}
	for _, s := range []*[]string{&t.ipv4, &t.ipv6, &t.hostnames} {
		*s = slices.Compact(slices.Sorted(slices.Values(*s)))
	}
	return t, nil
}

type exclusions struct {
	ips       []netip.Addr
	prefixes  []netip.Prefix
	hostnames []string
}

// parseExclusions sorts excludeAddresses into CIDRs (anything with a "/", which must parse), IPs and
// hostnames.
func parseExclusions(exclude []string) (exclusions, error) {
	var e exclusions
	for _, x := range exclude {
		if strings.Contains(x, "/") {
			p, err := netip.ParsePrefix(x)
			if err != nil {
				// Not the parser's text, which varies between Go releases: this lands in status.
				return exclusions{}, fmt.Errorf("could not parse the CIDR from the excludeAddresses field: %q is not a CIDR", x)
			}
			e.prefixes = append(e.prefixes, p.Masked())
			continue
		}
		if ip, err := netip.ParseAddr(x); err == nil {
			e.ips = append(e.ips, ip.Unmap())
			continue
		}
		e.hostnames = append(e.hostnames, x)
	}
	return e, nil
}

func (e exclusions) ip(ip netip.Addr) bool {
	return slices.Contains(e.ips, ip) || slices.ContainsFunc(e.prefixes, func(p netip.Prefix) bool { return p.Contains(ip) })
}

func (e exclusions) hostname(h string) bool {
	return slices.ContainsFunc(e.hostnames, func(x string) bool { return sameHostname(x, h) })
}

func sameHostname(a, b string) bool {
	return strings.EqualFold(strings.TrimSuffix(a, "."), strings.TrimSuffix(b, "."))
}
