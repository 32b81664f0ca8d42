// Command dns is `make bench-dns`: it measures the embedded DNS server with dnsperf on loopback, in
// one run, and prints a table.
//
//	(a) static records: the same zone and the same queries against our server, CoreDNS (file
//	    plugin), BIND, Knot DNS and NSD, with each server's QPS as a ratio of CoreDNS's and of Knot's;
//	(b) a loadbalanced host resolved through its geo and weighted steps for an EDNS Client Subnet
//	    address (dnsperf sends one EDNS option on every query, so one client location per run);
//	(c) the median time from a DNSRecord update in the API server to the new answer being served;
//	(d) and (e): (a) and (b) signed on line (DNSSEC, one ECDSA P-256 key), queried with the DO bit,
//	    beside the peers that sign on line too: Knot DNS (mod-onlinesign) and CoreDNS (dnssec).
//
// QPS comes from a run at full load. Latency percentiles come from a second run of each server at a
// fixed rate (-latency-qps, below every server's capacity), with dnsperf reporting each query: at
// full load latency only measures the queue dnsperf keeps full.
//
// Server and load generator share the machine's cores; only ratios from one run mean anything, and
// the load average printed with the table says how busy the machine was.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/miekg/dns"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	dnsservercontroller "github.com/dnspolicy/dnspolicy-controller/controllers/dnsserver"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnssec"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnsserver"
	"github.com/dnspolicy/dnspolicy-controller/pkg/grant"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

const (
	zoneName = "bench.example.com"
	hosts    = 1000
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-dns:", err)
		os.Exit(1)
	}
}

type result struct {
	what, server string
	qps, latency float64 // queries per second, average latency in ms, at full load
	p50, p99     float64 // latency percentiles in ms at the fixed rate
	note         string
}

// measure is what a run reports for one server.
type measure struct {
	qps, latency, p50, p99 float64
}

// bench is one run: its settings, scratch directory and what it measured.
type bench struct {
	dir             string
	clients         int
	duration        time.Duration
	latencyQPS      int
	latencyDuration time.Duration
	results         []result
	// qps are the peers' static QPS by key, for the ratios.
	qps map[string]float64
}

func run() error {
	duration := flag.Duration("duration", 10*time.Second, "dnsperf run length per server")
	clients := flag.Int("clients", 8, "dnsperf clients (-c)")
	coredns := flag.String("coredns", "", "CoreDNS v1.15.0 binary")
	updates := flag.Int("updates", 21, "DNSRecord updates timed for (c); 0 skips (c)")
	latencyQPS := flag.Int("latency-qps", 20000, "query rate of the latency run of each server (dnsperf -Q)")
	latencyDuration := flag.Duration("latency-duration", 5*time.Second, "length of the latency run of each server")
	withSigned := flag.Bool("signed", true, "also measure (d) and (e): the same mixes signed on line, queried with DO")
	peerList := flag.String("peers", "coredns,bind,knot,nsd", "peers measured beside our server on (a), a comma list of coredns, bind, knot, nsd")
	flag.Parse()
	peers := map[string]bool{}
	for _, p := range strings.Split(*peerList, ",") {
		if p = strings.TrimSpace(p); p != "" {
			peers[p] = true
		}
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))

	for _, tool := range []string{"dnsperf", "named", "knotd", "nsd", "dnssec-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found: run `bash hack/dns-tools.sh`", tool)
		}
	}
	if *coredns == "" && peers["coredns"] {
		return errors.New("-coredns is required (make bench-dns builds it into the cache)")
	}
	loadBefore := loadAverage()
	dir, err := os.MkdirTemp("", "bench-dns-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }() // a temporary directory: nothing to do if it stays
	b := &bench{dir: dir, clients: *clients, duration: *duration, latencyQPS: *latencyQPS, latencyDuration: *latencyDuration,
		qps: map[string]float64{}}
	for _, signed := range []bool{false, true} {
		if signed && !*withSigned {
			continue
		}
		if err := b.staticMix(*coredns, peers, signed); err != nil {
			return err
		}
		if err := b.loadbalancedMix(signed); err != nil {
			return err
		}
	}
	// (c) update to served
	var median time.Duration
	var samples []time.Duration
	if *updates > 0 {
		if median, samples, err = updateLatency(*updates); err != nil {
			return fmt.Errorf("update latency: %w", err)
		}
	}
	if err := b.print(median, samples); err != nil {
		return err
	}
	fmt.Printf("\ndnsperf -c %d -l %s on loopback (latency: -Q %d -l %s), %d static A records, %d CPUs, load average %s before, %s after\n",
		*clients, *duration, *latencyQPS, *latencyDuration, hosts, runtime.NumCPU(), loadBefore, loadAverage())
	return nil
}

