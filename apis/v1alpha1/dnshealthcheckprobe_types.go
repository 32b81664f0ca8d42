package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Probe metadata (Kuadrant's, DESIGN 4b).
const (
	// ProbeOwnerLabel is on every probe a record controller made: the record's name, or hash8 of its
	// UID when the name is longer than a label value may be.
	ProbeOwnerLabel = "kuadrant.io/health-probes-owner"
	// ProbeFinalizer holds a probe until the prober has stopped probing it.
	ProbeFinalizer = "kuadrant.io/dns-health-check-probe"
)

// DNSHealthCheckProbeSpec is one probe of one leaf address of a record.
type DNSHealthCheckProbeSpec struct {
	// port to connect to: 80, 443 or 1024-49151.
	// +kubebuilder:validation:XValidation:rule="self in [80, 443] || (self >= 1024 && self <= 49151)",message="Only ports 80, 443, 1024-49151 are allowed"
	// +optional
	Port int `json:"port,omitempty"`
	// hostname is sent as the Host header and TLS SNI.
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Hostname string `json:"hostname,omitempty"`
	// address that is dialled: an IPv4 address or a hostname (lower-case, as DNS names are written).
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Address string `json:"address,omitempty"`
	// path appended to the host to reach the health endpoint.
	// +kubebuilder:validation:Pattern=`^(?:\?|\/)[\w\-.~:\/?#\[\]@!$&'()*+,;=]+(?:[a-zA-Z0-9]|\/){1}$`
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	Path string `json:"path,omitempty"`
	// protocol, HTTP or HTTPS.
	// +optional
	Protocol Protocol `json:"protocol,omitempty"`
	// interval between probes.
	// +optional
	Interval metav1.Duration `json:"interval,omitempty"`
	// additionalHeadersRef names an Opaque Secret of the probe's namespace whose keys are extra
	// request headers (a Secret of another type is refused: HeadersSecretNotAllowed).
	// +optional
	AdditionalHeadersRef *AdditionalHeadersRef `json:"additionalHeadersRef,omitempty"`
	// failureThreshold is how many consecutive failures make the address unhealthy.
	// +kubebuilder:validation:XValidation:rule="self > 0",message="Failure threshold must be greater than 0"
	// +optional
	FailureThreshold int `json:"failureThreshold,omitempty"`
	// allowInsecureCertificate accepts self-signed or otherwise invalid certificates (test setups).
	// +optional
	AllowInsecureCertificate bool `json:"allowInsecureCertificate,omitempty"`
}

// DNSHealthCheckProbeStatus is the last result of the probe.
type DNSHealthCheckProbeStatus struct {
	// +optional
	LastCheckedAt metav1.Time `json:"lastCheckedAt,omitempty"`
	// +optional
	ConsecutiveFailures int `json:"consecutiveFailures,omitempty"`
	// +optional
	Reason string `json:"reason,omitempty"`
	// status is the HTTP status code of the last probe.
	// +optional
	Status int `json:"status,omitempty"`
	// +optional
	Healthy *bool `json:"healthy,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Healthy",type="boolean",JSONPath=".status.healthy",description="DNSHealthCheckProbe healthy."
// +kubebuilder:printcolumn:name="Last Checked",type="date",JSONPath=".status.lastCheckedAt",description="Last checked at."

// DNSHealthCheckProbe probes one address of a record; records withdraw addresses whose probe fails.
type DNSHealthCheckProbe struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DNSHealthCheckProbeSpec   `json:"spec,omitempty"`
	Status DNSHealthCheckProbeStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// DNSHealthCheckProbeList is a list of DNSHealthCheckProbes.
type DNSHealthCheckProbeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DNSHealthCheckProbe `json:"items"`
}

func init() {
	register(&DNSHealthCheckProbe{}, &DNSHealthCheckProbeList{})
}
