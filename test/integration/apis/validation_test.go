//go:build integration

package apis_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// strict makes the API server reject unknown fields instead of dropping them, so "accepted" means
// every field of the manifest is part of the API.
var strict = &client.CreateOptions{FieldValidation: metav1.FieldValidationStrict}

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "apis-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// object parses a YAML manifest and puts it in a namespace.
func object(t *testing.T, manifest, ns string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatalf("bad test manifest: %v\n%s", err, manifest)
	}
	u.SetNamespace(ns)
	return u
}

func policy(spec string) string {
	return "apiVersion: kuadrant.io/v1\nkind: DNSPolicy\nmetadata: {name: p}\nspec:\n" + indent(spec)
}

func record(spec string) string {
	return "apiVersion: kuadrant.io/v1alpha1\nkind: DNSRecord\nmetadata: {name: r}\nspec:\n" + indent(spec)
}

func probe(spec string) string {
	return "apiVersion: kuadrant.io/v1alpha1\nkind: DNSHealthCheckProbe\nmetadata: {name: pr}\nspec:\n" + indent(spec)
}

func indent(s string) string {
	lines := strings.Split(strings.Trim(s, "\n"), "\n")
	for i := range lines {
		lines[i] = "  " + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

const gw = "targetRef: {group: gateway.networking.k8s.io, kind: Gateway, name: gw}\n"

func TestInvalidObjectsAreRejectedNamingTheField(t *testing.T) {
	excl21 := "excludeAddresses: [" + strings.TrimSuffix(strings.Repeat("1.2.3.4,", 21), ",") + "]"
	cases := []struct {
		name     string
		manifest string
		field    string // the field path the error must name
		message  string // and a part of its message
	}{
		// DNSPolicy
		{"policy without targetRef", policy("loadBalancing: {geo: IE}"), "spec.targetRef", "Required value"},
		{"policy targetRef group", policy("targetRef: {group: apps, kind: Gateway, name: gw}"), "spec.targetRef", "Invalid targetRef.group"},
		{"policy targetRef kind", policy("targetRef: {group: gateway.networking.k8s.io, kind: HTTPRoute, name: gw}"), "spec.targetRef", "Invalid targetRef.kind"},
		{"policy targetRef empty name", policy("targetRef: {group: gateway.networking.k8s.io, kind: Gateway, name: ''}"), "spec.targetRef.name", ""},
		{"policy geo too short", policy(gw + "loadBalancing: {geo: I}"), "spec.loadBalancing.geo", "at least 2"},
		{"policy geo missing", policy(gw + "loadBalancing: {weight: 10}"), "spec.loadBalancing.geo", "Required value"},
		{"policy negative weight", policy(gw + "loadBalancing: {geo: IE, weight: -1}"), "spec.loadBalancing.weight", "greater than or equal to 0"},
		{"policy health path without slash", policy(gw + "healthCheck: {path: healthz}"), "spec.healthCheck.path", "should match"},
		{"policy health port too low", policy(gw + "healthCheck: {port: 8}"), "spec.healthCheck.port", "Only ports 80, 443, 1024-49151 are allowed"},
		{"policy health port too high", policy(gw + "healthCheck: {port: 50000}"), "spec.healthCheck.port", "Only ports 80, 443, 1024-49151 are allowed"},
		{"policy health protocol", policy(gw + "healthCheck: {protocol: TCP}"), "spec.healthCheck.protocol", "Unsupported value"},
		{"policy failureThreshold zero", policy(gw + "healthCheck: {failureThreshold: 0}"), "spec.healthCheck.failureThreshold", "Failure threshold must be greater than 0"},
		{"policy failureThreshold negative", policy(gw + "healthCheck: {failureThreshold: -3}"), "spec.healthCheck.failureThreshold", "Failure threshold must be greater than 0"},
		{"policy headers ref without name", policy(gw + "healthCheck: {additionalHeadersRef: {}}"), "spec.healthCheck.additionalHeadersRef.name", "Required value"},
		{"policy two providerRefs", policy(gw + "providerRefs: [{name: a}, {name: b}]"), "spec.providerRefs", "Too many"},
		{"policy providerRef empty name", policy(gw + "providerRefs: [{name: ''}]"), "spec.providerRefs[0].name", "at least 1"},
		{"policy 21 excludeAddresses", policy(gw + excl21), "spec.excludeAddresses", "Too many"},
		{"policy bad CIDR", policy(gw + "excludeAddresses: [10.0.0.0/33]"), "spec.excludeAddresses", "must be valid CIDRs"},
		{"policy delegate with providerRefs", policy(gw + "delegate: true\nproviderRefs: [{name: a}]"), "spec.providerRefs", "delegate=true and providerRefs are mutually exclusive"},
		// DNSRecord
		{"record without rootHost", record("endpoints: []"), "spec.rootHost", "Required value"},
		{"record rootHost single label", record("rootHost: localhost"), "spec.rootHost", "should match"},
		{"record rootHost empty label", record("rootHost: a..example.com"), "spec.rootHost", "should match"},
		{"record ownerID too short", record("rootHost: a.example.com\nownerID: abc"), "spec.ownerID", "at least 6"},
		{"record ownerID too long", record("rootHost: a.example.com\nownerID: " + strings.Repeat("x", 37)), "spec.ownerID", "may not be more than 36"},
		{"record endpoint outside rootHost", record("rootHost: a.example.com\nendpoints: [{dnsName: b.example.com, recordType: A, targets: [1.2.3.4]}]"), "spec.endpoints", "every endpoint dnsName must be the rootHost or a name under it"},
		{"record endpoint sharing only a suffix", record("rootHost: example.com\nendpoints: [{dnsName: badexample.com, recordType: A, targets: [1.2.3.4]}]"), "spec.endpoints", "every endpoint dnsName must be the rootHost or a name under it"},
		{"record delegate with providerRef", record("rootHost: a.example.com\ndelegate: true\nproviderRef: {name: p}"), "spec.providerRef", "delegate=true and providerRef are mutually exclusive"},
		{"record providerRef empty name", record("rootHost: a.example.com\nproviderRef: {name: ''}"), "spec.providerRef.name", "at least 1"},
		{"record health port", record("rootHost: a.example.com\nhealthCheck: {port: 22}"), "spec.healthCheck.port", "Only ports 80, 443, 1024-49151 are allowed"},
		{"record health path", record("rootHost: a.example.com\nhealthCheck: {path: 'health check'}"), "spec.healthCheck.path", "should match"},
		// DNSHealthCheckProbe
		{"probe port", probe("port: 22"), "spec.port", "Only ports 80, 443, 1024-49151 are allowed"},
		{"probe failureThreshold", probe("failureThreshold: 0"), "spec.failureThreshold", "Failure threshold must be greater than 0"},
		{"probe protocol", probe("protocol: FTP"), "spec.protocol", "Unsupported value"},
		{"probe path", probe("path: nope"), "spec.path", "should match"},
		{"probe address", probe("address: 'not an address!'"), "spec.address", "should match"},
		{"probe hostname", probe("hostname: UPPER.example.com"), "spec.hostname", "should match"},
	}
	if len(cases) < 25 {
		t.Fatalf("the acceptance asks for at least 25 invalid objects, have %d", len(cases))
	}
	ns := newNamespace(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := env.Client.Create(context.Background(), object(t, tc.manifest, ns), strict)
			if err == nil {
				t.Fatalf("accepted, want rejected naming %s:\n%s", tc.field, tc.manifest)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want an Invalid error, got %v", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.field+":") {
				t.Errorf("error does not name %s: %s", tc.field, msg)
			}
			if !strings.Contains(msg, tc.message) {
				t.Errorf("error does not say %q: %s", tc.message, msg)
			}
		})
	}
}

