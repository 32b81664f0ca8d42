//go:build integration || tenancy

package install_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/discovery"
)

// access is one request the ServiceAccount might make: verb on group/resource[/subresource] in a
// namespace ("" for cluster-wide or cluster-scoped), optionally one object by name.
type access struct {
	verb, group, resource, subresource, namespace, name string
}

func (a access) String() string {
	r := a.resource
	if a.subresource != "" {
		r += "/" + a.subresource
	}
	if a.group != "" {
		r += "." + a.group
	}
	where := "cluster-wide"
	if a.namespace != "" {
		where = "in " + a.namespace
	}
	if a.name != "" {
		r += " " + a.name
	}
	return fmt.Sprintf("%s %s %s", a.verb, r, where)
}

// allowed asks the API server whether the ServiceAccount may make the request.
func (cp *controlPlane) allowed(t *testing.T, a access) bool {
	t.Helper()
	return cp.allowedAs(t, serviceAccount, serviceAccountGroups, a)
}

func (cp *controlPlane) allowedAs(t *testing.T, user string, groups []string, a access) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   user,
		Groups: groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource, Namespace: a.namespace, Name: a.name,
		},
	}}
	if err := cp.c.Create(context.Background(), sar); err != nil {
		t.Fatalf("SubjectAccessReview %s: %v", a, err)
	}
	return sar.Status.Allowed
}

// expect fails the test for every request whose answer is not want.
func (cp *controlPlane) expect(t *testing.T, want bool, requests ...access) {
	t.Helper()
	for _, a := range requests {
		if got := cp.allowed(t, a); got != want {
			t.Errorf("the ServiceAccount may %s: %v, want %v", a, got, want)
		}
	}
}

// writeVerbs are every verb that changes something, or lets a caller act as someone else.
var writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection"}

// nobody is a ServiceAccount no manifest mentions: what it may do, every authenticated user may
// (the self-reviews of Kubernetes' default roles), and is not granted by an install.
const nobody = "system:serviceaccount:default:nobody"

// writable lists every write the ServiceAccount may make beyond what every authenticated user may,
// over every resource and subresource the API server serves (finalizers, which an admission plugin
// checks rather than an API, are asked about separately), cluster-wide and in each namespace given;
// lines are access strings, sorted.
func (cp *controlPlane) writable(t *testing.T, namespaces ...string) []string {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cp.cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var out []string
	for _, list := range lists {
		group := strings.Split(list.GroupVersion, "/")[0]
		if !strings.Contains(list.GroupVersion, "/") {
			group = ""
		}
		for _, r := range list.APIResources {
			resource, sub, _ := strings.Cut(r.Name, "/")
			scopes := []string{""}
			if r.Namespaced {
				scopes = append(scopes, namespaces...)
			}
			for _, ns := range scopes {
				for _, verb := range writeVerbs {
					a := access{verb: verb, group: group, resource: resource, subresource: sub, namespace: ns}
					if seen[a.String()] {
						continue
					}
					seen[a.String()] = true
					if cp.allowed(t, a) && !cp.allowedAs(t, nobody, []string{"system:authenticated"}, a) {
						out = append(out, a.String())
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// writes expands verbs on a resource into access strings.
func writes(group, resource, sub, namespace string, verbs ...string) []string {
	var out []string
	for _, v := range verbs {
		out = append(out, access{verb: v, group: group, resource: resource, subresource: sub, namespace: namespace}.String())
	}
	return out
}

// controllerWrites is everything the controller writes, in one scope ("" = cluster-wide): its
// DNSRecords (both controllers and the endpoint backend), their status, DNSHealthCheckProbes (the
// record controller makes and deletes them, the probe controller adds its finalizer) and their status, the status of DNSPolicies and Gateways, and
// events. policy says whether the policy side is installed.
func controllerWrites(namespace string, policy bool) []string {
	out := writes("kuadrant.io", "dnsrecords", "", namespace, "create", "update", "patch", "delete")
	out = append(out, writes("kuadrant.io", "dnsrecords", "status", namespace, "update", "patch")...)
	out = append(out, writes("kuadrant.io", "dnshealthcheckprobes", "", namespace, "create", "update", "patch", "delete")...)
	out = append(out, writes("kuadrant.io", "dnshealthcheckprobes", "status", namespace, "update", "patch")...)
	out = append(out, writes("events.k8s.io", "events", "", namespace, "create", "patch")...)
	if policy {
		out = append(out, writes("kuadrant.io", "dnspolicies", "status", namespace, "update", "patch")...)
		out = append(out, writes("gateway.networking.k8s.io", "gateways", "status", namespace, "update", "patch")...)
	}
	return out
}

// ownNamespaceWrites are the writes in the controller's namespace only: the leader election's
// Lease, and the Secrets holding the embedded DNS server's DNSSEC keys (made and updated, never
// deleted, listed or watched).
func ownNamespaceWrites() []string {
	return append(writes("coordination.k8s.io", "leases", "", controllerNamespace, "create", "update", "patch", "delete"),
		writes("", "secrets", "", controllerNamespace, "create", "update")...)
}

// metricsAuthWrites are the reviews the secure metrics endpoint asks the API server for, in every
// install mode (cluster-scoped).
func metricsAuthWrites() []string {
	return append(writes("authentication.k8s.io", "tokenreviews", "", "", "create"),
		writes("authorization.k8s.io", "subjectaccessreviews", "", "", "create")...)
}

func sorted(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// diffLines reports the lines only in got and only in want.
func diffLines(got, want []string) string {
	var b strings.Builder
	for _, g := range got {
		if !slices.Contains(want, g) {
			fmt.Fprintf(&b, "\n  may, but should not: %s", g)
		}
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			fmt.Fprintf(&b, "\n  may not, but needs to: %s", w)
		}
	}
	return b.String()
}

// escalation are requests that would let the ServiceAccount gain what it was not given.
func escalation(namespace string) []access {
	return []access{
		{verb: "impersonate", resource: "users"},
		{verb: "impersonate", resource: "serviceaccounts", namespace: namespace},
		{verb: "impersonate", resource: "groups"},
		{verb: "bind", group: "rbac.authorization.k8s.io", resource: "clusterroles"},
		{verb: "escalate", group: "rbac.authorization.k8s.io", resource: "clusterroles"},
		{verb: "create", resource: "serviceaccounts", subresource: "token", namespace: controllerNamespace, name: "dnspolicy-controller"},
	}
}

// finalizers is the update of DNSRecords' finalizers the record controller needs (the record's
// finalizer holds its deletion until its records left the zone).
func finalizers(namespace string) access {
	return access{verb: "update", group: "kuadrant.io", resource: "dnsrecords", subresource: "finalizers", namespace: namespace}
}
