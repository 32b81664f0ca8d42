package v1alpha1

// MaxTargets bounds the targets of one endpoint, for every DNSRecord: 1,000 is Route 53's limit of
// values per record set (and more than any gateway has addresses). The record controller validates
// records against it; the embedded DNS server holds the endpoints of authoritative records, which
// the record controller does not validate, to it too.
const MaxTargets = 1000
