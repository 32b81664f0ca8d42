//go:build integration

package k8gb_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	dnsv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnspolicy"
	"github.com/dnspolicy/dnspolicy-controller/providers/k8gb"
)

// A simple policy: one Gslb per listener hostname, referencing the listener's route, with the
// Gateway's IPv4 addresses after excludeAddresses; k8gb's status read back into the record and the
// policy; Gateway and policy changes followed; everything gone with the policy.
func TestSimplePolicy(t *testing.T) {
	cl := startCluster(t)
	cl.secret(t, "k8gb", true, map[string]string{k8gb.GeoTagKey: "eu"})
	cl.gateway(t, "gw", []string{"10.0.0.1", "10.0.0.2", "2001:db8::1", "192.0.2.7"}, map[string]string{"api": "api.example.com"})
	cl.route(t, "api", "gw", "api", "api.example.com")
	cl.policy(t, "simple", "gw", "", func(p *dnsv1.DNSPolicy) { p.Spec.ExcludeAddresses = []string{"192.0.2.0/24"} })

	// Before k8gb reports, the record waits for it and says on what.
	rec := cl.recordIs(t, "gw-api", v1alpha1.ConditionTypeReady, "False AwaitingValidation: Awaiting validation")
	roundRobin := map[string]any{"type": "roundRobin", "dnsTtlSeconds": int64(60)}
	cl.gslbIs(t, "gw-api", wantGslb{record: rec, route: "api", strategy: roundRobin, exposedIPs: "10.0.0.1,10.0.0.2"})
	if got := conditionText(rec.Status.Conditions, v1alpha1.ConditionTypeHealthy); !strings.HasPrefix(got, "Unknown AwaitingK8gb: k8gb has not reported on Gslb "+cl.ns+"/gw-api yet") {
		t.Errorf("Healthy before k8gb reports: %s", got)
	}
	if rec.Labels[v1alpha1.ProviderNameLabel] != k8gb.ProviderName {
		t.Errorf("provider label %q, want %q", rec.Labels[v1alpha1.ProviderNameLabel], k8gb.ProviderName)
	}
	cl.policyIs(t, "simple", dnspolicy.ConditionEnforced, "False")

	// k8gb reports the host healthy: the record is Ready and Healthy, the policy enforced.
	cl.gslbStatus(t, "gw-api", "eu", map[string]string{"api.example.com": "Healthy"}, map[string][]string{"api.example.com": {"10.0.0.1", "10.0.0.2"}})
	rec = cl.recordIs(t, "gw-api", v1alpha1.ConditionTypeReady, "True ProviderSuccess: Provider ensured the dns record")
	if got := conditionText(rec.Status.Conditions, v1alpha1.ConditionTypeHealthy); got != "True AllChecksPassed: All healthchecks succeeded" {
		t.Errorf("Healthy: %s", got)
	}
	if got := fmt.Sprint(rec.Status.Endpoints); !strings.Contains(got, "api.example.com") || !strings.Contains(got, "10.0.0.1") || len(rec.Status.Endpoints) != 1 {
		t.Errorf("status.endpoints %s, want the one A record handed to k8gb", got)
	}
	cl.policyIs(t, "simple", dnspolicy.ConditionEnforced, "True Enforced: DNSPolicy has been successfully enforced")
	// Looking at k8gb's status every poll writes nothing while nothing changes.
	before, passes, gslbVersion := cl.record(t, "gw-api").ResourceVersion, cl.passes("gw-api"), cl.gslb(t, "gw-api").GetResourceVersion()
	time.Sleep(6 * statusPoll)
	if now := cl.record(t, "gw-api"); now.ResourceVersion != before || cl.gslb(t, "gw-api").GetResourceVersion() != gslbVersion {
		t.Errorf("a steady record or its Gslb was rewritten: record %s -> %s, Gslb %s -> %s", before, now.ResourceVersion, gslbVersion, cl.gslb(t, "gw-api").GetResourceVersion())
	}
	if n := cl.passes("gw-api") - passes; n < 1 || n > 8 {
		t.Errorf("%v passes in %s, want about one per %s", n, 6*statusPoll, statusPoll)
	}

	// Unhealthy reads as unhealthy on the record and the policy.
	cl.gslbStatus(t, "gw-api", "eu", map[string]string{"api.example.com": "Unhealthy"}, map[string][]string{})
	rec = cl.recordIs(t, "gw-api", v1alpha1.ConditionTypeHealthy, "False HealthChecksFailed: Not healthy addresses: [10.0.0.1 10.0.0.2] (k8gb reports serviceHealth Unhealthy")
	if got := conditionText(rec.Status.Conditions, v1alpha1.ConditionTypeReady); got != "False HealthChecksFailed: Not publishing unhealthy records" {
		t.Errorf("Ready when unhealthy: %s", got)
	}
	p := cl.policyIs(t, "simple", dnspolicy.ConditionEnforced, "False Unknown: DNSPolicy has encountered some issues")
	if got := conditionText(p.Status.Conditions, dnspolicy.ConditionEnforced); !strings.Contains(got, "gw-api: HealthChecksFailed: Not publishing unhealthy records") {
		t.Errorf("Enforced must name the unhealthy record: %s", got)
	}
	eventually(t, 10*time.Second, func() string {
		p := cl.getPolicy(t, "simple")
		if got := conditionText(p.Status.RecordConditions["api.example.com"], v1alpha1.ConditionTypeHealthy); !strings.HasPrefix(got, "False HealthChecksFailed: Not healthy addresses") {
			return "recordConditions[api.example.com] Healthy: " + got
		}
		return ""
	})
	cl.gslbStatus(t, "gw-api", "eu", map[string]string{"api.example.com": "Healthy"}, map[string][]string{"api.example.com": {"10.0.0.1", "10.0.0.2"}})
	cl.recordIs(t, "gw-api", v1alpha1.ConditionTypeReady, "True ProviderSuccess")

	// The Gateway's addresses change: the Gslb follows, and keeps what k8gb wrote in its status.
	cl.addresses(t, "gw", "10.0.0.3", "10.0.0.4")
	g := cl.gslbIs(t, "gw-api", wantGslb{record: rec, route: "api", strategy: roundRobin, exposedIPs: "10.0.0.3,10.0.0.4"})
	if geo, _, _ := unstructured.NestedString(g.Object, "status", "geoTag"); geo != "eu" {
		t.Errorf("the Gslb's status was lost on update: geoTag %q", geo)
	}
	// So does the policy's excludeAddresses.
	cl.editPolicy(t, "simple", func(p *dnsv1.DNSPolicy) { p.Spec.ExcludeAddresses = []string{"10.0.0.3"} })
	cl.gslbIs(t, "gw-api", wantGslb{record: rec, route: "api", strategy: roundRobin, exposedIPs: "10.0.0.4"})
	// Only hostnames left: k8gb resolves them itself.
	cl.addresses(t, "gw", "lb.gw.example.net")
	cl.gslbIs(t, "gw-api", wantGslb{record: rec, route: "api", strategy: roundRobin, exposedHost: "lb.gw.example.net"})

	cl.deletePolicy(t, "simple")
	cl.gone(t, "gw-api")
}

