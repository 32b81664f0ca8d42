//go:build integration

// Package dnspolicy_test runs the DNSPolicy and DNSRecord controllers together on real control
// planes, publishing into inmemory zones. No Gateway implementation runs: the tests write the
// Gateway status (addresses, listeners' attached routes) themselves, as an implementation would.
package dnspolicy_test

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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnsv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
	"github.com/dnspolicy/dnspolicy-controller/test/integration/internal/recordplane"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// envs are two control planes with the Gateway API installed, one per simulated cluster.
var envs []*testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, 2, &envs)) }

// recordOptions re-check often, so a test sees the zone settle in little time.
func recordOptions() dnsrecord.Options {
	o := dnsrecord.DefaultOptions()
	o.MinRecheck, o.MaxRecheck = 200*time.Millisecond, 2*time.Second
	o.MinBackoff, o.MaxBackoff = 500*time.Millisecond, 4*time.Second
	o.ValidationRetry = 100 * time.Millisecond
	o.OrphanGrace = 2 * time.Second
	return o
}

// cluster is one control plane running one manager with both controllers, watching one namespace.
type cluster struct {
	env *testenv.Env
	c   client.Client
	ns  string
}

// startCluster starts a manager on env watching a fresh namespace and publishing into store.
func startCluster(t testing.TB, name string, env *testenv.Env, store *inmemory.Store) *cluster {
	t.Helper()
	factory := providers.NewFactory()
	factory.Register(v1alpha1.SecretTypeInMemory, inmemory.NewConstructor(store))
	// The health tests' gateways are on loopback, which probes reach only when allowed.
	opts := app.Options{EnableRecordController: true, EnableDNSPolicyController: true,
		HealthCheckAllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	ns := recordplane.Start(t, env, name+"-", recordplane.Controller{App: opts, Factory: factory, Record: recordOptions()})
	return &cluster{env: env, c: env.Client, ns: ns}
}

// secret creates the inmemory provider Secret "provider" holding zones, labelled as the namespace's
// default provider.
func (cl *cluster) secret(t testing.TB, zones string) {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "provider", Namespace: cl.ns, Labels: map[string]string{v1alpha1.DefaultProviderLabel: "true"}},
		Type:       v1alpha1.SecretTypeInMemory,
		StringData: map[string]string{v1alpha1.InMemInitZonesKey: zones},
	}
	if err := cl.c.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// listener is a Gateway listener: a name and a hostname ("" for none).
type listener struct{ name, hostname string }

// gateway creates a Gateway with the listeners, then writes its status as an implementation
// would: the addresses, and one attached route on every listener.
func (cl *cluster) gateway(t testing.TB, name string, addresses []string, listeners ...listener) {
	t.Helper()
	gw := &gatewayapiv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cl.ns},
		Spec:       gatewayapiv1.GatewaySpec{GatewayClassName: "test"},
	}
	for _, l := range listeners {
		gl := gatewayapiv1.Listener{Name: gatewayapiv1.SectionName(l.name), Port: 80, Protocol: gatewayapiv1.HTTPProtocolType}
		if l.hostname != "" {
			gl.Hostname = ptr.To(gatewayapiv1.Hostname(l.hostname))
		}
		gw.Spec.Listeners = append(gw.Spec.Listeners, gl)
	}
	if err := cl.c.Create(context.Background(), gw); err != nil {
		t.Fatal(err)
	}
	routes := map[string]int32{}
	for _, l := range listeners {
		routes[l.name] = 1
	}
	cl.gatewayStatus(t, name, addresses, routes)
}

