// Command bundle writes the OLM bundles and the file-based catalog from the rendered kustomize
// overlays (test/install/golden, which `make install-generate` writes from config/), then validates
// each bundle in-process with operator-framework/api's default and OperatorHub validators.
//
// Two bundles: bundle/dnspolicy-controller (the whole controller; owns DNSPolicy, DNSRecord and
// DNSHealthCheckProbe) and bundle/dns-operator (the record side alone, packaged under the name
// Kuadrant's operator depends on; owns DNSRecord and DNSHealthCheckProbe, not DNSPolicy, which
// Kuadrant's own CSV owns). docs/install.md says what each can and cannot do.
package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/lib/version"
	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/api/pkg/validation"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Variant is one bundle.
type Variant struct {
	// Package is the OLM package name; Dir the folder under bundle/.
	Package, Dir string
	// Render is the kustomize render the bundle is made from.
	Render string
	// DisplayName and Description are shown in OperatorHub.
	DisplayName, Description string
	// Samples are the config/samples files for alm-examples.
	Samples []string
}

// Variants are the bundles this command writes.
var Variants = []Variant{
	{
		Package: "dnspolicy-controller", Dir: "dnspolicy-controller", Render: "test/install/golden/kustomize-default.yaml",
		DisplayName: "DNSPolicy Controller",
		Description: `DNS-based global load balancing for Kubernetes Gateway API.

Attach a **DNSPolicy** to a Gateway and the controller publishes the Gateway's listener hostnames into a
DNS zone: plainly, or as a geo + weighted tree that spreads traffic across every cluster publishing the
same hostname. Clusters cooperate through the zone itself (ownership TXT records and leases): no hub
cluster and no shared database.

Backends: Route 53, Cloud DNS, Azure DNS (with Traffic Manager), the embedded authoritative DNS server
and an in-memory backend for dry runs. The API is wire-compatible with Kuadrant (DNSPolicy kuadrant.io/v1,
DNSRecord and DNSHealthCheckProbe kuadrant.io/v1alpha1, the same provider Secret types).

Provider credentials are Secrets in the policy's namespace, named by providerRefs. The controller may get
a Secret it is named but not list or watch Secrets cluster-wide; to use a namespace's default-provider
Secret (no providerRefs), bind the ClusterRole dnspolicy-controller-provider-secrets in that namespace
(see docs/install.md).`,
		Samples: []string{"config/samples/dnspolicy_loadbalanced.yaml", "config/samples/dnsrecord_loadbalanced.yaml", "config/samples/dnshealthcheckprobe.yaml"},
	},
	{
		Package: "dns-operator", Dir: "dns-operator", Render: "test/install/golden/kustomize-record-only.yaml",
		DisplayName: "DNS Operator (dnspolicy-controller record side)",
		Description: `The record side of dnspolicy-controller, packaged to stand in for Kuadrant's dns-operator.

It reconciles **DNSRecord** (kuadrant.io/v1alpha1) objects into DNS zones with the same record shapes,
ownership TXT records and status conditions as Kuadrant's dns-operator, so the Kuadrant operator (which
owns DNSPolicy and writes DNSRecords) can use it as its DNS component, and zones can be shared with
clusters still running Kuadrant's dns-operator.

It does not own DNSPolicy; it runs with --enable-policy-controller=false. Provider credentials are the
Secret named in a record's providerRef; default-provider Secrets need the ClusterRole
dnspolicy-controller-provider-secrets bound in their namespace (see docs/install.md).`,
		Samples: []string{"config/samples/dnsrecord_loadbalanced.yaml", "config/samples/dnshealthcheckprobe.yaml"},
	},
}

func main() {
	ver := flag.String("version", "", "the release (the VERSION file)")
	image := flag.String("image", "", "the controller image")
	bundleRepo := flag.String("bundle-image-repo", "ghcr.io/dnspolicy", "repository prefix of the bundle images named in the catalog")
	flag.Parse()
	if *ver == "" || *image == "" {
		fmt.Fprintln(os.Stderr, "usage: bundle -version V -image IMAGE")
		os.Exit(2)
	}
	var entries []catalogEntry
	for _, v := range Variants {
		dir := filepath.Join("bundle", v.Dir)
		csv, err := Write(v, *ver, *image, dir)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bundle %s: %v\n", v.Package, err)
			os.Exit(1)
		}
		if err := Validate(dir); err != nil {
			fmt.Fprintf(os.Stderr, "bundle %s: %v\n", v.Package, err)
			os.Exit(1)
		}
		entries = append(entries, catalogEntry{variant: v, csv: csv, image: fmt.Sprintf("%s/%s-bundle:v%s", *bundleRepo, v.Package, *ver)})
	}
	if err := WriteCatalog("catalog", entries); err != nil {
		fmt.Fprintln(os.Stderr, "catalog:", err)
		os.Exit(1)
	}
}

