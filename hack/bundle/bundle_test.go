package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	"sigs.k8s.io/yaml"
)

const repoRoot = "../.."

// The committed bundles (which `make verify` keeps equal to what this command generates) pass the
// default and OperatorHub validators with no error and no warning.
func TestCommittedBundlesValidate(t *testing.T) {
	for _, v := range Variants {
		if err := Validate(filepath.Join(repoRoot, "bundle", v.Dir)); err != nil {
			t.Error(err)
		}
	}
}

// The record-side bundle is what Kuadrant's operator depends on (an olm.package dependency on
// dns-operator): that package name, the record APIs owned, DNSPolicy (owned by Kuadrant's own CSV)
// not owned, and the policy controller off.
func TestRecordBundleStandsInForDNSOperator(t *testing.T) {
	b, err := manifests.GetBundleFromDir(filepath.Join(repoRoot, "bundle", "dns-operator"))
	if err != nil {
		t.Fatal(err)
	}
	if b.Package != "dns-operator" {
		t.Errorf("package %q, want dns-operator", b.Package)
	}
	var owned []string
	for _, crd := range b.CSV.Spec.CustomResourceDefinitions.Owned {
		owned = append(owned, crd.Name)
	}
	if !slices.Equal(owned, []string{"dnshealthcheckprobes.kuadrant.io", "dnsrecords.kuadrant.io"}) {
		t.Errorf("owned APIs %v", owned)
	}
	args := b.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.Containers[0].Args
	if !slices.Contains(args, "--enable-policy-controller=false") {
		t.Errorf("args %v run the policy controller", args)
	}
	for _, p := range b.CSV.Spec.InstallStrategy.StrategySpec.ClusterPermissions {
		for _, r := range p.Rules {
			if slices.Contains(r.Resources, "dnspolicies") || slices.Contains(r.Resources, "gateways") {
				t.Errorf("record side granted %v", r)
			}
		}
	}
}

// No cluster-wide permission of either bundle lists or watches Secrets, and none uses "*".
func TestBundlePermissionsAreNarrow(t *testing.T) {
	for _, v := range Variants {
		b, err := manifests.GetBundleFromDir(filepath.Join(repoRoot, "bundle", v.Dir))
		if err != nil {
			t.Fatal(err)
		}
		spec := b.CSV.Spec.InstallStrategy.StrategySpec
		for _, p := range append(spec.ClusterPermissions, spec.Permissions...) {
			for _, r := range p.Rules {
				if slices.Contains(r.Verbs, "*") || slices.Contains(r.Resources, "*") || slices.Contains(r.APIGroups, "*") {
					t.Errorf("%s: wildcard rule %v", v.Package, r)
				}
			}
		}
		for _, p := range spec.ClusterPermissions {
			for _, r := range p.Rules {
				if slices.Contains(r.Resources, "secrets") && (slices.Contains(r.Verbs, "list") || slices.Contains(r.Verbs, "watch")) {
					t.Errorf("%s: cluster-wide %v on Secrets", v.Package, r.Verbs)
				}
			}
		}
	}
}

// The validators are not a formality: a CSV without a provider, and one with an owned API that has
// no CRD in the bundle, are refused.
func TestValidateRefusesBrokenBundles(t *testing.T) {
	for name, edit := range map[string]func(csv map[string]any){
		"no provider": func(csv map[string]any) { delete(csv["spec"].(map[string]any), "provider") },
		"owned API without its CRD": func(csv map[string]any) {
			crds := csv["spec"].(map[string]any)["customresourcedefinitions"].(map[string]any)
			owned := crds["owned"].([]any)
			crds["owned"] = append(owned, map[string]any{"name": "widgets.example.com", "kind": "Widget", "version": "v1"})
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, filepath.Join(repoRoot, "bundle", "dnspolicy-controller"), dir)
			path := filepath.Join(dir, "manifests", "dnspolicy-controller.clusterserviceversion.yaml")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			csv := map[string]any{}
			if err := yaml.Unmarshal(data, &csv); err != nil {
				t.Fatal(err)
			}
			edit(csv)
			if data, err = yaml.Marshal(csv); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			err = Validate(dir)
			if err == nil || !strings.Contains(err.Error(), "error:") {
				t.Errorf("a broken bundle validated: %v", err)
			}
		})
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
