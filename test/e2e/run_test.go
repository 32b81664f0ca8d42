//go:build e2e

// Package e2e runs the project the way a user does: the `make run` binary, real processes, real tools.
package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// `make run` with no cluster: a local control plane comes up, kubectl with the printed kubeconfig
// lists our CRDs and the Gateway API ones, and Ctrl-C (SIGINT) leaves no process behind.
func TestMakeRunWithoutCluster(t *testing.T) {
	run := startMakeRun(t)

	kubeconfig := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(run.stdout)
		for sc.Scan() {
			line := sc.Text()
			t.Log(line)
			if p, ok := strings.CutPrefix(line, "Kubeconfig: "); ok {
				kubeconfig <- p
			}
		}
	}()
	var path string
	select {
	case path = <-kubeconfig:
	case err := <-run.exited:
		t.Fatalf("make run exited before printing a kubeconfig: %v", err)
	case <-time.After(3 * time.Minute):
		t.Fatal("no kubeconfig printed within 3 minutes")
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(run.assets, "kubectl"), "--kubeconfig", path, "get", "crd", "-o", "name").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get crd: %v\n%s", err, out)
	}
	for _, crd := range []string{"dnspolicies.kuadrant.io", "dnsrecords.kuadrant.io", "dnshealthcheckprobes.kuadrant.io",
		"gateways.gateway.networking.k8s.io", "gatewayclasses.gateway.networking.k8s.io", "httproutes.gateway.networking.k8s.io"} {
		if !strings.Contains(string(out), "customresourcedefinition.apiextensions.k8s.io/"+crd+"\n") {
			t.Errorf("kubectl get crd does not list %s:\n%s", crd, out)
		}
	}

	children := childrenOf(t, run.cmd.Process.Pid)
	if len(children) < 2 {
		t.Fatalf("expected kube-apiserver and etcd as children of make run, found pids %v", children)
	}
	if err := run.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-run.exited:
		if err != nil {
			t.Errorf("make run exited with %v after Ctrl-C, want 0", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("make run still running a minute after Ctrl-C")
	}
	for _, pid := range children {
		if alive(pid) {
			t.Errorf("process %d (%s) survived Ctrl-C", pid, comm(pid))
		}
	}
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var kids []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil {
			continue
		}
		// The command name is in parentheses and may hold spaces; the fields after it are fixed.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			kids = append(kids, child)
		}
	}
	return kids
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

func comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}
