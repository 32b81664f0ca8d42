//go:build mixedfleet

// Package mixedfleet runs Kuadrant's delegation scenarios on fleets that mix Kuadrant's dns-operator
// and our controller: Kuadrant's manager, built from a checkout the user brings (DNS_OPERATOR), as
// the primary with ours as the secondary, and ours as the primary with Kuadrant's as the secondary
// (docs/mixed-fleet.md). `make mixed-fleet DNS_OPERATOR=<checkout>` runs it. It is a measurement,
// not part of `make test`: Kuadrant's repository is not a Go module dependency, and CI has no
// checkout of it.
//
// Each cluster is a real control plane (envtest's kube-apiserver and etcd) with the CRDs of the
// operator that runs on it, and each operator runs as a process, as in a cluster. The primary
// reaches the secondary as Kuadrant documents it: a Secret labelled
// kuadrant.io/multicluster-kubeconfig=true in dns-operator-system whose kubeconfig holds the token
// of a ServiceAccount with Kuadrant's remote role, nothing more. Answers are read with a DNS client
// from our embedded server serving the primary's authoritative records (on a Kuadrant primary, our
// binary runs as its DNS server only, where Kuadrant would run its CoreDNS).
package mixedfleet

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dnspolicy/dnspolicy-controller/hack/controlplane"
	"github.com/dnspolicy/dnspolicy-controller/test/clustersecret"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// The binaries, built once in TestMain.
var (
	checkout    string // DNS_OPERATOR
	kuadrantBin string // Kuadrant's manager, cached per commit
	kuadrantKey string // the commit it was built from (with a diff hash when the checkout has changes)
	oursBin     string // cmd/dnspolicy-controller
	outDir      string // logs, kept after the run
)

func TestMain(m *testing.M) {
	// envtest logs through controller-runtime; the operators' logs are what tell a run's story.
	ctrllog.SetLogger(logr.Discard())
	if err := setUp(); err != nil {
		fmt.Fprintln(os.Stderr, "mixedfleet:", err)
		os.Exit(2)
	}
	code := m.Run()
	printResults()
	os.Exit(code)
}

// setUp builds both operators and finds the envtest binaries.
func setUp() error {
	dir := os.Getenv("DNS_OPERATOR")
	if dir == "" {
		return fmt.Errorf("set DNS_OPERATOR to a checkout of Kuadrant's dns-operator (make mixed-fleet DNS_OPERATOR=<checkout>)")
	}
	var err error
	if checkout, err = filepath.Abs(dir); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(checkout, "cmd", "main.go")); err != nil {
		return fmt.Errorf("%s holds no cmd/main.go: not a dns-operator checkout", checkout)
	}
	if _, err := controlplane.Assets(); err != nil {
		return err
	}
	if kuadrantBin, kuadrantKey, err = buildKuadrant(checkout); err != nil {
		return err
	}
	root, err := controlplane.RepoRoot()
	if err != nil {
		return err
	}
	outDir = os.Getenv("OUT")
	if outDir == "" {
		outDir = filepath.Join(controlplane.CacheDir(), "mixed-fleet", "last-run")
	}
	if err := os.RemoveAll(outDir); err != nil {
		return err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	oursBin = filepath.Join(outDir, "dnspolicy-controller")
	build := exec.Command("go", "build", "-o", oursBin, "./cmd/dnspolicy-controller")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building ./cmd/dnspolicy-controller: %w\n%s", err, out)
	}
	fmt.Fprintf(os.Stderr, "mixedfleet: Kuadrant's manager %s from %s; logs in %s\n", kuadrantKey, checkout, outDir)
	return nil
}

// buildKuadrant builds Kuadrant's manager (go build ./cmd in the checkout), unchanged, once per
// commit into the cache, as hack/kuadrant-e2e.sh builds its suite. A checkout with local changes
// is keyed by them too, so an edited operator is never mistaken for the commit's.
func buildKuadrant(dir string) (bin, key string, err error) {
	out, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		return "", "", fmt.Errorf("git rev-parse in %s: %w", dir, err)
	}
	key = strings.TrimSpace(string(out))
	status, err := exec.Command("git", "-C", dir, "status", "--porcelain", "--untracked-files=no").Output()
	if err != nil {
		return "", "", err
	}
	if len(status) > 0 {
		diff, err := exec.Command("bash", "-c", `git -C "$0" diff HEAD | sha256sum | cut -c1-12`, dir).Output()
		if err != nil {
			return "", "", err
		}
		key += "-dirty-" + strings.TrimSpace(string(diff))
		fmt.Fprintf(os.Stderr, "mixedfleet: the checkout has local changes: the manager is not Kuadrant's %s as published\n", key)
	}
	bin = filepath.Join(controlplane.CacheDir(), "kuadrant-manager", key, "manager")
	if _, err := os.Stat(bin); err == nil {
		return bin, key, nil
	}
	fmt.Fprintf(os.Stderr, "mixedfleet: building Kuadrant's manager %s (once per commit)\n", key)
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", "", err
	}
	build := exec.Command("go", "build", "-o", bin+".tmp", "./cmd")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("building Kuadrant's manager in %s: %w\n%s", dir, err, out)
	}
	return bin, key, os.Rename(bin+".tmp", bin)
}

