// Command clouds benchmarks the DNSRecord controller against each emulated cloud (Route 53, Cloud
// DNS, Azure DNS + Traffic Manager) with the clouds' real rate limits: 64 loadbalanced DNSRecords
// created at once in one zone, the time until all 64 are Ready, and the API calls that took, by
// operation. It checks the zone afterwards, so a fast wrong answer fails instead of being reported.
//
//	go run ./test/bench/clouds [-clouds aws,google,azure] [-records 64] [-timeout 15m]
//
// One control plane (kube-apiserver + etcd, see hack/controlplane) serves every cloud in turn; each
// cloud gets a fresh emulator, a fresh namespace and its own manager running the DNSRecord controller
// with production timings (dnsrecord.DefaultOptions, publish.DefaultOptions) and the backend as the
// binary registers it.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"text/tabwriter"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/test/emulators/cloud"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// Azure DNS's documented limit the minimum is computed from.
const (
	azureWritesPerWindow = 200
	azureWindow          = time.Minute
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-clouds:", err)
		os.Exit(1)
	}
}

type result struct {
	cloud     string
	records   int
	ready     time.Duration
	calls     map[string]int
	writes    int
	recordSet int // record sets in the zone (what Dump lists, the apex SOA and NS left out)
}

func run() error {
	clouds := flag.String("clouds", strings.Join(cloud.Names(), ","), "clouds to benchmark, comma-separated")
	records := flag.Int("records", 64, "loadbalanced DNSRecords created at once per cloud")
	timeout := flag.Duration("timeout", 15*time.Minute, "give up on a cloud when its records are not all Ready by then")
	verbose := flag.Bool("v", false, "log the controllers' errors, and Ready records and API calls every second")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of this process (controller, emulators) to the file")
	flag.Parse()

	level := zapcore.FatalLevel
	if *verbose {
		level = zapcore.ErrorLevel
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(level)))

	env, err := testenv.Start(testenv.Options{WithoutGatewayAPI: true})
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	fmt.Printf("machine: %d cores, load average %s at start\n", runtime.NumCPU(), loadAverage())
	var results []result
	for _, name := range strings.Split(*clouds, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		fmt.Printf("%s: creating %d loadbalanced DNSRecords at once...\n", name, *records)
		r, err := bench(env, name, *records, *timeout, *verbose)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Printf("%s: all %d Ready in %s; zone verified (%d record sets)\n", name, r.records, r.ready.Round(10*time.Millisecond), r.recordSet)
		results = append(results, r)
	}
	fmt.Printf("load average %s at the end\n\n", loadAverage())
	report(results)
	return nil
}

// bench runs one cloud: a fresh emulator, a manager, a Secret, a zone, n records at once.
func bench(env *testenv.Env, name string, n int, timeout time.Duration, verbose bool) (result, error) {
	c, err := cloud.Start(name)
	if err != nil {
		return result{}, err
	}
	defer c.Close()
	factory := providers.NewFactory()
	c.Register(factory)
	ns, stop, err := testenv.RunManager(env, "bench-"+name+"-", func(mgr ctrl.Manager) error {
		return app.AddControllers(mgr, app.Options{EnableRecordController: true}, factory, dnsrecord.DefaultOptions())
	})
	if err != nil {
		return result{}, err
	}
	defer stop()

	ctx, cancel := context.WithTimeout(context.Background(), timeout+time.Minute)
	defer cancel()
	if err := env.Client.Create(ctx, c.Secret(ns, "provider")); err != nil {
		return result{}, err
	}
	zone := name + ".bench.example.com"
	c.AddZone(zone)

	specs := make([]*v1alpha1.DNSRecord, n)
	for i := range specs {
		host := fmt.Sprintf("app%02d.%s", i, zone)
		specs[i] = &v1alpha1.DNSRecord{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app%02d", i), Namespace: ns},
			Spec: v1alpha1.DNSRecordSpec{
				RootHost:    host,
				ProviderRef: &v1alpha1.ProviderRef{Name: "provider"},
				Endpoints:   loadbalanced(name, host, i),
			},
		}
	}

	start := time.Now()
	if err := testenv.CreateAll(ctx, env.Client, specs); err != nil {
		return result{}, err
	}
	deadline := start.Add(timeout)
	var ready time.Duration
	lastTrace := start
	for {
		n, total, err := testenv.CountReady(ctx, env.Client, ns)
		if err != nil {
			return result{}, err
		}
		if verbose && time.Since(lastTrace) >= time.Second {
			lastTrace = time.Now()
			fmt.Printf("  %6.1fs  %d of %d Ready  %s\n", time.Since(start).Seconds(), n, total, cloud.FormatCalls(c.Calls()))
		}
		if n == len(specs) && total == len(specs) {
			ready = time.Since(start)
			break
		}
		if time.Now().After(deadline) {
			return result{}, fmt.Errorf("only %d of %d records Ready after %s (calls: %s)", n, len(specs), timeout, cloud.FormatCalls(c.Calls()))
		}
		time.Sleep(50 * time.Millisecond)
	}
	r := result{cloud: name, records: len(specs), ready: ready, calls: c.Calls(), writes: c.Writes()}
	if r.recordSet, err = verify(ctx, c, env.Client, ns, zone, specs); err != nil {
		return result{}, fmt.Errorf("all Ready in %s, but the zone is wrong: %w", ready, err)
	}
	return r, nil
}

