//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	gatewayapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnsv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsserver"
	"github.com/dnspolicy/dnspolicy-controller/hack/controlplane"
	"github.com/dnspolicy/dnspolicy-controller/pkg/builder"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/providers/coredns"
	"github.com/dnspolicy/dnspolicy-controller/test/bind"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
	"github.com/dnspolicy/dnspolicy-controller/test/geodb"
	"github.com/dnspolicy/dnspolicy-controller/test/resolver"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

const (
	mcParent = "e2e.example.com"
	mcZone   = "gslb." + mcParent
	mcAPI    = "api." + mcZone
	mcShared = "shared." + mcZone
	mcNS     = "gslb"
	mcKey    = "peer-key"
	// Each controller pulls its peers every 2 s; leases as in the lease e2e (the defaults, six
	// times faster).
	mcPull = 2 * time.Second
)

// mcCluster is one cluster of the multi-cluster test: its controller process, its server's address
// and what it publishes.
type mcCluster struct {
	proc           *controllerProcess
	addr           string
	geo, gatewayIP string
	weight         int
	defaultGeo     bool
}

// Acceptance 1, 2 and 3 of issue 16: three control planes, each running the controller as its own
// process with its embedded server on its own loopback address, every server pulling the other two's
// exports; a real BIND holds the parent zone and delegates the subdomain to the three. A
// loadbalanced host and a simple host are published by all three (different geo and weight). The
// three servers serve the same zone (transfer and serial) and, from several client subnets, the
// same answer sets; BIND, resolving through the delegation, answers from them; the weighted split
// holds (chi-square). A SIGKILLed controller's address leaves the survivors' answers within its
// lease and one pull, the survivors' records say the peer is stale, and it rejoins on restart. A
// partition splits the answers as documented, and healing it brings them back together.
func TestMultiClusterDNS(t *testing.T) {
	ctrllog.SetLogger(logr.Discard())
	bin := buildController(t)
	ips := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}
	// BIND listens only on addresses of an interface: 127.0.0.1 (our servers bind any loopback address).
	const bindIP = "127.0.0.1"
	port := freeport.PortOn(t, append(slices.Clone(ips), bindIP)...)
	secret := bind.TSIGKey(t, mcKey)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "tsig.conf")
	if err := os.WriteFile(keyFile, []byte(fmt.Sprintf("key %q { algorithm hmac-sha256; secret %q; };\n", mcKey, secret)), 0o600); err != nil {
		t.Fatal(err)
	}
	geoDB := writeMCGeoDB(t, dir)
	clusters := []*mcCluster{
		{geo: "IE", gatewayIP: "10.16.0.1", weight: 100, defaultGeo: true},
		{geo: "US", gatewayIP: "10.16.0.2", weight: 120},
		{geo: "IE", gatewayIP: "10.16.0.3", weight: 200},
	}
	nameservers := "ns1." + mcParent + ",ns2." + mcParent + ",ns3." + mcParent
	for i, c := range clusters {
		c.addr = net.JoinHostPort(ips[i], strconv.Itoa(port))
	}
	// links[{i, j}] carries cluster i's pulls of cluster j's export.
	links := map[[2]int]*mcLink{}
	for i, c := range clusters {
		env, err := testenv.Start(testenv.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Stop() })
		args := []string{"--dns-server-address", c.addr, "--dns-geoip-database", geoDB, "--dns-nameservers", nameservers,
			"--dns-tsig-key-file", keyFile, "--dns-transfer-keys", mcZone + "=" + mcKey,
			"--dns-export-keys", mcZone + "=" + mcKey, "--dns-peer-keys", mcZone + "=" + mcKey,
			"--dns-peer-pull-interval", mcPull.String(), "--grant", mcNS + "=" + mcZone,
			"--owner-lease-renewal", leaseEvery.String(), "--owner-lease-duration", leaseDuration.String()}
		// Each pull goes through a link the test can cut, for the partition.
		var peers []string
		for j, other := range clusters {
			if j != i {
				links[[2]int{i, j}] = newMCLink(t, other.addr)
				peers = append(peers, mcZone+"="+links[[2]int{i, j}].addr)
			}
		}
		args = append(args, "--dns-peers", strings.Join(peers, ","))
		c.proc = startControllerProcess(t, bin, fmt.Sprintf("gslb-cluster%d", i+1), env, coredns.ProviderName, args...)
		cl := c.proc.cluster
		cl.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: mcNS}})
		cl.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: mcNS, Name: "coredns"}, Type: v1alpha1.SecretTypeCoreDNS,
			StringData: map[string]string{v1alpha1.CoreDNSZonesKey: mcZone}})
		api, err := builder.Build(builder.Input{Hostname: mcAPI, Addresses: []gatewayapiv1.GatewayStatusAddress{{Value: c.gatewayIP}},
			GatewayName: "gw", GatewayNamespace: mcNS, ClusterID: cl.clusterID,
			LoadBalancing: &dnsv1.LoadBalancingSpec{Weight: c.weight, Geo: c.geo, DefaultGeo: c.defaultGeo}})
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range []*v1alpha1.DNSRecord{
			{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: mcNS},
				Spec: v1alpha1.DNSRecordSpec{OwnerID: fmt.Sprintf("api-owner-%d", i+1), RootHost: mcAPI, ProviderRef: &v1alpha1.ProviderRef{Name: "coredns"}, Endpoints: api}},
			{ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: mcNS},
				Spec: v1alpha1.DNSRecordSpec{OwnerID: fmt.Sprintf("shared-owner-%d", i+1), RootHost: mcShared, ProviderRef: &v1alpha1.ProviderRef{Name: "coredns"},
					Endpoints: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(mcShared, v1alpha1.RecordTypeA, 60, c.gatewayIP)}}},
		} {
			cl.create(t, rec)
		}
	}
	start := time.Now()
	resolver := startMCResolver(t, bindIP, port, ips)

	// Converged: the three servers transfer the same zone, with the same serial, holding every
	// cluster's records.
	var zone string
	eventually(t, 3*time.Minute, func() string {
		var serials []uint32
		var zones []string
		for _, c := range clusters {
			serial, text, err := mcTransfer(c.addr, secret)
			if err != nil {
				return fmt.Sprintf("%s: %v", c.addr, err)
			}
			serials, zones = append(serials, serial), append(zones, text)
		}
		for _, c := range clusters {
			if !strings.Contains(zones[0], c.gatewayIP) {
				return fmt.Sprintf("%s's zone does not hold %s yet", clusters[0].addr, c.gatewayIP)
			}
		}
		for i := range zones[1:] {
			if zones[i+1] != zones[0] || serials[i+1] != serials[0] {
				return fmt.Sprintf("%s serves serial %d, %s serial %d, and their zones differ: %v", clusters[0].addr, serials[0],
					clusters[i+1].addr, serials[i+1], zones[i+1] != zones[0])
			}
		}
		zone = zones[0]
		return ""
	})
	t.Logf("the three servers serve the same zone (%d records, one serial) %v after the records were created", strings.Count(zone, "\n"), time.Since(start).Round(100*time.Millisecond))

	// The same answer sets everywhere, per client subnet: IE clients get the two IE clusters, US
	// clients the US one, others (JP) the default geo, IE.
	ie, us := []string{"10.16.0.1", "10.16.0.3"}, []string{"10.16.0.2"}
	subnets := map[string][]string{"81.17.0.0/24": ie, "8.8.8.0/24": us, "133.0.0.0/24": ie}
	for subnet, want := range subnets {
		for _, c := range clusters {
			got := mcAnswerSet(t, c.addr, mcAPI, netip.MustParsePrefix(subnet), 60)
			if !slices.Equal(got, want) {
				t.Errorf("%s answers %s from %s with %v, want %v", c.addr, mcAPI, subnet, got, want)
			}
		}
	}
	for _, c := range clusters {
		if got := mcAnswerSet(t, c.addr, mcShared, netip.Prefix{}, 1); !slices.Equal(got, []string{"10.16.0.1", "10.16.0.2", "10.16.0.3"}) {
			t.Errorf("%s answers %s with %v", c.addr, mcShared, got)
		}
	}
	// dig, at each server and through BIND following the delegation (BIND sends no client subnet:
	// its clients are of unknown location and get the default geo).
	for _, c := range clusters {
		if out := mcDig(t, c.addr, mcAPI, "+subnet=8.8.8.0/24"); !strings.Contains(out, "10.16.0.2") {
			t.Errorf("dig at %s from a US subnet:\n%s", c.addr, out)
		}
	}
	for range 5 {
		out := mcDig(t, resolver, mcAPI)
		if !strings.Contains(out, "10.16.0.1") && !strings.Contains(out, "10.16.0.3") {
			t.Fatalf("dig through BIND (%s) does not answer an IE address:\n%s", resolver, out)
		}
	}
	if out := mcDig(t, resolver, mcShared); strings.Count(out, "\tA\t") != 3 {
		t.Errorf("dig %s through BIND:\n%s", mcShared, out)
	}

	// The weighted split among the IE clusters (100:200) holds at each server.
	for _, c := range clusters {
		counts := map[string]int{}
		const n = 900
		for range n {
			counts[mcResolve(t, c.addr, mcAPI, netip.MustParsePrefix("81.17.0.0/24"))]++
		}
		chi2 := 0.0
		for ip, share := range map[string]float64{"10.16.0.1": 1.0 / 3, "10.16.0.3": 2.0 / 3} {
			exp := share * n
			chi2 += math.Pow(float64(counts[ip])-exp, 2) / exp
		}
		t.Logf("%s: %d IE answers split %v, chi-square %.2f (1 degree of freedom)", c.addr, n, counts, chi2)
		// p = 0.001 for one degree of freedom.
		if chi2 > 10.83 || counts["10.16.0.1"]+counts["10.16.0.3"] != n {
			t.Errorf("%s: the weighted split %v does not hold (chi-square %.2f)", c.addr, counts, chi2)
		}
	}

	// SIGKILL cluster 3: its address leaves the shared record at the two survivors within its lease
	// (and the reader's tolerance) and one pull; the survivors' addresses never do.
	dead := clusters[2]
	dead.proc.kill(t)
	killed := time.Now()
	bound := leaseDuration + lease.DefaultTolerance + mcPull + 5*time.Second
	var gone time.Duration
	eventually(t, 3*bound, func() string {
		for _, c := range clusters[:2] {
			got := mcAnswerSet(t, c.addr, mcShared, netip.Prefix{}, 1)
			if !slices.Contains(got, "10.16.0.1") || !slices.Contains(got, "10.16.0.2") {
				t.Fatalf("a survivor's address left %s at %s: %v", mcShared, c.addr, got)
			}
			if slices.Contains(got, dead.gatewayIP) {
				return fmt.Sprintf("%s still answers %v", c.addr, got)
			}
		}
		gone = time.Since(killed)
		return ""
	})
	t.Logf("the killed cluster's address left both survivors' answers %v after SIGKILL (lease %v + tolerance %v, pull every %v)",
		gone.Round(100*time.Millisecond), leaseDuration, lease.DefaultTolerance, mcPull)
	if gone > bound {
		t.Errorf("the killed cluster's address left after %v, more than its lease (%v + %v) and one pull (%v)", gone, leaseDuration, lease.DefaultTolerance, mcPull)
	}
	// The loadbalanced host too: the dead cluster's weighted member leaves its geo's set (its leaf is
	// its own record key, withdrawn for the sake of the live cluster's member in the same set), so IE
	// clients are answered by the live IE cluster alone.
	ieClient := netip.MustParsePrefix("81.17.0.0/24")
	eventually(t, 3*bound, func() string {
		for _, c := range clusters[:2] {
			if got := mcAnswerSet(t, c.addr, mcAPI, ieClient, 60); !slices.Equal(got, []string{"10.16.0.1"}) {
				return fmt.Sprintf("IE clients of %s are answered %v, want the live IE cluster's 10.16.0.1 alone", c.addr, got)
			}
		}
		return ""
	})
	leafGone := time.Since(killed)
	t.Logf("the killed cluster's loadbalanced leaf left IE clients' answers at both survivors %v after SIGKILL", leafGone.Round(100*time.Millisecond))
	if leafGone > bound {
		t.Errorf("the killed cluster's leaf left after %v, more than its lease (%v + %v) and one pull (%v)", leafGone, leaseDuration, lease.DefaultTolerance, mcPull)
	}
	// The survivors still agree with each other, and say which peer is stale.
	eventually(t, 30*time.Second, func() string {
		return mcSameZone(clusters[:2], secret)
	})
	authoritative := coredns.RecordName(mcShared)
	for i, c := range clusters[:2] {
		// The survivor pulls the dead cluster through its link: the condition names that address.
		via := links[[2]int{i, 2}].addr
		eventually(t, 30*time.Second, func() string {
			rec := c.proc.cluster.record(t, mcNS, authoritative)
			if rec == nil {
				return "no authoritative record"
			}
			got := condition(rec, dnsserver.ConditionPeers)
			if !strings.HasPrefix(got, "False "+dnsserver.ReasonPeerStale) || !strings.Contains(got, via) {
				return fmt.Sprintf("%s: Peers is %s, want False %s naming %s", c.addr, got, dnsserver.ReasonPeerStale, via)
			}
			return ""
		})
	}

	// It comes back, and rejoins everyone's answers.
	dead.proc.restart(t)
	restarted := time.Now()
	eventually(t, 2*time.Minute, func() string {
		for _, c := range clusters {
			if got := mcAnswerSet(t, c.addr, mcShared, netip.Prefix{}, 1); len(got) != 3 {
				return fmt.Sprintf("%s answers %v", c.addr, got)
			}
		}
		return ""
	})
	t.Logf("the restarted cluster's address was back in all three servers' answers %v after the restart", time.Since(restarted).Round(100*time.Millisecond))
	for _, c := range clusters[:2] {
		eventually(t, 30*time.Second, func() string {
			rec := c.proc.cluster.record(t, mcNS, authoritative)
			if rec == nil {
				return "no authoritative record"
			}
			if got := condition(rec, dnsserver.ConditionPeers); !strings.HasPrefix(got, "True "+dnsserver.ReasonPeersLive) {
				return fmt.Sprintf("%s: Peers is %s after the restart", c.addr, got)
			}
			return ""
		})
	}

	// Acceptance 3: a partition between cluster 3 and clusters 1 and 2 (every pull across it
	// fails), then healed. The timeline of docs/multicluster-dns.md: until the lease runs out each
	// side serves the last merged zone; then each side serves what it sees (split brain: 1 and 2
	// serve their two addresses, 3 its own); once healed, all three serve the same zone again
	// within one pull. Each peer goes stale when its own lease has not changed for the lease time,
	// so cluster 3 may drop 1 and 2 at different reads: between them it serves its own address and
	// the peer not yet stale. An address that left a server's answers never comes back before
	// the heal.
	for _, l := range []*mcLink{links[[2]int{0, 2}], links[[2]int{1, 2}], links[[2]int{2, 0}], links[[2]int{2, 1}]} {
		l.cut()
	}
	cut := time.Now()
	all := []string{"10.16.0.1", "10.16.0.2", "10.16.0.3"}
	sides := []struct {
		servers []*mcCluster
		want    []string
	}{{clusters[:2], []string{"10.16.0.1", "10.16.0.2"}}, {clusters[2:], []string{"10.16.0.3"}}}
	last := map[string][]string{}
	for _, c := range clusters {
		last[c.addr] = all
	}
	var split time.Duration
	eventually(t, 3*bound, func() string {
		for _, side := range sides {
			for _, c := range side.servers {
				got := mcAnswerSet(t, c.addr, mcShared, netip.Prefix{}, 1)
				if !mcSubset(side.want, got) || !mcSubset(got, last[c.addr]) {
					t.Fatalf("during the partition %s answered %v: want at least its side's %v and no more than its last answer %v",
						c.addr, got, side.want, last[c.addr])
				}
				last[c.addr] = got
				if !slices.Equal(got, side.want) {
					if time.Since(cut) > bound {
						t.Fatalf("%s still serves %v after %v, not only its side's %v", c.addr, got, time.Since(cut), side.want)
					}
					return fmt.Sprintf("%s answers %v", c.addr, got)
				}
			}
		}
		split = time.Since(cut)
		return ""
	})
	t.Logf("partition: each side served what it sees %v after the cut (bound %v)", split.Round(100*time.Millisecond), bound)
	for _, l := range links {
		l.heal()
	}
	healed := time.Now()
	eventually(t, time.Minute, func() string {
		for _, c := range clusters {
			if got := mcAnswerSet(t, c.addr, mcShared, netip.Prefix{}, 1); !slices.Equal(got, all) {
				return fmt.Sprintf("%s answers %v", c.addr, got)
			}
		}
		return mcSameZone(clusters, secret)
	})
	converged := time.Since(healed)
	t.Logf("partition healed: all three servers served the same zone again %v later (pull every %v)", converged.Round(100*time.Millisecond), mcPull)
	if converged > mcPull+5*time.Second {
		t.Errorf("the servers converged %v after the heal, more than one pull (%v) and 5 s", converged, mcPull)
	}

	// Peers from the NS set: cluster 1 starts again with no peer listed, asking BIND (the resolver
	// following the delegation) for the zone's NS set. It finds clusters 2 and 3 there, and its own
	// server, which it leaves out; the three serve the same zone again.
	first := clusters[0]
	first.proc.kill(t)
	peersAt := slices.Index(first.proc.args, "--dns-peers")
	first.proc.args = append(slices.Delete(slices.Clone(first.proc.args), peersAt, peersAt+2),
		"--dns-peer-discovery", mcZone+"="+resolver, "--dns-peer-port", strconv.Itoa(port), "--dns-peer-discovery-interval", mcPull.String())
	first.proc.restart(t)
	restarted = time.Now()
	others := []string{clusters[1].addr, clusters[2].addr}
	eventually(t, time.Minute, func() string {
		samples, err := first.proc.cluster.scrape()
		if err != nil {
			return err.Error()
		}
		if samples[fmt.Sprintf(`dnspolicy_peer_discoveries_total{result="ok",zone=%q}`, mcZone)] == 0 {
			return "no NS set looked up yet"
		}
		for _, addr := range append(slices.Clone(others), first.addr) {
			_, pulled := samples[fmt.Sprintf(`dnspolicy_peer_records{peer=%q,zone=%q}`, addr, mcZone)]
			if own := addr == first.addr; pulled == own {
				return fmt.Sprintf("%s: records of %s reported %t, want %t", first.addr, addr, pulled, !own)
			}
		}
		if differ := mcSameZone(clusters, secret); differ != "" {
			return differ
		}
		if got := mcAnswerSet(t, first.addr, mcShared, netip.Prefix{}, 1); !slices.Equal(got, all) {
			return fmt.Sprintf("%s answers %v", first.addr, got)
		}
		rec := first.proc.cluster.record(t, mcNS, authoritative)
		if rec == nil {
			return "no authoritative record"
		}
		if got := condition(rec, dnsserver.ConditionPeers); !strings.HasPrefix(got, "True "+dnsserver.ReasonPeersLive) || !strings.Contains(got, "exports of 2 peers") {
			return fmt.Sprintf("%s: Peers is %s, want True %s with 2 peers", first.addr, got, dnsserver.ReasonPeersLive)
		}
		return ""
	})
	t.Logf("peers from the NS set: %s found %v through BIND and served the same zone as they do %v after its restart",
		first.addr, others, time.Since(restarted).Round(100*time.Millisecond))
}

