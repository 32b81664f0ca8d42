//go:build integration

// Package probes_test runs the DNSHealthCheckProbe controller on a real control plane against
// loopback HTTP servers and a loopback DNS server.
package probes_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnshealthcheckprobe"
	"github.com/dnspolicy/dnspolicy-controller/pkg/prober"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
	"github.com/dnspolicy/dnspolicy-controller/test/metricstest"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

var envs []*testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, 1, &envs)) }

const waitFor = 30 * time.Second

// allowLoopback lets the probes reach the test's loopback gateways, which the controller's default
// target rules refuse.
var allowLoopback = prober.TargetRules{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}

// gatewayName is the hostname address the test's DNS server resolves to 127.0.0.1.
const gatewayName = "gw.probes.test"

// start runs the probe controller alone in a manager watching a fresh namespace; its hostname
// addresses resolve through a loopback DNS server that knows gatewayName.
func start(t *testing.T) (client.Client, string) {
	t.Helper()
	return startWith(t, allowLoopback)
}

// startWith is start with the target rules given.
func startWith(t *testing.T, targets prober.TargetRules) (client.Client, string) {
	t.Helper()
	opts := dnshealthcheckprobe.DefaultOptions()
	opts.MinInterval = 50 * time.Millisecond
	opts.SecretRetryMin = 200 * time.Millisecond
	opts.Resolver = resolver(t)
	opts.Targets = targets
	ns := testenv.StartManager(t, envs[0], "probes-", func(mgr ctrl.Manager) error {
		return (&dnshealthcheckprobe.Reconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
			Recorder: mgr.GetEventRecorder("dnshealthcheckprobe-controller"), Options: opts,
		}).SetupWithManager(mgr)
	})
	return envs[0].Client, ns
}

// resolver answers gatewayName with 127.0.0.1 and every other name with NXDOMAIN, from a real DNS
// server on loopback.
func resolver(t *testing.T) *net.Resolver {
	t.Helper()
	addr := freeport.Addr(t)
	mux := dns.NewServeMux()
	mux.HandleFunc(".", func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		name := q.Question[0].Name
		switch {
		case name == gatewayName+"." && q.Question[0].Qtype == dns.TypeA:
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 5}, A: net.ParseIP("127.0.0.1")})
		case name == gatewayName+".":
		default:
			m.Rcode = dns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})
	srv := &dns.Server{Addr: addr, Net: "udp", Handler: mux}
	ready := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(ready) }
	go func() { _ = srv.ListenAndServe() }()
	<-ready
	t.Cleanup(func() { _ = srv.Shutdown() })
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
}

// gateway is a loopback HTTP server on a port the CRD allows, counting requests by path.
type gateway struct {
	port int
	code atomic.Int32
	mu   sync.Mutex
	hits map[string]int
	last map[string]http.Header
	host map[string]string
}

func newGateway(t *testing.T) *gateway {
	t.Helper()
	g := &gateway{hits: map[string]int{}, last: map[string]http.Header{}, host: map[string]string{}}
	g.code.Store(http.StatusOK)
	addr := freeport.Addr(t)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	g.port = l.Addr().(*net.TCPAddr).Port
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.hits[r.URL.Path]++
		g.last[r.URL.Path] = r.Header.Clone()
		g.host[r.URL.Path] = r.Host
		g.mu.Unlock()
		w.WriteHeader(int(g.code.Load()))
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return g
}

func (g *gateway) count(path string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.hits[path]
}

func (g *gateway) request(path string) (http.Header, string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.last[path], g.host[path]
}

func newProbe(ns, name, address string, port int, path string, interval time.Duration) *v1alpha1.DNSHealthCheckProbe {
	return &v1alpha1.DNSHealthCheckProbe{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.DNSHealthCheckProbeSpec{
			Address: address, Hostname: "app.example.com", Port: port, Path: path,
			Protocol: v1alpha1.ProtocolHTTP, Interval: metav1.Duration{Duration: interval}, FailureThreshold: 1,
		},
	}
}

