package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dnspolicy/dnspolicy-controller/apis"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// add-cluster-secret is Kuadrant's `kubectl-kuadrant_dns add-cluster-secret` (cmd/plugin/
// secret_generation.go at 57b9db50), with the same flags and Secret, done with client-go: a
// primary reads another cluster's delegating DNSRecords through the kubeconfig in that Secret
// (cmd/dnspolicy-controller/app/remote.go, docs/delegation.md).
//
// The token is a TokenRequest token of the ServiceAccount, one year by default, as Kuadrant's
// `kubectl create token --duration=8760h`: it expires and is bound to the ServiceAccount (deleting
// the ServiceAccount revokes it), where a long-lived token Secret never expires, is kept only
// while the cluster's legacy-token cleanup sees it used, and is what Kubernetes advises against.
// Running the command again renews it.

// The controller's defaults of the Secrets (cmd/dnspolicy-controller/app: DefaultClusterSecretNamespace,
// DefaultClusterSecretLabel, ClusterSecretKey), Kuadrant's, and the names of the read cluster's
// ServiceAccount (Kuadrant's) and of our install's ClusterRole that it is bound to.
const (
	defaultClusterSecretNamespace = "dns-operator-system"
	defaultClusterSecretLabel     = "kuadrant.io/multicluster-kubeconfig"
	clusterSecretKey              = "kubeconfig"
	defaultRemoteServiceAccount   = "dns-operator-remote-cluster"
	defaultRemoteClusterRole      = "dnspolicy-controller-remote-cluster"
	// tokenExpiresAnnotation says when the Secret's token expires: run the command again before.
	tokenExpiresAnnotation = "dnspolicy.io/token-expires"
	// managedByLabel marks what the command creates on the read cluster.
	managedByLabel = "app.kubernetes.io/managed-by"
)

// remoteAccess is what a primary does with a read cluster's DNSRecords (Kuadrant's remote role,
// config/rbac/base/remote_cluster_role.yaml): the token is checked for each before it is handed out.
var remoteAccess = []authorizationv1.ResourceAttributes{
	{Group: v1alpha1.GroupVersion.Group, Resource: "dnsrecords", Verb: "get"},
	{Group: v1alpha1.GroupVersion.Group, Resource: "dnsrecords", Verb: "list"},
	{Group: v1alpha1.GroupVersion.Group, Resource: "dnsrecords", Verb: "watch"},
	{Group: v1alpha1.GroupVersion.Group, Resource: "dnsrecords", Subresource: "status", Verb: "get"},
	{Group: v1alpha1.GroupVersion.Group, Resource: "dnsrecords", Subresource: "status", Verb: "patch"},
	{Group: v1alpha1.GroupVersion.Group, Resource: "dnsrecords", Subresource: "status", Verb: "update"},
}

type clusterSecretFlags struct {
	name, namespace, label                   string
	serviceAccount, saNamespace, clusterRole string
	server, primaryContext                   string
	duration                                 time.Duration
	apply                                    bool
}

