//go:build integration

package app

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// A primary asks the API server whether it may read the kubeconfig Secrets of
// --cluster-secret-namespace before it caches them: a ServiceAccount with no rights there is
// denied every verb the cache needs, one allowed only get is denied list and watch, and one bound
// to get, list and watch there is denied nothing (a cluster-wide right elsewhere does not count).
func TestClusterSecretsReadable(t *testing.T) {
	ctx := t.Context()
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	const ns, sa = "dns-operator-system", "dnspolicy-controller"
	for _, o := range []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: ns}}, {ObjectMeta: metav1.ObjectMeta{Name: "other"}}} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	as := rest.CopyConfig(env.Config)
	as.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:other:" + sa}
	grant := func(name, namespace string, verbs ...string) {
		t.Helper()
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: verbs}}}
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "other", Name: sa}}}
		if err := env.Client.Create(ctx, role); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Create(ctx, binding); err != nil {
			t.Fatal(err)
		}
	}
	check := func(want ...string) {
		t.Helper()
		// RBAC's authorizer reads its informers, so a binding just made may not count yet.
		var denied []string
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			var err error
			denied, err = clusterSecretsReadable(ctx, as, ns)
			return slices.Equal(denied, want), err
		})
		if err != nil {
			t.Fatalf("denied %v, want %v: %v", denied, want, err)
		}
	}
	grant("elsewhere", "other", "get", "list", "watch")
	check("get", "list", "watch")
	grant("get-only", ns, "get")
	check("list", "watch")
	grant("reader", ns, "get", "list", "watch")
	check()
	if denied, err := clusterSecretsReadable(ctx, env.Config, ns); err != nil || len(denied) > 0 {
		t.Fatalf("the test's admin: denied %v, %v", denied, err)
	}
}
