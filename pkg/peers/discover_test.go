package peers

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
)

// fakeParent is a parent zone's server that delegates testZone with a referral: the NS set in the
// authority section, glue for some names in the additional one, and A/AAAA answers for others.
type fakeParent struct {
	mu sync.Mutex
	// ns are the NS set's names, glue their glue, hosts the addresses it answers for names asked.
	ns          []string
	glue, hosts map[string][]string
	rcode       int
	// truncate answers over UDP truncated, so the client asks again over TCP.
	truncate bool
	asked    map[string]int // by network
	addr     string
}

func startFakeParent(t *testing.T) *fakeParent {
	t.Helper()
	f := &fakeParent{addr: freeport.Addr(t), asked: map[string]int{}}
	for _, network := range []string{"udp", "tcp"} {
		srv := &dns.Server{Addr: f.addr, Net: network, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
			f.answer(w, r, network)
		})}
		started := make(chan error, 1)
		srv.NotifyStartedFunc = func() { started <- nil }
		go func() { started <- srv.ListenAndServe() }()
		if err := <-started; err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Shutdown() })
	}
	return f
}

func (f *fakeParent) set(ns []string, glue, hosts map[string][]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ns, f.glue, f.hosts = ns, glue, hosts
}

func (f *fakeParent) answer(w dns.ResponseWriter, r *dns.Msg, network string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked[network]++
	m := new(dns.Msg)
	m.SetReply(r)
	q := r.Question[0]
	if f.rcode != dns.RcodeSuccess {
		m.Rcode = f.rcode
		_ = w.WriteMsg(m)
		return
	}
	if f.truncate && network == "udp" {
		m.Truncated = true
		_ = w.WriteMsg(m)
		return
	}
	rrs := func(name string, ips []string) []dns.RR {
		var out []dns.RR
		for _, ip := range ips {
			if strings.Contains(ip, ":") && q.Qtype != dns.TypeA {
				out = append(out, &dns.AAAA{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeAAAA, Class: dns.ClassINET, Ttl: 60}, AAAA: net.ParseIP(ip)})
			} else if !strings.Contains(ip, ":") && q.Qtype != dns.TypeAAAA {
				out = append(out, &dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.ParseIP(ip)})
			}
		}
		return out
	}
	switch {
	case q.Qtype == dns.TypeNS && strings.EqualFold(q.Name, dns.Fqdn(testZone)):
		for _, name := range f.ns {
			m.Ns = append(m.Ns, &dns.NS{Hdr: dns.RR_Header{Name: dns.Fqdn(testZone), Rrtype: dns.TypeNS, Class: dns.ClassINET, Ttl: 60}, Ns: name})
			m.Extra = append(m.Extra, rrs(name, f.glue[name])...)
		}
	case q.Qtype == dns.TypeA || q.Qtype == dns.TypeAAAA:
		m.Answer = rrs(q.Name, f.hosts[strings.ToLower(q.Name)])
	}
	_ = w.WriteMsg(m)
}

// Lookup finds every address of every server of the NS set: from glue, from the parent's answer,
// never from a name that does not resolve (which is named); over TCP when the answer is truncated;
// from the next server when one does not answer; and fails, changing nothing, on an NXDOMAIN or an
// NS set none of whose names resolves.
func TestLookup(t *testing.T) {
	f := startFakeParent(t)
	f.set([]string{"ns1.parent.example.", "NS2.parent.example.", "ns3.nowhere.invalid."},
		map[string][]string{"ns1.parent.example.": {"127.0.0.2", "::1"}},
		map[string][]string{"ns2.parent.example.": {"127.0.0.3"}})
	down := freeport.Addr(t) // nothing listens there
	d := Discovery{Zone: testZone, Servers: []string{down, f.addr}, Port: 5300}
	want := []string{"127.0.0.2:5300", "127.0.0.3:5300", "[::1]:5300"}
	addrs, skipped, err := Lookup(context.Background(), d, 2*time.Second)
	if err != nil || !slices.Equal(addrs, want) || !slices.Equal(skipped, []string{"ns3.nowhere.invalid"}) {
		t.Fatalf("Lookup: %v, skipped %v, %v; want %v, skipped ns3.nowhere.invalid", addrs, skipped, err, want)
	}

	f.mu.Lock()
	f.truncate, f.asked = true, map[string]int{}
	f.mu.Unlock()
	addrs, _, err = Lookup(context.Background(), Discovery{Zone: testZone, Servers: []string{f.addr}, Port: 5300}, 2*time.Second)
	if err != nil || !slices.Equal(addrs, want) || f.asked["tcp"] == 0 {
		t.Errorf("truncated: %v, %v, asked %v; want %v over TCP", addrs, err, f.asked, want)
	}

	f.set([]string{"ns3.nowhere.invalid."}, nil, nil)
	if addrs, _, err := Lookup(context.Background(), d, 2*time.Second); err == nil {
		t.Errorf("an NS set of names that do not resolve: %v, want an error", addrs)
	}
	f.mu.Lock()
	f.rcode = dns.RcodeNameError
	f.mu.Unlock()
	if addrs, _, err := Lookup(context.Background(), d, 2*time.Second); err == nil || !strings.Contains(err.Error(), "NXDOMAIN") {
		t.Errorf("NXDOMAIN: %v, %v; want an error naming it", addrs, err)
	}
}