// A load-balanced policy with weight and geo: k8gb's weighted round robin with the weight map the
// provider Secret shares between clusters; the policy's weight must agree with it.
func TestLoadBalancedPolicy(t *testing.T) {
	cl := startCluster(t)
	cl.secret(t, "k8gb", true, map[string]string{k8gb.GeoTagKey: "eu", k8gb.WeightsKey: "eu=3,us=1"})
	cl.gateway(t, "gw", []string{"10.1.0.1", "lb.gw.example.net"}, map[string]string{"api": "lb.example.com"})
	cl.route(t, "api", "gw", "api", "lb.example.com")
	lb := func(weight int) func(*dnsv1.DNSPolicy) {
		return func(p *dnsv1.DNSPolicy) {
			p.Spec.LoadBalancing = &dnsv1.LoadBalancingSpec{Weight: weight, Geo: "GEO-EU", DefaultGeo: true}
		}
	}
	cl.policy(t, "lb", "gw", "", lb(3))

	rec := cl.recordIs(t, "gw-api", v1alpha1.ConditionTypeReady, "False AwaitingValidation")
	weighted := map[string]any{"type": "roundRobin", "dnsTtlSeconds": int64(60), "weight": map[string]any{"eu": int64(3), "us": int64(1)}}
	// The IPs win over the Gateway's hostname: k8gb takes one kind of address per Gslb.
	want := wantGslb{record: rec, route: "api", strategy: weighted, exposedIPs: "10.1.0.1"}
	cl.gslbIs(t, "gw-api", want)
	cl.gslbStatus(t, "gw-api", "eu", map[string]string{"lb.example.com": "Healthy"}, map[string][]string{"lb.example.com": {"10.1.0.1", "10.2.0.1"}})
	cl.recordIs(t, "gw-api", v1alpha1.ConditionTypeReady, "True ProviderSuccess")
	cl.policyIs(t, "lb", dnspolicy.ConditionEnforced, "True Enforced")

	// A weight the shared map does not hold cannot be expressed: a stable condition, bounded
	// passes, and the Gslb stays as it was.
	cl.editPolicy(t, "lb", lb(5))
	cl.settles(t, "gw-api", "False ProviderError: The DNS provider failed to ensure the record: loadBalancing.weight 5 differs from the weight of this cluster's geo tag eu in K8GB_WEIGHTS (3)")
	if now := cl.gslb(t, "gw-api"); want.diff(now) != "" {
		t.Errorf("the Gslb changed while the policy could not be expressed: %s", want.diff(now))
	}
	cl.policyIs(t, "lb", dnspolicy.ConditionEnforced, "False")

	cl.editPolicy(t, "lb", lb(3))
	cl.recordIs(t, "gw-api", v1alpha1.ConditionTypeReady, "True ProviderSuccess")
	cl.deletePolicy(t, "lb")
	cl.gone(t, "gw-api")
}

