// Package testenv starts real control planes (kube-apiserver + etcd via envtest) for integration
// tests, with our CRDs and the Gateway API standard CRDs installed. The binaries come from
// hack/envtest-bins.sh, which builds them once into a cache outside the clone.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	gatewayapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnsv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// Scheme knows core types, Gateway API v1 and our APIs.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, gatewayapiv1.Install, dnsv1.AddToScheme, v1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// Env is one running control plane.
type Env struct {
	Config *rest.Config
	Client client.Client
	env    *envtest.Environment
}

// Options select what a control plane starts with.
type Options struct {
	// WithoutGatewayAPI leaves the Gateway API CRDs out (to test a controller's behaviour without them).
	WithoutGatewayAPI bool
}

// Start starts a control plane with our CRDs (and, unless told otherwise, the Gateway API CRDs).
func Start(opts Options) (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	assets, err := Assets()
	if err != nil {
		return nil, err
	}
	paths := []string{filepath.Join(root, "config", "crd", "bases")}
	if !opts.WithoutGatewayAPI {
		gw, err := GatewayAPICRDs()
		if err != nil {
			return nil, err
		}
		paths = append(paths, gw...)
	}
	e := &envtest.Environment{
		CRDDirectoryPaths:     paths,
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
		Scheme:                Scheme(),
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

// AddUser returns a kubeconfig's worth of rest.Config for a new admin user (for a manager or a tool).
func (e *Env) AddUser(name string) (*rest.Config, error) {
	u, err := e.env.ControlPlane.AddUser(envtest.User{Name: name, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, err
	}
	return u.Config(), nil
}

var (
	rootOnce sync.Once
	rootDir  string
	rootErr  error
)

// RepoRoot is the directory holding go.mod.
func RepoRoot() (string, error) {
	rootOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			rootErr = fmt.Errorf("go env GOMOD: %w", err)
			return
		}
		rootDir = filepath.Dir(strings.TrimSpace(string(out)))
	})
	return rootDir, rootErr
}

var (
	assetsOnce sync.Once
	assetsDir  string
	assetsErr  error
)

// Assets returns the directory of kube-apiserver and etcd: KUBEBUILDER_ASSETS when set, else what
// hack/envtest-bins.sh prints (it builds the binaries the first time, then only checks the cache).
func Assets() (string, error) {
	assetsOnce.Do(func() {
		if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
			assetsDir = d
			return
		}
		root, err := RepoRoot()
		if err != nil {
			assetsErr = err
			return
		}
		cmd := exec.Command("bash", filepath.Join(root, "hack", "envtest-bins.sh"))
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			assetsErr = fmt.Errorf("hack/envtest-bins.sh: %w", err)
			return
		}
		assetsDir = strings.TrimSpace(string(out))
	})
	return assetsDir, assetsErr
}

// GatewayAPICRDs lists the Gateway API standard-channel CRD files shipped in the gateway-api module
// (the folder also holds a ValidatingAdmissionPolicy, which is not a CRD and is left out).
func GatewayAPICRDs() ([]string, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("locating the gateway-api module: %w", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "standard")
	files, err := filepath.Glob(filepath.Join(dir, "gateway.networking.k8s.io_*.yaml"))
	if err != nil {
		return nil, err
	}
	var crds []string
	for _, f := range files {
		if !strings.Contains(filepath.Base(f), "_vap_") {
			crds = append(crds, f)
		}
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("no Gateway API CRDs in %s", dir)
	}
	return crds, nil
}