func TestImmutableFields(t *testing.T) {
	cases := []struct {
		name    string
		create  string
		update  func(u *unstructured.Unstructured)
		field   string
		message string
	}{
		{"record rootHost", record("rootHost: a.example.com"), set("b.example.com", "spec", "rootHost"), "spec.rootHost", "RootHost is immutable"},
		{"record ownerID changed", record("rootHost: a.example.com\nownerID: owner-one"), set("owner-two", "spec", "ownerID"), "spec.ownerID", "OwnerID is immutable"},
		{"record ownerID set later", record("rootHost: a.example.com"), set("owner-one", "spec", "ownerID"), "spec.ownerID", "OwnerID can't be set if it was previously unset"},
		{"record ownerID removed", record("rootHost: a.example.com\nownerID: owner-one"), unset("spec", "ownerID"), "spec.ownerID", "OwnerID can't be unset if it was previously set"},
		{"record delegate changed", record("rootHost: a.example.com\ndelegate: false"), set(true, "spec", "delegate"), "spec.delegate", "delegate is immutable"},
		{"record delegate set later", record("rootHost: a.example.com"), set(true, "spec", "delegate"), "spec.delegate", "Delegate can't be set if it was previously unset"},
		{"policy delegate changed", policy(gw + "delegate: true"), set(false, "spec", "delegate"), "spec.delegate", "delegate is immutable"},
		{"policy delegate set later", policy(gw), set(true, "spec", "delegate"), "spec.delegate", "Delegate can't be set if it was previously unset"},
		{"policy delegate removed", policy(gw + "delegate: true"), unset("spec", "delegate"), "spec.delegate", "Delegate can't be unset if it was previously set"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := newNamespace(t)
			ctx := context.Background()
			u := object(t, tc.create, ns)
			u.SetName(fmt.Sprintf("immutable-%d", i))
			if err := env.Client.Create(ctx, u, strict); err != nil {
				t.Fatalf("create: %v", err)
			}
			tc.update(u)
			err := env.Client.Update(ctx, u)
			if err == nil {
				t.Fatalf("update accepted, want rejected naming %s", tc.field)
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.field+":") || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("want Invalid naming %s with %q, got %v", tc.field, tc.message, err)
			}
		})
	}
}

