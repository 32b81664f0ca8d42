package k8gb

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	gatewayapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// The pure half of the backend: what a DNSRecord asks for, the Gslb that expresses it, the route the
// Gslb references, and what a Gslb's status says about the record. No client, no clock.

// defaultWeight is the DNSPolicy's default loadBalancing.weight (the CRD fills it in).
const defaultWeight = 120

// defaultTTL is the TTL used when the record's address records carry none.
const defaultTTL = 60

// intent is what one DNSRecord asks for, read from its endpoints: the policy controller encodes
// the strategy in them (see pkg/builder), and a hand-written record is read the same way.
type intent struct {
	host string
	// loadBalanced is set when the endpoints carry weight or geo-code properties.
	loadBalanced bool
	weight       int
	geo          string
	defaultGeo   bool
	// ipv4, ipv6 and hostnames are the Gateway's addresses after excludeAddresses.
	ipv4, ipv6, hostnames []string
	ttl                   int64
}

// readIntent reads a record's endpoints. Gateway addresses are the targets of its A and AAAA
// records, and the CNAME targets that are not names of the record itself (the load-balanced tree's
// inner CNAMEs point at names of the record; a Gateway's hostname does not).
func readIntent(rec *v1alpha1.DNSRecord) (intent, error) {
	in := intent{host: v1alpha1.NormalizeName(rec.Spec.RootHost)}
	if strings.HasPrefix(in.host, v1alpha1.WildcardPrefix) {
		return intent{}, fmt.Errorf("k8gb cannot serve the wildcard hostname %s: it publishes each hostname of a route under a localtargets-<hostname> name, which a wildcard cannot have; give the listener and its route explicit hostnames", rec.Spec.RootHost)
	}
	names := map[string]bool{}
	for _, ep := range rec.Spec.Endpoints {
		if ep != nil {
			names[v1alpha1.NormalizeName(ep.DNSName)] = true
		}
	}
	weights := map[string]bool{}
	geos := map[string]bool{}
	var addressTTL, cnameTTL int64
	for _, ep := range rec.Spec.Endpoints {
		if ep == nil {
			continue
		}
		if w, ok := ep.GetProviderSpecific(v1alpha1.ProviderSpecificWeight); ok {
			in.loadBalanced, weights[w] = true, true
		}
		if g, ok := ep.GetProviderSpecific(v1alpha1.ProviderSpecificGeoCode); ok {
			in.loadBalanced = true
			if g == v1alpha1.WildcardGeo {
				in.defaultGeo = true
			} else {
				geos[g] = true
			}
		}
		switch ep.RecordType {
		case v1alpha1.RecordTypeA, v1alpha1.RecordTypeAAAA:
			addressTTL = cmp.Or(addressTTL, int64(ep.RecordTTL))
			for _, t := range ep.Targets {
				ip, err := netip.ParseAddr(t)
				if err != nil {
					return intent{}, fmt.Errorf("endpoint %s %s: target %q is not an IP address", ep.DNSName, ep.RecordType, t)
				}
				if ip.Unmap().Is4() {
					in.ipv4 = append(in.ipv4, ip.Unmap().String())
				} else {
					in.ipv6 = append(in.ipv6, ip.String())
				}
			}
		case v1alpha1.RecordTypeCNAME:
			for _, t := range ep.Targets {
				if !names[v1alpha1.NormalizeName(t)] {
					cnameTTL = cmp.Or(cnameTTL, int64(ep.RecordTTL))
					in.hostnames = append(in.hostnames, v1alpha1.NormalizeName(t))
				}
			}
		}
	}
	for _, s := range []*[]string{&in.ipv4, &in.ipv6, &in.hostnames} {
		*s = slices.Compact(slices.Sorted(slices.Values(*s)))
	}
	in.ttl = cmp.Or(addressTTL, cnameTTL, defaultTTL)
	if len(weights) > 1 {
		return intent{}, fmt.Errorf("the endpoints carry %d different weights; k8gb takes one weight per cluster", len(weights))
	}
	for w := range weights {
		n, err := strconv.Atoi(w)
		if err != nil || n < 0 {
			return intent{}, fmt.Errorf("invalid weight expected a value >= 0")
		}
		in.weight = n
	}
	if len(geos) > 1 {
		return intent{}, fmt.Errorf("the endpoints carry %d geo codes; k8gb places a cluster under one geo tag", len(geos))
	}
	for g := range geos {
		in.geo = g
	}
	if in.loadBalanced && len(weights) == 0 {
		in.weight = defaultWeight
	}
	if len(in.ipv4) == 0 && len(in.hostnames) == 0 {
		if len(in.ipv6) > 0 {
			return intent{}, fmt.Errorf("the Gateway has only IPv6 addresses (%s); k8gb publishes IPv4 addresses only", strings.Join(in.ipv6, " "))
		}
		return intent{}, fmt.Errorf("the record has no address to publish")
	}
	return in, nil
}

