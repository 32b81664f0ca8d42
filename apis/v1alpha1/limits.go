package v1alpha1

// MaxTargets bounds the targets of one endpoint, for every DNSRecord: 1,000 is Route 53's limit of
// values per record set (and more than any gateway has addresses). The record controller validates
// records against it; the embedded DNS server holds the endpoints of authoritative records, which
// the record controller does not validate, to it too.
const MaxTargets = 1000

// MaxWeight bounds the weight of an endpoint (its providerSpecific "weight"): the largest weight
// every provider accepts. Route 53 takes 0 to 255, Azure Traffic Manager 1 to 1000, Cloud DNS any
// non-negative number (docs/troubleshooting.md, ValidationError, cites the providers' API rules).
// Kuadrant's DNSPolicy takes any integer, so the CRDs keep accepting larger values for wire
// compatibility; the record controller refuses them, and the embedded DNS server does not serve them.
const MaxWeight = 255

// TTL bounds. A TTL above the cap lets one record be cached long past a change or withdrawal; the
// operator may raise the cap (--max-ttl) up to the largest TTL DNS carries.
const (
	// DefaultMaxTTL is the cap unless the operator raises it: one day.
	DefaultMaxTTL = 86400
	// MaxTTL is the largest TTL DNS carries (RFC 2181 section 8: 2^31 - 1 seconds).
	MaxTTL = 2147483647
)
