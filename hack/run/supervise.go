package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// How the processes of one local run find each other, through their environment.
const (
	// controllerKubeconfigEnv, set for the controller child, is the kubeconfig of the control plane.
	controllerKubeconfigEnv = "DNSPOLICY_RUN_KUBECONFIG"
	// supervisorEnv is the pid of the supervising `make run` process, for the shims.
	supervisorEnv = "DNSPOLICY_RUN_SUPERVISOR"
	// realBinaryEnvPrefix + a binary's envtest name (KUBE_APISERVER, ETCD) is the real binary a
	// shim runs.
	realBinaryEnvPrefix = "DNSPOLICY_RUN_REAL_"
	// assetOverridePrefix is envtest's own override of a binary's path, which wins over any
	// assets directory.
	assetOverridePrefix = "TEST_ASSET_"
)

// shimmed are the binaries envtest starts, by their envtest name.
var shimmed = map[string]string{"kube-apiserver": "KUBE_APISERVER", "etcd": "ETCD"}

// The control plane's binaries are started by envtest, which offers no way to bind them to their
// parent. So envtest is pointed at shims, links named kube-apiserver and etcd to this binary: a
// shim asks the kernel to kill it when this process dies, then execs the real binary in its place
// (same pid, same arguments; the parent-death signal survives exec).

// isShim reports whether this process was started as a shim.
func isShim() bool {
	_, ok := shimmed[filepath.Base(os.Args[0])]
	return ok && os.Getenv(supervisorEnv) != ""
}

// execShim turns this process into the real binary, bound to the supervisor's life.
func execShim() error {
	name := filepath.Base(os.Args[0])
	binary := os.Getenv(realBinaryEnvPrefix + shimmed[name])
	if err := setParentDeathSignal(syscall.SIGKILL); err != nil {
		return err
	}
	// The supervisor may have died before the signal was asked for: then nobody would send it.
	if strconv.Itoa(os.Getppid()) != os.Getenv(supervisorEnv) {
		return fmt.Errorf("%s: the make run process that started it is gone", name)
	}
	args := append([]string{binary}, os.Args[1:]...)
	return fmt.Errorf("running %s: %w", binary, syscall.Exec(binary, args, os.Environ()))
}

// bindToThisProcess points envtest at shims in runDir for the real binaries it would start, and
// puts envtest's temporary directories (etcd's data, certificates) in runDir, which is removed
// when this process ends, or by the next run if this one was killed.
func bindToThisProcess(runDir string, assets string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	shims := filepath.Join(runDir, "bin")
	if err := os.MkdirAll(shims, 0o700); err != nil {
		return err
	}
	for name, envName := range shimmed {
		binary := os.Getenv(assetOverridePrefix + envName)
		if binary == "" {
			binary = filepath.Join(assets, name)
		}
		shim := filepath.Join(shims, name)
		if err := os.Symlink(self, shim); err != nil {
			return err
		}
		for k, v := range map[string]string{realBinaryEnvPrefix + envName: binary, assetOverridePrefix + envName: shim} {
			if err := os.Setenv(k, v); err != nil {
				return err
			}
		}
	}
	if err := os.Setenv(supervisorEnv, strconv.Itoa(os.Getpid())); err != nil {
		return err
	}
	return os.Setenv("TMPDIR", runDir)
}

// newRunDir makes this run's directory under state, after removing those of earlier runs whose
// process is gone (killed, so they could not remove their own).
func newRunDir(state string) (string, error) {
	if err := os.MkdirAll(state, 0o700); err != nil {
		return "", err
	}
	earlier, err := filepath.Glob(filepath.Join(state, "run-*"))
	if err != nil {
		return "", err
	}
	for _, dir := range earlier {
		pid, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), "run-"))
		if err == nil && syscall.Kill(pid, 0) == nil {
			continue // a run still going (another `make run` with the same cache)
		}
		if err := os.RemoveAll(dir); err != nil {
			return "", err
		}
	}
	dir := filepath.Join(state, fmt.Sprintf("run-%d", os.Getpid()))
	return dir, os.MkdirAll(dir, 0o700)
}

// controller is the controller child process.
type controller struct {
	cmd    *exec.Cmd
	exited chan error
}

// stopGrace is how long the controller may take to stop (the manager's own graceful-shutdown
// timeout is 30 s) before it is killed.
const stopGrace = 35 * time.Second

// startController runs this binary again as the controller, with kubeconfig and env added to this
// process's environment. It is killed by the kernel if this process dies, and has a process group
// of its own, so Ctrl-C reaches only this process, which stops it in order.
func startController(kubeconfig string, env []string) (*controller, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, os.Args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Env = append(cmd.Env, controllerKubeconfigEnv+"="+kubeconfig)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the controller: %w", err)
	}
	c := &controller{cmd: cmd, exited: make(chan error, 1)}
	go func() { c.exited <- cmd.Wait() }()
	return c, nil
}

// wait returns when the controller exits: nil once ctx ended and it stopped cleanly, else why it
// exited. When ctx ends first, the controller is asked to stop, then killed after stopGrace.
func (c *controller) wait(ctx context.Context) error {
	select {
	case err := <-c.exited:
		if err == nil {
			err = errors.New("exit status 0")
		}
		return fmt.Errorf("the controller exited (%w): the local control plane is stopped", err)
	case <-ctx.Done():
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-c.exited:
		if err != nil {
			return fmt.Errorf("the controller stopped with %w", err)
		}
		return nil
	case <-time.After(stopGrace):
		_ = c.cmd.Process.Kill()
		return fmt.Errorf("the controller did not stop within %s and was killed (%w)", stopGrace, <-c.exited)
	}
}
