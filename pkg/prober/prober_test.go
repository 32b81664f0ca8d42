package prober

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitFor is how long a test waits for a condition; generous, as tests share 2 loaded cores.
const waitFor = 20 * time.Second

// allowLoopback lets checks reach the loopback servers the tests start: the defaults refuse them.
var allowLoopback = TargetRules{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}

// started is a running Prober whose results the test reads.
type started struct {
	*Prober
	results chan Result
}

func start(t *testing.T, o Options) *started {
	t.Helper()
	s := &started{results: make(chan Result, 4096)}
	o.OnResult = func(r Result) { s.results <- r }
	if o.FirstCheckSpread == 0 {
		o.FirstCheckSpread = 10 * time.Millisecond
	}
	s.Prober = New(o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return s
}

// next waits for the next result of key that matches ok, failing the test after waitFor.
func (s *started) next(t *testing.T, key string, what string, ok func(Result) bool) Result {
	t.Helper()
	deadline := time.After(waitFor)
	var last Result
	for {
		select {
		case r := <-s.results:
			if r.Key != key {
				continue
			}
			last = r
			if ok(r) {
				return r
			}
		case <-deadline:
			t.Fatalf("%s: no result within %s; last %+v", what, waitFor, last)
		}
	}
}

// server is a loopback HTTP(S) server whose answer the test sets, and which records what it was
// sent.
type server struct {
	*httptest.Server
	code     atomic.Int32
	requests atomic.Int64
	mu       sync.Mutex
	last     *http.Request
}

func newServer(t *testing.T, cert *tls.Certificate) *server {
	t.Helper()
	s := &server{}
	s.code.Store(http.StatusOK)
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		s.mu.Lock()
		s.last = r
		s.mu.Unlock()
		w.WriteHeader(int(s.code.Load()))
		_, _ = w.Write([]byte(strings.Repeat("body ", 10000)))
	}))
	// Handshake failures are what some tests provoke; the server need not log them.
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	if cert != nil {
		s.TLS = &tls.Config{Certificates: []tls.Certificate{*cert}}
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

func (s *server) port(t *testing.T) int {
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(u.Port())
	return p
}

func (s *server) lastRequest() *http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

func healthyIs(want bool) func(Result) bool {
	return func(r Result) bool { return r.State.Healthy != nil && *r.State.Healthy == want }
}

func TestStateNextIsKuadrantsRule(t *testing.T) {
	var s State
	for i := 1; i <= 3; i++ {
		if s = s.Next(false, 3); s.ConsecutiveFailures != i || s.Healthy != nil {
			t.Fatalf("failure %d of threshold 3: %+v (health must stay unknown)", i, s)
		}
	}
	if s = s.Next(false, 3); s.Healthy == nil || *s.Healthy || s.ConsecutiveFailures != 4 {
		t.Fatalf("failure 4 exceeds threshold 3: %+v", s)
	}
	if s = s.Next(true, 3); s.Healthy == nil || !*s.Healthy || s.ConsecutiveFailures != 0 {
		t.Fatalf("a pass: %+v", s)
	}
	if s = s.Next(false, 3); s.Healthy == nil || !*s.Healthy || s.ConsecutiveFailures != 1 {
		t.Fatalf("one failure after a pass keeps the probe healthy: %+v", s)
	}
}

// A probe turns unhealthy at threshold+1 consecutive failures and healthy again on one pass.
func TestUnhealthyAfterThresholdAndBack(t *testing.T) {
	srv := newServer(t, nil)
	p := start(t, Options{Targets: allowLoopback})
	p.Set("p", Spec{Protocol: "HTTP", Address: "127.0.0.1", Hostname: "gw.example.com", Port: srv.port(t),
		Path: "/healthz", Interval: 50 * time.Millisecond, FailureThreshold: 2}, State{})
	p.next(t, "p", "first pass", healthyIs(true))

	srv.code.Store(http.StatusInternalServerError)
	var seen []int
	r := p.next(t, "p", "unhealthy", func(r Result) bool {
		if r.Outcome == OutcomeStatusCode {
			seen = append(seen, r.State.ConsecutiveFailures)
			if r.State.ConsecutiveFailures <= 2 && (r.State.Healthy == nil || !*r.State.Healthy) {
				t.Errorf("unhealthy after %d failures, threshold 2", r.State.ConsecutiveFailures)
			}
		}
		return healthyIs(false)(r)
	})
	if r.State.ConsecutiveFailures != 3 || r.StatusCode != 500 || r.Reason != "Status code: 500" {
		t.Errorf("turned unhealthy with %+v (failures seen %v), want 3 failures and Kuadrant's reason", r, seen)
	}
	srv.code.Store(http.StatusCreated)
	r = p.next(t, "p", "healthy again", healthyIs(true))
	if r.State.ConsecutiveFailures != 0 || r.StatusCode != 201 || r.Reason != "" {
		t.Errorf("healthy again: %+v", r)
	}
}

// Host, SNI and the extra headers reach the server; the address is what is dialled.
func TestHostSNIAndHeadersReachTheServer(t *testing.T) {
	authority := newCA(t, "Probe Test CA")
	cert := authority.validLeaf(t, "gw.example.com", "gw.example.com")
	srv := newServer(t, &cert)
	p := start(t, Options{Targets: allowLoopback, RootCAs: authority.pool})
	headers := http.Header{}
	headers.Set("X-Probe-Token", "s3cret")
	headers.Set("Authorization", "Bearer abc")
	port := srv.port(t)
	p.Set("p", Spec{Protocol: "HTTPS", Address: "127.0.0.1", Hostname: "gw.example.com", Port: port,
		Path: "/health?deep=1", Interval: time.Minute, FailureThreshold: 1, Headers: headers}, State{})
	r := p.next(t, "p", "pass", func(Result) bool { return true })
	if r.Outcome != OutcomePassed {
		t.Fatalf("result %+v", r)
	}
	req := srv.lastRequest()
	if want := "gw.example.com:" + strconv.Itoa(port); req.Host != want {
		t.Errorf("Host %q, want %q", req.Host, want)
	}
	if req.TLS == nil || req.TLS.ServerName != "gw.example.com" {
		t.Errorf("SNI %+v", req.TLS)
	}
	if req.Header.Get("X-Probe-Token") != "s3cret" || req.Header.Get("Authorization") != "Bearer abc" {
		t.Errorf("headers %v", req.Header)
	}
	if req.URL.RequestURI() != "/health?deep=1" || req.Method != http.MethodGet {
		t.Errorf("request %s %s", req.Method, req.URL.RequestURI())
	}
}

// An untrusted certificate fails with a reason naming it, unless insecure is allowed; a certificate
// for another name and an expired one say so.
func TestCertificateFailures(t *testing.T) {
	trusted := newCA(t, "Trusted CA")
	untrusted := newCA(t, "Rogue CA")
	rogue := untrusted.validLeaf(t, "gw.example.com", "gw.example.com")
	other := trusted.validLeaf(t, "other.example.com", "other.example.com")
	expired := trusted.leaf(t, "old.example.com", []string{"gw.example.com"},
		time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC))
	p := start(t, Options{Targets: allowLoopback, RootCAs: trusted.pool})
	for _, tc := range []struct {
		name     string
		cert     tls.Certificate
		insecure bool
		outcome  Outcome
		reason   []string
	}{
		{"unknown authority", rogue, false, OutcomeTLS, []string{"Certificate not trusted", "certificate signed by unknown authority", `"gw.example.com"`, `"Rogue CA"`}},
		{"unknown authority, insecure allowed", rogue, true, OutcomePassed, nil},
		{"wrong name", other, false, OutcomeTLS, []string{"not valid for gw.example.com", `"other.example.com"`}},
		{"expired", expired, false, OutcomeTLS, []string{"expired", `"old.example.com"`, "2021-01-01T00:00:00Z"}},
		{"expired, insecure allowed", expired, true, OutcomePassed, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, &tc.cert)
			key := tc.name
			p.Set(key, Spec{Protocol: "HTTPS", Address: "127.0.0.1", Hostname: "gw.example.com", Port: srv.port(t),
				Path: "/", Interval: 100 * time.Millisecond, FailureThreshold: 1, AllowInsecure: tc.insecure}, State{})
			r := p.next(t, key, "first", func(Result) bool { return true })
			again := p.next(t, key, "second", func(Result) bool { return true })
			p.Remove(key)
			if r.Outcome != tc.outcome {
				t.Fatalf("outcome %s (%q), want %s", r.Outcome, r.Reason, tc.outcome)
			}
			for _, want := range tc.reason {
				if !strings.Contains(r.Reason, want) {
					t.Errorf("reason %q does not say %q", r.Reason, want)
				}
			}
			if again.Reason != r.Reason {
				t.Errorf("reason not stable: %q then %q", r.Reason, again.Reason)
			}
		})
	}
}

