// Package v1alpha1 holds the record-side API: DNSRecord, DNSHealthCheckProbe and the Endpoint type.
// It is wire-compatible with Kuadrant's dns-operator (kuadrant.io/v1alpha1), so manifests, tooling and
// zones written for Kuadrant work unchanged.
// +kubebuilder:object:generate=true
// +groupName=kuadrant.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the record-side API.
	GroupVersion = schema.GroupVersion{Group: "kuadrant.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a runtime.Scheme. It is apimachinery's
	// own builder, so the API types (and the pure packages that use them) do not depend on
	// controller-runtime.
	SchemeBuilder = runtime.NewSchemeBuilder(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, objects...)
		metav1.AddToGroupVersion(s, GroupVersion)
		return nil
	})

	// AddToScheme adds the types of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme

	// objects are the types of this package, added by register from each type's file.
	objects []runtime.Object
)

func register(objs ...runtime.Object) { objects = append(objects, objs...) }
