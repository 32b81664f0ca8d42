//go:build integration

// Package k8gb_test runs the DNSPolicy and DNSRecord controllers with the k8gb backend on a real
// control plane that has k8gb's Gslb CRD installed (providers/k8gb/testdata/crd). No k8gb and no
// Gateway implementation run: the tests write the Gateway's and the routes' status, and the Gslbs'
// status, as those would.
package k8gb_test

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnsv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord"
	"github.com/dnspolicy/dnspolicy-controller/hack/controlplane"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/k8gb"
	"github.com/dnspolicy/dnspolicy-controller/test/integration/internal/recordplane"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

var env *testenv.Env

// crdDir holds k8gb's Gslb CRD.
func crdDir() string {
	root, err := controlplane.RepoRoot()
	if err != nil {
		panic(err)
	}
	return filepath.Join(root, "providers", "k8gb", "testdata", "crd")
}

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	e, err := controlplane.New(controlplane.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	e.CRDDirectoryPaths = append(e.CRDDirectoryPaths, crdDir())
	cfg, err := e.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting envtest:", err)
		return 1
	}
	defer func() {
		if err := e.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping envtest:", err)
		}
	}()
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env = &testenv.Env{Config: cfg, Client: c}
	return m.Run()
}

// statusPoll is how often the backend re-reads a Gslb in these tests.
const statusPoll = 300 * time.Millisecond

func recordOptions() dnsrecord.Options {
	o := dnsrecord.DefaultOptions()
	o.MinRecheck, o.MaxRecheck = 200*time.Millisecond, 2*time.Second
	o.MinBackoff, o.MaxBackoff = 200*time.Millisecond, 2*time.Second
	o.ValidationRetry = 100 * time.Millisecond
	return o
}

// cluster is one manager with both controllers and the k8gb backend, watching one namespace.
type cluster struct {
	c  client.Client
	ns string
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	factory := providers.NewFactory()
	factory.Register(v1alpha1.SecretTypeK8gb, k8gb.NewConstructor(k8gb.Config{StatusPoll: statusPoll}))
	opts := app.Options{EnableRecordController: true, EnableDNSPolicyController: true}
	ns := recordplane.Start(t, env, "k8gb-", recordplane.Controller{App: opts, Factory: factory, Record: recordOptions()})
	return &cluster{c: env.Client, ns: ns}
}

// secret creates a kuadrant.io/k8gb Secret; the first one of a test is the default provider.
func (cl *cluster) secret(t *testing.T, name string, isDefault bool, data map[string]string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cl.ns}, Type: v1alpha1.SecretTypeK8gb, StringData: data}
	if isDefault {
		s.Labels = map[string]string{v1alpha1.DefaultProviderLabel: "true"}
	}
	cl.create(t, s)
}

// gateway creates a Gateway with listeners (name -> hostname) and writes its status as an
// implementation would: the addresses, one attached route per listener.
func (cl *cluster) gateway(t *testing.T, name string, addresses []string, listeners map[string]string) {
	t.Helper()
	gw := &gatewayapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cl.ns}, Spec: gatewayapiv1.GatewaySpec{GatewayClassName: "test"}}
	for _, l := range slices.Sorted(maps.Keys(listeners)) {
		gw.Spec.Listeners = append(gw.Spec.Listeners, gatewayapiv1.Listener{
			Name: gatewayapiv1.SectionName(l), Port: 80, Protocol: gatewayapiv1.HTTPProtocolType,
			Hostname: ptr.To(gatewayapiv1.Hostname(listeners[l])),
		})
	}
	cl.create(t, gw)
	cl.addresses(t, name, addresses...)
}

