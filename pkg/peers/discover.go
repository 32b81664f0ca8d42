package peers

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnsserver"
)

// DefaultDiscoverInterval is how often a zone's NS set is asked for again.
const DefaultDiscoverInterval = time.Minute

// Discovery finds a zone's peers in the NS set that delegates the zone to every cluster's server:
// the servers it names are this cluster's peers, all but this cluster's own server, which is
// recognised by its export naming this cluster (so it may sit behind any address or NAT).
type Discovery struct {
	// Zone is the delegated zone.
	Zone string
	// Servers are asked, one after the other until one answers, for the zone's NS set: the parent
	// zone's servers (which answer with a referral and glue) or a resolver (which answers the NS set
	// itself). host:port.
	Servers []string
	// Port is the port the peers serve the zone on: an NS record names no port (53 when 0).
	Port int
	// Key signs the pulls of the discovered peers, as Peer.Key.
	Key *dnsserver.TSIGKey
}

// Lookup asks d.Servers for the zone's NS set and returns the peers it names: host:port of every
// address of every server name, from glue where the answer has it, else asked of the same server,
// else of the system's resolver. A name none of whose addresses resolves is left out (and named in
// the returned skipped list): it never keeps the others from being found. Lookup fails when no
// server answers with an NS set, or no name in it resolves.
func Lookup(ctx context.Context, d Discovery, timeout time.Duration) (addrs, skipped []string, err error) {
	zone := dns.Fqdn(v1alpha1.NormalizeName(d.Zone))
	port := d.Port
	if port == 0 {
		port = 53
	}
	var errs []string
	for _, server := range d.Servers {
		names, glue, err := askNS(ctx, server, zone, timeout)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", server, err))
			continue
		}
		seen := map[string]bool{}
		for _, name := range names {
			ips := glue[name]
			if len(ips) == 0 {
				ips = resolve(ctx, server, name, timeout)
			}
			if len(ips) == 0 {
				skipped = append(skipped, strings.TrimSuffix(name, "."))
			}
			for _, ip := range ips {
				a := net.JoinHostPort(ip.String(), strconv.Itoa(port))
				if !seen[a] {
					seen[a] = true
					addrs = append(addrs, a)
				}
			}
		}
		if len(addrs) == 0 {
			return nil, skipped, fmt.Errorf("%s: no server of the NS set of %s resolves (%s)", server, zone, strings.Join(skipped, ", "))
		}
		slices.Sort(addrs)
		return addrs, skipped, nil
	}
	if len(errs) == 0 {
		return nil, nil, fmt.Errorf("no server to ask for the NS set of %s", zone)
	}
	return nil, nil, fmt.Errorf("the NS set of %s: %s", zone, strings.Join(errs, "; "))
}

// askNS asks one server for zone's NS set: the names (lower case, fully qualified) and the glue
// addresses the answer carries for them.
func askNS(ctx context.Context, server, zone string, timeout time.Duration) ([]string, map[string][]netip.Addr, error) {
	r, err := exchange(ctx, server, zone, dns.TypeNS, timeout)
	if err != nil {
		return nil, nil, err
	}
	if r.Rcode != dns.RcodeSuccess {
		return nil, nil, fmt.Errorf("answered %s", dns.RcodeToString[r.Rcode])
	}
	var names []string
	// The NS set is the answer (a resolver, or the zone's own server) or the referral (the parent).
	for _, rr := range slices.Concat(r.Answer, r.Ns) {
		if ns, ok := rr.(*dns.NS); ok && strings.EqualFold(ns.Hdr.Name, zone) {
			if name := strings.ToLower(dns.Fqdn(ns.Ns)); !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	if len(names) == 0 {
		return nil, nil, fmt.Errorf("no NS set for %s in the answer", zone)
	}
	glue := map[string][]netip.Addr{}
	for _, rr := range r.Extra {
		name := strings.ToLower(rr.Header().Name)
		if !slices.Contains(names, name) {
			continue
		}
		if ip, ok := addrOf(rr); ok && !slices.Contains(glue[name], ip) {
			glue[name] = append(glue[name], ip)
		}
	}
	return names, glue, nil
}

// resolve finds a server name's addresses: asked of server (a parent answers for names inside
// it), else of the system's resolver.
func resolve(ctx context.Context, server, name string, timeout time.Duration) []netip.Addr {
	var ips []netip.Addr
	for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA} {
		r, err := exchange(ctx, server, name, qtype, timeout)
		if err != nil || r.Rcode != dns.RcodeSuccess {
			continue
		}
		for _, rr := range r.Answer {
			if ip, ok := addrOf(rr); ok && strings.EqualFold(rr.Header().Name, name) && !slices.Contains(ips, ip) {
				ips = append(ips, ip)
			}
		}
	}
	if len(ips) > 0 {
		return ips
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	found, err := net.DefaultResolver.LookupNetIP(ctx, "ip", strings.TrimSuffix(name, "."))
	if err != nil {
		return nil
	}
	for _, ip := range found {
		ips = append(ips, ip.Unmap())
	}
	return ips
}

// exchange asks one question over UDP, again over TCP when the answer is truncated.
func exchange(ctx context.Context, server, name string, qtype uint16, timeout time.Duration) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.SetEdns0(dns.DefaultMsgSize, false)
	c := &dns.Client{Net: "udp", Timeout: timeout}
	r, _, err := c.ExchangeContext(ctx, m, server)
	if err == nil && r.Truncated {
		c.Net = "tcp"
		r, _, err = c.ExchangeContext(ctx, m, server)
	}
	return r, err
}

func addrOf(rr dns.RR) (netip.Addr, bool) {
	switch rr := rr.(type) {
	case *dns.A:
		ip, ok := netip.AddrFromSlice(rr.A.To4())
		return ip, ok
	case *dns.AAAA:
		ip, ok := netip.AddrFromSlice(rr.AAAA)
		return ip, ok
	}
	return netip.Addr{}, false
}
