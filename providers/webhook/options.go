package webhook

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// DefaultTimeout bounds one HTTP request when the Secret sets none: external-dns's own client
// allows its read and write timeouts together (5s + 10s).
const DefaultTimeout = 15 * time.Second

// Options are what a kuadrant.io/external-dns-webhook Secret configures, and the client's bounds.
type Options struct {
	// URL is the webhook provider's base URL (WEBHOOK_PROVIDER_URL): usually a sidecar on
	// http://localhost:8888. It is never written into an error: it may carry credentials in its
	// user info or query.
	URL *url.URL
	// Zones (ZONES), when set, are the zones used instead of the domains of the negotiated domain
	// filter; each must lie inside that filter. Needed when the filter names no domains (an empty
	// or regular-expression filter).
	Zones []string
	// Timeout bounds one HTTP request (WEBHOOK_PROVIDER_TIMEOUT, a Go duration; default 15s).
	Timeout time.Duration
	// BatchSize is the most changes one POST /records carries (WEBHOOK_PROVIDER_BATCH_SIZE); 0 means
	// no limit, as the protocol sets none.
	BatchSize int
	// Secret is the provider Secret the options were read from (namespace/name), named in errors.
	Secret string

	// Bounds of one call, not read from the Secret; zero takes the defaults. MaxAttempts per call,
	// retrying 5xx answers, timeouts and refused connections (default 3), waiting Backoff before the
	// second attempt and twice as long before each later one (default 250ms).
	MaxAttempts int
	Backoff     time.Duration
}

func (o Options) withDefaults() Options {
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = 3
	}
	if o.Backoff == 0 {
		o.Backoff = 250 * time.Millisecond
	}
	return o
}

// ParseOptions reads a kuadrant.io/external-dns-webhook Secret: WEBHOOK_PROVIDER_URL (required, http
// or https), ZONES, WEBHOOK_PROVIDER_TIMEOUT and WEBHOOK_PROVIDER_BATCH_SIZE (optional). Errors name
// the Secret and the key, never a value.
func ParseOptions(secret *corev1.Secret) (Options, error) {
	where := fmt.Sprintf("provider secret %s/%s", secret.Namespace, secret.Name)
	value := func(key string) string { return strings.TrimSpace(string(secret.Data[key])) }
	opts := Options{Secret: secret.Namespace + "/" + secret.Name}

	raw := value(v1alpha1.WebhookProviderURLKey)
	if raw == "" {
		return Options{}, fmt.Errorf("%s: key %s is missing", where, v1alpha1.WebhookProviderURLKey)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" {
		return Options{}, fmt.Errorf("%s: key %s is not an http or https URL", where, v1alpha1.WebhookProviderURLKey)
	}
	opts.URL = u

	seen := map[string]bool{}
	for i, item := range strings.Split(value(v1alpha1.WebhookZonesKey), ",") {
		name := v1alpha1.NormalizeName(strings.TrimSpace(item))
		if name == "" {
			continue
		}
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return Options{}, fmt.Errorf("%s: key %s: entry %d is not a valid zone name", where, v1alpha1.WebhookZonesKey, i+1)
		}
		if !seen[name] {
			seen[name] = true
			opts.Zones = append(opts.Zones, name)
		}
	}

	if raw := value(v1alpha1.WebhookProviderTimeoutKey); raw != "" {
		d, err := time.ParseDuration(raw)
		if err != nil || d <= 0 || d > 10*time.Minute {
			return Options{}, fmt.Errorf("%s: key %s is not a duration between 0 and 10m (such as 15s)", where, v1alpha1.WebhookProviderTimeoutKey)
		}
		opts.Timeout = d
	}
	if raw := value(v1alpha1.WebhookProviderBatchSizeKey); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 0 {
			return Options{}, fmt.Errorf("%s: key %s is not a whole number of changes (0: no limit)", where, v1alpha1.WebhookProviderBatchSizeKey)
		}
		opts.BatchSize = n
	}
	return opts, nil
}
