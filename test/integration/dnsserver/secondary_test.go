//go:build integration

package dnsserver_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/miekg/dns"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/test/bind"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
)

// A real BIND, configured as a secondary through the binary's flags, carries a zone made of
// authoritative DNSRecords: it transfers it by AXFR with TSIG, and after a DNSRecord change it
// answers the new value within seconds, told by our NOTIFY.
func TestBINDSecondaryFollowsRecords(t *testing.T) {
	secret := bind.TSIGKey(t, "xfr")

	ctx := context.Background()
	rec := writeAuthoritative(t, newNamespace(t), "s.example.com", "www.s.example.com", []*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint("www.s.example.com", "A", 60, "192.0.2.1"),
	})
	bindAddr := freeport.Addr(t)
	// The key reaches the server as an operator gives it: tsig-keygen's output in a file (a mounted
	// Secret), never a flag value.
	keyFile := filepath.Join(t.TempDir(), "tsig.conf")
	if err := os.WriteFile(keyFile, []byte(fmt.Sprintf("key \"xfr\" {\n\talgorithm hmac-sha256;\n\tsecret \"%s\";\n};\n", secret)), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startManager(t, nil, func(o *app.Options) {
		o.DNSServer.TSIGKeyFile = keyFile
		o.DNSServer.TransferKeys = map[string][]string{"s.example.com": {"xfr"}}
		o.DNSSecondaries = map[string][]string{"s.example.com": {bindAddr}}
	})
	eventually(t, 10*time.Second, srv.addr, "www.s.example.com", dns.TypeA, netip.Addr{}, "NOERROR 192.0.2.1")

	log := bind.StartSecondary(t, bindAddr, "s.example.com", netip.MustParseAddrPort(srv.addr), "xfr", secret)
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

	// The server writes the record's Served condition, so an update may meet a newer version.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(rec), rec); err != nil {
			return err
		}
		rec.Spec.Endpoints[0].Targets = v1alpha1.Targets{"192.0.2.2"}
		return env.Client.Update(ctx, rec)
	}); err != nil {
		t.Fatal(err)
	}
	waitBIND("NOERROR 192.0.2.2")
	if ours, theirs := serial(t, srv.addr, "s.example.com"), serial(t, bindAddr, "s.example.com"); ours != theirs {
		t.Errorf("BIND serves serial %d, we serve %d", theirs, ours)
	}
}
