//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	dnsv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/hack/controlplane"
	"github.com/dnspolicy/dnspolicy-controller/providers/coredns"
	"github.com/dnspolicy/dnspolicy-controller/providers/route53"
	route53emu "github.com/dnspolicy/dnspolicy-controller/test/emulators/route53"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
	"github.com/dnspolicy/dnspolicy-controller/test/resolver"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

const (
	// obsCloudZone is held by the Route 53 emulator, obsEdgeZone served by both clusters' embedded
	// servers, each pulling the other's export.
	obsCloudZone = "aws.obs.e2e.example.com"
	obsEdgeZone  = "edge.obs.e2e.example.com"
	obsCloudHost = "app." + obsCloudZone
	obsEdgeHost  = "api." + obsEdgeZone
	obsCloudNS   = "obs-cloud"
	obsEdgeNS    = "obs-edge"
	obsKey       = "obs-peer-key"
	// obsMaxFor caps each alert's `for:` in the test's copy of the rules (see shortenRules).
	obsMaxFor = 10 * time.Second
	// obsQuietFor is how long the quiet run lasts once settled: an alert's shortened `for:` and a
	// few scrapes and evaluations more.
	obsQuietFor = obsMaxFor + 20*time.Second
	// obsRRL is each embedded server's response rate per client prefix: far above the test's
	// steady queries, far below its burst.
	obsRRL = 10
	// obsTCPPerSource bounds each server's TCP connections from one address: above the peers'
	// pulls and the test's steady clients, below its burst of connections.
	obsTCPPerSource = 16
)

// obsKeys are the access keys of the clusters' provider Secrets, the only ones Route 53 accepts.
var obsKeys = []string{"AKIAOBS1", "AKIAOBS2"}

// obsGeo places the client subnets the test's queries carry (EDNS Client Subnet).
var obsSubnets = map[string]netip.Prefix{
	"IE": netip.MustParsePrefix("81.17.0.0/24"), "US": netip.MustParsePrefix("8.8.8.0/24"), "JP": netip.MustParsePrefix("133.0.0.0/24"),
}

// obsAlertsNotCaused are the alerts of the rule files the scenario cannot cause, with the reason.
// Every other alert must fire.
var obsAlertsNotCaused = map[string]string{
	// Its expression needs no successful call to the provider in 15 minutes (unless ...
	// increase(...{result="success"}[15m]) > 0): the clusters published through it minutes before,
	// and the window cannot be shortened without changing the expression.
	"DNSPolicyProviderFailing": "needs 15 minutes without a successful provider call; the test runs a few",
	// A recovered panic is a bug; the units of pkg/goroutine and of each component cause one.
	"DNSPolicyPanicRecovered": "needs a panic, which only a bug causes",
}

// obsFleet is the observed system: two clusters, each a control plane with the controller as its
// own process (records controller, policy controller, health probes, embedded DNS server), a Route 53
// emulator, the gateways' health endpoints, and Prometheus scraping both processes.
type obsFleet struct {
	emu      *route53emu.Server
	emuURL   string
	gateways []*healthServer
	ips      []string
	procs    []*controllerProcess
	dns      []string
	dnsPort  int
	prom     *promServer
	started  time.Time
	alerts   []alertRule
	recorded []string
	queries  []panelQuery
}

// Acceptance "See it working" of issue 26: a real Prometheus (Debian's) scrapes two controller
// processes, whose metrics endpoint also serves their embedded DNS servers' metrics, and evaluates
// the alert rules of config/observability/alerts (their `for:` shortened). First a quiet run
// (records published to the Route 53 emulator and to the embedded servers, which pull each other's
// exports, healthy probes, ordinary queries from three countries) during which no alert fires; then
// the scenario of runScenario, in which every alert fires but those of obsAlertsNotCaused. Every
// query of every panel of every dashboard under config/observability/dashboards returns data for
// the scenario and names only series Prometheus holds, as does every rule. The checker itself is
// shown to fail a dashboard whose query names a series that does not exist.
func TestObservability(t *testing.T) {
	ctrllog.SetLogger(logr.Discard())
	f := startObsFleet(t)
	stop := f.steadyQueries(t)
	defer stop()

	// The quiet run: settled, then long enough for any alert's shortened `for:` to elapse.
	f.waitSettled(t)
	quietFrom := time.Now()
	for time.Since(quietFrom) < obsQuietFor {
		if _, problems, err := f.prom.ruleHealth(); err != nil || len(problems) > 0 {
			t.Fatalf("rules: %v %v", err, problems)
		}
		time.Sleep(time.Second) // the quiet run lasts a fixed window: nothing is awaited
	}
	fired, err := f.prom.firedSince(f.started)
	if err != nil {
		t.Fatal(err)
	}
	for name, labels := range fired {
		t.Errorf("quiet run: alert %s fired %s (expr %s)", name, labels, f.alertExpr(name))
	}
	t.Logf("quiet run: %d alerts evaluated for %v after the fleet settled (%v after Prometheus started), none fired: %v",
		len(f.alerts), obsQuietFor, time.Since(f.started).Round(time.Second), len(fired) == 0)

	scenarioFrom := time.Now()
	f.runScenario(t, scenarioFrom)
	f.checkAlertsFire(t, scenarioFrom)
	f.checkDashboards(t, scenarioFrom)
	f.checkRuleSeries(t)
	t.Run("checker reports a series that does not exist", func(t *testing.T) { f.checkerCatchesMissingSeries(t, scenarioFrom) })
}