// mcLink forwards TCP connections to a server; cut refuses new ones and ends open ones, heal
// forwards again.
type mcLink struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        map[net.Conn]bool
}

func newMCLink(t *testing.T, target string) *mcLink {
	t.Helper()
	l := &mcLink{addr: freeport.Addr(t), target: target, conns: map[net.Conn]bool{}}
	l.heal()
	t.Cleanup(l.cut)
	return l
}

func (l *mcLink) heal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ln != nil {
		return
	}
	ln, err := net.Listen("tcp", l.addr)
	if err != nil {
		panic(fmt.Sprintf("link %s: %v", l.addr, err))
	}
	l.ln = ln
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go l.forward(c)
		}
	}()
}

func (l *mcLink) forward(c net.Conn) {
	up, err := net.DialTimeout("tcp", l.target, 2*time.Second)
	if err != nil {
		_ = c.Close()
		return
	}
	l.mu.Lock()
	l.conns[c], l.conns[up] = true, true
	l.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
	_ = c.Close()
	_ = up.Close()
	l.mu.Lock()
	delete(l.conns, c)
	delete(l.conns, up)
	l.mu.Unlock()
}

func (l *mcLink) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ln != nil {
		_ = l.ln.Close()
		l.ln = nil
	}
	for c := range l.conns {
		_ = c.Close()
	}
}

