//go:build integration

// Package dnsrecord_test runs the DNSRecord controller on real control planes: three of them, each
// with its own manager and owner, sharing zones through one inmemory store as clusters share a cloud
// account.
package dnsrecord_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
	"github.com/dnspolicy/dnspolicy-controller/test/integration/internal/recordplane"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// envs are three control planes, one per simulated cluster.
var envs []*testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, 3, &envs)) }

// fastOptions re-check often, so tests observe many passes in little time.
func fastOptions() dnsrecord.Options {
	o := dnsrecord.DefaultOptions()
	o.MinRecheck, o.MaxRecheck = 100*time.Millisecond, 200*time.Millisecond
	o.MinBackoff, o.MaxBackoff = 500*time.Millisecond, 8*time.Second
	o.ValidationRetry = 100 * time.Millisecond
	o.OrphanGrace = 2 * time.Second
	return o
}

// cluster is one control plane running one manager, watching one namespace.
type cluster struct {
	name string
	c    client.Client
	ns   string
}

// startClusters starts n managers on the first n control planes, each watching a fresh namespace and
// publishing into store. factory, when not nil, replaces the default factory.
func startClusters(t testing.TB, n int, store *inmemory.Store, opts dnsrecord.Options, factory *providers.Factory) []*cluster {
	t.Helper()
	if factory == nil {
		factory = providers.NewFactory()
		factory.Register(v1alpha1.SecretTypeInMemory, inmemory.NewConstructor(store))
	}
	var out []*cluster
	for i, e := range envs[:n] {
		// The health tests' gateways are on loopback, which probes reach only when allowed;
		// refusedGateway stays refused, as the administrator's deny wins.
		o := app.Options{EnableRecordController: true, HealthCheckAllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
			HealthCheckDeniedCIDRs: []netip.Prefix{netip.MustParsePrefix(refusedGateway + "/32")}}
		ns := recordplane.Start(t, e, fmt.Sprintf("c%d-", i), recordplane.Controller{App: o, Factory: factory, Record: opts})
		out = append(out, &cluster{name: fmt.Sprintf("cluster-%d", i), c: e.Client, ns: ns})
	}
	return out
}

// secret creates the inmemory provider Secret named "provider" for the zones.
func (cl *cluster) secret(t testing.TB, zones string) {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "provider", Namespace: cl.ns},
		Type:       v1alpha1.SecretTypeInMemory,
		StringData: map[string]string{v1alpha1.InMemInitZonesKey: zones},
	}
	if err := cl.c.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

func (cl *cluster) record(t testing.TB, name, rootHost string, eps ...*v1alpha1.Endpoint) *v1alpha1.DNSRecord {
	t.Helper()
	r := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cl.ns},
		Spec: v1alpha1.DNSRecordSpec{
			RootHost:    rootHost,
			ProviderRef: &v1alpha1.ProviderRef{Name: "provider"},
			Endpoints:   eps,
		},
	}
	if err := cl.c.Create(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return r
}

func (cl *cluster) get(t testing.TB, name string) *v1alpha1.DNSRecord {
	t.Helper()
	r := &v1alpha1.DNSRecord{}
	if err := cl.c.Get(context.Background(), client.ObjectKey{Namespace: cl.ns, Name: name}, r); err != nil {
		t.Fatal(err)
	}
	return r
}

func (cl *cluster) delete(t testing.TB, name string) {
	t.Helper()
	r := &v1alpha1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: cl.ns, Name: name}}
	if err := cl.c.Delete(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

// ready returns the record's Ready condition (nil when not set yet).
func ready(r *v1alpha1.DNSRecord) *metav1.Condition {
	return meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionTypeReady)
}

// eventually is testenv.Eventually, short for the many polls here.
var eventually = testenv.Eventually

// zone returns the zone's records as sorted lines, for comparisons that show the whole zone on failure.
func zone(t testing.TB, store *inmemory.Store, name string) []string {
	t.Helper()
	eps, err := store.Snapshot(inmemory.ZoneID(name))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, ep := range eps {
		targets := append([]string(nil), ep.Targets...)
		sort.Strings(targets)
		line := fmt.Sprintf("%s %s %d %s", ep.DNSName, ep.RecordType, ep.RecordTTL, strings.Join(targets, ","))
		if ep.SetIdentifier != "" {
			line += " set=" + ep.SetIdentifier
		}
		lines = append(lines, line)
	}
	sort.Strings(lines)
	return lines
}

// records returns the zone's non-TXT records as lines.
func records(t testing.TB, store *inmemory.Store, name string) []string {
	var out []string
	for _, l := range zone(t, store, name) {
		if !strings.Contains(l, " TXT ") {
			out = append(out, l)
		}
	}
	return out
}

// txtCount counts the zone's TXT records but the clusters' leases: the clusters sharing names each
// renew one (docs/zone-sharing.md#owner-leases), which the lease tests check.
func txtCount(t testing.TB, store *inmemory.Store, name string) int {
	eps, err := store.Snapshot(inmemory.ZoneID(name))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ep := range eps {
		if ep.RecordType == v1alpha1.RecordTypeTXT && !strings.HasPrefix(ep.DNSName, "dnspolicy-lease-") {
			n++
		}
	}
	return n
}

// recordBatches counts the batches applied to the zone that change anything but a lease.
func recordBatches(t testing.TB, store *inmemory.Store, name string) int {
	applied, err := store.Applied(inmemory.ZoneID(name))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, names := range applied {
		if slices.ContainsFunc(names, func(n string) bool { return !strings.HasPrefix(n, "dnspolicy-lease-") }) {
			n++
		}
	}
	return n
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