// operator says which implementation runs on a cluster.
type operator string

const (
	kuadrant operator = "kuadrant"
	ours     operator = "ours"
)

// cluster is one control plane and the operator running on it.
type cluster struct {
	name       string
	op         operator
	cfg        *rest.Config
	c          client.Client
	id         string // the UID of kube-system, the key of a primary's remoteRecordStatuses entry
	kubeconfig string // the operator's (admin) kubeconfig
	proc       *process
	dns        string   // a primary's: the address of the DNS server serving its authoritative records
	dnsProc    *process // that server, when it is not the operator itself (on a Kuadrant primary)
}

// startCluster starts a control plane with the CRDs of op: Kuadrant's from the checkout, or ours
// (with the Gateway API's, as testenv installs them).
func startCluster(t *testing.T, name string, op operator) *cluster {
	t.Helper()
	var cfg *rest.Config
	switch op {
	case ours:
		env, err := testenv.Start(testenv.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Stop() })
		cfg = env.Config
	case kuadrant:
		assets, err := controlplane.Assets()
		if err != nil {
			t.Fatal(err)
		}
		env := &envtest.Environment{
			CRDDirectoryPaths:        []string{filepath.Join(checkout, "config", "crd", "bases")},
			ErrorIfCRDPathMissing:    true,
			BinaryAssetsDirectory:    assets,
			ControlPlaneStartTimeout: 2 * time.Minute,
		}
		if cfg, err = env.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Stop() })
	}
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	cl := &cluster{name: name, op: op, cfg: cfg, c: c}
	ns := &corev1.Namespace{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: metav1.NamespaceSystem}, ns); err != nil {
		t.Fatal(err)
	}
	cl.id = string(ns.UID)
	cl.kubeconfig = filepath.Join(outDir, name+".kubeconfig")
	writeKubeconfig(t, cl.kubeconfig, name, cfg.Host, cfg.CAData, &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken,
	})
	return cl
}

func writeKubeconfig(t *testing.T, path, name, server string, ca []byte, auth *clientcmdapi.AuthInfo) {
	t.Helper()
	b, err := clustersecret.Kubeconfig(name, server, ca, auth)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// connect lets primary read secondary's (or another primary's) DNSRecords as Kuadrant's
// add-cluster-secret sets it up: only Kuadrant's remote role on secondary (package clustersecret).
func connect(t *testing.T, primary, secondary *cluster) {
	t.Helper()
	if err := clustersecret.Connect(context.Background(), primary.cfg, secondary.cfg, secondary.name); err != nil {
		t.Fatalf("connecting %s to %s: %v", primary.name, secondary.name, err)
	}
}

// process is an operator (or DNS server) running as its own process, with its output appended to
// a log in outDir, so that a restart keeps the earlier lines.
type process struct {
	name    string
	bin     string
	args    []string
	env     []string
	logPath string
	health  string // host:port of its /readyz
	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan error
}

func newProcess(name, bin, health string, args []string, env ...string) *process {
	// A clean environment: Kuadrant's manager reads its flags from variables of the same names
	// too, and ours reads DNSPOLICY_* ones, so nothing from the caller's shell may reach them.
	env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	return &process{name: name, bin: bin, args: args, env: env, logPath: filepath.Join(outDir, name+".log"), health: health}
}

// start starts the process and waits until its /readyz answers.
func (p *process) start(t *testing.T) {
	t.Helper()
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(logFile, "=== %s %s %s\n", time.Now().Format(time.RFC3339), p.bin, strings.Join(p.args, " "))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// It dies with the test binary, even when that is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); _ = logFile.Close() }()
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()
	eventually(t, 2*time.Minute, func() string {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("%s exited: %v; its log (%s) ends:\n%s", p.name, err, p.logPath, p.tail(20))
		default:
		}
		resp, err := http.Get("http://" + p.health + "/readyz")
		if err != nil {
			return fmt.Sprintf("%s is not ready: %v", p.name, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Sprintf("%s is not ready: /readyz answered %s", p.name, resp.Status)
		}
		return ""
	})
}

// stop sends SIGTERM and waits for the process to end (SIGKILL after 30 s).
func (p *process) stop() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

func (p *process) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil
}

