package providers

import (
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// HostZones is the Hosts part of a Backend, beside Zones: a backend that does not publish records
// into zones it lists, but gives every root host a zone record of its own: a DNSRecord carrying the
// authoritative-record labels, which DNS servers serve from the API server. coredns is one (DESIGN
// 4b): a record is written, through the endpoint backend, into the authoritative record of its root
// host, and that authoritative record is in turn a record of the coredns backend, reconciled for its
// status like any other. Kuadrant's dns-operator works the same way, and its tools read both sides.
//
// For a record that is not itself an authoritative record the record controller then publishes with
// HostProvider into HostZone(rootHost), and reports the zone as Kuadrant does. For an authoritative
// record it publishes nothing (the record is the zone a server reads): it picks the record's zone
// from Zones as for any record, and asks CheckEndpoints whether the backend can serve it. The
// backend never calls the engine.
type HostZones interface {
	// HostProvider is the provider records publish with: it reads and writes the zone records that
	// HostZone names. Its Records reads a zone record that does not exist yet as empty, and its
	// Apply creates the zone record, and deletes it once the batch leaves it empty.
	HostProvider() Provider
	// HostZone returns the zone of a root host, which need not exist yet. It fails (a Permanent
	// error) when no zone the backend serves holds the host.
	HostZone(rootHost string) (HostZone, error)
	// CheckEndpoints reports whether the backend can serve an authoritative record holding
	// endpoints: a Permanent error naming what it cannot (an unknown geo code, a negative weight).
	// Its message lands in the record's Ready condition, so it must be stable.
	CheckEndpoints(endpoints []*v1alpha1.Endpoint) error
	// AuthoritativeLabels are the labels an authoritative record of zone carries besides the
	// provider label (the zone label DNS servers select it by).
	AuthoritativeLabels(zone Zone) map[string]string
}

// HostZone is the zone of one root host (HostZones).
type HostZone struct {
	// Zone is what the engine plans against and HostProvider writes: its ID names the zone record,
	// its DNSName is the zone served (every name of the root host, and the ownership TXT records
	// beside them, are in it).
	Zone Zone
	// DomainName is the zone's name as the record's status reports it (status.zoneDomainName):
	// Kuadrant's tools read the root host there.
	DomainName string
}