// A pool discovering its peers in the NS set: this cluster's own server (behind an address it
// does not listen on, so recognised by its export) is no peer and not pulled again; the two others
// are pulled and merged; a server leaving the NS set leaves the merge at once; a lookup that fails
// keeps the peers; a server listed as Own is never pulled.
func TestPoolDiscoversPeers(t *testing.T) {
	ips := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}
	port := freeport.PortOn(t, ips...)
	addr := func(i int) string { return net.JoinHostPort(ips[i], strconv.Itoa(port)) }
	renewed := time.Now()
	for i := range three {
		serveOn(t, addr(i), three[i].exportAt(t, renewed))
	}
	f := startFakeParent(t)
	names := []string{"ns1.parent.example.", "ns2.parent.example.", "ns3.parent.example."}
	glue := map[string][]string{names[0]: {ips[0]}, names[1]: {ips[1]}, names[2]: {ips[2]}}
	f.set(names, glue, nil)

	key := peerKey
	changed := make(chan string, 16)
	p := New(Options{Discover: []Discovery{{Zone: testZone, Servers: []string{f.addr}, Port: port, Key: &key}},
		DiscoverInterval: time.Hour, Interval: 200 * time.Millisecond, Timeout: 2 * time.Second,
		Changed: func(zone string) { changed <- zone }, Log: logr.Discard()})
	if !p.HasPeers(testZone) {
		t.Fatal("a zone with discovery has no peers")
	}
	local := three[0].exportAt(t, renewed)
	if _, err := p.Merge(testZone, *local); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	p.DiscoverOnce(ctx, &wg, Discovery{Zone: testZone, Servers: []string{f.addr}, Port: port, Key: &key})

	owners := func() []string {
		m, err := p.Merge(testZone, *local)
		if err != nil {
			t.Fatal(err)
		}
		return m.Owners
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !ok(); {
			if time.Now().After(deadline) {
				t.Fatalf("%s: status %+v, owners %v", what, p.Status(testZone), owners())
			}
			select {
			case <-changed:
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	all := []string{three[0].owner, three[1].owner, three[2].owner}
	slices.Sort(all)
	waitFor("the two peers merged, this cluster's server no peer", func() bool {
		st := p.Status(testZone)
		return slices.Equal(owners(), all) && len(st) == 2 && st[0].Peer.Addr == addr(1) && st[1].Peer.Addr == addr(2) &&
			st[0].Discovered && st[0].Error == "" && st[1].Error == "" && !st[0].LastPull.IsZero() && !st[1].LastPull.IsZero()
	})
	if n := pulls(t, p, addr(0), ReasonOwners); n != 0 {
		t.Errorf("this cluster's own server counted as a peer claiming our owners %v times", n)
	}
	p.mu.Lock()
	self := p.state(Peer{Zone: testZone, Addr: addr(0)})
	p.mu.Unlock()
	if self == nil || !self.self {
		t.Fatalf("this cluster's server is not known as its own: %+v", self)
	}

	// A lookup that fails keeps the peers.
	f.mu.Lock()
	f.rcode = dns.RcodeServerFailure
	f.mu.Unlock()
	p.DiscoverOnce(ctx, &wg, Discovery{Zone: testZone, Servers: []string{f.addr}, Port: port, Key: &key})
	if st := p.Status(testZone); len(st) != 2 || !slices.Equal(owners(), all) {
		t.Errorf("a failed lookup changed the peers: %+v", st)
	}

	// Cluster three's server leaves the NS set: its owner leaves the merge.
	f.mu.Lock()
	f.rcode = dns.RcodeSuccess
	f.mu.Unlock()
	f.set(names[:2], glue, nil)
	p.DiscoverOnce(ctx, &wg, Discovery{Zone: testZone, Servers: []string{f.addr}, Port: port, Key: &key})
	want := []string{three[0].owner, three[1].owner}
	slices.Sort(want)
	if st, got := p.Status(testZone), owners(); len(st) != 1 || st[0].Peer.Addr != addr(1) || !slices.Equal(got, want) {
		t.Errorf("after cluster three left the NS set: status %+v, owners %v; want only %s, owners %v", st, got, addr(1), want)
	}

	// Own addresses are never pulled.
	q := New(Options{Own: []string{addr(0)}, Interval: time.Hour, Timeout: 2 * time.Second, Log: logr.Discard()})
	q.DiscoverOnce(ctx, &wg, Discovery{Zone: testZone, Servers: []string{f.addr}, Port: port, Key: &key})
	if st := q.Status(testZone); len(st) != 1 || st[0].Peer.Addr != addr(1) {
		t.Errorf("with its own address listed: %+v, want only %s", st, addr(1))
	}
	for _, result := range []string{"ok", ReasonOwners, ReasonUnreachable} {
		if n := pulls(t, q, addr(0), result); n != 0 {
			t.Errorf("its own address was pulled: %s %v", result, n)
		}
	}
	if got := discoveries(t, p); got["ok"] != 2 || got["failed"] != 1 {
		t.Errorf("dnspolicy_peer_discoveries_total %v, want ok 2, failed 1", got)
	}
}

// discoveries reads dnspolicy_peer_discoveries_total for testZone by result.
func discoveries(t *testing.T, p *Pool) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, result := range []string{"ok", "failed"} {
		out[result] = counter(t, p, "dnspolicy_peer_discoveries_total", map[string]string{"zone": testZone, "result": result})
	}
	return out
}