// gatewayStatus writes the Gateway's addresses (IPs, or hostnames when they do not parse as IPs)
// and its listeners' attached routes, keeping every condition (ours included).
func (cl *cluster) gatewayStatus(t testing.TB, name string, addresses []string, routes map[string]int32) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		gw := cl.getGateway(t, name)
		gw.Status.Addresses = nil
		for _, a := range addresses {
			typ := gatewayapiv1.IPAddressType
			if _, err := netip.ParseAddr(a); err != nil {
				typ = gatewayapiv1.HostnameAddressType
			}
			gw.Status.Addresses = append(gw.Status.Addresses, gatewayapiv1.GatewayStatusAddress{Type: ptr.To(typ), Value: a})
		}
		for _, l := range gw.Spec.Listeners {
			i := slices.IndexFunc(gw.Status.Listeners, func(s gatewayapiv1.ListenerStatus) bool { return s.Name == l.Name })
			if i < 0 {
				gw.Status.Listeners = append(gw.Status.Listeners, gatewayapiv1.ListenerStatus{
					Name: l.Name,
					Conditions: []metav1.Condition{{
						Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed", LastTransitionTime: metav1.Now(),
					}},
				})
				i = len(gw.Status.Listeners) - 1
			}
			gw.Status.Listeners[i].AttachedRoutes = routes[string(l.Name)]
		}
		return cl.c.Status().Update(context.Background(), gw)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// editGateway changes the Gateway's spec, retrying on conflicts with the controller's status writes.
func (cl *cluster) editGateway(t testing.TB, name string, edit func(*gatewayapiv1.Gateway)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		gw := cl.getGateway(t, name)
		edit(gw)
		return cl.c.Update(context.Background(), gw)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (cl *cluster) getGateway(t testing.TB, name string) *gatewayapiv1.Gateway {
	t.Helper()
	gw := &gatewayapiv1.Gateway{}
	if err := cl.c.Get(context.Background(), client.ObjectKey{Namespace: cl.ns, Name: name}, gw); err != nil {
		t.Fatal(err)
	}
	return gw
}

// newPolicy returns a policy for the Gateway (and, with section, one listener), not yet created.
func (cl *cluster) newPolicy(name, gateway, section string) *dnsv1.DNSPolicy {
	p := &dnsv1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cl.ns}}
	p.Spec.TargetRef.Group = gatewayapiv1.GroupName
	p.Spec.TargetRef.Kind = "Gateway"
	p.Spec.TargetRef.Name = gatewayapiv1.ObjectName(gateway)
	if section != "" {
		p.Spec.TargetRef.SectionName = ptr.To(gatewayapiv1.SectionName(section))
	}
	return p
}

