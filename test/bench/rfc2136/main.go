// Command rfc2136 benchmarks the DNSRecord controller publishing into a zone on BIND through the
// rfc2136 backend (RFC 2136 updates signed with TSIG), beside the same on the emulated Route 53:
// n simple DNSRecords created at once in one zone, the time until all are Ready, and how many write
// messages that took. On BIND the UPDATE messages are counted by BIND itself (its statistics
// channel), so the figure does not rest on our own counting; the backend's batches (Apply calls)
// and the changes they carried are counted beside it. The target is messages that grow with
// batches, not with records. The zone is checked afterwards, so a fast wrong answer fails.
//
//	go run ./test/bench/rfc2136 [-records 1000] [-backends bind,aws] [-batch 50] [-timeout 15m]
//
// One control plane (kube-apiserver + etcd) serves both in turn; each gets a fresh namespace and
// its own manager running the DNSRecord controller with production timings. BIND (named, from
// Debian: `make dns-tools`) runs on a loopback port for the run.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/miekg/dns"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/rfc2136"
	"github.com/dnspolicy/dnspolicy-controller/test/emulators/cloud"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-rfc2136:", err)
		os.Exit(1)
	}
}

type result struct {
	backend  string
	records  int
	ready    time.Duration
	batches  int64 // Apply calls that changed something
	changes  int64 // record-set changes in them
	messages int   // write messages the server counted: UPDATE on BIND, ChangeResourceRecordSets on Route 53
}

func run() error {
	backends := flag.String("backends", "bind,aws", "backends to benchmark, comma-separated: bind (rfc2136), aws (the Route 53 emulator)")
	records := flag.Int("records", 1000, "DNSRecords created at once per backend")
	batch := flag.Int("batch", 0, "RFC2136_BATCH_CHANGE_SIZE of the BIND Secret (0: the backend's default)")
	timeout := flag.Duration("timeout", 15*time.Minute, "give up on a backend when its records are not all Ready by then")
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.FatalLevel)))

	env, err := testenv.Start(testenv.Options{WithoutGatewayAPI: true})
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	fmt.Printf("machine: %d cores, load average %s at start\n", runtime.NumCPU(), loadAverage())
	var results []result
	for _, name := range strings.Split(*backends, ",") {
		var r result
		switch strings.TrimSpace(name) {
		case "bind":
			r, err = benchBIND(env, *records, *batch, *timeout)
		case "aws":
			r, err = benchRoute53(env, *records, *timeout)
		case "":
			continue
		default:
			err = errors.New("unknown backend (bind, aws)")
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Printf("%s: all %d Ready in %s; zone verified\n", r.backend, r.records, r.ready.Round(10*time.Millisecond))
		results = append(results, r)
	}
	fmt.Printf("load average %s at the end\n\n", loadAverage())
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "backend\trecords\ttime to all Ready\tbatches\tchanges\twrite messages (server's count)\tchanges per message")
	for _, r := range results {
		fmt.Fprintf(w, "%s\t%d\t%s\t%d\t%d\t%d\t%.1f\n", r.backend, r.records, r.ready.Round(10*time.Millisecond), r.batches, r.changes,
			r.messages, float64(r.changes)/float64(max(r.messages, 1)))
	}
	return w.Flush()
}

// counting counts a backend's batches that change something, and their changes.
type counting struct {
	providers.Provider
	batches, changes atomic.Int64
}

func (c *counting) Apply(ctx context.Context, zone providers.Zone, state providers.State, changes *providers.Changes) error {
	err := c.Provider.Apply(ctx, zone, state, changes)
	if err == nil && !changes.Empty() {
		c.batches.Add(1)
		c.changes.Add(int64(changes.Len()))
	}
	return err
}

// countingConstructor wraps every backend a constructor builds in one counter.
func countingConstructor(build providers.Constructor, into *counting) providers.Constructor {
	return func(ctx context.Context, secret *corev1.Secret, env providers.Env) (providers.Backend, error) {
		b, err := build(ctx, secret, env)
		if err != nil {
			return b, err
		}
		into.Provider = b.Zones
		b.Zones = into
		return b, nil
	}
}

