//go:build integration

// Package dnsserver_test runs the embedded DNS server inside a manager on a real control plane, fed
// by authoritative DNSRecords that the tests write directly (as Kuadrant's dns-operator writes them)
// or that the record controller writes through the coredns backend, and asks it with a real client.
package dnsserver_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
	"github.com/dnspolicy/dnspolicy-controller/test/geodb"
	"github.com/dnspolicy/dnspolicy-controller/test/integration/internal/recordplane"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

var (
	env   *testenv.Env
	geoDB string
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	dir, err := os.MkdirTemp("", "dnsserver-geo-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if geoDB, err = writeGeoDB(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := testenv.MainOne(m, testenv.Options{WithoutGatewayAPI: true}, &env)
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// Client addresses by location in the test database.
var (
	clientIE = netip.MustParseAddr("81.17.23.20")
	clientUS = netip.MustParseAddr("8.8.4.4")
	clientDE = netip.MustParseAddr("5.9.10.11")
	clientJP = netip.MustParseAddr("133.1.2.3")
)

// writeGeoDB builds a small MaxMind-format country database.
func writeGeoDB(dir string) (string, error) {
	path := filepath.Join(dir, "geo.mmdb")
	return path, geodb.Write(path,
		geodb.Network{CIDR: "81.17.0.0/16", Country: "IE", Continent: "EU"},
		geodb.Network{CIDR: "8.8.0.0/16", Country: "US", Continent: "NA"},
		geodb.Network{CIDR: "5.9.0.0/16", Country: "DE", Continent: "EU"},
		geodb.Network{CIDR: "133.0.0.0/8", Country: "JP", Continent: "AS"})
}

// manager is one running controller process.
type manager struct {
	addr string
	stop func()
}

// startManager runs the binary's wiring with the DNS server on a free loopback port, and the record
// controller only when factory is given, with the grants given so far (grantZones); edits, when
// given, change the options. It stops when the
// test ends, or earlier through stop.
func startManager(t *testing.T, factory *providers.Factory, edits ...func(*app.Options)) *manager {
	t.Helper()
	o := app.DefaultOptions()
	o.MetricsBindAddress, o.HealthProbeBindAddress = "0", "0"
	o.EnableDNSPolicyController = false
	o.EnableRecordController = factory != nil
	o.DNSServerAddress = freeport.Addr(t)
	o.DNSGeoIPDatabase = geoDB
	o.Grants.Grants = currentGrants()
	for _, edit := range edits {
		edit(&o)
	}
	recordOpts := dnsrecord.DefaultOptions()
	recordOpts.ValidationRetry = 100 * time.Millisecond
	recordOpts.MinBackoff = 200 * time.Millisecond
	// One manager at a time, watching every namespace, as the binary does.
	stop := recordplane.StartIn(t, env, "", recordplane.Controller{App: o, Factory: factory, Record: recordOpts})
	return &manager{addr: o.DNSServerAddress, stop: stop}
}

// coreDNSFactory enables the backends of the binary that these tests use.
func coreDNSFactory(t *testing.T) *providers.Factory {
	t.Helper()
	f, err := app.NewFactory(app.Options{Providers: []string{"coredns"}}, inmemory.NewStore())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "dnsserver-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// query asks the server for name over UDP, from a client at addr (EDNS Client Subnet) when valid.
func query(addr, name string, qtype uint16, from netip.Addr) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.SetEdns0(1232, false)
	if from.IsValid() {
		m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_SUBNET{
			Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: net.IP(from.AsSlice()),
		})
	}
	c := &dns.Client{Timeout: time.Second}
	r, _, err := c.Exchange(m, addr)
	return r, err
}

// answer describes a response compactly: rcode, then the CNAME targets and addresses in order.
func answer(r *dns.Msg) string {
	parts := []string{dns.RcodeToString[r.Rcode]}
	for _, rr := range r.Answer {
		switch rr := rr.(type) {
		case *dns.CNAME:
			parts = append(parts, strings.TrimSuffix(rr.Target, "."))
		case *dns.A:
			parts = append(parts, rr.A.String())
		case *dns.TXT:
			parts = append(parts, strings.Join(rr.Txt, ""))
		}
	}
	return strings.Join(parts, " ")
}

// ttls are the TTLs of a response's answer, in order.
func ttls(r *dns.Msg) []uint32 {
	var out []uint32
	for _, rr := range r.Answer {
		out = append(out, rr.Header().Ttl)
	}
	return out
}

// eventually polls until the server answers want, or fails after timeout with the last answer.
func eventually(t *testing.T, timeout time.Duration, addr, name string, qtype uint16, from netip.Addr, want string) time.Duration {
	t.Helper()
	start := time.Now()
	last := ""
	for time.Since(start) < timeout {
		r, err := query(addr, name, qtype, from)
		if err == nil {
			if last = answer(r); last == want {
				return time.Since(start)
			}
		} else {
			last = err.Error()
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s %s from %s: not %q within %s; last %q", name, dns.TypeToString[qtype], from, want, timeout, last)
	return 0
}

func serial(t *testing.T, addr, zone string) uint32 {
	t.Helper()
	r, err := query(addr, zone, dns.TypeSOA, netip.Addr{})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(r.Answer, func(rr dns.RR) bool { return rr.Header().Rrtype == dns.TypeSOA })
	if i < 0 {
		t.Fatalf("no SOA for %s: %s", zone, r)
	}
	return r.Answer[i].(*dns.SOA).Serial
}
