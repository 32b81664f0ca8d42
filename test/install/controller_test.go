//go:build integration || tenancy

package install_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnsv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord"
	"github.com/dnspolicy/dnspolicy-controller/hack/controlplane"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// containerArgs returns the args of the manager container of a rendered Deployment.
func containerArgs(t *testing.T, u *unstructured.Unstructured) ([]string, *appsv1.Deployment) {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "manager" {
			return c.Args, d
		}
	}
	t.Fatalf("Deployment %s has no manager container", d.Name)
	return nil, nil
}

// runController runs the controller binary with the Deployment's args, talking to the API server
// as the ServiceAccount: its kubeconfig impersonates the ServiceAccount, so the test's admin rights
// are not used. Only what cannot work outside a pod is added after the Deployment's args (the last
// value of a flag wins): the kubeconfig; the metrics endpoint on a loopback port (the Deployment's
// ":8443" would listen beyond loopback), whose address it returns, and the health endpoint off; and
// the leader-election namespace, which a pod reads from its ServiceAccount token's folder, is named.
func runController(t *testing.T, cp *controlPlane, deployment *unstructured.Unstructured) (metrics string) {
	t.Helper()
	_, metrics = startController(t, cp, deployment)
	return metrics
}

// startController is runController with more args after the Deployment's (the last value of a flag
// wins), returning the running process too.
func startController(t *testing.T, cp *controlPlane, deployment *unstructured.Unstructured, extra ...string) (cmd *exec.Cmd, metrics string) {
	t.Helper()
	args, _ := containerArgs(t, deployment)
	o, err := app.Parse(args, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("the Deployment's args %v do not parse: %v", args, err)
	}
	expectClusterSecretsReadable(t, cp, o)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cp.cfg.Host, CertificateAuthorityData: cp.cfg.CAData}
	cfg.AuthInfos["service-account"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cp.cfg.CertData, ClientKeyData: cp.cfg.KeyData,
		Impersonate: serviceAccount, ImpersonateGroups: serviceAccountGroups,
	}
	cfg.Contexts["service-account"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "service-account"}
	cfg.CurrentContext = "service-account"
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	metrics = freeport.Addr(t)
	args = append(args, "--kubeconfig="+kubeconfig, "--metrics-bind-address="+metrics, "--health-probe-bind-address=0",
		"--leader-election-namespace="+controllerNamespace, "--log-format=console")
	args = append(args, extra...)
	var logs bytes.Buffer
	cmd = exec.Command(controllerBinary(t), args...)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("controller log:\n%s", logs.String())
		}
	})
	return cmd, metrics
}

// expectClusterSecretsReadable fails the test unless the ServiceAccount may read the kubeconfig
// Secrets of the namespace a delegation primary started with these options reads other clusters
// through: without list and watch there its Secret cache never syncs, and the manager stops after
// the cache-sync timeout (two minutes), at every start.
func expectClusterSecretsReadable(t *testing.T, cp *controlPlane, o app.Options) {
	t.Helper()
	if !o.EnableRecordController || o.DelegationRole == dnsrecord.DelegationRoleSecondary || o.ClusterSecretNamespace == "" {
		return
	}
	for _, verb := range []string{"get", "list", "watch"} {
		if a := (access{verb: verb, resource: "secrets", namespace: o.ClusterSecretNamespace}); !cp.allowed(t, a) {
			t.Errorf("the controller reads other clusters through Secrets of namespace %s (--cluster-secret-namespace), but its ServiceAccount may not %s", o.ClusterSecretNamespace, a)
		}
	}
}

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// controllerBinary builds the controller once per test binary.
func controllerBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		root, err := controlplane.RepoRoot()
		if err != nil {
			binaryErr = err
			return
		}
		dir, err := os.MkdirTemp("", "dnspolicy-install-test-")
		if err != nil {
			binaryErr = err
			return
		}
		binaryPath = filepath.Join(dir, "dnspolicy-controller")
		cmd := exec.Command("go", "build", "-o", binaryPath, "./cmd/dnspolicy-controller")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			binaryErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

