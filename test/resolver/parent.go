package resolver

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/test/bind"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
)

// Delegation is a child zone a parent delegates: its name server (in the child, so the parent
// holds glue), and the DS records the child's operator handed in.
type Delegation struct {
	Zone    string
	NS      string
	Address netip.Addr
	DS      []dns.RR
}

// SignParent makes a parent zone as its operator would: a key made with dnssec-keygen
// (ECDSAP256SHA256, the SEP flag set, signing the whole zone), the zone's own name server ns1 at
// nsAddress, each child's NS, glue and DS, signed with dnssec-signzone. It returns the signed zone
// file's text and the DS of the parent's key: the trust anchor of a resolver that validates down
// from the parent.
func SignParent(t testing.TB, zone string, nsAddress netip.Addr, children ...Delegation) (signed string, anchor []dns.RR) {
	t.Helper()
	zone = dns.Fqdn(zone)
	dir := t.TempDir()
	out, err := exec.Command(tool(t, "dnssec-keygen"), "-K", dir, "-a", "ECDSAP256SHA256", "-f", "KSK", "-n", "ZONE", zone).Output()
	if err != nil {
		t.Fatalf("dnssec-keygen: %v", err)
	}
	keyFile := filepath.Join(dir, strings.TrimSpace(string(out))+".key")
	f, err := os.Open(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	rr, err := dns.ReadRR(f, keyFile)
	_ = f.Close()
	if err != nil {
		t.Fatalf("reading %s: %v", keyFile, err)
	}
	key, ok := rr.(*dns.DNSKEY)
	if !ok {
		t.Fatalf("%s holds a %T, not a DNSKEY", keyFile, rr)
	}
	var db strings.Builder
	fmt.Fprintf(&db, "$TTL 300\n%[1]s SOA ns1.%[1]s hostmaster.%[1]s 1 3600 600 86400 60\n%[1]s NS ns1.%[1]s\nns1.%[1]s A %[2]s\n", zone, nsAddress)
	for _, c := range children {
		child, ns := dns.Fqdn(c.Zone), dns.Fqdn(c.NS)
		fmt.Fprintf(&db, "%s NS %s\n%s A %s\n", child, ns, ns, c.Address)
		for _, ds := range c.DS {
			d := dns.Copy(ds)
			d.Header().Ttl = 300
			fmt.Fprintln(&db, d.String())
		}
	}
	unsigned := filepath.Join(dir, "zone.db")
	if err := os.WriteFile(unsigned, []byte(db.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	signedFile := filepath.Join(dir, "zone.db.signed")
	// -S finds the key in -K and publishes it; -z lets the key with the SEP flag sign every set.
	// -d: its dsset file goes to the scratch directory, not the test's working directory.
	if out, err := exec.Command(tool(t, "dnssec-signzone"), "-K", dir, "-d", dir, "-S", "-z", "-o", zone, "-f", signedFile, unsigned).CombinedOutput(); err != nil {
		t.Fatalf("dnssec-signzone: %v\n%s", err, out)
	}
	b, err := os.ReadFile(signedFile)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), []dns.RR{key.ToDS(dns.SHA256)}
}

// ParentAddress is the address the parent's zone gives its own name server (ns1.<parent>), never
// bound: resolvers reach the parent through their forward and stub zones, and Zonemaster through
// NameServer.Address.
var ParentAddress = netip.MustParseAddr("127.0.0.11")

// StartParent runs BIND as the authoritative server of a parent zone signed by SignParent, on a
// free loopback port, and returns its address and the parent's trust anchor once it serves the
// zone. It stops when the test ends.
func StartParent(t testing.TB, zone string, children ...Delegation) (netip.AddrPort, []dns.RR) {
	t.Helper()
	addr := netip.MustParseAddrPort(freeport.Addr(t))
	signed, anchor := SignParent(t, zone, ParentAddress, children...)
	log := bind.StartPrimary(t, addr.String(), dns.Fqdn(zone), signed)
	waitAnswers(t, addr, "version.bind", log)
	return addr, anchor
}