// strategy is the Gslb's spec.strategy for a record, or why the record cannot be expressed in k8gb.
func strategy(o Options, in intent) (map[string]any, error) {
	s := map[string]any{"type": o.Strategy, "dnsTtlSeconds": in.ttl}
	if in.loadBalanced {
		if err := checkLoadBalancing(o, in); err != nil {
			return nil, err
		}
	}
	switch o.Strategy {
	case StrategyRoundRobin:
		if len(o.Weights) > 0 {
			weights := map[string]any{}
			for tag, w := range o.Weights {
				weights[tag] = int64(w)
			}
			s["weight"] = weights
		}
	case StrategyFailover:
		s["primaryGeoTag"] = o.PrimaryGeoTag
	}
	return s, nil
}

// checkLoadBalancing says what of a policy's loadBalancing the Secret's k8gb strategy cannot
// express. k8gb keeps one weight map and one strategy for every cluster; a cluster's policy may
// only agree with them, since what the other clusters' policies say is not visible here.
func checkLoadBalancing(o Options, in intent) error {
	switch o.Strategy {
	case StrategyRoundRobin:
		if len(o.Weights) > 0 && o.Weights[o.GeoTag] != in.weight {
			return fmt.Errorf("loadBalancing.weight %d differs from the weight of this cluster's geo tag %s in %s (%d): k8gb needs one weight map in every cluster, so the weights come from the provider secret; make the two equal", in.weight, o.GeoTag, WeightsKey, o.Weights[o.GeoTag])
		}
		if len(o.Weights) == 0 && in.weight != defaultWeight {
			return fmt.Errorf("loadBalancing.weight %d cannot be expressed without %s: k8gb needs every cluster's weight in one map, the same in every cluster; set %s in the provider secret of every cluster (e.g. %s=%d,<other geo tag>=<weight>), or leave the weight at its default %d for equal shares", in.weight, WeightsKey, WeightsKey, o.GeoTag, in.weight, defaultWeight)
		}
	case StrategyGeoIP:
		if in.weight != defaultWeight {
			return fmt.Errorf("loadBalancing.weight %d cannot be expressed with %s=%s: k8gb's geoip strategy has no weights; leave the weight at its default %d or use %s", in.weight, StrategyKey, StrategyGeoIP, defaultWeight, StrategyRoundRobin)
		}
		if !strings.EqualFold(in.geo, o.GeoTag) {
			return fmt.Errorf("loadBalancing.geo %s is not this cluster's k8gb geo tag %s: with %s=%s k8gb sends a client to the cluster whose geo tag its GeoIP database gives the client's address, so geo must name this cluster's geo tag", in.geo, o.GeoTag, StrategyKey, StrategyGeoIP)
		}
	case StrategyFailover:
		if in.weight != defaultWeight {
			return fmt.Errorf("loadBalancing.weight %d cannot be expressed with %s=%s: k8gb's failover strategy has no weights; leave the weight at its default %d or use %s", in.weight, StrategyKey, StrategyFailover, defaultWeight, StrategyRoundRobin)
		}
		primary := o.GeoTag == o.PrimaryGeoTag
		if in.defaultGeo != primary {
			role := "not the primary"
			if primary {
				role = "the primary"
			}
			return fmt.Errorf("loadBalancing.defaultGeo is %t but this cluster (geo tag %s) is %s %s of %s=%s: defaultGeo marks the cluster every client goes to, which is k8gb's primary; set defaultGeo to %t", in.defaultGeo, o.GeoTag, role, o.PrimaryGeoTag, StrategyKey, StrategyFailover, primary)
		}
	}
	return nil
}

