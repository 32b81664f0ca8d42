package v1alpha1

import (
	"encoding/json"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
)

// Delegation (docs/delegation.md). A delegating record (spec.delegate: true) names no provider: a
// primary cluster reads it through a kubeconfig, publishes its endpoints, and writes what it did
// into status.remoteRecordStatuses under its own cluster ID, in the shape of a DNSRecordStatus.

// OwnerLeaseAnnotation holds, on a delegating record of a secondary of this project, its cluster's
// owner lease (the value of a lease record, package lease), renewed every lease period: a primary
// copies it into the authoritative record, so that the secondary's owners leave it when the lease
// stops changing. A record without it (Kuadrant's secondary) names no lease and never expires.
const OwnerLeaseAnnotation = "dnspolicy.io/owner-lease"

// RemoteRecordStatus decodes the entry of one primary cluster. ok is false when there is no entry
// or it is not a DNSRecordStatus.
func (s *DNSRecordStatus) RemoteRecordStatus(clusterID string) (st DNSRecordStatus, ok bool) {
	raw, found := s.RemoteRecordStatuses[clusterID]
	if !found {
		return DNSRecordStatus{}, false
	}
	if err := json.Unmarshal(raw.Raw, &st); err != nil {
		return DNSRecordStatus{}, false
	}
	return st, true
}

// SetRemoteRecordStatus writes the entry of one primary cluster, as a primary does.
func (s *DNSRecordStatus) SetRemoteRecordStatus(clusterID string, st DNSRecordStatus) error {
	raw, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if s.RemoteRecordStatuses == nil {
		s.RemoteRecordStatuses = map[string]apiextensionsv1.JSON{}
	}
	s.RemoteRecordStatuses[clusterID] = apiextensionsv1.JSON{Raw: raw}
	return nil
}

// EndpointsRemoved reports whether a status says its endpoints are withdrawn, as Kuadrant's
// ProviderEndpointsRemoved decides: its Ready condition is absent or has reason
// ProviderEndpointsRemoved, and so does every remote status it holds.
func EndpointsRemoved(st DNSRecordStatus) bool {
	if c := meta.FindStatusCondition(st.Conditions, ConditionTypeReady); c != nil && c.Reason != ReasonProviderEndpointsRemoved {
		return false
	}
	return len(st.PrimariesHoldingEndpoints()) == 0
}

// PrimariesHoldingEndpoints lists, sorted, the cluster IDs of the primaries whose entry does not
// say the record's endpoints are withdrawn (EndpointsRemoved). A deleted delegating record keeps
// its finalizer until the list is empty. An entry that is not a DNSRecordStatus reports nothing, so
// it holds nothing: Kuadrant counts it the same way (it drops undecodable entries), though Kuadrant
// then drops the other entries too, and this judges each entry on its own.
func (s *DNSRecordStatus) PrimariesHoldingEndpoints() []string {
	var ids []string
	for id := range s.RemoteRecordStatuses {
		if st, ok := s.RemoteRecordStatus(id); ok && !EndpointsRemoved(st) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}
