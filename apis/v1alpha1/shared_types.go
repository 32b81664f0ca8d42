package v1alpha1

import corev1 "k8s.io/api/core/v1"

// Provider Secret types and their keys. The types and keys are Kuadrant's, so existing Secrets work.
const (
	// SecretTypeAWS selects Route53. Keys: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, optional AWS_REGION.
	SecretTypeAWS         corev1.SecretType = "kuadrant.io/aws"
	AWSAccessKeyIDKey                       = "AWS_ACCESS_KEY_ID"
	AWSSecretAccessKeyKey                   = "AWS_SECRET_ACCESS_KEY"
	AWSRegionKey                            = "AWS_REGION"

	// SecretTypeGCP selects Google Cloud DNS. Keys: GOOGLE (service-account JSON), PROJECT_ID.
	SecretTypeGCP      corev1.SecretType = "kuadrant.io/gcp"
	GoogleJSONKey                        = "GOOGLE"
	GoogleProjectIDKey                   = "PROJECT_ID"

	// SecretTypeAzure selects Azure DNS (+ Traffic Manager). Key: azure.json.
	SecretTypeAzure corev1.SecretType = "kuadrant.io/azure"
	AzureJSONKey                      = "azure.json"

	// SecretTypeCoreDNS publishes through authoritative DNSRecords that our embedded server (or
	// Kuadrant's CoreDNS plugin) serves. Keys: ZONES (comma list), optional NAMESERVERS.
	SecretTypeCoreDNS     corev1.SecretType = "kuadrant.io/coredns"
	CoreDNSZonesKey                         = "ZONES"
	CoreDNSNameserversKey                   = "NAMESERVERS"

	// SecretTypeInMemory keeps zones in the controller's memory, for tests and dry runs.
	// Key: optional INMEM_INIT_ZONES (comma list).
	SecretTypeInMemory corev1.SecretType = "kuadrant.io/inmemory"
	InMemInitZonesKey                    = "INMEM_INIT_ZONES"

	// SecretTypeEndpoint holds a zone in the spec.endpoints of a labelled DNSRecord.
	// Keys: optional ENDPOINT_GVR, optional ENDPOINT_ZONE_RECORD_LABEL.
	SecretTypeEndpoint             corev1.SecretType = "kuadrant.io/endpoint"
	EndpointGVRKey                                   = "ENDPOINT_GVR"
	EndpointZoneRecordLabelKey                       = "ENDPOINT_ZONE_RECORD_LABEL"
	DefaultEndpointGVR                               = "kuadrant.io/v1alpha1.dnsrecords"
	DefaultEndpointZoneRecordLabel                   = "kuadrant.io/zone-record=true"

	// SecretTypeK8gb hands hostnames to an installed k8gb. Keys: K8GB_GEO_TAG, optional K8GB_STRATEGY,
	// K8GB_PRIMARY_GEO_TAG, K8GB_WEIGHTS (defined in providers/k8gb) and K8GB_NAMESPACE.
	SecretTypeK8gb   corev1.SecretType = "kuadrant.io/k8gb"
	K8gbNamespaceKey                   = "K8GB_NAMESPACE"

	// SecretTypeExternalDNSWebhook talks to a provider of external-dns's webhook protocol. Keys:
	// WEBHOOK_PROVIDER_URL, optional ZONES (comma list), WEBHOOK_PROVIDER_TIMEOUT and
	// WEBHOOK_PROVIDER_BATCH_SIZE.
	SecretTypeExternalDNSWebhook corev1.SecretType = "kuadrant.io/external-dns-webhook"
	WebhookProviderURLKey                          = "WEBHOOK_PROVIDER_URL"
	WebhookZonesKey                                = "ZONES"
	WebhookProviderTimeoutKey                      = "WEBHOOK_PROVIDER_TIMEOUT"
	WebhookProviderBatchSizeKey                    = "WEBHOOK_PROVIDER_BATCH_SIZE"
	// SecretTypeRFC2136 writes to an authoritative server (BIND, Knot, PowerDNS) by RFC 2136 dynamic
	// updates signed with TSIG. Keys are external-dns's --rfc2136-* flags in capitals: RFC2136_HOST,
	// RFC2136_ZONE (comma list), RFC2136_TSIG_KEYNAME, RFC2136_TSIG_SECRET, optional RFC2136_PORT,
	// RFC2136_TSIG_SECRET_ALG, RFC2136_TRANSPORT, RFC2136_TLS_CA, RFC2136_BATCH_CHANGE_SIZE,
	// RFC2136_TSIG_AXFR (see providers/rfc2136).
	SecretTypeRFC2136         corev1.SecretType = "kuadrant.io/rfc2136"
	RFC2136HostKey                              = "RFC2136_HOST"
	RFC2136PortKey                              = "RFC2136_PORT"
	RFC2136ZoneKey                              = "RFC2136_ZONE"
	RFC2136TSIGKeyNameKey                       = "RFC2136_TSIG_KEYNAME"
	RFC2136TSIGSecretKey                        = "RFC2136_TSIG_SECRET"
	RFC2136TSIGSecretAlgKey                     = "RFC2136_TSIG_SECRET_ALG"
	RFC2136TransportKey                         = "RFC2136_TRANSPORT"
	RFC2136TLSCAKey                             = "RFC2136_TLS_CA"
	RFC2136BatchChangeSizeKey                   = "RFC2136_BATCH_CHANGE_SIZE"
	RFC2136TSIGAXFRKey                          = "RFC2136_TSIG_AXFR"

	// EndpointOverrideKey points a cloud backend at another API endpoint (an emulator, a private cloud).
	EndpointOverrideKey = "ENDPOINT_URL"

	// DefaultProviderLabel marks the one Secret of a namespace used when a policy or record names none.
	DefaultProviderLabel = "kuadrant.io/default-provider"
)

// ProviderRef names a provider Secret in the same namespace.
type ProviderRef struct {
	// name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}