// A listener-level policy wins its listener from the Gateway-level one, with its own provider
// Secret (failover); when it goes, the Gateway-level policy takes the listener over and the same
// Gslb is updated in place.
func TestListenerPolicy(t *testing.T) {
	cl := startCluster(t)
	cl.secret(t, "k8gb", true, map[string]string{k8gb.GeoTagKey: "eu"})
	cl.secret(t, "k8gb-failover", false, map[string]string{k8gb.GeoTagKey: "eu", k8gb.StrategyKey: "failover", k8gb.PrimaryGeoTagKey: "eu"})
	cl.gateway(t, "gw", []string{"10.3.0.1"}, map[string]string{"api": "api.listener.example.com", "web": "web.listener.example.com"})
	cl.route(t, "api", "gw", "api", "api.listener.example.com")
	cl.route(t, "web-wide", "gw", "web", "web.listener.example.com", "www.listener.example.com")
	cl.route(t, "web", "gw", "web", "web.listener.example.com")
	cl.policy(t, "gateway", "gw", "", nil)
	cl.policy(t, "web", "gw", "web", func(p *dnsv1.DNSPolicy) {
		p.Spec.ProviderRefs = []v1alpha1.ProviderRef{{Name: "k8gb-failover"}}
		p.Spec.LoadBalancing = &dnsv1.LoadBalancingSpec{Weight: 120, Geo: "eu", DefaultGeo: true}
	})

	roundRobin := map[string]any{"type": "roundRobin", "dnsTtlSeconds": int64(60)}
	api := cl.recordIs(t, "gw-api", v1alpha1.ConditionTypeReady, "False AwaitingValidation")
	cl.gslbIs(t, "gw-api", wantGslb{record: api, route: "api", strategy: roundRobin, exposedIPs: "10.3.0.1"})
	web := cl.recordIs(t, "gw-web", v1alpha1.ConditionTypeReady, "False AwaitingValidation")
	if owner := metav1.GetControllerOf(web); owner == nil || owner.Name != "web" {
		t.Fatalf("gw-web is controlled by %+v, want the listener-level policy", owner)
	}
	// Of the two routes on the listener, the one listing only the hostname (k8gb serves them all).
	cl.gslbIs(t, "gw-web", wantGslb{record: web, route: "web", exposedIPs: "10.3.0.1",
		strategy: map[string]any{"type": "failover", "dnsTtlSeconds": int64(60), "primaryGeoTag": "eu"}})

	cl.deletePolicy(t, "web")
	eventually(t, 20*time.Second, func() string {
		if owner := metav1.GetControllerOf(cl.record(t, "gw-web")); owner == nil || owner.Name != "gateway" {
			return fmt.Sprintf("gw-web controlled by %+v, want the Gateway-level policy", owner)
		}
		return ""
	})
	cl.gslbIs(t, "gw-web", wantGslb{record: web, route: "web", strategy: roundRobin, exposedIPs: "10.3.0.1"})

	cl.deletePolicy(t, "gateway")
	cl.gone(t, "gw-api", "gw-web")
}

