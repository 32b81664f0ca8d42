package main

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"

	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
)

// server is a command line of a server listening on the port it is given.
type server func(port int) (*exec.Cmd, error)

// corednsCommand runs CoreDNS's file plugin on the zone file; with keyFile (the base name of a key
// pair dnssec-keygen wrote) its dnssec plugin signs answers on line with that key.
func corednsCommand(dir, bin, zoneFile, keyFile string) server {
	return func(port int) (*exec.Cmd, error) {
		corefile := filepath.Join(dir, "Corefile")
		signing := ""
		if keyFile != "" {
			signing = fmt.Sprintf("  dnssec {\n    key file %s\n  }\n", keyFile)
		}
		conf := fmt.Sprintf("%s:%d {\n  bind 127.0.0.1\n  file %s\n%s}\n", zoneName, port, zoneFile, signing)
		if err := os.WriteFile(corefile, []byte(conf), 0o600); err != nil {
			return nil, err
		}
		return exec.Command(bin, "-conf", corefile, "-quiet"), nil
	}
}

func namedCommand(dir, zoneFile string) server {
	return func(port int) (*exec.Cmd, error) {
		conf := filepath.Join(dir, "named.conf")
		text := fmt.Sprintf(`options {
  directory "%s";
  listen-on port %d { 127.0.0.1; };
  listen-on-v6 { none; };
  recursion no;
  pid-file none;
};
controls { };
zone "%s" { type primary; file "%s"; };
`, dir, port, zoneName, zoneFile)
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			return nil, err
		}
		return exec.Command("named", "-c", conf, "-g"), nil
	}
}

// knotSigning is how Knot DNS serves the zone: unsigned, signing each answer as it goes out
// (mod-onlinesign), or signing the zone once at load and serving the stored signatures
// (dnssec-signing), its usual way.
type knotSigning string

const (
	knotUnsigned  knotSigning = ""
	knotOnline    knotSigning = "online"
	knotPresigned knotSigning = "presigned"
)

// knotCommand runs Knot DNS on the zone file: its default of one UDP worker per CPU, no journal, no
// control socket beyond the run directory, logging warnings only. Signed, it signs with a combined
// signing key of algorithm 13 it makes at start, in a key store of its own.
func knotCommand(dir, zoneFile string, signing knotSigning) server {
	return func(port int) (*exec.Cmd, error) {
		kdir := filepath.Join(dir, "knot"+string(signing))
		if err := os.MkdirAll(kdir, 0o700); err != nil {
			return nil, err
		}
		policy, module := "", ""
		if signing != knotUnsigned {
			policy = `policy:
  - id: bench
    algorithm: ecdsap256sha256
    single-type-signing: on
mod-onlinesign:
  - id: bench
    policy: bench
`
		}
		switch signing {
		case knotOnline:
			module = "    module: mod-onlinesign/bench\n"
		case knotPresigned:
			module = "    dnssec-signing: on\n    dnssec-policy: bench\n"
		}
		conf := filepath.Join(kdir, "knot.conf")
		text := fmt.Sprintf(`server:
    listen: 127.0.0.1@%d
    rundir: %[2]s
log:
  - target: stderr
    any: warning
database:
    storage: %[2]s
control:
    listen: %[2]s/knot.sock
%[5]szone:
  - domain: %[3]s
    file: %[4]s
    journal-content: none
    zonefile-sync: -1
    zonefile-load: whole
%[6]s`, port, kdir, zoneName, zoneFile, policy, module)
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			return nil, err
		}
		return exec.Command("knotd", "-c", conf), nil
	}
}

// nsdCommand runs NSD on the zone file with one server process per CPU (its default is one), so it
// uses the cores the others use.
func nsdCommand(dir, zoneFile string) server {
	return func(port int) (*exec.Cmd, error) {
		ndir := filepath.Join(dir, "nsd")
		if err := os.MkdirAll(ndir, 0o700); err != nil {
			return nil, err
		}
		conf := filepath.Join(ndir, "nsd.conf")
		text := fmt.Sprintf(`server:
    ip-address: 127.0.0.1@%d
    do-ip6: no
    server-count: %d
    reuseport: yes
    username: ""
    chroot: ""
    zonesdir: "%[3]s"
    database: ""
    pidfile: "%[3]s/nsd.pid"
    xfrdfile: "%[3]s/xfrd.state"
    zonelistfile: "%[3]s/zone.list"
    verbosity: 0
remote-control:
    control-enable: no
zone:
    name: %[4]s
    zonefile: "%[5]s"
`, port, runtime.NumCPU(), ndir, zoneName, zoneFile)
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			return nil, err
		}
		return exec.Command("nsd", "-d", "-c", conf), nil
	}
}

// coreDNSKey makes the key CoreDNS signs with as its operator would, with dnssec-keygen (ECDSA P-256,
// the SEP flag set, so the one key signs everything), and returns its files' base name.
func coreDNSKey(dir string) (string, error) {
	kdir := filepath.Join(dir, "coredns-keys")
	if err := os.MkdirAll(kdir, 0o700); err != nil {
		return "", err
	}
	out, err := exec.Command("dnssec-keygen", "-K", kdir, "-a", "ECDSAP256SHA256", "-f", "KSK", "-n", "ZONE", zoneName).Output()
	if err != nil {
		return "", fmt.Errorf("dnssec-keygen: %w", err)
	}
	return filepath.Join(kdir, strings.TrimSpace(string(out))), nil
}

// version returns the version a server prints, e.g. "9.18.49" from "BIND 9.18.49-1~deb12u3-Debian".
func version(bin string, flag string) string {
	out, err := exec.Command(bin, flag).CombinedOutput()
	if err != nil {
		return ""
	}
	m := regexp.MustCompile(`\d+\.\d+\.\d+`).Find(out)
	return string(m)
}

// withProcess starts a server process on a free loopback port, waits until it answers, measures, and
// stops it.
func withProcess(dir string, start server, run func(netip.AddrPort) (measure, error)) (measure, error) {
	free, err := freeport.Pick()
	if err != nil {
		return measure{}, err
	}
	addr := netip.MustParseAddrPort(free)
	cmd, err := start(int(addr.Port()))
	if err != nil {
		return measure{}, err
	}
	log, err := os.Create(filepath.Join(dir, filepath.Base(cmd.Path)+".log"))
	if err != nil {
		return measure{}, err
	}
	defer func() { _ = log.Close() }() // a log nobody reads unless the run failed
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group, so the server's children (NSD forks its servers) stop with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return measure{}, err
	}
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}()
	if err := waitAnswers(addr, "h1."+zoneName); err != nil {
		out, _ := os.ReadFile(log.Name())
		return measure{}, fmt.Errorf("%w (log: %s)", err, out)
	}
	return run(addr)
}
