package resolver

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/test/bind"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
)

// KnotAlgorithms are Knot's names of the algorithms we sign with, by number.
var KnotAlgorithms = map[uint8]string{13: "ecdsap256sha256", 15: "ed25519"}

// StartKnot runs Knot DNS on a free loopback port serving zone from db (a zone file's text),
// signing its answers on line (mod-onlinesign, a combined signing key of algorithm made at start,
// NSEC "black lies" denial), and returns its address once the zone's DNSKEY is served. Knot is
// the reference the harness is proven against before our server signs. It stops when the test
// ends.
func StartKnot(t testing.TB, zone, db string, algorithm uint8) netip.AddrPort {
	t.Helper()
	addr := netip.MustParseAddrPort(freeport.Addr(t))
	knotd := tool(t, "knotd")
	dir := t.TempDir()
	zoneFile := filepath.Join(dir, "zone.db")
	if err := os.WriteFile(zoneFile, []byte(db), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "knot.conf")
	text := fmt.Sprintf(`server:
    listen: %[1]s@%[2]d
    rundir: %[3]s
log:
  - target: stderr
    any: info
database:
    storage: %[3]s
control:
    listen: %[3]s/knot.sock
policy:
  - id: lab
    algorithm: %[4]s
    single-type-signing: on
mod-onlinesign:
  - id: lab
    policy: lab
zone:
  - domain: %[5]s
    file: %[6]s
    journal-content: none
    zonefile-sync: -1
    module: mod-onlinesign/lab
`, addr.Addr(), addr.Port(), dir, KnotAlgorithms[algorithm], zone, zoneFile)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	bind.RunServer(t, dir, knotd, "-c", conf)
	DS(t, addr, zone) // waits for the keys
	return addr
}
