// Package clustersecret connects a delegation primary to another cluster as Kuadrant's
// `kubectl-kuadrant_dns add-cluster-secret` does: on the other cluster a ServiceAccount bound to
// Kuadrant's remote role (get, list and watch on dnsrecords; get, patch and update on their status;
// config/rbac/remote/role.yaml in Kuadrant's dns-operator), and on the primary a Secret labelled
// kuadrant.io/multicluster-kubeconfig=true whose kubeconfig holds that ServiceAccount's token,
// nothing more. The e2e and mixed-fleet tiers connect their clusters with it, so a primary is
// tested with exactly the rights Kuadrant's documentation gives it.
package clustersecret

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// Kuadrant's contract for reaching another cluster (cmd/main.go and add-cluster-secret there).
const (
	Namespace      = "dns-operator-system"
	Label          = "kuadrant.io/multicluster-kubeconfig"
	Key            = "kubeconfig"
	ServiceAccount = "dns-operator-remote-cluster"
	role           = "dns-operator-remote-cluster-role"
)

// Kubeconfig is a kubeconfig whose one cluster, user and context are all called name.
func Kubeconfig(name, server string, ca []byte, auth *clientcmdapi.AuthInfo) ([]byte, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	kc.AuthInfos[name] = auth
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	return clientcmd.Write(*kc)
}

// Connect lets the primary read the DNSRecords of the cluster remote: the ServiceAccount and its
// role on remote (made once, however many primaries reach it), and on the primary the kubeconfig
// Secret called name in Namespace.
func Connect(ctx context.Context, primary, remote *rest.Config, name string) error {
	p, err := kubernetes.NewForConfig(primary)
	if err != nil {
		return err
	}
	r, err := kubernetes.NewForConfig(remote)
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	steps := []func() error{
		func() error { _, err := p.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); return err },
		func() error { _, err := r.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); return err },
		func() error {
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: ServiceAccount, Namespace: Namespace}}
			_, err := r.CoreV1().ServiceAccounts(Namespace).Create(ctx, sa, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := r.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
				ObjectMeta: metav1.ObjectMeta{Name: role},
				Rules: []rbacv1.PolicyRule{
					{APIGroups: []string{"kuadrant.io"}, Resources: []string{"dnsrecords"}, Verbs: []string{"get", "list", "watch"}},
					{APIGroups: []string{"kuadrant.io"}, Resources: []string{"dnsrecords/status"}, Verbs: []string{"get", "patch", "update"}},
				},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := r.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "dns-operator-remote-cluster-rolebinding"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ServiceAccount, Namespace: Namespace}},
			}, metav1.CreateOptions{})
			return err
		},
	}
	for _, step := range steps {
		if err := step(); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	tok, err := r.CoreV1().ServiceAccounts(Namespace).CreateToken(ctx, ServiceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(24 * 3600))},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("a token of %s/%s: %w", Namespace, ServiceAccount, err)
	}
	kc, err := Kubeconfig(name, remote.Host, remote.CAData, &clientcmdapi.AuthInfo{Token: tok.Status.Token})
	if err != nil {
		return err
	}
	_, err = p.CoreV1().Secrets(Namespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, Labels: map[string]string{Label: "true"}},
		Data:       map[string][]byte{Key: kc},
	}, metav1.CreateOptions{})
	return err
}
