//go:build integration

package dnspolicy_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	dnsv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnspolicy"
	"github.com/dnspolicy/dnspolicy-controller/hack/controlplane"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// Each bad input shows its reason and message on the policy, publishes nothing, and costs a bounded
// number of passes.
func TestBadInput(t *testing.T) {
	store := inmemory.NewStore()
	cl := startCluster(t, "c0", envs[0], store)
	const zone = "bad.example.com"
	store.EnsureZone(zone)
	cl.secret(t, zone)
	cl.gateway(t, "gw", []string{"10.4.0.1"}, listener{"api", "api." + zone}, listener{"nohost", ""})
	cl.gateway(t, "gw-geo", []string{"10.4.0.2"}, listener{"api", "geo." + zone})
	cl.gateway(t, "gw-secret", []string{"10.4.0.4"}, listener{"api", "secret." + zone})
	// A Gateway of the same name in another namespace is not a target: targetRef is local.
	other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "other-"}}
	cl.create(t, other)
	(&cluster{c: cl.c, ns: other.Name}).gateway(t, "elsewhere", []string{"10.4.0.9"}, listener{"api", "elsewhere." + zone})

	// Rejected by the API server, naming the field, before any controller sees them.
	wrongKind := cl.newPolicy("wrong-kind", "gw", "")
	wrongKind.Spec.TargetRef.Kind = "HTTPRoute"
	badCIDR := cl.newPolicy("bad-cidr", "gw", "")
	badCIDR.Spec.ExcludeAddresses = []string{"10.0.0.0/33"}
	negative := cl.newPolicy("negative", "gw", "")
	negative.Spec.LoadBalancing = &dnsv1.LoadBalancingSpec{Geo: "IE", Weight: -1}
	for _, tc := range []struct {
		p    *dnsv1.DNSPolicy
		want string
	}{
		{wrongKind, "Invalid targetRef.kind. The only supported values are 'Gateway'"},
		{badCIDR, "excludeAddresses entries containing '/' must be valid CIDRs"},
		{negative, "spec.loadBalancing.weight"},
	} {
		if err := cl.c.Create(context.Background(), tc.p); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want Invalid containing %q, got %v", tc.p.Name, tc.want, err)
		}
	}

	badGeo := cl.newPolicy("bad-geo", "gw-geo", "")
	badGeo.Spec.LoadBalancing = &dnsv1.LoadBalancingSpec{Geo: "e.u", Weight: 10}
	noSecret := cl.newPolicy("no-secret", "gw-secret", "")
	noSecret.Spec.ProviderRefs = []v1alpha1.ProviderRef{{Name: "nope"}}
	for _, p := range []*dnsv1.DNSPolicy{
		cl.newPolicy("missing-gateway", "nope", ""),
		cl.newPolicy("other-namespace", "elsewhere", ""),
		cl.newPolicy("missing-listener", "gw", "nope"),
		cl.newPolicy("no-hostname", "gw", "nohost"),
		badGeo, noSecret,
	} {
		cl.create(t, p)
	}

	cases := []struct{ policy, typ, want string }{
		{"missing-gateway", dnspolicy.ConditionAccepted, "False TargetNotFound: DNSPolicy target nope was not found"},
		{"other-namespace", dnspolicy.ConditionAccepted, "False TargetNotFound: DNSPolicy target elsewhere was not found"},
		{"missing-listener", dnspolicy.ConditionAccepted, `False TargetNotFound: DNSPolicy target gw was not found: Gateway gw has no listener "nope"`},
		{"no-hostname", dnspolicy.ConditionEnforced,
			"True Enforced: DNSPolicy has been successfully enforced : no DNSRecords created based on policy and gateway configuration: listener nohost has no hostname"},
		{"bad-geo", dnspolicy.ConditionAccepted, `False Invalid: DNSPolicy is invalid: geo code "e.u" cannot be used in a DNS name`},
		{"no-secret", dnspolicy.ConditionEnforced,
			"False Unknown: DNSPolicy has encountered some issues: policy is not enforced on any DNSRecord: not a single DNSRecord is ready: " +
				"gw-secret-api: ProviderSecretMissing: provider secret missing: secret " + cl.ns + "/nope not found; " +
				"to fix: create the provider Secret in this namespace, or name an existing one in spec.providerRefs"},
	}
	for _, tc := range cases {
		cl.policyIs(t, tc.policy, tc.typ, tc.want)
	}
	for _, name := range []string{"missing-gateway", "other-namespace", "missing-listener", "bad-geo"} {
		if got := condition(cl.getPolicy(t, name), dnspolicy.ConditionEnforced); got != "absent" {
			t.Errorf("%s is not accepted, yet Enforced is %s", name, got)
		}
	}
	p := cl.getPolicy(t, "no-secret")
	if got := condition(p, dnspolicy.ConditionAccepted); got != "True Accepted: DNSPolicy has been accepted" {
		t.Errorf("no-secret: Accepted %s", got)
	}
	if conds := p.Status.RecordConditions["secret."+zone]; len(conds) != 1 || conds[0].Type != "Ready" || conds[0].Reason != "ProviderSecretMissing" {
		t.Errorf("no-secret: recordConditions %+v, want the record's failing Ready", p.Status.RecordConditions)
	}
	// Only the policy whose one fault is the missing Secret has a record, and nothing is published.
	if names := cl.recordNames(t); !slices.Equal(names, []string{"gw-secret-api"}) {
		t.Errorf("records %v, want only gw-secret-api", names)
	}
	if got := records(t, store, zone); len(got) > 0 {
		t.Errorf("zone holds %v, want nothing", got)
	}

	// Bounded: once each status is written, nothing re-triggers a pass.
	before := map[string]float64{}
	for _, tc := range cases {
		before[tc.policy] = passes(cl, tc.policy)
	}
	time.Sleep(5 * time.Second)
	for _, tc := range cases {
		if n := passes(cl, tc.policy) - before[tc.policy]; n > 2 {
			t.Errorf("%s: %v passes in 5 s with nothing changing, want at most 2", tc.policy, n)
		}
		if before[tc.policy] == 0 || before[tc.policy] > 20 {
			t.Errorf("%s: %v passes to settle, want between 1 and 20", tc.policy, before[tc.policy])
		}
	}

	// The missing Secret appears: the record publishes and the policy is enforced without a nudge.
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "nope", Namespace: cl.ns},
		Type:       v1alpha1.SecretTypeInMemory,
		StringData: map[string]string{v1alpha1.InMemInitZonesKey: zone},
	}
	cl.create(t, s)
	cl.policyIs(t, "no-secret", dnspolicy.ConditionEnforced, "True Enforced: DNSPolicy has been successfully enforced")
	eventually(t, 10*time.Second, func() string {
		return same(records(t, store, zone), []string{"secret.bad.example.com A 60 10.4.0.4"})
	})
}