// perf measures one server: its QPS at full load, and its latency at a fixed rate.
func (b *bench) perf(addr netip.AddrPort, queries string, extra ...string) (measure, error) {
	qps, lat, err := dnsperf(addr, queries, b.clients, b.duration, extra...)
	if err != nil {
		return measure{}, err
	}
	p50, p99, err := latencies(addr, queries, b.latencyQPS, b.latencyDuration, extra...)
	if err != nil {
		return measure{}, err
	}
	return measure{qps: qps, latency: lat, p50: p50, p99: p99}, nil
}

func (b *bench) add(what, server, note string, m measure) {
	b.results = append(b.results, result{what: what, server: server, qps: m.qps, latency: m.latency, p50: m.p50, p99: m.p99, note: note})
}

// staticMix is (a), or signed (d): ours, then each peer on the same zone and queries. Signed, every
// server signs on line with one ECDSA P-256 key (ours a CSK from package dnssec, Knot's made at its
// start, CoreDNS's by dnssec-keygen) and every query has the DO bit, so every answer carries its
// RRSIG; only Knot and CoreDNS sign on line among the peers. Knot runs twice: signing each answer
// as it goes out (mod-onlinesign, the on-line peer) and serving a zone it signed at load.
func (b *bench) staticMix(coredns string, peers map[string]bool, signed bool) error {
	static := staticZone()
	queries := filepath.Join(b.dir, "static.txt")
	if err := writeQueries(queries, static); err != nil {
		return err
	}
	zoneFile := filepath.Join(b.dir, "db."+zoneName)
	if err := writeZoneFile(zoneFile, static); err != nil {
		return err
	}
	what, data, extra := "(a) static", dnsserver.ZoneData{Endpoints: static}, []string(nil)
	if signed {
		keys, err := benchKeys()
		if err != nil {
			return err
		}
		what, data.Signing, extra = "(d) static, signed", keys, []string{"-D"}
	}
	probe := "h1." + zoneName
	m, err := withOurServer(dnsserver.Options{}, data, func(addr netip.AddrPort) (measure, error) {
		if err := checkSigned(addr, probe, nil, signed); err != nil {
			return measure{}, err
		}
		return b.perf(addr, queries, extra...)
	})
	if err != nil {
		return fmt.Errorf("our server: %w", err)
	}
	note := ""
	if signed {
		note = "CSK, algorithm 13"
	}
	b.add(what, "dnspolicy embedded", note, m)
	coreDNSKeyFile := ""
	if signed && peers["coredns"] {
		if coreDNSKeyFile, err = coreDNSKey(b.dir); err != nil {
			return err
		}
	}
	for _, peer := range []struct {
		key, name string
		start     server
		signs     bool
	}{
		{"coredns", "CoreDNS v1.15.0 (file)", corednsCommand(b.dir, coredns, zoneFile, ""), false},
		{"bind", "BIND " + version("named", "-v"), namedCommand(b.dir, zoneFile), false},
		{"knot", "Knot DNS " + version("knotd", "--version"), knotCommand(b.dir, zoneFile, knotUnsigned), false},
		{"nsd", "NSD " + version("nsd", "-v"), nsdCommand(b.dir, zoneFile), false},
		{"coredns", "CoreDNS v1.15.0 (file, dnssec)", corednsCommand(b.dir, coredns, zoneFile, coreDNSKeyFile), true},
		{"knot", "Knot DNS " + version("knotd", "--version") + " (mod-onlinesign)", knotCommand(b.dir, zoneFile, knotOnline), true},
		{"knot-presigned", "Knot DNS " + version("knotd", "--version") + " (dnssec-signing)", knotCommand(b.dir, zoneFile, knotPresigned), true},
	} {
		if !peers[strings.TrimSuffix(peer.key, "-presigned")] || peer.signs != signed {
			continue
		}
		m, err := withProcess(b.dir, peer.start, func(addr netip.AddrPort) (measure, error) {
			if err := checkSigned(addr, probe, nil, signed); err != nil {
				return measure{}, err
			}
			return b.perf(addr, queries, extra...)
		})
		if err != nil {
			return fmt.Errorf("%s: %w", peer.name, err)
		}
		note := ""
		switch {
		case !signed:
		case peer.key == "knot":
			note = "algorithm 13, signs each answer as it is sent"
		case peer.key == "knot-presigned":
			note = "algorithm 13, signs the zone at load"
		default:
			note = "algorithm 13"
		}
		b.add(what, peer.name, note, m)
		b.qps[what+"/"+peer.key] = m.qps
	}
	return nil
}