// geoCodes are the places the records route by, in the cloud's terms: Google Cloud regions for
// Cloud DNS, ISO countries elsewhere.
func geoCodes(name string) []string {
	if name == cloud.Google {
		return []string{"europe-west1", "us-east1", "europe-west3", "asia-northeast1"}
	}
	return []string{"IE", "US", "DE", "JP"}
}

// loadbalanced is the i-th record's Kuadrant loadbalanced tree (DESIGN 3): host -> klb, a geo set
// per place (two or three places), a weighted set per place pointing at a gateway's leaf A, and on
// every fourth record the default geo set too (which Cloud DNS cannot express and drops).
func loadbalanced(cloudName, host string, i int) []*v1alpha1.Endpoint {
	klb := "klb." + host
	codes := geoCodes(cloudName)
	places := 2 + i%2
	eps := []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(host, v1alpha1.RecordTypeCNAME, 300, klb)}
	for j := range places {
		code := codes[(i+j)%len(codes)]
		geoName := strings.ToLower(code) + "." + klb
		leaf := fmt.Sprintf("c%04x-g%d.%s", 0xbe00+i, j, klb)
		eps = append(eps,
			v1alpha1.NewEndpoint(klb, v1alpha1.RecordTypeCNAME, 300, geoName).
				WithSetIdentifier(code).WithProviderSpecific(v1alpha1.ProviderSpecificGeoCode, code),
			v1alpha1.NewEndpoint(geoName, v1alpha1.RecordTypeCNAME, 60, leaf).
				WithSetIdentifier(leaf).WithProviderSpecific(v1alpha1.ProviderSpecificWeight, "120"),
			v1alpha1.NewEndpoint(leaf, v1alpha1.RecordTypeA, 60, fmt.Sprintf("10.%d.%d.%d", j, i/250, i%250+1)),
		)
		if j == 0 && i%4 == 0 {
			eps = append(eps, v1alpha1.NewEndpoint(klb, v1alpha1.RecordTypeCNAME, 300, geoName).
				WithSetIdentifier("default").WithProviderSpecific(v1alpha1.ProviderSpecificGeoCode, v1alpha1.WildcardGeo))
		}
	}
	return eps
}

