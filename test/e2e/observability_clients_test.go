//go:build e2e

package e2e

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// The troublesome clients and tenants of the scenario.

// flood sends each embedded server, until stopped, 30 UDP queries a second for the edge host
// (three times the rate limit of one client prefix) and 20 TCP queries a second for a name in no
// zone of theirs (REFUSED).
func (f *obsFleet) flood(t *testing.T) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, addr := range f.dns {
		conn, err := net.Dial("udp", addr)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer conn.Close()
			tcp := &dns.Client{Net: "tcp", Timeout: time.Second}
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for n := uint16(0); ; n++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				for range 3 {
					m := new(dns.Msg)
					m.SetQuestion(dns.Fqdn(obsEdgeHost), dns.TypeA)
					if b, err := m.Pack(); err == nil {
						_, _ = conn.Write(b) // answers, slipped or dropped, are not read
					}
				}
				for range 2 {
					m := new(dns.Msg)
					m.SetQuestion("www.example.org.", dns.TypeA)
					_, _, _ = tcp.Exchange(m, addr)
				}
			}
		})
	}
	return func() { cancel(); wg.Wait() }
}

// tcpBurst opens n TCP connections to addr at once from one address and holds them a second:
// those beyond the per-source limit are closed at accept.
func tcpBurst(t *testing.T, addr string, n int) {
	t.Helper()
	var conns []net.Conn
	for range n {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			conns = append(conns, c)
		}
	}
	time.Sleep(time.Second) // the connections are held open: the server counts them while they last
	for _, c := range conns {
		_ = c.Close()
	}
}

// badTransfer asks addr for a zone transfer signed with a key the server does not hold.
func badTransfer(t *testing.T, addr string) {
	t.Helper()
	m := new(dns.Msg)
	m.SetAxfr(dns.Fqdn(obsEdgeZone))
	m.SetTsig(obsKey+".", dns.HmacSHA256, 300, time.Now().Unix())
	tr := &dns.Transfer{TsigSecret: map[string]string{obsKey + ".": obsSecret(t)}, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second}
	ch, err := tr.In(m, addr)
	if err != nil {
		return // refused at once: what is wanted
	}
	for env := range ch {
		if env.Error == nil {
			t.Fatalf("%s transferred %s to a key it does not hold", addr, obsEdgeZone)
		}
	}
}

// refusedSecret gives a tenant of cluster 1 a provider Secret whose access key Route 53 refuses,
// and a record naming it.
func (f *obsFleet) refusedSecret(t *testing.T) {
	t.Helper()
	const ns = "obs-refused"
	cl := f.procs[0].cluster
	cl.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	cl.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "provider", Namespace: ns}, Type: v1alpha1.SecretTypeAWS,
		StringData: map[string]string{v1alpha1.AWSAccessKeyIDKey: "AKIAREVOKED", v1alpha1.AWSSecretAccessKeyKey: "revoked",
			v1alpha1.EndpointOverrideKey: f.emuURL}})
	host := "refused." + obsCloudZone
	cl.create(t, &v1alpha1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Name: "refused", Namespace: ns},
		Spec: v1alpha1.DNSRecordSpec{OwnerID: "refused-owner", RootHost: host, ProviderRef: &v1alpha1.ProviderRef{Name: "provider"},
			Endpoints: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(host, v1alpha1.RecordTypeA, 60, "10.26.9.9")}}})
}

// conflict makes both clusters want one name with different TTLs: cluster 2 publishes first and
// wins, cluster 1 (which lives on) loses its TTL on every pass.
func (f *obsFleet) conflict(t *testing.T) {
	t.Helper()
	host := "conflict." + obsCloudZone
	record := func(i int, ttl v1alpha1.TTL, ip string) *v1alpha1.DNSRecord {
		return &v1alpha1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Name: "conflict", Namespace: obsCloudNS},
			Spec: v1alpha1.DNSRecordSpec{OwnerID: "conflict-" + obsKeys[i][4:], RootHost: host, ProviderRef: &v1alpha1.ProviderRef{Name: "provider"},
				Endpoints: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(host, v1alpha1.RecordTypeA, ttl, ip)}}}
	}
	winner := f.procs[1].cluster
	winner.create(t, record(1, 60, "10.26.0.2"))
	eventually(t, time.Minute, func() string {
		rec := winner.record(t, obsCloudNS, "conflict")
		if rec == nil || !strings.HasPrefix(condition(rec, v1alpha1.ConditionTypeReady), "True") {
			return "cluster 2's conflicting record is not Ready yet"
		}
		return ""
	})
	f.procs[0].cluster.create(t, record(0, 30, "10.26.0.1"))
}

// flap turns a gateway's health endpoint failing and healthy again every 1.5 s (its probe checks
// every second) until stopped.
func (f *obsFleet) flap(g *healthServer) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(1500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				g.failing.Store(false)
				return
			case <-tick.C:
				g.failing.Store(!g.failing.Load())
			}
		}
	}()
	return func() { cancel(); <-done }
}

// obsAsk sends one query over UDP, from a client subnet when one is given.
func obsAsk(addr, name string, qtype uint16, subnet netip.Prefix) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	if subnet.IsValid() {
		opt := &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}}
		opt.SetUDPSize(1232)
		opt.Option = append(opt.Option, &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1,
			SourceNetmask: uint8(subnet.Bits()), Address: subnet.Addr().AsSlice()})
		m.Extra = append(m.Extra, opt)
	}
	c := &dns.Client{Timeout: time.Second}
	r, _, err := c.Exchange(m, addr)
	return r, err
}