// loadbalancedMix is (b), or signed (e): the loadbalanced tree, queried with a client subnet; no
// peer serves geo answers.
func (b *bench) loadbalancedMix(signed bool) error {
	geoDB := filepath.Join(b.dir, "geo.mmdb")
	if err := writeGeoDB(geoDB); err != nil {
		return err
	}
	lbQueries := filepath.Join(b.dir, "lb.txt")
	if err := os.WriteFile(lbQueries, []byte("api."+zoneName+" A\n"), 0o600); err != nil {
		return err
	}
	// ECS option: family 1 (IPv4), source prefix 24, scope 0, 192.0.2.0 (IE in the bench database).
	ecs := "8:00011800c00002"
	what, data, extra := "(b) loadbalanced + ECS", dnsserver.ZoneData{Endpoints: loadbalancedZone()}, []string{"-E", ecs}
	note := "CNAME -> geo (IE of IE/US/default) -> weighted (2 targets) -> A, one answer of 4 records"
	if signed {
		keys, err := benchKeys()
		if err != nil {
			return err
		}
		what, data.Signing, extra = "(e) loadbalanced + ECS, signed", keys, append(extra, "-D")
		note = "as (b), each of the 4 records with its RRSIG; CSK, algorithm 13"
	}
	m, err := withOurServer(dnsserver.Options{GeoIPDatabase: geoDB}, data, func(addr netip.AddrPort) (measure, error) {
		if err := checkLoadbalanced(addr); err != nil {
			return measure{}, err
		}
		if err := checkSigned(addr, "api."+zoneName, net.ParseIP("192.0.2.0"), signed); err != nil {
			return measure{}, err
		}
		return b.perf(addr, lbQueries, extra...)
	})
	if err != nil {
		return fmt.Errorf("loadbalanced: %w", err)
	}
	b.add(what, "dnspolicy embedded", note, m)
	return nil
}

// benchKeys is one active combined signing key of algorithm 13, as a zone whose keys the key
// controller made would have.
func benchKeys() (*dnssec.KeySet, error) {
	k, err := dnssec.Generate(zoneName, dnssec.ECDSAP256SHA256, dnssec.CSK)
	if err != nil {
		return nil, err
	}
	k.State, k.WantDS = dnssec.Active, true
	return &dnssec.KeySet{Keys: []dnssec.Key{k}}, nil
}

// checkSigned makes sure a server measured signed really signs (an RRSIG in the answer to a query
// with DO), and one measured unsigned does not, so no row of the table measures the other case.
func checkSigned(addr netip.AddrPort, name string, subnet net.IP, signed bool) error {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	m.SetEdns0(1232, true)
	if subnet != nil {
		m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: subnet})
	}
	r, _, err := (&dns.Client{Timeout: time.Second}).Exchange(m, addr.String())
	if err != nil {
		return err
	}
	sigs := 0
	for _, rr := range r.Answer {
		if _, ok := rr.(*dns.RRSIG); ok {
			sigs++
		}
	}
	if signed && sigs == 0 {
		return fmt.Errorf("measured signed, but %s answers %s with DO without an RRSIG: %v", addr, name, r.Answer)
	}
	if !signed && sigs > 0 {
		return fmt.Errorf("measured unsigned, but %s signs its answer for %s", addr, name)
	}
	return nil
}

