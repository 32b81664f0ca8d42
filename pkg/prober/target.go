package prober

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"syscall"
)

// ErrTargetNotAllowed is returned by a dial or redirect that the TargetRules refuse. A check that
// ends with it fails with ReasonTargetNotAllowed and nothing else: what was dialled, and whether
// it would have answered, is not the probe owner's to learn.
var ErrTargetNotAllowed = errors.New("target not allowed by the health-check rules")

// TargetRules decide which addresses a check may connect to. A probe is created by a tenant, and the
// controller sits inside the cluster: without rules a probe makes the controller send requests to
// its own loopback, to a cloud metadata service, to the API server or a node's kubelet, and reports
// back what answered.
//
// Precedence, for an address (an IPv4-mapped IPv6 address is judged as its IPv4 address):
//  1. Denied: refused, whatever else says (the administrator's explicit word wins).
//  2. Allowed: permitted, even when a default or a Cluster range covers it (a test rig probing
//     127.0.0.1, a gateway on a node address).
//  3. The defaults (loopback, link-local including 169.254.169.254, unspecified, multicast,
//     broadcast) and Cluster: refused.
//  4. Anything else: permitted.
type TargetRules struct {
	Allowed []netip.Prefix
	Denied  []netip.Prefix
	// Cluster are the cluster's own ranges (service ranges, pods' ranges, nodes' addresses): refused
	// as the defaults are, so Allowed can open them. The probe controller keeps them current.
	Cluster []netip.Prefix
}

// defaultDenied are refused unless Allowed covers them. Private ranges (10/8, fc00::/7...) are not:
// internal load balancers are legitimate gateways; the cluster's own private ranges are Cluster.
var defaultDenied = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),          // "this network": Linux dials 0.0.0.0 as loopback
	netip.MustParsePrefix("127.0.0.0/8"),        // loopback
	netip.MustParsePrefix("169.254.0.0/16"),     // link-local, cloud metadata (169.254.169.254)
	netip.MustParsePrefix("224.0.0.0/4"),        // multicast
	netip.MustParsePrefix("255.255.255.255/32"), // broadcast
	netip.MustParsePrefix("::/128"),             // unspecified
	netip.MustParsePrefix("::1/128"),            // loopback
	netip.MustParsePrefix("fe80::/10"),          // link-local
	netip.MustParsePrefix("ff00::/8"),           // multicast
}

// Permits says whether a check may connect to ip.
func (r TargetRules) Permits(ip netip.Addr) bool {
	ip = ip.Unmap().WithZone("")
	if !ip.IsValid() {
		return false
	}
	covers := func(prefixes []netip.Prefix) bool {
		return slices.ContainsFunc(prefixes, func(p netip.Prefix) bool { return p.Contains(ip) })
	}
	switch {
	case covers(r.Denied):
		return false
	case covers(r.Allowed):
		return true
	case covers(defaultDenied), covers(r.Cluster):
		return false
	}
	return true
}

// control is a net.Dialer's Control: it runs for every connection the checks open, after name
// resolution and for every redirect, so what is judged is the address actually dialled.
func (r *TargetRules) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !r.Permits(ap.Addr()) {
		return ErrTargetNotAllowed
	}
	return nil
}

// ParsePrefixes parses a comma-separated list of CIDRs (a bare address is its /32 or /128), as
// the --health-check-*-cidrs flags take them.
func ParsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		p, err := netip.ParsePrefix(item)
		if err != nil {
			a, aerr := netip.ParseAddr(item)
			if aerr != nil {
				return nil, fmt.Errorf("%q is not a CIDR or an address", item)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, unmapPrefix(p).Masked())
	}
	return out, nil
}

// unmapPrefix turns ::ffff:a.b.c.d/n (n >= 96) into a.b.c.d/(n-96), so a prefix written either
// way matches the unmapped addresses Permits compares.
func unmapPrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p
}
