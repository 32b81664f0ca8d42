package resolver

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/test/bind"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
)

// StartUnbound runs Unbound as a validating resolver on a free loopback port, with a stub zone per
// zone of c (queried without recursion, as it queries the Internet's servers), trusting c.Anchors,
// and returns its address once it answers. With c.ECS it passes a client's subnet on to the zones'
// servers. It stops when the test ends.
func StartUnbound(t testing.TB, c Config) netip.AddrPort {
	t.Helper()
	unbound := tool(t, "unbound")
	dir := t.TempDir()
	addr := netip.MustParseAddrPort(freeport.Addr(t))
	modules := "validator iterator"
	var ecs strings.Builder
	if c.ECS {
		modules = "subnetcache " + modules
		seen := map[netip.Addr]bool{}
		for _, z := range c.Zones {
			if !seen[z.Server.Addr()] {
				seen[z.Server.Addr()] = true
				fmt.Fprintf(&ecs, "\tsend-client-subnet: %s\n", z.Server.Addr())
			}
		}
		ecs.WriteString("\tmax-client-subnet-ipv4: 24\n")
	}
	var conf strings.Builder
	fmt.Fprintf(&conf, `server:
	interface: 127.0.0.1@%[2]d
	port: %[2]d
	do-ip6: no
	do-daemonize: no
	username: ""
	chroot: ""
	directory: "%[1]s"
	pidfile: "%[1]s/unbound.pid"
	use-syslog: no
	logfile: ""
	verbosity: 1
	val-log-level: 2
	access-control: 127.0.0.0/8 allow
	do-not-query-localhost: no
	qname-minimisation: no
	cache-max-negative-ttl: 0
	infra-keep-probing: yes
	hide-version: no
	module-config: "%[3]s"
%[4]s`, dir, addr.Port(), modules, ecs.String())
	for _, a := range c.Anchors {
		fmt.Fprintf(&conf, "\ttrust-anchor: \"%s\"\n", strings.Join(strings.Fields(a.String()), " "))
	}
	conf.WriteString("remote-control:\n\tcontrol-enable: no\n")
	for _, z := range c.Zones {
		fmt.Fprintf(&conf, "stub-zone:\n\tname: %q\n\tstub-addr: %s@%d\n", z.Name, z.Server.Addr(), z.Server.Port())
	}
	path := filepath.Join(dir, "unbound.conf")
	if err := os.WriteFile(path, []byte(conf.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	log := bind.RunServer(t, dir, unbound, "-d", "-c", path)
	waitAnswers(t, addr, "version.server", log)
	return addr
}