// print writes the table, with (c) when it ran.
func (b *bench) print(median time.Duration, samples []time.Duration) error {
	ratio := func(r result, peer string) string {
		if base, ok := b.qps[r.what+"/"+peer]; ok {
			return fmt.Sprintf("%.2fx", r.qps/base)
		}
		return "-"
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "mix\tserver\tQPS\tavg latency ms\tvs CoreDNS\tvs Knot\tp50 ms @%d qps\tp99 ms @%d qps\tnote\n", b.latencyQPS, b.latencyQPS)
	for _, r := range b.results {
		fmt.Fprintf(w, "%s\t%s\t%.0f\t%.3f\t%s\t%s\t%.3f\t%.3f\t%s\n", r.what, r.server, r.qps, r.latency, ratio(r, "coredns"), ratio(r, "knot"), r.p50, r.p99, r.note)
	}
	if len(samples) > 0 {
		fmt.Fprintf(w, "(c) DNSRecord update -> served\tdnspolicy embedded\t-\tmedian %.1f\t-\t-\t-\t-\t%d updates, min %.1f ms, max %.1f ms\n",
			ms(median), len(samples), ms(slices.Min(samples)), ms(slices.Max(samples)))
	}
	return w.Flush()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// withOurServer serves the zone from an embedded server on a loopback port while measure runs.
func withOurServer(opts dnsserver.Options, data dnsserver.ZoneData, run func(netip.AddrPort) (measure, error)) (measure, error) {
	opts.Addr = "127.0.0.1:0"
	s, err := dnsserver.New(opts)
	if err != nil {
		return measure{}, err
	}
	if _, err := s.SetZone(zoneName, data); err != nil {
		return measure{}, err
	}
	if err := s.Start(); err != nil {
		return measure{}, err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	}()
	return run(s.Addr())
}

func waitAnswers(addr netip.AddrPort, name string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), dns.TypeA)
		if r, _, err := (&dns.Client{Timeout: 500 * time.Millisecond}).Exchange(m, addr.String()); err == nil && len(r.Answer) > 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("no answer for %s from %s within 30s", name, addr)
}

// checkLoadbalanced makes sure the ECS client of the benchmark gets the IE branch, so (b) measures
// the geo and weighted steps and not a refusal.
func checkLoadbalanced(addr netip.AddrPort) error {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn("api."+zoneName), dns.TypeA)
	m.SetEdns0(1232, false)
	m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: net.ParseIP("192.0.2.0")})
	r, _, err := (&dns.Client{Timeout: time.Second}).Exchange(m, addr.String())
	if err != nil {
		return err
	}
	if len(r.Answer) != 4 || !strings.HasPrefix(r.Answer[1].(*dns.CNAME).Target, "ie.klb.") {
		return fmt.Errorf("unexpected loadbalanced answer: %v", r.Answer)
	}
	return nil
}

var (
	qpsLine     = regexp.MustCompile(`Queries per second:\s+([0-9.]+)`)
	latencyLine = regexp.MustCompile(`Average Latency \(s\):\s+([0-9.]+)`)
	lostLine    = regexp.MustCompile(`Queries lost:\s+([0-9]+)`)
)

// latencyLine is one query in dnsperf -v output: "> NOERROR h1.bench.example.com A 0.000213".
var verboseLine = regexp.MustCompile(`(?m)^> \S+ \S+ \S+ ([0-9.]+)$`)

// latencies runs dnsperf at a fixed rate, reporting each query, and returns the median and 99th
// percentile latency in milliseconds.
func latencies(addr netip.AddrPort, queries string, qps int, d time.Duration, extra ...string) (float64, float64, error) {
	args := append([]string{"-s", addr.Addr().String(), "-p", strconv.Itoa(int(addr.Port())), "-d", queries,
		"-c", "4", "-l", strconv.Itoa(int(d.Seconds())), "-Q", strconv.Itoa(qps), "-v"}, extra...)
	out, err := exec.Command("dnsperf", args...).CombinedOutput()
	if err != nil {
		return 0, 0, fmt.Errorf("dnsperf: %w\n%.2000s", err, out)
	}
	var lat []float64
	for _, m := range verboseLine.FindAllSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		lat = append(lat, v*1000)
	}
	if len(lat) < 100 {
		return 0, 0, fmt.Errorf("dnsperf -v reported %d latencies:\n%.2000s", len(lat), out)
	}
	slices.Sort(lat)
	return lat[len(lat)/2], lat[len(lat)*99/100], nil
}