// objects reads every object of a multi-document YAML file.
func objects(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

func convert(u *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}

// Write writes the bundle of v into dir (replacing it) and returns its CSV.
func Write(v Variant, ver, image, dir string) (*v1alpha1.ClusterServiceVersion, error) {
	objs, err := objects(v.Render)
	if err != nil {
		return nil, err
	}
	semv, err := semver.Parse(ver)
	if err != nil {
		return nil, fmt.Errorf("VERSION %q: %w", ver, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "manifests"), 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "metadata"), 0o755); err != nil {
		return nil, err
	}
	strategy, owned, err := installStrategy(v, objs, image, dir)
	if err != nil {
		return nil, err
	}
	sort.Slice(owned, func(i, j int) bool { return owned[i].Name < owned[j].Name })
	examples, err := almExamples(v.Samples)
	if err != nil {
		return nil, err
	}
	csv := newCSV(v, ver, semv, image, examples, strategy, owned)
	if err := writeObject(filepath.Join(dir, "manifests", v.Package+".clusterserviceversion.yaml"), csv); err != nil {
		return nil, err
	}
	annotations := map[string]map[string]string{"annotations": {
		"operators.operatorframework.io.bundle.mediatype.v1":       "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1":       "manifests/",
		"operators.operatorframework.io.bundle.metadata.v1":        "metadata/",
		"operators.operatorframework.io.bundle.package.v1":         v.Package,
		"operators.operatorframework.io.bundle.channels.v1":        "candidate",
		"operators.operatorframework.io.bundle.channel.default.v1": "candidate",
	}}
	if err := writeObject(filepath.Join(dir, "metadata", "annotations.yaml"), annotations); err != nil {
		return nil, err
	}
	return csv, nil
}

// installStrategy ships the rendered objects: CRDs and the objects OLM does not make from the install
// strategy are written to the bundle's manifests; the Deployment and the roles the install binds
// become the strategy.
func installStrategy(v Variant, objs []*unstructured.Unstructured, image, dir string) (v1alpha1.StrategyDetailsDeployment, []v1alpha1.CRDDescription, error) {
	strategy := v1alpha1.StrategyDetailsDeployment{}
	var owned []v1alpha1.CRDDescription
	var serviceAccount string
	// The roles the install binds (its ClusterRoleBindings and RoleBindings) are the CSV's
	// permissions, all of one kind in one entry; the others are shipped for an admin to bind.
	bound := map[string]bool{}
	for _, u := range objs {
		if k := u.GetKind(); k == "ClusterRoleBinding" || k == "RoleBinding" {
			b := &rbacv1.RoleBinding{}
			if err := convert(u, b); err != nil {
				return strategy, nil, err
			}
			bound[b.RoleRef.Kind+"/"+b.RoleRef.Name] = true
		}
	}
	var clusterRules, namespaceRules []rbacv1.PolicyRule
	for _, u := range objs {
		switch u.GetKind() {
		case "CustomResourceDefinition":
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := convert(u, crd); err != nil {
				return strategy, nil, err
			}
			owned = append(owned, describe(crd))
			if err := writeObject(filepath.Join(dir, "manifests", fmt.Sprintf("%s_%s.yaml", crd.Spec.Group, crd.Spec.Names.Plural)), u); err != nil {
				return strategy, nil, err
			}
		case "Deployment":
			d := &appsv1.Deployment{}
			if err := convert(u, d); err != nil {
				return strategy, nil, err
			}
			serviceAccount = d.Spec.Template.Spec.ServiceAccountName
			strategy.DeploymentSpecs = append(strategy.DeploymentSpecs, v1alpha1.StrategyDeploymentSpec{Name: d.Name, Spec: d.Spec, Label: d.Labels})
		case "ClusterRole", "Role":
			r := &rbacv1.ClusterRole{}
			if err := convert(u, r); err != nil {
				return strategy, nil, err
			}
			if !bound[u.GetKind()+"/"+r.Name] {
				// A role the controller is not bound to by the install (bound per namespace by an
				// admin, or to a scraper): shipped as an object of the bundle.
				if err := writeObject(filepath.Join(dir, "manifests", fmt.Sprintf("%s_rbac.authorization.k8s.io_v1_%s.yaml", r.Name, strings.ToLower(u.GetKind()))), u); err != nil {
					return strategy, nil, err
				}
				continue
			}
			if u.GetKind() == "ClusterRole" {
				clusterRules = append(clusterRules, r.Rules...)
			} else {
				namespaceRules = append(namespaceRules, r.Rules...)
			}
		case "Service", "PodDisruptionBudget":
			u.SetNamespace("")
			gv := strings.ReplaceAll(u.GetAPIVersion(), "/", "_")
			if err := writeObject(filepath.Join(dir, "manifests", fmt.Sprintf("%s_%s_%s.yaml", u.GetName(), gv, strings.ToLower(u.GetKind()))), u); err != nil {
				return strategy, nil, err
			}
		case "Namespace", "ServiceAccount", "ClusterRoleBinding", "RoleBinding":
			// OLM creates the namespace (OperatorGroup), the ServiceAccount and the bindings from the
			// install strategy.
		default:
			return strategy, nil, fmt.Errorf("%s holds a %s, which the bundle does not know how to ship", v.Render, u.GetKind())
		}
	}
	if len(strategy.DeploymentSpecs) != 1 || serviceAccount == "" {
		return strategy, nil, fmt.Errorf("%s: want one Deployment with a ServiceAccount", v.Render)
	}
	if len(clusterRules) > 0 {
		strategy.ClusterPermissions = []v1alpha1.StrategyDeploymentPermissions{{ServiceAccountName: serviceAccount, Rules: clusterRules}}
	}
	if len(namespaceRules) > 0 {
		strategy.Permissions = []v1alpha1.StrategyDeploymentPermissions{{ServiceAccountName: serviceAccount, Rules: namespaceRules}}
	}
	for i := range strategy.DeploymentSpecs[0].Spec.Template.Spec.Containers {
		strategy.DeploymentSpecs[0].Spec.Template.Spec.Containers[i].Image = image
	}
	return strategy, owned, nil
}