func get(t *testing.T, c client.Client, ns, name string) *v1alpha1.DNSHealthCheckProbe {
	t.Helper()
	p := &v1alpha1.DNSHealthCheckProbe{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitStatus waits until the probe's status satisfies ok, which returns "" or what is missing.
func waitStatus(t *testing.T, c client.Client, ns, name string, ok func(*v1alpha1.DNSHealthCheckProbe) string) *v1alpha1.DNSHealthCheckProbe {
	t.Helper()
	var p *v1alpha1.DNSHealthCheckProbe
	testenv.Eventually(t, waitFor, func() string {
		p = get(t, c, ns, name)
		if why := ok(p); why != "" {
			return fmt.Sprintf("%s: status %+v", why, p.Status)
		}
		return ""
	})
	return p
}

func healthy(want bool, reason string) func(*v1alpha1.DNSHealthCheckProbe) string {
	return func(p *v1alpha1.DNSHealthCheckProbe) string {
		if p.Status.Healthy == nil || *p.Status.Healthy != want || p.Status.Reason != reason {
			return fmt.Sprintf("want healthy=%v reason %q", want, reason)
		}
		return ""
	}
}

// metric reads a counter or gauge of the controller-runtime registry by its labels (0 when absent).
func metric(name string, labels map[string]string) float64 {
	v, _ := metricstest.Value(name, labels)
	return v
}

func writes(ns, name string) float64 {
	return testenv.Counter("dnspolicy_health_probe_status_writes_total", ns, name)
}

func passes(ns, name string) float64 {
	return testenv.Counter("dnspolicy_health_probe_reconciles_total", ns, name)
}

// A probe gets the finalizer, turns healthy, unhealthy after threshold+1 failures (with an event),
// healthy again; deleted, it loses the finalizer and is no longer checked.
func TestProbeLifecycle(t *testing.T) {
	c, ns := start(t)
	g := newGateway(t)
	ctx := context.Background()
	p := newProbe(ns, "rec-127.0.0.1", "127.0.0.1", g.port, "/healthz", 100*time.Millisecond)
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	got := waitStatus(t, c, ns, p.Name, healthy(true, ""))
	if len(got.Finalizers) != 1 || got.Finalizers[0] != v1alpha1.ProbeFinalizer {
		t.Errorf("finalizers %v", got.Finalizers)
	}
	if got.Status.Status != 200 || got.Status.ObservedGeneration != got.Generation || got.Status.LastCheckedAt.IsZero() {
		t.Errorf("status %+v", got.Status)
	}
	if metric("dns_health_probe_counter", map[string]string{"dns_health_check_name": p.Name, "dns_health_check_namespace": ns, "dns_health_check_host": "app.example.com"}) != 1 {
		t.Error("dns_health_probe_counter is not 1 for the probe")
	}
	// The checks' requests count in Kuadrant's http_client_requests_total under client "probe".
	if n := metric("http_client_requests_total", map[string]string{"client": "probe", "code": "200", "method": "get"}); n < 1 {
		t.Errorf("http_client_requests_total of the probe client is %v", n)
	}

	g.code.Store(http.StatusServiceUnavailable)
	got = waitStatus(t, c, ns, p.Name, healthy(false, "Status code: 503"))
	if got.Status.ConsecutiveFailures != 2 || got.Status.Status != 503 {
		t.Errorf("unhealthy with %+v, want 2 failures (threshold 1)", got.Status)
	}
	testenv.Eventually(t, waitFor, func() string {
		evs := &eventsv1.EventList{}
		if err := c.List(ctx, evs, client.InNamespace(ns)); err != nil {
			return err.Error()
		}
		for _, e := range evs.Items {
			if e.Regarding.Name == p.Name && e.Reason == dnshealthcheckprobe.EventUnhealthy && e.Type == corev1.EventTypeWarning {
				return ""
			}
		}
		return fmt.Sprintf("no Unhealthy event among %d", len(evs.Items))
	})

	g.code.Store(http.StatusCreated)
	waitStatus(t, c, ns, p.Name, healthy(true, ""))

	// A second probe keeps running and serves as the clock after the first is deleted.
	clock := newProbe(ns, "rec-clock", "127.0.0.1", g.port, "/clock", 100*time.Millisecond)
	if err := c.Create(ctx, clock); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitFor, func() string {
		err := c.Get(ctx, client.ObjectKeyFromObject(p), &v1alpha1.DNSHealthCheckProbe{})
		if apierrors.IsNotFound(err) {
			return ""
		}
		return fmt.Sprintf("probe still there (%v)", err)
	})
	// Whatever was in flight has landed once the clock has been checked twice.
	mark := g.count("/clock")
	testenv.Eventually(t, waitFor, func() string {
		if g.count("/clock") < mark+2 {
			return "clock not checked"
		}
		return ""
	})
	after := g.count("/healthz")
	mark = g.count("/clock")
	testenv.Eventually(t, waitFor, func() string {
		if g.count("/clock") < mark+10 {
			return "clock not checked 10 times"
		}
		return ""
	})
	if n := g.count("/healthz"); n != after {
		t.Errorf("the deleted probe was checked %d more times", n-after)
	}
	// Kuadrant's dns_health_probe_counter counts running probes: the deleted one's series is gone.
	if n := metric("dns_health_probe_counter", map[string]string{"dns_health_check_name": p.Name, "dns_health_check_namespace": ns}); n != 0 {
		t.Errorf("dns_health_probe_counter of the deleted probe is %v", n)
	}
	if n := metric("dns_health_probe_counter", map[string]string{"dns_health_check_name": clock.Name, "dns_health_check_namespace": ns, "dns_health_check_host": "app.example.com"}); n != 1 {
		t.Errorf("dns_health_probe_counter of the running probe is %v, want 1", n)
	}
}

// A steady probe costs no status writes: 30 checks at 100ms, one write.
func TestSteadyProbeWritesOnce(t *testing.T) {
	c, ns := start(t)
	g := newGateway(t)
	p := newProbe(ns, "steady", "127.0.0.1", g.port, "/steady", 100*time.Millisecond)
	if err := c.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	// Writes are told by the probe's resourceVersion: the write counter is incremented after the
	// write returns, so a baseline read from it just after the status is seen can miss the write
	// that status came from.
	rv := waitStatus(t, c, ns, p.Name, healthy(true, "")).ResourceVersion
	w, r := writes(ns, p.Name), passes(ns, p.Name)
	mark := g.count("/steady")
	testenv.Eventually(t, waitFor, func() string {
		if g.count("/steady") < mark+30 {
			return "not checked 30 times"
		}
		return ""
	})
	if now, dw, dr := get(t, c, ns, p.Name).ResourceVersion, writes(ns, p.Name)-w, passes(ns, p.Name)-r; now != rv || dr > 1 {
		t.Errorf("30 unchanged checks cost %v status writes (resourceVersion %s, then %s) and %v passes", dw, rv, now, dr)
	}
}

// Bad input: each a clear reason, a failing probe, and no hot loop (after the probe turns
// unhealthy, further failed checks cost neither status writes nor passes).
func TestBadInput(t *testing.T) {
	c, ns := start(t)
	g := newGateway(t)
	closed := freeport.Addr(t) // free: nothing listens there
	_, closedPortText, _ := net.SplitHostPort(closed)
	closedPort, _ := strconv.Atoi(closedPortText)

	missingSecret := newProbe(ns, "missing-secret", "127.0.0.1", g.port, "/headers", 100*time.Millisecond)
	missingSecret.Spec.AdditionalHeadersRef = &v1alpha1.AdditionalHeadersRef{Name: "probe-headers"}
	for _, tc := range []struct {
		name    string
		probe   *v1alpha1.DNSHealthCheckProbe
		outcome string
		reason  string
	}{
		{"missing headers Secret", missingSecret, "unusable", fmt.Sprintf("Additional headers Secret %s/probe-headers not found", ns)},
		{"nothing listens", newProbe(ns, "refused", "127.0.0.1", closedPort, "/ready", 100*time.Millisecond),
			"connection_refused", fmt.Sprintf("Connection refused: nothing listens on %s", closed)},
		{"hostname does not resolve", newProbe(ns, "nx", "gateway.nowhere.invalid", g.port, "/ready", 100*time.Millisecond),
			"dns", "Address gateway.nowhere.invalid does not resolve: no such host"},
		{"hostname address, served nothing healthy", newProbe(ns, "hostname", gatewayName, closedPort, "/ready", 100*time.Millisecond),
			"connection_refused", fmt.Sprintf("Connection refused: nothing listens on %s", closed)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := c.Create(context.Background(), tc.probe); err != nil {
				t.Fatal(err)
			}
			rv := waitStatus(t, c, ns, tc.probe.Name, healthy(false, tc.reason)).ResourceVersion
			w, r := writes(ns, tc.probe.Name), passes(ns, tc.probe.Name)
			checks := metric("dnspolicy_health_probe_checks_total", map[string]string{"outcome": tc.outcome})
			testenv.Eventually(t, waitFor, func() string {
				if n := metric("dnspolicy_health_probe_checks_total", map[string]string{"outcome": tc.outcome}); n < checks+20 {
					return fmt.Sprintf("%v of 20 more %s checks", n-checks, tc.outcome)
				}
				return ""
			})
			// Other probes failing the same way share the outcome counter, so 20 checks may be
			// fewer of this probe's: still several, at 100ms. Passes: none from results (nothing
			// changes), and for the missing Secret its re-reads, at least 1s apart.
			// Writes are told by the resourceVersion, as in TestSteadyProbeWritesOnce.
			if now, dw, dr := get(t, c, ns, tc.probe.Name).ResourceVersion, writes(ns, tc.probe.Name)-w, passes(ns, tc.probe.Name)-r; now != rv || dr > 5 {
				t.Errorf("failing checks cost %v status writes (resourceVersion %s, then %s) and %v passes (a hot loop)", dw, rv, now, dr)
			}
		})
	}
	if n := g.count("/headers"); n != 0 {
		t.Errorf("a probe whose headers Secret is missing sent %d requests", n)
	}

	// The Secret appears: it is read again within the backoff, and the headers reach the server.
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "probe-headers", Namespace: ns},
		StringData: map[string]string{"X-Probe-Token": "s3cret"},
	}
	if err := c.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, ns, missingSecret.Name, healthy(true, ""))
	if h, host := g.request("/headers"); h.Get("X-Probe-Token") != "s3cret" || host != fmt.Sprintf("app.example.com:%d", g.port) {
		t.Errorf("headers %v, host %q", h, host)
	}

	// A hostname address that resolves is dialled at what it resolves to.
	hostname := get(t, c, ns, "hostname")
	hostname.Spec.Port = g.port
	if err := c.Update(context.Background(), hostname); err != nil {
		t.Fatal(err)
	}
	got := waitStatus(t, c, ns, "hostname", healthy(true, ""))
	if got.Status.ObservedGeneration != got.Generation || g.count("/ready") == 0 {
		t.Errorf("hostname probe: %+v, %d requests", got.Status, g.count("/ready"))
	}
}

