//go:build integration

// Package clouds_test runs the DNSRecord controller against each emulated cloud (Route 53, Cloud
// DNS, Azure DNS + Traffic Manager) through the backends' real SDKs: two control planes, each with
// its own manager and owner, sharing one emulated account as clusters share a cloud account.
package clouds_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/test/emulators/cloud"
	"github.com/dnspolicy/dnspolicy-controller/test/integration/internal/recordplane"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// envs are two control planes, one per simulated cluster.
var envs []*testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, 2, &envs)) }

// startCloud starts the named cloud's emulator for the test.
func startCloud(t testing.TB, name string) *cloud.Cloud {
	t.Helper()
	c, err := cloud.Start(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// forEachCloud runs f as a parallel subtest per cloud, each with its own emulator.
func forEachCloud(t *testing.T, f func(t *testing.T, c *cloud.Cloud)) {
	for _, name := range cloud.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f(t, startCloud(t, name))
		})
	}
}

// fastOptions re-check often, so tests observe many passes in little time.
func fastOptions() dnsrecord.Options {
	o := dnsrecord.DefaultOptions()
	o.MinRecheck, o.MaxRecheck = 500*time.Millisecond, time.Second
	o.MinBackoff, o.MaxBackoff = 500*time.Millisecond, 8*time.Second
	o.ValidationRetry = 200 * time.Millisecond
	return o
}

// cluster is one control plane running one manager, watching one namespace.
type cluster struct {
	name string
	c    client.Client
	ns   string
}

// startClusters starts n managers (n <= 2) publishing to c with the production backend, each watching
// a fresh namespace that holds a valid provider Secret named "provider".
func startClusters(t testing.TB, c *cloud.Cloud, n int, opts dnsrecord.Options) []*cluster {
	t.Helper()
	factory := providers.NewFactory()
	c.Register(factory)
	var out []*cluster
	for i, e := range envs[:n] {
		ns := recordplane.Start(t, e, fmt.Sprintf("%s-c%d-", c.Name, i),
			recordplane.Controller{App: app.Options{EnableRecordController: true}, Factory: factory, Record: opts})
		cl := &cluster{name: fmt.Sprintf("%s/cluster-%d", c.Name, i), c: e.Client, ns: ns}
		if err := cl.c.Create(t.Context(), c.Secret(ns, "provider")); err != nil {
			t.Fatal(err)
		}
		out = append(out, cl)
	}
	return out
}

func (cl *cluster) record(t testing.TB, name, rootHost string, eps ...*v1alpha1.Endpoint) {
	t.Helper()
	r := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cl.ns},
		Spec: v1alpha1.DNSRecordSpec{
			RootHost:    rootHost,
			ProviderRef: &v1alpha1.ProviderRef{Name: "provider"},
			Endpoints:   eps,
		},
	}
	if err := cl.c.Create(t.Context(), r); err != nil {
		t.Fatal(err)
	}
}

func (cl *cluster) get(t testing.TB, name string) *v1alpha1.DNSRecord {
	t.Helper()
	r := &v1alpha1.DNSRecord{}
	if err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: cl.ns, Name: name}, r); err != nil {
		t.Fatal(err)
	}
	return r
}

func (cl *cluster) delete(t testing.TB, name string) {
	t.Helper()
	r := &v1alpha1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: cl.ns, Name: name}}
	if err := cl.c.Delete(t.Context(), r); err != nil {
		t.Fatal(err)
	}
}

// gone reports "" once the record is deleted (its finalizer released).
func (cl *cluster) gone(t testing.TB, name string) string {
	r := &v1alpha1.DNSRecord{}
	if err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: cl.ns, Name: name}, r); err == nil {
		return fmt.Sprintf("%s: record %s still present, finalizers %v", cl.name, name, r.Finalizers)
	}
	return ""
}

// ready returns the record's Ready condition (nil when not set yet).
func ready(r *v1alpha1.DNSRecord) *metav1.Condition {
	return meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionTypeReady)
}

// eventually is testenv.Eventually, short for the many polls here.
var eventually = testenv.Eventually

// same returns "" when got equals want, else both, one line each.
func same(what string, got, want []string) string {
	if slices.Equal(got, want) {
		return ""
	}
	return fmt.Sprintf("%s holds\n  %s\nwant\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
}

// passes reads dnspolicy_dnsrecord_reconciles_total of one record from the controller-runtime registry.
func passes(cl *cluster, name string) float64 {
	return testenv.Counter("dnspolicy_dnsrecord_reconciles_total", cl.ns, name)
}

func a(name string, ttl int64, ips ...string) *v1alpha1.Endpoint {
	return v1alpha1.NewEndpoint(name, "A", v1alpha1.TTL(ttl), ips...)
}

func cname(name string, ttl int64, target string) *v1alpha1.Endpoint {
	return v1alpha1.NewEndpoint(name, "CNAME", v1alpha1.TTL(ttl), target)
}

// geoCode is how a test names a place in the cloud's terms: Cloud DNS routes by Google Cloud
// region, the others by ISO country code.
func geoCode(c *cloud.Cloud, country string) string {
	if c.Name != cloud.Google {
		return country
	}
	return map[string]string{"IE": "europe-west1", "US": "us-east1", "DE": "europe-west3", "JP": "asia-northeast1"}[country]
}

// lbTree is one cluster's loadbalanced tree for host, Kuadrant's shape (DESIGN 3), with the geo
// code in the cloud's terms.
func lbTree(c *cloud.Cloud, host, country string, weight int, defaultGeo bool, leaf, ip string) []*v1alpha1.Endpoint {
	code := geoCode(c, country)
	klb := "klb." + host
	geoName := strings.ToLower(code) + "." + klb
	eps := []*v1alpha1.Endpoint{
		cname(host, 300, klb),
		cname(klb, 300, geoName).WithSetIdentifier(code).WithProviderSpecific(v1alpha1.ProviderSpecificGeoCode, code),
		cname(geoName, 60, leaf+"."+klb).WithSetIdentifier(leaf+"."+klb).WithProviderSpecific(v1alpha1.ProviderSpecificWeight, fmt.Sprint(weight)),
		a(leaf+"."+klb, 60, ip),
	}
	if defaultGeo {
		eps = append(eps, cname(klb, 300, geoName).WithSetIdentifier("default").WithProviderSpecific(v1alpha1.ProviderSpecificGeoCode, v1alpha1.WildcardGeo))
	}
	return eps
}
