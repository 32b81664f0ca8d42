package rfc2136

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// Transports a Secret may name in RFC2136_TRANSPORT.
const (
	TransportUDP = "udp"
	TransportTCP = "tcp"
	TransportTLS = "tls"
)

// Defaults of the optional keys.
const (
	DefaultPort = 53
	// DefaultTLSPort is the port of DNS over TLS (RFC 7858), the default when RFC2136_TRANSPORT is tls.
	DefaultTLSPort = 853
	// DefaultAlgorithm is what tsig-keygen makes when asked for no other.
	DefaultAlgorithm = "hmac-sha256"
	// DefaultBatchChangeSize is external-dns's --rfc2136-batch-change-size default, so a Secret
	// written from an external-dns configuration sends messages of the size it did.
	DefaultBatchChangeSize = 50
	// DefaultTransport is TCP rather than UDP: a batch of dozens of changes with their prerequisites
	// outgrows a UDP datagram, and an update over TCP is never truncated or silently lost.
	DefaultTransport = TransportTCP
)

// algorithms are the TSIG algorithms miekg/dns signs with, by the names tsig-keygen, BIND, Knot and
// PowerDNS use. hmac-md5 is not among them: miekg/dns dropped it.
var algorithms = map[string]string{
	"hmac-sha1":   dns.HmacSHA1,
	"hmac-sha224": dns.HmacSHA224,
	"hmac-sha256": dns.HmacSHA256,
	"hmac-sha384": dns.HmacSHA384,
	"hmac-sha512": dns.HmacSHA512,
}

// Options are what a kuadrant.io/rfc2136 Secret configures, and the client's bounds.
type Options struct {
	// Server is host:port of the primary that takes updates and zone transfers.
	Server string
	// Zones are the zones the Secret may write, lower case without the trailing dot.
	Zones []string
	// KeyName, Secret (base64) and Algorithm (a miekg/dns name, with the trailing dot) are the TSIG key.
	KeyName   string
	Secret    string
	Algorithm string
	// Transport is udp, tcp or tls.
	Transport string
	// TLS is the client configuration when Transport is tls.
	TLS *tls.Config
	// BatchChangeSize is the most record-set changes one UPDATE message carries.
	BatchChangeSize int
	// SignedTransfer: zone transfers (AXFR) are signed with the key too. Off for a server that
	// allows transfers by address only.
	SignedTransfer bool
	// Where is the provider Secret the options were read from (namespace/name), named in errors;
	// empty for options built in code.
	Where string

	// Timeout bounds one exchange: an update, or a zone transfer as a whole (default 30s).
	Timeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Second
	}
	if o.BatchChangeSize == 0 {
		o.BatchChangeSize = DefaultBatchChangeSize
	}
	if o.Transport == "" {
		o.Transport = DefaultTransport
	}
	if o.Algorithm == "" {
		o.Algorithm = dns.HmacSHA256
	}
	return o
}

