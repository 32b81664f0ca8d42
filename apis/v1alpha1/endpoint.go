package v1alpha1

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Endpoint is one DNS record set: a name, a type, its targets and how providers route to it. Its JSON
// shape is external-dns's Endpoint, byte for byte, because Kuadrant's DNSRecords embed that type and
// we must read and write the same objects. We keep our own copy: external-dns as a library drags in
// dependencies that do not build here.
type Endpoint struct {
	// dnsName is the hostname of the record set.
	// +kubebuilder:validation:MaxLength=255
	DNSName string `json:"dnsName,omitempty"`
	// targets are the values of the record set (IPs for A/AAAA, a hostname for CNAME, text for TXT).
	Targets Targets `json:"targets,omitempty"`
	// recordType is the DNS type: A, AAAA, CNAME, TXT, NS, ...
	RecordType string `json:"recordType,omitempty"`
	// setIdentifier tells apart record sets that share a name and type (weighted and geo sets).
	SetIdentifier string `json:"setIdentifier,omitempty"`
	// recordTTL is the time to live in seconds.
	RecordTTL TTL `json:"recordTTL,omitempty"`
	// labels hold metadata; providers do not publish them.
	// +optional
	Labels Labels `json:"labels,omitempty"`
	// providerSpecific holds routing properties such as weight and geo-code.
	// +optional
	ProviderSpecific ProviderSpecific `json:"providerSpecific,omitempty"`
}

// Targets are the values of a record set.
type Targets []string

// TTL is a time to live in seconds.
type TTL int64

// Labels hold endpoint metadata.
type Labels map[string]string

// ProviderSpecificProperty is one provider-neutral routing property.
type ProviderSpecificProperty struct {
	Name  string `json:"name,omitempty"`
	Value string `json:"value,omitempty"`
}

// ProviderSpecific is the list of routing properties of an endpoint.
type ProviderSpecific []ProviderSpecificProperty

// Record types the controllers produce or read.
const (
	RecordTypeA     = "A"
	RecordTypeAAAA  = "AAAA"
	RecordTypeCNAME = "CNAME"
	RecordTypeTXT   = "TXT"
	RecordTypeNS    = "NS"
)

// Provider-neutral routing keys in providerSpecific; each backend translates them.
const (
	ProviderSpecificWeight  = "weight"
	ProviderSpecificGeoCode = "geo-code"
)

// WildcardGeo is the geo code of the catch-all ("default") geo set.
const WildcardGeo = "*"

// NewEndpoint returns an endpoint with its targets sorted, so equal record sets compare equal.
func NewEndpoint(dnsName, recordType string, ttl TTL, targets ...string) *Endpoint {
	t := append(Targets(nil), targets...)
	sort.Strings(t)
	return &Endpoint{DNSName: dnsName, RecordType: recordType, RecordTTL: ttl, Targets: t}
}

// WithSetIdentifier sets the set identifier and returns the endpoint.
func (e *Endpoint) WithSetIdentifier(id string) *Endpoint {
	e.SetIdentifier = id
	return e
}

// WithProviderSpecific sets one routing property (replacing an earlier value) and returns the endpoint.
func (e *Endpoint) WithProviderSpecific(name, value string) *Endpoint {
	e.SetProviderSpecific(name, value)
	return e
}

// SetProviderSpecific sets one routing property, replacing an earlier value of the same name.
func (e *Endpoint) SetProviderSpecific(name, value string) {
	for i := range e.ProviderSpecific {
		if e.ProviderSpecific[i].Name == name {
			e.ProviderSpecific[i].Value = value
			return
		}
	}
	e.ProviderSpecific = append(e.ProviderSpecific, ProviderSpecificProperty{Name: name, Value: value})
}

// GetProviderSpecific returns one routing property and whether it is present.
func (e *Endpoint) GetProviderSpecific(name string) (string, bool) {
	for _, p := range e.ProviderSpecific {
		if p.Name == name {
			return p.Value, true
		}
	}
	return "", false
}

// EndpointKey identifies a record set within a zone: its name (case-insensitive), type and set identifier.
type EndpointKey struct {
	DNSName       string
	RecordType    string
	SetIdentifier string
}

// Key returns the identity of the endpoint within a zone.
func (e *Endpoint) Key() EndpointKey {
	return EndpointKey{DNSName: NormalizeName(e.DNSName), RecordType: e.RecordType, SetIdentifier: e.SetIdentifier}
}

// NormalizeName is the form in which DNS names (and name targets) are compared everywhere: lower
// case, without the trailing dot. It does not trim space: a name that differs by space is another
// name (an ownership TXT must be read exactly where it would be written); input a human typed is
// trimmed where it is parsed.
func NormalizeName(name string) string {
	return strings.ToLower(strings.TrimSuffix(name, "."))
}

// String is a short human form used in logs and status messages.
func (e *Endpoint) String() string {
	s := fmt.Sprintf("%s %d IN %s %s", e.DNSName, e.RecordTTL, e.RecordType, strings.Join(e.Targets, ","))
	if e.SetIdentifier != "" {
		s += fmt.Sprintf(" (set %q)", e.SetIdentifier)
	}
	return s
}

// SameTargets reports whether two target lists hold the same values, ignoring order and case.
func (t Targets) SameTargets(o Targets) bool {
	if len(t) != len(o) {
		return false
	}
	// Most comparisons are of a value with itself as read back: equal as written, no copies needed.
	if slices.Equal(t, o) {
		return true
	}
	a, b := t.normalized(), o.normalized()
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (t Targets) normalized() []string {
	n := make([]string, len(t))
	for i, v := range t {
		n[i] = strings.ToLower(strings.TrimSuffix(v, "."))
	}
	sort.Strings(n)
	return n
}

// SortEndpoints orders endpoints by dnsName then setIdentifier (then type), the order Kuadrant
// returns them in, so generated lists are stable.
func SortEndpoints(eps []*Endpoint) {
	sort.SliceStable(eps, func(i, j int) bool {
		a, b := eps[i], eps[j]
		if a.DNSName != b.DNSName {
			return a.DNSName < b.DNSName
		}
		if a.SetIdentifier != b.SetIdentifier {
			return a.SetIdentifier < b.SetIdentifier
		}
		return a.RecordType < b.RecordType
	})
}

// SameValues reports whether two record sets hold the same values: TTL, targets (ignoring order and
// case) and routing properties (ignoring order). Names and set identifiers are compared by Key.
func (e *Endpoint) SameValues(o *Endpoint) bool {
	if e.RecordTTL != o.RecordTTL || !e.Targets.SameTargets(o.Targets) || len(e.ProviderSpecific) != len(o.ProviderSpecific) {
		return false
	}
	if slices.Equal(e.ProviderSpecific, o.ProviderSpecific) {
		return true
	}
	props := map[ProviderSpecificProperty]int{}
	for _, p := range e.ProviderSpecific {
		props[p]++
	}
	for _, p := range o.ProviderSpecific {
		if props[p] == 0 {
			return false
		}
		props[p]--
	}
	return true
}
