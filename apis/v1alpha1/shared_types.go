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