// Started without the Gateway API, the controller runs and says so on every policy; once the CRDs
// are installed it watches Gateways and publishes, without a restart.
func TestMissingGatewayAPI(t *testing.T) {
	env, err := testenv.Start(testenv.Options{WithoutGatewayAPI: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	store := inmemory.NewStore()
	cl := startCluster(t, "bare", env, store)
	const zone = "late.example.com"
	store.EnsureZone(zone)
	cl.secret(t, zone)
	cl.create(t, cl.newPolicy("p", "gw", ""))
	cl.policyIs(t, "p", dnspolicy.ConditionAccepted,
		"False MissingDependency: [Gateway API] is not installed: the policy is evaluated as soon as its CRDs are installed, without a restart")

	files, err := controlplane.GatewayAPICRDs()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: files}); err != nil {
		t.Fatal(err)
	}
	cl.policyIs(t, "p", dnspolicy.ConditionAccepted, "False TargetNotFound: DNSPolicy target gw was not found")

	cl.gateway(t, "gw", []string{"10.5.0.1"}, listener{"api", "api." + zone})
	cl.policyIs(t, "p", dnspolicy.ConditionEnforced, "True Enforced: DNSPolicy has been successfully enforced")
	eventually(t, 10*time.Second, func() string {
		return same(records(t, store, zone), []string{"api.late.example.com A 60 10.5.0.1"})
	})
}

// An edit that makes a published policy invalid leaves its records as they were, says so, and the
// fix picks up where it left off: a typo does not take a hostname out of DNS.
func TestInvalidEditKeepsRecords(t *testing.T) {
	store := inmemory.NewStore()
	cl := startCluster(t, "c0", envs[0], store)
	const zone = "edit.example.com"
	store.EnsureZone(zone)
	cl.secret(t, zone)
	cl.gateway(t, "gw", []string{"10.6.0.1"}, listener{"api", "api." + zone})
	p := cl.newPolicy("p", "gw", "")
	p.Spec.LoadBalancing = &dnsv1.LoadBalancingSpec{Geo: "IE", Weight: 10}
	cl.create(t, p)
	cl.policyIs(t, "p", dnspolicy.ConditionEnforced, "True Enforced: DNSPolicy has been successfully enforced")
	eventually(t, 20*time.Second, func() string {
		if got := records(t, store, zone); len(got) != 4 {
			return fmt.Sprintf("zone holds %v, want the 4 record sets of one cluster's tree", got)
		}
		return ""
	})
	published := records(t, store, zone)
	rec := cl.record(t, "gw-api")

	cl.editPolicy(t, "p", func(p *dnsv1.DNSPolicy) { p.Spec.LoadBalancing.Geo = "i.e" })
	cl.policyIs(t, "p", dnspolicy.ConditionAccepted,
		`False Invalid: DNSPolicy is invalid: geo code "i.e" cannot be used in a DNS name; DNSRecords gw-api stay as published until the policy is valid`)
	// A change of the Gateway must not slip through either while the policy is invalid.
	cl.gatewayStatus(t, "gw", []string{"10.6.0.2"}, map[string]int32{"api": 1})
	time.Sleep(2 * time.Second)
	if got := records(t, store, zone); same(got, published) != "" {
		t.Errorf("the invalid policy changed the zone: %s", same(got, published))
	}
	if r := cl.record(t, "gw-api"); r == nil || r.UID != rec.UID || r.Generation != rec.Generation {
		t.Errorf("the invalid policy touched its record: %v", r)
	}

	cl.editPolicy(t, "p", func(p *dnsv1.DNSPolicy) { p.Spec.LoadBalancing.Geo = "IE" })
	cl.policyIs(t, "p", dnspolicy.ConditionAccepted, "True Accepted")
	eventually(t, 20*time.Second, func() string {
		got := records(t, store, zone)
		if !slices.ContainsFunc(got, func(l string) bool { return strings.HasSuffix(l, " A 60 10.6.0.2") }) {
			return fmt.Sprintf("zone holds %v, want the leaf at 10.6.0.2", got)
		}
		return ""
	})
}
