// Command scale benchmarks the controller binary at the size of a large zone: N DNSRecords (one A
// endpoint each, one inmemory zone) created at once beside 10,000 unrelated Secrets, on a real
// kube-apiserver + etcd. For each size it reports the time from the first create until all are
// Ready, the controller's CPU-seconds and API-server writes per record, its idle and peak RSS, and
// then the time to delete all N and the deletions' own peak RSS (VmHWM is reset as they begin), so
// a cost per record that grows with the zone shows across sizes.
//
//	go run ./test/bench/scale [-records 1000,5000,10000] [-secrets 10000] [-timeout 10m] [-floor]
//
// -floor measures the controller against the API server's own floor: before each size's controller
// starts, a bare client does the minimum writes a record needs (create, finalizer PATCH, status
// PATCH) for the same N records on the same API server (floor.go), and the report gives the
// controller's time to all Ready divided by the bare client's, the figure issue 23 holds to 1.3.
// Between the two, a bare controller (a controller-runtime controller in this process that makes
// the finalizer and status PATCHes when the watch brings each create, and publishes nothing) times
// the same writes: the least any controller driven by a watch could take on this machine.
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
// Ready, and at the deletions' start, live-heap peak and end (.delete.base, .delete.peak, .delete), so `go tool pprof -base
// X.base X` shows the allocations of a phase alone. RSS and CPU then include the harness.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/dnspolicy/dnspolicy-controller/hack/controlplane"
)

// The targets for 10,000 records (acceptance 5).
const (
	targetRecords = 10000
	targetReady   = 2 * time.Minute
	targetPeakRSS = 250 << 20
	// targetFloorRatio is issue 23's: the controller's time to all Ready within this multiple of
	// the bare client's floor, at every size.
	targetFloorRatio = 1.3
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
	floor         bool
	inProcess     bool
	cpuProfile    string
	memProfile    string
	binary        string
	memLimit      string
	workDir       string
}

func run() error {
	var c config
	sizes := flag.String("records", "1000,5000,10000", "comma-separated numbers of DNSRecords, one run each (a size may repeat: 64,64,64)")
	flag.IntVar(&c.secrets, "secrets", 10000, "unrelated Secrets created before the first run (kubectl-applied: data and last-applied-configuration)")
	flag.IntVar(&c.creators, "creators", 100, "concurrent clients creating (and deleting) the records")
	flag.DurationVar(&c.timeout, "timeout", 10*time.Minute, "per size: stop waiting for Ready after this long and report how far it got")
	flag.DurationVar(&c.deleteTimeout, "delete-timeout", 10*time.Minute, "per size: stop waiting for the deletions after this long")
	flag.DurationVar(&c.progress, "progress", 10*time.Second, "print Ready records, RSS and CPU this often (0: never)")
	flag.BoolVar(&c.floor, "floor", false, "before each size's controller, time a bare client's minimum writes for the same records (create, finalizer, status) on the same API server, then a bare controller's, and report the ratios")
	flag.BoolVar(&c.inProcess, "inprocess", false, "run the controller in this process (for profiles); one size only")
	flag.StringVar(&c.cpuProfile, "cpuprofile", "", "with -inprocess: CPU profile of the create-to-Ready phase (and of the deletions, with suffix .delete)")
	flag.StringVar(&c.memProfile, "memprofile", "", "with -inprocess: heap profiles at the first create (.base), half Ready (.half), all Ready, and the deletions' start, peak and end (.delete.base, .delete.peak, .delete)")
	flag.StringVar(&c.binary, "controller", "", "controller binary to run (default: built from ./cmd/dnspolicy-controller)")
	flag.StringVar(&c.memLimit, "gomemlimit", "", "GOMEMLIMIT of the controller process (e.g. 200MiB): its peak RSS with the Go runtime's soft memory limit, as a Deployment would set it")
	bareNamespace := flag.String(bareControllerFlag, "", "internal: run as the bare controller of -floor in this namespace")
	bareKubeconfig := flag.String(bareKubeconfigFlag, "", "internal: the bare controller's kubeconfig")
	flag.Parse()
	if *bareNamespace != "" {
		return bareController(*bareNamespace, *bareKubeconfig)
	}
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
	if c.inProcess && c.memLimit != "" {
		return errors.New("-gomemlimit applies to the controller process: drop -inprocess")
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
	for run, n := range c.sizes {
		r, err := h.bench(ctx, env, &c, n, run)
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

func report(results []result, inProcess bool) {
	if inProcess {
		fmt.Println("in-process: RSS and CPU are of the harness and the controller together")
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "records\tcreated in\tall Ready\tafter the last create\thalf Ready\tms/record\tCPU-s\tCPU-ms/record\tcontrol plane CPU-ms/record\twrites/record\tidle RSS\tpeak RSS to Ready\tpeak RSS deleting\tdeleted\tdelete rate (Ready ones)")
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
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%.2f\t%.1f\t%.1f\t%.1f\t%.2f\t%s\t%s\t%s\t%s\t%.0f/s\n",
			r.records, r.created.Round(10*time.Millisecond), all, afterLast, r.half.Round(10*time.Millisecond),
			float64(perRecord.Milliseconds())/div, r.cpu, 1000*r.cpu/div, 1000*r.controlPlaneCPU/div, r.totalWrites()/div,
			mib(r.idleRSS), mib(r.readyPeakRSS), mib(r.deletePeakRSS), deleted, float64(r.readyDeleted)/r.deleteTime.Seconds())
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
	reportFloor(results)
	i := slices.IndexFunc(results, func(r result) bool { return r.records == targetRecords })
	if i < 0 {
		return
	}
	r := results[i]
	fmt.Printf("\ntargets for %d records: all Ready in <= %s: %s; peak RSS < %s: %s (%s)\n", targetRecords, targetReady,
		verdict(r.all > 0 && r.all <= targetReady), mib(targetPeakRSS), verdict(r.peakRSS() < targetPeakRSS), mib(r.peakRSS()))
}

// reportFloor prints, for the sizes run with -floor, the controller's time to all Ready against
// the bare client's floor on the same API server in the same run.
func reportFloor(results []result) {
	if !slices.ContainsFunc(results, func(r result) bool { return r.floor > 0 }) {
		return
	}
	fmt.Println()
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "records\tfloor (bare client)\tits control plane CPU-ms/record\tbare controller\tits control plane CPU-ms/record\tcontroller, all Ready\tits control plane CPU-ms/record\tbare controller / floor\tratio (controller / floor)\twithin %.1fx\n", targetFloorRatio)
	for _, r := range results {
		if r.floor == 0 {
			continue
		}
		perRecord := func(cpu float64) float64 { return 1000 * cpu / float64(r.records) }
		fmt.Fprintf(w, "%d\t%s\t%.1f\t%s\t%.1f\t", r.records, r.floor.Round(10*time.Millisecond), perRecord(r.floorCPU),
			r.bare.Round(10*time.Millisecond), perRecord(r.bareCPU))
		if r.all == 0 {
			fmt.Fprintf(w, "%d Ready after %s\t-\t%.2f\t-\tNOT met\n", r.ready, r.waited.Round(time.Second), r.bare.Seconds()/r.floor.Seconds())
			continue
		}
		ratio := r.all.Seconds() / r.floor.Seconds()
		fmt.Fprintf(w, "%s\t%.1f\t%.2f\t%.2f\t%s\n", r.all.Round(10*time.Millisecond), perRecord(r.controlPlaneCPU),
			r.bare.Seconds()/r.floor.Seconds(), ratio, verdict(ratio <= targetFloorRatio))
	}
	_ = w.Flush()
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}
