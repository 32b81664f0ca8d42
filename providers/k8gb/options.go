package k8gb

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// Keys of a kuadrant.io/k8gb Secret besides v1alpha1.K8gbNamespaceKey. The strategy, the primary geo
// tag and the weights are settings of the whole k8gb federation, which k8gb needs the same in every
// cluster: they live in the Secret, which a platform team hands every cluster alike, not in one
// cluster's policy.
const (
	// GeoTagKey is this cluster's geo tag as k8gb knows it (its clusterGeoTag). Required.
	GeoTagKey = "K8GB_GEO_TAG"
	// StrategyKey is the k8gb strategy: roundRobin (default), geoip or failover.
	StrategyKey = "K8GB_STRATEGY"
	// PrimaryGeoTagKey is the geo tag of the cluster that takes all traffic while healthy; failover
	// only, and required there.
	PrimaryGeoTagKey = "K8GB_PRIMARY_GEO_TAG"
	// WeightsKey is every cluster's weight by geo tag, "eu=3,us=1"; roundRobin only.
	WeightsKey = "K8GB_WEIGHTS"
)

// k8gb's strategy types.
const (
	StrategyRoundRobin = "roundRobin"
	StrategyGeoIP      = "geoip"
	StrategyFailover   = "failover"
)

// geoTagPattern is what k8gb accepts as a geo tag.
var geoTagPattern = regexp.MustCompile(`^[a-zA-Z0-9-]+$`)

// Options are what a kuadrant.io/k8gb Secret configures.
type Options struct {
	// GeoTag is this cluster's k8gb geo tag.
	GeoTag string
	// Strategy is k8gb's strategy type for every Gslb.
	Strategy string
	// PrimaryGeoTag is set with the failover strategy.
	PrimaryGeoTag string
	// Weights, when set, is the weight map of every Gslb (roundRobin only).
	Weights map[string]int
	// Namespace is where the Gslbs are created; empty means the namespace of each record.
	Namespace string
}

// ParseOptions reads a kuadrant.io/k8gb Secret. Errors name the Secret and the key, never a value
// that could be secret (none of these are, but the rule is the same for every backend).
func ParseOptions(secret *corev1.Secret) (Options, error) {
	where := fmt.Sprintf("provider secret %s/%s", secret.Namespace, secret.Name)
	value := func(key string) string { return strings.TrimSpace(string(secret.Data[key])) }

	o := Options{GeoTag: value(GeoTagKey), Strategy: value(StrategyKey), PrimaryGeoTag: value(PrimaryGeoTagKey), Namespace: value(v1alpha1.K8gbNamespaceKey)}
	if o.GeoTag == "" {
		return Options{}, fmt.Errorf("%s: key %s is required: this cluster's geo tag as k8gb knows it (k8gb's clusterGeoTag)", where, GeoTagKey)
	}
	if !geoTagPattern.MatchString(o.GeoTag) {
		return Options{}, fmt.Errorf("%s: key %s is not a k8gb geo tag (letters, digits and '-')", where, GeoTagKey)
	}
	if o.Strategy == "" {
		o.Strategy = StrategyRoundRobin
	}
	if !slices.Contains([]string{StrategyRoundRobin, StrategyGeoIP, StrategyFailover}, o.Strategy) {
		return Options{}, fmt.Errorf("%s: key %s must be %s, %s or %s", where, StrategyKey, StrategyRoundRobin, StrategyGeoIP, StrategyFailover)
	}
	switch {
	case o.Strategy == StrategyFailover && o.PrimaryGeoTag == "":
		return Options{}, fmt.Errorf("%s: key %s is required with %s=%s: the geo tag of the cluster that takes all traffic while it is healthy", where, PrimaryGeoTagKey, StrategyKey, StrategyFailover)
	case o.Strategy != StrategyFailover && o.PrimaryGeoTag != "":
		return Options{}, fmt.Errorf("%s: key %s is used only with %s=%s", where, PrimaryGeoTagKey, StrategyKey, StrategyFailover)
	case o.PrimaryGeoTag != "" && !geoTagPattern.MatchString(o.PrimaryGeoTag):
		return Options{}, fmt.Errorf("%s: key %s is not a k8gb geo tag (letters, digits and '-')", where, PrimaryGeoTagKey)
	}
	if raw := value(WeightsKey); raw != "" {
		if o.Strategy != StrategyRoundRobin {
			return Options{}, fmt.Errorf("%s: key %s is used only with %s=%s: k8gb weights round robin only", where, WeightsKey, StrategyKey, StrategyRoundRobin)
		}
		w, err := parseWeights(raw)
		if err != nil {
			return Options{}, fmt.Errorf("%s: key %s: %w", where, WeightsKey, err)
		}
		if _, ok := w[o.GeoTag]; !ok {
			return Options{}, fmt.Errorf("%s: key %s has no weight for this cluster's geo tag (key %s)", where, WeightsKey, GeoTagKey)
		}
		o.Weights = w
	}
	if o.Namespace != "" {
		if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
			return Options{}, fmt.Errorf("%s: key %s is not a namespace name", where, v1alpha1.K8gbNamespaceKey)
		}
	}
	return o, nil
}

// parseWeights reads "eu=3,us=1": geo tag, '=', a weight of 0 or more; each tag once.
func parseWeights(raw string) (map[string]int, error) {
	weights := map[string]int{}
	for _, pair := range strings.Split(raw, ",") {
		tag, w, ok := strings.Cut(strings.TrimSpace(pair), "=")
		tag, w = strings.TrimSpace(tag), strings.TrimSpace(w)
		if !ok || !geoTagPattern.MatchString(tag) {
			return nil, fmt.Errorf("%q is not <geo tag>=<weight>", pair)
		}
		n, err := strconv.Atoi(w)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("the weight of %s is not a whole number of 0 or more", tag)
		}
		if _, dup := weights[tag]; dup {
			return nil, fmt.Errorf("geo tag %s appears twice", tag)
		}
		weights[tag] = n
	}
	return weights, nil
}