// newCSV is the bundle's ClusterServiceVersion: what OperatorHub shows, and the install strategy.
func newCSV(v Variant, ver string, semv semver.Version, image, examples string, strategy v1alpha1.StrategyDetailsDeployment, owned []v1alpha1.CRDDescription) *v1alpha1.ClusterServiceVersion {
	return &v1alpha1.ClusterServiceVersion{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.ClusterServiceVersionAPIVersion, Kind: v1alpha1.ClusterServiceVersionKind},
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s.v%s", v.Package, ver),
			Annotations: map[string]string{
				"alm-examples":   examples,
				"capabilities":   "Basic Install",
				"categories":     "Networking",
				"containerImage": image,
				"description":    strings.SplitN(v.Description, "\n", 2)[0],
				"repository":     "https://github.com/dnspolicy/dnspolicy-controller",
				"support":        "dnspolicy-controller maintainers",
				"operators.operatorframework.io/suggested-namespace": "dnspolicy-system",
			},
		},
		Spec: v1alpha1.ClusterServiceVersionSpec{
			DisplayName: v.DisplayName,
			Description: v.Description,
			Version:     version.OperatorVersion{Version: semv},
			Maturity:    "alpha",
			// The Kubernetes release the manifests are tested against is 1.37 (envtest); the APIs
			// they use (apps/v1, policy/v1, rbac/v1, CRD v1 with CEL rules) are served from 1.28.
			MinKubeVersion: "1.28.0",
			Keywords:       []string{"dns", "gateway-api", "global-load-balancing", "kuadrant", "route53", "cloud-dns", "azure-dns"},
			Links: []v1alpha1.AppLink{
				{Name: "Source", URL: "https://github.com/dnspolicy/dnspolicy-controller"},
				{Name: "Install guide", URL: "https://github.com/dnspolicy/dnspolicy-controller/blob/main/docs/install.md"},
			},
			Maintainers: []v1alpha1.Maintainer{{Name: "dnspolicy-controller maintainers", Email: "maintainers@dnspolicy.dev"}},
			Provider:    v1alpha1.AppLink{Name: "dnspolicy-controller", URL: "https://github.com/dnspolicy/dnspolicy-controller"},
			Icon:        []v1alpha1.Icon{{Data: base64.StdEncoding.EncodeToString([]byte(icon)), MediaType: "image/svg+xml"}},
			InstallModes: []v1alpha1.InstallMode{
				// OLM grants clusterPermissions cluster-wide in every mode, so a namespace-scoped
				// install would not narrow what the controller may do: only AllNamespaces is offered.
				// Namespaced mode is the kustomize overlay or the chart's watchNamespaces.
				{Type: v1alpha1.InstallModeTypeOwnNamespace, Supported: false},
				{Type: v1alpha1.InstallModeTypeSingleNamespace, Supported: false},
				{Type: v1alpha1.InstallModeTypeMultiNamespace, Supported: false},
				{Type: v1alpha1.InstallModeTypeAllNamespaces, Supported: true},
			},
			InstallStrategy:           v1alpha1.NamedInstallStrategy{StrategyName: v1alpha1.InstallStrategyNameDeployment, StrategySpec: strategy},
			CustomResourceDefinitions: v1alpha1.CustomResourceDefinitions{Owned: owned},
			RelatedImages:             []v1alpha1.RelatedImage{{Name: "controller", Image: image}},
		},
	}
}

