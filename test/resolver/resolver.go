// Package resolver runs real validating resolvers and DNSSEC checkers against an authoritative
// server on loopback, for tests that prove signed answers the way the world will see them: BIND's
// named and Unbound as validating resolvers with a trust anchor and the test's zones forwarded to
// their servers' ports, delv, a signed parent zone holding the child's DS (BIND), Zonemaster, and
// a proxy that damages answers on their way so a test can see validation fail. Nothing here knows
// which authoritative server it points at: the harness's own tests run it against Knot DNS.
package resolver

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/test/bind"
)

// Zone is a zone a resolver sends to a given server instead of finding it from the root.
type Zone struct {
	Name   string
	Server netip.AddrPort
}

// Config is what a validating resolver knows: where trust starts, and where the test's zones are.
type Config struct {
	// Anchors are the DNSKEY (SEP) or DS records of the zones trusted without a parent's word.
	Anchors []dns.RR
	// Zones are forwarded to their servers.
	Zones []Zone
	// ECS passes a client's EDNS Client Subnet on to the zones' servers (Unbound's subnetcache
	// module; BIND 9.18 has no such thing).
	ECS bool
}

// tool is bind.Tool: a missing tool fails the test (hack/dns-tools.sh installs them all).
func tool(t testing.TB, name string) string {
	t.Helper()
	return bind.Tool(t, name)
}

// waitAnswers waits until server answers a CHAOS TXT query for name (version.bind, version.server):
// it is up, whatever zones it has loaded.
func waitAnswers(t testing.TB, server netip.AddrPort, name string, log fmt.Stringer) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), dns.TypeTXT)
		m.Question[0].Qclass = dns.ClassCHAOS
		if _, _, err := (&dns.Client{Timeout: 500 * time.Millisecond}).Exchange(m, server.String()); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer within 30 s:\n%s", server, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// DS waits until server serves zone's DNSKEY set with a SEP key and returns the DS records of its
// SEP keys (SHA-256), as the parent would hold them.
func DS(t testing.TB, server netip.AddrPort, zone string) []dns.RR {
	t.Helper()
	var keys []*dns.DNSKEY
	Eventually(t, 30*time.Second, func() error {
		var err error
		keys, err = sepKeys(server, zone)
		return err
	})
	var ds []dns.RR
	for _, k := range keys {
		ds = append(ds, k.ToDS(dns.SHA256))
	}
	return ds
}

// anchorClause is one trust anchor in named.conf's trust-anchors syntax (delv reads it too).
func anchorClause(rr dns.RR) string {
	switch a := rr.(type) {
	case *dns.DNSKEY:
		return fmt.Sprintf("\t%q static-key %d %d %d %q;\n", a.Hdr.Name, a.Flags, a.Protocol, a.Algorithm, a.PublicKey)
	case *dns.DS:
		return fmt.Sprintf("\t%q static-ds %d %d %d %q;\n", a.Hdr.Name, a.KeyTag, a.Algorithm, a.DigestType, strings.ToUpper(a.Digest))
	}
	panic(fmt.Sprintf("resolver: a trust anchor is a DNSKEY or a DS, not %T", rr))
}

func trustAnchors(anchors []dns.RR) string {
	var b strings.Builder
	b.WriteString("trust-anchors {\n")
	for _, rr := range anchors {
		b.WriteString(anchorClause(rr))
	}
	b.WriteString("};\n")
	return b.String()
}

// Query asks server (a resolver) for name and type with the DO bit, as a stub resolver that wants
// to see the AD bit does, and returns the answer. ecs, when valid, is sent as an EDNS Client Subnet
// (/24) option, as a forwarder or a client with `dig +subnet` sends it.
func Query(t testing.TB, server netip.AddrPort, name string, qtype uint16, ecs netip.Addr) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.SetEdns0(1232, true)
	m.AuthenticatedData = true
	if ecs.IsValid() {
		m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: ecs.AsSlice()})
	}
	var last error
	for range 3 {
		r, _, err := (&dns.Client{Net: "tcp", Timeout: 10 * time.Second}).Exchange(m, server.String())
		if err == nil {
			return r
		}
		last = err
	}
	t.Fatalf("query %s %s at %s: %v", name, dns.TypeToString[qtype], server, last)
	return nil
}

// sepKeys returns the DNSKEYs with the SEP flag that server serves at zone's apex: what a parent's
// DS, or a trust anchor, points at.
func sepKeys(server netip.AddrPort, zone string) ([]*dns.DNSKEY, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(zone), dns.TypeDNSKEY)
	m.SetEdns0(4096, true)
	r, _, err := (&dns.Client{Net: "tcp", Timeout: 5 * time.Second}).Exchange(m, server.String())
	if err != nil {
		return nil, fmt.Errorf("DNSKEY %s at %s: %w", zone, server, err)
	}
	var keys []*dns.DNSKEY
	for _, rr := range r.Answer {
		if k, ok := rr.(*dns.DNSKEY); ok && k.Flags&dns.SEP != 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s at %s serves no SEP DNSKEY:\n%v", zone, server, r)
	}
	return keys, nil
}

// Eventually polls check until it returns nil or the deadline passes, then fails t with its last
// error: resolvers and servers start asynchronously.
func Eventually(t testing.TB, within time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("within %s: %v", within, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// AnswersA asks the nameserver at addr for the A records of host, as a stub resolver would, and
// returns the addresses sorted and joined by "," ("" for none), or "query failed: " and the error.
func AnswersA(addr, host string) string {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(host), dns.TypeA)
	in, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, addr)
	if err != nil {
		return "query failed: " + err.Error()
	}
	return AddressesOf(in)
}

// AddressesOf is the A addresses of an answer, sorted and joined by "," ("" for none).
func AddressesOf(r *dns.Msg) string {
	var ips []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			ips = append(ips, a.A.String())
		}
	}
	slices.Sort(ips)
	return strings.Join(ips, ",")
}
