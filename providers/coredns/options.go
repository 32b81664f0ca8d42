package coredns

import (
	"fmt"
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// Options are what a kuadrant.io/coredns Secret configures.
type Options struct {
	// Zones are the zones records may be published in: lower case, without a trailing dot, each once.
	Zones []string
	// Nameservers are the addresses (host or host:port) of the servers that serve the zones. Kuadrant
	// reads them to reach its CoreDNS instances; the embedded server is reached through the API
	// server instead, so they are only checked here, for a Secret that serves both to stay valid.
	Nameservers []string
}

// ParseOptions reads a kuadrant.io/coredns Secret: ZONES, a comma-separated list of at least one
// zone, and optional NAMESERVERS, a comma-separated list of addresses.
func ParseOptions(secret *corev1.Secret) (Options, error) {
	where := fmt.Sprintf("provider secret %s/%s", secret.Namespace, secret.Name)
	var opts Options
	seen := map[string]bool{}
	for i, item := range strings.Split(string(secret.Data[v1alpha1.CoreDNSZonesKey]), ",") {
		name := v1alpha1.NormalizeName(strings.TrimSpace(item))
		if name == "" {
			continue
		}
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return Options{}, fmt.Errorf("%s: key %s: entry %d is not a valid zone name", where, v1alpha1.CoreDNSZonesKey, i+1)
		}
		// The zone name is the value of the kuadrant.io/coredns-zone-name label of every
		// authoritative record of the zone, so it must fit in one (Kuadrant has the same limit).
		if errs := validation.IsValidLabelValue(name); len(errs) > 0 {
			return Options{}, fmt.Errorf("%s: key %s: entry %d is longer than %d characters, which a label value cannot hold",
				where, v1alpha1.CoreDNSZonesKey, i+1, validation.LabelValueMaxLength)
		}
		if !seen[name] {
			seen[name] = true
			opts.Zones = append(opts.Zones, name)
		}
	}
	if len(opts.Zones) == 0 {
		return Options{}, fmt.Errorf("%s: key %s must list at least one zone", where, v1alpha1.CoreDNSZonesKey)
	}
	for i, item := range strings.Split(string(secret.Data[v1alpha1.CoreDNSNameserversKey]), ",") {
		addr := strings.TrimSpace(item)
		if addr == "" {
			continue
		}
		host := addr
		if h, _, err := net.SplitHostPort(addr); err == nil {
			host = h
		}
		if net.ParseIP(host) == nil && len(validation.IsDNS1123Subdomain(v1alpha1.NormalizeName(host))) > 0 {
			return Options{}, fmt.Errorf("%s: key %s: entry %d is neither an address nor a host name", where, v1alpha1.CoreDNSNameserversKey, i+1)
		}
		opts.Nameservers = append(opts.Nameservers, addr)
	}
	return opts, nil
}
