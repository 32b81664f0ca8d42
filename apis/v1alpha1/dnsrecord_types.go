package v1alpha1

import (
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels and finalizer of DNSRecords.
const (
	// RecordFinalizer holds a record until this owner's contributions have left the zone.
	RecordFinalizer = "kuadrant.io/dns-record"
	// ProviderNameLabel names the backend a record publishes to (aws, google, azure, coredns, ...).
	ProviderNameLabel = "kuadrant.io/dns-provider-name"
	// AuthoritativeRecordLabel marks a record that holds a whole zone for the embedded DNS server.
	AuthoritativeRecordLabel = "kuadrant.io/authoritative-record"
	// AuthoritativeRecordHashLabel holds hash8 of the root host of an authoritative record.
	AuthoritativeRecordHashLabel = "kuadrant.io/authoritative-record-hash"
	// CoreDNSZoneNameLabel names the zone an authoritative record belongs to.
	CoreDNSZoneNameLabel = "kuadrant.io/coredns-zone-name"
	// WildcardPrefix starts a wildcard host.
	WildcardPrefix = "*."
)

// DNSRecordSpec is what one owner wants published under one root host. Ownership TXTs of the root
// host itself (kuadrant-<hash>-<type>-<rootHost>) are accepted too: records that accumulate other
// owners' endpoints (authoritative and zone records) hold them, as Kuadrant's do.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.ownerID) || has(self.ownerID)",message="OwnerID can't be unset if it was previously set",fieldPath=".ownerID"
// +kubebuilder:validation:XValidation:rule="has(oldSelf.ownerID) || !has(self.ownerID)",message="OwnerID can't be set if it was previously unset",fieldPath=".ownerID"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.delegate) || has(self.delegate)",message="Delegate can't be unset if it was previously set",fieldPath=".delegate"
// +kubebuilder:validation:XValidation:rule="has(oldSelf.delegate) || !has(self.delegate)",message="Delegate can't be set if it was previously unset",fieldPath=".delegate"
// +kubebuilder:validation:XValidation:rule="!(has(self.providerRef) && has(self.delegate) && self.delegate == true)",message="delegate=true and providerRef are mutually exclusive",fieldPath=".providerRef"
// +kubebuilder:validation:XValidation:rule="!has(self.endpoints) || self.endpoints.all(ep, ep.dnsName == self.rootHost || ep.dnsName.endsWith('.' + (self.rootHost.startsWith('*.') ? self.rootHost.substring(2) : self.rootHost)) || (ep.recordType == 'TXT' && ep.dnsName.startsWith('kuadrant-') && ep.dnsName.endsWith('-' + (self.rootHost.startsWith('*.') ? 'wildcard.' + self.rootHost.substring(2) : self.rootHost))))",message="every endpoint dnsName must be the rootHost or a name under it (or an ownership TXT of one)",fieldPath=".endpoints"
type DNSRecordSpec struct {
	// ownerID identifies the owner of these endpoints in the zone. When unset, the status carries a
	// hash of this record's UID instead.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="OwnerID is immutable"
	// +kubebuilder:validation:MinLength=6
	// +kubebuilder:validation:MaxLength=36
	// +optional
	OwnerID string `json:"ownerID,omitempty"`

	// rootHost is the single root of every endpoint of this record; it may start with "*.".
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="RootHost is immutable"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^(\*\.)?([A-Za-z0-9_]([-A-Za-z0-9_]*[A-Za-z0-9_])?\.)+[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?$`
	RootHost string `json:"rootHost"`

	// providerRef names the provider Secret in this namespace. When unset, the namespace's Secret
	// labelled kuadrant.io/default-provider=true is used.
	// +optional
	ProviderRef *ProviderRef `json:"providerRef,omitempty"`

	// endpoints are the record sets to publish.
	// +kubebuilder:validation:MaxItems=10000
	// +optional
	Endpoints []*Endpoint `json:"endpoints,omitempty"`

	// healthCheck probes every leaf address; unhealthy ones are withdrawn.
	// +optional
	HealthCheck *HealthCheckSpec `json:"healthCheck,omitempty"`

	// delegate hands the record to a primary cluster instead of a provider.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="delegate is immutable"
	// +optional
	Delegate bool `json:"delegate,omitempty"`
}

// DNSRecordStatus is what the controller observed and published.
type DNSRecordStatus struct {
	// conditions: Ready and, with a health check, Healthy.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// queuedAt is when the record was last reconciled.
	// +optional
	QueuedAt metav1.Time `json:"queuedAt,omitempty"`

	// validFor is how long the published data is considered valid before the next check, as of the
	// status's last write: a quiet re-check, which only lengthens it, writes nothing.
	// +optional
	ValidFor string `json:"validFor,omitempty"`

	// writeCounter counts consecutive writes on the same generation; reset when nothing is left to
	// write, as of the status's last write.
	// +optional
	WriteCounter int64 `json:"writeCounter,omitempty"`

	// endpoints are what this record last published to the zone.
	// +optional
	Endpoints []*Endpoint `json:"endpoints,omitempty"`

	// relatedEndpoints are all endpoints under rootHost in the zone, from every owner.
	// +optional
	ZoneEndpoints []*Endpoint `json:"relatedEndpoints,omitempty"`

	// +optional
	HealthCheck *HealthCheckStatus `json:"healthCheck,omitempty"`

	// ownerID is spec.ownerID, else hash8 of this record's UID.
	// +optional
	OwnerID string `json:"ownerID,omitempty"`

	// providerRef is the provider Secret used to publish.
	// +optional
	ProviderRef ProviderRef `json:"providerRef,omitempty"`

	// domainOwners are every owner seen on rootHost in the zone.
	// +optional
	DomainOwners []string `json:"domainOwners,omitempty"`

	// zoneID is the provider's ID of the zone; sticky once chosen.
	// +optional
	ZoneID string `json:"zoneID,omitempty"`

	// zoneDomainName is the domain name of that zone; sticky once chosen.
	// +optional
	ZoneDomainName string `json:"zoneDomainName,omitempty"`

	// remoteRecordStatuses are what the primary clusters did with a delegating record (delegate:
	// true): each entry is a DNSRecordStatus, keyed by the primary's cluster ID (the UID of its
	// kube-system namespace). Primaries write them. A deleted record keeps its finalizer while an
	// entry's Ready condition has a reason other than ProviderEndpointsRemoved.
	// +optional
	RemoteRecordStatuses map[string]apiextensionsv1.JSON `json:"remoteRecordStatuses,omitempty"`
	// group is the failover group of the controller that reconciles the record (its --group), if
	// set. A record of a group its zone does not list as active publishes nothing.
	// +optional
	Group string `json:"group,omitempty"`

	// activeGroups are the active groups last read from the zone's kuadrant-active-groups TXT,
	// joined by ","; read only for a record in a group.
	// +optional
	ActiveGroups string `json:"activeGroups,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description="DNSRecord ready."
// +kubebuilder:printcolumn:name="Healthy",type="string",JSONPath=".status.conditions[?(@.type==\"Healthy\")].status",description="DNSRecord healthy.",priority=2
// +kubebuilder:printcolumn:name="Root Host",type="string",JSONPath=".spec.rootHost",description="DNSRecord root host.",priority=2
// +kubebuilder:printcolumn:name="Owner ID",type="string",JSONPath=".status.ownerID",description="DNSRecord owner id.",priority=2
// +kubebuilder:printcolumn:name="Zone Domain",type="string",JSONPath=".status.zoneDomainName",description="DNSRecord zone domain name.",priority=2
// +kubebuilder:printcolumn:name="Zone ID",type="string",JSONPath=".status.zoneID",description="DNSRecord zone id.",priority=2

// DNSRecord is one owner's endpoints under one root host, published into a zone shared with other owners.
type DNSRecord struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DNSRecordSpec   `json:"spec,omitempty"`
	Status DNSRecordStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// DNSRecordList is a list of DNSRecords.
type DNSRecordList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DNSRecord `json:"items"`
}

// RootHost returns spec.rootHost without a leading "*.".
func (r *DNSRecord) RootHost() string {
	return strings.TrimPrefix(r.Spec.RootHost, WildcardPrefix)
}

// Metadata is a copy of the record's metadata alone: a write of it (a metadata patch, or a status
// patch with its body given apart) is sent the record's metadata in response, not the whole record,
// whose spec can hold thousands of targets.
func (r *DNSRecord) Metadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{ObjectMeta: *r.ObjectMeta.DeepCopy()}
	m.SetGroupVersionKind(GroupVersion.WithKind("DNSRecord"))
	return m
}

func init() {
	register(&DNSRecord{}, &DNSRecordList{})
}
