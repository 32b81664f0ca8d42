//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/test/bind"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
)

// `make run` pointed at a BIND of the user's by the RFC2136_* variables (the keys of a
// kuadrant.io/rfc2136 Secret) publishes the demo's two loadbalanced Gateways there, as one A set
// (an RFC 2136 server answers every client alike), and prints the dig command that shows it;
// Debian's dig, run as printed, gets both addresses.
func TestMakeRunPublishesIntoBIND(t *testing.T) {
	dig := bind.Tool(t, "dig")
	const zone = "demo.internal"
	addr := freeport.Addr(t)
	secret := bind.StartDynamicPrimary(t, addr, zone, "dnspolicy")
	ap := netip.MustParseAddrPort(addr)
	run := startMakeRun(t, "RFC2136_HOST="+ap.Addr().String(), "RFC2136_PORT="+strings.TrimPrefix(addr, ap.Addr().String()+":"),
		"RFC2136_ZONE="+zone, "RFC2136_TSIG_KEYNAME=dnspolicy", "RFC2136_TSIG_SECRET="+secret)

	// The printed query is "  dig @host -p port api.<zone>   # every client: both gateways, <a> <b>".
	printed := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(run.stdout)
		for sc.Scan() {
			line := sc.Text()
			t.Log(line)
			if strings.HasPrefix(strings.TrimSpace(line), "dig @") {
				printed <- strings.TrimSpace(line)
			}
		}
	}()
	var line string
	select {
	case line = <-printed:
	case err := <-run.exited:
		t.Fatalf("make run exited before printing the dig command: %v", err)
	case <-time.After(4 * time.Minute):
		t.Fatal("no dig command printed within 4 minutes")
	}
	command, comment, _ := strings.Cut(line, "#")
	want := strings.Fields(comment[strings.LastIndex(comment, ",")+1:])
	args := strings.Fields(command)[1:]
	if !slices.Contains(args, "api."+zone) || len(want) != 2 {
		t.Fatalf("printed %q: want a query of api.%s answered by both gateways", line, zone)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	out, err := exec.CommandContext(ctx, dig, append(args, "+short", "+tries=1", "+time=2")...).CombinedOutput()
	cancel()
	if err != nil {
		t.Fatalf("dig %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	got := strings.Fields(string(out))
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("dig %s answered %v, want %v", strings.Join(args, " "), got, want)
	}

	if err := run.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-run.exited:
		if err != nil {
			t.Errorf("make run exited with %v after Ctrl-C, want 0", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("make run still running a minute after Ctrl-C")
	}
}
