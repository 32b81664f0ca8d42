// Command scale benchmarks the controller binary at the size of a large zone: N DNSRecords (one A
// endpoint each, one inmemory zone) created at once beside 10,000 unrelated Secrets, on a real
// kube-apiserver + etcd. For each size it reports the time from the first create until all are
// Ready, the controller's CPU-seconds and API-server writes per record, its idle and peak RSS, and
// then the time to delete all N, so a cost per record that grows with the zone shows across sizes.
//
//	go run ./test/bench/scale [-records 1000,5000,10000] [-secrets 10000] [-timeout 10m]
//
// The controller is the binary built from ./cmd/dnspolicy-controller, run as a separate process with
// its default flags (both controllers, every backend) against one control plane (hack/controlplane),
// so its memory and CPU are its own: peak RSS is VmHWM of /proc/<pid>/status, CPU-seconds are utime
// + stime of /proc/<pid>/stat, and its API-server writes are the POST, PUT, PATCH and DELETE counts of
// client-go's rest_client_requests_total on its metrics endpoint (loopback). Each size gets a fresh
// controller process (so a fresh inmemory zone and a clean VmHWM) and a fresh namespace.
//
// -inprocess runs the same controller (app.Run, as main does) inside this process instead, for
// profiles: -cpuprofile covers the create-to-Ready phase (and X.delete the deletions), with the
// controller's goroutines labelled side=controller (go tool pprof -tagfocus side=controller);
// -memprofile writes heap profiles at the first create (.base), at half Ready (.half) and at all
// Ready, and at the deletions' start and end (.delete.base, .delete), so `go tool pprof -base
// X.base X` shows the allocations of a phase alone. RSS and CPU then include the harness.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/dnspolicy/dnspolicy-controller/apis"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/hack/controlplane"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
)

// The targets for 10,000 records (acceptance 5).
const (
	targetRecords = 10000
	targetReady   = 2 * time.Minute
	targetPeakRSS = 250 << 20
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat: 100 on every Linux
// architecture Go supports.
const clockTicks = 100

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-scale:", err)
		os.Exit(1)
	}
}

type config struct {
	sizes         []int
	secrets       int
	creators      int
	timeout       time.Duration
	deleteTimeout time.Duration
	progress      time.Duration
	inProcess     bool
	cpuProfile    string
	memProfile    string
	binary        string
	workDir       string
}

func run() error {
	var c config
	sizes := flag.String("records", "1000,5000,10000", "comma-separated numbers of DNSRecords, one run each")
	flag.IntVar(&c.secrets, "secrets", 10000, "unrelated Secrets created before the first run (kubectl-applied: data and last-applied-configuration)")
	flag.IntVar(&c.creators, "creators", 100, "concurrent clients creating (and deleting) the records")
	flag.DurationVar(&c.timeout, "timeout", 10*time.Minute, "per size: stop waiting for Ready after this long and report how far it got")
	flag.DurationVar(&c.deleteTimeout, "delete-timeout", 10*time.Minute, "per size: stop waiting for the deletions after this long")
	flag.DurationVar(&c.progress, "progress", 10*time.Second, "print Ready records, RSS and CPU this often (0: never)")
	flag.BoolVar(&c.inProcess, "inprocess", false, "run the controller in this process (for profiles); one size only")
	flag.StringVar(&c.cpuProfile, "cpuprofile", "", "with -inprocess: CPU profile of the create-to-Ready phase (and of the deletions, with suffix .delete)")
	flag.StringVar(&c.memProfile, "memprofile", "", "with -inprocess: heap profiles at the first create (.base), half Ready (.half), all Ready, and the deletions' start and end (.delete.base, .delete)")
	flag.StringVar(&c.binary, "controller", "", "controller binary to run (default: built from ./cmd/dnspolicy-controller)")
	flag.Parse()
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return fmt.Errorf("-records: %q is not a positive number", s)
		}
		c.sizes = append(c.sizes, n)
	}
	if c.inProcess && len(c.sizes) != 1 {
		return errors.New("-inprocess runs one size (the manager registers its controllers once per process)")
	}
	if !c.inProcess && (c.cpuProfile != "" || c.memProfile != "") {
		return errors.New("-cpuprofile and -memprofile profile this process: add -inprocess")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.FatalLevel)))

	var err error
	if c.workDir, err = os.MkdirTemp("", "bench-scale-"); err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(c.workDir) }()
	if !c.inProcess && c.binary == "" {
		if c.binary, err = build(c.workDir); err != nil {
			return err
		}
	}

	env, err := controlplane.New(controlplane.Options{})
	if err != nil {
		return err
	}
	cfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("starting the control plane: %w", err)
	}
	defer func() { _ = env.Stop() }()
	h, err := newHarness(cfg)
	if err != nil {
		return err
	}

	fmt.Printf("machine: %d cores, load average %s at start\n", runtime.NumCPU(), loadAverage())
	start := time.Now()
	if err := h.createSecrets(ctx, c.secrets, c.creators); err != nil {
		return err
	}
	fmt.Printf("%d unrelated Secrets created in %s\n", c.secrets, time.Since(start).Round(100*time.Millisecond))

	var results []result
	for _, n := range c.sizes {
		r, err := h.bench(ctx, env, &c, n)
		if err != nil {
			return fmt.Errorf("%d records: %w", n, err)
		}
		results = append(results, r)
	}
	fmt.Printf("load average %s at the end\n\n", loadAverage())
	report(results, c.inProcess)
	return nil
}

