package dnspolicy

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	gatewayapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnsv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/builder"
)

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// gateway has one listener per name; a listener is given hostname "<name>.example.com" and one
// attached route unless its name says otherwise ("nohost", "noroutes").
func gateway(listeners ...string) *gatewayapiv1.Gateway {
	gw := &gatewayapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw", Namespace: "ns", UID: "uid-gw", Generation: 3}}
	for _, l := range listeners {
		listener := gatewayapiv1.Listener{Name: gatewayapiv1.SectionName(l), Port: 80, Protocol: gatewayapiv1.HTTPProtocolType}
		if l != "nohost" {
			listener.Hostname = ptr.To(gatewayapiv1.Hostname(l + ".example.com"))
		}
		gw.Spec.Listeners = append(gw.Spec.Listeners, listener)
		routes := int32(1)
		if l == "noroutes" {
			routes = 0
		}
		gw.Status.Listeners = append(gw.Status.Listeners, gatewayapiv1.ListenerStatus{Name: gatewayapiv1.SectionName(l), AttachedRoutes: routes})
	}
	gw.Status.Addresses = []gatewayapiv1.GatewayStatusAddress{{Value: "10.0.0.1"}, {Type: ptr.To(gatewayapiv1.HostnameAddressType), Value: "lb.cloud.example"}}
	return gw
}

func policy(name string, age time.Duration, section string) *dnsv1.DNSPolicy {
	p := &dnsv1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Generation: 2,
		CreationTimestamp: metav1.NewTime(t0.Add(-age)),
	}}
	p.Spec.TargetRef.Group = gatewayapiv1.GroupName
	p.Spec.TargetRef.Kind = "Gateway"
	p.Spec.TargetRef.Name = "gw"
	if section != "" {
		p.Spec.TargetRef.SectionName = ptr.To(gatewayapiv1.SectionName(section))
	}
	return p
}

func input(gw *gatewayapiv1.Gateway, policies ...*dnsv1.DNSPolicy) judgeInput {
	return judgeInput{gatewayAPI: true, name: "gw", gateway: gw, policies: policies, clusterID: "cluster-uid"}
}

// outcome is a verdict in short: reason, then each listener as name=record|skip|problem|keep.
func outcome(v *verdict) string {
	parts := []string{v.reason}
	for _, lp := range v.listeners {
		switch {
		case lp.record != nil:
			parts = append(parts, lp.listener+"=record")
		case lp.skipped != "":
			parts = append(parts, lp.listener+"=skip")
		case lp.keep:
			parts = append(parts, lp.listener+"=keep")
		}
	}
	return strings.Join(parts, " ")
}