// startObsFleet starts the emulator, the gateways' health endpoints, both clusters with their
// records, and Prometheus with the test's copy of the rule files.
func startObsFleet(t *testing.T) *obsFleet {
	t.Helper()
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	f := &obsFleet{ips: []string{"127.0.0.21", "127.0.0.22"}}
	dashboards := filepath.Join(root, "config", "observability", "dashboards", "*.json")
	var files []string
	if f.queries, files, err = loadDashboards(dashboards); err != nil {
		t.Fatal(err)
	}
	if len(f.queries) == 0 {
		t.Errorf("no panel queries in %s (%d files)", dashboards, len(files))
	}
	ruleFiles := findRuleFiles(t, filepath.Join(root, "config", "observability", "alerts"))
	var rules []string
	rules, f.alerts, f.recorded = shortenRules(t, ruleFiles, t.TempDir(), obsMaxFor)
	if len(f.alerts) == 0 {
		t.Errorf("no alerting rules in %v", ruleFiles)
	}
	t.Logf("%d panel queries in %d dashboards, %d alerts and %d recording rules in %v", len(f.queries), len(files), len(f.alerts), len(f.recorded), ruleFiles)

	bin := buildController(t)
	// Keys other than the clusters' are refused: the scenario's Secret with a wrong key.
	f.emu = route53emu.New(route53emu.Options{Zones: []string{obsCloudZone}, AccessKeys: obsKeys, RequestsPerSecond: -1})
	srv, emuURL, err := f.emu.Listen("127.0.0.1:0")
	f.emuURL = emuURL
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	port := freeport.PortOn(t, f.ips...)
	for _, ip := range f.ips {
		g := &healthServer{addr: net.JoinHostPort(ip, strconv.Itoa(port)), host: obsCloudHost}
		g.start(t)
		t.Cleanup(g.stop)
		f.gateways = append(f.gateways, g)
	}
	dir := t.TempDir()
	geoDB := writeMCGeoDB(t, dir)
	keyFile := writeObsKey(t, dir, "tsig.conf")
	// The servers serve one port on two loopback addresses, the zone's two nameservers, so that a
	// server can find its peers in the zone's NS set.
	serverIPs := []string{"127.0.0.31", "127.0.0.32"}
	f.dnsPort = freeport.PortOn(t, serverIPs...)
	var nsAddrs []string
	for i, ip := range serverIPs {
		f.dns = append(f.dns, net.JoinHostPort(ip, strconv.Itoa(f.dnsPort)))
		nsAddrs = append(nsAddrs, fmt.Sprintf("ns%d.%s=%s", i+1, obsEdgeZone, ip))
	}
	var targets []promTarget
	for i := range f.dns {
		env, err := testenv.Start(testenv.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Stop() })
		name := fmt.Sprintf("obs-cluster%d", i+1)
		proc := startControllerProcess(t, bin, name, env, route53.ProviderName+","+coredns.ProviderName,
			"--health-check-allowed-cidrs", "127.0.0.0/8",
			"--owner-lease-renewal", leaseEvery.String(), "--owner-lease-duration", leaseDuration.String(),
			"--dns-server-address", f.dns[i], "--dns-geoip-database", geoDB, "--grant", obsEdgeNS+"="+obsEdgeZone,
			"--dns-tsig-key-file", keyFile, "--dns-transfer-keys", obsEdgeZone+"="+obsKey,
			"--dns-export-keys", obsEdgeZone+"="+obsKey, "--dns-peer-keys", obsEdgeZone+"="+obsKey,
			"--dns-peers", obsEdgeZone+"="+f.dns[1-i], "--dns-peer-pull-interval", mcPull.String(),
			"--dns-nameservers", "ns1."+obsEdgeZone+",ns2."+obsEdgeZone, "--dns-nameserver-addresses", strings.Join(nsAddrs, ","),
			"--dns-rrl-responses-per-second", strconv.Itoa(obsRRL), "--dns-rrl-slip", "2",
			"--dns-max-tcp-connections-per-source", strconv.Itoa(obsTCPPerSource))
		f.procs = append(f.procs, proc)
		f.publish(t, proc.cluster, i, emuURL, port)
		targets = append(targets, promTarget{addr: proc.cluster.metrics, cluster: name})
	}
	f.started = time.Now()
	f.prom = startPrometheus(t, targets, rules)
	return f
}

