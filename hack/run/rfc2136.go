package main

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers/rfc2136"
)

// rfc2136Keys are the keys of a kuadrant.io/rfc2136 Secret. `make run RFC2136_HOST=... RFC2136_ZONE=...
// RFC2136_TSIG_KEYNAME=... RFC2136_TSIG_SECRET=...` (or the same in the environment) points the
// demo at a BIND (or Knot, PowerDNS) of the user's: its default provider Secret holds these, and the
// demo's host is api.<the first zone>.
var rfc2136Keys = []string{
	v1alpha1.RFC2136HostKey, v1alpha1.RFC2136PortKey, v1alpha1.RFC2136ZoneKey, v1alpha1.RFC2136TSIGKeyNameKey,
	v1alpha1.RFC2136TSIGSecretKey, v1alpha1.RFC2136TSIGSecretAlgKey, v1alpha1.RFC2136TransportKey, v1alpha1.RFC2136TLSCAKey,
	v1alpha1.RFC2136BatchChangeSizeKey, v1alpha1.RFC2136TSIGAXFRKey,
}

// rfc2136Demo is the demo on a server of the user's.
type rfc2136Demo struct {
	data       map[string]string
	zone, host string
	// server is where to ask for the answers (host:port of RFC2136_HOST and RFC2136_PORT; DNS
	// queries over UDP, on port 53 unless RFC2136_PORT says otherwise).
	server string
}

// rfc2136FromEnv reads the RFC2136_* variables; ok is false when RFC2136_HOST is not set. They are
// checked as the backend checks a Secret, so a wrong one stops make run with the key named.
func rfc2136FromEnv() (rfc2136Demo, bool, error) {
	if os.Getenv(v1alpha1.RFC2136HostKey) == "" {
		return rfc2136Demo{}, false, nil
	}
	d := rfc2136Demo{data: map[string]string{}}
	for _, k := range rfc2136Keys {
		if v, ok := os.LookupEnv(k); ok && v != "" {
			d.data[k] = v
		}
	}
	s := d.secret()
	s.Data = map[string][]byte{}
	for k, v := range d.data {
		s.Data[k] = []byte(v)
	}
	opts, err := rfc2136.ParseOptions(s)
	if err != nil {
		return rfc2136Demo{}, false, fmt.Errorf("the RFC2136_* variables: %w", err)
	}
	d.zone = opts.Zones[0]
	d.host = "api." + d.zone
	port := strconv.Itoa(rfc2136.DefaultPort)
	if p := d.data[v1alpha1.RFC2136PortKey]; p != "" && opts.Transport != rfc2136.TransportTLS {
		port = p
	}
	d.server = net.JoinHostPort(strings.TrimSpace(d.data[v1alpha1.RFC2136HostKey]), port)
	return d, true, nil
}

// secret is the demo namespace's default provider Secret.
func (d rfc2136Demo) secret() *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: demoNamespace, Name: "rfc2136",
			Labels: map[string]string{v1alpha1.DefaultProviderLabel: "true"}},
		Type:       v1alpha1.SecretTypeRFC2136,
		StringData: d.data,
	}
}

// await waits until the server answers the demo host with both Gateways' addresses, then prints the
// dig command that shows it. An RFC 2136 server answers every client alike, so the two Gateways'
// loadbalanced trees are one A set there, a round robin (docs/providers/rfc2136.md). It gives up
// quietly when ctx ends.
func (d rfc2136Demo) await(ctx context.Context) {
	var want []string
	for _, g := range demoGateways {
		want = append(want, g.Address)
	}
	for {
		got, _ := answerAt(d.server, d.host)
		slices.Sort(got)
		if slices.Equal(got, want) {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
	host, port, _ := net.SplitHostPort(d.server)
	fmt.Printf("\n%s answers %s (namespace %s, zone %s, by RFC 2136) with both Gateways' addresses: the server answers\n"+
		"every client alike, so the loadbalanced trees are published as one set, a round robin.\n", d.server, d.host, demoNamespace, d.zone)
	fmt.Printf("  dig @%s -p %s %s   # every client: both gateways, %s\n", host, port, d.host, strings.Join(want, " "))
}

// answerAt asks server (host:port, the host maybe a name) for host's addresses.
func answerAt(server, host string) ([]string, error) {
	h, p, err := net.SplitHostPort(server)
	if err != nil {
		return nil, err
	}
	addrs, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip4", h)
	if err != nil || len(addrs) == 0 {
		return nil, fmt.Errorf("resolving %s: %w", h, err)
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return nil, err
	}
	return answer(netip.AddrPortFrom(addrs[0].Unmap(), uint16(port)), host, "")
}
