// Package bind runs Debian's DNS tools for tests that check our DNS server against real peers: BIND
// (named) as a secondary, or as a primary taking dynamic updates (the rfc2136 backend's), tsig-keygen,
// and the lookup of the tools themselves (`make test` installs them with hack/dns-tools.sh).
package bind

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Tool returns the path of a Debian DNS tool, failing the test when it is missing.
func Tool(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found: run `bash hack/dns-tools.sh` (installs bind9, bind9-utils, bind9-dnsutils, dnsperf)", name)
	}
	return path
}

// TSIGKey makes an hmac-sha256 key named name with tsig-keygen, as an operator would, and returns
// its secret.
func TSIGKey(t testing.TB, name string) string {
	t.Helper()
	return TSIGKeyWith(t, "hmac-sha256", name)
}

// TSIGKeyWith makes a key of the given algorithm (hmac-sha256, hmac-sha384, hmac-sha512) with
// tsig-keygen and returns its secret.
func TSIGKeyWith(t testing.TB, algorithm, name string) string {
	t.Helper()
	out, err := exec.Command(Tool(t, "tsig-keygen"), "-a", algorithm, name).Output()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`secret "([^"]+)"`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no secret in %s", out)
	}
	return string(m[1])
}

// Log collects named's output while it runs.
type Log struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Log) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Log) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Zone is one zone a BIND secondary carries, transferred with its own key.
type Zone struct {
	Name      string
	KeyName   string
	Algorithm string // default hmac-sha256
	Secret    string
}

// StartSecondary runs named on addr (a loopback address, see freeport.Addr) as a secondary of zone,
// transferring from primary with the hmac-sha256 TSIG key keyName. It is stopped when the test
// ends, and its log shown if the test failed or NAMED_LOG is set.
func StartSecondary(t testing.TB, addr, zone string, primary netip.AddrPort, keyName, secret string) *Log {
	t.Helper()
	return StartSecondaryZones(t, addr, primary, Zone{Name: zone, KeyName: keyName, Secret: secret})
}

// StartSecondaryZones runs named on addr as a secondary of several zones of primary, each
// transferred with its own key.
func StartSecondaryZones(t testing.TB, addr string, primary netip.AddrPort, zones ...Zone) *Log {
	t.Helper()
	named := Tool(t, "named")
	dir := t.TempDir()
	listen := netip.MustParseAddrPort(addr)
	var conf strings.Builder
	conf.WriteString(Options(dir, listen.Port()))
	keys := map[string]bool{}
	for _, z := range zones {
		alg := z.Algorithm
		if alg == "" {
			alg = "hmac-sha256"
		}
		if !keys[z.KeyName] {
			keys[z.KeyName] = true
			fmt.Fprintf(&conf, "key \"%s\" { algorithm %s; secret \"%s\"; };\n", z.KeyName, alg, z.Secret)
		}
		fmt.Fprintf(&conf, `zone "%[1]s" {
	type secondary;
	primaries { %[2]s port %[3]d key "%[4]s"; };
	file "%[5]s/%[1]s.db";
};
`, z.Name, primary.Addr(), primary.Port(), z.KeyName, dir)
	}
	return Run(t, named, dir, conf.String())
}

// StartPrimary runs named on addr (on 127.0.0.1) as the primary of zone, loaded from db (a zone
// file's text), answering authoritatively and never recursing.
func StartPrimary(t testing.TB, addr, zone, db string) *Log {
	t.Helper()
	named := Tool(t, "named")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "primary.db"), []byte(db), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := Options(dir, netip.MustParseAddrPort(addr).Port()) + fmt.Sprintf("zone %q { type primary; file \"%s/primary.db\"; };\n", zone, dir)
	return Run(t, named, dir, conf)
}

// StartDynamicPrimary runs named on addr (on 127.0.0.1) as the primary of an empty zone (SOA and NS)
// that a new hmac-sha256 TSIG key keyName, made with tsig-keygen, may update (RFC 2136) and
// transfer; it returns the key's secret once the server answers for the zone.
func StartDynamicPrimary(t testing.TB, addr, zone, keyName string) (secret string) {
	t.Helper()
	named := Tool(t, "named")
	secret = TSIGKey(t, keyName)
	dir := t.TempDir()
	db := "$TTL 300\n@ SOA ns.example.net. hostmaster.example.net. 1 3600 600 86400 60\n@ NS ns.example.net.\n"
	if err := os.WriteFile(filepath.Join(dir, "zone.db"), []byte(db), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := Options(dir, netip.MustParseAddrPort(addr).Port()) + fmt.Sprintf(`key %[1]q { algorithm hmac-sha256; secret %[2]q; };
zone %[3]q { type primary; file "%[4]s/zone.db"; allow-transfer { key %[1]q; }; update-policy { grant %[1]q subdomain %[3]s.; }; };
`, keyName, secret, zone, dir)
	log := Run(t, named, dir, conf)
	// Serving once the zone's SOA is answered (dig's output holds "SOA" only then).
	dig := Tool(t, "dig")
	ap := netip.MustParseAddrPort(addr)
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := exec.Command(dig, "@"+ap.Addr().String(), "-p", fmt.Sprint(ap.Port()), "+tcp", "+short", "+tries=1", "+time=1", zone, "SOA").Output()
		if strings.Contains(string(out), "hostmaster.example.net.") {
			return secret
		}
		if time.Now().After(deadline) {
			t.Fatalf("named did not serve %s within 30 s:\n%s", zone, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Options is named.conf's options for a server in dir listening on 127.0.0.1:port, with no
// recursion, NOTIFY or control channel.
func Options(dir string, port uint16) string {
	return fmt.Sprintf(`options {
	directory "%[1]s";
	pid-file "%[1]s/named.pid";
	session-keyfile "%[1]s/session.key";
	listen-on port %[2]d { 127.0.0.1; };
	listen-on-v6 { none; };
	recursion no;
	notify no;
	dnssec-validation no;
};
controls { };
`, dir, port)
}

// Run writes conf as named.conf in dir and runs named with it in the foreground until the test
// ends (SIGTERM, then SIGKILL after 5 s); its output is returned and logged when the test failed
// or NAMED_LOG is set.
func Run(t testing.TB, named, dir, conf string) *Log {
	t.Helper()
	path := filepath.Join(dir, "named.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return RunServer(t, dir, named, "-c", path, "-g", "-n", "1")
}

// RunServer runs a DNS server's binary (path, with args, in dir) in the foreground until the test
// ends (SIGTERM, then SIGKILL after 5 s); its output is returned and logged when the test failed or
// NAMED_LOG is set. Knot DNS and PowerDNS run through it too.
func RunServer(t testing.TB, dir, path string, args ...string) *Log {
	t.Helper()
	log := &Log{}
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() || os.Getenv("NAMED_LOG") != "" {
			t.Logf("%s log:\n%s", filepath.Base(path), log)
		}
	})
	return log
}
