//go:build integration

package rfc2136

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/test/bind"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
)

// The servers the backend is tested against, each started from Debian's package on a loopback
// port with zones the test's TSIG key may update and transfer.

// keyName is the name of the TSIG key every test server trusts.
const keyName = "dnspolicy-test"

// server is one running authoritative server.
type server struct {
	kind string
	// addr is host:port on 127.0.0.1.
	addr string
	// secret is the base64 secret of the key keyName, made by tsig-keygen; algorithm its algorithm.
	tsigSecret, algorithm string
	// zones are the zones the key may update, each used by one test at most.
	zones []string
	next  atomic.Int64
	// human is the zone the key may not update (transfer only), holding human.<zone> A 192.0.2.99.
	human string
	// tlsAddr is where BIND answers DNS over TLS with a certificate for 127.0.0.1 signed by caPEM
	// ("" on the other servers).
	tlsAddr, caPEM string
	log            func() string
}

// zone hands out the next unused zone.
func (s *server) zone(t *testing.T) string {
	t.Helper()
	i := int(s.next.Add(1)) - 1
	if i >= len(s.zones) {
		t.Fatalf("%s: all %d zones are used; start the server with more", s.kind, len(s.zones))
	}
	return s.zones[i]
}

// tool returns the path of a Debian tool the tests run, failing (never skipping) when it is missing.
func tool(t testing.TB, name string) string {
	t.Helper()
	if path, err := exec.LookPath(name); err == nil {
		return path
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		if path := filepath.Join(dir, name); fileExists(path) {
			return path
		}
	}
	t.Fatalf("%s not found: run `make dns-tools` (installs bind9, bind9-utils, knot, pdns-server, pdns-backend-sqlite3)", name)
	return ""
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// zoneNames returns n zone names of one server kind.
func zoneNames(kind string, n int) []string {
	zones := make([]string, n)
	for i := range zones {
		zones[i] = fmt.Sprintf("z%d.%s.rfc2136.test", i, kind)
	}
	return zones
}

// zoneFile is the text of a fresh zone: SOA and NS only (the NS names a host outside the zone, so
// the zone needs no glue), plus extra lines.
func zoneFile(zone string, extra ...string) string {
	return fmt.Sprintf("$ORIGIN %[1]s.\n$TTL 300\n@ SOA ns.example.net. hostmaster.example.net. 1 3600 600 86400 60\n@ NS ns.example.net.\n%[2]s\n",
		zone, strings.Join(extra, "\n"))
}

// protectedLabel is a name in every writable zone of BIND the key may not update (update-policy
// deny): an update that touches it is refused whole.
const protectedLabel = "protected"

// refusedRecord is a record the server's policy lets the key create in no writable zone, or nil:
// on BIND one at the protected name, on Knot DNS one of a type the acl's update-type leaves out.
// PowerDNS has no per-record policy but a Lua script, and it drops the records a script refuses
// while answering NOERROR (docs/providers/rfc2136.md), so it has no refused update to test.
func (s *server) refusedRecord(zone string) *v1alpha1.Endpoint {
	switch s.kind {
	case "bind":
		return v1alpha1.NewEndpoint(protectedLabel+"."+zone, v1alpha1.RecordTypeA, 60, "10.0.0.11")
	case "knot":
		return v1alpha1.NewEndpoint("caa."+zone, "CAA", 60, `0 issue "ca.example.net"`)
	}
	return nil
}

// humanRecord is the record a person wrote into the zone file of the read-only zone and of every
// writable zone, which no test may see changed.
const humanRecord = "human 300 A 192.0.2.99"

// startBIND runs named as the primary of n zones the key may update and transfer, and of a zone it
// may only transfer.
func startBIND(t *testing.T, n int) *server {
	t.Helper()
	named := tool(t, "named")
	s := &server{kind: "bind", addr: freeport.Addr(t), algorithm: "hmac-sha256", zones: zoneNames("bind", n)}
	s.human = "readonly.bind.rfc2136.test"
	s.tsigSecret = bind.TSIGKey(t, keyName)
	dir := t.TempDir()
	s.tlsAddr = freeport.Addr(t)
	var certFile, keyFile string
	s.caPEM, certFile, keyFile = selfSigned(t, dir)
	var conf strings.Builder
	fmt.Fprintf(&conf, `tls local { cert-file "%[5]s"; key-file "%[6]s"; };
options {
	directory "%[1]s";
	pid-file "%[1]s/named.pid";
	session-keyfile "%[1]s/session.key";
	listen-on port %[2]d { 127.0.0.1; };
	listen-on port %[7]d tls local { 127.0.0.1; };
	listen-on-v6 { none; };
	recursion no;
	notify no;
	dnssec-validation no;
};
controls { };
key "%[3]s" { algorithm hmac-sha256; secret "%[4]s"; };
`, dir, netip.MustParseAddrPort(s.addr).Port(), keyName, s.tsigSecret, certFile, keyFile, netip.MustParseAddrPort(s.tlsAddr).Port())
	for _, z := range append([]string{s.human}, s.zones...) {
		writeFile(t, filepath.Join(dir, z+".db"), zoneFile(z, humanRecord))
		update := fmt.Sprintf(`update-policy { deny "%[1]s" name %[3]s.%[2]s.; grant "%[1]s" subdomain %[2]s.; };`, keyName, z, protectedLabel)
		transfer := fmt.Sprintf(`key "%s";`, keyName)
		if z == s.human {
			// Read-only, and transferred by address too (RFC2136_TSIG_AXFR=false).
			update, transfer = "", transfer+" 127.0.0.1;"
		}
		fmt.Fprintf(&conf, "zone %q { type primary; file \"%s/%s.db\"; allow-transfer { %s }; %s };\n", z, dir, z, transfer, update)
	}
	log := bind.Run(t, named, dir, conf.String())
	s.log = log.String
	waitServes(t, s, log.String)
	return s
}

// startKnot runs knotd as the primary of n zones the key may update and transfer (an acl with both
// actions), and of a zone it may only transfer.
func startKnot(t *testing.T, n int) *server {
	t.Helper()
	knotd := tool(t, "knotd")
	s := &server{kind: "knot", addr: freeport.Addr(t), algorithm: "hmac-sha256", zones: zoneNames("knot", n)}
	s.human = "readonly.knot.rfc2136.test"
	s.tsigSecret = bind.TSIGKey(t, keyName)
	dir := t.TempDir()
	ap := netip.MustParseAddrPort(s.addr)
	// knotd keeps its journal and timers here and does not create the directory.
	if err := os.Mkdir(filepath.Join(dir, "db"), 0o700); err != nil {
		t.Fatal(err)
	}
	var conf strings.Builder
	fmt.Fprintf(&conf, `server:
    rundir: "%[1]s"
    listen: %[2]s@%[3]d
database:
    storage: "%[1]s/db"
log:
  - target: stderr
    any: info
key:
  - id: %[4]s
    algorithm: hmac-sha256
    secret: %[5]s
acl:
  - id: update
    key: %[4]s
    action: [transfer, update]
    update-type: [A, AAAA, CNAME, TXT, NS, MX, SRV]
  - id: transfer
    key: %[4]s
    action: transfer
template:
  - id: default
    storage: "%[1]s"
    zonefile-sync: -1
    zonefile-load: whole
    journal-content: changes
zone:
`, dir, ap.Addr(), ap.Port(), keyName, s.tsigSecret)
	for _, z := range append([]string{s.human}, s.zones...) {
		writeFile(t, filepath.Join(dir, z+".zone"), zoneFile(z, humanRecord))
		acl := "update"
		if z == s.human {
			acl = "transfer"
		}
		fmt.Fprintf(&conf, "  - domain: %s\n    file: %s.zone\n    acl: %s\n", z, z, acl)
	}
	path := filepath.Join(dir, "knot.conf")
	writeFile(t, path, conf.String())
	log := bind.RunServer(t, dir, knotd, "-c", path)
	s.log = log.String
	waitServes(t, s, log.String)
	return s
}

// startPowerDNS runs pdns_server with the gsqlite3 backend and RFC 2136 on (dnsupdate=yes, updates
// from 127.0.0.1), the key imported and allowed to update (TSIG-ALLOW-DNSUPDATE) and transfer
// (TSIG-ALLOW-AXFR) n zones, and only to transfer one more.
func startPowerDNS(t *testing.T, n int) *server {
	t.Helper()
	pdns, pdnsutil, sqlite := tool(t, "pdns_server"), tool(t, "pdnsutil"), tool(t, "sqlite3")
	s := &server{kind: "powerdns", addr: freeport.Addr(t), algorithm: "hmac-sha256", zones: zoneNames("powerdns", n)}
	s.human = "readonly.powerdns.rfc2136.test"
	s.tsigSecret = bind.TSIGKey(t, keyName)
	dir := t.TempDir()
	ap := netip.MustParseAddrPort(s.addr)
	db := filepath.Join(dir, "pdns.sqlite3")
	schema := ""
	for _, p := range []string{"/usr/share/doc/pdns-backend-sqlite3/schema.sqlite3.sql", "/usr/share/pdns-backend-sqlite3/schema/schema.sqlite3.sql"} {
		if fileExists(p) {
			schema = p
			break
		}
	}
	if schema == "" {
		t.Fatal("the gsqlite3 schema is not installed: run `make dns-tools` (installs pdns-backend-sqlite3)")
	}
	sql, err := os.ReadFile(schema)
	if err != nil {
		t.Fatal(err)
	}
	command(t, exec.Command(sqlite, db), string(sql))
	writeFile(t, filepath.Join(dir, "pdns.conf"), fmt.Sprintf(`launch=gsqlite3
gsqlite3-database=%[1]s
local-address=%[2]s
local-port=%[3]d
socket-dir=%[4]s
dnsupdate=yes
allow-dnsupdate-from=127.0.0.1/32
disable-axfr=no
allow-axfr-ips=127.0.0.1/32
guardian=no
daemon=no
disable-syslog=yes
write-pid=no
webserver=no
api=no
loglevel=6
`, db, ap.Addr(), ap.Port(), dir))
	util := func(args ...string) {
		command(t, exec.Command(pdnsutil, append([]string{"--config-dir=" + dir}, args...)...), "")
	}
	util("import-tsig-key", keyName, "hmac-sha256", s.tsigSecret)
	// Without TSIG-ALLOW-DNSUPDATE a zone takes unsigned updates from allow-dnsupdate-from, so the
	// read-only zone names another key.
	util("import-tsig-key", "someone-else", "hmac-sha256", bind.TSIGKey(t, "someone-else"))
	for _, z := range append([]string{s.human}, s.zones...) {
		path := filepath.Join(dir, z+".zone")
		writeFile(t, path, zoneFile(z, humanRecord))
		util("load-zone", z, path)
		util("set-meta", z, "TSIG-ALLOW-AXFR", keyName)
		if z != s.human {
			util("set-meta", z, "TSIG-ALLOW-DNSUPDATE", keyName)
		} else {
			util("set-meta", z, "TSIG-ALLOW-DNSUPDATE", "someone-else")
		}
	}
	log := bind.RunServer(t, dir, pdns, "--config-dir="+dir)
	s.log = log.String
	waitServes(t, s, log.String)
	return s
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// command runs a setup command with stdin, failing the test with its output.
func command(t *testing.T, cmd *exec.Cmd, stdin string) {
	t.Helper()
	cmd.Stdin = strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
}

// waitServes waits until the server answers authoritatively for its last zone over TCP (the last
// one is loaded last), or fails after 30 s with the server's log.
func waitServes(t *testing.T, s *server, log func() string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(s.zones[len(s.zones)-1]), dns.TypeSOA)
	c := &dns.Client{Net: "tcp", Timeout: time.Second}
	for {
		r, _, err := c.ExchangeContext(ctx, q, s.addr)
		if err == nil && r.Rcode == dns.RcodeSuccess && r.Authoritative {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s on %s did not serve %s within 30 s (last: %v)\n%s", s.kind, s.addr, s.zones[len(s.zones)-1], err, log())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key into dir, and returns the
// certificate as PEM (the CA a Secret's RFC2136_TLS_CA trusts) and the two paths.
func selfSigned(t *testing.T, dir string) (caPEM, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	caPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeFile(t, certFile, caPEM)
	writeFile(t, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})))
	return caPEM, certFile, keyFile
}