// build compiles the controller binary into dir.
func build(dir string) (string, error) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "dnspolicy-controller")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/dnspolicy-controller")
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building the controller: %w", err)
	}
	return bin, nil
}

// harness is the benchmark's own connection: no client-side rate limit, and its writes counted so
// an in-process controller's count can be told apart from them.
type harness struct {
	cfg    *rest.Config
	client client.Client
	writes atomic.Int64
}

func newHarness(cfg *rest.Config) (*harness, error) {
	h := &harness{cfg: rest.CopyConfig(cfg)}
	h.cfg.QPS = -1 // no client-side throttling: the harness must not limit the burst
	h.cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if isWrite(req.Method) {
				h.writes.Add(1)
			}
			return rt.RoundTrip(req)
		})
	})
	var err error
	h.client, err = client.New(h.cfg, client.Options{Scheme: apis.Scheme()})
	return h, err
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func isWrite(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// parallel runs do(i) for i in [0, n) on workers goroutines and returns the errors joined.
func parallel(ctx context.Context, n, workers int, do func(ctx context.Context, i int) error) error {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := do(ctx, i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	return errors.Join(errs...)
}

// secretsPerNamespace spreads the unrelated Secrets over namespaces as a cluster's would be.
const secretsPerNamespace = 1000

// createSecrets creates n Secrets as `kubectl apply` leaves them: a few hundred bytes of data, and
// the same again in the last-applied-configuration annotation.
func (h *harness) createSecrets(ctx context.Context, n, workers int) error {
	for i := 0; i < (n+secretsPerNamespace-1)/secretsPerNamespace; i++ {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-secrets-%d", i)}}
		if err := h.client.Create(ctx, ns); err != nil {
			return err
		}
	}
	value := strings.Repeat("s3cr3t-", 40) // 280 bytes
	return parallel(ctx, n, workers, func(ctx context.Context, i int) error {
		name, ns := fmt.Sprintf("app-%05d", i), fmt.Sprintf("bench-secrets-%d", i/secretsPerNamespace)
		data := map[string][]byte{"password": []byte(fmt.Sprintf("%s%05d", value, i))}
		applied := fmt.Sprintf(`{"apiVersion":"v1","data":{"password":%q},"kind":"Secret","metadata":{"annotations":{},"name":%q,"namespace":%q},"type":"Opaque"}`,
			data["password"], name, ns)
		return h.client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{
				"kubectl.kubernetes.io/last-applied-configuration": applied,
			}},
			Type: corev1.SecretTypeOpaque,
			Data: data,
		})
	})
}

// result is one size's figures.
type result struct {
	records      int
	created      time.Duration // until every create call returned
	ready        int           // Ready at the end of the wait
	half, all    time.Duration // until half, and all, were Ready (all: 0 when the wait timed out)
	waited       time.Duration
	cpu          float64 // controller CPU-seconds from the first create until all Ready
	writes       map[string]float64
	idleRSS      uint64
	peakRSS      uint64
	deleted      int
	readyDeleted int // of the records Ready when the deletions began, how many were gone at the end
	// controlPlaneCPU is the kube-apiserver's and etcd's CPU-seconds from the first create until
	// all Ready.
	controlPlaneCPU float64
	readyAtDelete   int
	deleteTime      time.Duration
	deleteAll       bool
	deleteCPU       float64
	deleteWrites    float64
	leftForcibly    int
	controllerLog   string
}

