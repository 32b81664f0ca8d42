//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/clouddns"
	"github.com/dnspolicy/dnspolicy-controller/providers/route53"
	clouddnsemu "github.com/dnspolicy/dnspolicy-controller/test/emulators/clouddns"
	route53emu "github.com/dnspolicy/dnspolicy-controller/test/emulators/route53"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

const (
	leaseZone = "leases.e2e.example.com"
	leaseHost = "app." + leaseZone
	leaseNS   = "leases"
	// The controllers renew every 5 s and ask for 20 s (the defaults are 30 s and 75 s): the test
	// runs what a cluster's death costs at the defaults, six times faster.
	leaseEvery    = 5 * time.Second
	leaseDuration = 20 * time.Second
	// quietFor is the window the survivors' writes are counted over: 24 renewal periods, the number
	// of periods in 12 minutes at the default renewal.
	quietFor = 2 * time.Minute
)

// Acceptance 2 and 3 of issue 12, on the Route 53 and the Cloud DNS emulator: three control planes,
// each with the controller as its own process, share one zone with an owner written as Kuadrant
// writes (no lease), published first with the TTL the owner of the lowest ID wants, which wins; that
// owner runs in the cluster whose controller is killed with SIGKILL. Its target leaves the zone and the answers of a DNS server
// serving the zone within its lease and one re-check; the survivors' targets never do, their TTL
// takes over and their Conflicted conditions clear; the Kuadrant owner's target stays; afterwards
// the survivors write only their renewals; restarting the killed controller brings its target back.
func TestDeadClusterLeavesTheAnswers(t *testing.T) {
	ctrllog.SetLogger(logr.Discard())
	bin := buildController(t)
	for _, c := range []leaseCloud{route53Cloud(t), cloudDNSCloud(t)} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			deadClusterLeaves(t, bin, c)
		})
	}
}

// leaseCloud is one emulated cloud holding the shared zone, without rate limits: the test reads the
// zone far more often than any controller does.
type leaseCloud struct {
	name, provider string
	secret         func(namespace, name string) *corev1.Secret
	constructor    providers.Constructor
	writes         func() int
}

func route53Cloud(t *testing.T) leaseCloud {
	emu := route53emu.New(route53emu.Options{Zones: []string{leaseZone}, AccessKeys: []string{"AKIALEASE"}, RequestsPerSecond: -1})
	srv, url, err := emu.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return leaseCloud{name: "route53", provider: route53.ProviderName, constructor: route53.New,
		secret: func(namespace, name string) *corev1.Secret {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Type: v1alpha1.SecretTypeAWS,
				Data: map[string][]byte{v1alpha1.AWSAccessKeyIDKey: []byte("AKIALEASE"), v1alpha1.AWSSecretAccessKeyKey: []byte("s"),
					v1alpha1.EndpointOverrideKey: []byte(url)}}
		},
		writes: func() int { return emu.Calls()[route53emu.OpChangeResourceRecordSets] }}
}

func cloudDNSCloud(t *testing.T) leaseCloud {
	const project = "lease-project"
	emu := clouddnsemu.New(clouddnsemu.Options{Project: project, Zones: []string{leaseZone}, RequestsPerSecond: -1})
	srv, url, err := emu.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return leaseCloud{name: "clouddns", provider: clouddns.ProviderName, constructor: clouddns.New,
		secret: func(namespace, name string) *corev1.Secret {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Type: v1alpha1.SecretTypeGCP,
				Data: map[string][]byte{v1alpha1.GoogleProjectIDKey: []byte(project), v1alpha1.EndpointOverrideKey: []byte(url)}}
		},
		writes: func() int { return emu.Calls()[clouddnsemu.OpCreateChange] }}
}