// HTTPRoutes are what a Gslb references for a Gateway listener: k8gb serves the route's hostnames
// at the addresses of the route's one parent Gateway, healthy while a Service behind the route has
// a ready endpoint.
var httpRouteAPIVersion = gatewayapiv1.GroupVersion.String()

// routeChoice picks the HTTPRoute a listener's Gslb references: one the Gateway accepted on the
// listener, with that one Gateway as its only parent (k8gb needs exactly one), that lists the
// hostname (k8gb serves the hostnames a route lists, not the listener's). Among several, the one
// listing the fewest other hostnames (k8gb serves them all), then the oldest, then by name.
func routeChoice(routes []gatewayapiv1.HTTPRoute, gatewayNamespace, gateway, listener, host string) (*gatewayapiv1.HTTPRoute, error) {
	var candidates []*gatewayapiv1.HTTPRoute
	var notes []string
	for i := range routes {
		r := &routes[i]
		ref := parentOn(r, gatewayNamespace, gateway, listener)
		if ref == nil || !accepted(r, *ref, gatewayNamespace) {
			continue
		}
		key := r.Namespace + "/" + r.Name
		switch {
		case gatewayParents(r) != 1:
			notes = append(notes, fmt.Sprintf("HTTPRoute %s has %d parent Gateways (k8gb needs exactly one)", key, gatewayParents(r)))
		case !slices.ContainsFunc(r.Spec.Hostnames, func(h gatewayapiv1.Hostname) bool { return v1alpha1.NormalizeName(string(h)) == host }):
			notes = append(notes, fmt.Sprintf("HTTPRoute %s does not list hostname %s (k8gb serves the hostnames a route lists)", key, host))
		default:
			candidates = append(candidates, r)
		}
	}
	if len(candidates) == 0 {
		msg := fmt.Sprintf("no HTTPRoute accepted on listener %s of Gateway %s/%s can be handed to k8gb for %s", listener, gatewayNamespace, gateway, host)
		if len(notes) > 0 {
			slices.Sort(notes)
			msg += ": " + strings.Join(notes, "; ")
		}
		return nil, fmt.Errorf("%s", msg)
	}
	slices.SortFunc(candidates, func(a, b *gatewayapiv1.HTTPRoute) int {
		return cmp.Or(
			cmp.Compare(len(a.Spec.Hostnames), len(b.Spec.Hostnames)),
			a.CreationTimestamp.Compare(b.CreationTimestamp.Time),
			strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name))
	})
	return candidates[0], nil
}

// parentOn returns the route's parent reference to the listener (by section name, or the whole
// Gateway), or nil.
func parentOn(r *gatewayapiv1.HTTPRoute, gatewayNamespace, gateway, listener string) *gatewayapiv1.ParentReference {
	for i := range r.Spec.ParentRefs {
		p := &r.Spec.ParentRefs[i]
		if isGateway(p) && string(p.Name) == gateway && parentNamespace(p, r.Namespace) == gatewayNamespace &&
			(p.SectionName == nil || string(*p.SectionName) == listener) {
			return p
		}
	}
	return nil
}

// accepted reports whether the Gateway's implementation accepted the route on that parent.
func accepted(r *gatewayapiv1.HTTPRoute, ref gatewayapiv1.ParentReference, gatewayNamespace string) bool {
	for _, st := range r.Status.Parents {
		p := st.ParentRef
		if !isGateway(&p) || p.Name != ref.Name || parentNamespace(&p, r.Namespace) != gatewayNamespace || ptrValue(p.SectionName) != ptrValue(ref.SectionName) {
			continue
		}
		for _, c := range st.Conditions {
			if c.Type == string(gatewayapiv1.RouteConditionAccepted) && c.Status == "True" {
				return true
			}
		}
	}
	return false
}

// gatewayParents counts the Gateways a route names, as k8gb counts them.
func gatewayParents(r *gatewayapiv1.HTTPRoute) int {
	n := 0
	for i := range r.Spec.ParentRefs {
		if p := &r.Spec.ParentRefs[i]; p.Kind == nil || *p.Kind == "Gateway" {
			n++
		}
	}
	return n
}

