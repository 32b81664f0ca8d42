package prober

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// ReasonTargetNotAllowed starts the status reason of a check the TargetRules refused.
const ReasonTargetNotAllowed = "TargetNotAllowed"

// targetNotAllowedReason is the whole reason: stable, and the same for every refused target, so it
// tells the probe's owner neither the address a name resolved to, nor whether anything listens
// there, nor any certificate name.
const targetNotAllowedReason = ReasonTargetNotAllowed + ": the probe's target was refused by the controller's health-check rules"

// classify turns a request error into an outcome and a stable reason. Go's error texts carry the
// local, ephemeral port of the connection ("127.0.0.1:8443->127.0.0.1:51234") and, for expired
// certificates, the current time; written to status as they are, every check would change the
// status and cost a write. So each known failure gets its own wording, naming only what the probe's
// spec names: the address and port dialled, the hostname, the certificate.
func classify(err error, target, host string, timeout time.Duration) (Outcome, string) {
	var (
		unknownAuthority x509.UnknownAuthorityError
		hostnameErr      x509.HostnameError
		invalidCert      x509.CertificateInvalidError
		recordHeader     tls.RecordHeaderError
		alert            tls.AlertError
		verifyErr        *tls.CertificateVerificationError
	)
	// The leaf the server presented names the failure best; x509's errors may hold another
	// certificate of the chain.
	var leaf *x509.Certificate
	if errors.As(err, &verifyErr) && len(verifyErr.UnverifiedCertificates) > 0 {
		leaf = verifyErr.UnverifiedCertificates[0]
	}
	switch {
	case errors.Is(err, ErrTargetNotAllowed):
		// First: nothing about the target, not even how far the attempt got.
		return OutcomeNotAllowed, targetNotAllowedReason
	case errors.As(err, &unknownAuthority):
		if leaf == nil {
			leaf = unknownAuthority.Cert
		}
		return OutcomeTLS, fmt.Sprintf("Certificate not trusted: x509: certificate signed by unknown authority (certificate %s, issuer %s)",
			certName(leaf), issuerName(leaf))
	case errors.As(err, &hostnameErr):
		return OutcomeTLS, fmt.Sprintf("Certificate not valid for %s: certificate %s is valid for %s",
			hostnameErr.Host, certName(hostnameErr.Certificate), validFor(hostnameErr.Certificate))
	case errors.As(err, &invalidCert):
		return OutcomeTLS, invalidCertReason(invalidCert)
	case verifyErr != nil:
		// Another verification failure (a bad chain, a signature).
		return OutcomeTLS, fmt.Sprintf("Certificate not trusted: certificate %s: %s", certName(leaf), stripAddrs(verifyErr.Err.Error()))
	case errors.As(err, &recordHeader):
		return OutcomeTLS, fmt.Sprintf("TLS handshake with %s failed: the server did not answer with TLS (plain HTTP on an HTTPS port?)", target)
	case errors.As(err, &alert):
		return OutcomeTLS, fmt.Sprintf("TLS handshake with %s failed: the server sent alert %q", target, alert.Error())
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) || isTimeout(err):
		return OutcomeTimeout, fmt.Sprintf("Timeout: no response from %s within %s", target, timeout)
	case errors.Is(err, syscall.ECONNREFUSED):
		return OutcomeRefused, fmt.Sprintf("Connection refused: nothing listens on %s", target)
	case errors.Is(err, syscall.ECONNRESET):
		return OutcomeError, fmt.Sprintf("Connection reset by %s", target)
	case errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		return OutcomeError, fmt.Sprintf("No route to %s", target)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return OutcomeError, fmt.Sprintf("Connection to %s closed before a response", target)
	}
	var tlsHost string
	if strings.Contains(err.Error(), "tls:") {
		tlsHost = " (TLS, server name " + host + ")"
	}
	return OutcomeError, fmt.Sprintf("Request to %s failed%s: %s", target, tlsHost, stripAddrs(innermost(err)))
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func invalidCertReason(e x509.CertificateInvalidError) string {
	c := e.Cert
	switch e.Reason {
	case x509.Expired:
		// Go's text holds the current time; the validity period is stable.
		return fmt.Sprintf("Certificate expired or not yet valid: certificate %s is valid from %s to %s",
			certName(c), c.NotBefore.UTC().Format(time.RFC3339), c.NotAfter.UTC().Format(time.RFC3339))
	default:
		return fmt.Sprintf("Certificate invalid: certificate %s: %s", certName(c), stripAddrs(e.Error()))
	}
}

// certName names a certificate by its subject's common name, else its first DNS name, else its
// serial number.
func certName(c *x509.Certificate) string {
	switch {
	case c == nil:
		return "(none)"
	case c.Subject.CommonName != "":
		return fmt.Sprintf("%q", c.Subject.CommonName)
	case len(c.DNSNames) > 0:
		return fmt.Sprintf("%q", c.DNSNames[0])
	default:
		return "with serial " + c.SerialNumber.String()
	}
}

func issuerName(c *x509.Certificate) string {
	if c == nil || c.Issuer.CommonName == "" {
		if c != nil && c.Issuer.String() != "" {
			return fmt.Sprintf("%q", c.Issuer.String())
		}
		return "(unnamed)"
	}
	return fmt.Sprintf("%q", c.Issuer.CommonName)
}

func validFor(c *x509.Certificate) string {
	if c == nil {
		return "no names"
	}
	names := append([]string{}, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		names = append(names, ip.String())
	}
	if len(names) == 0 {
		return "no names (no subject alternative names)"
	}
	return strings.Join(names, ", ")
}

// innermost is the text of the deepest wrapped error: the cause without the URL and the
// "dial tcp a->b" prefixes around it.
func innermost(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// addrPair matches "host:port->host:port" (a connection's two ends), whose local port changes
// with every connection.
var addrPair = regexp.MustCompile(`\S+:\d+->\S+:\d+:?\s*`)

func stripAddrs(s string) string { return addrPair.ReplaceAllString(s, "") }