// serving says whether a primary's DNS server runs: its own process, or its operator's.
func (cl *cluster) serving() bool {
	if cl.dnsProc != nil {
		return cl.dnsProc.running()
	}
	return cl.dns != "" && cl.proc.running()
}

// tail returns the last lines of the process's log.
func (p *process) tail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// eventually polls cond every 500 ms until it returns "" or timeout passes, then fails t with
// cond's last answer.
func eventually(t *testing.T, timeout time.Duration, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		msg := cond()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, msg)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// result is one scenario's outcome, for the table TestMain prints.
type result struct {
	direction, scenario string
	passed              bool
	took                time.Duration
}

var (
	resultsMu sync.Mutex
	results   []result
)

func record(direction, scenario string, passed bool, took time.Duration) {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	results = append(results, result{direction, scenario, passed, took})
}

// printResults prints the scenarios × directions table.
func printResults() {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	if len(results) == 0 {
		return
	}
	sort.SliceStable(results, func(i, j int) bool { return results[i].direction < results[j].direction })
	fmt.Printf("\nKuadrant dns-operator %.12s in mixed fleets with dnspolicy-controller\n", kuadrantKey)
	fmt.Printf("%-36s %-34s %-6s %s\n", "fleet", "scenario", "result", "time")
	for _, r := range results {
		verdict := "pass"
		if !r.passed {
			verdict = "FAIL"
		}
		fmt.Printf("%-36s %-34s %-6s %s\n", r.direction, r.scenario, verdict, r.took.Round(100*time.Millisecond))
	}
	fmt.Printf("logs: %s\n", outDir)
}

// startOperator starts op's binary on cl in role (primary or secondary). A primary reads the
// secondaries of clustersecret.Namespace. extra are further arguments (ours: the DNS server's).
func startOperator(t *testing.T, cl *cluster, role string, extra ...string) {
	t.Helper()
	health := freeport.Addr(t)
	var args []string
	switch cl.op {
	case kuadrant:
		args = []string{
			"--delegation-role=" + role, "--cluster-secret-namespace=" + clustersecret.Namespace,
			"--metrics-bind-address=" + freeport.Addr(t), "--health-probe-bind-address=" + health,
			"--pprof-bind-address=0",
		}
		cl.proc = newProcess(cl.name+"-kuadrant", kuadrantBin, health, append(args, extra...), "KUBECONFIG="+cl.kubeconfig)
	case ours:
		args = []string{
			"--kubeconfig", cl.kubeconfig, "--delegation-role", role, "--log-format", "console",
			"--metrics-bind-address", freeport.Addr(t), "--health-probe-bind-address", health,
			"--enable-policy-controller=false",
		}
		if role == "primary" {
			args = append(args, "--cluster-secret-namespace", clustersecret.Namespace)
		}
		cl.proc = newProcess(cl.name+"-ours", oursBin, health, append(args, extra...))
	}
	cl.proc.start(t)
	t.Cleanup(func() {
		cl.proc.stop()
		if t.Failed() {
			t.Logf("last lines of %s:\n%s", cl.proc.logPath, cl.proc.tail(60))
		}
	})
}

// startDNSServer starts our binary as the DNS server of a Kuadrant primary, where Kuadrant runs
// CoreDNS with its plugin: it serves the same records, the authoritative DNSRecords labelled with
// their zone, read from the primary's API server, and runs no controller of records or policies.
func startDNSServer(t *testing.T, p *cluster, dnsArgs []string) {
	t.Helper()
	health := freeport.Addr(t)
	args := append([]string{
		"--kubeconfig", p.kubeconfig, "--log-format", "console",
		"--enable-record-controller=false", "--enable-policy-controller=false",
		"--metrics-bind-address", "0", "--health-probe-bind-address", health,
	}, dnsArgs...)
	p.dnsProc = newProcess(p.name+"-dns", oursBin, health, args)
	p.dnsProc.start(t)
	t.Cleanup(func() {
		p.dnsProc.stop()
		if t.Failed() {
			t.Logf("last lines of %s:\n%s", p.dnsProc.logPath, p.dnsProc.tail(40))
		}
	})
}