// Mutable fields stay mutable: the immutability rules must not freeze the whole spec.
func TestMutableFieldsUpdate(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	u := object(t, record("rootHost: a.example.com\nownerID: owner-one\nendpoints: [{dnsName: a.example.com, recordType: A, targets: [1.2.3.4]}]"), ns)
	if err := env.Client.Create(ctx, u, strict); err != nil {
		t.Fatal(err)
	}
	set([]any{map[string]any{"dnsName": "a.example.com", "recordType": "A", "targets": []any{"5.6.7.8"}}}, "spec", "endpoints")(u)
	if err := env.Client.Update(ctx, u); err != nil {
		t.Fatalf("changing endpoints was rejected: %v", err)
	}
}

func set(v any, path ...string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		if err := unstructured.SetNestedField(u.Object, v, path...); err != nil {
			panic(err)
		}
	}
}

func unset(path ...string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) { unstructured.RemoveNestedField(u.Object, path...) }
}

// Every sample under config/samples applies as written, with strict field validation.
func TestSamplesApply(t *testing.T) {
	files, err := filepath.Glob("../../../config/samples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{ // what issue 2 asks the samples to cover
		"dnspolicy_simple.yaml": false, "dnspolicy_loadbalanced.yaml": false, "dnspolicy_listener.yaml": false,
		"dnspolicy_healthcheck.yaml": false, "dnsrecord_loadbalanced.yaml": false,
	}
	secretTypes := map[string]bool{}
	ns := newNamespace(t)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		u := object(t, string(data), ns)
		if err := env.Client.Create(context.Background(), u, strict); err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
			continue
		}
		if _, ok := want[filepath.Base(f)]; ok {
			want[filepath.Base(f)] = true
		}
		if u.GetKind() == "Secret" {
			typ, _, _ := unstructured.NestedString(u.Object, "type")
			secretTypes[typ] = true
		}
	}
	for f, applied := range want {
		if !applied {
			t.Errorf("sample %s missing or not applied", f)
		}
	}
	for _, typ := range []string{"kuadrant.io/aws", "kuadrant.io/gcp", "kuadrant.io/azure", "kuadrant.io/coredns",
		"kuadrant.io/inmemory", "kuadrant.io/endpoint", "kuadrant.io/k8gb"} {
		if !secretTypes[typ] {
			t.Errorf("no sample provider Secret of type %s", typ)
		}
	}
}

// A DNSPolicy written for Kuadrant applies unchanged, every field known, and reads back as written.
func TestKuadrantManifestApplies(t *testing.T) {
	data, err := os.ReadFile("testdata/kuadrant-dnspolicy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	u := object(t, string(data), ns)
	if err := env.Client.Create(context.Background(), u, strict); err != nil {
		t.Fatalf("Kuadrant manifest rejected: %v", err)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(u.GroupVersionKind())
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(u), got); err != nil {
		t.Fatal(err)
	}
	sent := object(t, string(data), ns)
	wantSpec, _, _ := unstructured.NestedMap(sent.Object, "spec")
	gotSpec, _, _ := unstructured.NestedMap(got.Object, "spec")
	if fmt.Sprint(wantSpec) != fmt.Sprint(gotSpec) {
		t.Errorf("spec changed on the way in:\nsent %v\ngot  %v", wantSpec, gotSpec)
	}
}

// Records that accumulate other owners' endpoints (Kuadrant's authoritative and zone records) hold
// the ownership TXTs of their root host, which are not under it on a label boundary; they are
// accepted, and a lookalike name still is not.
func TestOwnershipTXTOfRootHostAccepted(t *testing.T) {
	ns := newNamespace(t)
	ok := record(`rootHost: app.example.com
endpoints:
- {dnsName: app.example.com, recordType: A, targets: [1.2.3.4]}
- {dnsName: kuadrant-1a2b3c4d-a-app.example.com, recordType: TXT, targets: ['"heritage=external-dns,external-dns/owner=owner-a,external-dns/version=1"']}`)
	if err := env.Client.Create(context.Background(), object(t, ok, ns), strict); err != nil {
		t.Fatalf("authoritative-record shape rejected: %v", err)
	}
	wild := record(`rootHost: '*.example.com'
endpoints:
- {dnsName: kuadrant-1a2b3c4d-a-wildcard.example.com, recordType: TXT, targets: [x]}`)
	u := object(t, wild, ns)
	u.SetName("wild")
	if err := env.Client.Create(context.Background(), u, strict); err != nil {
		t.Fatalf("ownership TXT of a wildcard root host rejected: %v", err)
	}
	bad := object(t, record(`rootHost: app.example.com
endpoints:
- {dnsName: kuadrant-1a2b3c4d-a-app.example.com, recordType: A, targets: [1.2.3.4]}`), ns)
	bad.SetName("bad")
	if err := env.Client.Create(context.Background(), bad, strict); err == nil || !strings.Contains(err.Error(), "spec.endpoints") {
		t.Fatalf("an A record named like an ownership TXT must be rejected, got %v", err)
	}
}
