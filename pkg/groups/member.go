package groups

import (
	"fmt"
	"strings"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// A cluster whose controller runs with automatic failover announces, in each zone it publishes
// into, that it is a member of its group: an owner-named record (registry.NamedRecordName) beside
// its lease, kept while the lease is renewed.
//
//	dnspolicy-group-<hash8(clusterID)>.<zone>  TXT  "dnspolicy-group=1 group=<g> lease=<lease key> healthy=<true|false>"
//
// Readers take the member as alive while the lease it names is live by their own clock (package
// lease) and it says healthy: its records have an address passing their health checks, or are not
// probed. Kuadrant's controllers ignore the record (a TXT they do not own).

// MemberKind is the kind of the owner-named member record.
const MemberKind = "group"

// MemberTTL is the member record's TTL: only controllers read it, through the provider's API.
const MemberTTL = 60

// Member is what one cluster's member record says.
type Member struct {
	Group string
	// Lease is the key of the lease the member renews (lease.Key of its cluster).
	Lease   string
	Healthy bool
}

// MemberRecordName is the name of holder's member record in zone.
func MemberRecordName(holder, zone string) string {
	return registry.NamedRecordName(MemberKind, holder, zone)
}

// Record is m's member record, written by holder, in zone.
func (m Member) Record(holder, zone string) *v1alpha1.Endpoint {
	value := fmt.Sprintf(`"dnspolicy-group=1 group=%s lease=%s healthy=%t"`, m.Group, m.Lease, m.Healthy)
	return v1alpha1.NewEndpoint(MemberRecordName(holder, zone), v1alpha1.RecordTypeTXT, MemberTTL, value)
}

// ParseMember reads a member record; false when ep is none.
func ParseMember(ep *v1alpha1.Endpoint) (Member, bool) {
	if ep == nil || ep.RecordType != v1alpha1.RecordTypeTXT || len(ep.Targets) != 1 ||
		!strings.HasPrefix(v1alpha1.NormalizeName(ep.DNSName), "dnspolicy-"+MemberKind+"-") {
		return Member{}, false
	}
	fields := strings.Fields(strings.Trim(ep.Targets[0], `"`))
	if len(fields) != 4 || fields[0] != "dnspolicy-group=1" {
		return Member{}, false
	}
	var m Member
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "group":
			m.Group = v
		case "lease":
			m.Lease = v
		case "healthy":
			m.Healthy = v == "true"
		default:
			return Member{}, false
		}
	}
	return m, m.Group != "" && m.Lease != "" && Validate(m.Group) == nil
}
