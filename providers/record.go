package providers

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// RecordBackend is the Records part of a Backend, in place of Zones: a backend that serves a whole
// DNSRecord itself instead of holding record sets in a zone the engine plans. k8gb is one: an
// installed k8gb serves each hostname from a Gslb object and agrees with the other clusters by its
// own protocol, so there is no zone to read, no plan to make and no ownership TXT to write.
//
// For such a backend the record controller skips zone choice, planning and the ownership registry:
// it hands the backend the record and writes what the backend reports into the record's status. The
// backend never calls the engine; the engine learns of this kind of backend only through this
// interface.
type RecordBackend interface {
	// Name is the value of the kuadrant.io/dns-provider-name label of the records it serves (k8gb).
	Name() string
	// EnsureRecord makes the backend serve the record as its spec says, and reports how it stands.
	// An error means it could not (classified as usual: Permanent for input the backend cannot
	// express, Transient otherwise); its message lands in the Ready condition, so it must be stable.
	EnsureRecord(ctx context.Context, record *v1alpha1.DNSRecord) (RecordStatus, error)
	// RemoveRecord withdraws what EnsureRecord made for the record. It returns nil once nothing of
	// it is left, also when there never was anything.
	RemoveRecord(ctx context.Context, record *v1alpha1.DNSRecord) error
}

// RecordStatus is what a RecordBackend reports about one record.
type RecordStatus struct {
	// Ready becomes the record's Ready condition.
	Ready Condition
	// Healthy, when set, becomes the record's Healthy condition; when nil the record has none.
	Healthy *Condition
	// Endpoints are what the backend serves for the record (status.endpoints).
	Endpoints []*v1alpha1.Endpoint
	// RecheckAfter is how soon to ask again, because the backend's own state (k8gb's view of the
	// health of the hostname) changes without the record changing. Zero leaves it to the
	// controller's steady-state schedule.
	RecheckAfter time.Duration
}

// Condition is the status, reason and message of one condition; its type, generation and times are
// the controller's.
type Condition struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}
