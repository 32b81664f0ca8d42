package rfc2136

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// Every message below names the Secret, the zone and the server, and says what to fix in which
// key; none carries a value, an address of our side or a time, so a status condition holding one
// is written once.

// prefix starts every error of one zone: which Secret, which zone, which server.
func (p *Provider) prefix(zone providers.Zone) string {
	secret := "provider secret"
	if p.opts.Where != "" {
		secret += " " + p.opts.Where
	}
	return fmt.Sprintf("%s: zone %s on %s", secret, zone.DNSName, p.opts.Server)
}

// keyProblem says what a TSIG error of the server means, by the key to look at.
func keyProblem(tsigError uint16) string {
	switch tsigError {
	case dns.RcodeBadKey:
		return "the server does not accept the TSIG key named in " + v1alpha1.RFC2136TSIGKeyNameKey + " for this zone (BADKEY: " +
			"it knows no key of that name and algorithm, or, on Knot DNS, the zone's acl does not let the key make this update)"
	case dns.RcodeBadTime:
		return "the server's clock and the controller's differ by more than 5 minutes, the TSIG fudge (BADTIME)"
	default:
		return "the server does not accept the signature: " + v1alpha1.RFC2136TSIGSecretKey + " or " +
			v1alpha1.RFC2136TSIGSecretAlgKey + " is not the key's (BADSIG)"
	}
}

// updateError classifies the answer to an update.
func (p *Provider) updateError(zone providers.Zone, r *dns.Msg, err error) error {
	where := p.prefix(zone)
	if r != nil {
		switch r.Rcode {
		case dns.RcodeSuccess:
			if err != nil {
				// An answer of success whose own signature does not verify: the update may well
				// have applied, so read the zone again before planning anything more.
				return providers.Errorf(providers.StaleView, "%s: the server's answer to the update is not signed with the key; the zone is read again", where)
			}
			return nil
		case dns.RcodeYXRrset, dns.RcodeNXRrset, dns.RcodeYXDomain, dns.RcodeNameError:
			return providers.Errorf(providers.StaleView, "%s: the zone changed since it was read (%s: a prerequisite of the update failed)",
				where, dns.RcodeToString[r.Rcode])
		case dns.RcodeNotAuth:
			if t := r.IsTsig(); t != nil && t.Error != 0 {
				return providers.Errorf(providers.Permanent, "%s: the update was refused: %s", where, keyProblem(t.Error))
			}
			if errors.Is(err, dns.ErrSig) || errors.Is(err, dns.ErrTime) {
				return providers.Errorf(providers.Permanent, "%s: the update was refused: %s", where, keyProblem(dns.RcodeBadSig))
			}
			return providers.Errorf(providers.Permanent, "%s: the server is not authoritative for the zone (NOTAUTH): check %s and %s",
				where, v1alpha1.RFC2136HostKey, v1alpha1.RFC2136ZoneKey)
		case dns.RcodeRefused:
			return providers.Errorf(providers.Permanent, "%s: the server refused the update (REFUSED): the TSIG key %s may not update "+
				"these names in this zone (BIND: allow-update or update-policy; PowerDNS: TSIG-ALLOW-DNSUPDATE and "+
				"allow-dnsupdate-from; PowerDNS refuses so too a key it does not know or whose %s or %s is not the key's)",
				where, p.opts.KeyName, v1alpha1.RFC2136TSIGSecretKey, v1alpha1.RFC2136TSIGSecretAlgKey)
		case dns.RcodeNotZone:
			return providers.Errorf(providers.Permanent, "%s: the update holds a name outside the zone (NOTZONE)", where)
		case dns.RcodeNotImplemented, dns.RcodeFormatError:
			return providers.Errorf(providers.Permanent, "%s: the server does not take this dynamic update (%s)", where, dns.RcodeToString[r.Rcode])
		case dns.RcodeServerFailure:
			return providers.Errorf(providers.Transient, "%s: the server failed to apply the update (SERVFAIL)", where)
		default:
			return providers.Errorf(providers.Transient, "%s: the server answered the update with %s", where, rcodeName(r.Rcode))
		}
	}
	return p.connectionError(where, "update", err)
}

