package v1alpha1

import (
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func readyStatus(reason string) DNSRecordStatus {
	return DNSRecordStatus{Conditions: []metav1.Condition{{Type: ConditionTypeReady, Status: metav1.ConditionFalse, Reason: reason}}}
}

// TestPrimariesHoldingEndpoints: an entry holds the record's endpoints unless its Ready condition
// is absent or says ProviderEndpointsRemoved, and its own remote entries say so too (Kuadrant's
// ProviderEndpointsRemoved); an undecodable entry holds nothing and does not hide the others.
func TestPrimariesHoldingEndpoints(t *testing.T) {
	nested := readyStatus(ReasonProviderEndpointsRemoved)
	if err := nested.SetRemoteRecordStatus("inner", readyStatus(ReasonProviderSuccess)); err != nil {
		t.Fatal(err)
	}
	entries := map[string]DNSRecordStatus{
		"published": readyStatus(ReasonProviderSuccess),
		"deleting":  readyStatus(ReasonProviderEndpointsDeletion),
		"removed":   readyStatus(ReasonProviderEndpointsRemoved),
		"no-ready":  {},
		"nested":    nested,
	}
	var st DNSRecordStatus
	if got := st.PrimariesHoldingEndpoints(); len(got) != 0 {
		t.Fatalf("no entries: %v hold endpoints", got)
	}
	for id, e := range entries {
		if err := st.SetRemoteRecordStatus(id, e); err != nil {
			t.Fatal(err)
		}
	}
	st.RemoteRecordStatuses["garbage"] = apiextensionsv1.JSON{Raw: []byte(`"not a status"`)}
	want := []string{"deleting", "nested", "published"}
	if got := st.PrimariesHoldingEndpoints(); !slices.Equal(got, want) {
		t.Fatalf("holding: got %v, want %v", got, want)
	}
	if EndpointsRemoved(st) {
		t.Fatal("EndpointsRemoved is true while primaries hold endpoints")
	}
	for _, id := range want {
		if err := st.SetRemoteRecordStatus(id, readyStatus(ReasonProviderEndpointsRemoved)); err != nil {
			t.Fatal(err)
		}
	}
	if got := st.PrimariesHoldingEndpoints(); len(got) != 0 {
		t.Fatalf("all removed: %v still hold endpoints", got)
	}
	if !EndpointsRemoved(st) {
		t.Fatal("EndpointsRemoved is false once every primary removed the endpoints")
	}
	if EndpointsRemoved(readyStatus(ReasonProviderSuccess)) {
		t.Fatal("a status whose own Ready says ProviderSuccess has not removed its endpoints")
	}
	got, ok := st.RemoteRecordStatus("removed")
	if !ok || got.Conditions[0].Reason != ReasonProviderEndpointsRemoved {
		t.Fatalf("RemoteRecordStatus(removed) = %+v, %v", got, ok)
	}
	if _, ok := st.RemoteRecordStatus("garbage"); ok {
		t.Fatal("an undecodable entry decoded")
	}
	if _, ok := st.RemoteRecordStatus("absent"); ok {
		t.Fatal("an absent entry decoded")
	}
}