func (c *cli) addClusterSecretCommand() *cobra.Command {
	var f clusterSecretFlags
	cmd := &cobra.Command{
		Use:   "add-cluster-secret --context CONTEXT",
		Short: "Make the kubeconfig Secret through which a delegation primary reads another cluster's DNSRecords",
		Long: `add-cluster-secret makes, from the kubeconfig context (--context) of a cluster to be read by a
delegation primary, the Secret the primary reads it through, as Kuadrant's add-cluster-secret does:
in --namespace (the primary's --cluster-secret-namespace), labelled kuadrant.io/multicluster-kubeconfig=true,
its key kubeconfig holding the cluster's server and CA and a token of a ServiceAccount there.

On the cluster read, the ServiceAccount (--service-account, in --service-account-namespace) is used
when it exists; when it does not, it is created (and its namespace when missing) and bound to the
ClusterRole --cluster-role, which the install ships (get, list and watch on dnsrecords; get, patch
and update on dnsrecords/status). Its token is a TokenRequest token lasting --token-duration. Before
anything is printed or applied, the token is used: it must authenticate as the ServiceAccount, be
allowed each of those verbs, and list DNSRecords.

The Secret is printed as YAML (it holds a token: treat the output as a credential). With --apply it
is applied (server-side) to the primary: the context --primary-context, else the kubeconfig's current
context, as Kuadrant's command applies it; a primary never reads itself.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.addClusterSecret(cmd.Context(), cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	// Kuadrant's command takes the context read as --context or -c: the global --context, with -c.
	fl.StringVarP(&c.overrides.CurrentContext, "context", "c", "", "kubeconfig context of the cluster to be read (required)")
	fl.StringVar(&f.name, "name", "", "name of the Secret, and of the cluster in the primary's metrics and status (default: the context's name)")
	// -n is the Secret's namespace here, as in Kuadrant's command, not the kubeconfig's.
	fl.StringVarP(&f.namespace, "namespace", "n", defaultClusterSecretNamespace, "namespace of the Secret on the primary (its --cluster-secret-namespace)")
	fl.StringVar(&f.label, "cluster-secret-label", defaultClusterSecretLabel, "label, set to \"true\", of the Secret (the primary's --cluster-secret-label)")
	fl.StringVarP(&f.serviceAccount, "service-account", "a", defaultRemoteServiceAccount, "ServiceAccount on the cluster read whose token the Secret holds")
	fl.StringVar(&f.saNamespace, "service-account-namespace", "", "namespace of the ServiceAccount (default: --namespace, as Kuadrant's command)")
	fl.StringVar(&f.clusterRole, "cluster-role", defaultRemoteClusterRole, "ClusterRole a ServiceAccount created here is bound to")
	fl.DurationVar(&f.duration, "token-duration", 8760*time.Hour, "how long the token lasts (the API server may cap it; the Secret's "+tokenExpiresAnnotation+" annotation says when it expires)")
	fl.StringVar(&f.server, "server-in-secret", "", "API server address the primary reaches the cluster at, when not the context's (a kind cluster's container address)")
	fl.BoolVar(&f.apply, "apply", false, "apply the Secret to the primary instead of printing it")
	fl.StringVar(&f.primaryContext, "primary-context", "", "kubeconfig context of the primary for --apply (default: the current context)")
	return cmd
}

func (c *cli) addClusterSecret(ctx context.Context, log io.Writer, f clusterSecretFlags) error {
	read := c.overrides.CurrentContext
	if read == "" {
		return errors.New("--context is required: the kubeconfig context of the cluster the primary is to read")
	}
	if f.name == "" {
		f.name = read
	}
	if errs := validation.IsDNS1123Subdomain(f.name); len(errs) > 0 {
		return fmt.Errorf("%q cannot name a Secret (%s): give one with --name", f.name, strings.Join(errs, "; "))
	}
	if errs := validation.IsQualifiedName(f.label); len(errs) > 0 {
		return fmt.Errorf("--cluster-secret-label %q: %s", f.label, strings.Join(errs, "; "))
	}
	if f.saNamespace == "" {
		f.saNamespace = f.namespace
	}
	if f.duration < 10*time.Minute {
		return fmt.Errorf("--token-duration %v: the API server accepts no token shorter than 10m", f.duration)
	}
	cfg, err := c.config.ClientConfig()
	if err != nil {
		return err
	}
	cfg.UserAgent = "kubectl-dns"
	var primary *kubernetes.Clientset
	if f.apply {
		if primary, err = c.primaryClient(cfg, f.primaryContext); err != nil {
			return err
		}
		if _, err := primary.CoreV1().Namespaces().Get(ctx, f.namespace, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("namespace %s on the primary: %w (create it, or set -n to the primary's --cluster-secret-namespace)", f.namespace, err)
		}
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := ensureServiceAccount(ctx, log, cs, f); err != nil {
		return fmt.Errorf("context %s: %w", read, err)
	}
	tok, err := cs.CoreV1().ServiceAccounts(f.saNamespace).CreateToken(ctx, f.serviceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(f.duration.Seconds()))},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("context %s: a token of ServiceAccount %s/%s: %w", read, f.saNamespace, f.serviceAccount, err)
	}
	kubeconfig, err := remoteKubeconfig(cfg, f, tok.Status.Token)
	if err != nil {
		return err
	}
	if err := checkRemoteAccess(ctx, kubeconfig, cfg.Host, f); err != nil {
		return fmt.Errorf("context %s: %w", read, err)
	}
	expires := tok.Status.ExpirationTimestamp.UTC().Format(time.RFC3339)
	fmt.Fprintf(log, "token of ServiceAccount %s/%s on context %s checked; it expires %s: run this again before then\n", f.saNamespace, f.serviceAccount, read, expires)
	secret := corev1ac.Secret(f.name, f.namespace).
		WithLabels(map[string]string{f.label: "true"}).
		WithAnnotations(map[string]string{tokenExpiresAnnotation: expires}).
		WithType(corev1.SecretTypeOpaque)
	if !f.apply {
		// Printed with stringData, readable and applied by kubectl as data, as Kuadrant's command writes it.
		out, err := yaml.Marshal(secret.WithStringData(map[string]string{clusterSecretKey: string(kubeconfig)}))
		if err != nil {
			return err
		}
		_, err = c.out.Write(out)
		return err
	}
	// Applied with data: server-side apply owns data, which stringData only writes into.
	secret.WithData(map[string][]byte{clusterSecretKey: kubeconfig})
	if _, err := primary.CoreV1().Secrets(f.namespace).Apply(ctx, secret, metav1.ApplyOptions{FieldManager: "kubectl-dns", Force: true}); err != nil {
		return fmt.Errorf("applying Secret %s/%s to the primary: %w", f.namespace, f.name, err)
	}
	fmt.Fprintf(c.out, "secret %s/%s applied: the primary reads context %s's delegating DNSRecords as cluster %s\n", f.namespace, f.name, read, f.name)
	return nil
}

// primaryClient is a client of the primary: context (or the current context) of the same
// kubeconfig files, without the flags that choose the cluster read. The primary is refused when it
// is the cluster read: it would publish its own records twice.
func (c *cli) primaryClient(read *rest.Config, context string) (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(c.loading, &clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("the primary's context: %w", err)
	}
	if strings.TrimSuffix(cfg.Host, "/") == strings.TrimSuffix(read.Host, "/") {
		return nil, fmt.Errorf("the primary's context reaches %s, the cluster to be read: choose the primary with --primary-context", cfg.Host)
	}
	cfg.UserAgent = "kubectl-dns"
	return kubernetes.NewForConfig(cfg)
}

// ensureServiceAccount uses the ServiceAccount when it exists; otherwise it creates it (and its
// namespace) and binds it to the ClusterRole, which must exist: nothing is created without it.
func ensureServiceAccount(ctx context.Context, log io.Writer, cs kubernetes.Interface, f clusterSecretFlags) error {
	_, err := cs.CoreV1().ServiceAccounts(f.saNamespace).Get(ctx, f.serviceAccount, metav1.GetOptions{})
	if err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	if _, err := cs.RbacV1().ClusterRoles().Get(ctx, f.clusterRole, metav1.GetOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("ServiceAccount %s/%s does not exist, nor ClusterRole %s to bind a new one to: install dnspolicy-controller there (it ships the ClusterRole), or name an existing ServiceAccount with --service-account", f.saNamespace, f.serviceAccount, f.clusterRole)
		}
		return err
	}
	created := map[string]string{managedByLabel: "kubectl-dns"}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.saNamespace, Labels: created}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err == nil {
		fmt.Fprintf(log, "created namespace %s\n", f.saNamespace)
	} else if !apierrors.IsAlreadyExists(err) {
		return err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: f.serviceAccount, Namespace: f.saNamespace, Labels: created}}
	if _, err := cs.CoreV1().ServiceAccounts(f.saNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		return err
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: f.clusterRole + ":" + f.saNamespace + ":" + f.serviceAccount, Labels: created},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: f.clusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: f.serviceAccount, Namespace: f.saNamespace}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	fmt.Fprintf(log, "created ServiceAccount %s/%s, bound to ClusterRole %s by ClusterRoleBinding %s\n", f.saNamespace, f.serviceAccount, f.clusterRole, binding.Name)
	return nil
}

// remoteKubeconfig is the kubeconfig of the Secret: the cluster's server (or --server-in-secret)
// and CA as the context reaches them, and the token. The cluster and context are named after the
// Secret, the user after the ServiceAccount, as Kuadrant's command names them.
func remoteKubeconfig(cfg *rest.Config, f clusterSecretFlags, token string) ([]byte, error) {
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		b, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("the context's CA: %w", err)
		}
		ca = b
	}
	server := cfg.Host
	if f.server != "" {
		server = f.server
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[f.name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca, TLSServerName: cfg.ServerName, InsecureSkipTLSVerify: cfg.Insecure}
	kc.AuthInfos[f.serviceAccount] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts[f.name] = &clientcmdapi.Context{Cluster: f.name, AuthInfo: f.serviceAccount}
	kc.CurrentContext = f.name
	return clientcmd.Write(*kc)
}

// checkRemoteAccess uses the kubeconfig as the primary will: it must authenticate as the
// ServiceAccount, be allowed what the primary does with DNSRecords, and list them. With
// --server-in-secret the kubeconfig's address is the primary's, perhaps unreachable from here: the
// context's, host, is used instead.
func checkRemoteAccess(ctx context.Context, kubeconfig []byte, host string, f clusterSecretFlags) error {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return err
	}
	cfg.Host, cfg.UserAgent = host, "kubectl-dns"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	who, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("the Secret's kubeconfig does not reach the cluster: %w", err)
	}
	if want := "system:serviceaccount:" + f.saNamespace + ":" + f.serviceAccount; who.Status.UserInfo.Username != want {
		return fmt.Errorf("the token authenticates as %s, not %s", who.Status.UserInfo.Username, want)
	}
	var denied []string
	for _, attrs := range remoteAccess {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}
		got, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if !got.Status.Allowed {
			res := attrs.Resource
			if attrs.Subresource != "" {
				res += "/" + attrs.Subresource
			}
			denied = append(denied, attrs.Verb+" "+res)
		}
	}
	if len(denied) > 0 {
		return fmt.Errorf("ServiceAccount %s/%s may not %s in every namespace: bind it to ClusterRole %s (or Kuadrant's dns-operator-remote-cluster-role)", f.saNamespace, f.serviceAccount, strings.Join(denied, ", "), f.clusterRole)
	}
	kc, err := client.New(cfg, client.Options{Scheme: apis.Scheme()})
	if err != nil {
		return err
	}
	if err := kc.List(ctx, &v1alpha1.DNSRecordList{}, client.Limit(1)); err != nil {
		return fmt.Errorf("listing DNSRecords as ServiceAccount %s/%s: %w", f.saNamespace, f.serviceAccount, err)
	}
	return nil
}