func benchBIND(env *testenv.Env, n, batch int, timeout time.Duration) (result, error) {
	const zone = "bind.bench.example.com"
	srv, err := startNamed(zone)
	if err != nil {
		return result{}, err
	}
	defer srv.stop()
	data := map[string]string{
		v1alpha1.RFC2136HostKey: srv.addr.Addr().String(), v1alpha1.RFC2136PortKey: fmt.Sprint(srv.addr.Port()),
		v1alpha1.RFC2136ZoneKey: zone, v1alpha1.RFC2136TSIGKeyNameKey: "bench", v1alpha1.RFC2136TSIGSecretKey: srv.secret,
	}
	if batch > 0 {
		data[v1alpha1.RFC2136BatchChangeSizeKey] = fmt.Sprint(batch)
	}
	counter := &counting{}
	factory := providers.NewFactory()
	factory.Register(v1alpha1.SecretTypeRFC2136, countingConstructor(rfc2136.New, counter))
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "provider"}, Type: v1alpha1.SecretTypeRFC2136, StringData: data}
	before, err := srv.updates()
	if err != nil {
		return result{}, err
	}
	r, err := benchOne(env, "bind", zone, n, timeout, factory, secret, func(ctx context.Context) ([]*v1alpha1.Endpoint, error) {
		s := secret.DeepCopy()
		s.Data = map[string][]byte{}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		b, err := rfc2136.New(ctx, s, providers.Env{})
		if err != nil {
			return nil, err
		}
		view, err := b.Zones.Records(ctx, providers.Zone{ID: zone, DNSName: zone})
		return view.Endpoints, err
	})
	if err != nil {
		return result{}, err
	}
	after, err := srv.updates()
	if err != nil {
		return result{}, err
	}
	r.batches, r.changes, r.messages = counter.batches.Load(), counter.changes.Load(), after-before
	return r, nil
}

func benchRoute53(env *testenv.Env, n int, timeout time.Duration) (result, error) {
	c, err := cloud.Start(cloud.AWS)
	if err != nil {
		return result{}, err
	}
	defer c.Close()
	zone := "aws.bench.example.com"
	c.AddZone(zone)
	counter := &counting{}
	factory := providers.NewFactory()
	factory.Register(v1alpha1.SecretTypeAWS, countingConstructor(c.Constructor(), counter))
	factory.AllowEndpointOverride(true)
	r, err := benchOne(env, "aws", zone, n, timeout, factory, c.Secret("", "provider"), func(ctx context.Context) ([]*v1alpha1.Endpoint, error) {
		return c.ReadBack(ctx, zone)
	})
	if err != nil {
		return result{}, err
	}
	r.batches, r.changes, r.messages = counter.batches.Load(), counter.changes.Load(), c.Writes()
	return r, nil
}

