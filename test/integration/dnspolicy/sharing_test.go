//go:build integration

package dnspolicy_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	dnsv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnspolicy"
	"github.com/dnspolicy/dnspolicy-controller/pkg/builder"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

func kubeSystemUID(t testing.TB, env *testenv.Env) string {
	t.Helper()
	id, err := env.ClusterID(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// Two clusters, each a Gateway and a loadbalanced policy for one hostname (IE with defaultGeo, and
// US with another weight), build in one shared zone exactly the union of their trees, as Kuadrant
// would; when one policy goes, exactly the other cluster's tree remains.
func TestTwoClustersShareTheTree(t *testing.T) {
	store := inmemory.NewStore()
	const zone, host = "global.example.com", "api.global.example.com"
	store.EnsureZone(zone)
	type side struct {
		cl        *cluster
		addresses []string
		lb        *dnsv1.LoadBalancingSpec
		tree      []string
	}
	sides := []*side{
		{addresses: []string{"172.16.0.1"}, lb: &dnsv1.LoadBalancingSpec{Geo: "IE", Weight: 200, DefaultGeo: true}},
		{addresses: []string{"172.16.1.1", "lb-us.cloud.example"}, lb: &dnsv1.LoadBalancingSpec{Geo: "US", Weight: 100}},
	}
	for i, s := range sides {
		s.cl = startCluster(t, []string{"eu", "us"}[i], envs[i], store)
		s.cl.secret(t, zone)
		s.cl.gateway(t, "gw", s.addresses, listener{"api", host})
		p := s.cl.newPolicy("lb", "gw", "")
		p.Spec.LoadBalancing = s.lb
		s.cl.create(t, p)
	}
	var union []string
	for _, s := range sides {
		eps, err := builder.Build(builder.Input{
			Hostname: host, Addresses: s.cl.getGateway(t, "gw").Status.Addresses, GatewayName: "gw", GatewayNamespace: s.cl.ns,
			ClusterID: kubeSystemUID(t, s.cl.env), LoadBalancing: s.lb,
		})
		if err != nil {
			t.Fatal(err)
		}
		s.tree = lines(eps)
		union = append(union, s.tree...)
	}
	union = slices.Compact(slices.Sorted(slices.Values(union)))

	// The shape of DESIGN section 3, literally, so a wrong builder cannot pass by agreeing with itself.
	klb := "klb." + host
	euLeaf := hash.Base36(kubeSystemUID(t, sides[0].cl.env), 6) + "-" + hash.Base36("gw-"+sides[0].cl.ns, 6) + "." + klb
	usLeaf := hash.Base36(kubeSystemUID(t, sides[1].cl.env), 6) + "-" + hash.Base36("gw-"+sides[1].cl.ns, 6) + "." + klb
	literal := []string{
		euLeaf + " A 60 172.16.0.1",
		host + " CNAME 300 " + klb,
		"ie." + klb + " CNAME 60 " + euLeaf + " set=" + euLeaf + " weight=200",
		klb + " CNAME 300 ie." + klb + " set=IE geo=IE",
		klb + " CNAME 300 ie." + klb + " set=default geo=*",
		klb + " CNAME 300 us." + klb + " set=US geo=US",
		"us." + klb + " CNAME 60 " + usLeaf + " set=" + usLeaf + " weight=100",
		"us." + klb + " CNAME 60 lb-us.cloud.example set=lb-us.cloud.example weight=100",
		usLeaf + " A 60 172.16.1.1",
	}
	slices.Sort(literal)
	if msg := same(union, literal); msg != "" {
		t.Fatalf("the builder's union is not the tree of DESIGN section 3:\n%s", msg)
	}

	eventually(t, 30*time.Second, func() string { return same(records(t, store, zone), union) })
	for _, s := range sides {
		s.cl.policyIs(t, "lb", dnspolicy.ConditionEnforced, "True Enforced: DNSPolicy has been successfully enforced")
	}

	sides[0].cl.delete(t, sides[0].cl.getPolicy(t, "lb"))
	eventually(t, 20*time.Second, func() string { return same(records(t, store, zone), sides[1].tree) })
	if p := sides[1].cl.policyIs(t, "lb", dnspolicy.ConditionEnforced, "True Enforced: DNSPolicy has been successfully enforced"); p.Status.TotalRecords != 1 {
		t.Errorf("remaining policy: totalRecords %d", p.Status.TotalRecords)
	}
	// The zone is clean before the record goes: its finalizer is removed after the withdrawal.
	eventually(t, 10*time.Second, func() string {
		if names := sides[0].cl.recordNames(t); len(names) > 0 {
			return "records left behind by the deleted policy: " + strings.Join(names, ", ")
		}
		return ""
	})
}