// writeMCGeoDB writes a country database placing the test's client subnets.
func writeMCGeoDB(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "geo.mmdb")
	if err := geodb.Write(path, geodb.Network{CIDR: "81.17.0.0/16", Country: "IE", Continent: "EU"},
		geodb.Network{CIDR: "8.8.0.0/16", Country: "US", Continent: "NA"}, geodb.Network{CIDR: "133.0.0.0/8", Country: "JP", Continent: "AS"}); err != nil {
		t.Fatal(err)
	}
	return path
}

// startMCResolver runs BIND on ip:port, authoritative for the parent zone, which delegates the
// subdomain to the three servers (NS + glue), and recursive for loopback clients: it follows its
// own delegation to them. named sends its queries to the same port (BIND's "port" option), as the
// three servers all listen on it. ip must be an address of an interface (named binds no other).
func startMCResolver(t *testing.T, ip string, port int, servers []string) string {
	t.Helper()
	named := bind.Tool(t, "named")
	dir := t.TempDir()
	var zone strings.Builder
	fmt.Fprintf(&zone, "$TTL 60\n@ IN SOA ns.%[1]s. hostmaster.%[1]s. 1 60 60 600 60\n@ IN NS ns.%[1]s.\nns IN A %[2]s\n", mcParent, ip)
	// The delegation is what the helper prints for the parent (make delegation).
	var list []string
	for i, s := range servers {
		list = append(list, fmt.Sprintf("ns%d.%s=%s", i+1, mcParent, s))
	}
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	helper := exec.Command("go", "run", "./hack/delegation", "-zone", mcZone, "-parent", mcParent, "-ttl", "60", "-servers", strings.Join(list, ","))
	helper.Dir = root
	lines, err := helper.Output()
	if err != nil {
		t.Fatalf("hack/delegation: %v", err)
	}
	zone.Write(lines)
	if err := os.WriteFile(filepath.Join(dir, "parent.db"), []byte(zone.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`options {
	directory "%[1]s";
	pid-file "%[1]s/named.pid";
	session-keyfile "%[1]s/session.key";
	port %[2]d;
	listen-on port %[2]d { %[3]s; };
	listen-on-v6 { none; };
	query-source address %[3]s;
	recursion yes;
	allow-recursion { 127.0.0.0/8; };
	allow-query { 127.0.0.0/8; };
	dnssec-validation no;
	notify no;
	max-cache-ttl 1;
	max-ncache-ttl 1;
};
controls { };
zone "%[4]s" { type primary; file "%[1]s/parent.db"; };
`, dir, port, ip, mcParent)
	bind.Run(t, named, dir, conf)
	addr := net.JoinHostPort(ip, strconv.Itoa(port))
	eventually(t, 30*time.Second, func() string {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(mcParent), dns.TypeSOA)
		if r, err := dns.Exchange(m, addr); err != nil || r.Rcode != dns.RcodeSuccess {
			return fmt.Sprintf("BIND does not answer yet: %v", err)
		}
		return ""
	})
	return addr
}