func deadClusterLeaves(t *testing.T, bin string, cloud leaseCloud) {
	reader := leaseReader(t, cloud)

	// The Kuadrant owner was there first, with the TTL the dead owner will want: its claim, which does
	// not say what it wants, holds that TTL until the dead owner's claim, which says so, explains it
	// (pkg/plan: incumbency); once that owner is gone the TTL is free and the survivors' takes over.
	kuadrant := v1alpha1.NewEndpoint(leaseHost, v1alpha1.RecordTypeA, 30, "10.9.9.9")
	reader.apply(t, &providers.Changes{Create: []*v1alpha1.Endpoint{kuadrant, kuadrantClaim("k-kuadrant", kuadrant)}})

	owners := []string{"a-dies", "b-lives", "c-lives"}
	ips := []string{"10.1.0.1", "10.1.0.2", "10.1.0.3"}
	ttls := []v1alpha1.TTL{30, 60, 60}
	procs := make([]*controllerProcess, 3)
	for i := range procs {
		env, err := testenv.Start(testenv.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Stop() })
		procs[i] = startControllerProcess(t, bin, fmt.Sprintf("%s-cluster%d", cloud.name, i+1), env, cloud.provider,
			"--owner-lease-renewal", leaseEvery.String(), "--owner-lease-duration", leaseDuration.String())
		cl := procs[i].cluster
		cl.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNS}})
		cl.create(t, cloud.secret(leaseNS, "provider"))
		cl.create(t, &v1alpha1.DNSRecord{
			ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: leaseNS},
			Spec: v1alpha1.DNSRecordSpec{OwnerID: owners[i], RootHost: leaseHost, ProviderRef: &v1alpha1.ProviderRef{Name: "provider"},
				Endpoints: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(leaseHost, v1alpha1.RecordTypeA, ttls[i], ips[i])}},
		})
	}
	answers := serveZone(t, reader.read, leaseZone, leaseHost)
	all := []string{"10.1.0.1", "10.1.0.2", "10.1.0.3", "10.9.9.9"}
	survivors := []string{"10.1.0.2", "10.1.0.3", "10.9.9.9"}

	// Settled: every target published with the winner's TTL, every claim at the shared name naming its
	// cluster's lease, and the three leases renewed.
	eventually(t, 3*time.Minute, func() string {
		a, claims, leases := reader.state(t)
		if a == nil || fmt.Sprint(a.Targets) != fmt.Sprint(all) || a.RecordTTL != 30 {
			return fmt.Sprintf("the A record is %v, want %v with TTL 30", a, all)
		}
		for i, p := range procs {
			if claims[owners[i]] != lease.Key(p.cluster.clusterID) {
				return fmt.Sprintf("%s's claim names lease %q, want its cluster's %q", owners[i], claims[owners[i]], lease.Key(p.cluster.clusterID))
			}
			if !leases[lease.Key(p.cluster.clusterID)] {
				return fmt.Sprintf("no lease of %s in the zone", p.cluster.name)
			}
		}
		if claims["k-kuadrant"] != "" {
			return "the Kuadrant owner's claim was changed"
		}
		return ""
	})
	if got := answers(t); fmt.Sprint(got) != fmt.Sprint(all) {
		t.Fatalf("the DNS server answers %v, want %v", got, all)
	}
	for _, i := range []int{1, 2} {
		waitCondition(t, procs[i].cluster, v1alpha1.ConditionTypeConflicted, metav1.ConditionTrue, time.Minute)
	}

	procs[0].kill(t)
	killed := time.Now()
	// The lease and its tolerance, counted from the last renewal before the kill (up to one period
	// earlier), one re-check (a read per period), and the survivor's pass (a replan, a gather of up to
	// a second, a plan and a write) on two loaded cores.
	bound := leaseDuration + lease.DefaultTolerance + 2*leaseEvery + 5*time.Second
	var gone time.Duration
	eventually(t, 3*bound, func() string {
		a, _, _ := reader.state(t)
		if a == nil {
			t.Fatal("the shared A record is gone: expiry emptied a name")
		}
		for _, ip := range survivors {
			if !slices.Contains(a.Targets, ip) {
				t.Fatalf("a survivor's target %s left the zone: %v", ip, a.Targets)
			}
		}
		if slices.Contains(a.Targets, "10.1.0.1") || a.RecordTTL != 60 {
			return fmt.Sprintf("the A record is still %v TTL %d", a.Targets, a.RecordTTL)
		}
		gone = time.Since(killed)
		return ""
	})
	t.Logf("%s: the killed cluster's target left the zone %v after SIGKILL (lease %v + tolerance %v, renewal %v)",
		cloud.name, gone.Round(100*time.Millisecond), leaseDuration, lease.DefaultTolerance, leaseEvery)
	if gone > bound {
		t.Errorf("the killed cluster's target left after %v, more than its lease (%v + %v) and one re-check (%v) after its last renewal",
			gone, leaseDuration, lease.DefaultTolerance, leaseEvery)
	}
	eventually(t, 30*time.Second, func() string {
		if got := answers(t); fmt.Sprint(got) != fmt.Sprint(survivors) {
			return fmt.Sprintf("the DNS server answers %v, want %v", got, survivors)
		}
		return ""
	})
	t.Logf("%s: the DNS server serving the zone stopped answering the killed cluster's target %v after SIGKILL",
		cloud.name, time.Since(killed).Round(100*time.Millisecond))
	for _, i := range []int{1, 2} {
		waitCondition(t, procs[i].cluster, v1alpha1.ConditionTypeConflicted, metav1.ConditionFalse, time.Minute)
	}
	eventually(t, 30*time.Second, func() string {
		if procs[1].cluster.hasEvent(t, leaseNS, "app", corev1.EventTypeNormal, v1alpha1.ReasonOwnerWithdrawn) ||
			procs[2].cluster.hasEvent(t, leaseNS, "app", corev1.EventTypeNormal, v1alpha1.ReasonOwnerWithdrawn) {
			return ""
		}
		return "no survivor's record has an OwnerWithdrawn event"
	})

	// Quiet: the survivors write their renewals and nothing else.
	before := cloud.writes()
	deadline := time.Now().Add(quietFor)
	for time.Now().Before(deadline) {
		a, _, _ := reader.state(t)
		if a == nil || fmt.Sprint(a.Targets) != fmt.Sprint(survivors) {
			t.Fatalf("the A record changed while quiet: %v", a)
		}
		time.Sleep(2 * time.Second) // sampling the zone through the window, not waiting for a condition
	}
	limit := 2 * (int(quietFor/leaseEvery) + 1)
	n := cloud.writes() - before
	t.Logf("%s: the two survivors wrote %d changes in %v (each renews every %v: at most %d together)", cloud.name, n, quietFor, leaseEvery, limit)
	if n > limit {
		t.Errorf("the survivors wrote %d changes in %v, more than their %d renewals", n, quietFor, limit)
	}

	procs[0].restart(t)
	restarted := time.Now()
	eventually(t, 2*time.Minute, func() string {
		a, _, _ := reader.state(t)
		if a == nil || fmt.Sprint(a.Targets) != fmt.Sprint(all) {
			return fmt.Sprintf("after the restart the A record is %v, want %v", a, all)
		}
		return ""
	})
	t.Logf("%s: the restarted cluster's target was back %v after the restart", cloud.name, time.Since(restarted).Round(100*time.Millisecond))
	eventually(t, 30*time.Second, func() string {
		if procs[0].cluster.hasEvent(t, leaseNS, "app", corev1.EventTypeWarning, v1alpha1.ReasonRepublished) {
			return ""
		}
		return "the restarted cluster's record has no Republished event"
	})
	waitCondition(t, procs[1].cluster, v1alpha1.ConditionTypeLeases, metav1.ConditionTrue, time.Minute)
}

