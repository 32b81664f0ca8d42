// Package testenv starts real control planes (kube-apiserver + etcd via envtest) for integration
// tests, with our CRDs and the Gateway API standard CRDs installed (see hack/controlplane).
package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dnspolicy/dnspolicy-controller/apis"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/hack/controlplane"
	"github.com/dnspolicy/dnspolicy-controller/test/metricstest"
)

// Options select what a control plane starts with.
type Options = controlplane.Options

// Scheme knows core types, Gateway API v1 and our APIs.
func Scheme() *runtime.Scheme { return apis.Scheme() }

// Env is one running control plane.
type Env struct {
	Config *rest.Config
	Client client.Client
	env    *envtest.Environment
}

// Start starts a control plane with our CRDs (and, unless told otherwise, the Gateway API CRDs).
func Start(opts Options) (*Env, error) {
	e, err := controlplane.New(opts)
	if err != nil {
		return nil, err
	}
	cfg, err := e.Start()
	if err != nil {
		return nil, fmt.Errorf("starting envtest: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		_ = e.Stop()
		return nil, err
	}
	return &Env{Config: cfg, Client: c, env: e}, nil
}

// Stop stops the control plane.
func (e *Env) Stop() error { return e.env.Stop() }

// ClusterID is the UID of the control plane's kube-system Namespace: how the controller (and
// Kuadrant's) names its cluster, in owner leases and remoteRecordStatuses.
func (e *Env) ClusterID(ctx context.Context) (string, error) {
	ns := &corev1.Namespace{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, ns); err != nil {
		return "", err
	}
	return string(ns.UID), nil
}

// StartAll starts n control planes, for a TestMain that simulates n clusters. On error the ones
// already started are stopped.
func StartAll(n int, opts Options) ([]*Env, error) {
	var envs []*Env
	for range n {
		e, err := Start(opts)
		if err != nil {
			StopAll(envs)
			return nil, err
		}
		envs = append(envs, e)
	}
	return envs, nil
}

// StopAll stops control planes, reporting failures on stderr (a TestMain has no t).
func StopAll(envs []*Env) {
	for _, e := range envs {
		if err := e.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping envtest:", err)
		}
	}
}

// StartManager starts a manager on env that watches one fresh namespace (named from prefix), with
// the controllers add puts in it, as the binary runs them; it is stopped when the test ends. It
// returns the namespace. Several managers may run in one process.
func StartManager(t testing.TB, env *Env, prefix string, add func(ctrl.Manager) error) string {
	t.Helper()
	ns := NewNamespace(t, env, prefix)
	StartManagerIn(t, env, ns, add)
	return ns
}

