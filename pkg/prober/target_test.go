package prober

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func prefixes(s ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range s {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}

// The precedence: Denied, then Allowed, then the defaults and the cluster's ranges, then allow.
func TestTargetRulesPermits(t *testing.T) {
	none := TargetRules{}
	opened := TargetRules{
		Allowed: prefixes("127.0.0.0/8", "10.96.0.0/12", "fe80::/10"),
		Denied:  prefixes("127.0.0.2/32", "203.0.113.0/24"),
		Cluster: prefixes("10.96.0.0/12", "10.244.0.0/16"),
	}
	for _, c := range []struct {
		rules TargetRules
		ip    string
		want  bool
	}{
		{none, "127.0.0.1", false},
		{none, "127.255.0.9", false},
		{none, "::1", false},
		{none, "::ffff:127.0.0.1", false}, // IPv4-mapped: judged as 127.0.0.1
		{none, "169.254.169.254", false},
		{none, "::ffff:169.254.169.254", false},
		{none, "fe80::1%eth0", false},
		{none, "0.0.0.0", false},
		{none, "::", false},
		{none, "224.0.0.1", false},
		{none, "ff02::1", false},
		{none, "255.255.255.255", false},
		{none, "203.0.113.7", true},
		{none, "10.1.2.3", true}, // private ranges are gateways' too
		{none, "2001:db8::1", true},
		{opened, "127.0.0.1", true},        // Allowed opens a default
		{opened, "::ffff:127.0.0.1", true}, // and its mapped form
		{opened, "127.0.0.2", false},       // Denied wins over Allowed
		{opened, "::1", false},             // not opened
		{opened, "10.96.0.1", true},        // Allowed opens a cluster range
		{opened, "10.244.1.5", false},      // a cluster range
		{opened, "203.0.113.7", false},     // Denied wins over the default allow
		{opened, "::ffff:203.0.113.7", false},
		{opened, "fe80::1", true},
	} {
		if got := c.rules.Permits(netip.MustParseAddr(c.ip)); got != c.want {
			t.Errorf("%+v Permits(%s) = %v, want %v", c.rules, c.ip, got, c.want)
		}
	}
	if (TargetRules{}).Permits(netip.Addr{}) {
		t.Error("the zero address is permitted")
	}
}

func TestParsePrefixes(t *testing.T) {
	got, err := ParsePrefixes(" 10.0.0.0/8, 192.0.2.1 ,, ::1, ::ffff:169.254.0.0/112, 10.1.2.3/8")
	if err != nil {
		t.Fatal(err)
	}
	want := prefixes("10.0.0.0/8", "192.0.2.1/32", "::1/128", "169.254.0.0/16", "10.0.0.0/8")
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if _, err := ParsePrefixes("10.0.0.0/8,nonsense"); err == nil || !strings.Contains(err.Error(), "nonsense") {
		t.Errorf("err %v", err)
	}
}

// refused says a result is the refusal, worded the same for every target.
func refused(t *testing.T, r Result) {
	t.Helper()
	if r.Outcome != OutcomeNotAllowed || r.Reason != targetNotAllowedReason || r.StatusCode != 0 || !healthyIs(false)(r) {
		t.Errorf("%+v, want %s, reason %q and unhealthy at once", r, OutcomeNotAllowed, targetNotAllowedReason)
	}
}

// counted serves 200 on addr (a loopback host:port) and counts the requests it is sent.
func counted(t *testing.T, addr string) (*atomic.Int64, int) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	n := &atomic.Int64{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { n.Add(1) }))
	_ = srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return n, l.Addr().(*net.TCPAddr).Port
}

// Loopback servers, IPv4 and IPv6: refused by default (no request reaches them, and the status
// says only that the rules refused it), checked when an Allowed prefix covers them.
func TestLoopbackRefusedUnlessAllowed(t *testing.T) {
	for _, c := range []struct{ name, listen, address, allow string }{
		{"IPv4", "127.0.0.1:0", "127.0.0.1", "127.0.0.1/32"},
		{"IPv6", "[::1]:0", "::1", "::1/128"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Skips (saying so) only when the machine has no such loopback address.
			hits, port := counted(t, c.listen)
			spec := Spec{Protocol: "HTTP", Address: c.address, Hostname: "gw.example.com", Port: port,
				Path: "/", Interval: time.Minute, FailureThreshold: 3}

			p := start(t, Options{})
			p.Set("ns/p", spec, State{})
			refused(t, p.next(t, "ns/p", "default rules", func(Result) bool { return true }))
			if hits.Load() != 0 {
				t.Errorf("%d requests reached a refused target", hits.Load())
			}

			p = start(t, Options{Targets: TargetRules{Allowed: prefixes(c.allow)}})
			p.Set("ns/p", spec, State{})
			if r := p.next(t, "ns/p", "allowed", func(Result) bool { return true }); r.Outcome != OutcomePassed || hits.Load() != 1 {
				t.Errorf("allowed: %+v, %d requests", r, hits.Load())
			}
		})
	}
}

