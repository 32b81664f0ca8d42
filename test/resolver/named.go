package resolver

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/test/bind"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
)

// StartBIND runs named as a validating resolver on a free loopback port, forwarding each zone of
// c to its server, trusting c.Anchors, and returns its address once it answers. Tests ask only for
// names in those zones, so nothing they ask leaves the machine (named still primes the root at
// start, which fails harmlessly off line). It stops when the test ends.
func StartBIND(t testing.TB, c Config) netip.AddrPort {
	t.Helper()
	named := tool(t, "named")
	dir := t.TempDir()
	addr := netip.MustParseAddrPort(freeport.Addr(t))
	var conf strings.Builder
	fmt.Fprintf(&conf, `options {
	directory "%[1]s";
	pid-file "%[1]s/named.pid";
	session-keyfile "%[1]s/session.key";
	managed-keys-directory "%[1]s";
	listen-on port %[2]d { 127.0.0.1; };
	listen-on-v6 { none; };
	recursion yes;
	allow-query { 127.0.0.1; };
	allow-recursion { 127.0.0.1; };
	dnssec-validation yes;
	notify no;
	qname-minimization off;
	servfail-ttl 0;
	max-ncache-ttl 0;
};
controls { };
logging { category dnssec { default_stderr; }; };
`, dir, addr.Port())
	conf.WriteString(trustAnchors(c.Anchors))
	for _, z := range c.Zones {
		fmt.Fprintf(&conf, "zone %q { type forward; forward only; forwarders { %s port %d; }; };\n", z.Name, z.Server.Addr(), z.Server.Port())
	}
	log := bind.Run(t, named, dir, conf.String())
	waitAnswers(t, addr, "version.bind", log)
	return addr
}
