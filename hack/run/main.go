// Command run is `make run`: it runs the controller against the cluster of the current kubeconfig
// when that cluster answers, and otherwise starts a local control plane first (a real kube-apiserver
// and etcd on loopback, built by hack/envtest-bins.sh and cached), installs our CRDs and the Gateway
// API CRDs, writes a kubeconfig to a printed path and runs the controller against it. Ctrl-C stops
// the controller and every process it started.
//
// With a local control plane, this process only supervises (supervise.go): the controller runs as
// a child process, so however it ends (a clean stop, an error, a panic in any goroutine, a kill)
// this process is still there to stop the control plane; and every child is bound to this process
// by the kernel (a parent-death signal), so even a SIGKILL of `make run` leaves nothing running.
//
// On a local control plane it also runs the embedded DNS server (127.0.0.1:1053 unless
// DNSPOLICY_DNS_SERVER_ADDRESS says otherwise) with a demo geo database, seeds a demo (demo.go) and
// prints the dig commands that show geo answers once they are served. With RFC2136_HOST and the
// other keys of a kuadrant.io/rfc2136 Secret in the environment the demo publishes into the user's
// BIND instead (rfc2136.go). A real cluster is not seeded.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/hack/controlplane"
	"github.com/dnspolicy/dnspolicy-controller/providers/rfc2136"
)

func main() {
	var err error
	switch {
	case isShim():
		err = execShim() // returns only on failure
	case os.Getenv(controllerKubeconfigEnv) != "":
		err = runController(os.Getenv(controllerKubeconfigEnv))
	default:
		err = run()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "make run:", err)
		os.Exit(1)
	}
}

// localEnv is the environment as the controller sees it: local runs listen on loopback only, unless
// the user says otherwise through the environment.
func localEnv(name string) (string, bool) {
	if v, ok := os.LookupEnv(name); ok {
		return v, true
	}
	switch name {
	case app.EnvName("metrics-bind-address"):
		return "127.0.0.1:8080", true
	case app.EnvName("health-probe-bind-address"):
		return "127.0.0.1:8081", true
	case app.EnvName("log-format"):
		return "console", true
	}
	return "", false
}

func run() error {
	opts, err := app.Parse(os.Args[1:], localEnv)
	if err != nil {
		return err
	}
	ctrl.SetLogger(opts.Logger())
	// SIGHUP: the terminal closed.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()

	if cfg, where, ok := reachableCluster(opts); ok {
		fmt.Printf("Using the cluster at %s (from %s).\n", cfg.Host, where)
		return app.Run(ctx, cfg, opts)
	}
	return runLocal(ctx, opts)
}

