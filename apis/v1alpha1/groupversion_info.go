// Package v1alpha1 holds the record-side API: DNSRecord, DNSHealthCheckProbe and the Endpoint type.
// It is wire-compatible with Kuadrant's dns-operator (kuadrant.io/v1alpha1), so manifests, tooling and
// zones written for Kuadrant work unchanged.
// +kubebuilder:object:generate=true
// +groupName=kuadrant.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the record-side API.
	GroupVersion = schema.GroupVersion{Group: "kuadrant.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
