package resolver

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Delv runs delv against server (a resolver, or an authoritative server holding the whole chain
// from the anchors down), trusting only anchors (all of one name), and returns its output:
// "; fully validated" for a proven answer, "; unsigned answer" for an insecure one, "resolution
// failed" for a bogus one.
func Delv(t testing.TB, server netip.AddrPort, anchors []dns.RR, name string, qtype uint16) string {
	t.Helper()
	delv := tool(t, "delv")
	file := filepath.Join(t.TempDir(), "anchors.conf")
	if err := os.WriteFile(file, []byte(trustAnchors(anchors)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// delv loads only the anchors named by +root; it exits non-zero when resolution fails, and its
	// output says why, which is what tests check.
	out, err := exec.CommandContext(ctx, delv, "@"+server.Addr().String(), "-p", fmt.Sprint(server.Port()), "-a", file,
		"+root="+anchors[0].Header().Name, "-q", name, "-t", dns.TypeToString[qtype]).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("delv %s %s: %v\n%s", name, dns.TypeToString[qtype], err, out)
	}
	return string(out)
}
