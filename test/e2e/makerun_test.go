//go:build e2e

package e2e

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/hack/controlplane"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
)

// makeRun is `make run` started as a user starts it on a machine with no cluster.
type makeRun struct {
	cmd    *exec.Cmd
	stdout io.Reader
	// exited receives the process's exit once.
	exited chan error
	// assets is the directory of kube-apiserver, etcd and kubectl.
	assets string
}

// startMakeRun builds hack/run and starts it with no reachable cluster, its own cache directory and
// free loopback ports (so it collides neither with another test nor with a user's make run), and env
// added to its environment. It is killed when the test ends if still running.
func startMakeRun(t *testing.T, env ...string) *makeRun {
	t.Helper()
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	assets, err := controlplane.Assets()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "dnspolicy-run")
	build := exec.Command("go", "build", "-o", bin, "./hack/run")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building hack/run: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+filepath.Join(t.TempDir(), "no-such-kubeconfig"),
		"KUBEBUILDER_ASSETS="+assets,
		"DNSPOLICY_CACHE="+t.TempDir(),
		"DNSPOLICY_METRICS_BIND_ADDRESS=127.0.0.1:0",
		"DNSPOLICY_HEALTH_PROBE_BIND_ADDRESS=127.0.0.1:0",
		"DNSPOLICY_DNS_SERVER_ADDRESS="+freeport.Addr(t),
	)
	cmd.Env = append(cmd.Env, env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &makeRun{cmd: cmd, stdout: stdout, exited: make(chan error, 1), assets: assets}
	go func() { r.exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return r
}