// Bad input: a Secret without the geo tag, a strategy k8gb cannot express, a listener whose route
// lists no hostname, a wildcard listener, a same-named Gslb that is not ours. Each is a stable condition with bounded
// passes, and the foreign Gslb is never changed or deleted.
func TestBadInput(t *testing.T) {
	cl := startCluster(t)
	cl.secret(t, "k8gb", true, map[string]string{k8gb.GeoTagKey: "eu"})
	cl.secret(t, "no-geo-tag", false, map[string]string{k8gb.StrategyKey: "roundRobin"})
	cl.gateway(t, "gw", []string{"10.4.0.1"}, map[string]string{
		"nogeo": "nogeo.bad.example.com", "weight": "weight.bad.example.com", "nohost": "nohost.bad.example.com", "taken": "taken.bad.example.com",
		"wild": "*.wild.bad.example.com",
	})
	cl.route(t, "nogeo", "gw", "nogeo", "nogeo.bad.example.com")
	cl.route(t, "weight", "gw", "weight", "weight.bad.example.com")
	cl.route(t, "nohost", "gw", "nohost")
	cl.route(t, "taken", "gw", "taken", "taken.bad.example.com")
	cl.route(t, "wild", "gw", "wild", "*.wild.bad.example.com")
	foreign := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"strategy": map[string]any{"type": "failover", "primaryGeoTag": "us"}}}}
	foreign.SetGroupVersionKind(k8gb.GslbKind)
	foreign.SetNamespace(cl.ns)
	foreign.SetName("gw-taken")
	cl.create(t, foreign)
	foreignVersion := foreign.GetResourceVersion()

	cl.policy(t, "nogeo", "gw", "nogeo", func(p *dnsv1.DNSPolicy) { p.Spec.ProviderRefs = []v1alpha1.ProviderRef{{Name: "no-geo-tag"}} })
	cl.policy(t, "weight", "gw", "weight", func(p *dnsv1.DNSPolicy) {
		p.Spec.LoadBalancing = &dnsv1.LoadBalancingSpec{Weight: 200, Geo: "GEO-EU"}
	})
	cl.policy(t, "nohost", "gw", "nohost", nil)
	cl.policy(t, "taken", "gw", "taken", nil)
	cl.policy(t, "wild", "gw", "wild", nil)

	cl.settles(t, "gw-nogeo", "False UnsupportedProvider: provider secret "+cl.ns+"/no-geo-tag: key K8GB_GEO_TAG is required")
	cl.settles(t, "gw-weight", "False ProviderError: The DNS provider failed to ensure the record: loadBalancing.weight 200 cannot be expressed without K8GB_WEIGHTS")
	cl.settles(t, "gw-nohost", "False ProviderError: The DNS provider failed to ensure the record: no HTTPRoute accepted on listener nohost of Gateway "+cl.ns+"/gw can be handed to k8gb for nohost.bad.example.com: HTTPRoute "+cl.ns+"/nohost does not list hostname nohost.bad.example.com")
	cl.settles(t, "gw-taken", "False ProviderError: The DNS provider failed to ensure the record: Gslb "+cl.ns+"/gw-taken exists and was not created by this controller for DNSRecord "+cl.ns+"/gw-taken; it is never adopted or changed")
	cl.settles(t, "gw-wild", "False ProviderError: The DNS provider failed to ensure the record: k8gb cannot serve the wildcard hostname *.wild.bad.example.com")
	for _, name := range []string{"gw-nogeo", "gw-weight", "gw-nohost", "gw-wild"} {
		if cl.gslb(t, name) != nil {
			t.Errorf("Gslb %s was created for a record that cannot be expressed", name)
		}
	}
	cl.policyIs(t, "taken", dnspolicy.ConditionEnforced, "False")

	// The foreign Gslb survives its namesake record, untouched.
	cl.deletePolicy(t, "taken")
	eventually(t, 20*time.Second, func() string {
		if cl.record(t, "gw-taken") != nil {
			return "DNSRecord gw-taken still exists"
		}
		return ""
	})
	if now := cl.gslb(t, "gw-taken"); now == nil || now.GetResourceVersion() != foreignVersion {
		t.Fatalf("the foreign Gslb was deleted or changed: %v", now)
	}
}