func TestJudgeAttachment(t *testing.T) {
	invalid := policy("invalid", time.Hour, "")
	invalid.Spec.LoadBalancing = &dnsv1.LoadBalancingSpec{Geo: "e.u", Weight: 1}
	delegate := policy("delegate", time.Hour, "")
	delegate.Spec.Delegate = true
	wrongKind := policy("wrong", time.Hour, "")
	wrongKind.Spec.TargetRef.Kind = "HTTPRoute"

	cases := []struct {
		name     string
		in       judgeInput
		want     []string // outcome per policy, in input order
		contains []string // a substring of each policy's Accepted message
	}{{
		name: "gateway-level policy publishes every listener that can be published",
		in:   input(gateway("api", "nohost", "noroutes"), policy("g", time.Hour, "")),
		want: []string{"Accepted api=record nohost=skip noroutes=skip"},
	}, {
		name: "a listener-level policy takes its listener from the gateway-level one",
		in:   input(gateway("api", "web"), policy("g", 2*time.Hour, ""), policy("l", time.Hour, "api")),
		want: []string{"Accepted web=record", "Accepted api=record"},
	}, {
		name: "a gateway-level policy whose listeners all have their own policy publishes nothing",
		in:   input(gateway("api"), policy("g", 2*time.Hour, ""), policy("l", time.Hour, "api")),
		want: []string{"Accepted", "Accepted api=record"},
	}, {
		name:     "of two policies on one Gateway the oldest wins",
		in:       input(gateway("api"), policy("young", time.Minute, ""), policy("old", time.Hour, "")),
		want:     []string{"Conflicted", "Accepted api=record"},
		contains: []string{"DNSPolicy is conflicted by ns/old: both target Gateway gw", msgAccepted},
	}, {
		name:     "equal age: the name decides",
		in:       input(gateway("api"), policy("b", time.Hour, "api"), policy("a", time.Hour, "api")),
		want:     []string{"Conflicted", "Accepted api=record"},
		contains: []string{"conflicted by ns/a: both target listener api of Gateway gw", ""},
	}, {
		name:     "missing Gateway",
		in:       input(nil, policy("g", time.Hour, "")),
		want:     []string{"TargetNotFound"},
		contains: []string{"DNSPolicy target gw was not found"},
	}, {
		name:     "missing listener",
		in:       input(gateway("api"), policy("l", time.Hour, "web")),
		want:     []string{"TargetNotFound"},
		contains: []string{`DNSPolicy target gw was not found: Gateway gw has no listener "web"`},
	}, {
		name:     "Gateway API missing",
		in:       judgeInput{name: "gw", policies: []*dnsv1.DNSPolicy{policy("g", time.Hour, "")}},
		want:     []string{"MissingDependency"},
		contains: []string{"[Gateway API] is not installed"},
	}, {
		name:     "an invalid policy keeps its listeners and what it published",
		in:       input(gateway("api"), invalid, policy("young", time.Minute, "")),
		want:     []string{"Invalid api=keep", "Conflicted"},
		contains: []string{`DNSPolicy is invalid: geo code "e.u" cannot be used in a DNS name`, "conflicted by ns/invalid"},
	}, {
		name:     "a delegating policy is accepted",
		in:       input(gateway("api"), delegate),
		want:     []string{"Accepted api=record"},
		contains: []string{msgAccepted},
	}, {
		name:     "a target that is not a Gateway",
		in:       input(gateway("api"), wrongKind),
		want:     []string{"Invalid"},
		contains: []string{"targetRef must be a Gateway"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			verdicts := judge(tc.in)
			for i, v := range verdicts {
				if got := outcome(v); got != tc.want[i] {
					t.Errorf("%s: %q, want %q", v.policy.Name, got, tc.want[i])
				}
				if i < len(tc.contains) && !strings.Contains(v.message, tc.contains[i]) {
					t.Errorf("%s: message %q, want it to contain %q", v.policy.Name, v.message, tc.contains[i])
				}
			}
		})
	}
}

// A delegating policy's records delegate too and name no provider, as kuadrant-operator builds them.
func TestJudgeDelegatingRecords(t *testing.T) {
	delegate := policy("delegate", time.Hour, "")
	delegate.Spec.Delegate = true
	plain := policy("plain", time.Hour, "")
	plain.Spec.ProviderRefs = []v1alpha1.ProviderRef{{Name: "route53"}}
	for _, p := range []*dnsv1.DNSPolicy{delegate, plain} {
		v := judge(input(gateway("api"), p))[0]
		if len(v.listeners) != 1 || v.listeners[0].record == nil {
			t.Fatalf("%s: no record planned: %s", p.Name, outcome(v))
		}
		rec := v.listeners[0].record
		if rec.Spec.Delegate != p.Spec.Delegate || (rec.Spec.ProviderRef == nil) != p.Spec.Delegate {
			t.Errorf("%s: record delegate %t, providerRef %v", p.Name, rec.Spec.Delegate, rec.Spec.ProviderRef)
		}
	}
}

