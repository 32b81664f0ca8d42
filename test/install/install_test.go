//go:build integration

package install_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// The cluster-wide install (config/default): the controller, running with only its ServiceAccount's
// rights, publishes a loadbalanced DNSPolicy, and the ServiceAccount can write nothing else and
// cannot list or watch Secrets anywhere.
func TestDefaultInstall(t *testing.T) {
	cp := startControlPlane(t)
	cp.namespaces(t, "gateways")
	objs := golden(t, "kustomize-default.yaml")
	cp.apply(t, objs)

	metrics := runController(t, cp, find(t, objs, "Deployment", "dnspolicy-controller"))
	publishLoadbalanced(t, cp.c, "gateways", true)
	waitEnforced(t, cp.c, "gateways")
	scrapeMetrics(t, cp, metrics)

	// A namespace whose policies use its default-provider Secret: the list is refused, and the record
	// says so, until the admin binds the provider-secrets role there (config/rbac/README.md).
	cp.namespaces(t, "team-b")
	publishLoadbalanced(t, cp.c, "team-b", false)
	waitRecordReady(t, cp.c, "team-b", `cannot list resource "secrets"`)
	bindProviderSecrets(t, cp.c, "team-b")
	waitEnforced(t, cp.c, "team-b")

	cp.expect(t, false,
		access{verb: "list", resource: "secrets"},
		access{verb: "watch", resource: "secrets"},
		access{verb: "list", resource: "secrets", namespace: "gateways"},
		access{verb: "watch", resource: "secrets", namespace: "gateways"},
	)
	// A provider Secret named by providerRef is read with get, the least a direct read needs.
	cp.expect(t, true, access{verb: "get", resource: "secrets", namespace: "gateways", name: "provider"})
	cp.expect(t, false, escalation("gateways")...)
	cp.expect(t, true, finalizers(""))
	got := cp.writable(t, "gateways", controllerNamespace)
	want := sorted(controllerWrites("", true), controllerWrites("gateways", true), controllerWrites(controllerNamespace, true), ownNamespaceWrites(), metricsAuthWrites())
	if d := diffLines(got, want); d != "" {
		t.Errorf("the ServiceAccount's writes differ from what the controller needs:%s", d)
	}
}

// The namespaced install (config/namespaced): the controller watches "gateways" only, reads the
// namespace's default-provider Secret (a list, granted there by a RoleBinding), and can neither
// read Secrets of another namespace nor write anything outside "gateways" but its Lease.
func TestNamespacedInstall(t *testing.T) {
	cp := startControlPlane(t)
	cp.namespaces(t, "gateways", "other")
	objs := golden(t, "kustomize-namespaced.yaml")
	cp.apply(t, objs)

	runController(t, cp, find(t, objs, "Deployment", "dnspolicy-controller"))
	publishLoadbalanced(t, cp.c, "gateways", false)
	waitEnforced(t, cp.c, "gateways")

	cp.expect(t, true,
		access{verb: "list", resource: "secrets", namespace: "gateways"},
		access{verb: "watch", resource: "secrets", namespace: "gateways"},
		access{verb: "get", resource: "namespaces", name: "kube-system"},
	)
	cp.expect(t, false,
		access{verb: "list", resource: "secrets"},
		access{verb: "get", resource: "secrets", namespace: "other", name: "provider"},
		access{verb: "list", resource: "secrets", namespace: "other"},
		access{verb: "list", group: "kuadrant.io", resource: "dnsrecords"},
		access{verb: "list", group: "gateway.networking.k8s.io", resource: "gateways"},
		access{verb: "get", resource: "namespaces", name: "other"},
	)
	cp.expect(t, false, escalation("gateways")...)
	cp.expect(t, true, finalizers("gateways"))
	cp.expect(t, false, finalizers(""), finalizers("other"))
	got := cp.writable(t, "gateways", "other", controllerNamespace)
	want := sorted(controllerWrites("gateways", true), ownNamespaceWrites(), metricsAuthWrites())
	if d := diffLines(got, want); d != "" {
		t.Errorf("the ServiceAccount's writes differ from what the controller needs:%s", d)
	}
}

