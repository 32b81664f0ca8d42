// Command probes benchmarks the health prober: N probes at one interval against loopback HTTP and
// HTTPS servers, reporting the checks it kept up with, its CPU-seconds per probe, and its memory.
//
//	go run ./test/bench/probes [-probes 1000] [-interval 1s] [-duration 30s] [-servers 4]
//
// Each measurement runs in a fresh process of this command (so its CPU and memory are its own, and
// RSS starts clean); the servers run in another process, so their work is not counted. CPU-seconds
// are the measuring process's user + system time (getrusage) over the window after a warm-up; heap
// is HeapInuse after a GC with every probe running; RSS is VmRSS of /proc/self/status at the window's
// end. Every check dials a fresh connection (keep-alives are off in the prober), so HTTPS includes a
// full TLS handshake per check, verified against the CA this command makes.
//
// The peer is the design pkg/prober replaces, measured in the same run: one goroutine and timer
// per probe, and a new http.Transport per check (as Kuadrant's dns-operator probes).
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"log"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/pkg/prober"
)

func main() {
	var (
		probes   = flag.Int("probes", 1000, "probes")
		interval = flag.Duration("interval", time.Second, "interval of every probe")
		duration = flag.Duration("duration", 30*time.Second, "measured window per run")
		warmup   = flag.Duration("warmup", 5*time.Second, "time before the window")
		servers  = flag.Int("servers", 4, "loopback servers per protocol")
		workers  = flag.Int("workers", 128, "the prober's bound on checks at once (the controller's default)")
		serve    = flag.String("serve", "", "internal: serve with the certificate in this directory")
		measure  = flag.String("measure", "", "internal: measure one run (prober-http, prober-https, peer-http, peer-https)")
		targets  = flag.String("targets", "", "internal: comma-separated HTTP ports;HTTPS ports")
		certDir  = flag.String("certs", "", "internal: the directory with ca.pem")
	)
	flag.Parse()
	var err error
	switch {
	case *serve != "":
		err = runServers(*serve, *servers)
	case *measure != "":
		err = runMeasure(*measure, *targets, *certDir, *probes, *workers, *interval, *warmup, *duration)
	default:
		err = orchestrate(*probes, *workers, *interval, *warmup, *duration, *servers)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// result is what one measuring process reports.
type result struct {
	Mode          string
	Checks        int64
	Passed        int64
	WallSeconds   float64
	CPUSeconds    float64
	HeapInuseMB   float64
	RSSMB         float64
	Goroutines    int
	LateChecksPct float64
}

func orchestrate(probes, workers int, interval, warmup, duration time.Duration, servers int) error {
	dir, err := os.MkdirTemp("", "probe-bench-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }() // a temporary directory: nothing to do if it stays
	if err := writeCerts(dir); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	srv := exec.Command(self, "-serve", dir, "-servers", strconv.Itoa(servers))
	srv.Stderr = os.Stderr
	stdin, _ := srv.StdinPipe()
	stdout, _ := srv.StdoutPipe()
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() {
		_ = stdin.Close()
		_ = srv.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return fmt.Errorf("servers: %w", err)
	}
	targets := strings.TrimSpace(line)

	var results []result
	for _, mode := range []string{"prober-http", "peer-http", "prober-https", "peer-https"} {
		cmd := exec.Command(self, "-measure", mode, "-targets", targets, "-certs", dir,
			"-probes", strconv.Itoa(probes), "-workers", strconv.Itoa(workers), "-interval", interval.String(),
			"-warmup", warmup.String(), "-duration", duration.String())
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("%s: %w", mode, err)
		}
		var r result
		if err := json.Unmarshal(out, &r); err != nil {
			return fmt.Errorf("%s: %w: %s", mode, err, out)
		}
		results = append(results, r)
	}
	fmt.Printf("%d probes at %s, prober workers %d, %d loopback servers per protocol, %s window after %s warm-up, GOMAXPROCS %d\n\n",
		probes, interval, workers, servers, duration, warmup, runtime.GOMAXPROCS(0))
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "run\tchecks/s\tpassed\tlate\tCPU cores\tCPU-s per probe per hour\tCPU-ms per check\theap MB\tRSS MB\tgoroutines")
	for _, r := range results {
		perSec := float64(r.Checks) / r.WallSeconds
		cores := r.CPUSeconds / r.WallSeconds
		fmt.Fprintf(w, "%s\t%.0f\t%.1f%%\t%.1f%%\t%.3f\t%.2f\t%.3f\t%.1f\t%.1f\t%d\n", r.Mode, perSec,
			100*float64(r.Passed)/float64(max(r.Checks, 1)), r.LateChecksPct, cores, cores*3600/float64(probes),
			1000*r.CPUSeconds/float64(max(r.Checks, 1)), r.HeapInuseMB, r.RSSMB, r.Goroutines)
	}
	_ = w.Flush()
	for _, proto := range []string{"http", "https"} {
		var ours, peer result
		for _, r := range results {
			switch r.Mode {
			case "prober-" + proto:
				ours = r
			case "peer-" + proto:
				peer = r
			}
		}
		fmt.Printf("\n%s: prober/peer CPU per check %.2f, heap %.2f, RSS %.2f", strings.ToUpper(proto),
			(ours.CPUSeconds/float64(max(ours.Checks, 1)))/(peer.CPUSeconds/float64(max(peer.Checks, 1))),
			ours.HeapInuseMB/peer.HeapInuseMB, ours.RSSMB/peer.RSSMB)
	}
	fmt.Println()
	return nil
}

// runMeasure runs one mode and prints its result as JSON.
func runMeasure(mode, targets, certDir string, probes, workers int, interval, warmup, duration time.Duration) error {
	httpPorts, httpsPorts, _ := strings.Cut(targets, ";")
	ports := strings.Split(httpPorts, ",")
	protocol := "HTTP"
	if strings.HasSuffix(mode, "https") {
		ports, protocol = strings.Split(httpsPorts, ","), "HTTPS"
	}
	pool, err := loadCA(certDir)
	if err != nil {
		return err
	}
	var checks, passed, late atomic.Int64
	specs := make([]prober.Spec, probes)
	for i := range specs {
		port, _ := strconv.Atoi(ports[i%len(ports)])
		specs[i] = prober.Spec{Protocol: protocol, Address: "127.0.0.1", Hostname: "gw.bench.example.com", Port: port,
			Path: "/healthz", Interval: interval, FailureThreshold: 3}
	}
	counting := atomic.Bool{}
	// A check counts as late when it starts more than a fifth of an interval after it was due.
	record := func(ok bool, lateBy time.Duration) {
		if !counting.Load() {
			return
		}
		checks.Add(1)
		if ok {
			passed.Add(1)
		}
		if lateBy > interval/5 {
			late.Add(1)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if strings.HasPrefix(mode, "prober") {
		var mu sync.Mutex
		last := map[string]time.Time{}
		// The bench's gateways are on loopback, which checks reach only when allowed.
		allow := prober.TargetRules{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
		p := prober.New(prober.Options{Workers: workers, RootCAs: pool, Targets: allow, OnResult: func(r prober.Result) {
			mu.Lock()
			prev, ok := last[r.Key]
			last[r.Key] = r.CheckedAt
			mu.Unlock()
			lateBy := time.Duration(0)
			if ok {
				// Jitter moves a check by up to 10% of the interval either way.
				lateBy = r.CheckedAt.Sub(prev) - interval
			}
			record(r.Outcome == prober.OutcomePassed, lateBy)
		}})
		go func() { _ = p.Run(ctx) }()
		for i, s := range specs {
			p.Set(strconv.Itoa(i), s, prober.State{})
		}
	} else {
		for _, s := range specs {
			go peerLoop(ctx, s, pool, record)
		}
	}
	time.Sleep(warmup)
	var before syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	counting.Store(true)
	start := time.Now()
	time.Sleep(duration)
	counting.Store(false)
	wall := time.Since(start)
	var after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := tv(after.Utime) + tv(after.Stime) - tv(before.Utime) - tv(before.Stime)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r := result{
		Mode: mode, Checks: checks.Load(), Passed: passed.Load(), WallSeconds: wall.Seconds(), CPUSeconds: cpu,
		HeapInuseMB: float64(ms.HeapInuse) / (1 << 20), RSSMB: rssMB(), Goroutines: runtime.NumGoroutine(),
		LateChecksPct: 100 * float64(late.Load()) / float64(max(checks.Load(), 1)),
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

// peerLoop is the peer design: a goroutine and a timer per probe, a new transport per check.
func peerLoop(ctx context.Context, s prober.Spec, pool *x509.CertPool, record func(bool, time.Duration)) {
	select {
	case <-time.After(mrand.N(s.Interval)):
	case <-ctx.Done():
		return
	}
	scheme := strings.ToLower(s.Protocol)
	url := fmt.Sprintf("%s://%s:%d%s", scheme, s.Hostname, s.Port, s.Path)
	next := time.Now()
	for {
		lateBy := time.Since(next)
		dialer := &net.Dialer{Timeout: s.Interval}
		tr := &http.Transport{
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return dialer.DialContext(ctx, network, net.JoinHostPort(s.Address, strconv.Itoa(s.Port)))
			},
			TLSClientConfig:   &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
			DisableKeepAlives: true,
		}
		client := &http.Client{Transport: tr, Timeout: s.Interval}
		ok := false
		if resp, err := client.Get(url); err == nil {
			_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
			_ = resp.Body.Close()
			ok = resp.StatusCode == 200 || resp.StatusCode == 201
		}
		tr.CloseIdleConnections()
		record(ok, lateBy)
		next = next.Add(s.Interval)
		select {
		case <-time.After(time.Until(next)):
		case <-ctx.Done():
			return
		}
	}
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

func rssMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// runServers starts n HTTP and n HTTPS servers on loopback, prints their ports, and serves until
// stdin closes.
func runServers(dir string, n int) error {
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "leaf.pem"), filepath.Join(dir, "leaf-key.pem"))
	if err != nil {
		return err
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })
	var plain, secure []string
	for range n {
		for _, useTLS := range []bool{false, true} {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return err
			}
			// A check cancelled at shutdown resets its handshake; that is not worth a log line.
			srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
			port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
			if useTLS {
				l = tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
				secure = append(secure, port)
			} else {
				plain = append(plain, port)
			}
			go func() { _ = srv.Serve(l) }()
		}
	}
	fmt.Printf("%s;%s\n", strings.Join(plain, ","), strings.Join(secure, ","))
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}

func writeCerts(dir string) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Probe Bench CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "gw.bench.example.com"},
		DNSNames: []string{"gw.bench.example.com"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	var leaf bytes.Buffer
	_ = pem.Encode(&leaf, &pem.Block{Type: "CERTIFICATE", Bytes: leafDER})
	_ = pem.Encode(&leaf, &pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	files := map[string][]byte{
		"ca.pem":       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		"leaf.pem":     leaf.Bytes(),
		"leaf-key.pem": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func loadCA(dir string) (*x509.CertPool, error) {
	b, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("no CA in %s", dir)
	}
	return pool, nil
}
