//go:build integration

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// pair is two clusters a user's kubeconfig reaches: envs[0] as context "read" (the cluster a
// primary is to read) and a control plane started for the test as context "primary" (the current
// context), both selecting namespace ns.
type pair struct {
	read, primary *testenv.Env
	kubeconfig    string
	ns            string
}

func newPair(t *testing.T) *pair {
	t.Helper()
	primary, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := primary.Stop(); err != nil {
			t.Error(err)
		}
	})
	p := &pair{read: envs[0], primary: primary, ns: "deleg-" + rand.String(6)}
	kc := clientcmdapi.NewConfig()
	for name, env := range map[string]*testenv.Env{"read": p.read, "primary": p.primary} {
		cfg := env.Config
		kc.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
		kc.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
		kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: p.ns}
		if err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.ns}}); err != nil {
			t.Fatal(err)
		}
	}
	kc.CurrentContext = "primary"
	p.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, p.kubeconfig); err != nil {
		t.Fatal(err)
	}
	return p
}

// run runs the plugin with the pair's kubeconfig and returns its exit code, stdout and stderr.
func (p *pair) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), append(args, "--kubeconfig", p.kubeconfig), &stdout, &stderr, time.Now)
	t.Logf("kubectl dns %s: exit %d\n%s%s", strings.Join(args, " "), code, stderr.String(), redactToken(stdout.String()))
	return code, stdout.String(), stderr.String()
}

// mustRun runs the plugin and fails the test on an error.
func (p *pair) mustRun(t *testing.T, args ...string) (string, string) {
	t.Helper()
	code, out, errOut := p.run(t, args...)
	if code != 0 {
		t.Fatalf("kubectl dns %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out, errOut
}

// redactToken keeps a token out of the test's log.
func redactToken(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if before, _, ok := strings.Cut(l, "token: "); ok {
			lines[i] = before + "token: <redacted>"
		}
	}
	return strings.Join(lines, "\n")
}

// shipRemoteRole creates on env the ClusterRole the install ships, from its manifest.
func shipRemoteRole(t *testing.T, env *testenv.Env) {
	t.Helper()
	b, err := os.ReadFile("../../config/rbac/base/remote_cluster_role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(b, role); err != nil {
		t.Fatal(err)
	}
	if role.Name != defaultRemoteClusterRole {
		t.Fatalf("the shipped ClusterRole is %s, the command binds %s", role.Name, defaultRemoteClusterRole)
	}
	if err := env.Client.Create(t.Context(), role); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// secretClient is a client of the kubeconfig a cluster Secret holds.
func secretClient(t *testing.T, kubeconfig []byte) (client.Client, *kubernetes.Clientset) {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c, kubernetes.NewForConfigOrDie(cfg)
}

// The Secret add-cluster-secret makes authenticates as the ServiceAccount it made (or was given) on
// the cluster read, lists DNSRecords in every namespace and patches their status, and is refused
// everything else; it is printed, or applied to the primary; what the command cannot do it refuses
// before creating anything.
func TestAddClusterSecret(t *testing.T) {
	p := newPair(t)
	ctx := t.Context()
	saNS, secretsNS := "remote-"+rand.String(6), "clusters-"+rand.String(6)
	args := func(more ...string) []string {
		return append([]string{"add-cluster-secret", "--context", "read", "--name", "read-cluster", "-n", secretsNS, "--service-account-namespace", saNS}, more...)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"add-cluster-secret"}, "--context is required"},
		{[]string{"add-cluster-secret", "-c", "read", "--name", "Read_Cluster"}, `"Read_Cluster" cannot name a Secret`},
		{args("--token-duration", "1m"), "no token shorter than 10m"},
		{args("--cluster-secret-label", "not a label"), `--cluster-secret-label "not a label"`},
		{args("--apply", "--primary-context", "read"), "the cluster to be read: choose the primary with --primary-context"},
		// No such ClusterRole on the cluster read: nothing is created.
		{args("--cluster-role", "no-such-role"), "nor ClusterRole no-such-role to bind a new one to"},
	} {
		if code, out, errOut := p.run(t, tc.args...); code != 1 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1, nothing printed and %q", tc.args, code, out, errOut, tc.want)
		}
	}
	if err := p.read.Client.Get(ctx, types.NamespacedName{Name: saNS}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace %s after the refusals: %v, want not found", saNS, err)
	}

	shipRemoteRole(t, p.read)
	before := time.Now()
	out, errOut := p.mustRun(t, args()...)
	contains(t, "stderr", errOut, "created namespace "+saNS+"\n")
	contains(t, "stderr", errOut, "created ServiceAccount "+saNS+"/"+defaultRemoteServiceAccount+", bound to ClusterRole "+defaultRemoteClusterRole)
	secret := &corev1.Secret{}
	if err := yaml.UnmarshalStrict([]byte(out), secret); err != nil {
		t.Fatalf("the printed Secret does not parse: %v", err)
	}
	if secret.APIVersion != "v1" || secret.Kind != "Secret" || secret.Name != "read-cluster" || secret.Namespace != secretsNS ||
		secret.Labels[defaultClusterSecretLabel] != "true" || secret.Type != corev1.SecretTypeOpaque {
		t.Fatalf("printed Secret %+v", secret)
	}
	expires, err := time.Parse(time.RFC3339, secret.Annotations[tokenExpiresAnnotation])
	if err != nil || expires.Before(before.Add(8759*time.Hour)) {
		t.Errorf("the token expires %q (%v), want a year from now", secret.Annotations[tokenExpiresAnnotation], err)
	}
	contains(t, "stderr", errOut, "it expires "+secret.Annotations[tokenExpiresAnnotation])
	kubeconfig := []byte(secret.StringData[clusterSecretKey])
	loaded, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if cl := loaded.Clusters["read-cluster"]; loaded.CurrentContext != "read-cluster" || cl == nil || cl.Server != p.read.Config.Host ||
		!bytes.Equal(cl.CertificateAuthorityData, p.read.Config.CAData) || loaded.AuthInfos[defaultRemoteServiceAccount] == nil {
		t.Fatalf("the Secret's kubeconfig: %+v", loaded)
	}
	expectRemoteAccess(t, p, kubeconfig, saNS, defaultRemoteServiceAccount)

	// Again: the ServiceAccount is used as it is, with a new token.
	out, errOut = p.mustRun(t, args()...)
	if strings.Contains(errOut, "created") {
		t.Errorf("the second run created something: %s", errOut)
	}
	again := &corev1.Secret{}
	if err := yaml.Unmarshal([]byte(out), again); err != nil {
		t.Fatal(err)
	}
	expectRemoteAccess(t, p, []byte(again.StringData[clusterSecretKey]), saNS, defaultRemoteServiceAccount)

	// A ServiceAccount that exists without the role is refused, with what it lacks.
	if err := p.read.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "no-rights", Namespace: saNS}}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := p.run(t, args("-a", "no-rights")...)
	if code != 1 || out != "" || !strings.Contains(errOut, "ServiceAccount "+saNS+"/no-rights may not get dnsrecords, list dnsrecords, watch dnsrecords, get dnsrecords/status, patch dnsrecords/status, update dnsrecords/status in every namespace") {
		t.Errorf("a ServiceAccount without the role: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// --apply: the primary's namespace must exist; then the Secret is applied (and re-applied).
	code, _, errOut = p.run(t, args("--apply")...)
	if code != 1 || !strings.Contains(errOut, "namespace "+secretsNS+" on the primary: namespaces \""+secretsNS+"\" not found (create it, or set -n to the primary's --cluster-secret-namespace)") || strings.Contains(errOut, "token") {
		t.Errorf("--apply without the namespace: exit %d, stderr %q; want the namespace named before any token is made", code, errOut)
	}
	if err := p.primary.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secretsNS}}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		out, _ = p.mustRun(t, args("--apply")...)
		contains(t, "--apply", out, "secret "+secretsNS+"/read-cluster applied: the primary reads context read's delegating DNSRecords as cluster read-cluster")
		applied := &corev1.Secret{}
		if err := p.primary.Client.Get(ctx, types.NamespacedName{Namespace: secretsNS, Name: "read-cluster"}, applied); err != nil {
			t.Fatal(err)
		}
		if applied.Labels[defaultClusterSecretLabel] != "true" || applied.Annotations[tokenExpiresAnnotation] == "" || len(applied.Data) != 1 {
			t.Fatalf("applied Secret: labels %v, annotations %v, keys %d", applied.Labels, applied.Annotations, len(applied.Data))
		}
		expectRemoteAccess(t, p, applied.Data[clusterSecretKey], saNS, defaultRemoteServiceAccount)
	}
}