// publishLoadbalanced creates, in namespace ns, an inmemory provider Secret for example.com, a
// Gateway with one listener and its status as an implementation writes it, and a loadbalanced
// DNSPolicy; providerRef names the Secret (empty: the Secret is the namespace's default provider).
func publishLoadbalanced(t *testing.T, c client.Client, ns string, byRef bool) {
	t.Helper()
	ctx := context.Background()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "provider", Namespace: ns},
		Type:       v1alpha1.SecretTypeInMemory,
		StringData: map[string]string{v1alpha1.InMemInitZonesKey: "example.com"},
	}
	if !byRef {
		secret.Labels = map[string]string{v1alpha1.DefaultProviderLabel: "true"}
	}
	if err := c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	host := gatewayapiv1.Hostname("api.example.com")
	gw := &gatewayapiv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "external", Namespace: ns},
		Spec: gatewayapiv1.GatewaySpec{GatewayClassName: "test", Listeners: []gatewayapiv1.Listener{{
			Name: "api", Hostname: &host, Port: 443, Protocol: gatewayapiv1.HTTPSProtocolType,
		}}},
	}
	if err := c.Create(ctx, gw); err != nil {
		t.Fatal(err)
	}
	ipType := gatewayapiv1.IPAddressType
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		gw.Status.Addresses = []gatewayapiv1.GatewayStatusAddress{{Type: &ipType, Value: "172.31.1.10"}, {Type: &ipType, Value: "172.31.1.11"}}
		gw.Status.Listeners = []gatewayapiv1.ListenerStatus{{
			Name: "api", AttachedRoutes: 1,
			Conditions: []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed", LastTransitionTime: metav1.Now()}},
		}}
		return c.Status().Update(ctx, gw)
	}); err != nil {
		t.Fatal(err)
	}
	policy := &dnsv1.DNSPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "loadbalanced", Namespace: ns},
		Spec:       dnsv1.DNSPolicySpec{LoadBalancing: &dnsv1.LoadBalancingSpec{Weight: 120, Geo: "IE", DefaultGeo: true}},
	}
	policy.Spec.TargetRef.Group = gatewayapiv1.GroupName
	policy.Spec.TargetRef.Kind = "Gateway"
	policy.Spec.TargetRef.Name = "external"
	if byRef {
		policy.Spec.ProviderRefs = []v1alpha1.ProviderRef{{Name: "provider"}}
	}
	if err := c.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
}

// waitEnforced waits for the policy to be Accepted and Enforced and its records Ready.
func waitEnforced(t *testing.T, c client.Client, ns string) {
	t.Helper()
	ctx := context.Background()
	testenv.Eventually(t, 60*time.Second, func() string {
		p := &dnsv1.DNSPolicy{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "loadbalanced"}, p); err != nil {
			return err.Error()
		}
		for _, typ := range []string{"Accepted", "Enforced"} {
			if cond := meta.FindStatusCondition(p.Status.Conditions, typ); cond == nil || cond.Status != metav1.ConditionTrue {
				return fmt.Sprintf("policy %s: %+v", typ, cond)
			}
		}
		records := &v1alpha1.DNSRecordList{}
		if err := c.List(ctx, records, client.InNamespace(ns)); err != nil {
			return err.Error()
		}
		if len(records.Items) != 1 {
			return fmt.Sprintf("%d records, want 1", len(records.Items))
		}
		rec := records.Items[0]
		if cond := meta.FindStatusCondition(rec.Status.Conditions, v1alpha1.ConditionTypeReady); cond == nil || cond.Status != metav1.ConditionTrue {
			return fmt.Sprintf("record %s Ready: %+v", rec.Name, cond)
		}
		var klb bool
		for _, e := range rec.Status.Endpoints {
			klb = klb || strings.HasSuffix(e.DNSName, ".klb.api.example.com")
		}
		if !klb {
			return fmt.Sprintf("record %s published no loadbalanced tree: %v", rec.Name, rec.Status.Endpoints)
		}
		return ""
	})
}

// waitRecordReady waits for the namespace's one record to be not Ready with a message holding want.
func waitRecordReady(t *testing.T, c client.Client, ns, want string) {
	t.Helper()
	testenv.Eventually(t, 60*time.Second, func() string {
		records := &v1alpha1.DNSRecordList{}
		if err := c.List(context.Background(), records, client.InNamespace(ns)); err != nil {
			return err.Error()
		}
		if len(records.Items) != 1 {
			return fmt.Sprintf("%d records, want 1", len(records.Items))
		}
		cond := meta.FindStatusCondition(records.Items[0].Status.Conditions, v1alpha1.ConditionTypeReady)
		if cond == nil || cond.Status != metav1.ConditionFalse || !strings.Contains(cond.Message, want) {
			return fmt.Sprintf("Ready %+v, want False with %q", cond, want)
		}
		return ""
	})
}
