package dnsrecord

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// Only a primary's report on a deleted delegating record starts a pass: not this controller's own
// status writes, not a live record's reports, not a record that does not delegate.
func TestRemoteStatusesChanged(t *testing.T) {
	now := metav1.Now()
	record := func(delegate, deleted bool, entry string) *v1alpha1.DNSRecord {
		rec := &v1alpha1.DNSRecord{Spec: v1alpha1.DNSRecordSpec{Delegate: delegate}}
		if deleted {
			rec.DeletionTimestamp = &now
		}
		if entry != "" {
			rec.Status.RemoteRecordStatuses = map[string]apiextensionsv1.JSON{"primary": {Raw: []byte(entry)}}
		}
		return rec
	}
	deleting := `{"conditions":[{"type":"Ready","status":"False","reason":"ProviderEndpointsDeletion"}]}`
	removed := `{"conditions":[{"type":"Ready","status":"False","reason":"ProviderEndpointsRemoved"}]}`
	ownWrite := record(true, true, deleting)
	ownWrite.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionTypeReady, Reason: v1alpha1.ReasonProviderEndpointsDeletion}}
	for _, tc := range []struct {
		name     string
		old, new *v1alpha1.DNSRecord
		want     bool
	}{
		{"primary reports removal", record(true, true, deleting), record(true, true, removed), true},
		{"first entry", record(true, true, ""), record(true, true, deleting), true},
		{"own status write", record(true, true, deleting), ownWrite, false},
		{"live record", record(true, false, deleting), record(true, false, removed), false},
		{"not delegating", record(false, true, deleting), record(false, true, removed), false},
	} {
		if got := remoteStatusesChanged.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if remoteStatusesChanged.Create(event.CreateEvent{Object: record(true, false, "")}) {
		t.Error("a create passes; GenerationChangedPredicate lets it through already")
	}
}

func TestDelegationRoleSet(t *testing.T) {
	var d DelegationRole
	for _, v := range []string{"primary", "secondary"} {
		if err := d.Set(v); err != nil || d.String() != v {
			t.Errorf("Set(%q): %v, role %q", v, err, d)
		}
	}
	for _, v := range []string{"", "PRIMARY", "tertiary"} {
		if err := d.Set(v); err == nil {
			t.Errorf("Set(%q) accepted", v)
		}
	}
	if got, want := waitingMessage([]string{"a", "b"}), "DNS records are being deleted from provider: waiting for primary clusters a, b to report them removed in status.remoteRecordStatuses"; got != want {
		t.Errorf("waitingMessage = %q", got)
	}
}
