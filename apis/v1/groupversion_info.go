// Package v1 holds the policy-side API: DNSPolicy. It is wire-compatible with Kuadrant's DNSPolicy
// (kuadrant.io/v1), so manifests written for Kuadrant apply unchanged.
// +kubebuilder:object:generate=true
// +groupName=kuadrant.io
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the policy-side API.
	GroupVersion = schema.GroupVersion{Group: "kuadrant.io", Version: "v1"}

	// SchemeBuilder registers the types of this package with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
