package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayapiv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// DNSPolicySpec says which Gateway's hostnames to publish, where, and how to spread traffic.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.delegate) || has(self.delegate)",message="Delegate can't be unset if it was previously set",fieldPath=".delegate"
// +kubebuilder:validation:XValidation:rule="has(oldSelf.delegate) || !has(self.delegate)",message="Delegate can't be set if it was previously unset",fieldPath=".delegate"
// +kubebuilder:validation:XValidation:rule="!(has(self.providerRefs) && size(self.providerRefs) > 0 && has(self.delegate) && self.delegate == true)",message="delegate=true and providerRefs are mutually exclusive",fieldPath=".providerRefs"
type DNSPolicySpec struct {
	// targetRef is the Gateway (or, with sectionName, one listener of it) in this namespace.
	// +kubebuilder:validation:XValidation:rule="self.group == 'gateway.networking.k8s.io'",message="Invalid targetRef.group. The only supported value is 'gateway.networking.k8s.io'"
	// +kubebuilder:validation:XValidation:rule="self.kind == 'Gateway'",message="Invalid targetRef.kind. The only supported values are 'Gateway'"
	TargetRef gatewayapiv1alpha2.LocalPolicyTargetReferenceWithSectionName `json:"targetRef"`

	// healthCheck probes every published address; failing ones are withdrawn.
	// +optional
	HealthCheck *v1alpha1.HealthCheckSpec `json:"healthCheck,omitempty"`

	// loadBalancing publishes a geo + weighted tree instead of plain records. Absent: simple strategy.
	// +optional
	LoadBalancing *LoadBalancingSpec `json:"loadBalancing,omitempty"`

	// providerRefs names the provider Secret in this namespace (at most one). Empty: the namespace's
	// Secret labelled kuadrant.io/default-provider=true.
	// +kubebuilder:validation:MaxItems=1
	// +optional
	ProviderRefs []v1alpha1.ProviderRef `json:"providerRefs,omitempty"`

	// excludeAddresses are hostnames, IP addresses or CIDRs of the Gateway that must not be published.
	// +optional
	ExcludeAddresses ExcludeAddresses `json:"excludeAddresses,omitempty"`

	// delegate hands the records to a primary cluster instead of a provider.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="delegate is immutable"
	// +optional
	Delegate bool `json:"delegate,omitempty"`
}

// ExcludeAddresses are addresses not to publish: hostnames, IPs or CIDRs. An entry with a "/" must be
// a valid CIDR, so a typo is rejected here rather than silently excluding nothing.
// +kubebuilder:validation:MaxItems=20
// +kubebuilder:validation:items:MaxLength=253
// +kubebuilder:validation:items:MinLength=1
// +kubebuilder:validation:XValidation:rule="self.all(a, !a.contains('/') || isCIDR(a))",message="excludeAddresses entries containing '/' must be valid CIDRs"
type ExcludeAddresses []string

// LoadBalancingSpec places this cluster's addresses in the geo + weighted tree.
type LoadBalancingSpec struct {
	// weight of this cluster's addresses among others of the same geo. Defaults to 120.
	// +kubebuilder:default=120
	// +kubebuilder:validation:Minimum=0
	// +optional
	Weight int `json:"weight"`

	// geo code of this cluster: an ISO 3166 alpha-2 country, "GEO-" and a continent code, or a
	// provider-specific region. Which are accepted depends on the DNS provider.
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=64
	Geo string `json:"geo"`

	// defaultGeo makes this geo the catch-all for clients whose location matches no geo.
	// +optional
	DefaultGeo bool `json:"defaultGeo"`
}

// DNSPolicyStatus is what the controller observed.
type DNSPolicyStatus struct {
	// conditions: Accepted, Enforced and, with a health check, SubResourcesHealthy.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// +optional
	HealthCheck *v1alpha1.HealthCheckStatus `json:"healthCheck,omitempty"`

	// recordConditions maps a record's rootHost to its failing conditions.
	// +optional
	RecordConditions map[string][]metav1.Condition `json:"recordConditions,omitempty"`

	// totalRecords is how many DNSRecords this policy manages.
	// +optional
	TotalRecords int32 `json:"totalRecords,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels="gateway.networking.k8s.io/policy=direct"
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`,description="DNSPolicy Accepted",priority=2
// +kubebuilder:printcolumn:name="Enforced",type=string,JSONPath=`.status.conditions[?(@.type=="Enforced")].status`,description="DNSPolicy Enforced",priority=2
// +kubebuilder:printcolumn:name="SubResourcesHealthy",type=string,JSONPath=`.status.conditions[?(@.type=="SubResourcesHealthy")].status`,description="DNSPolicy SubResourcesHealthy",priority=2
// +kubebuilder:printcolumn:name="TargetRefKind",type="string",JSONPath=".spec.targetRef.kind",description="Type of the referenced Gateway API resource",priority=2
// +kubebuilder:printcolumn:name="TargetRefName",type="string",JSONPath=".spec.targetRef.name",description="Name of the referenced Gateway API resource",priority=2
// +kubebuilder:printcolumn:name="TargetSection",type="string",JSONPath=".spec.targetRef.sectionName",description="Name of the Listener section within the Gateway to which the policy applies ",priority=2
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// DNSPolicy publishes the listener hostnames of a Gateway into a DNS zone.
type DNSPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DNSPolicySpec   `json:"spec,omitempty"`
	Status DNSPolicyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// DNSPolicyList is a list of DNSPolicies.
type DNSPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DNSPolicy `json:"items"`
}

func init() {
	register(&DNSPolicy{}, &DNSPolicyList{})
}