// addresses writes the Gateway's status addresses (IPs, or hostnames where they do not parse).
func (cl *cluster) addresses(t *testing.T, name string, addresses ...string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		gw := &gatewayapiv1.Gateway{}
		if err := cl.c.Get(context.Background(), client.ObjectKey{Namespace: cl.ns, Name: name}, gw); err != nil {
			return err
		}
		gw.Status.Addresses = nil
		for _, a := range addresses {
			typ := gatewayapiv1.IPAddressType
			if _, err := netip.ParseAddr(a); err != nil {
				typ = gatewayapiv1.HostnameAddressType
			}
			gw.Status.Addresses = append(gw.Status.Addresses, gatewayapiv1.GatewayStatusAddress{Type: ptr.To(typ), Value: a})
		}
		for _, l := range gw.Spec.Listeners {
			if !slices.ContainsFunc(gw.Status.Listeners, func(s gatewayapiv1.ListenerStatus) bool { return s.Name == l.Name }) {
				gw.Status.Listeners = append(gw.Status.Listeners, gatewayapiv1.ListenerStatus{
					Name: l.Name, AttachedRoutes: 1,
					Conditions: []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed", LastTransitionTime: metav1.Now()}},
				})
			}
		}
		return cl.c.Status().Update(context.Background(), gw)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// route creates an HTTPRoute on one listener of a Gateway, listing hostnames, with a backend
// Service, and writes the status a Gateway implementation writes when it accepts it.
func (cl *cluster) route(t *testing.T, name, gateway, listener string, hostnames ...string) {
	t.Helper()
	ref := gatewayapiv1.ParentReference{Name: gatewayapiv1.ObjectName(gateway), SectionName: ptr.To(gatewayapiv1.SectionName(listener))}
	r := &gatewayapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cl.ns}}
	r.Spec.ParentRefs = []gatewayapiv1.ParentReference{ref}
	for _, h := range hostnames {
		r.Spec.Hostnames = append(r.Spec.Hostnames, gatewayapiv1.Hostname(h))
	}
	r.Spec.Rules = []gatewayapiv1.HTTPRouteRule{{BackendRefs: []gatewayapiv1.HTTPBackendRef{{BackendRef: gatewayapiv1.BackendRef{
		BackendObjectReference: gatewayapiv1.BackendObjectReference{Name: "app", Port: ptr.To(gatewayapiv1.PortNumber(8080))},
	}}}}}
	cl.create(t, r)
	r.Status.Parents = []gatewayapiv1.RouteParentStatus{{
		ParentRef: ref, ControllerName: "example.com/gateway",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: metav1.Now()}},
	}}
	if err := cl.c.Status().Update(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

func (cl *cluster) policy(t *testing.T, name, gateway, section string, edit func(*dnsv1.DNSPolicy)) {
	t.Helper()
	p := &dnsv1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cl.ns}}
	p.Spec.TargetRef.Group = gatewayapiv1.GroupName
	p.Spec.TargetRef.Kind = "Gateway"
	p.Spec.TargetRef.Name = gatewayapiv1.ObjectName(gateway)
	if section != "" {
		p.Spec.TargetRef.SectionName = ptr.To(gatewayapiv1.SectionName(section))
	}
	if edit != nil {
		edit(p)
	}
	cl.create(t, p)
}