// verify checks the outcome against the zone as the cloud holds it: every record is Ready with
// reason ProviderSuccess and reports as published exactly its spec (less what the backend cannot
// express: Cloud DNS's default geo set); the zone, read back through the backend, holds exactly the
// union of what the records published, each with one ownership TXT; the cloud's own dump of the
// zone is as large as that union requires. It returns the number of record sets in the dump.
func verify(ctx context.Context, c *cloud.Cloud, kube client.Client, ns, zone string, specs []*v1alpha1.DNSRecord) (int, error) {
	want := map[v1alpha1.EndpointKey]*v1alpha1.Endpoint{}
	for _, spec := range specs {
		r := &v1alpha1.DNSRecord{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(spec), r); err != nil {
			return 0, err
		}
		cond := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionTypeReady)
		if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != v1alpha1.ReasonProviderSuccess {
			return 0, fmt.Errorf("record %s: Ready %v", r.Name, cond)
		}
		expect := map[v1alpha1.EndpointKey]*v1alpha1.Endpoint{}
		for _, ep := range spec.Spec.Endpoints {
			if geo, _ := ep.GetProviderSpecific(v1alpha1.ProviderSpecificGeoCode); geo == v1alpha1.WildcardGeo && c.Name == cloud.Google {
				continue
			}
			expect[ep.Key()] = ep
		}
		if len(r.Status.Endpoints) != len(expect) {
			return 0, fmt.Errorf("record %s published %d endpoints, want %d", r.Name, len(r.Status.Endpoints), len(expect))
		}
		for _, ep := range r.Status.Endpoints {
			e, ok := expect[ep.Key()]
			if !ok || !e.Targets.SameTargets(ep.Targets) {
				return 0, fmt.Errorf("record %s published %s, which its spec does not hold", r.Name, ep)
			}
			want[ep.Key()] = ep
		}
	}
	got, err := c.ReadBack(ctx, zone)
	if err != nil {
		return 0, fmt.Errorf("reading the zone back: %w", err)
	}
	seen := map[v1alpha1.EndpointKey]bool{}
	txt := 0
	for _, ep := range got {
		switch ep.RecordType {
		case v1alpha1.RecordTypeTXT:
			if strings.HasPrefix(ep.DNSName, "kuadrant-") {
				txt++
			}
			continue
		case "NS", "SOA":
			continue
		}
		w, ok := want[ep.Key()]
		if !ok {
			return 0, fmt.Errorf("the zone holds %s, which no record published", ep)
		}
		if !w.Targets.SameTargets(ep.Targets) {
			return 0, fmt.Errorf("the zone holds %s, the record published %s", ep, w)
		}
		seen[ep.Key()] = true
	}
	if len(seen) != len(want) {
		for k, w := range want {
			if !seen[k] {
				return 0, fmt.Errorf("the zone lacks %s (%d of %d published endpoints present)", w, len(seen), len(want))
			}
		}
	}
	if txt != len(want) {
		return 0, fmt.Errorf("the zone holds %d ownership TXTs for %d endpoints, want one each", txt, len(want))
	}
	sets := 0
	for _, line := range c.Dump(zone) {
		if f := strings.Fields(line); len(f) >= 2 && (f[1] == "SOA" || f[1] == "NS") {
			continue
		}
		sets++
	}
	// Every cloud holds at least one record set per name and type, and for the ownership TXTs at
	// most as many again, plus Cloud DNS's companion TXT of each routed set; Route 53 holds one
	// record set per endpoint and one per ownership TXT.
	names := map[string]bool{}
	for k := range want {
		names[k.DNSName+" "+k.RecordType] = true
	}
	if sets < len(names) || sets > 3*len(want) || (c.Name == cloud.AWS && sets != 2*len(want)) {
		return 0, fmt.Errorf("the cloud lists %d record sets for %d endpoints on %d names and types (plus their TXTs)", sets, len(want), len(names))
	}
	return sets, nil
}

// azureMinimum is the least time Azure DNS's limit allows for n record-set writes to one zone:
// with at most 200 writes in any 60 s window, writes 1-200 can land at once, 201-400 no sooner than
// 60 s after the first, and so on, so the last of n lands no sooner than (ceil(n/200)-1) minutes
// after the first.
func azureMinimum(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	return time.Duration(math.Ceil(float64(n)/azureWritesPerWindow)-1) * azureWindow
}

func report(results []result) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "cloud\trecords\ttime to all Ready\twrite calls\trecord sets\tAPI calls by operation")
	for _, r := range results {
		fmt.Fprintf(w, "%s\t%d\t%s\t%d\t%d\t%s\n", r.cloud, r.records, r.ready.Round(10*time.Millisecond), r.writes, r.recordSet, cloud.FormatCalls(r.calls))
	}
	_ = w.Flush()
	for _, r := range results {
		if r.cloud != cloud.Azure {
			continue
		}
		minimum := azureMinimum(r.recordSet)
		fmt.Printf("\nazure: %d record sets written to one zone (record-set write calls, 429s included: %d);\n", r.recordSet,
			r.calls["RecordSets.CreateOrUpdate"]+r.calls["RecordSets.Delete"])
		fmt.Printf("  minimum under 200 writes per sliding 60 s window = (ceil(%d/200)-1) min = %s;\n", r.recordSet, minimum)
		if minimum > 0 {
			fmt.Printf("  time to all Ready %s = %.2fx the minimum\n", r.ready.Round(10*time.Millisecond), r.ready.Seconds()/minimum.Seconds())
		} else {
			fmt.Printf("  time to all Ready %s (the writes fit one window)\n", r.ready.Round(10*time.Millisecond))
		}
	}
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