// NewNamespace creates a namespace named from prefix on env and returns its name.
func NewNamespace(t testing.TB, env *Env, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// StartManagerIn starts a manager as StartManager does, watching an existing namespace, and returns
// a function that stops it and waits until it has stopped (as a crash or a restart of the
// controller would; the test's end stops it too). A test starts another manager on the same
// namespace to see what a restarted controller does.
func StartManagerIn(t testing.TB, env *Env, namespace string, add func(ctrl.Manager) error) (stop func()) {
	t.Helper()
	return StartManagerWith(t, env, ManagerOptions{Namespace: namespace}, add)
}

// ManagerOptions are what a test's manager may differ in from the binary's.
type ManagerOptions struct {
	// Namespace is the one namespace the manager's cache watches; "" watches all, as the binary
	// does (for a test that runs one manager at a time).
	Namespace string
	// Wrap, when set, wraps the manager's HTTP transport: a test counts the controller's requests.
	Wrap func(http.RoundTripper) http.RoundTripper
}

// StartManagerWith starts a manager on env with the controllers add puts in it, as StartManagerIn
// does, and returns its stop function (safe to call more than once).
func StartManagerWith(t testing.TB, env *Env, o ManagerOptions, add func(ctrl.Manager) error) (stop func()) {
	t.Helper()
	mgr, err := newManager(env, o, add)
	if err != nil {
		t.Fatal(err)
	}
	stop = run(mgr, func(err error) { t.Errorf("manager for %s: %v", o.Namespace, err) })
	t.Cleanup(stop)
	return stop
}

// RunManager is StartManager for programs without a testing.TB (the benchmarks under test/bench):
// it starts a manager watching a fresh namespace named from prefix and returns once its cache of
// DNSRecords has synced (a benchmark's clock starts with a running controller, as in a cluster).
// stop cancels the manager and waits for it to end.
func RunManager(env *Env, prefix string, add func(ctrl.Manager) error) (namespace string, stop func(), err error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		return "", nil, err
	}
	mgr, err := newManager(env, ManagerOptions{Namespace: ns.Name}, add)
	if err != nil {
		return "", nil, err
	}
	stop = run(mgr, func(err error) { fmt.Fprintf(os.Stderr, "manager for %s: %v\n", ns.Name, err) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := mgr.GetCache().GetInformer(ctx, &v1alpha1.DNSRecord{}); err != nil {
		stop()
		return "", nil, err
	}
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		stop()
		return "", nil, errors.New("the manager's cache did not sync within a minute")
	}
	return ns.Name, stop, nil
}

// newManager builds a manager as the binary does, with the controllers add puts in it.
func newManager(env *Env, o ManagerOptions, add func(ctrl.Manager) error) (ctrl.Manager, error) {
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS = -1 // as the binary runs (app.NewManager)
	if o.Wrap != nil {
		cfg.Wrap(o.Wrap)
	}
	var cacheOpts cache.Options
	if o.Namespace != "" {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{o.Namespace: {}}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cacheOpts,
		// Several managers in one process register controllers of the same name.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, err
	}
	if err := add(mgr); err != nil {
		return nil, err
	}
	return mgr, nil
}

// run starts mgr in the background and returns a function that stops it and waits until it has
// stopped (safe to call more than once); failed reports the manager's error.
func run(mgr ctrl.Manager, failed func(error)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			failed(err)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// Main runs a package's tests with n control planes stored in *envs (one per simulated cluster),
// logging controller errors only, and returns the exit code for os.Exit.
func Main(m *testing.M, n int, envs *[]*Env) int {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	var err error
	if *envs, err = StartAll(n, Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer StopAll(*envs)
	return m.Run()
}

// MainOne runs a package's tests with one control plane, started with opts and stored in *env, and
// returns the exit code for os.Exit.
func MainOne(m *testing.M, opts Options, env **Env) int {
	var err error
	if *env, err = Start(opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer StopAll([]*Env{*env})
	return m.Run()
}

// Eventually polls cond until it returns "" (success) or timeout passes, then fails the test with
// the last reason cond gave.
func Eventually(t testing.TB, timeout time.Duration, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		if last = cond(); last == "" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("not within %s: %s", timeout, last)
}

// Counter reads a counter of the controller-runtime metrics registry for one object (its
// "namespace" and "name" labels); 0 when it has not counted yet.
func Counter(metric, namespace, name string) float64 {
	v, _ := Metric(metric, map[string]string{"namespace": namespace, "name": name})
	return v
}

// Metric is metricstest.Value, for the tests that use this package anyway.
func Metric(metric string, labels map[string]string) (float64, bool) {
	return metricstest.Value(metric, labels)
}

// LaggingClient is a client of env whose reads come from an informer cache of one namespace that
// takes in every change lag after the API server made it, as a manager's cache does under load:
// writes go straight to the server, reads trail them. It stops with the test.
func LaggingClient(t testing.TB, env *Env, namespace string, lag time.Duration) client.Client {
	t.Helper()
	c, err := cache.New(env.Config, cache.Options{
		Scheme:            Scheme(),
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
		// The informer runs the transform on every object it takes in, before storing it.
		DefaultTransform: func(obj any) (any, error) {
			time.Sleep(lag)
			return obj, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the lagging cache did not sync")
	}
	cl, err := client.New(env.Config, client.Options{Scheme: Scheme(), Cache: &client.CacheOptions{Reader: c}})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}
