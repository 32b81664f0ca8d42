//go:build integration

package dnsrecord_test

import (
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat: 100 on every Linux
// architecture Go supports.
const clockTicks = 100

// controlPlaneCPU returns a function reading the CPU-seconds (user + system) used so far by the
// kube-apiserver and the etcd of the first control plane, which this process started: the work a
// benchmark's records cost the API server, which on shared cores bounds their time to Ready.
func controlPlaneCPU(t testing.TB) (apiserver, etcd func() float64) {
	t.Helper()
	u, err := url.Parse(envs[0].Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	api := findProcess(t, "kube-apiserver", "--secure-port="+u.Port())
	etcdURL := argValue(cmdline(api), "--etcd-servers=")
	store := findProcess(t, "etcd", "--listen-client-urls="+etcdURL)
	return func() float64 { return cpuSeconds(t, api) }, func() float64 { return cpuSeconds(t, store) }
}

// findProcess returns the pid of this process's child named name whose command line holds arg.
func findProcess(t testing.TB, name, arg string) string {
	t.Helper()
	self := strconv.Itoa(os.Getpid())
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid := filepath.Base(d)
		if fields := stat(pid); len(fields) > 1 && fields[1] == self && filepath.Base(strings.Fields(cmdline(pid) + " x")[0]) == name {
			for _, a := range strings.Fields(cmdline(pid)) {
				if a == arg {
					return pid
				}
			}
		}
	}
	t.Fatalf("no %s child process with %s", name, arg)
	return ""
}

func cmdline(pid string) string {
	b, _ := os.ReadFile("/proc/" + pid + "/cmdline")
	return strings.ReplaceAll(string(b), "\x00", " ")
}

func argValue(cmd, prefix string) string {
	for _, a := range strings.Fields(cmd) {
		if strings.HasPrefix(a, prefix) {
			return strings.TrimPrefix(a, prefix)
		}
	}
	return ""
}

// stat returns the fields of /proc/<pid>/stat after the command name: state, ppid, ... (utime and
// stime are fields 11 and 12 here).
func stat(pid string) []string {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
}

func cpuSeconds(t testing.TB, pid string) float64 {
	f := stat(pid)
	if len(f) < 13 {
		t.Fatalf("reading /proc/%s/stat", pid)
	}
	user, _ := strconv.ParseFloat(f[11], 64)
	sys, _ := strconv.ParseFloat(f[12], 64)
	return (user + sys) / clockTicks
}