// mcSameZone says how the zones the servers transfer differ in content (serials aside), "" when
// they do not.
func mcSameZone(servers []*mcCluster, secret string) string {
	_, z0, err0 := mcTransfer(servers[0].addr, secret)
	for _, c := range servers[1:] {
		if _, z, err := mcTransfer(c.addr, secret); err != nil || err0 != nil || z != z0 {
			return fmt.Sprintf("%s's zone differs from %s's (%v, %v)", c.addr, servers[0].addr, err, err0)
		}
	}
	return ""
}

// mcTransfer transfers the zone from a server (the static view a secondary gets) and returns its
// serial and its records without the SOA, sorted.
func mcTransfer(addr, secret string) (uint32, string, error) {
	m := new(dns.Msg)
	m.SetAxfr(dns.Fqdn(mcZone))
	m.SetTsig(mcKey+".", dns.HmacSHA256, 300, time.Now().Unix())
	tr := &dns.Transfer{TsigSecret: map[string]string{mcKey + ".": secret}, DialTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second}
	ch, err := tr.In(m, addr)
	if err != nil {
		return 0, "", err
	}
	var serial uint32
	var lines []string
	for env := range ch {
		if env.Error != nil {
			return 0, "", env.Error
		}
		for _, rr := range env.RR {
			if soa, ok := rr.(*dns.SOA); ok {
				serial = soa.Serial
				continue
			}
			lines = append(lines, rr.String())
		}
	}
	slices.Sort(lines)
	lines = slices.Compact(lines)
	return serial, strings.Join(lines, "\n") + "\n", nil
}