// runLocal starts a local control plane, seeds the demo and runs the controller against it as a
// child process until ctx ends or the controller exits; the control plane is stopped either way.
func runLocal(ctx context.Context, opts app.Options) error {
	// `make run` execs this binary: when make is killed, this process is told to stop as by Ctrl-C.
	if err := setParentDeathSignal(syscall.SIGTERM); err != nil {
		return err
	}
	fmt.Println("No reachable cluster: starting a local control plane (kube-apiserver + etcd on loopback).")
	state := filepath.Join(controlplane.CacheDir(), "local")
	runDir, err := newRunDir(state)
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(runDir) }()
	cp, err := controlplane.New(controlplane.Options{})
	if err != nil {
		return err
	}
	if err := bindToThisProcess(runDir, cp.BinaryAssetsDirectory); err != nil {
		return err
	}
	if _, err := cp.Start(); err != nil {
		return fmt.Errorf("starting the local control plane: %w", errors.Join(err, cp.Stop()))
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the local control plane:", err)
		}
	}()
	if ctx.Err() != nil {
		return nil // Ctrl-C while the control plane started
	}

	user, err := cp.ControlPlane.AddUser(envtest.User{Name: "local-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return err
	}
	path := filepath.Join(state, "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		return err
	}
	fmt.Printf("Local control plane at %s.\nKubeconfig: %s\n  kubectl --kubeconfig %s get crd\n", user.Config().Host, path, path)
	// With no cluster there is no cloud either: serve the demo from the embedded DNS server. The
	// controller reads these defaults from its environment; a flag the user gave still wins.
	var controllerEnv []string
	if _, set := os.LookupEnv(app.EnvName("dns-server-address")); !set && opts.DNSServerAddress == "" {
		opts.DNSServerAddress = "127.0.0.1:1053"
		controllerEnv = append(controllerEnv, app.EnvName("dns-server-address")+"="+opts.DNSServerAddress)
	}
	if opts.DNSGeoIPDatabase == "" {
		opts.DNSGeoIPDatabase = filepath.Join(state, "demo-geo.mmdb")
		if err := writeDemoGeoDB(opts.DNSGeoIPDatabase); err != nil {
			return fmt.Errorf("writing the demo geo database: %w", err)
		}
		controllerEnv = append(controllerEnv, app.EnvName("dns-geoip-database")+"="+opts.DNSGeoIPDatabase)
	}
	// The demo publishes into the user's BIND when RFC2136_HOST and the other keys of a
	// kuadrant.io/rfc2136 Secret are in the environment (rfc2136.go), else into the embedded server.
	provider, host, zone := embeddedDNSSecret(), demoHost, demoZone
	bind, useBIND, err := rfc2136FromEnv()
	if err != nil {
		return err
	}
	if useBIND {
		provider, host, zone = bind.secret(), bind.host, bind.zone
		fmt.Printf("Publishing the demo into zone %s on %s by RFC 2136 (the RFC2136_* variables).\n", bind.zone, bind.server)
		// rfc2136 is not among the default backends (its Secret names the server the controller
		// connects to, builtin.Defaults); whoever set RFC2136_HOST here chose that server.
		if _, set := os.LookupEnv(app.EnvName("providers")); !set {
			controllerEnv = append(controllerEnv, app.EnvName("providers")+"="+strings.Join(append(app.DefaultBackendNames(), rfc2136.ProviderName), ","))
		}
	}
	// The demo namespace is granted the demo zone, as an administrator grants a tenant its names
	// (without a grant the embedded server serves nothing); grants the user gave are kept.
	demoGrant := demoNamespace + "=" + zone
	if given, ok := os.LookupEnv(app.EnvName("grant")); ok {
		demoGrant = given + ";" + demoGrant
	}
	controllerEnv = append(controllerEnv, app.EnvName("grant")+"="+demoGrant)
	controller, err := startController(path, controllerEnv)
	if err != nil {
		return err
	}
	// Seeded beside the controller, so Ctrl-C at any moment stops both at once.
	go func() {
		if err := seedDemo(ctx, user.Config(), provider, host); err != nil {
			if ctx.Err() == nil {
				fmt.Fprintln(os.Stderr, "make run: seeding the demo:", err)
			}
			return
		}
		if useBIND {
			bind.await(ctx)
		} else if server, err := netip.ParseAddrPort(opts.DNSServerAddress); err == nil {
			awaitDemo(ctx, server)
		}
	}()
	fmt.Println("Press Ctrl-C to stop the controller and the control plane.")
	return controller.wait(ctx)
}

// runController is the controller child of runLocal: the manager against the local control plane.
func runController(kubeconfig string) error {
	opts, err := app.Parse(os.Args[1:], localEnv)
	if err != nil {
		return err
	}
	ctrl.SetLogger(opts.Logger())
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = app.Run(ctx, cfg, opts)
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil
	}
	return err
}

// reachableCluster loads the kubeconfig the controller would use and asks the server for its
// version, so a stale kubeconfig pointing at a stopped cluster falls back to a local control plane.
func reachableCluster(opts app.Options) (*rest.Config, string, bool) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	where := "the default kubeconfig"
	if opts.Kubeconfig != "" {
		rules.ExplicitPath = opts.Kubeconfig
		where = opts.Kubeconfig
	} else if v := os.Getenv("KUBECONFIG"); v != "" {
		where = v
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		cfg, err = rest.InClusterConfig()
		if err != nil {
			return nil, "", false
		}
		where = "the in-cluster service account"
	}
	probe := rest.CopyConfig(cfg)
	probe.Timeout = 3 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(probe)
	if err != nil {
		return nil, "", false
	}
	if _, err := dc.ServerVersion(); err != nil {
		fmt.Printf("The cluster at %s (from %s) does not answer: %v\n", cfg.Host, where, err)
		return nil, "", false
	}
	return cfg, where, true
}