func (r result) totalWrites() float64 {
	var n float64
	for _, v := range r.writes {
		n += v
	}
	return n
}

// bench runs one size with a fresh controller and namespace.
func (h *harness) bench(ctx context.Context, env *envtest.Environment, c *config, n int) (result, error) {
	r := result{records: n}
	ns := fmt.Sprintf("bench-scale-%d", n)
	zone := fmt.Sprintf("scale%d.example.com", n)
	if err := h.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return r, err
	}
	if err := h.client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "provider", Namespace: ns},
		Type:       v1alpha1.SecretTypeInMemory,
		StringData: map[string]string{v1alpha1.InMemInitZonesKey: zone},
	}); err != nil {
		return r, err
	}

	ctl, err := startController(ctx, env, c, n)
	if err != nil {
		return r, err
	}
	defer ctl.stop()
	r.controllerLog = ctl.log
	if err := ctl.waitReady(ctx, 2*time.Minute); err != nil {
		return r, err
	}
	if r.idleRSS, err = ctl.settledRSS(ctx); err != nil {
		return r, err
	}
	fmt.Printf("%d records: controller running (pid %d), idle RSS %s with the Secrets cached\n", n, ctl.pid, mib(r.idleRSS))

	w, err := watchRecords(ctx, h.cfg, ns)
	if err != nil {
		return r, err
	}
	defer w.stop()

	specs := make([]*v1alpha1.DNSRecord, n)
	for i := range specs {
		host := fmt.Sprintf("h%05d.%s", i, zone)
		specs[i] = &v1alpha1.DNSRecord{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("r%05d", i), Namespace: ns},
			Spec: v1alpha1.DNSRecordSpec{
				RootHost:    host,
				ProviderRef: &v1alpha1.ProviderRef{Name: "provider"},
				Endpoints:   []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(host, v1alpha1.RecordTypeA, 60, address(i))},
			},
		}
	}

	before, err := ctl.sample(h)
	if err != nil {
		return r, err
	}
	if err := ctl.profileStart(c, ""); err != nil {
		return r, err
	}
	start := time.Now()
	created := make(chan error, 1)
	go func() {
		err := parallel(ctx, n, c.creators, func(ctx context.Context, i int) error {
			return h.client.Create(ctx, specs[i].DeepCopy())
		})
		r.created = time.Since(start)
		created <- err
	}()
	lastProgress := start
	for {
		ready, _ := w.counts()
		if r.half == 0 && ready*2 >= n {
			r.half = time.Since(start)
			ctl.heapProfile(c, ".half")
		}
		if ready == n {
			r.all = time.Since(start)
			break
		}
		if time.Since(start) > c.timeout {
			break
		}
		if c.progress > 0 && time.Since(lastProgress) >= c.progress {
			lastProgress = time.Now()
			ctl.printProgress(start, "Ready", ready, n)
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	r.waited = time.Since(start)
	after, err := ctl.sample(h)
	if err != nil {
		return r, err
	}
	ctl.profileStop(c, "")
	if err := <-created; err != nil {
		return r, fmt.Errorf("creating the records: %w", err)
	}
	r.ready, _ = w.counts()
	r.cpu = after.cpu - before.cpu
	r.controlPlaneCPU = after.controlPlane - before.controlPlane
	r.writes = map[string]float64{}
	for m, v := range after.writes {
		r.writes[m] = v - before.writes[m]
	}
	if c.inProcess {
		// The metrics count every client in the process; the harness's own writes are not the
		// controller's.
		r.writes["harness (subtracted)"] = -float64(after.harnessWrites - before.harnessWrites)
	}
	if r.all > 0 {
		fmt.Printf("%d records: all Ready in %s (half in %s)\n", n, r.all.Round(10*time.Millisecond), r.half.Round(10*time.Millisecond))
		if err := w.verify(specs); err != nil {
			return r, fmt.Errorf("all Ready, but: %w", err)
		}
	} else {
		fmt.Printf("%d records: only %d Ready after %s\n", n, r.ready, c.timeout)
	}

	// Deletion: every record at once; the controller withdraws each from the zone and releases its
	// finalizer.
	before, err = ctl.sample(h)
	if err != nil {
		return r, err
	}
	readyNames := w.readyNames()
	r.readyAtDelete = len(readyNames)
	if err := ctl.profileStart(c, ".delete"); err != nil {
		return r, err
	}
	start = time.Now()
	if err := parallel(ctx, n, c.creators, func(ctx context.Context, i int) error {
		return client.IgnoreNotFound(h.client.Delete(ctx, specs[i].DeepCopy()))
	}); err != nil {
		return r, fmt.Errorf("deleting the records: %w", err)
	}
	lastProgress = start
	for {
		_, left := w.counts()
		if left == 0 {
			r.deleteAll = true
			break
		}
		if time.Since(start) > c.deleteTimeout {
			break
		}
		if c.progress > 0 && time.Since(lastProgress) >= c.progress {
			lastProgress = time.Now()
			ctl.printProgress(start, "deleted", n-left, n)
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	r.deleteTime = time.Since(start)
	ctl.profileStop(c, ".delete")
	after, err = ctl.sample(h)
	if err != nil {
		return r, err
	}
	r.peakRSS = after.hwm
	_, left := w.counts()
	r.deleted = n - left
	r.readyDeleted = r.readyAtDelete - w.present(readyNames)
	r.deleteCPU = after.cpu - before.cpu
	for m, v := range after.writes {
		r.deleteWrites += v - before.writes[m]
	}
	if c.inProcess {
		r.deleteWrites -= float64(after.harnessWrites - before.harnessWrites)
	}
	fmt.Printf("%d records: %d deleted in %s (%d of the %d Ready ones; a record the controller never reached has no finalizer and goes at once)\n",
		n, r.deleted, r.deleteTime.Round(10*time.Millisecond), r.readyDeleted, r.readyAtDelete)

	// Records the controller did not release in time would be reconciled by the next size's
	// controller and skew its figures: stop this one and release them by hand.
	ctl.stop()
	if left > 0 {
		if r.leftForcibly, err = h.release(ctx, ns, c.creators); err != nil {
			return r, err
		}
		fmt.Printf("%d records: %d finalizers removed by the harness after the controller stopped\n", n, r.leftForcibly)
		for {
			if _, left := w.counts(); left == 0 {
				break
			}
			select {
			case <-ctx.Done():
				return r, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return r, nil
}

// address is the i-th record's A target.
func address(i int) string { return fmt.Sprintf("10.%d.%d.%d", i/62500, i/250%250, i%250+1) }

// release removes the finalizers of the namespace's remaining records.
func (h *harness) release(ctx context.Context, ns string, workers int) (int, error) {
	list := &v1alpha1.DNSRecordList{}
	if err := h.client.List(ctx, list, client.InNamespace(ns)); err != nil {
		return 0, err
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	return len(list.Items), parallel(ctx, len(list.Items), workers, func(ctx context.Context, i int) error {
		return client.IgnoreNotFound(h.client.Patch(ctx, &list.Items[i], patch))
	})
}

// recordWatch follows the namespace's DNSRecords through an informer (a watch, not repeated lists
// of thousands of records, which would load the API server the controller shares).
type recordWatch struct {
	cache  cache.Cache
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	ready  map[string]bool
}

func watchRecords(ctx context.Context, cfg *rest.Config, ns string) (*recordWatch, error) {
	c, err := cache.New(cfg, cache.Options{Scheme: apis.Scheme(), DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		return nil, err
	}
	w := &recordWatch{cache: c, done: make(chan struct{}), ready: map[string]bool{}}
	inf, err := c.GetInformer(ctx, &v1alpha1.DNSRecord{})
	if err != nil {
		return nil, err
	}
	update := func(obj any) {
		if rec, ok := obj.(*v1alpha1.DNSRecord); ok {
			w.mu.Lock()
			w.ready[rec.Name] = isReady(rec)
			w.mu.Unlock()
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    update,
		UpdateFunc: func(_, obj any) { update(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if rec, ok := obj.(*v1alpha1.DNSRecord); ok {
				w.mu.Lock()
				delete(w.ready, rec.Name)
				w.mu.Unlock()
			}
		},
	}); err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
	go func() {
		defer close(w.done)
		_ = c.Start(runCtx)
	}()
	if !c.WaitForCacheSync(runCtx) {
		w.stop()
		return nil, errors.New("the harness's record cache did not sync")
	}
	return w, nil
}

func (w *recordWatch) stop() {
	w.cancel()
	<-w.done
}

// counts returns how many records are Ready and how many exist.
// readyNames returns the names of the records Ready now.
func (w *recordWatch) readyNames() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var names []string
	for name, r := range w.ready {
		if r {
			names = append(names, name)
		}
	}
	return names
}

// present counts how many of names still exist.
func (w *recordWatch) present(names []string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, name := range names {
		if _, ok := w.ready[name]; ok {
			n++
		}
	}
	return n
}

func (w *recordWatch) counts() (ready, total int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.ready {
		if r {
			ready++
		}
	}
	return ready, len(w.ready)
}

func isReady(rec *v1alpha1.DNSRecord) bool {
	c := meta.FindStatusCondition(rec.Status.Conditions, v1alpha1.ConditionTypeReady)
	return c != nil && c.Status == metav1.ConditionTrue && rec.Status.ObservedGeneration == rec.Generation
}

// verify checks that every record is Ready with ProviderSuccess and reports its spec as published,
// so a fast wrong answer fails the run instead of being reported.
func (w *recordWatch) verify(specs []*v1alpha1.DNSRecord) error {
	for _, spec := range specs {
		rec := &v1alpha1.DNSRecord{}
		if err := w.cache.Get(context.Background(), client.ObjectKeyFromObject(spec), rec); err != nil {
			return err
		}
		c := meta.FindStatusCondition(rec.Status.Conditions, v1alpha1.ConditionTypeReady)
		if c == nil || c.Reason != v1alpha1.ReasonProviderSuccess {
			return fmt.Errorf("record %s: Ready %v", rec.Name, c)
		}
		want := spec.Spec.Endpoints[0]
		if len(rec.Status.Endpoints) != 1 || rec.Status.Endpoints[0].Key() != want.Key() || !rec.Status.Endpoints[0].Targets.SameTargets(want.Targets) {
			return fmt.Errorf("record %s published %v, want %s", rec.Name, rec.Status.Endpoints, want)
		}
	}
	return nil
}

// controller is the controller under test: a child process, or app.Run in this process.
type controller struct {
	pid      int
	metrics  string // http://127.0.0.1:port/metrics
	health   string // http://127.0.0.1:port/readyz
	log      string
	stopOnce sync.Once
	stopFn   func()
	cpuFile  *os.File
}

func startController(ctx context.Context, env *envtest.Environment, c *config, n int) (*controller, error) {
	metricsAddr, err := freeport.Pick()
	if err != nil {
		return nil, err
	}
	healthAddr, err := freeport.Pick()
	if err != nil {
		return nil, err
	}
	ctl := &controller{
		metrics: "http://" + metricsAddr + "/metrics",
		health:  "http://" + healthAddr + "/readyz",
	}
	args := []string{
		"--metrics-bind-address=" + metricsAddr,
		"--health-probe-bind-address=" + healthAddr,
		"--log-level=error",
	}
	if c.inProcess {
		opts, err := app.Parse(args, app.OSEnv)
		if err != nil {
			return nil, err
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go pprof.Do(runCtx, pprof.Labels("side", "controller"), func(ctx context.Context) {
			defer close(done)
			// The controller gets its own connection, as the binary would: none of the harness's
			// counting or settings.
			base := rest.CopyConfig(env.Config)
			if err := app.Run(ctx, base, opts); err != nil {
				fmt.Fprintln(os.Stderr, "controller:", err)
			}
		})
		ctl.pid = os.Getpid()
		ctl.stopFn = func() { cancel(); <-done }
		return ctl, nil
	}

	user, err := env.AddUser(envtest.User{Name: "bench-controller", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, err
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, err
	}
	kubeconfigPath := filepath.Join(c.workDir, "kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	ctl.log = filepath.Join(c.workDir, fmt.Sprintf("controller-%d.log", n))
	logFile, err := os.Create(ctl.log)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(c.binary, append(args, "--kubeconfig="+kubeconfigPath)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// The controller dies with the harness, however the harness ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = logFile.Close(); close(exited) }()
	ctl.pid = cmd.Process.Pid
	ctl.stopFn = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	return ctl, nil
}

func (ctl *controller) stop() { ctl.stopOnce.Do(ctl.stopFn) }

// waitReady waits for the controller's readiness endpoint, which answers once its informer caches
// (the 10,000 Secrets' metadata among them) have synced.
func (ctl *controller) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(ctl.health); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", ctl.pid)); err != nil {
			return fmt.Errorf("the controller exited; its log: %s", ctl.log)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("the controller was not ready within %s; its log: %s", timeout, ctl.log)
}

// settledRSS returns the resident set once it has stopped moving (two readings a second apart
// within 1 MiB), so the idle figure is taken after the caches have filled, not during.
func (ctl *controller) settledRSS(ctx context.Context) (uint64, error) {
	prev, _, err := memory(ctl.pid)
	if err != nil {
		return 0, err
	}
	for range 30 {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Second):
		}
		rss, _, err := memory(ctl.pid)
		if err != nil {
			return 0, err
		}
		if diff := int64(rss) - int64(prev); diff < 1<<20 && diff > -(1<<20) {
			return rss, nil
		}
		prev = rss
	}
	return prev, nil
}

type sample struct {
	cpu float64
	// controlPlane is the CPU-seconds of the kube-apiserver and etcd this process started.
	controlPlane  float64
	hwm           uint64
	writes        map[string]float64
	harnessWrites int64
}

// sample reads the controller's CPU, peak RSS and API-server writes by method.
func (ctl *controller) sample(h *harness) (sample, error) {
	s := sample{harnessWrites: h.writes.Load()}
	var err error
	if s.cpu, err = cpuSeconds(ctl.pid); err != nil {
		return s, err
	}
	if s.controlPlane, err = controlPlaneCPU(); err != nil {
		return s, err
	}
	if _, s.hwm, err = memory(ctl.pid); err != nil {
		return s, err
	}
	s.writes, err = ctl.writes()
	return s, err
}

// writes reads rest_client_requests_total from the controller's metrics endpoint, summed by method,
// writes only.
func (ctl *controller) writes() (map[string]float64, error) {
	resp, err := http.Get(ctl.metrics)
	if err != nil {
		return nil, fmt.Errorf("reading the controller's metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing the controller's metrics: %w", err)
	}
	out := map[string]float64{}
	f := families["rest_client_requests_total"]
	if f == nil {
		return nil, errors.New("the controller's metrics have no rest_client_requests_total")
	}
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "method" && isWrite(l.GetValue()) {
				out[l.GetValue()] += m.GetCounter().GetValue()
			}
		}
	}
	return out, nil
}

func (ctl *controller) printProgress(start time.Time, what string, done, n int) {
	cpu, _ := cpuSeconds(ctl.pid)
	rss, hwm, _ := memory(ctl.pid)
	fmt.Printf("  %7.1fs  %5d of %d %s  RSS %s (peak %s)  CPU %.1f s  load %s\n",
		time.Since(start).Seconds(), done, n, what, mib(rss), mib(hwm), cpu, loadAverage())
}

// profileStart starts the CPU profile of one phase, written to the -cpuprofile file with suffix,
// and writes the heap profile of the phase's start.
func (ctl *controller) profileStart(c *config, suffix string) error {
	ctl.heapProfile(c, suffix+".base")
	if c.cpuProfile == "" {
		return nil
	}
	f, err := os.Create(c.cpuProfile + suffix)
	if err != nil {
		return err
	}
	ctl.cpuFile = f
	return pprof.StartCPUProfile(f)
}

func (ctl *controller) profileStop(c *config, suffix string) {
	if ctl.cpuFile != nil {
		pprof.StopCPUProfile()
		_ = ctl.cpuFile.Close()
		ctl.cpuFile = nil
	}
	ctl.heapProfile(c, suffix)
}

// heapProfile writes the heap profile to the -memprofile file with suffix, when profiling.
func (ctl *controller) heapProfile(c *config, suffix string) {
	if c.memProfile == "" {
		return
	}
	f, err := os.Create(c.memProfile + suffix)
	if err != nil {
		fmt.Fprintln(os.Stderr, "heap profile:", err)
		return
	}
	defer func() { _ = f.Close() }()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		fmt.Fprintln(os.Stderr, "heap profile:", err)
	}
}

// controlPlaneCPU is the CPU-seconds used so far by this process's children named kube-apiserver or
// etcd: the control plane, whose share of the cores bounds how fast records are created, patched
// and watched.
func controlPlaneCPU() (float64, error) {
	self := strconv.Itoa(os.Getpid())
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return 0, err
	}
	var total float64
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		st := string(b)
		open, end := strings.IndexByte(st, '('), strings.LastIndexByte(st, ')')
		if open < 0 || end < open {
			continue
		}
		name := st[open+1 : end]
		fields := strings.Fields(st[end+1:])
		if len(fields) < 2 || fields[1] != self || (name != "kube-apiserver" && name != "etcd") {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		cpu, err := cpuSeconds(pid)
		if err != nil {
			continue
		}
		total += cpu
	}
	return total, nil
}

// cpuSeconds is utime + stime of the process.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces: count fields after it.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	utime, err1 := strconv.ParseUint(fields[11], 10, 64) // field 14
	stime, err2 := strconv.ParseUint(fields[12], 10, 64) // field 15
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return float64(utime+stime) / clockTicks, nil
}

// memory returns VmRSS and VmHWM (peak RSS) of the process, in bytes.
func memory(pid int) (rss, hwm uint64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[2] != "kB" {
			continue
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return 0, 0, err
		}
		switch f[0] {
		case "VmRSS:":
			rss = v << 10
		case "VmHWM:":
			hwm = v << 10
		}
	}
	return rss, hwm, nil
}

func mib(b uint64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

func report(results []result, inProcess bool) {
	if inProcess {
		fmt.Println("in-process: RSS and CPU are of the harness and the controller together")
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "records\tcreated in\tall Ready\tafter the last create\thalf Ready\tms/record\tCPU-s\tCPU-ms/record\tcontrol plane CPU-ms/record\twrites/record\tidle RSS\tpeak RSS\tdeleted\tdelete rate (Ready ones)")
	for _, r := range results {
		all := r.all.Round(10 * time.Millisecond).String()
		perRecord := r.all
		if r.all == 0 {
			all = fmt.Sprintf("%d Ready after %s", r.ready, r.waited.Round(time.Second))
			perRecord = r.waited
		}
		div := float64(max(r.ready, 1))
		deleted := r.deleteTime.Round(10 * time.Millisecond).String()
		if !r.deleteAll {
			deleted = fmt.Sprintf("%d (%d of %d Ready) in %s", r.deleted, r.readyDeleted, r.readyAtDelete, r.deleteTime.Round(time.Second))
		}
		afterLast := "-"
		if r.all > 0 {
			afterLast = (r.all - r.created).Round(10 * time.Millisecond).String()
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%.2f\t%.1f\t%.1f\t%.1f\t%.2f\t%s\t%s\t%s\t%.0f/s\n",
			r.records, r.created.Round(10*time.Millisecond), all, afterLast, r.half.Round(10*time.Millisecond),
			float64(perRecord.Milliseconds())/div, r.cpu, 1000*r.cpu/div, 1000*r.controlPlaneCPU/div, r.totalWrites()/div,
			mib(r.idleRSS), mib(r.peakRSS), deleted, float64(r.readyDeleted)/r.deleteTime.Seconds())
	}
	_ = w.Flush()
	fmt.Println()
	for _, r := range results {
		var methods []string
		for m := range r.writes {
			methods = append(methods, m)
		}
		sort.Strings(methods)
		var parts []string
		for _, m := range methods {
			parts = append(parts, fmt.Sprintf("%s=%.0f", m, r.writes[m]))
		}
		fmt.Printf("%d records: writes until all Ready %.0f (%s); deletion %.1f CPU-s, %.0f writes", r.records, r.totalWrites(), strings.Join(parts, ", "), r.deleteCPU, r.deleteWrites)
		if r.leftForcibly > 0 {
			fmt.Printf("; %d finalizers removed by the harness", r.leftForcibly)
		}
		fmt.Println()
	}
	i := slices.IndexFunc(results, func(r result) bool { return r.records == targetRecords })
	if i < 0 {
		return
	}
	r := results[i]
	fmt.Printf("\ntargets for %d records: all Ready in <= %s: %s; peak RSS < %s: %s (%s)\n", targetRecords, targetReady,
		verdict(r.all > 0 && r.all <= targetReady), mib(targetPeakRSS), verdict(r.peakRSS < targetPeakRSS), mib(r.peakRSS))
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