// 200 and 201 pass; anything else fails with Kuadrant's "Status code: N"; a redirect to another
// host is not followed, one within the hostname is.
func TestStatusCodes(t *testing.T) {
	p := start(t, Options{Targets: allowLoopback})
	for _, code := range []int{200, 201, 204, 301, 404, 500, 503} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			srv := newServer(t, nil)
			srv.code.Store(int32(code))
			key := strconv.Itoa(code)
			p.Set(key, Spec{Protocol: "HTTP", Address: "127.0.0.1", Hostname: "gw.example.com", Port: srv.port(t),
				Path: "/", Interval: time.Minute, FailureThreshold: 1}, State{})
			r := p.next(t, key, "result", func(Result) bool { return true })
			p.Remove(key)
			passed := code == 200 || code == 201
			if (r.Outcome == OutcomePassed) != passed || r.StatusCode != code {
				t.Fatalf("code %d: %+v", code, r)
			}
			if !passed && r.Reason != fmt.Sprintf("Status code: %d", code) {
				t.Errorf("reason %q", r.Reason)
			}
		})
	}
	t.Run("redirect within the hostname", func(t *testing.T) {
		mux := http.NewServeMux()
		mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/new", http.StatusFound) })
		mux.HandleFunc("/new", func(w http.ResponseWriter, r *http.Request) {})
		mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://elsewhere.example.com/new", http.StatusFound)
		})
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		port := srv.Listener.Addr().(*net.TCPAddr).Port
		for path, want := range map[string]int{"/old": 200, "/away": 302} {
			p.Set(path, Spec{Protocol: "HTTP", Address: "127.0.0.1", Hostname: "gw.example.com", Port: port,
				Path: path, Interval: time.Minute, FailureThreshold: 1}, State{})
			if r := p.next(t, path, path, func(Result) bool { return true }); r.StatusCode != want {
				t.Errorf("%s: %+v, want %d", path, r, want)
			}
			p.Remove(path)
		}
	})
}

