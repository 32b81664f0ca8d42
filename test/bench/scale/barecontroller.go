package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/dnspolicy/dnspolicy-controller/apis"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// bareControllerFloor times the least a controller that learns of records from a watch could do for
// n records: the same three writes as floor, but the finalizer and status PATCHes are made by a
// controller-runtime controller in a process of its own (bareController: this program run again,
// with its own connection and informer and the record controller's 256 workers) that sees each
// record only when the watch brings its create. It publishes nothing: what it adds to the bare
// client's floor is the cost of being a controller on this machine (the watch's delay, the writes
// following events rather than each other back to back, a process's CPU beside the API
// server's), which no controller avoids.
func (h *harness) bareControllerFloor(ctx context.Context, env *envtest.Environment, c *config, n, run int) (time.Duration, float64, error) {
	return h.timeFloor(ctx, c, fmt.Sprintf("bare-%d-%d", n, run), n, func(ctx context.Context, ns string) (func(), error) {
		return startBareController(ctx, env, c.workDir, ns)
	})
}

// bareControllerFlag names, when this program runs as the bare controller, the namespace it
// reconciles; bareKubeconfigFlag its kubeconfig.
const (
	bareControllerFlag = "bare-controller-namespace"
	bareKubeconfigFlag = "bare-controller-kubeconfig"
)

// startBareController runs this program again as the bare controller of namespace ns, as a user
// of its own in system:masters (as the controller's run is), and returns once its cache has synced.
func startBareController(ctx context.Context, env *envtest.Environment, workDir, ns string) (func(), error) {
	kubeconfig := filepath.Join(workDir, "bare-kubeconfig")
	if _, err := os.Stat(kubeconfig); err != nil {
		user, err := env.AddUser(envtest.User{Name: "bench-bare-controller", Groups: []string{"system:masters"}}, nil)
		if err != nil {
			return nil, err
		}
		data, err := user.KubeConfig()
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(kubeconfig, data, 0o600); err != nil {
			return nil, err
		}
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, self, "-"+bareControllerFlag+"="+ns, "-"+bareKubeconfigFlag+"="+kubeconfig)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	// It dies with the harness, however the harness ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	// It prints one line once its cache has synced, and nothing else.
	if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
		stop()
		return nil, fmt.Errorf("the bare controller did not start: %w", err)
	}
	var once sync.Once
	return func() { once.Do(stop) }, nil
}

// bareController is this program's run as the bare controller: bareReconciler on the namespace's
// records until SIGTERM.
func bareController(ns, kubeconfig string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS = -1 // as the controller: no client-side throttling
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 apis.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
	})
	if err != nil {
		return err
	}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("bare").
		For(&v1alpha1.DNSRecord{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(crcontroller.Options{MaxConcurrentReconciles: 256}).
		Complete(&bareReconciler{client: mgr.GetClient()})
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	if mgr.GetCache().WaitForCacheSync(ctx) {
		fmt.Println("synced")
	}
	return <-done
}

// bareReconciler is the least a record controller does: a record without the finalizer gets it
// and its Ready status in one pass, the two writes of floor.
type bareReconciler struct{ client client.Client }

func (b *bareReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rec := &v1alpha1.DNSRecord{}
	if err := b.client.Get(ctx, req.NamespacedName, rec); err != nil || rec.DeletionTimestamp != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if controllerutil.ContainsFinalizer(rec, floorFinalizer) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, writeFinalizerAndReady(ctx, b.client, rec)
}
