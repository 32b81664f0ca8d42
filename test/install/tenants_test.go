//go:build integration || tenancy

package install_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// userRoles are Kubernetes' user-facing ClusterRoles that aggregate others by label.
var userRoles = []string{"admin", "edit", "view"}

// aggregateUserRoles fills admin, edit and view with the rules of the ClusterRoles their
// aggregationRule selects. In a cluster kube-controller-manager's clusterrole-aggregation controller
// does this; envtest runs kube-apiserver and etcd only, so the test does its one step: the rules of
// every selected ClusterRole, appended in name order, replace the aggregated role's.
func aggregateUserRoles(t *testing.T, c client.Client) {
	t.Helper()
	ctx := context.Background()
	var all rbacv1.ClusterRoleList
	if err := c.List(ctx, &all); err != nil {
		t.Fatal(err)
	}
	for _, name := range userRoles {
		role := &rbacv1.ClusterRole{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, role); err != nil {
			t.Fatal(err)
		}
		if role.AggregationRule == nil {
			t.Fatalf("ClusterRole %s has no aggregationRule", name)
		}
		var rules []rbacv1.PolicyRule
		for _, sel := range role.AggregationRule.ClusterRoleSelectors {
			s, err := metav1.LabelSelectorAsSelector(&sel)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range all.Items {
				if r.Name != name && s.Matches(labels.Set(r.Labels)) {
					rules = append(rules, r.Rules...)
				}
			}
		}
		role.Rules = rules
		if err := c.Update(ctx, role); err != nil {
			t.Fatal(err)
		}
	}
}

// waitAllowed waits until the API server's authorizer, which reads roles and bindings from its own
// cache, allows the request: a binding just created is not seen at once.
func (cp *controlPlane) waitAllowed(t *testing.T, user string, groups []string, a access) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, func() string {
		if cp.allowedAs(t, user, groups, a) {
			return ""
		}
		return fmt.Sprintf("%s may not %s", user, a)
	})
}

// tenantUser is the user of a namespace's team: bound to Kubernetes' standard edit role there, and
// nothing else.
func tenantUser(ns string) string { return "team-" + ns }

// addTenant creates namespace ns with its team's user bound to edit there, and returns a client that
// acts as that user (impersonated), never with the test's admin rights.
func (cp *controlPlane) addTenant(t *testing.T, ns string) client.Client {
	t.Helper()
	cp.namespaces(t, ns)
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "team-edit", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: tenantUser(ns)}},
	}
	if err := cp.c.Create(context.Background(), rb); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(cp.cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: tenantUser(ns), Groups: []string{"system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// bindProviderSecrets binds dnspolicy-controller-provider-secrets to the ServiceAccount in ns, as
// docs/install.md tells an admin to for namespaces that use a default-provider Secret.
func bindProviderSecrets(t *testing.T, c client.Client, ns string) {
	t.Helper()
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "dnspolicy-controller-provider-secrets", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "dnspolicy-controller-provider-secrets"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "dnspolicy-controller", Namespace: controllerNamespace}},
	}
	if err := c.Create(context.Background(), rb); err != nil {
		t.Fatal(err)
	}
}

// A namespace's team, bound to edit, manages our objects in its namespace (the install's
// aggregated roles) and nowhere else, and never writes their status; view reads them.
func TestTenantRoles(t *testing.T) {
	cp := startControlPlane(t)
	cp.apply(t, golden(t, "kustomize-default.yaml"))
	aggregateUserRoles(t, cp.c)
	cp.addTenant(t, "team-a")
	cp.namespaces(t, "team-b")
	user, groups := tenantUser("team-a"), []string{"system:authenticated"}
	cp.waitAllowed(t, user, groups, access{verb: "create", group: "kuadrant.io", resource: "dnsrecords", namespace: "team-a"})
	for _, resource := range []string{"dnspolicies", "dnsrecords", "dnshealthcheckprobes"} {
		for _, verb := range []string{"create", "update", "patch", "delete", "get", "list", "watch"} {
			a := access{verb: verb, group: "kuadrant.io", resource: resource, namespace: "team-a"}
			if !cp.allowedAs(t, user, groups, a) {
				t.Errorf("the team bound to edit may not %s", a)
			}
			a.namespace = "team-b"
			if cp.allowedAs(t, user, groups, a) {
				t.Errorf("the team of team-a may %s", a)
			}
		}
		for _, verb := range []string{"update", "patch"} {
			a := access{verb: verb, group: "kuadrant.io", resource: resource, subresource: "status", namespace: "team-a"}
			if cp.allowedAs(t, user, groups, a) {
				t.Errorf("the team may %s: status is the controller's", a)
			}
		}
	}
	// view reads, and writes nothing.
	viewer := "viewer-of-team-b"
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "viewer", Namespace: "team-b"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: viewer}},
	}
	if err := cp.c.Create(context.Background(), rb); err != nil {
		t.Fatal(err)
	}
	cp.waitAllowed(t, viewer, groups, access{verb: "get", group: "kuadrant.io", resource: "dnsrecords", namespace: "team-b"})
	for _, verb := range append([]string{"get", "list", "watch"}, writeVerbs...) {
		a := access{verb: verb, group: "kuadrant.io", resource: "dnsrecords", namespace: "team-b"}
		if got, want := cp.allowedAs(t, viewer, groups, a), !slices.Contains(writeVerbs, verb); got != want {
			t.Errorf("view may %s: %v, want %v", a, got, want)
		}
	}
}
