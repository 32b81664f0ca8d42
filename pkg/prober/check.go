package prober

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// drainLimit bounds how much of a response body is read before the connection is closed: the
// status code is the verdict, bodies are never kept.
const drainLimit = 4 << 10

// maxRedirects bounds redirects followed within the probe's own hostname.
const maxRedirects = 5

// checker sends the requests. Its transports are shared by every probe; keep-alives are off, so
// each check dials afresh (what a new client would see, and no idle connection per probe). That is
// also what keeps the target rules whole: connections are pooled by hostname and port, not by the
// address dialled, so a reused connection would carry a check to the address a name resolved to
// before, past the rules' judgement of what it resolves to now.
type checker struct {
	resolver *net.Resolver
	verified *http.Client
	insecure *http.Client
}

// dialTarget carries the IP a request must dial, whatever host its URL names.
type dialTarget struct{}

// newChecker builds the clients; rules is read at every dial, so a change applies to the next one.
func newChecker(o Options, rules *atomic.Pointer[TargetRules]) *checker {
	dialer := &net.Dialer{
		// Control runs after resolution, for every address dialled: the first request, every
		// redirect and every address of a hostname, at every check.
		Control: func(network, address string, c syscall.RawConn) error {
			return rules.Load().control(network, address, c)
		},
	}
	transport := func(insecure bool) *http.Transport {
		return &http.Transport{
			// Never through a proxy: the probe must reach the address under test.
			Proxy: nil,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				_, port, err := net.SplitHostPort(addr)
				if err != nil {
					return nil, err
				}
				ip, _ := ctx.Value(dialTarget{}).(string)
				return dialer.DialContext(ctx, network, net.JoinHostPort(ip, port))
			},
			TLSClientConfig: &tls.Config{
				RootCAs:            o.RootCAs,
				InsecureSkipVerify: insecure, //nolint:gosec // only when the probe allows it
				MinVersion:         tls.VersionTLS12,
			},
			DisableKeepAlives:      true,
			MaxResponseHeaderBytes: 64 << 10,
		}
	}
	client := func(insecure bool) *http.Client {
		var rt http.RoundTripper = transport(insecure)
		if o.WrapTransport != nil {
			rt = o.WrapTransport(rt)
		}
		return &http.Client{
			Transport: rt,
			// Follow redirects only within the probe's hostname (they dial the same address);
			// anything else is judged by the redirect's own status code. Within the hostname, a
			// redirect may change the port only to the scheme's standard one: a gateway
			// redirecting to HTTPS is followed, one pointing the check at another service of the
			// same address is refused (the address itself is judged again at the dial).
			CheckRedirect: func(req *http.Request, via []*http.Request) error {
				if len(via) >= maxRedirects || req.URL.Hostname() != via[0].URL.Hostname() {
					return http.ErrUseLastResponse
				}
				if port := portOf(req.URL); port != portOf(via[0].URL) && port != defaultPorts[req.URL.Scheme] {
					return ErrTargetNotAllowed
				}
				return nil
			},
		}
	}
	return &checker{resolver: o.Resolver, verified: client(false), insecure: client(true)}
}

// defaultPorts are the schemes' standard ports.
var defaultPorts = map[string]string{"http": "80", "https": "443"}

// portOf is the port a URL dials.
func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	return defaultPorts[u.Scheme]
}

// checked is the verdict of one check.
type checked struct {
	outcome Outcome
	status  int
	reason  string
}

// check runs one check of spec within timeout.
func (c *checker) check(ctx context.Context, spec Spec, timeout time.Duration) checked {
	if spec.Unusable != "" {
		return checked{outcome: OutcomeUnusable, reason: spec.Unusable}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ips := []string{spec.Address}
	if net.ParseIP(spec.Address) == nil {
		var err error
		if ips, err = c.resolver.LookupHost(ctx, spec.Address); err != nil || len(ips) == 0 {
			return checked{outcome: OutcomeDNS, reason: dnsReason(spec.Address, err, timeout)}
		}
	}
	var last checked
	for _, ip := range ips {
		// Any address of a hostname that passes makes the check pass (Kuadrant's rule).
		if last = c.get(ctx, spec, ip, timeout); last.outcome == OutcomePassed || ctx.Err() != nil {
			break
		}
	}
	return last
}

// get sends one GET of spec to ip.
func (c *checker) get(ctx context.Context, spec Spec, ip string, timeout time.Duration) checked {
	scheme, defaultPort := "http", 80
	if spec.Protocol == "HTTPS" {
		scheme, defaultPort = "https", 443
	}
	port := spec.Port
	if port == 0 {
		port = defaultPort
	}
	host := spec.Hostname
	if host == "" {
		host = spec.Address
	}
	// As curl and browsers write it: the port is in the Host header only when it is not the
	// protocol's default.
	authority := host
	if port != defaultPort {
		authority = net.JoinHostPort(host, strconv.Itoa(port))
	} else if strings.Contains(host, ":") {
		authority = "[" + host + "]"
	}
	u, err := url.Parse(scheme + "://" + authority + spec.Path)
	if err != nil {
		return checked{outcome: OutcomeError, reason: fmt.Sprintf("Invalid path %q", spec.Path)}
	}
	req, err := http.NewRequestWithContext(context.WithValue(ctx, dialTarget{}, ip), http.MethodGet, u.String(), nil)
	if err != nil {
		return checked{outcome: OutcomeError, reason: fmt.Sprintf("Invalid request: %s", u.Redacted())}
	}
	for name, values := range spec.Headers {
		for _, v := range values {
			req.Header.Add(name, v)
		}
	}
	req.Header.Set("User-Agent", "dnspolicy-controller-health-probe")
	client := c.verified
	if spec.AllowInsecure {
		client = c.insecure
	}
	resp, err := client.Do(req)
	if err != nil {
		outcome, reason := classify(err, net.JoinHostPort(ip, strconv.Itoa(port)), host, timeout)
		return checked{outcome: outcome, reason: reason}
	}
	_, _ = io.CopyN(io.Discard, resp.Body, drainLimit)
	_ = resp.Body.Close()
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusCreated {
		return checked{outcome: OutcomePassed, status: resp.StatusCode}
	}
	return checked{outcome: OutcomeStatusCode, status: resp.StatusCode, reason: fmt.Sprintf("Status code: %d", resp.StatusCode)}
}

func dnsReason(address string, err error, timeout time.Duration) string {
	var dnsErr *net.DNSError
	switch {
	case err == nil:
		return fmt.Sprintf("Address %s does not resolve: no addresses", address)
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return fmt.Sprintf("Address %s does not resolve: no such host", address)
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &dnsErr) && dnsErr.IsTimeout):
		return fmt.Sprintf("Timeout: resolving address %s took longer than %s", address, timeout)
	case errors.As(err, &dnsErr):
		// The error's own text names the resolver's address; its cause alone is stable.
		return fmt.Sprintf("Address %s does not resolve: %s", address, dnsErr.Err)
	default:
		return fmt.Sprintf("Address %s does not resolve", address)
	}
}