// Every other render is accepted by the API server, its Deployment's args parse with the binary's
// own parser, the record-only install grants the record side's writes alone, and the chart's pod
// template carries what its values asked for.
func TestRendersAreAccepted(t *testing.T) {
	cp := startControlPlane(t)
	cp.namespaces(t, "gateways", "team-b", "clusters")
	cp.apply(t, prometheusOperatorCRDs())

	t.Run("record-only", func(t *testing.T) {
		objs := golden(t, "kustomize-record-only.yaml")
		for _, u := range objs {
			if u.GetKind() == "CustomResourceDefinition" && u.GetName() == "dnspolicies.kuadrant.io" {
				t.Error("the record-only install ships the DNSPolicy CRD, which belongs to the policy side")
			}
		}
		cp.apply(t, objs)
		args := deploymentArgs(t, cp)
		if !slices.Contains(args, "--enable-policy-controller=false") {
			t.Errorf("record-only args %v do not turn the policy controller off", args)
		}
		cp.expect(t, true, finalizers(""))
		got := cp.writable(t, "gateways", controllerNamespace)
		want := sorted(controllerWrites("", false), controllerWrites("gateways", false), controllerWrites(controllerNamespace, false), ownNamespaceWrites(), metricsAuthWrites())
		if d := diffLines(got, want); d != "" {
			t.Errorf("record-only writes differ from what the record side needs:%s", d)
		}
		cp.expect(t, false,
			access{verb: "get", group: "gateway.networking.k8s.io", resource: "gateways", namespace: "gateways"},
			access{verb: "get", group: "kuadrant.io", resource: "dnspolicies", namespace: "gateways"},
			access{verb: "get", resource: "namespaces", name: "kube-system"},
			access{verb: "list", resource: "secrets"},
		)
	})
	t.Run("prometheus", func(t *testing.T) {
		cp.apply(t, golden(t, "kustomize-prometheus.yaml"))
	})
	t.Run("grafana dashboards", func(t *testing.T) {
		cp.apply(t, golden(t, "kustomize-dashboards.yaml"))
		expectDashboards(t, cp, nil)
	})
	t.Run("helm default", func(t *testing.T) {
		// The chart's selector adds app.kubernetes.io/instance, and a Deployment's selector is
		// immutable: moving from kustomize to the chart means deleting the Deployment first.
		cp.deleteDeployment(t)
		cp.apply(t, golden(t, "helm-default.yaml"))
		args := deploymentArgs(t, cp)
		for _, want := range []string{"--leader-elect=true", "--watch-provider-secrets=false", "--metrics-bind-address=:8443", "--metrics-secure=true"} {
			if !slices.Contains(args, want) {
				t.Errorf("args %v lack %s", args, want)
			}
		}
	})
	t.Run("helm everything on", func(t *testing.T) {
		cp.apply(t, golden(t, "helm-full.yaml"))
		d := &appsv1.Deployment{}
		if err := cp.c.Get(context.Background(), client.ObjectKey{Namespace: controllerNamespace, Name: "dnspolicy-controller"}, d); err != nil {
			t.Fatal(err)
		}
		args := deploymentArgs(t, cp)
		for _, want := range []string{
			"--leader-elect=true", "--leader-election-lease-duration=30s", "--metrics-bind-address=:9090",
			"--log-level=debug", "--log-format=console", "--watch-provider-secrets=false",
			"--providers=aws,coredns,inmemory", "--dns-server-address=:1053",
			"--dns-nameservers=ns1.example.com,ns2.example.com",
			"--dns-nameserver-addresses=ns1.example.com=192.0.2.1,ns1.example.com=2001:db8::1",
			"--dns-secondaries=example.com=192.0.2.53:53,example.com=192.0.2.54:53",
			"--dns-geoip-database=/var/lib/dnspolicy-controller/geoip/GeoLite2-Country.mmdb",
			"--dns-rrl-responses-per-second=50", "--dns-rrl-slip=3", "--metrics-secure=true",
			"--leader-election-namespace=dnspolicy-system",
			"--health-check-allowed-cidrs=10.0.5.0/24", "--health-check-denied-cidrs=10.0.5.7/32,2001:db8::/32",
			"--cluster-secret-namespace=clusters",
		} {
			if !slices.Contains(args, want) {
				t.Errorf("args %v lack %s", args, want)
			}
		}
		if *d.Spec.Replicas != 3 {
			t.Errorf("replicas %d, want 3", *d.Spec.Replicas)
		}
		c := d.Spec.Template.Spec.Containers[0]
		if c.Image != "registry.example.com/dns/dnspolicy-controller:v0.1.0-test" {
			t.Errorf("image %s", c.Image)
		}
		for _, want := range []string{"--dns-tsig-secret=" + d.Namespace + "/dns-tsig", "--dns-transfer-keys=demo.example.com=transfer-key"} {
			if !slices.Contains(c.Args, want) {
				t.Errorf("args %v lack %s: the TSIG keys come from the Secret, named by reference", c.Args, want)
			}
		}
		if v := d.Spec.Template.Spec.Volumes; len(v) != 2 || v[0].ConfigMap.Name != "geoip-database" || v[1].ConfigMap.Name != "dnspolicy-controller-grants" {
			t.Errorf("volumes (geo database, grants): %+v", v)
		}
		if sc := c.SecurityContext; sc == nil || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation {
			t.Errorf("container security context %+v", sc)
		}
		opts := podOptions(t, cp, d)
		if opts.DNSServer.TSIGSecret != d.Namespace+"/dns-tsig" {
			t.Errorf("the binary reads its TSIG keys from %q, want the Secret %s/dns-tsig", opts.DNSServer.TSIGSecret, d.Namespace)
		}
		expectDashboards(t, cp, map[string]string{"grafana_folder": "DNS"})
		// The chart's grants reach the binary through the ConfigMap it mounts.
		if g := opts.Grants; !g.AllBackends() || !g.Grants.Covers("gateways", nil, "api.example.com") ||
			!g.Grants.Covers("team-b", map[string]string{"dns.example.com/tier": "shared"}, "x.shared.example.com") || g.Grants.Covers("team-b", nil, "example.com") {
			t.Errorf("grants from the chart: %+v", g)
		}
	})
	t.Run("helm namespaced", func(t *testing.T) {
		cp.apply(t, golden(t, "helm-namespaced.yaml"))
		args := deploymentArgs(t, cp)
		for _, want := range []string{"--watch-namespaces=gateways,team-b", "--watch-provider-secrets=true", "--enable-policy-controller=false"} {
			if !slices.Contains(args, want) {
				t.Errorf("args %v lack %s", args, want)
			}
		}
		cp.expect(t, true, access{verb: "list", resource: "secrets", namespace: "team-b"})
	})
}

