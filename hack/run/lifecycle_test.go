//go:build integration

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/dnspolicy/dnspolicy-controller/hack/controlplane"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
)

// binary is hack/run built once for the package, with the test hook that lets a test make the
// controller panic (testhooks.go).
var binary = sync.OnceValues(func() (string, error) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "dnspolicy-run-test-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "dnspolicy-run")
	cmd := exec.Command("go", "build", "-tags", "runtesthooks", "-o", bin, "./hack/run")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building hack/run: %w\n%s", err, out)
	}
	return bin, nil
})

func TestMain(m *testing.M) {
	code := m.Run()
	if bin, err := binary(); err == nil {
		_ = os.RemoveAll(filepath.Dir(bin))
	}
	os.Exit(code)
}

// localRun is one `make run` against no cluster, as a user starts it.
type localRun struct {
	cmd *exec.Cmd
	// marker is an environment variable only this run's processes carry (children inherit it),
	// so every process it started can be found, whatever it is and whoever its parent is now.
	marker string
	// cache is the run's cache directory; its run directory is under local/.
	cache string
	// readyz is the controller's readiness endpoint.
	readyz string
	exited chan error
	output *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startRun starts the binary, through wrapper when given (a parent standing for make), with
// extra environment.
func startRun(t *testing.T, wrapper []string, env ...string) *localRun {
	t.Helper()
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	assets, err := controlplane.Assets()
	if err != nil {
		t.Fatal(err)
	}
	r := &localRun{
		marker: "DNSPOLICY_RUN_TEST=" + rand.String(12),
		cache:  t.TempDir(),
		exited: make(chan error, 1),
		output: &syncBuffer{},
	}
	probe := freeport.Addr(t)
	r.readyz = "http://" + probe + "/readyz"
	r.cmd = exec.Command(bin)
	if len(wrapper) > 0 {
		r.cmd = exec.Command(wrapper[0], append(wrapper[1:], bin)...)
	}
	r.cmd.Env = append(os.Environ(),
		r.marker,
		"KUBECONFIG="+filepath.Join(t.TempDir(), "no-such-kubeconfig"),
		"KUBEBUILDER_ASSETS="+assets,
		"DNSPOLICY_CACHE="+r.cache,
		"DNSPOLICY_METRICS_BIND_ADDRESS=0",
		"DNSPOLICY_HEALTH_PROBE_BIND_ADDRESS="+probe,
		"DNSPOLICY_DNS_SERVER_ADDRESS="+freeport.Addr(t),
	)
	r.cmd.Env = append(r.cmd.Env, env...)
	r.cmd.Stdout, r.cmd.Stderr = r.output, r.output
	// Children that outlive it hold its output open: Wait must not wait for them.
	r.cmd.WaitDelay = time.Second
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.exited <- r.cmd.Wait() }()
	t.Cleanup(func() {
		// Whatever the test did, nothing of this run may outlive it.
		_ = r.cmd.Process.Kill()
		for _, pid := range r.processes(t) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if t.Failed() {
			t.Logf("output of make run:\n%s", r.output.String())
		}
	})
	return r
}

// processes lists the live processes carrying this run's marker.
func (r *localRun) processes(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !bytes.Contains(append([]byte{0}, environ...), []byte("\x00"+r.marker+"\x00")) {
			continue
		}
		if alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// describe names processes by pid and command, for messages.
func describe(pids []int) string {
	var parts []string
	for _, pid := range pids {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		parts = append(parts, fmt.Sprintf("%d (%s)", pid, strings.TrimSpace(string(b))))
	}
	return strings.Join(parts, ", ")
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

// byCommand finds the run's process of a command name.
func (r *localRun) byCommand(t *testing.T, name string) int {
	t.Helper()
	for _, pid := range r.processes(t) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if strings.TrimSpace(string(b)) == name {
			return pid
		}
	}
	return 0
}

// controllerPid is the controller child: the process carrying the controller's kubeconfig variable.
func (r *localRun) controllerPid(t *testing.T) int {
	t.Helper()
	for _, pid := range r.processes(t) {
		environ, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if bytes.Contains(environ, []byte(controllerKubeconfigEnv+"=")) {
			return pid
		}
	}
	return 0
}

// awaitReady waits until the controller answers ready (its caches synced against the local
// control plane), and checks the processes a run is made of are there.
func (r *localRun) awaitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(4 * time.Minute)
	for {
		if res, err := http.Get(r.readyz); err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-r.exited:
			t.Fatalf("make run exited before the controller was ready: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the controller was not ready within 4 minutes")
		}
	}
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if r.byCommand(t, name) == 0 {
			t.Fatalf("no %s among the run's processes: %s", name, describe(r.processes(t)))
		}
	}
	if r.controllerPid(t) == 0 {
		t.Fatalf("no controller process among the run's processes: %s", describe(r.processes(t)))
	}
}