// The addresses and hostnames the record side writes are accepted: gateway IPs (whatever their
// last octet), load balancer hostnames, one-letter labels.
func TestAddressesAndHostnamesAreAccepted(t *testing.T) {
	c, ns := start(t)
	for i, tc := range []struct{ address, hostname string }{
		{"10.0.0.1", "a.example.com"},
		{"172.18.0.2", "app.example.com"},
		{"255.255.255.254", "x.y.example.com"},
		{"k8s-gw-1a2b3c.elb.us-east-1.amazonaws.com", "0day.example.com"},
	} {
		p := newProbe(ns, fmt.Sprintf("accepted-%d", i), tc.address, 443, "/healthz", time.Minute)
		p.Spec.Hostname = tc.hostname
		if err := c.Create(context.Background(), p, client.DryRunAll); err != nil {
			t.Errorf("address %s, hostname %s: %v", tc.address, tc.hostname, err)
		}
	}
}

// A restarted controller carries on from the status: the probe stays healthy (never back to
// unknown) and nothing is rewritten while nothing changed.
func TestRestartCarriesOn(t *testing.T) {
	c := envs[0].Client
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "probes-restart-"}}
	if err := c.Create(context.Background(), namespace); err != nil {
		t.Fatal(err)
	}
	ns := namespace.Name
	g := newGateway(t)
	run := func() func() {
		opts := dnshealthcheckprobe.DefaultOptions()
		opts.MinInterval = 50 * time.Millisecond
		opts.Targets = allowLoopback
		return testenv.StartManagerIn(t, envs[0], ns, func(mgr ctrl.Manager) error {
			return (&dnshealthcheckprobe.Reconciler{
				Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
				Recorder: mgr.GetEventRecorder("dnshealthcheckprobe-controller"), Options: opts,
			}).SetupWithManager(mgr)
		})
	}
	stop := run()
	p := newProbe(ns, "restart", "127.0.0.1", g.port, "/restart", 100*time.Millisecond)
	if err := c.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	before := waitStatus(t, c, ns, p.Name, healthy(true, ""))
	stop()

	run()
	mark := g.count("/restart")
	testenv.Eventually(t, waitFor, func() string {
		if g.count("/restart") < mark+20 {
			return "not checked 20 times since the restart"
		}
		return ""
	})
	after := get(t, c, ns, p.Name)
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("the restarted controller rewrote an unchanged probe: %+v, was %+v", after.Status, before.Status)
	}
}