// deploymentArgs reads the controller's Deployment back from the API server and returns its args,
// failing when the binary would refuse them.
func deploymentArgs(t *testing.T, cp *controlPlane) []string {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := cp.c.Get(context.Background(), client.ObjectKey{Namespace: controllerNamespace, Name: "dnspolicy-controller"}, d); err != nil {
		t.Fatal(err)
	}
	expectClusterSecretsReadable(t, cp, podOptions(t, cp, d))
	return d.Spec.Template.Spec.Containers[0].Args
}

// podOptions parses the Deployment's args as its pod would, with the grants file it mounts read
// from the ConfigMap.
func podOptions(t *testing.T, cp *controlPlane, d *appsv1.Deployment) app.Options {
	t.Helper()
	args := slices.Clone(d.Spec.Template.Spec.Containers[0].Args)
	for i, arg := range args {
		path, ok := strings.CutPrefix(arg, "--grants-file=")
		if !ok {
			continue
		}
		var mounted *corev1.ConfigMapVolumeSource
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Name == "grants" {
				mounted = v.ConfigMap
			}
		}
		if mounted == nil {
			t.Fatalf("--grants-file %s without the grants volume", path)
		}
		cm := &corev1.ConfigMap{}
		if err := cp.c.Get(context.Background(), client.ObjectKey{Namespace: d.Namespace, Name: mounted.Name}, cm); err != nil {
			t.Fatal(err)
		}
		local := filepath.Join(t.TempDir(), filepath.Base(path))
		if err := os.WriteFile(local, []byte(cm.Data[filepath.Base(path)]), 0o600); err != nil {
			t.Fatal(err)
		}
		args[i] = "--grants-file=" + local
	}
	return parseArgs(t, args)
}