func TestJudgeListenerReasons(t *testing.T) {
	gw := gateway("api", "nohost", "noroutes")
	excluded := policy("g", time.Hour, "")
	excluded.Spec.ExcludeAddresses = []string{"10.0.0.0/8", "LB.cloud.example"}
	v := judge(input(gw, excluded))[0]
	want := []string{
		"listener api: the Gateway has no addresses to publish once excludeAddresses are removed",
		"listener nohost has no hostname",
		"listener noroutes has no attached routes",
	}
	for i, lp := range v.listeners {
		if lp.skipped != want[i] || lp.record != nil {
			t.Errorf("listener %s: skipped %q record %v, want skipped %q", lp.listener, lp.skipped, lp.record, want[i])
		}
	}

	noAddresses := gateway("api")
	noAddresses.Status.Addresses = nil
	if lp := judge(input(noAddresses, policy("g", time.Hour, "")))[0].listeners[0]; lp.skipped != "listener api: the Gateway has no addresses to publish" {
		t.Errorf("no addresses: %q", lp.skipped)
	}

	badAddress := gateway("api")
	badAddress.Status.Addresses = []gatewayapiv1.GatewayStatusAddress{{Value: "not-an-ip"}}
	lp := judge(input(badAddress, policy("g", time.Hour, "")))[0].listeners[0]
	if !lp.keep || !strings.Contains(lp.problem, `listener api: gateway address "not-an-ip" of type IPAddress is not an IP address`) {
		t.Errorf("bad address: keep %v problem %q", lp.keep, lp.problem)
	}

	lb := policy("g", time.Hour, "")
	lb.Spec.LoadBalancing = &dnsv1.LoadBalancingSpec{Geo: "IE", Weight: 100}
	in := input(gateway("api"), lb)
	in.clusterID, in.clusterIDErr = "", errors.New("namespaces \"kube-system\" is forbidden")
	lp = judge(in)[0].listeners[0]
	if !lp.keep || !strings.Contains(lp.problem, "cannot read the cluster ID (the UID of Namespace kube-system): namespaces") {
		t.Errorf("no cluster ID: keep %v problem %q", lp.keep, lp.problem)
	}
}

// The record is the listener's, in the policy's namespace, controlled by the policy, with the
// builder's endpoints.
func TestJudgeRecord(t *testing.T) {
	p := policy("lb", time.Hour, "")
	p.Spec.LoadBalancing = &dnsv1.LoadBalancingSpec{Geo: "IE", Weight: 100, DefaultGeo: true}
	p.Spec.ProviderRefs = []v1alpha1.ProviderRef{{Name: "aws"}}
	p.Spec.HealthCheck = &v1alpha1.HealthCheckSpec{Path: "/healthz", Port: 443, Protocol: v1alpha1.ProtocolHTTPS, FailureThreshold: 3}
	p.Spec.ExcludeAddresses = []string{"lb.cloud.example"}
	gw := gateway("api")
	gw.Spec.Listeners[0].Hostname = ptr.To(gatewayapiv1.Hostname("*.apps.example.com"))
	rec := judge(input(gw, p))[0].listeners[0].record

	wantEndpoints, err := builder.Build(builder.Input{
		Hostname: "*.apps.example.com", Addresses: gw.Status.Addresses, GatewayName: "gw", GatewayNamespace: "ns",
		ClusterID: "cluster-uid", LoadBalancing: p.Spec.LoadBalancing, ExcludeAddresses: p.Spec.ExcludeAddresses,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{
			Name: "gw-api", Namespace: "ns",
			Labels: map[string]string{ListenerLabel: "api", GatewayLabel: "gw"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "kuadrant.io/v1", Kind: "DNSPolicy", Name: "lb", UID: "uid-lb",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}, {
				APIVersion: "gateway.networking.k8s.io/v1", Kind: "Gateway", Name: "gw", UID: "uid-gw",
			}},
		},
		Spec: v1alpha1.DNSRecordSpec{
			RootHost:    "*.apps.example.com",
			ProviderRef: &v1alpha1.ProviderRef{Name: "aws"},
			Endpoints:   wantEndpoints,
			HealthCheck: p.Spec.HealthCheck,
		},
	}
	if !reflect.DeepEqual(rec, want) {
		t.Errorf("record\n%+v\nwant\n%+v", rec, want)
	}
	if rec.Spec.HealthCheck == p.Spec.HealthCheck {
		t.Error("the record shares the policy's health check instead of a copy")
	}
	// Literal check of the shape, independent of the builder: the listener hostname CNAMEs to klb.
	if e := rec.Spec.Endpoints[0]; e.DNSName != "*.apps.example.com" || e.RecordType != "CNAME" || e.Targets[0] != "klb.apps.example.com" {
		t.Errorf("last endpoint %s, want *.apps.example.com CNAME klb.apps.example.com", e)
	}

	p.Spec.ProviderRefs = nil
	if rec := judge(input(gw, p))[0].listeners[0].record; rec.Spec.ProviderRef != nil {
		t.Errorf("no providerRefs: record providerRef %v, want nil (the namespace's default provider)", rec.Spec.ProviderRef)
	}
}