// describe is the CSV's description of an owned CRD, with descriptors for the fields a user looks at.
func describe(crd *apiextensionsv1.CustomResourceDefinition) v1alpha1.CRDDescription {
	var served string
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			served = v.Name
		}
	}
	d := v1alpha1.CRDDescription{Name: crd.Name, Version: served, Kind: crd.Spec.Names.Kind, DisplayName: crd.Spec.Names.Kind}
	conditions := v1alpha1.StatusDescriptor{Path: "conditions", DisplayName: "Conditions", XDescriptors: []string{"urn:alm:descriptor:io.kubernetes.conditions"}}
	secret := []string{"urn:alm:descriptor:io.kubernetes:Secret"}
	switch crd.Spec.Names.Kind {
	case "DNSPolicy":
		d.Description = "Publishes a Gateway's listener hostnames into a DNS zone, simply or as a geo + weighted tree."
		d.Resources = []v1alpha1.APIResourceReference{{Name: "dnsrecords", Kind: "DNSRecord", Version: "v1alpha1"}}
		d.SpecDescriptors = []v1alpha1.SpecDescriptor{
			{Path: "targetRef", DisplayName: "Target Gateway", Description: "The Gateway (and optionally one listener) to publish."},
			{Path: "providerRefs[0].name", DisplayName: "Provider Secret", Description: "The provider Secret in the policy's namespace.", XDescriptors: secret},
			{Path: "loadBalancing", DisplayName: "Load balancing", Description: "Weight, geo and default geo; absent: simple records."},
		}
		d.StatusDescriptors = []v1alpha1.StatusDescriptor{conditions, {Path: "totalRecords", DisplayName: "Records"}}
	case "DNSRecord":
		d.Description = "A set of endpoints under one root host, published into the zone its provider Secret reaches."
		d.Resources = []v1alpha1.APIResourceReference{{Name: "", Kind: "Secret", Version: "v1"}}
		d.SpecDescriptors = []v1alpha1.SpecDescriptor{
			{Path: "rootHost", DisplayName: "Root host", Description: "Every endpoint name is under this host."},
			{Path: "providerRef.name", DisplayName: "Provider Secret", Description: "The provider Secret in the record's namespace.", XDescriptors: secret},
		}
		d.StatusDescriptors = []v1alpha1.StatusDescriptor{conditions,
			{Path: "zoneDomainName", DisplayName: "Zone"}, {Path: "ownerID", DisplayName: "Owner ID"}}
	case "DNSHealthCheckProbe":
		d.Description = "A health check of one published address of a DNSRecord."
		d.SpecDescriptors = []v1alpha1.SpecDescriptor{
			{Path: "address", DisplayName: "Address", Description: "What is dialled."},
			{Path: "hostname", DisplayName: "Host", Description: "Host header and SNI."},
		}
		d.StatusDescriptors = []v1alpha1.StatusDescriptor{
			{Path: "healthy", DisplayName: "Healthy"}, {Path: "consecutiveFailures", DisplayName: "Consecutive failures"}}
	}
	return d
}

// almExamples is the alm-examples annotation: the samples as a JSON array.
func almExamples(paths []string) (string, error) {
	var examples []map[string]any
	for _, p := range paths {
		objs, err := objects(p)
		if err != nil {
			return "", err
		}
		for _, o := range objs {
			examples = append(examples, o.Object)
		}
	}
	b, err := json.MarshalIndent(examples, "", "  ")
	return string(b), err
}

func writeObject(path string, obj any) error {
	b, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// Validate loads the bundle in dir and runs operator-framework/api's default bundle validators and
// the OperatorHub validators (with the standard capabilities and categories) against Kubernetes 1.37;
// any error or warning fails.
func Validate(dir string) error {
	b, err := manifests.GetBundleFromDir(dir)
	if err != nil {
		return fmt.Errorf("loading %s: %w", dir, err)
	}
	validators := validation.DefaultBundleValidators.WithValidators(
		validation.OperatorHubV2Validator,
		validation.StandardCapabilitiesValidator,
		validation.StandardCategoriesValidator,
		validation.ObjectValidator,
		validation.GoodPracticesValidator,
	)
	results := validators.Validate(b, map[string]string{"k8s-version": "1.37"})
	var problems []string
	for _, r := range results {
		for _, e := range r.Errors {
			problems = append(problems, "error: "+e.Error())
		}
		for _, w := range r.Warnings {
			problems = append(problems, "warning: "+w.Error())
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s does not validate:\n  %s", dir, strings.Join(problems, "\n  "))
	}
	return nil
}