// mcResolve asks a server for name's A records from a client subnet (none: no ECS option), and
// returns the address at the end of the CNAME chain ("" for none; several joined by commas).
func mcResolve(t *testing.T, addr, name string, subnet netip.Prefix) string {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	if subnet.IsValid() {
		opt := &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}}
		opt.SetUDPSize(1232)
		opt.Option = append(opt.Option, &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1,
			SourceNetmask: uint8(subnet.Bits()), Address: subnet.Addr().AsSlice()})
		m.Extra = append(m.Extra, opt)
	}
	c := &dns.Client{Timeout: 2 * time.Second}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("asking %s for %s: %v", addr, name, err)
	}
	return resolver.AddressesOf(r)
}

// mcAnswerSet is every address in n answers for name from subnet, sorted.
func mcAnswerSet(t *testing.T, addr, name string, subnet netip.Prefix, n int) []string {
	t.Helper()
	seen := map[string]bool{}
	for range n {
		for _, ip := range strings.Split(mcResolve(t, addr, name, subnet), ",") {
			if ip != "" {
				seen[ip] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for ip := range seen {
		out = append(out, ip)
	}
	slices.Sort(out)
	return out
}

// mcSubset reports whether every address of a is in b (both sorted).
func mcSubset(a, b []string) bool {
	for _, ip := range a {
		if _, found := slices.BinarySearch(b, ip); !found {
			return false
		}
	}
	return true
}

// mcDig runs dig against a server.
func mcDig(t *testing.T, addr, name string, extra ...string) string {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	args := append([]string{"@" + host, "-p", port, name, "A", "+tries=2", "+time=3"}, extra...)
	out, err := exec.CommandContext(ctx, bind.Tool(t, "dig"), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("dig %v: %v\n%s", args, err, out)
	}
	return string(out)
}
