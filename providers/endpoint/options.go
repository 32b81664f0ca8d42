package endpoint

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// Options are what a kuadrant.io/endpoint Secret configures.
type Options struct {
	// ZoneSelector picks the DNSRecords of the Secret's namespace that are zones.
	ZoneSelector labels.Selector
}

// gvrPattern is the "group/version.resource" form Kuadrant reads ENDPOINT_GVR in; it also accepts
// "_" between group and version, as Kuadrant does.
var gvrPattern = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9\-_.]*)[/_]([a-zA-Z][a-zA-Z0-9\-_]*)\.([a-zA-Z][a-zA-Z0-9\-_.]*)$`)

// dnsRecords is the one resource this backend keeps zones in: the typed client needs the Go type,
// and a DNSRecord's spec.endpoints is the shape Kuadrant's tooling writes.
var dnsRecords = schema.GroupVersionResource{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Resource: "dnsrecords"}

// ParseOptions reads a kuadrant.io/endpoint Secret. Both keys are optional: ENDPOINT_GVR, which may
// only name DNSRecords (its default), and ENDPOINT_ZONE_RECORD_LABEL, a label selector.
func ParseOptions(secret *corev1.Secret) (Options, error) {
	where := fmt.Sprintf("provider secret %s/%s", secret.Namespace, secret.Name)

	if raw := strings.TrimSpace(string(secret.Data[v1alpha1.EndpointGVRKey])); raw != "" {
		m := gvrPattern.FindStringSubmatch(raw)
		if m == nil {
			return Options{}, fmt.Errorf("%s: key %s is not of the form group/version.resource",
				where, v1alpha1.EndpointGVRKey)
		}
		gvr := schema.GroupVersionResource{Group: strings.ToLower(m[1]), Version: m[2], Resource: strings.ToLower(m[3])}
		if gvr != dnsRecords {
			return Options{}, fmt.Errorf("%s: key %s names a resource other than %s, the only one this backend supports",
				where, v1alpha1.EndpointGVRKey, v1alpha1.DefaultEndpointGVR)
		}
	}

	raw := strings.TrimSpace(string(secret.Data[v1alpha1.EndpointZoneRecordLabelKey]))
	if raw == "" {
		raw = v1alpha1.DefaultEndpointZoneRecordLabel
	}
	selector, err := labels.Parse(raw)
	if err != nil {
		return Options{}, fmt.Errorf("%s: key %s is not a label selector", where, v1alpha1.EndpointZoneRecordLabelKey)
	}
	if selector.Empty() {
		// An empty selector would turn every DNSRecord of the namespace into a zone.
		return Options{}, fmt.Errorf("%s: key %s selects every DNSRecord", where, v1alpha1.EndpointZoneRecordLabelKey)
	}
	return Options{ZoneSelector: selector}, nil
}
