package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Protocol is the protocol a health probe speaks.
// +kubebuilder:validation:Enum=HTTP;HTTPS
type Protocol string

// Health probe protocols.
const (
	ProtocolHTTP  Protocol = "HTTP"
	ProtocolHTTPS Protocol = "HTTPS"
)

// HealthCheckSpec configures probes of every leaf address of a record. Shared by DNSPolicy and DNSRecord.
type HealthCheckSpec struct {
	// port to connect to: 80, 443 or 1024-49151. Defaults to 443.
	// +kubebuilder:validation:XValidation:rule="self in [80, 443] || (self >= 1024 && self <= 49151)",message="Only ports 80, 443, 1024-49151 are allowed"
	// +kubebuilder:default=443
	// +optional
	Port int `json:"port,omitempty"`

	// path appended to the host to reach the health endpoint. Must start with "?" or "/", contain only
	// URL characters and end with an alphanumeric character or "/"; "/healthz" is common.
	// +kubebuilder:validation:Pattern=`^(?:\?|\/)[\w\-.~:\/?#\[\]@!$&'()*+,;=]+(?:[a-zA-Z0-9]|\/){1}$`
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	Path string `json:"path,omitempty"`

	// protocol to use, HTTP or HTTPS. Defaults to HTTPS.
	// +kubebuilder:default=HTTPS
	// +optional
	Protocol Protocol `json:"protocol,omitempty"`

	// interval between probes. Defaults to 5 minutes.
	// +kubebuilder:default="5m"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// additionalHeadersRef names a Secret in the same namespace; each key becomes a request header
	// (for example an authentication token the health endpoint needs). Only an Opaque Secret is
	// read: a Secret of another type fails the probes with HeadersSecretNotAllowed.
	// +optional
	AdditionalHeadersRef *AdditionalHeadersRef `json:"additionalHeadersRef,omitempty"`

	// failureThreshold is how many consecutive failures make an address unhealthy. Defaults to 5.
	// +kubebuilder:validation:XValidation:rule="self > 0",message="Failure threshold must be greater than 0"
	// +kubebuilder:default=5
	// +optional
	FailureThreshold int `json:"failureThreshold,omitempty"`
}

// AdditionalHeadersRef names a Secret whose keys are extra request headers.
type AdditionalHeadersRef struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// HealthCheckStatus reports the probes of a record.
type HealthCheckStatus struct {
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// +optional
	Probes []HealthCheckStatusProbe `json:"probes,omitempty"`
}

// HealthCheckStatusProbe is the state of one probe.
type HealthCheckStatusProbe struct {
	ID        string `json:"id"`
	IPAddress string `json:"ipAddress"`
	Host      string `json:"host"`
	// +optional
	Synced bool `json:"synced,omitempty"`
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