func (cl *cluster) create(t testing.TB, obj client.Object) {
	t.Helper()
	if err := cl.c.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

func (cl *cluster) delete(t testing.TB, obj client.Object) {
	t.Helper()
	if err := cl.c.Delete(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

func (cl *cluster) editPolicy(t testing.TB, name string, edit func(*dnsv1.DNSPolicy)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := cl.getPolicy(t, name)
		edit(p)
		return cl.c.Update(context.Background(), p)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (cl *cluster) getPolicy(t testing.TB, name string) *dnsv1.DNSPolicy {
	t.Helper()
	p := &dnsv1.DNSPolicy{}
	if err := cl.c.Get(context.Background(), client.ObjectKey{Namespace: cl.ns, Name: name}, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// record returns the DNSRecord, or nil when it does not exist.
func (cl *cluster) record(t testing.TB, name string) *v1alpha1.DNSRecord {
	t.Helper()
	r := &v1alpha1.DNSRecord{}
	err := cl.c.Get(context.Background(), client.ObjectKey{Namespace: cl.ns, Name: name}, r)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// recordNames lists the namespace's DNSRecords.
func (cl *cluster) recordNames(t testing.TB) []string {
	t.Helper()
	list := &v1alpha1.DNSRecordList{}
	if err := cl.c.List(context.Background(), list, client.InNamespace(cl.ns)); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range list.Items {
		names = append(names, r.Name)
	}
	sort.Strings(names)
	return names
}

// condition is "Status Reason: Message" of a policy's condition, or "absent".
func condition(p *dnsv1.DNSPolicy, typ string) string {
	c := meta.FindStatusCondition(p.Status.Conditions, typ)
	if c == nil {
		return "absent"
	}
	return fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
}

// policyIs waits until the policy's condition starts with want ("True Accepted", "False Invalid: ...").
func (cl *cluster) policyIs(t testing.TB, name, typ, want string) *dnsv1.DNSPolicy {
	t.Helper()
	var p *dnsv1.DNSPolicy
	eventually(t, 20*time.Second, func() string {
		p = cl.getPolicy(t, name)
		if got := condition(p, typ); !strings.HasPrefix(got, want) {
			return fmt.Sprintf("%s %s: %q, want it to start with %q", name, typ, got, want)
		}
		if p.Status.ObservedGeneration != p.Generation {
			return fmt.Sprintf("%s: observedGeneration %d, generation %d", name, p.Status.ObservedGeneration, p.Generation)
		}
		return ""
	})
	return p
}

// eventually is testenv.Eventually, short for the many polls here.
var eventually = testenv.Eventually

// records returns the zone's record sets other than TXT as sorted lines "name type ttl targets set=".
func records(t testing.TB, store *inmemory.Store, zone string) []string {
	t.Helper()
	eps, err := store.Snapshot(inmemory.ZoneID(zone))
	if err != nil {
		t.Fatal(err)
	}
	return lines(eps)
}

func lines(eps []*v1alpha1.Endpoint) []string {
	var out []string
	for _, ep := range eps {
		if ep.RecordType == v1alpha1.RecordTypeTXT {
			continue
		}
		targets := slices.Sorted(slices.Values(ep.Targets))
		line := fmt.Sprintf("%s %s %d %s", ep.DNSName, ep.RecordType, ep.RecordTTL, strings.Join(targets, ","))
		if ep.SetIdentifier != "" {
			line += " set=" + ep.SetIdentifier
		}
		if w, ok := ep.GetProviderSpecific(v1alpha1.ProviderSpecificWeight); ok {
			line += " weight=" + w
		}
		if g, ok := ep.GetProviderSpecific(v1alpha1.ProviderSpecificGeoCode); ok {
			line += " geo=" + g
		}
		out = append(out, line)
	}
	sort.Strings(out)
	return out
}

func same(got, want []string) string {
	if slices.Equal(got, want) {
		return ""
	}
	return fmt.Sprintf("zone holds\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
}

// resolves says why host does not resolve within the zone's record sets, or "" when it does: every
// chain of CNAMEs from host, through every set at each name, ends in A/AAAA records or leaves the
// zone. A name with nothing is a hole, whatever else the zone holds.
func resolves(eps []*v1alpha1.Endpoint, zone, host string) string {
	byName := map[string][]*v1alpha1.Endpoint{}
	for _, ep := range eps {
		byName[strings.ToLower(ep.DNSName)] = append(byName[strings.ToLower(ep.DNSName)], ep)
	}
	var walk func(name string, depth int) string
	walk = func(name string, depth int) string {
		if depth > 8 {
			return "CNAME chain too long at " + name
		}
		if name != zone && !strings.HasSuffix(name, "."+zone) {
			return "" // out of zone: another resolver's business
		}
		sets := byName[name]
		addresses, cnames := 0, 0
		for _, ep := range sets {
			switch ep.RecordType {
			case v1alpha1.RecordTypeA, v1alpha1.RecordTypeAAAA:
				addresses += len(ep.Targets)
			case v1alpha1.RecordTypeCNAME:
				for _, target := range ep.Targets {
					cnames++
					if why := walk(strings.ToLower(target), depth+1); why != "" {
						return name + " -> " + why
					}
				}
			}
		}
		if addresses == 0 && cnames == 0 {
			return name + " has no A, AAAA or CNAME"
		}
		return ""
	}
	return walk(strings.ToLower(host), 0)
}

// passes reads dnspolicy_dnspolicy_reconciles_total of one policy.
func passes(cl *cluster, name string) float64 {
	return testenv.Counter("dnspolicy_dnspolicy_reconciles_total", cl.ns, name)
}