// awaitExit waits for make run to exit and returns its exit code.
func (r *localRun) awaitExit(t *testing.T) int {
	t.Helper()
	select {
	case err := <-r.exited:
		// An error of its own (not an exit status) only when its output stayed open after it
		// exited: awaitNothingLeft says by whom.
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) && !errors.Is(err, exec.ErrWaitDelay) {
			t.Fatal(err)
		}
		return r.cmd.ProcessState.ExitCode()
	case <-time.After(2 * time.Minute):
		t.Fatal("make run did not exit within 2 minutes")
		return 0
	}
}

// awaitNothingLeft fails the test unless every process of the run is gone within a bound.
func (r *localRun) awaitNothingLeft(t *testing.T, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		left := r.processes(t)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still running %s after make run ended: %s", within, describe(left))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// runDirs lists the run directories left in the cache.
func (r *localRun) runDirs(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(r.cache, "local", "run-*"))
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// However `make run` and its controller end, no process it started is left running.
func TestNothingOutlivesMakeRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		// end ends the run; wantCode is make run's exit code.
		end      func(t *testing.T, r *localRun)
		wantCode int
		// wantOutput is part of what make run must say.
		wantOutput string
	}{
		{"Ctrl-C", func(t *testing.T, r *localRun) { _ = r.cmd.Process.Signal(syscall.SIGINT) }, 0, ""},
		{"SIGTERM", func(t *testing.T, r *localRun) { _ = r.cmd.Process.Signal(syscall.SIGTERM) }, 0, ""},
		{"controller panics", func(t *testing.T, r *localRun) {
			_ = syscall.Kill(r.controllerPid(t), syscall.SIGUSR1)
		}, 1, "the controller exited (exit status 2)"},
		{"controller is killed", func(t *testing.T, r *localRun) {
			_ = syscall.Kill(r.controllerPid(t), syscall.SIGKILL)
		}, 1, "the controller exited (signal: killed)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startRun(t, nil)
			r.awaitReady(t)
			tc.end(t, r)
			if code := r.awaitExit(t); code != tc.wantCode {
				t.Errorf("make run exited with %d, want %d", code, tc.wantCode)
			}
			if !strings.Contains(r.output.String(), tc.wantOutput) {
				t.Errorf("make run did not say %q", tc.wantOutput)
			}
			// make run returns only after stopping what it started.
			r.awaitNothingLeft(t, 0)
			if dirs := r.runDirs(t); len(dirs) != 0 {
				t.Errorf("run directories left: %v", dirs)
			}
		})
	}

	// The controller fails on its own after the control plane started: its metrics port is taken.
	t.Run("controller error", func(t *testing.T) {
		taken, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer taken.Close()
		r := startRun(t, nil, "DNSPOLICY_METRICS_BIND_ADDRESS="+taken.Addr().String())
		if code := r.awaitExit(t); code != 1 {
			t.Errorf("make run exited with %d, want 1", code)
		}
		for _, want := range []string{"Local control plane at", "the controller exited (exit status 1)"} {
			if !strings.Contains(r.output.String(), want) {
				t.Errorf("make run did not say %q", want)
			}
		}
		r.awaitNothingLeft(t, 0)
		if dirs := r.runDirs(t); len(dirs) != 0 {
			t.Errorf("run directories left: %v", dirs)
		}
	})

	// SIGKILL of make run itself: nothing can clean up, so the kernel ends the children.
	t.Run("make run is killed", func(t *testing.T) {
		r := startRun(t, nil)
		r.awaitReady(t)
		killed := describe(r.processes(t))
		if err := r.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		r.awaitExit(t)
		r.awaitNothingLeft(t, 30*time.Second)
		// The next run removes what the killed one could not.
		if dirs := r.runDirs(t); len(dirs) != 1 {
			t.Fatalf("run directories: %v, want the killed run's", dirs)
		}
		next := startRun(t, nil, "DNSPOLICY_CACHE="+r.cache)
		next.cache = r.cache
		next.awaitReady(t)
		if dirs := next.runDirs(t); len(dirs) != 1 || !strings.HasSuffix(dirs[0], "run-"+strconv.Itoa(next.cmd.Process.Pid)) {
			t.Errorf("run directories: %v, want only the new run's", dirs)
		}
		_ = next.cmd.Process.Signal(syscall.SIGINT)
		next.awaitExit(t)
		t.Logf("killed with make run: %s", killed)
	})

	// SIGKILL of make (the parent make run is exec'd by): make run is told to stop and cleans up.
	t.Run("make is killed", func(t *testing.T) {
		// A shell standing for make: it starts make run and waits, as make does.
		r := startRun(t, []string{"bash", "-c", `"$1" & wait`, "make"})
		r.awaitReady(t)
		if err := r.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		r.awaitExit(t)
		r.awaitNothingLeft(t, time.Minute)
		if dirs := r.runDirs(t); len(dirs) != 0 {
			t.Errorf("run directories left: %v", dirs)
		}
	})
}
