package app

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// The record cache keeps who wrote a record and when (the DNS server's serial reads the times) and
// every annotation but kubectl's copy of the manifest; the field lists of managedFields go.
func TestStripRecordMetadata(t *testing.T) {
	written := metav1.NewTime(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	fields := metav1.NewFieldsV1(`{"f:status":{"f:endpoints":{},"f:zoneEndpoints":{}}}`)
	annotations := map[string]string{lastApplied: `{"spec":{}}`, "team": "dns"}
	rec := &v1alpha1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Name: "r", Annotations: annotations, ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, Time: &written, FieldsType: "FieldsV1", FieldsV1: fields},
		{Manager: "dnspolicy-controller", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: &written, FieldsType: "FieldsV1", FieldsV1: fields},
	}}}
	out, err := StripRecordMetadata(rec)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*v1alpha1.DNSRecord)
	if _, ok := got.Annotations[lastApplied]; ok || got.Annotations["team"] != "dns" {
		t.Errorf("annotations %v, want team kept and %s gone", got.Annotations, lastApplied)
	}
	if _, ok := annotations[lastApplied]; !ok {
		t.Error("the transform changed the map it was given, which the informer may share")
	}
	if len(got.ManagedFields) != 2 {
		t.Fatalf("%d managedFields entries, want 2", len(got.ManagedFields))
	}
	for i, f := range got.ManagedFields {
		if f.FieldsV1 != nil || f.FieldsType != "" {
			t.Errorf("entry %d keeps its fields: %+v", i, f)
		}
		if f.Time == nil || !f.Time.Equal(&written) || f.Manager == "" || f.Operation == "" {
			t.Errorf("entry %d lost who wrote it when: %+v", i, f)
		}
	}
	if got.ManagedFields[1].Subresource != "status" {
		t.Errorf("the status entry lost its subresource: %+v", got.ManagedFields[1])
	}
	if other, err := StripRecordMetadata(&v1alpha1.DNSHealthCheckProbe{}); err != nil || other == nil {
		t.Errorf("another kind: %v, %v; want it back unchanged", other, err)
	}
}
