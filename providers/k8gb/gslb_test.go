package k8gb

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	gatewayapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnsv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/builder"
)

// built is the record the policy controller writes for a listener, from the real builder.
func built(t *testing.T, host string, addresses []string, lb *dnsv1.LoadBalancingSpec, exclude ...string) *v1alpha1.DNSRecord {
	t.Helper()
	var in []gatewayapiv1.GatewayStatusAddress
	for _, a := range addresses {
		typ := gatewayapiv1.IPAddressType
		if _, err := netip.ParseAddr(a); err != nil {
			typ = gatewayapiv1.HostnameAddressType
		}
		in = append(in, gatewayapiv1.GatewayStatusAddress{Type: ptr.To(typ), Value: a})
	}
	eps, err := builder.Build(builder.Input{
		Hostname: host, Addresses: in, GatewayName: "gw", GatewayNamespace: "ns", ClusterID: "cluster",
		LoadBalancing: lb, ExcludeAddresses: exclude,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &v1alpha1.DNSRecord{Spec: v1alpha1.DNSRecordSpec{RootHost: host, Endpoints: eps}}
}

func TestReadIntent(t *testing.T) {
	lb := &dnsv1.LoadBalancingSpec{Weight: 200, Geo: "GEO-EU", DefaultGeo: true}
	for name, tc := range map[string]struct {
		rec     *v1alpha1.DNSRecord
		want    intent
		wantErr string
	}{
		"simple": {
			rec:  built(t, "App.example.com", []string{"10.0.0.2", "10.0.0.1", "2001:db8::1", "192.0.2.9"}, nil, "192.0.2.0/24"),
			want: intent{host: "app.example.com", ipv4: []string{"10.0.0.1", "10.0.0.2"}, ipv6: []string{"2001:db8::1"}, ttl: 60},
		},
		"simple, hostname only": {
			rec:  built(t, "app.example.com", []string{"lb.gw.example.net"}, nil),
			want: intent{host: "app.example.com", hostnames: []string{"lb.gw.example.net"}, ttl: 60},
		},
		"loadbalanced": {
			rec: built(t, "app.example.com", []string{"10.0.0.1", "lb.gw.example.net"}, lb),
			want: intent{host: "app.example.com", loadBalanced: true, weight: 200, geo: "GEO-EU", defaultGeo: true,
				ipv4: []string{"10.0.0.1"}, hostnames: []string{"lb.gw.example.net"}, ttl: 60},
		},
		"loadbalanced without defaultGeo": {
			rec: built(t, "app.example.com", []string{"10.0.0.1"}, &dnsv1.LoadBalancingSpec{Weight: 120, Geo: "eu"}),
			want: intent{host: "app.example.com", loadBalanced: true, weight: 120, geo: "eu",
				ipv4: []string{"10.0.0.1"}, ttl: 60},
		},
		"wildcard": {
			rec:     built(t, "*.example.com", []string{"10.0.0.1"}, nil),
			wantErr: "k8gb cannot serve the wildcard hostname *.example.com",
		},
		"IPv6 only": {
			rec:     built(t, "app.example.com", []string{"2001:db8::1"}, nil),
			wantErr: "the Gateway has only IPv6 addresses (2001:db8::1); k8gb publishes IPv4 addresses only",
		},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := readIntent(tc.rec)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestStrategy(t *testing.T) {
	rr := Options{GeoTag: "eu", Strategy: StrategyRoundRobin}
	weighted := Options{GeoTag: "eu", Strategy: StrategyRoundRobin, Weights: map[string]int{"eu": 3, "us": 1}}
	geoip := Options{GeoTag: "eu", Strategy: StrategyGeoIP}
	primary := Options{GeoTag: "eu", Strategy: StrategyFailover, PrimaryGeoTag: "eu"}
	secondary := Options{GeoTag: "us", Strategy: StrategyFailover, PrimaryGeoTag: "eu"}
	simple := intent{ttl: 60}
	lb := func(weight int, geo string, defaultGeo bool) intent {
		return intent{loadBalanced: true, weight: weight, geo: geo, defaultGeo: defaultGeo, ttl: 60}
	}
	for name, tc := range map[string]struct {
		opts    Options
		in      intent
		want    map[string]any
		wantErr string
	}{
		"simple":                          {opts: rr, in: simple, want: map[string]any{"type": "roundRobin", "dnsTtlSeconds": int64(60)}},
		"simple keeps the shared weights": {opts: weighted, in: simple, want: map[string]any{"type": "roundRobin", "dnsTtlSeconds": int64(60), "weight": map[string]any{"eu": int64(3), "us": int64(1)}}},
		"loadbalanced, default weight":    {opts: rr, in: lb(120, "GEO-EU", true), want: map[string]any{"type": "roundRobin", "dnsTtlSeconds": int64(60)}},
		"loadbalanced, weight as shared":  {opts: weighted, in: lb(3, "GEO-EU", false), want: map[string]any{"type": "roundRobin", "dnsTtlSeconds": int64(60), "weight": map[string]any{"eu": int64(3), "us": int64(1)}}},
		"weight differs from the map":     {opts: weighted, in: lb(120, "GEO-EU", false), wantErr: "loadBalancing.weight 120 differs from the weight of this cluster's geo tag eu in K8GB_WEIGHTS (3)"},
		"weight without a map":            {opts: rr, in: lb(200, "GEO-EU", false), wantErr: "loadBalancing.weight 200 cannot be expressed without K8GB_WEIGHTS"},
		"geoip":                           {opts: geoip, in: lb(120, "EU", false), want: map[string]any{"type": "geoip", "dnsTtlSeconds": int64(60)}},
		"geoip, geo is not the tag":       {opts: geoip, in: lb(120, "GEO-EU", false), wantErr: "loadBalancing.geo GEO-EU is not this cluster's k8gb geo tag eu"},
		"geoip, weight":                   {opts: geoip, in: lb(50, "eu", false), wantErr: "k8gb's geoip strategy has no weights"},
		"failover, primary":               {opts: primary, in: lb(120, "eu", true), want: map[string]any{"type": "failover", "dnsTtlSeconds": int64(60), "primaryGeoTag": "eu"}},
		"failover, secondary":             {opts: secondary, in: lb(120, "us", false), want: map[string]any{"type": "failover", "dnsTtlSeconds": int64(60), "primaryGeoTag": "eu"}},
		"failover, simple":                {opts: secondary, in: simple, want: map[string]any{"type": "failover", "dnsTtlSeconds": int64(60), "primaryGeoTag": "eu"}},
		"failover, defaultGeo on secondary": {
			opts: secondary, in: lb(120, "us", true),
			wantErr: "loadBalancing.defaultGeo is true but this cluster (geo tag us) is not the primary eu of K8GB_STRATEGY=failover",
		},
		"failover, primary without defaultGeo": {
			opts: primary, in: lb(120, "eu", false),
			wantErr: "loadBalancing.defaultGeo is false but this cluster (geo tag eu) is the primary eu",
		},
		"failover, weight": {opts: primary, in: lb(7, "eu", true), wantErr: "k8gb's failover strategy has no weights"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := strategy(tc.opts, tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func route(ns, name string, age time.Duration, hostnames []string, parents ...gatewayapiv1.ParentReference) gatewayapiv1.HTTPRoute {
	r := gatewayapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(time.Unix(1e9, 0).Add(-age))}}
	for _, h := range hostnames {
		r.Spec.Hostnames = append(r.Spec.Hostnames, gatewayapiv1.Hostname(h))
	}
	r.Spec.ParentRefs = parents
	for _, p := range parents {
		r.Status.Parents = append(r.Status.Parents, gatewayapiv1.RouteParentStatus{
			ParentRef: p, ControllerName: "example.com/gateway",
			Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted"}},
		})
	}
	return r
}

func parent(ns, gw, section string) gatewayapiv1.ParentReference {
	p := gatewayapiv1.ParentReference{Name: gatewayapiv1.ObjectName(gw)}
	if ns != "" {
		p.Namespace = ptr.To(gatewayapiv1.Namespace(ns))
	}
	if section != "" {
		p.SectionName = ptr.To(gatewayapiv1.SectionName(section))
	}
	return p
}

func TestRouteChoice(t *testing.T) {
	const host = "app.example.com"
	notAccepted := route("ns", "pending", time.Hour, []string{host}, parent("", "gw", "api"))
	notAccepted.Status.Parents[0].Conditions[0].Status = metav1.ConditionFalse
	for name, tc := range map[string]struct {
		routes  []gatewayapiv1.HTTPRoute
		want    string
		wantErr string
	}{
		"the one route": {
			routes: []gatewayapiv1.HTTPRoute{route("ns", "r", 0, []string{"App.Example.com"}, parent("", "gw", "api"))},
			want:   "ns/r",
		},
		"cross-namespace route on the whole Gateway": {
			routes: []gatewayapiv1.HTTPRoute{route("apps", "r", 0, []string{host}, parent("ns", "gw", ""))},
			want:   "apps/r",
		},
		"fewest other hostnames, then oldest, then name": {
			routes: []gatewayapiv1.HTTPRoute{
				route("ns", "wide", 3*time.Hour, []string{host, "other.example.com"}, parent("", "gw", "api")),
				route("ns", "young", 0, []string{host}, parent("", "gw", "api")),
				route("ns", "old-b", time.Hour, []string{host}, parent("", "gw", "api")),
				route("ns", "old-a", time.Hour, []string{host}, parent("", "gw", "api")),
			},
			want: "ns/old-a",
		},
		"other listeners, Gateways, namespaces and unaccepted routes are not candidates": {
			routes: []gatewayapiv1.HTTPRoute{
				route("ns", "web", 0, []string{host}, parent("", "gw", "web")),
				route("ns", "other-gw", 0, []string{host}, parent("", "gw2", "")),
				route("other", "same-name", 0, []string{host}, parent("", "gw", "")),
				notAccepted,
			},
			wantErr: "no HTTPRoute accepted on listener api of Gateway ns/gw can be handed to k8gb for app.example.com",
		},
		"what is wrong with the attached routes": {
			routes: []gatewayapiv1.HTTPRoute{
				route("ns", "two-parents", 0, []string{host}, parent("", "gw", "api"), parent("", "gw2", "")),
				route("ns", "no-hostnames", 0, nil, parent("", "gw", "api")),
			},
			wantErr: "no HTTPRoute accepted on listener api of Gateway ns/gw can be handed to k8gb for app.example.com: HTTPRoute ns/no-hostnames does not list hostname app.example.com (k8gb serves the hostnames a route lists); HTTPRoute ns/two-parents has 2 parent Gateways (k8gb needs exactly one)",
		},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := routeChoice(tc.routes, "ns", "gw", "api", host)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr && !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if key := got.Namespace + "/" + got.Name; key != tc.want {
				t.Errorf("chose %s, want %s", key, tc.want)
			}
		})
	}
}

func TestReadStatus(t *testing.T) {
	o := Options{GeoTag: "eu", Strategy: StrategyRoundRobin}
	gslb := func(status map[string]any) *unstructured.Unstructured {
		g := &unstructured.Unstructured{Object: map[string]any{}}
		g.SetNamespace("ns")
		g.SetName("gw-api")
		if status != nil {
			g.Object["status"] = status
		}
		return g
	}
	health := func(h string) map[string]any {
		return map[string]any{"geoTag": "eu", "serviceHealth": map[string]any{"app.example.com": h}, "healthyRecords": map[string]any{}}
	}
	for name, tc := range map[string]struct {
		status         map[string]any
		ready, healthy string
	}{
		"not reported": {
			ready:   "False AwaitingValidation: Awaiting validation",
			healthy: "Unknown AwaitingK8gb: k8gb has not reported on Gslb ns/gw-api yet: is k8gb running, and is app.example.com in a zone it delegates?",
		},
		"healthy": {
			status: health("Healthy"),
			ready:  "True ProviderSuccess: Provider ensured the dns record", healthy: "True AllChecksPassed: All healthchecks succeeded",
		},
		"unhealthy": {
			status:  health("Unhealthy"),
			ready:   "False HealthChecksFailed: Not publishing unhealthy records",
			healthy: "False HealthChecksFailed: Not healthy addresses: [10.0.0.1] (k8gb reports serviceHealth Unhealthy for app.example.com on Gslb ns/gw-api: no Service behind the route has a ready endpoint)",
		},
		"not found": {
			status:  health("NotFound"),
			ready:   "False HealthChecksFailed: Not publishing unhealthy records",
			healthy: "False HealthChecksFailed: Not healthy addresses: [10.0.0.1] (k8gb reports serviceHealth NotFound for app.example.com on Gslb ns/gw-api: the Services behind the route do not exist)",
		},
		"another geo tag": {
			status:  map[string]any{"geoTag": "us", "serviceHealth": map[string]any{"app.example.com": "Healthy"}},
			ready:   `False ProviderError: The DNS provider failed to ensure the record: k8gb reports geo tag "us" on Gslb ns/gw-api, but the provider secret's K8GB_GEO_TAG is "eu"`,
			healthy: "Unknown AwaitingK8gb: the health k8gb reports is for another geo tag than the provider secret's",
		},
		"host not served": {
			status:  map[string]any{"geoTag": "eu", "serviceHealth": map[string]any{"other.example.com": "Healthy"}},
			ready:   "False ProviderError: The DNS provider failed to ensure the record: k8gb does not serve app.example.com from Gslb ns/gw-api",
			healthy: "Unknown AwaitingK8gb: k8gb reports no health for app.example.com on Gslb ns/gw-api",
		},
	} {
		t.Run(name, func(t *testing.T) {
			ready, healthy := readStatus(o, gslb(tc.status), "app.example.com", []string{"10.0.0.1"})
			if got := string(ready.Status) + " " + ready.Reason + ": " + ready.Message; !strings.HasPrefix(got, tc.ready) {
				t.Errorf("Ready %q, want %q", got, tc.ready)
			}
			if got := string(healthy.Status) + " " + healthy.Reason + ": " + healthy.Message; got != tc.healthy {
				t.Errorf("Healthy %q, want %q", got, tc.healthy)
			}
		})
	}
}