// zone is a DNS server on loopback whose answers the test changes, and a resolver that asks it.
type zone struct {
	mu sync.Mutex
	a  map[string]string
}

func (z *zone) set(name, ip string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.a[dns.Fqdn(name)] = ip
}

func startZone(t *testing.T) (*zone, *net.Resolver) {
	t.Helper()
	z := &zone{a: map[string]string{}}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, NotifyStartedFunc: func() { close(started) },
		Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
			m := new(dns.Msg)
			m.SetReply(r)
			m.Authoritative, m.RecursionAvailable = true, true
			q := r.Question[0]
			z.mu.Lock()
			ip, ok := z.a[strings.ToLower(q.Name)]
			z.mu.Unlock()
			if !ok {
				m.Rcode = dns.RcodeNameError
			} else if q.Qtype == dns.TypeA {
				m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 0}, A: net.ParseIP(ip)})
			}
			_ = w.WriteMsg(m)
		})}
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	return z, &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
}

// A hostname is judged by what it resolves to, at the dial of every check: one that resolves to a
// refused address is refused, and one whose answer changes from an allowed address to a refused one
// is refused from the check after the change on (no connection of the earlier check carries it).
func TestHostnameJudgedAfterResolution(t *testing.T) {
	z, resolver := startZone(t)
	allowedHits, port := counted(t, "127.0.0.1:0")
	deniedHits, _ := counted(t, "127.0.0.2:"+strconv.Itoa(port))
	p := start(t, Options{Resolver: resolver, Targets: TargetRules{Allowed: prefixes("127.0.0.1/32")}})
	spec := func(address string, interval time.Duration) Spec {
		return Spec{Protocol: "HTTP", Address: address, Hostname: "gw.example.com", Port: port,
			Path: "/", Interval: interval, FailureThreshold: 3}
	}

	z.set("inside.probe.test", "127.0.0.2")
	p.Set("ns/inside", spec("inside.probe.test", time.Minute), State{})
	refused(t, p.next(t, "ns/inside", "resolves to a refused address", func(Result) bool { return true }))

	z.set("moves.probe.test", "127.0.0.1")
	p.Set("ns/moves", spec("moves.probe.test", 50*time.Millisecond), State{})
	if r := p.next(t, "ns/moves", "allowed answer", func(Result) bool { return true }); r.Outcome != OutcomePassed {
		t.Fatalf("before the change: %+v", r)
	}
	z.set("moves.probe.test", "127.0.0.2")
	refused(t, p.next(t, "ns/moves", "changed answer", func(r Result) bool { return r.Outcome != OutcomePassed }))
	if deniedHits.Load() != 0 || allowedHits.Load() == 0 {
		t.Errorf("requests: %d to the refused address, %d to the allowed one", deniedHits.Load(), allowedHits.Load())
	}
}

// A redirect within the hostname to another port is refused (the scheme's standard port and the
// probe's own are followed), and the other port sees no request.
func TestRedirectToAnotherPortRefused(t *testing.T) {
	otherHits, other := counted(t, "127.0.0.1:0")
	mux := http.NewServeMux()
	mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://gw.example.com:"+strconv.Itoa(other)+"/", http.StatusFound)
	})
	mux.HandleFunc("/here", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/ok", func(http.ResponseWriter, *http.Request) {})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	p := start(t, Options{Targets: allowLoopback})
	for path, want := range map[string]Outcome{"/elsewhere": OutcomeNotAllowed, "/here": OutcomePassed} {
		key := "ns" + path
		p.Set(key, Spec{Protocol: "HTTP", Address: "127.0.0.1", Hostname: "gw.example.com", Port: port,
			Path: path, Interval: time.Minute, FailureThreshold: 3}, State{})
		r := p.next(t, key, path, func(Result) bool { return true })
		if want == OutcomeNotAllowed {
			refused(t, r)
		} else if r.Outcome != want {
			t.Errorf("%s: %+v", path, r)
		}
	}
	if otherHits.Load() != 0 {
		t.Errorf("the redirect's port was sent %d requests", otherHits.Load())
	}
}

// The cluster's ranges are judged at the next dial, with the configured rules kept.
func TestSetClusterRanges(t *testing.T) {
	p := New(Options{Targets: TargetRules{Allowed: prefixes("10.96.0.1/32"), Denied: prefixes("192.0.2.0/24")}})
	p.SetClusterRanges(prefixes("10.96.0.0/12", "10.0.0.7/32"))
	rules := p.rules.Load()
	for addr, want := range map[string]bool{"10.96.0.1:443": true, "10.100.0.1:443": false, "10.0.0.7:80": false, "10.0.0.8:80": true, "192.0.2.1:80": false} {
		if err := rules.control("tcp", addr, nil); (err == nil) != want {
			t.Errorf("dial %s: %v, want permitted %v", addr, err, want)
		}
	}
}