// transferError classifies a failed zone transfer.
func (p *Provider) transferError(zone providers.Zone, err error) error {
	where := p.prefix(zone)
	if errors.Is(err, dns.ErrSig) || errors.Is(err, dns.ErrTime) || errors.Is(err, dns.ErrAuth) || errors.Is(err, dns.ErrKey) ||
		errors.Is(err, dns.ErrNoSig) {
		return providers.Errorf(providers.Permanent, "%s: the zone transfer (AXFR) was refused: the server does not know the TSIG key in %s "+
			"or does not accept its signature (%s and %s), or its clock differs from the controller's by more than 5 minutes",
			where, v1alpha1.RFC2136TSIGKeyNameKey, v1alpha1.RFC2136TSIGSecretKey, v1alpha1.RFC2136TSIGSecretAlgKey)
	}
	var rcode int
	if de := (*dns.Error)(nil); errors.As(err, &de) {
		if _, scanErr := fmt.Sscanf(de.Error(), "dns: bad xfr rcode: %d", &rcode); scanErr == nil {
			switch rcode {
			case dns.RcodeRefused:
				return providers.Errorf(providers.Permanent, "%s: the server refused the zone transfer (AXFR, REFUSED): the TSIG key %s may not "+
					"transfer this zone (BIND: allow-transfer; Knot: the zone's acl with action transfer; PowerDNS: allow-axfr-ips or "+
					"TSIG-ALLOW-AXFR), or the server does not serve the zone", where, p.opts.KeyName)
			case dns.RcodeNotAuth:
				return providers.Errorf(providers.Permanent, "%s: the server is not authoritative for the zone or refused the key (AXFR, NOTAUTH): "+
					"check %s, %s and the TSIG keys", where, v1alpha1.RFC2136HostKey, v1alpha1.RFC2136ZoneKey)
			case dns.RcodeServerFailure:
				return providers.Errorf(providers.Transient, "%s: the server failed the zone transfer (AXFR, SERVFAIL)", where)
			default:
				return providers.Errorf(providers.Transient, "%s: the server answered the zone transfer with %s", where, rcodeName(rcode))
			}
		}
	}
	return p.connectionError(where, "zone transfer", err)
}

// connectionError classifies an exchange that got no answer, in words that do not change from one
// attempt to the next (no ports, no times).
func (p *Provider) connectionError(where, what string, err error) error {
	var netErr net.Error
	var (
		unknownCA x509.UnknownAuthorityError
		invalid   x509.CertificateInvalidError
		hostname  x509.HostnameError
	)
	switch {
	case errors.As(err, &unknownCA), errors.As(err, &invalid), errors.As(err, &hostname):
		// Retrying cannot make a certificate trusted.
		return providers.Errorf(providers.Permanent, "%s: the server's TLS certificate is not trusted for %s: %s must hold the CA "+
			"that signed it, and the certificate must name the host in %s", where, v1alpha1.RFC2136HostKey, v1alpha1.RFC2136TLSCAKey,
			v1alpha1.RFC2136HostKey)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return providers.Errorf(providers.Transient, "%s: the server did not answer the %s within %s", where, what, p.opts.Timeout)
	case errors.Is(err, context.Canceled):
		return providers.NewError(providers.Transient, fmt.Errorf("%s: the %s was cancelled: %w", where, what, context.Canceled))
	case errors.Is(err, syscall.ECONNREFUSED):
		return providers.Errorf(providers.Transient, "%s: the server refused the connection for the %s (nothing listens on %s over %s?)",
			where, what, p.opts.Server, p.opts.Transport)
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return providers.Errorf(providers.Transient, "%s: the server closed the connection during the %s", where, what)
	case errors.As(err, new(*net.DNSError)):
		return providers.Errorf(providers.Transient, "%s: the name in %s does not resolve", where, v1alpha1.RFC2136HostKey)
	default:
		return providers.Errorf(providers.Transient, "%s: the %s failed: %s", where, what, stable(err))
	}
}

// stable is an error's text without what changes between attempts: the addresses of a network
// error are dropped and only its cause kept.
func stable(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Op + ": " + op.Err.Error()
	}
	return err.Error()
}

func rcodeName(rcode int) string {
	if s, ok := dns.RcodeToString[rcode]; ok {
		return s
	}
	return fmt.Sprintf("rcode %d", rcode)
}