// A server that does not answer within the timeout fails as a timeout.
func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	p := start(t, Options{Targets: allowLoopback, Timeout: 300 * time.Millisecond})
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	p.Set("p", Spec{Protocol: "HTTP", Address: "127.0.0.1", Hostname: "gw.example.com", Port: port,
		Path: "/", Interval: time.Minute, FailureThreshold: 0}, State{})
	r := p.next(t, "p", "timeout", func(Result) bool { return true })
	want := fmt.Sprintf("Timeout: no response from 127.0.0.1:%d within 300ms", port)
	if r.Outcome != OutcomeTimeout || r.Reason != want || !healthyIs(false)(r) {
		t.Errorf("%+v, want reason %q and unhealthy (threshold 0)", r, want)
	}
	if r.Duration > 10*time.Second {
		t.Errorf("a check took %s", r.Duration)
	}
}

// A port nothing listens on is a refused connection, with the same reason every time.
func TestConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	p := start(t, Options{Targets: allowLoopback})
	p.Set("p", Spec{Protocol: "HTTPS", Address: "127.0.0.1", Hostname: "gw.example.com", Port: port,
		Path: "/", Interval: 50 * time.Millisecond, FailureThreshold: 1}, State{})
	first := p.next(t, "p", "refused", func(Result) bool { return true })
	second := p.next(t, "p", "refused again", healthyIs(false))
	want := fmt.Sprintf("Connection refused: nothing listens on 127.0.0.1:%d", port)
	if first.Outcome != OutcomeRefused || first.Reason != want || second.Reason != want {
		t.Errorf("%+v then %+v, want %q", first, second, want)
	}
}

// An address that is a hostname is resolved and dialled; one that does not resolve fails clearly.
func TestHostnameAddresses(t *testing.T) {
	srv := newServer(t, nil)
	p := start(t, Options{Targets: allowLoopback})
	p.Set("resolves", Spec{Protocol: "HTTP", Address: "localhost", Hostname: "gw.example.com", Port: srv.port(t),
		Path: "/", Interval: time.Minute, FailureThreshold: 1}, State{})
	if r := p.next(t, "resolves", "localhost", func(Result) bool { return true }); r.Outcome != OutcomePassed {
		t.Errorf("address localhost: %+v", r)
	}
	p.Set("nx", Spec{Protocol: "HTTP", Address: "gateway.does-not-exist.invalid", Hostname: "gw.example.com",
		Port: srv.port(t), Path: "/", Interval: time.Minute, FailureThreshold: 1}, State{})
	r := p.next(t, "nx", "unresolvable", func(Result) bool { return true })
	if r.Outcome != OutcomeDNS || !strings.HasPrefix(r.Reason, "Address gateway.does-not-exist.invalid does not resolve") &&
		!strings.HasPrefix(r.Reason, "Timeout: resolving address gateway.does-not-exist.invalid") {
		t.Errorf("%+v", r)
	}
}