// k8gb not installed (its CRD deleted): a stable condition with bounded passes; once k8gb is
// installed again the record is published without a restart.
func TestK8gbNotInstalled(t *testing.T) {
	uninstallCRD(t)
	cl := startCluster(t)
	cl.secret(t, "k8gb", true, map[string]string{k8gb.GeoTagKey: "eu"})
	cl.gateway(t, "gw", []string{"10.5.0.1"}, map[string]string{"api": "api.absent.example.com"})
	cl.route(t, "api", "gw", "api", "api.absent.example.com")
	cl.policy(t, "p", "gw", "", nil)

	cl.settles(t, "gw-api", "False ProviderError: The DNS provider failed to ensure the record: k8gb is not installed: the API server does not serve k8gb.io/v1beta1 (CRD gslbs.k8gb.io)")

	installCRD(t)
	rec := cl.recordIs(t, "gw-api", v1alpha1.ConditionTypeReady, "False AwaitingValidation")
	cl.gslbIs(t, "gw-api", wantGslb{record: rec, route: "api", strategy: map[string]any{"type": "roundRobin", "dnsTtlSeconds": int64(60)}, exposedIPs: "10.5.0.1"})
	cl.deletePolicy(t, "p")
	cl.gone(t, "gw-api")
}

// uninstallCRD deletes k8gb's CRD, as uninstalling k8gb does, and puts it back when the test ends.
func uninstallCRD(t *testing.T) {
	t.Helper()
	opts := envtest.CRDInstallOptions{Paths: []string{crdDir()}}
	if err := envtest.UninstallCRDs(env.Config, opts); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() string {
		if installed(t) {
			return "the Gslb CRD is still served"
		}
		return ""
	})
	t.Cleanup(func() {
		if !installed(t) {
			installCRD(t)
		}
	})
}

// installCRD installs k8gb's CRD and waits until Gslbs are served.
func installCRD(t *testing.T) {
	t.Helper()
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{crdDir()}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() string {
		if !installed(t) {
			return "the Gslb CRD is not served yet"
		}
		return ""
	})
}

// installed asks the API server's discovery (not a cached mapping) whether it serves Gslbs.
func installed(t *testing.T) bool {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	resources, err := dc.ServerResourcesForGroupVersion(k8gb.GslbKind.GroupVersion().String())
	if err != nil {
		return false
	}
	for _, r := range resources.APIResources {
		if r.Kind == k8gb.GslbKind.Kind {
			return true
		}
	}
	return false
}