func parseArgs(t *testing.T, args []string) app.Options {
	t.Helper()
	o, err := app.Parse(args, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("the binary refuses the Deployment's args %v: %v", args, err)
	}
	return o
}

// deleteDeployment deletes the controller's Deployment (no garbage collector runs here, and a
// Deployment has no finalizer, so it is gone at once).
func (cp *controlPlane) deleteDeployment(t *testing.T) {
	t.Helper()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: controllerNamespace, Name: "dnspolicy-controller"}}
	if err := cp.c.Delete(context.Background(), d); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
}

// The record-only install (config/record-only, what stands in for Kuadrant's dns-operator): the
// record controller alone, with only that install's rights, publishes the sample DNSRecord.
func TestRecordOnlyInstall(t *testing.T) {
	cp := startControlPlane(t)
	cp.namespaces(t, "gateways")
	objs := golden(t, "kustomize-record-only.yaml")
	cp.apply(t, objs)
	runController(t, cp, find(t, objs, "Deployment", "dnspolicy-controller"))

	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "inmemory-credentials", Namespace: "gateways"},
		Type:       v1alpha1.SecretTypeInMemory,
		StringData: map[string]string{v1alpha1.InMemInitZonesKey: "example.com"},
	}
	if err := cp.c.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	sample := samples(t, "dnsrecord_loadbalanced.yaml")[0]
	sample.SetNamespace("gateways")
	if err := cp.c.Create(context.Background(), sample); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 60*time.Second, func() string {
		rec := &v1alpha1.DNSRecord{}
		if err := cp.c.Get(context.Background(), client.ObjectKey{Namespace: "gateways", Name: sample.GetName()}, rec); err != nil {
			return err.Error()
		}
		if cond := meta.FindStatusCondition(rec.Status.Conditions, v1alpha1.ConditionTypeReady); cond == nil || cond.Status != metav1.ConditionTrue {
			return fmt.Sprintf("record Ready: %+v", cond)
		}
		return ""
	})
}

// expectDashboards checks that the four dashboards' ConfigMaps are in the controller's namespace
// with the label Grafana's sidecar selects on and the annotations asked for, each holding its
// dashboard's JSON under the file's name.
func expectDashboards(t *testing.T, cp *controlPlane, annotations map[string]string) {
	t.Helper()
	list := &corev1.ConfigMapList{}
	if err := cp.c.List(context.Background(), list, client.InNamespace(controllerNamespace), client.MatchingLabels{"grafana_dashboard": "1"}); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, cm := range list.Items {
		for k, v := range annotations {
			if cm.Annotations[k] != v {
				t.Errorf("ConfigMap %s: annotation %s=%q, want %q", cm.Name, k, cm.Annotations[k], v)
			}
		}
		for key, data := range cm.Data {
			var d struct {
				UID string `json:"uid"`
			}
			if err := json.Unmarshal([]byte(data), &d); err != nil || "dnspolicy-"+strings.TrimPrefix(cm.Name, "dnspolicy-controller-dashboard-")+".json" != key || d.UID+".json" != key {
				t.Errorf("ConfigMap %s holds %s with uid %q (%v)", cm.Name, key, d.UID, err)
			}
			got[key] = true
		}
	}
	for _, want := range []string{"dnspolicy-fleet.json", "dnspolicy-zones.json", "dnspolicy-dns-server.json", "dnspolicy-probes.json"} {
		if !got[want] {
			t.Errorf("no ConfigMap labelled grafana_dashboard=1 holds %s (found %v)", want, got)
		}
	}
}
