package route53

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// DefaultRegion is the region used when the Secret names none; Route 53 is a global service
// served from us-east-1.
const DefaultRegion = "us-east-1"

var regionPattern = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)

// Options are what a kuadrant.io/aws Secret configures, and the client's bounds.
type Options struct {
	// AccessKeyID and SecretAccessKey are the only credentials used: the environment, shared files
	// and instance roles are never consulted, so one cluster's Secret cannot borrow another's rights.
	AccessKeyID     string
	SecretAccessKey string
	// Region signs the requests (default us-east-1).
	Region string
	// Endpoint, when set, replaces the Route 53 endpoint (a private endpoint or an emulator).
	Endpoint string
	// Secret is the provider Secret the options were read from (namespace/name), named in errors
	// about refused credentials; empty for options built in code.
	Secret string

	// Bounds of one API call, not read from the Secret; zero takes the defaults below.
	// MaxAttempts per call, retrying Throttling, PriorRequestNotComplete, 5xx and connection errors
	// with exponential backoff and jitter up to MaxBackoff (defaults 8 and 5s).
	MaxAttempts int
	MaxBackoff  time.Duration
	// AttemptTimeout bounds one HTTP attempt (default 30s).
	AttemptTimeout time.Duration
	// InsyncTimeout bounds the wait for a change to become INSYNC (default 90s), polling GetChange
	// every InsyncPoll at first (default 1s), backing off to 5s.
	InsyncTimeout time.Duration
	InsyncPoll    time.Duration
}

func (o Options) withDefaults() Options {
	if o.Region == "" {
		o.Region = DefaultRegion
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = 8
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = 5 * time.Second
	}
	if o.AttemptTimeout == 0 {
		o.AttemptTimeout = 30 * time.Second
	}
	if o.InsyncTimeout == 0 {
		o.InsyncTimeout = 90 * time.Second
	}
	if o.InsyncPoll == 0 {
		o.InsyncPoll = time.Second
	}
	return o
}

// ParseOptions reads a kuadrant.io/aws Secret: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY
// (required), AWS_REGION and ENDPOINT_URL (optional). Errors name the Secret and the key, never a
// value.
func ParseOptions(secret *corev1.Secret) (Options, error) {
	where := fmt.Sprintf("provider secret %s/%s", secret.Namespace, secret.Name)
	value := func(key string) string { return strings.TrimSpace(string(secret.Data[key])) }
	opts := Options{
		AccessKeyID:     value(v1alpha1.AWSAccessKeyIDKey),
		SecretAccessKey: value(v1alpha1.AWSSecretAccessKeyKey),
		Region:          value(v1alpha1.AWSRegionKey),
		Endpoint:        value(v1alpha1.EndpointOverrideKey),
		Secret:          secret.Namespace + "/" + secret.Name,
	}
	for _, required := range []struct{ key, value string }{
		{v1alpha1.AWSAccessKeyIDKey, opts.AccessKeyID},
		{v1alpha1.AWSSecretAccessKeyKey, opts.SecretAccessKey},
	} {
		if required.value == "" {
			return Options{}, fmt.Errorf("%s: key %s is missing or empty", where, required.key)
		}
	}
	if strings.ContainsAny(opts.AccessKeyID, " \t\r\n") {
		return Options{}, fmt.Errorf("%s: key %s holds white space, which no access key ID does", where, v1alpha1.AWSAccessKeyIDKey)
	}
	if opts.Region == "" {
		opts.Region = DefaultRegion
	} else if !regionPattern.MatchString(opts.Region) {
		return Options{}, fmt.Errorf("%s: key %s is not a region name such as %s", where, v1alpha1.AWSRegionKey, DefaultRegion)
	}
	if opts.Endpoint != "" {
		u, err := url.Parse(opts.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Options{}, fmt.Errorf("%s: key %s is not an http or https URL", where, v1alpha1.EndpointOverrideKey)
		}
	}
	return opts, nil
}

// ZoneScope names where Zones looks, for the condition of a record whose host is in none of the
// zones: the hosted zones of the account of the access key.
func (p *Provider) ZoneScope() string {
	return "hosted zones of the AWS account of key " + v1alpha1.AWSAccessKeyIDKey
}