// benchOne creates n simple records at once in a fresh namespace with the Secret, times them to
// Ready and checks the zone read back holds each record's A set.
func benchOne(env *testenv.Env, name, zone string, n int, timeout time.Duration, factory *providers.Factory, secret *corev1.Secret,
	readBack func(context.Context) ([]*v1alpha1.Endpoint, error)) (result, error) {
	ns, stop, err := testenv.RunManager(env, "bench-"+name+"-", func(mgr ctrl.Manager) error {
		return app.AddControllers(mgr, app.Options{EnableRecordController: true}, factory, dnsrecord.DefaultOptions())
	})
	if err != nil {
		return result{}, err
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), timeout+time.Minute)
	defer cancel()
	secret = secret.DeepCopy()
	secret.Namespace = ns
	if err := env.Client.Create(ctx, secret); err != nil {
		return result{}, err
	}
	specs := make([]*v1alpha1.DNSRecord, n)
	for i := range specs {
		host := fmt.Sprintf("app%04d.%s", i, zone)
		specs[i] = &v1alpha1.DNSRecord{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app%04d", i), Namespace: ns},
			Spec: v1alpha1.DNSRecordSpec{RootHost: host, ProviderRef: &v1alpha1.ProviderRef{Name: "provider"},
				Endpoints: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(host, v1alpha1.RecordTypeA, 60, address(i))}},
		}
	}
	start := time.Now()
	if err := testenv.CreateAll(ctx, env.Client, specs); err != nil {
		return result{}, err
	}
	for {
		ready, total, err := testenv.CountReady(ctx, env.Client, ns)
		if err != nil {
			return result{}, err
		}
		if ready == n && total == n {
			break
		}
		if time.Since(start) > timeout {
			return result{}, fmt.Errorf("only %d of %d records Ready after %s", ready, n, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	r := result{backend: name, records: n, ready: time.Since(start)}
	got, err := readBack(ctx)
	if err != nil {
		return result{}, fmt.Errorf("reading the zone back: %w", err)
	}
	held := map[string]string{}
	for _, ep := range got {
		if ep.RecordType == v1alpha1.RecordTypeA {
			held[v1alpha1.NormalizeName(ep.DNSName)] = strings.Join(ep.Targets, ",")
		}
	}
	for i, spec := range specs {
		if t := held[spec.Spec.RootHost]; t != address(i) {
			return result{}, fmt.Errorf("all Ready in %s, but the zone holds %s A %q, want %s", r.ready, spec.Spec.RootHost, t, address(i))
		}
	}
	return r, nil
}

func address(i int) string { return fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255) }

// named is a BIND primary of one zone on loopback, with a TSIG key that may update and transfer it
// and a statistics channel that counts the UPDATE messages it takes.
type named struct {
	addr   netip.AddrPort
	stats  string
	secret string
	stop   func()
}

func startNamed(zone string) (*named, error) {
	path, err := exec.LookPath("named")
	if err != nil {
		if path, err = exec.LookPath("/usr/sbin/named"); err != nil {
			return nil, errors.New("named not found: run `make dns-tools`")
		}
	}
	out, err := exec.Command("tsig-keygen", "-a", "hmac-sha256", "bench").Output()
	if err != nil {
		return nil, fmt.Errorf("tsig-keygen (run `make dns-tools`): %w", err)
	}
	m := regexp.MustCompile(`secret "([^"]+)"`).FindSubmatch(out)
	if m == nil {
		return nil, errors.New("tsig-keygen printed no secret")
	}
	dnsAddr, err := freeport.Pick()
	if err != nil {
		return nil, err
	}
	statsAddr, err := freeport.Pick()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "bench-rfc2136-")
	if err != nil {
		return nil, err
	}
	n := &named{addr: netip.MustParseAddrPort(dnsAddr), stats: statsAddr, secret: string(m[1])}
	db := "$TTL 300\n@ SOA ns.example.net. hostmaster.example.net. 1 3600 600 86400 60\n@ NS ns.example.net.\n"
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
statistics-channels { inet 127.0.0.1 port %[3]d allow { 127.0.0.1; }; };
key "bench" { algorithm hmac-sha256; secret "%[4]s"; };
zone "%[5]s" { type primary; file "%[1]s/zone.db"; allow-transfer { key "bench"; }; update-policy { grant "bench" subdomain %[5]s.; }; };
`, dir, n.addr.Port(), netip.MustParseAddrPort(statsAddr).Port(), n.secret, zone)
	for file, text := range map[string]string{"zone.db": db, "named.conf": conf} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(text), 0o600); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(path, "-c", filepath.Join(dir, "named.conf"), "-g", "-n", "1")
	log := &strings.Builder{}
	var mu sync.Mutex
	cmd.Stdout, cmd.Stderr = lockedWriter{&mu, log}, lockedWriter{&mu, log}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	n.stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		_ = os.RemoveAll(dir)
	}
	// Serving once it answers the zone's SOA authoritatively.
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(zone), dns.TypeSOA)
	c := &dns.Client{Net: "tcp", Timeout: time.Second}
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		if r, _, err := c.Exchange(q, dnsAddr); err == nil && r.Authoritative {
			return n, nil
		}
		if time.Since(start) > 30*time.Second {
			n.stop()
			mu.Lock()
			defer mu.Unlock()
			return nil, fmt.Errorf("named did not serve %s within 30 s:\n%s", zone, log)
		}
	}
}

// updates is BIND's count of UPDATE messages received (opcode UPDATE on its statistics channel).
func (n *named) updates() (int, error) {
	resp, err := http.Get("http://" + n.stats + "/json/v1/server")
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	var stats struct {
		Opcodes map[string]int `json:"opcodes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&stats); err != nil {
		return 0, fmt.Errorf("BIND's statistics: %w", err)
	}
	return stats.Opcodes["UPDATE"], nil
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
