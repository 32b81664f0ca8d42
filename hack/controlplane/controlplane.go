// Package controlplane starts a real local control plane (kube-apiserver + etcd on loopback, through
// envtest) with our CRDs and the Gateway API standard CRDs installed. `make run` and the integration
// tests share it. The binaries come from hack/envtest-bins.sh, which builds them once into a cache
// outside the clone, because setup-envtest downloads from a host these machines cannot reach.
package controlplane

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dnspolicy/dnspolicy-controller/apis"
)

// Options select what a control plane starts with.
type Options struct {
	// WithoutGatewayAPI leaves the Gateway API CRDs out (to test behaviour without them).
	WithoutGatewayAPI bool
}

// New returns a control plane, not yet started, with its binaries and CRDs located.
func New(opts Options) (*envtest.Environment, error) {
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
	return &envtest.Environment{
		CRDDirectoryPaths:     paths,
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
		Scheme:                apis.Scheme(),
		// envtest's 20 s is too short for kube-apiserver on two busy cores (measured: over 20 s
		// with the machine's load at 45); a control plane that starts late is not a failure.
		ControlPlaneStartTimeout: 2 * time.Minute,
	}, nil
}

// CacheDir is where built tools and local state live, outside the clone: $DNSPOLICY_CACHE, else
// $XDG_CACHE_HOME/dnspolicy-controller, else ~/.cache/dnspolicy-controller (as hack/*.sh use).
func CacheDir() string {
	if d := os.Getenv("DNSPOLICY_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "dnspolicy-controller")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "dnspolicy-controller")
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

// Assets returns the directory of kube-apiserver and etcd: $KUBEBUILDER_ASSETS when set, else what
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
	if assetsErr == nil {
		// Said here, not as a start-up timeout of the control plane later.
		for _, name := range []string{"kube-apiserver", "etcd"} {
			if _, err := os.Stat(filepath.Join(assetsDir, name)); err != nil {
				return "", fmt.Errorf("no %s in %s (KUBEBUILDER_ASSETS or hack/envtest-bins.sh): run `make envtest`: %w", name, assetsDir, err)
			}
		}
	}
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