func isGateway(p *gatewayapiv1.ParentReference) bool {
	return (p.Group == nil || string(*p.Group) == gatewayapiv1.GroupName) && (p.Kind == nil || *p.Kind == "Gateway")
}

func parentNamespace(p *gatewayapiv1.ParentReference, routeNamespace string) string {
	if p.Namespace != nil {
		return string(*p.Namespace)
	}
	return routeNamespace
}

func ptrValue[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

// The k8gb serviceHealth values.
const (
	healthHealthy   = "Healthy"
	healthUnhealthy = "Unhealthy"
	healthNotFound  = "NotFound"
)

// Condition reasons and messages Kuadrant's tooling knows (DESIGN 4b), and ours.
const (
	reasonAllChecksPassed    = "AllChecksPassed"
	reasonHealthChecksFailed = "HealthChecksFailed"
	// ReasonAwaitingK8gb: the Gslb exists, and k8gb has not written its status for the hostname.
	ReasonAwaitingK8gb = "AwaitingK8gb"

	msgProviderSuccess    = "Provider ensured the dns record"
	msgAwaitingValidation = "Awaiting validation"
	msgProviderError      = "The DNS provider failed to ensure the record: %s"
	msgNotPublishing      = "Not publishing unhealthy records"
	msgAllChecksPassed    = "All healthchecks succeeded"
)

// readStatus turns a Gslb's status into the record's Ready and Healthy conditions. addresses are
// what this cluster hands k8gb for the hostname.
func readStatus(o Options, gslb *unstructured.Unstructured, host string, addresses []string) (ready, healthy providers.Condition) {
	where := "Gslb " + gslb.GetNamespace() + "/" + gslb.GetName()
	geoTag, _, _ := unstructured.NestedString(gslb.Object, "status", "geoTag")
	health, found, _ := unstructured.NestedString(gslb.Object, "status", "serviceHealth", host)
	switch {
	case geoTag == "" && !found:
		return cond("False", v1alpha1.ReasonAwaitingValidation, msgAwaitingValidation),
			cond("Unknown", ReasonAwaitingK8gb, fmt.Sprintf("k8gb has not reported on %s yet: is k8gb running, and is %s in a zone it delegates?", where, host))
	case geoTag != o.GeoTag:
		return cond("False", v1alpha1.ReasonProviderError, fmt.Sprintf(msgProviderError, fmt.Sprintf("k8gb reports geo tag %q on %s, but the provider secret's %s is %q: set it to this cluster's k8gb clusterGeoTag", geoTag, where, GeoTagKey, o.GeoTag))),
			cond("Unknown", ReasonAwaitingK8gb, "the health k8gb reports is for another geo tag than the provider secret's")
	case !found:
		return cond("False", v1alpha1.ReasonProviderError, fmt.Sprintf(msgProviderError, fmt.Sprintf("k8gb does not serve %s from %s (status.serviceHealth has no entry for it): the hostname must be in a zone k8gb delegates", host, where))),
			cond("Unknown", ReasonAwaitingK8gb, fmt.Sprintf("k8gb reports no health for %s on %s", host, where))
	case health == healthHealthy:
		return cond("True", v1alpha1.ReasonProviderSuccess, msgProviderSuccess),
			cond("True", reasonAllChecksPassed, msgAllChecksPassed)
	default:
		why := "no Service behind the route has a ready endpoint"
		if health == healthNotFound {
			why = "the Services behind the route do not exist"
		} else if health != healthUnhealthy {
			why = "k8gb does not count it as healthy"
		}
		return cond("False", reasonHealthChecksFailed, msgNotPublishing),
			cond("False", reasonHealthChecksFailed, fmt.Sprintf("Not healthy addresses: [%s] (k8gb reports serviceHealth %s for %s on %s: %s)", strings.Join(addresses, " "), health, host, where, why))
	}
}

func cond(status metav1.ConditionStatus, reason, message string) providers.Condition {
	return providers.Condition{Status: status, Reason: reason, Message: message}
}
