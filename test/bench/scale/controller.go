package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/metrics"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
)

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
	if c.memLimit != "" {
		cmd.Env = append(os.Environ(), "GOMEMLIMIT="+c.memLimit)
	}
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

// heapPeak writes an in-process heap profile when the live heap has grown a tenth past its
// highest so far, so the last one written is within a tenth of the phase's peak: the profile that
// shows what holds the memory when the RSS peaks, which the phase's start and end profiles miss.
type heapPeak struct{ highest uint64 }

func (p *heapPeak) check(ctl *controller, c *config, suffix string) {
	if !c.inProcess || c.memProfile == "" {
		return
	}
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	live := s[0].Value.Uint64()
	if live < p.highest+p.highest/10 {
		return
	}
	p.highest = live
	ctl.heapProfile(c, suffix)
}
