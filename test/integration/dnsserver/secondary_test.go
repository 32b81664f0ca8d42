package dnsserver_test

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
)

// A real BIND, configured as a secondary through the binary's flags, carries a zone made of
// authoritative DNSRecords: it transfers it by AXFR with TSIG, and after a DNSRecord change it
// answers the new value within seconds, told by our NOTIFY.
func TestBINDSecondaryFollowsRecords(t *testing.T) {
	named, err := exec.LookPath("named")
	if err != nil {
		t.Fatal("named not found: run `bash hack/dns-tools.sh` (installs bind9)")
	}
	keygen, err := exec.LookPath("tsig-keygen")
	if err != nil {
		t.Fatal("tsig-keygen not found: run `bash hack/dns-tools.sh` (installs bind9-utils)")
	}
	out, err := exec.Command(keygen, "-a", "hmac-sha256", "xfr").Output()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`secret "([^"]+)"`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no secret in %s", out)
	}
	secret := string(m[1])

	ctx := context.Background()
	rec := writeAuthoritative(t, newNamespace(t), "s.example.com", "www.s.example.com", []*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint("www.s.example.com", "A", 60, "192.0.2.1"),
	})
	bindAddr := freePort(t)
	srv := startManager(t, nil, func(o *app.Options) {
		o.DNSTSIGKeys = map[string]string{"xfr": secret}
		o.DNSSecondaries = map[string][]string{"s.example.com": {bindAddr}}
	})
	eventually(t, 10*time.Second, srv.addr, "www.s.example.com", dns.TypeA, netip.Addr{}, "NOERROR 192.0.2.1")

	log := startNamed(t, named, bindAddr, "s.example.com", netip.MustParseAddrPort(srv.addr), "xfr", secret)
	waitBIND := func(want string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		last := ""
		for time.Now().Before(deadline) {
			r, err := query(bindAddr, "www.s.example.com", dns.TypeA, netip.Addr{})
			if err == nil {
				if last = answer(r); last == want {
					return
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("BIND answers %q, want %q\n%s", last, want, log)
	}
	waitBIND("NOERROR 192.0.2.1")

	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(rec), rec); err != nil {
		t.Fatal(err)
	}
	rec.Spec.Endpoints[0].Targets = v1alpha1.Targets{"192.0.2.2"}
	if err := env.Client.Update(ctx, rec); err != nil {
		t.Fatal(err)
	}
	waitBIND("NOERROR 192.0.2.2")
	if ours, theirs := serial(t, srv.addr, "s.example.com"), serial(t, bindAddr, "s.example.com"); ours != theirs {
		t.Errorf("BIND serves serial %d, we serve %d", theirs, ours)
	}
}

// logBuffer collects named's log while it runs.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startNamed runs Debian's named on addr as a secondary of zone, transferring from primary with the
// TSIG key, and stops it when the test ends.
func startNamed(t *testing.T, named, addr, zone string, primary netip.AddrPort, keyName, secret string) *logBuffer {
	t.Helper()
	dir := t.TempDir()
	listen := netip.MustParseAddrPort(addr)
	conf := fmt.Sprintf(`options {
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
key "%[3]s" { algorithm hmac-sha256; secret "%[4]s"; };
zone "%[5]s" {
	type secondary;
	primaries { %[6]s port %[7]d key "%[3]s"; };
	file "%[1]s/%[5]s.db";
};
`, dir, listen.Port(), keyName, secret, zone, primary.Addr(), primary.Port())
	path := filepath.Join(dir, "named.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	log := &logBuffer{}
	cmd := exec.Command(named, "-c", path, "-g", "-n", "1")
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
	})
	return log
}