// findRuleFiles lists the Prometheus rule files in dir: YAML holding rule groups, not promtool's
// unit tests (which name rule_files and tests).
func findRuleFiles(t *testing.T, dir string) []string {
	t.Helper()
	var rules []string
	for _, pattern := range []string{"*.yaml", "*.yml"} {
		files, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := yaml.Unmarshal(b, &doc); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if _, ok := doc["groups"]; ok {
				if _, test := doc["tests"]; !test {
					rules = append(rules, file)
				}
			}
		}
	}
	return rules
}

// writeObsKey writes a file holding the peers' TSIG key with a fresh secret.
func writeObsKey(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(fmt.Sprintf("key %q { algorithm hmac-sha256; secret %q; };\n", obsKey, obsSecret(t))), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// obsSecret is a fresh hmac-sha256 secret, as tsig-keygen makes one.
func obsSecret(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// publish makes cluster i publish its gateway (IE for the first, the default geo; US for the
// second) into both zones: the cloud one with an HTTP health check of its gateway, the edge one
// through the embedded server.
func (f *obsFleet) publish(t *testing.T, cl *conflictCluster, i int, emuURL string, port int) {
	t.Helper()
	geo := []string{"IE", "US"}[i]
	for _, ns := range []string{obsCloudNS, obsEdgeNS} {
		cl.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	cl.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "provider", Namespace: obsCloudNS}, Type: v1alpha1.SecretTypeAWS,
		StringData: map[string]string{v1alpha1.AWSAccessKeyIDKey: obsKeys[i],
			v1alpha1.AWSSecretAccessKeyKey: "secret-of-" + cl.name, v1alpha1.EndpointOverrideKey: emuURL}})
	cl.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "provider", Namespace: obsEdgeNS}, Type: v1alpha1.SecretTypeCoreDNS,
		StringData: map[string]string{v1alpha1.CoreDNSZonesKey: obsEdgeZone}})
	publishGateway(t, cl, obsCloudNS, obsCloudHost, f.ips[i], func(p *dnsv1.DNSPolicy) {
		p.Spec.LoadBalancing = &dnsv1.LoadBalancingSpec{Weight: 120, Geo: geo, DefaultGeo: i == 0}
		p.Spec.HealthCheck = &v1alpha1.HealthCheckSpec{Port: port, Path: "/healthz", Protocol: v1alpha1.ProtocolHTTP,
			Interval: &metav1.Duration{Duration: time.Second}, FailureThreshold: 1}
	})
	publishGateway(t, cl, obsEdgeNS, obsEdgeHost, f.ips[i], func(p *dnsv1.DNSPolicy) {
		p.Spec.LoadBalancing = &dnsv1.LoadBalancingSpec{Weight: 120, Geo: geo, DefaultGeo: i == 0}
	})
}

// steadyQueries asks both embedded servers for the edge host from each country's subnet twice a
// second, as ordinary clients do, until stopped.
func (f *obsFleet) steadyQueries(t *testing.T) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		countries := []string{"IE", "US", "JP"}
		for n := 0; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			for _, addr := range f.dns {
				_, _ = obsAsk(addr, obsEdgeHost, dns.TypeA, obsSubnets[countries[n%len(countries)]])
			}
		}
	}()
	return func() { cancel(); <-done }
}

// waitSettled waits until Prometheus sees every record Ready and both probes healthy, and both
// servers answer each country with its cluster's gateway (each merges the other's export).
func (f *obsFleet) waitSettled(t *testing.T) {
	t.Helper()
	want := map[string]string{"IE": f.ips[0], "US": f.ips[1], "JP": f.ips[0]}
	eventually(t, 3*time.Minute, func() string {
		for _, expr := range []string{`count(dns_provider_record_ready == 1) >= 4`, `sum(dnspolicy_health_probes{state="healthy"}) == 2`} {
			if res, err := f.prom.query(expr); err != nil || len(res) == 0 {
				return fmt.Sprintf("prometheus: no data for %s yet (%v)", expr, err)
			}
		}
		if res, err := f.prom.query(`dns_provider_record_ready == 0`); err != nil || len(res) > 0 {
			return fmt.Sprintf("prometheus: records not Ready: %v %v", res, err)
		}
		for _, addr := range f.dns {
			for country, ip := range want {
				r, err := obsAsk(addr, obsEdgeHost, dns.TypeA, obsSubnets[country])
				if err != nil || resolver.AddressesOf(r) != ip {
					return fmt.Sprintf("%s answers a client in %s with %v (%v), want %s", addr, country, r, err, ip)
				}
			}
		}
		return ""
	})
}

// alertExpr is the expression of the alert called name.
func (f *obsFleet) alertExpr(name string) string {
	for _, a := range f.alerts {
		if a.name == name {
			return a.expr
		}
	}
	return "?"
}