// A probe whose spec is unusable fails with that reason, without a request.
func TestUnusableSpecFailsWithoutARequest(t *testing.T) {
	srv := newServer(t, nil)
	p := start(t, Options{Targets: allowLoopback})
	const reason = "Additional headers Secret ns/missing not found"
	p.Set("p", Spec{Protocol: "HTTP", Address: "127.0.0.1", Port: srv.port(t), Path: "/",
		Interval: 50 * time.Millisecond, FailureThreshold: 1, Unusable: reason}, State{})
	r := p.next(t, "p", "unhealthy", healthyIs(false))
	if r.Outcome != OutcomeUnusable || r.Reason != reason || srv.requests.Load() != 0 {
		t.Errorf("%+v, %d requests", r, srv.requests.Load())
	}
	// The Secret appears: the changed spec is checked at once and passes.
	p.Set("p", Spec{Protocol: "HTTP", Address: "127.0.0.1", Port: srv.port(t), Path: "/",
		Interval: time.Minute, FailureThreshold: 1}, State{})
	p.next(t, "p", "healthy", healthyIs(true))
}

// Removing a probe stops its checks; changing one changes what is requested and keeps its state.
func TestRemoveAndChange(t *testing.T) {
	var removed, kept, changed atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/removed":
			removed.Add(1)
		case "/kept":
			kept.Add(1)
		case "/changed":
			changed.Add(1)
			w.WriteHeader(500)
		}
	}))
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	p := start(t, Options{Targets: allowLoopback})
	spec := func(path string) Spec {
		return Spec{Protocol: "HTTP", Address: "127.0.0.1", Port: port, Path: path, Interval: 20 * time.Millisecond, FailureThreshold: 5}
	}
	p.Set("removed", spec("/removed"), State{})
	p.Set("kept", spec("/kept"), State{})
	p.next(t, "removed", "removed probe checked", func(Result) bool { return true })
	p.Remove("removed")
	if p.Len() != 1 {
		t.Fatalf("Len %d after Remove", p.Len())
	}
	// Whatever was in flight has finished once the other probe has been checked a few more times.
	for range 3 {
		p.next(t, "kept", "kept probe checked", func(Result) bool { return true })
	}
	after := removed.Load()
	for range 10 {
		p.next(t, "kept", "kept probe checked", func(Result) bool { return true })
	}
	if n := removed.Load(); n != after {
		t.Errorf("a removed probe was checked %d more times", n-after)
	}

	p.next(t, "kept", "kept healthy", healthyIs(true))
	p.Set("kept", spec("/changed"), State{Healthy: new(false)}) // initial state is ignored: known probe
	r := p.next(t, "kept", "changed spec", func(r Result) bool { return r.Outcome == OutcomeStatusCode })
	if r.State.ConsecutiveFailures != 1 || !healthyIs(true)(r) || changed.Load() == 0 {
		t.Errorf("after the change: %+v (state must carry on)", r)
	}
}

// One scheduler runs many probes with at most Workers checks at once, and every probe gets its
// turn.
func TestManyProbesBoundedConcurrency(t *testing.T) {
	const workers, probes = 4, 80
	var inflight, peak atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for {
			old := peak.Load()
			if n <= old || peak.CompareAndSwap(old, n) {
				break
			}
		}
		// Long enough that the probes due (80 a second) outnumber what the workers can check (40 a
		// second), so the bound is what limits; far below the 1s timeout, so no check is abandoned
		// while the server still counts it.
		time.Sleep(100 * time.Millisecond)
	}))
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	p := start(t, Options{Targets: allowLoopback, Workers: workers})
	for i := range probes {
		p.Set(strconv.Itoa(i), Spec{Protocol: "HTTP", Address: "127.0.0.1", Port: port, Path: "/",
			Interval: time.Second, FailureThreshold: 1}, State{})
	}
	checked := map[string]int{}
	deadline := time.After(waitFor)
	for len(checked) < probes || peak.Load() < workers {
		select {
		case r := <-p.results:
			checked[r.Key]++
		case <-deadline:
			t.Fatalf("%d of %d probes checked, peak concurrency %d", len(checked), probes, peak.Load())
		}
	}
	if got := peak.Load(); got > workers {
		t.Errorf("%d checks at once, bound %d", got, workers)
	}
}
