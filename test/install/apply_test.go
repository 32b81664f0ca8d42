//go:build integration || tenancy

// Package install_test applies what users install (the rendered kustomize overlays and Helm chart
// under golden/, which `make verify` keeps equal to what config/ and charts/ render) to a real
// kube-apiserver, runs the controller with the credentials of the ServiceAccount those manifests
// create, and proves with SubjectAccessReviews what that ServiceAccount may and may not do.
package install_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dnspolicy/dnspolicy-controller/apis"
	"github.com/dnspolicy/dnspolicy-controller/hack/controlplane"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// controllerNamespace is where every render installs the controller.
const controllerNamespace = "dnspolicy-system"

// serviceAccount is the user the controller runs as, as the API server sees it.
const serviceAccount = "system:serviceaccount:" + controllerNamespace + ":dnspolicy-controller"

var serviceAccountGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + controllerNamespace, "system:authenticated"}

// controlPlane is a bare control plane: the Gateway API CRDs only, so our CRDs arrive as the
// renders ship them.
type controlPlane struct {
	cfg *rest.Config
	c   client.Client
}

func startControlPlane(t *testing.T) *controlPlane {
	t.Helper()
	assets, err := controlplane.Assets()
	if err != nil {
		t.Fatal(err)
	}
	gw, err := controlplane.GatewayAPICRDs()
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{
		CRDDirectoryPaths: gw, ErrorIfCRDPathMissing: true, BinaryAssetsDirectory: assets, Scheme: apis.Scheme(),
		// A loaded machine (2 cores shared by several test binaries) can take longer than the
		// default 20 s to bring kube-apiserver up.
		ControlPlaneStartTimeout: 2 * time.Minute,
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping envtest: %v", err)
		}
	})
	c, err := client.New(cfg, client.Options{Scheme: scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return &controlPlane{cfg: cfg, c: c}
}

func scheme() *runtime.Scheme {
	s := apis.Scheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// golden reads the objects of one render under golden/.
func golden(t *testing.T, name string) []*unstructured.Unstructured {
	t.Helper()
	return objectsOf(t, filepath.Join("golden", name))
}

// samples reads the objects of one file of config/samples.
func samples(t *testing.T, name string) []*unstructured.Unstructured {
	t.Helper()
	return objectsOf(t, filepath.Join("..", "..", "config", "samples", name))
}

func objectsOf(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	name := path
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("%s: %v", name, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s holds no object", name)
	}
	return out
}

// namespaces creates namespaces the renders expect to exist (the tenants' namespaces, which an
// install must never own).
func (cp *controlPlane) namespaces(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := cp.c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// apply server-side applies every object of a render, CRDs and Namespaces first (waiting for the
// CRDs to be established), as `kubectl apply --server-side` would. Every object must be accepted.
func (cp *controlPlane) apply(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	rank := func(u *unstructured.Unstructured) int {
		switch u.GetKind() {
		case "CustomResourceDefinition":
			return 0
		case "Namespace":
			return 1
		}
		return 2
	}
	for pass := 0; pass <= 2; pass++ {
		for _, u := range objs {
			if rank(u) != pass {
				continue
			}
			obj := u.DeepCopy()
			// As kubectl apply --server-side does with rendered manifests (unstructured objects).
			if err := cp.c.Patch(ctx, obj, client.Apply, client.FieldOwner("install-test"), client.ForceOwnership); err != nil { //nolint:staticcheck // unstructured objects apply through Patch
				t.Fatalf("applying %s %s/%s: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
			}
			if pass == 0 {
				cp.established(t, u.GetName())
			}
		}
	}
}

// established waits for a CRD to be served, so objects of its kind can be applied next.
func (cp *controlPlane) established(t *testing.T, name string) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, func() string {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := cp.c.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
			return err.Error()
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return ""
			}
		}
		return "CRD " + name + " not established"
	})
	// The client's REST mapper learns the new kind on its next miss; make sure it can.
	testenv.Eventually(t, 30*time.Second, func() string {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := cp.c.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
			return err.Error()
		}
		gvk := crd.Spec.Group + "/" + crd.Spec.Versions[0].Name + ", Kind=" + crd.Spec.Names.Kind
		if _, err := cp.c.RESTMapper().RESTMapping(schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}, crd.Spec.Versions[0].Name); err != nil {
			if meta.IsNoMatchError(err) {
				return "no REST mapping yet for " + gvk
			}
			return err.Error()
		}
		return ""
	})
}

// prometheusOperatorCRDs stand in for the Prometheus Operator's ServiceMonitor and PrometheusRule
// CRDs (not installed here): the group, version and kinds ours use, with an open schema. They prove
// the objects reach the API server under the kinds the Prometheus Operator serves; their fields are
// checked by the golden files, and the rules by test/observability (promtool).
func prometheusOperatorCRDs() []*unstructured.Unstructured {
	return []*unstructured.Unstructured{
		openCRD("monitoring.coreos.com", "ServiceMonitor", "servicemonitors"),
		openCRD("monitoring.coreos.com", "PrometheusRule", "prometheusrules"),
	}
}

// openCRD is a namespaced v1 CRD of kind whose objects may hold any fields.
func openCRD(group, kind, plural string) *unstructured.Unstructured {
	crd := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptrTo(true),
				}},
			}},
		},
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		panic(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func ptrTo[T any](v T) *T { return &v }

// find returns the object of a render with that kind and name.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	t.Fatalf("no %s %s in the render", kind, name)
	return nil
}