// ParseOptions reads a kuadrant.io/rfc2136 Secret. RFC2136_HOST, RFC2136_ZONE, RFC2136_TSIG_KEYNAME
// and RFC2136_TSIG_SECRET are required; the others are optional. Errors name the Secret and the key,
// never a value.
func ParseOptions(secret *corev1.Secret) (Options, error) {
	where := fmt.Sprintf("provider secret %s/%s", secret.Namespace, secret.Name)
	value := func(key string) string { return strings.TrimSpace(string(secret.Data[key])) }
	bad := func(key, why string) error { return fmt.Errorf("%s: key %s %s", where, key, why) }
	opts := Options{Where: secret.Namespace + "/" + secret.Name}

	host := value(v1alpha1.RFC2136HostKey)
	if host == "" || strings.ContainsAny(host, " /:@") && net.ParseIP(host) == nil {
		return Options{}, bad(v1alpha1.RFC2136HostKey, "must be the host name or IP address of the primary server")
	}
	opts.Transport = strings.ToLower(value(v1alpha1.RFC2136TransportKey))
	switch opts.Transport {
	case "":
		opts.Transport = DefaultTransport
	case TransportUDP, TransportTCP, TransportTLS:
	default:
		return Options{}, bad(v1alpha1.RFC2136TransportKey, "must be udp, tcp or tls")
	}
	port := DefaultPort
	if opts.Transport == TransportTLS {
		port = DefaultTLSPort
	}
	if p := value(v1alpha1.RFC2136PortKey); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return Options{}, bad(v1alpha1.RFC2136PortKey, "must be a port number (1-65535)")
		}
		port = n
	}
	opts.Server = net.JoinHostPort(host, strconv.Itoa(port))

	for _, z := range strings.Split(value(v1alpha1.RFC2136ZoneKey), ",") {
		z = v1alpha1.NormalizeName(strings.TrimSpace(z))
		if z == "" {
			continue
		}
		if _, ok := dns.IsDomainName(z); !ok {
			return Options{}, bad(v1alpha1.RFC2136ZoneKey, "holds a name that is not a domain name")
		}
		opts.Zones = append(opts.Zones, z)
	}
	if len(opts.Zones) == 0 {
		return Options{}, bad(v1alpha1.RFC2136ZoneKey, "must list the zones to write, separated by commas")
	}

	opts.KeyName = v1alpha1.NormalizeName(value(v1alpha1.RFC2136TSIGKeyNameKey))
	if _, ok := dns.IsDomainName(opts.KeyName); opts.KeyName == "" || !ok {
		return Options{}, bad(v1alpha1.RFC2136TSIGKeyNameKey, "must be the name of the TSIG key, as in the server's key statement")
	}
	opts.Secret = value(v1alpha1.RFC2136TSIGSecretKey)
	if raw, err := base64.StdEncoding.DecodeString(opts.Secret); err != nil || len(raw) == 0 {
		return Options{}, bad(v1alpha1.RFC2136TSIGSecretKey, "must be the base64 secret of the TSIG key (the secret line tsig-keygen prints)")
	}
	alg := strings.ToLower(strings.TrimSuffix(value(v1alpha1.RFC2136TSIGSecretAlgKey), "."))
	if alg == "" {
		alg = DefaultAlgorithm
	}
	var ok bool
	if opts.Algorithm, ok = algorithms[alg]; !ok {
		return Options{}, bad(v1alpha1.RFC2136TSIGSecretAlgKey, "must be one of hmac-sha1, hmac-sha224, hmac-sha256, hmac-sha384, hmac-sha512")
	}

	if opts.Transport == TransportTLS {
		// ALPN "dot": a zone transfer over TLS must negotiate it (RFC 9103 section 7.1), and BIND
		// fails one that did not.
		opts.TLS = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12, NextProtos: []string{"dot"}}
		if ca := value(v1alpha1.RFC2136TLSCAKey); ca != "" {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM([]byte(ca)) {
				return Options{}, bad(v1alpha1.RFC2136TLSCAKey, "must hold PEM certificates")
			}
			opts.TLS.RootCAs = pool
		}
	} else if value(v1alpha1.RFC2136TLSCAKey) != "" {
		return Options{}, bad(v1alpha1.RFC2136TLSCAKey, "is set but RFC2136_TRANSPORT is not tls")
	}

	opts.BatchChangeSize = DefaultBatchChangeSize
	if b := value(v1alpha1.RFC2136BatchChangeSizeKey); b != "" {
		n, err := strconv.Atoi(b)
		if err != nil || n < 1 || n > 10000 {
			return Options{}, bad(v1alpha1.RFC2136BatchChangeSizeKey, "must be a number of changes from 1 to 10000")
		}
		opts.BatchChangeSize = n
	}
	opts.SignedTransfer = true
	if a := value(v1alpha1.RFC2136TSIGAXFRKey); a != "" {
		b, err := strconv.ParseBool(a)
		if err != nil {
			return Options{}, bad(v1alpha1.RFC2136TSIGAXFRKey, "must be true or false")
		}
		opts.SignedTransfer = b
	}
	return opts, nil
}