// The controller's default rules refuse a probe of loopback, by address or by a name resolving to
// it: the probe is unhealthy at once, its status says only that the rules refused it (no address,
// no port, no status code), and the gateway is sent nothing.
func TestRefusedTarget(t *testing.T) {
	c, ns := startWith(t, prober.TargetRules{})
	g := newGateway(t)
	const reason = "TargetNotAllowed: the probe's target was refused by the controller's health-check rules"
	for name, address := range map[string]string{"by-address": "127.0.0.1", "by-name": gatewayName} {
		p := newProbe(ns, name, address, g.port, "/"+name, 100*time.Millisecond)
		p.Spec.FailureThreshold = 5
		if err := c.Create(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		got := waitStatus(t, c, ns, name, healthy(false, reason))
		if got.Status.Status != 0 || strings.Contains(got.Status.Reason, strconv.Itoa(g.port)) {
			t.Errorf("%s: status %+v tells of the target", name, got.Status)
		}
		if n := g.count("/" + name); n != 0 {
			t.Errorf("%s: the refused target was sent %d requests", name, n)
		}
	}
}

// A headers Secret of any type but Opaque is refused, and the probe is not sent.
func TestTypedHeadersSecretRefused(t *testing.T) {
	c, ns := start(t)
	g := newGateway(t)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "credentials", Namespace: ns},
		Type:       v1alpha1.SecretTypeInMemory,
		StringData: map[string]string{"X-Probe-Token": "s3cret"},
	}
	if err := c.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	p := newProbe(ns, "typed", "127.0.0.1", g.port, "/typed", 100*time.Millisecond)
	p.Spec.AdditionalHeadersRef = &v1alpha1.AdditionalHeadersRef{Name: secret.Name}
	if err := c.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("HeadersSecretNotAllowed: Additional headers Secret %s/credentials is of type %s; only Opaque Secrets are read for headers",
		ns, v1alpha1.SecretTypeInMemory)
	waitStatus(t, c, ns, "typed", healthy(false, want))
	if n := g.count("/typed"); n != 0 {
		t.Errorf("a probe with a typed headers Secret sent %d requests", n)
	}
}

