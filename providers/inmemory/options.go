package inmemory

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// Options are what a kuadrant.io/inmemory Secret configures.
type Options struct {
	// InitZones are the zones created in the store when absent: lower case, without a trailing dot,
	// each once.
	InitZones []string
}

// ParseOptions reads a kuadrant.io/inmemory Secret. INMEM_INIT_ZONES is optional: a comma-separated
// list of zone names.
func ParseOptions(secret *corev1.Secret) (Options, error) {
	var opts Options
	raw := strings.TrimSpace(string(secret.Data[v1alpha1.InMemInitZonesKey]))
	if raw == "" {
		return opts, nil
	}
	seen := map[string]bool{}
	for i, item := range strings.Split(raw, ",") {
		name := v1alpha1.NormalizeName(strings.TrimSpace(item))
		if name == "" {
			continue
		}
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return Options{}, fmt.Errorf("provider secret %s/%s: key %s: entry %d is not a valid zone name",
				secret.Namespace, secret.Name, v1alpha1.InMemInitZonesKey, i+1)
		}
		if !seen[name] {
			seen[name] = true
			opts.InitZones = append(opts.InitZones, name)
		}
	}
	return opts, nil
}
