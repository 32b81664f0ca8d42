package resolver

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Zonemaster always sends its queries to port 53, and the servers a test starts listen on free high
// ports on 127.0.0.1: zonemaster.pl runs zonemaster-cli unchanged except that a resolver object
// made for one of the addresses in ZONEMASTER_PORTS talks to the address and port given there
// instead. Each server is named to Zonemaster (and in glue) by an address of its own that nothing
// binds (127.0.0.10 and up), so two servers on 127.0.0.1 are two name servers to it, as they
// would be on the Internet.
//
//go:embed zonemaster.pl
var zonemasterShim []byte

// NameServer is one of a zone's name servers as Zonemaster sees it: its name and Address as the
// zone data (glue, hints) give them, and where it really listens.
type NameServer struct {
	Name    string
	Address netip.Addr
	Server  netip.AddrPort
}

// Check is a Zonemaster run over one zone.
type Check struct {
	Zone string
	// NameServers are the zone's servers, as the parent's glue names them.
	NameServers []NameServer
	// Root is the server Zonemaster starts from (--hints): the parent on loopback, standing in for
	// the root. Zonemaster finds the delegation, its glue and the DS there, as it would on the
	// Internet.
	Root NameServer
	// Tests are the modules or module/testcase names to run (--test); empty runs them all.
	Tests []string
}

// Message is one thing Zonemaster said, raw: its level (CRITICAL, ERROR, WARNING, NOTICE, INFO),
// module, test case, tag and arguments.
type Message struct {
	Level    string         `json:"level"`
	Module   string         `json:"module"`
	Testcase string         `json:"testcase"`
	Tag      string         `json:"tag"`
	Args     map[string]any `json:"args"`
}

func (m Message) String() string {
	return fmt.Sprintf("%s %s/%s %s %v", m.Level, m.Module, m.Testcase, m.Tag, m.Args)
}

// Zonemaster runs zonemaster-cli for c at level INFO and returns everything it reported.
func Zonemaster(t testing.TB, c Check) []Message {
	t.Helper()
	perl := tool(t, "perl")
	tool(t, "zonemaster-cli")
	dir := t.TempDir()
	shim := filepath.Join(dir, "zonemaster.pl")
	if err := os.WriteFile(shim, zonemasterShim, 0o600); err != nil {
		t.Fatal(err)
	}
	var ports []string
	fake := func(s NameServer) string {
		ports = append(ports, fmt.Sprintf("%s=%s#%d", s.Address, s.Server.Addr(), s.Server.Port()))
		return s.Address.String()
	}
	args := []string{shim, "--json", "--raw", "--level", "INFO", "--no-progress", "--no-ipv6"}
	for _, ns := range c.NameServers {
		fake(ns)
	}
	hints := filepath.Join(dir, "hints")
	if err := os.WriteFile(hints, []byte(fmt.Sprintf(". 3600000 NS %[1]s\n%[1]s 3600000 A %[2]s\n", dns.Fqdn(c.Root.Name), fake(c.Root))), 0o600); err != nil {
		t.Fatal(err)
	}
	args = append(args, "--hints", hints)
	for _, test := range c.Tests {
		args = append(args, "--test", test)
	}
	args = append(args, dns.Fqdn(c.Zone))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, perl, args...)
	// Its home holds no ~/.zonemaster/cli.args to add options behind the test's back.
	cmd.Env = append(os.Environ(), "HOME="+dir, "ZONEMASTER_PORTS="+strings.Join(ports, ","))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("zonemaster-cli %v: %v\n%s\n%s", args[1:], err, out, stderr.String())
	}
	var msgs []Message
	if err := json.Unmarshal(out, &msgs); err != nil {
		t.Fatalf("zonemaster-cli's JSON: %v\n%s", err, out)
	}
	return msgs
}

// Worse returns the messages at level or above (CRITICAL > ERROR > WARNING > NOTICE > INFO).
func Worse(msgs []Message, level string) []Message {
	rank := map[string]int{"DEBUG": 0, "INFO": 1, "NOTICE": 2, "WARNING": 3, "ERROR": 4, "CRITICAL": 5}
	var out []Message
	for _, m := range msgs {
		if rank[m.Level] >= rank[level] {
			out = append(out, m)
		}
	}
	return out
}