func (cl *cluster) editPolicy(t *testing.T, name string, edit func(*dnsv1.DNSPolicy)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := &dnsv1.DNSPolicy{}
		if err := cl.c.Get(context.Background(), client.ObjectKey{Namespace: cl.ns, Name: name}, p); err != nil {
			return err
		}
		edit(p)
		return cl.c.Update(context.Background(), p)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (cl *cluster) deletePolicy(t *testing.T, name string) {
	t.Helper()
	p := &dnsv1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cl.ns}}
	if err := cl.c.Delete(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

func (cl *cluster) create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := cl.c.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

// gslb returns the Gslb, or nil when there is none.
func (cl *cluster) gslb(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	g := &unstructured.Unstructured{}
	g.SetGroupVersionKind(k8gb.GslbKind)
	err := cl.c.Get(context.Background(), client.ObjectKey{Namespace: cl.ns, Name: name}, g)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// gslbStatus writes a Gslb's status as k8gb would: this cluster's geo tag, the health of each
// host, and the addresses k8gb serves for the healthy ones.
func (cl *cluster) gslbStatus(t *testing.T, name, geoTag string, health map[string]string, healthy map[string][]string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		g := cl.gslb(t, name)
		if g == nil {
			return fmt.Errorf("no Gslb %s", name)
		}
		sh, hr := map[string]any{}, map[string]any{}
		var hosts []string
		for h, v := range health {
			sh[h] = v
			hosts = append(hosts, h)
		}
		for h, ips := range healthy {
			var l []any
			for _, ip := range ips {
				l = append(l, ip)
			}
			hr[h] = l
		}
		slices.Sort(hosts)
		g.Object["status"] = map[string]any{"geoTag": geoTag, "serviceHealth": sh, "healthyRecords": hr, "hosts": strings.Join(hosts, ", ")}
		return cl.c.Status().Update(context.Background(), g)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (cl *cluster) record(t *testing.T, name string) *v1alpha1.DNSRecord {
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

func (cl *cluster) getPolicy(t *testing.T, name string) *dnsv1.DNSPolicy {
	t.Helper()
	p := &dnsv1.DNSPolicy{}
	if err := cl.c.Get(context.Background(), client.ObjectKey{Namespace: cl.ns, Name: name}, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// conditionText is "Status Reason: Message", or "absent".
func conditionText(conds []metav1.Condition, typ string) string {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		return "absent"
	}
	return fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
}

// recordIs waits until the record's condition starts with want.
func (cl *cluster) recordIs(t *testing.T, name, typ, want string) *v1alpha1.DNSRecord {
	t.Helper()
	var rec *v1alpha1.DNSRecord
	eventually(t, 20*time.Second, func() string {
		if rec = cl.record(t, name); rec == nil {
			return "no DNSRecord " + name
		}
		if got := conditionText(rec.Status.Conditions, typ); !strings.HasPrefix(got, want) {
			return fmt.Sprintf("%s %s: %q, want it to start with %q", name, typ, got, want)
		}
		return ""
	})
	return rec
}

// policyIs waits until the policy's condition starts with want.
func (cl *cluster) policyIs(t *testing.T, name, typ, want string) *dnsv1.DNSPolicy {
	t.Helper()
	var p *dnsv1.DNSPolicy
	eventually(t, 20*time.Second, func() string {
		p = cl.getPolicy(t, name)
		if got := conditionText(p.Status.Conditions, typ); !strings.HasPrefix(got, want) {
			return fmt.Sprintf("%s %s: %q, want it to start with %q", name, typ, got, want)
		}
		return ""
	})
	return p
}

// gslbIs waits until the Gslb's spec, labels, annotations and owners are as wanted (field by
// field), and returns it.
func (cl *cluster) gslbIs(t *testing.T, name string, want wantGslb) *unstructured.Unstructured {
	t.Helper()
	var g *unstructured.Unstructured
	eventually(t, 20*time.Second, func() string {
		if g = cl.gslb(t, name); g == nil {
			return "no Gslb " + name
		}
		return want.diff(g)
	})
	return g
}

// wantGslb is a Gslb as the mapping table of docs/providers/k8gb.md says.
type wantGslb struct {
	record      *v1alpha1.DNSRecord
	route       string
	strategy    map[string]any
	exposedIPs  string
	exposedHost string
}

func (w wantGslb) diff(g *unstructured.Unstructured) string {
	var diffs []string
	check := func(field string, got, want any) {
		if !reflect.DeepEqual(got, want) {
			diffs = append(diffs, fmt.Sprintf("%s: got %v, want %v", field, got, want))
		}
	}
	spec, _, _ := unstructured.NestedMap(g.Object, "spec")
	check("spec", spec, map[string]any{
		"resourceRef": map[string]any{
			"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "name": w.route, "namespace": w.record.Namespace,
		},
		"strategy": w.strategy,
		// k8gb's CRD default, filled in by the API server.
		"serviceHealthPolicy": "Any",
	})
	check("labels", g.GetLabels(), map[string]string{k8gb.ManagedByLabel: k8gb.ManagedByValue, k8gb.RecordUIDLabel: string(w.record.UID)})
	annotations := map[string]string{k8gb.RecordAnnotation: w.record.Namespace + "/" + w.record.Name}
	if w.exposedIPs != "" {
		annotations[k8gb.ExposedIPsAnnotation] = w.exposedIPs
	}
	if w.exposedHost != "" {
		annotations[k8gb.ExposedHostnamesAnnotation] = w.exposedHost
	}
	check("annotations", g.GetAnnotations(), annotations)
	check("owners", g.GetOwnerReferences(), []metav1.OwnerReference{{
		APIVersion: "kuadrant.io/v1alpha1", Kind: "DNSRecord", Name: w.record.Name, UID: w.record.UID,
	}})
	return strings.Join(diffs, "; ")
}

// gone waits until the Gslb and the record are deleted.
func (cl *cluster) gone(t *testing.T, names ...string) {
	t.Helper()
	eventually(t, 20*time.Second, func() string {
		for _, n := range names {
			if cl.gslb(t, n) != nil {
				return "Gslb " + n + " still exists"
			}
			if cl.record(t, n) != nil {
				return "DNSRecord " + n + " still exists"
			}
		}
		return ""
	})
}

// passes reads the record controller's pass counter of one record.
func (cl *cluster) passes(name string) float64 {
	return testenv.Counter("dnspolicy_dnsrecord_reconciles_total", cl.ns, name)
}

// settles checks that a failing record's condition stays as it is, its status is not rewritten and
// its passes stay within the controller's backoff (200 ms doubling to 2 s: at most 4 passes in 4 s
// once it reached the cap, 6 allowing for a doubling still under way), for 4 s.
func (cl *cluster) settles(t *testing.T, name, want string) {
	t.Helper()
	cl.recordIs(t, name, v1alpha1.ConditionTypeReady, want)
	time.Sleep(3 * time.Second) // reach the backoff cap first
	rec := cl.record(t, name)
	before, version := cl.passes(name), rec.ResourceVersion
	time.Sleep(4 * time.Second)
	after := cl.record(t, name)
	if got := conditionText(after.Status.Conditions, v1alpha1.ConditionTypeReady); !strings.HasPrefix(got, want) {
		t.Errorf("%s: Ready became %q", name, got)
	}
	if after.ResourceVersion != version {
		t.Errorf("%s was rewritten while failing the same way (resourceVersion %s -> %s)", name, version, after.ResourceVersion)
	}
	if n := cl.passes(name) - before; n > 6 || n < 1 {
		t.Errorf("%s: %v passes in 4 s, want 1 to 6 (the backoff's)", name, n)
	}
}

var eventually = testenv.Eventually
