// Package resolve asks DNS for a zone's active-groups TXT (package groups), as Kuadrant's
// DefaultTXTResolver does: each nameserver the provider Secret lists under NAMESERVERS in turn, the
// first that answers with the TXT wins; then the system resolver.
package resolve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// SecretKey is the provider Secret key listing the nameservers to ask, comma-separated, each
// host or host:port (port 53 when none), as Kuadrant reads it.
const SecretKey = "NAMESERVERS"

// DefaultTimeout bounds one question to one nameserver (Kuadrant dials with 3 s).
const DefaultTimeout = 3 * time.Second

// Resolver looks up TXT records.
type Resolver struct {
	// Timeout bounds each question to a listed nameserver, and the system resolver's lookup;
	// 0 is DefaultTimeout.
	Timeout time.Duration
	// System is the fallback; nil is net.DefaultResolver.
	System *net.Resolver
}

// Nameservers reads the Secret value of SecretKey: comma-separated, spaces trimmed, empty
// entries dropped, ":53" added where no port is given.
func Nameservers(value string) []string {
	var out []string
	for ns := range strings.SplitSeq(value, ",") {
		ns = strings.TrimSpace(ns)
		if ns == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(ns); err != nil {
			ns = net.JoinHostPort(ns, "53")
		}
		out = append(out, ns)
	}
	return out
}

// LookupTXT returns the TXT strings at host, each record's strings joined (as net.LookupTXT does):
// from the first of nameservers that answers with at least one, else from the system resolver. The
// error says why neither did.
func (r *Resolver) LookupTXT(ctx context.Context, host string, nameservers []string) ([]string, error) {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	var errs []error
	for _, ns := range nameservers {
		values, err := ask(ctx, host, ns, timeout)
		if err == nil && len(values) > 0 {
			return values, nil
		}
		if err == nil {
			err = fmt.Errorf("%s: no TXT at %s", ns, host)
		}
		errs = append(errs, err)
	}
	system := r.System
	if system == nil {
		system = net.DefaultResolver
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	values, err := system.LookupTXT(sctx, host)
	if err != nil {
		return nil, errors.Join(append(errs, fmt.Errorf("system resolver: %w", err))...)
	}
	return values, nil
}

// ask puts the question to one nameserver over UDP, again over TCP when the answer is truncated.
func ask(ctx context.Context, host, ns string, timeout time.Duration) ([]string, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(host), dns.TypeTXT)
	m.RecursionDesired = true
	m.SetEdns0(dns.DefaultMsgSize, false)
	c := &dns.Client{Net: "udp", Timeout: timeout}
	in, _, err := c.ExchangeContext(ctx, m, ns)
	if err == nil && in.Truncated {
		c.Net = "tcp"
		in, _, err = c.ExchangeContext(ctx, m, ns)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ns, err)
	}
	if in.Rcode != dns.RcodeSuccess && in.Rcode != dns.RcodeNameError {
		return nil, fmt.Errorf("%s: %s", ns, dns.RcodeToString[in.Rcode])
	}
	var values []string
	for _, rr := range in.Answer {
		if txt, ok := rr.(*dns.TXT); ok {
			values = append(values, strings.Join(txt.Txt, ""))
		}
	}
	return values, nil
}