// dnsperf runs dnsperf against addr and returns QPS and average latency in milliseconds.
func dnsperf(addr netip.AddrPort, queries string, clients int, d time.Duration, extra ...string) (float64, float64, error) {
	args := append([]string{"-s", addr.Addr().String(), "-p", strconv.Itoa(int(addr.Port())), "-d", queries,
		"-c", strconv.Itoa(clients), "-l", strconv.Itoa(int(d.Seconds())), "-q", "200"}, extra...)
	out, err := exec.Command("dnsperf", args...).CombinedOutput()
	if err != nil {
		return 0, 0, fmt.Errorf("dnsperf: %w\n%s", err, out)
	}
	q, l := qpsLine.FindSubmatch(out), latencyLine.FindSubmatch(out)
	if q == nil || l == nil {
		return 0, 0, fmt.Errorf("dnsperf output not understood:\n%s", out)
	}
	if m := lostLine.FindSubmatch(out); m != nil && string(m[1]) != "0" {
		fmt.Fprintf(os.Stderr, "bench-dns: %s queries lost against %s\n", m[1], addr)
	}
	qps, _ := strconv.ParseFloat(string(q[1]), 64)
	lat, _ := strconv.ParseFloat(string(l[1]), 64)
	return qps, lat * 1000, nil
}

// updateLatency runs the DNS server component on a real control plane and times, n times, the way
// from a DNSRecord update (the API server's answer to it) to the new address being served.
func updateLatency(n int) (time.Duration, []time.Duration, error) {
	env, err := testenv.Start(testenv.Options{WithoutGatewayAPI: true})
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = env.Stop() }()
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS = -1
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: testenv.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		return 0, nil, err
	}
	srv, err := dnsserver.New(dnsserver.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		return 0, nil, err
	}
	// The namespace is granted the zone, as a publisher's is.
	grants := grant.Grants{{Namespaces: []string{"bench-dns"}, Domains: []string{zoneName}}}
	if err := (&dnsservercontroller.Reconciler{Client: mgr.GetClient(), Server: srv, Grants: grants}).SetupWithManager(mgr); err != nil {
		return 0, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "bench-dns: the controller's manager stopped with", err)
		}
	}()

	c := env.Client
	bg := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench-dns"}}
	if err := c.Create(bg, ns); err != nil {
		return 0, nil, err
	}
	host := "www." + zoneName
	rec := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "authoritative-record-" + hash.Base36(host, 8), Labels: map[string]string{
			v1alpha1.AuthoritativeRecordLabel: "true", v1alpha1.AuthoritativeRecordHashLabel: hash.Base36(host, 8), v1alpha1.CoreDNSZoneNameLabel: zoneName,
		}},
		Spec: v1alpha1.DNSRecordSpec{RootHost: host, Endpoints: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(host, "A", 60, "192.0.2.0")}},
	}
	if err := c.Create(bg, rec); err != nil {
		return 0, nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for !srv.Addr().IsValid() || !served(srv.Addr(), host, "192.0.2.0") {
		if time.Now().After(deadline) {
			return 0, nil, errors.New("the first record was not served within 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var samples []time.Duration
	for i := 1; i <= n; i++ {
		want := fmt.Sprintf("192.0.2.%d", i)
		// The server writes the record's Served condition, so an update may meet a newer version.
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(bg, client.ObjectKeyFromObject(rec), rec); err != nil {
				return err
			}
			rec.Spec.Endpoints[0].Targets = v1alpha1.Targets{want}
			return c.Update(bg, rec)
		}); err != nil {
			return 0, nil, err
		}
		start := time.Now()
		for !served(srv.Addr(), host, want) {
			if time.Since(start) > 10*time.Second {
				return 0, nil, fmt.Errorf("update %d not served within 10s", i)
			}
			time.Sleep(time.Millisecond)
		}
		samples = append(samples, time.Since(start))
	}
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	return sorted[len(sorted)/2], samples, nil
}

func served(addr netip.AddrPort, name, want string) bool {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	r, _, err := (&dns.Client{Timeout: 200 * time.Millisecond}).Exchange(m, addr.String())
	if err != nil {
		return false
	}
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok && a.A.String() == want {
			return true
		}
	}
	return false
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
