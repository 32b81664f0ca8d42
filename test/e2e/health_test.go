//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	dnsv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnsserver"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/route53"
	route53emu "github.com/dnspolicy/dnspolicy-controller/test/emulators/route53"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

const (
	healthZone = "health.e2e.example.com"
	healthHost = "app." + healthZone
	healthNS   = "health"
)

// Acceptance 3 of issue 11: two clusters, each a control plane with the controller as its own
// process, one gateway address each, publish one loadbalanced host into one Route 53 (emulator) zone.
// Each gateway's health endpoint is a real HTTP server on its loopback address. The zone is served
// by our DNS server, fed what the emulator holds, and asked with a DNS client: stopping one
// cluster's server takes its address out of the answers while the other's stays; starting it again
// brings it back; stopping both leaves both in (fail-open). The test logs how long each change took.
func TestUnhealthyClusterLeavesTheAnswers(t *testing.T) {
	ctrllog.SetLogger(logr.Discard())
	bin := buildController(t)
	keys := []string{"AKIAHEALTH1", "AKIAHEALTH2", "AKIAHEALTHREADER"}
	emu := route53emu.New(route53emu.Options{Zones: []string{healthZone}, AccessKeys: keys, RequestsPerSecond: -1})
	srv, url, err := emu.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })

	ips := []string{"127.0.0.11", "127.0.0.12"}
	port := freeport.PortOn(t, ips...)
	gateways := make([]*healthServer, len(ips))
	for i, ip := range ips {
		gateways[i] = &healthServer{addr: net.JoinHostPort(ip, strconv.Itoa(port))}
		gateways[i].start(t)
		t.Cleanup(gateways[i].stop)
	}

	var clusters [2]*conflictCluster
	for i := range clusters {
		env, err := testenv.Start(testenv.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Stop() })
		clusters[i] = startConflictCluster(t, bin, fmt.Sprintf("cluster%d", i+1), env)
		publishHealthChecked(t, clusters[i], keys[i], url, ips[i], port)
	}

	answers := serveZone(t, route53Reader(t, url, keys[2], healthZone), healthZone, healthHost)
	want := func(what string, timeout time.Duration, ips ...string) time.Duration {
		t.Helper()
		start := time.Now()
		eventually(t, timeout, func() string {
			if got := answers(t); !slices.Equal(got, ips) {
				return fmt.Sprintf("%s: answers %v, want %v; %s; %s", what, got, ips, healthOf(t, clusters[0]), healthOf(t, clusters[1]))
			}
			return ""
		})
		took := time.Since(start).Round(100 * time.Millisecond)
		t.Logf("%s: %v answered after %v", what, ips, took)
		return took
	}
	want("both healthy", 3*time.Minute, ips...)

	gateways[0].stop()
	want("cluster 1's server stopped", 3*time.Minute, ips[1])
	eventually(t, 30*time.Second, func() string { // the status is written after the zone
		if h := healthOf(t, clusters[0]); !strings.Contains(h, "Ready False HealthChecksFailed: Not publishing unhealthy records") || !strings.Contains(h, "withdrawn") {
			return "cluster 1 withdrawn: " + h
		}
		return ""
	})
	gateways[0].start(t)
	want("cluster 1's server started again", 3*time.Minute, ips...)

	gateways[0].stop()
	gateways[1].stop()
	eventually(t, 2*time.Minute, func() string {
		for _, cl := range clusters {
			if h := healthOf(t, cl); !strings.Contains(h, "False HealthChecksFailed: Not healthy addresses: [") {
				return h
			}
		}
		return ""
	})
	// Nobody passes: both stay, pass after pass (each owner re-checks at least every renewal period).
	deadline := time.Now().Add(45 * time.Second)
	for time.Now().Before(deadline) {
		if got := answers(t); !slices.Equal(got, ips) {
			t.Fatalf("both servers stopped: answers %v, want both %v (fail-open); %s; %s", got, ips, healthOf(t, clusters[0]), healthOf(t, clusters[1]))
		}
		time.Sleep(time.Second)
	}
	t.Logf("both servers stopped: both addresses answered for 45 s")
}

// healthServer is one gateway's health endpoint: 200 at /healthz for host (healthHost when empty),
// 503 while failing is set.
type healthServer struct {
	addr    string
	host    string
	failing atomic.Bool
	mu      sync.Mutex
	srv     *http.Server
}

func (h *healthServer) start(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	var l net.Listener
	eventually(t, 10*time.Second, func() string {
		var err error
		if l, err = net.Listen("tcp", h.addr); err != nil {
			return err.Error()
		}
		return ""
	})
	h.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The Host header carries the port when it is not the scheme's default, as curl sends it.
		want := h.host
		if want == "" {
			want = healthHost
		}
		if host, _, _ := strings.Cut(r.Host, ":"); r.URL.Path != "/healthz" || host != want {
			http.Error(w, "wrong path or host", http.StatusNotFound)
			return
		}
		if h.failing.Load() {
			http.Error(w, "failing", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = h.srv.Serve(l) }()
}

func (h *healthServer) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.srv != nil {
		_ = h.srv.Close()
		h.srv = nil
	}
}

