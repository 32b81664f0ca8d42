package v1alpha1

// Condition types of DNSRecord.
const (
	ConditionTypeReady   = "Ready"
	ConditionTypeHealthy = "Healthy"
)

// Reasons of the DNSRecord Ready and Healthy conditions. Kuadrant's tooling reads some of them, with the
// messages in docs/troubleshooting.md, so they are part of the wire contract.
const (
	ReasonProviderSuccess    = "ProviderSuccess"
	ReasonProviderError      = "ProviderError"
	ReasonDNSProviderError   = "DNSProviderError"
	ReasonAwaitingValidation = "AwaitingValidation"
	ReasonValidationError    = "ValidationError"
	ReasonUnhealthy          = "Unhealthy"
	ReasonPartiallyHealthy   = "PartiallyHealthy"
	ReasonHealthy            = "Healthy"
)