// expectRemoteAccess checks what a cluster Secret's kubeconfig may do on the cluster read: as the
// ServiceAccount, list DNSRecords of every namespace and patch their status, and nothing else.
func expectRemoteAccess(t *testing.T, p *pair, kubeconfig []byte, saNS, sa string) {
	t.Helper()
	ctx := t.Context()
	c, cs := secretClient(t, kubeconfig)
	who, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "system:serviceaccount:" + saNS + ":" + sa; who.Status.UserInfo.Username != want {
		t.Fatalf("the Secret's kubeconfig authenticates as %s, want %s", who.Status.UserInfo.Username, want)
	}
	rec := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "seen-", Namespace: p.ns},
		Spec:       v1alpha1.DNSRecordSpec{RootHost: "seen.example.com", Delegate: true, Endpoints: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("seen.example.com", "A", 60, "10.9.9.9")}},
	}
	if err := p.read.Client.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	list := &v1alpha1.DNSRecordList{}
	if err := c.List(ctx, list); err != nil {
		t.Fatalf("listing DNSRecords as the ServiceAccount: %v", err)
	}
	seen := false
	for _, r := range list.Items {
		seen = seen || r.Name == rec.Name
	}
	if !seen {
		t.Errorf("the ServiceAccount's list of every namespace lacks %s/%s", rec.Namespace, rec.Name)
	}
	patch := client.MergeFrom(rec.DeepCopy())
	rec.Status.ObservedGeneration = rec.Generation
	if err := c.Status().Patch(ctx, rec, patch); err != nil {
		t.Errorf("patching a DNSRecord's status as the ServiceAccount: %v", err)
	}
	refused := map[string]error{
		"list secrets":           c.List(ctx, &corev1.SecretList{}, client.InNamespace(p.ns)),
		"create a DNSRecord":     c.Create(ctx, &v1alpha1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Name: "forbidden", Namespace: p.ns}, Spec: v1alpha1.DNSRecordSpec{RootHost: "x.example.com"}}),
		"patch a DNSRecord":      c.Patch(ctx, rec.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`))),
		"delete a DNSRecord":     c.Delete(ctx, rec.DeepCopy()),
		"list namespaces":        c.List(ctx, &corev1.NamespaceList{}),
		"get the kube-system ns": c.Get(ctx, types.NamespacedName{Name: metav1.NamespaceSystem}, &corev1.Namespace{}),
	}
	for what, err := range refused {
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s as the ServiceAccount: %v, want forbidden", what, err)
		}
	}
	if err := p.read.Client.Delete(ctx, rec); err != nil {
		t.Fatal(err)
	}
}