func waitCondition(t *testing.T, cl *conflictCluster, typ string, status metav1.ConditionStatus, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, func() string {
		rec := cl.record(t, leaseNS, "app")
		if rec == nil || condition(rec, typ) == "" || !strings.HasPrefix(condition(rec, typ), string(status)) {
			got := "no record"
			if rec != nil {
				got = condition(rec, typ)
			}
			return fmt.Sprintf("%s: %s is %s, want %s", cl.name, typ, got, status)
		}
		return ""
	})
}

// kuadrantClaim is the ownership TXT Kuadrant's dns-operator writes for r: no wish, no lease.
func kuadrantClaim(owner string, r *v1alpha1.Endpoint) *v1alpha1.Endpoint {
	return v1alpha1.NewEndpoint(registry.TXTName(owner, r.RecordType, r.DNSName), v1alpha1.RecordTypeTXT, r.RecordTTL,
		`"heritage=external-dns,external-dns/owner=`+owner+`,external-dns/version=1"`)
}

// zoneReader reads and writes the zone with its own credentials, as a person with the CLI would.
type zoneReader struct {
	p    providers.Provider
	zone providers.Zone
}

func leaseReader(t *testing.T, cloud leaseCloud) *zoneReader {
	t.Helper()
	ctx := context.Background()
	backend, err := cloud.constructor(ctx, cloud.secret("reader", "reader"), providers.Env{Namespace: "reader"})
	if err != nil {
		t.Fatal(err)
	}
	p := backend.Zones
	zones, err := p.Zones(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, z := range zones {
		if z.DNSName == leaseZone {
			return &zoneReader{p: p, zone: z}
		}
	}
	t.Fatalf("zone %s not listed", leaseZone)
	return nil
}

// read returns the zone's records.
func (z *zoneReader) read() ([]*v1alpha1.Endpoint, error) {
	view, err := z.p.Records(context.Background(), z.zone)
	return view.Endpoints, err
}

func (z *zoneReader) apply(t *testing.T, c *providers.Changes) {
	t.Helper()
	view, err := z.p.Records(context.Background(), z.zone)
	if err != nil {
		t.Fatal(err)
	}
	if err := z.p.Apply(context.Background(), z.zone, view.State, c); err != nil {
		t.Fatal(err)
	}
}

// state is the shared A record, the lease each owner's claim at it names, and the leases present.
func (z *zoneReader) state(t *testing.T) (a *v1alpha1.Endpoint, claims map[string]string, leases map[string]bool) {
	t.Helper()
	view, err := z.p.Records(context.Background(), z.zone)
	if err != nil {
		t.Fatal(err)
	}
	claims, leases = map[string]string{}, map[string]bool{}
	for _, e := range view.Endpoints {
		switch {
		case e.DNSName == leaseHost && e.RecordType == v1alpha1.RecordTypeA:
			a = e
			slices.Sort(a.Targets)
		case e.RecordType != v1alpha1.RecordTypeTXT:
		case strings.HasPrefix(e.DNSName, "dnspolicy-lease-"):
			if l, ok := lease.Parse(e); ok {
				leases[lease.Key(l.Holder)] = true
			}
		default:
			if c, ok := registry.ParseTXT(e); ok && c.Record.DNSName == leaseHost {
				claims[c.Owner] = c.Lease()
			}
		}
	}
	return a, claims, leases
}

// controllerProcess is one cluster's controller binary, which the test can kill and start again.
type controllerProcess struct {
	cluster *conflictCluster
	// args are the controller's own flags; a restart runs with them as they are then.
	args   []string
	start  func(t *testing.T) (*exec.Cmd, chan error)
	cmd    *exec.Cmd
	exited chan error
}

// startControllerProcess starts the controller for env's cluster as its own process, with args.
func startControllerProcess(t *testing.T, bin, name string, env *testenv.Env, provider string, args ...string) *controllerProcess {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := writeKubeconfig(t, dir, name, env)
	metrics := freeport.Addr(t)
	cl := &conflictCluster{name: name, c: env.Client, clusterID: clusterID(t, env), metrics: metrics}
	p := &controllerProcess{cluster: cl, args: args}
	runs := 0
	p.start = func(t *testing.T) (*exec.Cmd, chan error) {
		runs++
		logPath := filepath.Join(dir, fmt.Sprintf("controller-%d.log", runs))
		cmd := exec.Command(bin, append([]string{"--kubeconfig", kubeconfig, "--metrics-bind-address", metrics,
			"--health-probe-bind-address", freeport.Addr(t), "--log-format", "console", "--providers", provider,
			"--allow-provider-endpoint-override"}, p.args...)...) // cloud Secrets point at emulators
		exited := startLogged(t, name, logPath, cmd)
		return cmd, exited
	}
	p.cmd, p.exited = p.start(t)
	eventually(t, time.Minute, func() string {
		if _, err := cl.scrape(); err != nil {
			return fmt.Sprintf("%s: the controller's metrics do not answer: %v", name, err)
		}
		return ""
	})
	return p
}

// kill ends the controller with SIGKILL: no cleanup, no last writes.
func (p *controllerProcess) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	p.exited <- nil
}

func (p *controllerProcess) restart(t *testing.T) {
	t.Helper()
	p.cmd, p.exited = p.start(t)
}