// The cluster's own ranges are refused by default: the API server's Service address (from the
// ServiceCIDRs, or the Service itself) and a node's pod range and addresses, followed as nodes come.
func TestClusterRangesRefused(t *testing.T) {
	var r *dnshealthcheckprobe.Reconciler
	ns := testenv.StartManager(t, envs[0], "probes-ranges-", func(mgr ctrl.Manager) error {
		r = &dnshealthcheckprobe.Reconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
			Recorder: mgr.GetEventRecorder("dnshealthcheckprobe-controller"), Options: dnshealthcheckprobe.DefaultOptions(),
		}
		return r.SetupWithManager(mgr)
	})
	c := envs[0].Client
	api := &corev1.Service{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "kubernetes"}, api); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{GenerateName: "probes-node-"},
		Spec: corev1.NodeSpec{PodCIDR: "10.244.3.0/24", PodCIDRs: []string{"10.244.3.0/24", "fd00:10:244:3::/64"}}}
	if err := c.Create(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), node) })
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.44"}, {Type: corev1.NodeHostName, Address: "node-1"}}
	if err := c.Status().Update(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitFor, func() string {
		rules := r.TargetRules()
		for _, ip := range []string{api.Spec.ClusterIP, "10.244.3.7", "fd00:10:244:3::9", "192.0.2.44"} {
			if rules.Permits(netip.MustParseAddr(ip)) {
				return fmt.Sprintf("%s is permitted; cluster ranges %v", ip, rules.Cluster)
			}
		}
		if !rules.Permits(netip.MustParseAddr("192.0.2.45")) {
			return "192.0.2.45, no cluster address, is refused"
		}
		return ""
	})
	// A probe of the node's address is refused, as any.
	if err := c.Create(context.Background(), newProbe(ns, "node", "192.0.2.44", 10250, "/metrics", time.Minute)); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, ns, "node", healthy(false, "TargetNotAllowed: the probe's target was refused by the controller's health-check rules"))
}