// publishHealthChecked creates a cluster's provider Secret, its Gateway at ip and a loadbalanced
// DNSPolicy with an HTTP health check of port.
func publishHealthChecked(t *testing.T, cl *conflictCluster, key, url, ip string, port int) {
	t.Helper()
	cl.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: healthNS}})
	cl.create(t, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "provider", Namespace: healthNS},
		Type:       v1alpha1.SecretTypeAWS,
		StringData: map[string]string{
			v1alpha1.AWSAccessKeyIDKey: key, v1alpha1.AWSSecretAccessKeyKey: "secret-of-" + cl.name, v1alpha1.EndpointOverrideKey: url,
		},
	})
	publishGateway(t, cl, healthNS, healthHost, ip, func(p *dnsv1.DNSPolicy) {
		p.Spec.LoadBalancing = &dnsv1.LoadBalancingSpec{Weight: 120, Geo: "IE", DefaultGeo: true}
		p.Spec.HealthCheck = &v1alpha1.HealthCheckSpec{Port: port, Path: "/healthz", Protocol: v1alpha1.ProtocolHTTP,
			Interval: &metav1.Duration{Duration: time.Second}, FailureThreshold: 1}
	})
}

// healthOf describes the Ready and Healthy conditions of a cluster's record.
func healthOf(t *testing.T, cl *conflictCluster) string {
	var list v1alpha1.DNSRecordList
	if err := cl.c.List(context.Background(), &list, client.InNamespace(healthNS)); err != nil || len(list.Items) != 1 {
		return fmt.Sprintf("%s: records %d (%v)", cl.name, len(list.Items), err)
	}
	r := &list.Items[0]
	return fmt.Sprintf("%s: Ready %s; Healthy %s", cl.name, condition(r, v1alpha1.ConditionTypeReady), condition(r, v1alpha1.ConditionTypeHealthy))
}

// serveZone serves what the emulator's zone holds from our DNS server, refreshed every 200 ms, and
// returns a function that asks it for the host 40 times and returns the addresses answered, sorted.
func serveZone(t *testing.T, read func() ([]*v1alpha1.Endpoint, error), zone, host string) func(t *testing.T) []string {
	t.Helper()
	_, answers := serveZoneAt(t, read, zone, host)
	return answers
}

// serveZoneAt is serveZone, also returning the server's address (for a provider Secret's
// NAMESERVERS: the controllers read the zone's active failover groups from it).
func serveZoneAt(t *testing.T, read func() ([]*v1alpha1.Endpoint, error), zone, host string) (string, func(t *testing.T) []string) {
	t.Helper()
	server, err := dnsserver.New(dnsserver.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
		_ = server.Shutdown(context.Background())
	})
	mirror := func() error {
		eps, err := read()
		if err != nil {
			return err
		}
		_, err = server.SetZone(zone, dnsserver.ZoneData{Endpoints: eps})
		return err
	}
	if err := mirror(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_ = mirror()
			}
		}
	}()
	return server.Addr().String(), func(t *testing.T) []string {
		seen := map[string]bool{}
		c := &dns.Client{Timeout: 2 * time.Second}
		for range 40 {
			m := new(dns.Msg)
			m.SetQuestion(dns.Fqdn(host), dns.TypeA)
			r, _, err := c.Exchange(m, server.Addr().String())
			if err != nil {
				t.Fatalf("asking %s: %v", server.Addr(), err)
			}
			for _, rr := range r.Answer {
				if a, ok := rr.(*dns.A); ok {
					seen[a.A.String()] = true
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
}

// route53Reader reads a zone of the Route 53 emulator with its own access key.
func route53Reader(t *testing.T, url, key, zone string) func() ([]*v1alpha1.Endpoint, error) {
	t.Helper()
	ctx := context.Background()
	readerBackend, err := route53.New(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "reader", Name: "reader"},
		Type:       v1alpha1.SecretTypeAWS,
		Data: map[string][]byte{v1alpha1.AWSAccessKeyIDKey: []byte(key), v1alpha1.AWSSecretAccessKeyKey: []byte("reader"),
			v1alpha1.EndpointOverrideKey: []byte(url)},
	}, providers.Env{Namespace: "reader"})
	if err != nil {
		t.Fatal(err)
	}
	reader := readerBackend.Zones
	return func() ([]*v1alpha1.Endpoint, error) {
		zones, err := reader.Zones(ctx)
		if err != nil {
			return nil, err
		}
		for _, z := range zones {
			if z.DNSName == zone {
				view, err := reader.Records(ctx, z)
				return view.Endpoints, err
			}
		}
		return nil, errors.New("zone not listed")
	}
}
