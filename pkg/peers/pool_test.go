package peers

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnsserver"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
)

var (
	peerKey  = dnsserver.TSIGKey{Name: "peer-key.", Algorithm: "hmac-sha256", Secret: "cGVlci1rZXktb2YtdGhpcnR5LXR3by1ieXRlcy4uLi4="}
	wrongKey = dnsserver.TSIGKey{Name: "peer-key.", Algorithm: "hmac-sha256", Secret: "d3Jvbmcta2V5LW9mLXRoaXJ0eS10d28tYnl0ZXMuLi4="}
)

// serve starts an embedded server on loopback exporting ex for testZone to peer-key.
func serve(t *testing.T, ex *dnsserver.Export) *dnsserver.Server {
	t.Helper()
	return serveOn(t, freeport.Addr(t), ex)
}

// serveOn is serve on addr.
func serveOn(t *testing.T, addr string, ex *dnsserver.Export) *dnsserver.Server {
	t.Helper()
	s, err := dnsserver.New(dnsserver.Options{Addr: addr, TSIGKeys: []dnsserver.TSIGKey{peerKey},
		Exports:      map[string]dnsserver.ExportAccess{testZone: {Keys: []string{peerKey.Name}}},
		TransferKeys: map[string][]string{dnsserver.ExportName(testZone): {peerKey.Name}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	if ex != nil {
		setExport(t, s, ex)
	}
	return s
}

func setExport(t *testing.T, s *dnsserver.Server, ex *dnsserver.Export) {
	t.Helper()
	if _, err := s.SetZone(testZone, dnsserver.ZoneData{Endpoints: ex.Endpoints, Export: ex}); err != nil {
		t.Fatal(err)
	}
}

// exportAt is cluster c's export of a loadbalanced and a shared simple host, its lease renewed at
// renewed.
func (c cluster) exportAt(t *testing.T, renewed time.Time) *dnsserver.Export {
	t.Helper()
	ct := c.exportOf(t, slices.Concat(c.desired(t, "api.gslb.example.com"), c.simple(t, "shared.gslb.example.com")))
	eps := append(ct.Endpoints, lease.Renew(c.id, renewed, 5*time.Second, 20*time.Second).Record(testZone))
	return &dnsserver.Export{Cluster: ct.Cluster, Changed: ct.Changed, Endpoints: eps}
}

// fakeClock is a clock tests move.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func statusOf(t *testing.T, p *Pool, addr string) PeerStatus {
	t.Helper()
	for _, s := range p.Status(testZone) {
		if s.Peer.Addr == addr {
			return s
		}
	}
	t.Fatalf("no status for peer %s", addr)
	return PeerStatus{}
}

// pulls reads dnspolicy_peer_pulls_total for a peer and result.
func pulls(t *testing.T, p *Pool, addr, result string) float64 {
	t.Helper()
	return counter(t, p, "dnspolicy_peer_pulls_total", map[string]string{"peer": addr, "result": result})
}

// counter reads the pool's counter name with the labels given.
func counter(t *testing.T, p *Pool, name string, labels map[string]string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(p.Collector()); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.Metric {
			for k, v := range labels {
				if label(m, k) != v {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestPoolRefusesBadPeers: of five peers, two export honestly; one answers with garbage, one is
// pulled with a key it does not share, one exports a zone claiming this cluster's owner, one
// claims another peer's (its export says it changed later, so the honest one claimed first); one
// does not resolve and one never answers. Each bad one is refused with its reason and counted;
// the honest ones are merged, on time.
func TestPoolRefusesBadPeers(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	renewed := clock.Now()
	two, three3 := serve(t, three[1].exportAt(t, renewed)), serve(t, three[2].exportAt(t, renewed))

	// Garbage: a server whose "export" is an ordinary zone (NS, A records), transferable with our key.
	garbage, err := dnsserver.New(dnsserver.Options{Addr: freeport.Addr(t), TSIGKeys: []dnsserver.TSIGKey{peerKey},
		TransferKeys: map[string][]string{dnsserver.ExportName(testZone): {peerKey.Name}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := garbage.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = garbage.Shutdown(context.Background()) }()
	if _, err := garbage.SetZone(dnsserver.ExportName(testZone), dnsserver.ZoneData{Endpoints: []*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint("x."+strings.TrimSuffix(dnsserver.ExportName(testZone), "."), "A", 60, "192.0.2.1")}}); err != nil {
		t.Fatal(err)
	}
	// A thief of this cluster's owner, and one of peer two's owner (another cluster ID each).
	thiefOfOurs := three[0]
	thiefOfOurs.id, thiefOfOurs.address = "44444444-dddd-4000-8000-000000000004", "10.0.4.1"
	stealsOurs := serve(t, thiefOfOurs.exportAt(t, renewed))
	thiefOfTwo := three[1]
	thiefOfTwo.id, thiefOfTwo.address = "55555555-eeee-4000-8000-000000000005", "10.0.5.1"
	stealing := thiefOfTwo.exportAt(t, renewed)
	stealing.Changed = stealing.Changed.Add(time.Hour)
	stealsTwos := serve(t, stealing)
	// A listener that accepts and never answers.
	silent, err := net.Listen("tcp", freeport.Addr(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = silent.Close() }()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer func() { _ = c.Close() }()
		}
	}()

	// A listener that accepts and hangs up at once, as a server at its connection limit does.
	hangsUp, err := net.Listen("tcp", freeport.Addr(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hangsUp.Close() }()
	go func() {
		for {
			c, err := hangsUp.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()

	good := []string{two.Addr().String(), three3.Addr().String()}
	key := peerKey
	wrong := wrongKey
	peers := []Peer{
		{Zone: testZone, Addr: good[0], Key: &key},
		{Zone: testZone, Addr: good[1], Key: &key},
		{Zone: testZone, Addr: garbage.Addr().String(), Key: &key},
		{Zone: testZone, Addr: stealsOurs.Addr().String(), Key: &key},
		{Zone: testZone, Addr: stealsTwos.Addr().String(), Key: &key},
		{Zone: testZone, Addr: "peer.does-not-exist.invalid:53", Key: &key},
		{Zone: testZone, Addr: silent.Addr().String(), Key: &key},
		// Peer two again (by another spelling of its address), pulled with a key whose secret it
		// does not share.
		{Zone: testZone, Addr: "localhost:" + strings.Split(good[0], ":")[1], Key: &wrong},
		{Zone: testZone, Addr: hangsUp.Addr().String(), Key: &key},
	}

	var mu sync.Mutex
	changedAt := map[string]time.Duration{}
	start := time.Now()
	const timeout = 3 * time.Second
	p := New(Options{Peers: peers, Interval: time.Hour, Timeout: timeout, Now: clock.Now})
	local := three[0].exportAt(t, renewed)
	if _, err := p.Merge(testZone, *local); err != nil {
		t.Fatal(err)
	}
	// The peers are pulled concurrently, as Run does; the honest ones are in before the silent
	// one's timeout.
	var wg sync.WaitGroup
	for _, peer := range peers {
		wg.Go(func() {
			p.PullOnce(context.Background(), peer)
			mu.Lock()
			changedAt[peer.Addr] = time.Since(start)
			mu.Unlock()
		})
	}
	wg.Wait()
	m, err := p.Merge(testZone, *local)
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range good {
		if d := changedAt[addr]; d >= timeout {
			t.Errorf("honest peer %s was taken in after %v, not before the silent peer's %v timeout", addr, d, timeout)
		}
	}
	// Of peer two and the thief of its owner, pulled in any order before the first merge, the one
	// whose export changed first keeps the owner; the thief is refused at the merge.
	for _, c := range []struct{ addr, reason string }{
		{garbage.Addr().String(), ReasonGarbage},
		{stealsOurs.Addr().String(), ReasonOwners},
		{stealsTwos.Addr().String(), ReasonClaimed},
		{"peer.does-not-exist.invalid:53", ReasonUnreachable},
		{silent.Addr().String(), ReasonUnreachable},
		// A connection closed before any answer is no refusal: the peer's server is busy or going.
		{hangsUp.Addr().String(), ReasonUnreachable},
		{peers[7].Addr, ReasonTSIG},
	} {
		st := statusOf(t, p, c.addr)
		if !strings.HasPrefix(st.Error, c.reason+":") {
			t.Errorf("peer %s: status %+v, want refused for %s", c.addr, st, c.reason)
		}
		if pulls(t, p, c.addr, c.reason) != 1 {
			t.Errorf("peer %s: %v pulls counted as %s, want 1", c.addr, pulls(t, p, c.addr, c.reason), c.reason)
		}
		// The thief's export was taken at its pull and refused at the merge.
		if c.addr != stealsTwos.Addr().String() && !st.LastPull.IsZero() {
			t.Errorf("peer %s: an export was accepted: %+v", c.addr, st)
		}
	}
	if st := statusOf(t, p, stealsTwos.Addr().String()); !strings.Contains(st.Error, "claims owner owner-two, which peer "+good[0]+" claimed first") {
		t.Errorf("the thief's status %q does not name the owner and the peer that claimed it first", st.Error)
	}
	for _, addr := range good {
		if st := statusOf(t, p, addr); st.Error != "" || st.LastPull.IsZero() || st.Records == 0 || st.Serial == 0 || st.Stale {
			t.Errorf("honest peer %s: %+v", addr, st)
		}
	}
	got := strings.Join(records(m.Endpoints), "\n")
	if !strings.Contains(got, "shared.gslb.example.com A \"\" ttl=60 [10.0.1.1 10.0.2.1 10.0.3.1]") || strings.Contains(got, "10.0.4.1") || strings.Contains(got, "10.0.5.1") {
		t.Errorf("merged zone:\n%s\nwant this cluster's and peers two's and three's addresses only", got)
	}
	// Pulled again, the thief is refused at its pull, and peer two stays.
	p.PullOnce(context.Background(), peers[4])
	if m, err = p.Merge(testZone, *local); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(records(m.Endpoints), "\n"); !strings.Contains(got, "[10.0.1.1 10.0.2.1 10.0.3.1]") || pulls(t, p, peers[4].Addr, ReasonClaimed) != 2 {
		t.Errorf("after the thief's second pull (%v refusals), the merged zone is:\n%s", pulls(t, p, peers[4].Addr, ReasonClaimed), got)
	}
	// The thief stops claiming peer two's owner: both are merged again at their next pulls.
	honest := thiefOfTwo
	honest.owner = "owner-five"
	setExport(t, stealsTwos, honest.exportAt(t, renewed))
	for _, peer := range []Peer{peers[4], peers[0]} {
		p.PullOnce(context.Background(), peer)
	}
	if m, err = p.Merge(testZone, *local); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(records(m.Endpoints), "\n"); !strings.Contains(got, "[10.0.1.1 10.0.2.1 10.0.3.1 10.0.5.1]") {
		t.Errorf("after the conflict ended, the merged zone is:\n%s", got)
	}
}

// A peer sending more records than the limit is refused; an unchanged export is not sent again.
func TestPull(t *testing.T) {
	key := peerKey
	s := serve(t, three[1].exportAt(t, time.Now()))
	peer := Peer{Zone: testZone, Addr: s.Addr().String(), Key: &key}
	if _, err := Pull(context.Background(), peer, 5*time.Second, 10, 0, 0); ReasonOf(err) != ReasonGarbage || !strings.Contains(err.Error(), "more than 10 records") {
		t.Errorf("pulling an export over a limit of 10 records: %v", err)
	}
	pulled, err := Pull(context.Background(), peer, 5*time.Second, 0, 0, 0)
	if err != nil || pulled.Records < 10 || pulled.Unchanged || pulled.Bytes < 1000 {
		t.Fatalf("pulling within the default limit: %+v, %v", pulled, err)
	}
	// A bound of bytes cuts the transfer off at the first byte over; an export of exactly that
	// many bytes is pulled.
	if _, err := Pull(context.Background(), peer, 5*time.Second, 0, pulled.Bytes-1, 0); ReasonOf(err) != ReasonGarbage || !strings.Contains(err.Error(), fmt.Sprintf("larger than %d bytes", pulled.Bytes-1)) {
		t.Errorf("pulling an export of %d bytes over a limit of one byte less: %v", pulled.Bytes, err)
	}
	if exact, err := Pull(context.Background(), peer, 5*time.Second, 0, pulled.Bytes, 0); err != nil || exact.Records != pulled.Records {
		t.Errorf("pulling an export of %d bytes with that limit: %v", pulled.Bytes, err)
	}
	// Asked by IXFR with the serial it holds, the peer sends its SOA alone; once the export
	// changed, all of it.
	again, err := Pull(context.Background(), peer, 5*time.Second, 0, 0, pulled.Serial)
	if err != nil || !again.Unchanged || again.Serial != pulled.Serial {
		t.Errorf("pulling again an unchanged export: %+v, %v", again, err)
	}
	// Asked about a serial newer than its own (it restarted with its clock behind), it is pulled whole.
	older, err := Pull(context.Background(), peer, 5*time.Second, 0, 0, pulled.Serial+100)
	if err != nil || older.Unchanged || older.Serial != pulled.Serial || older.Records != pulled.Records {
		t.Errorf("pulling with a serial ahead of the peer's: %+v, %v", older, err)
	}
	setExport(t, s, three[1].exportAt(t, time.Now().Add(time.Minute)))
	changed, err := Pull(context.Background(), peer, 5*time.Second, 0, 0, pulled.Serial)
	if err != nil || changed.Unchanged || changed.Records != pulled.Records || changed.Serial == pulled.Serial {
		t.Errorf("pulling a changed export by IXFR: %+v, %v", changed, err)
	}
}

// TestPoolLiveness: a peer whose export stops being pulled, or whose lease stops changing, for its
// lease duration is stale, and its address leaves the shared record; when it answers again with a
// renewed lease it is merged again.
func TestPoolLiveness(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	key := peerKey
	two := serve(t, three[1].exportAt(t, clock.Now()))
	peer := Peer{Zone: testZone, Addr: two.Addr().String(), Key: &key}
	changed := 0
	p := New(Options{Peers: []Peer{peer}, Timeout: 2 * time.Second, Now: clock.Now, Tolerance: time.Second,
		Changed: func(string) { changed++ }})
	local := three[0].exportAt(t, clock.Now())
	shared := func() string {
		t.Helper()
		m, err := p.Merge(testZone, *local)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range m.Endpoints {
			if e.DNSName == "shared.gslb.example.com" && e.RecordType == "A" {
				return strings.Join(e.Targets, ",")
			}
		}
		return ""
	}
	p.PullOnce(context.Background(), peer)
	if got := shared(); got != "10.0.1.1,10.0.2.1" {
		t.Fatalf("shared record %s, want both clusters'", got)
	}
	// Merged again from exports that say they did not change, the zone is the last merge's.
	first, _ := p.Merge(testZone, *local)
	if again, _ := p.Merge(testZone, *local); again != first {
		t.Error("unchanged exports were merged again")
	}
	// The peer stops exporting: pulls fail. Within its lease (20 s + 1 s) it stays.
	if _, err := two.SetZone(testZone, dnsserver.ZoneData{Endpoints: local.Endpoints}); err != nil {
		t.Fatal(err)
	}
	clock.Add(15 * time.Second)
	p.PullOnce(context.Background(), peer)
	if st := statusOf(t, p, peer.Addr); st.Stale || st.Error == "" {
		t.Errorf("within its lease: %+v", st)
	}
	if got := shared(); got != "10.0.1.1,10.0.2.1" {
		t.Errorf("within its lease the shared record is %s", got)
	}
	clock.Add(7 * time.Second)
	before := changed
	p.PullOnce(context.Background(), peer)
	if st := statusOf(t, p, peer.Addr); !st.Stale {
		t.Errorf("past its lease: %+v, want stale", st)
	}
	if changed == before {
		t.Error("turning stale did not tell Changed")
	}
	if got := shared(); got != "10.0.1.1" {
		t.Errorf("past its lease the shared record is %s, want this cluster's address only", got)
	}
	// It comes back with a renewed lease.
	setExport(t, two, three[1].exportAt(t, clock.Now()))
	p.PullOnce(context.Background(), peer)
	if st := statusOf(t, p, peer.Addr); st.Stale || st.Error != "" {
		t.Errorf("back: %+v", st)
	}
	if got := shared(); got != "10.0.1.1,10.0.2.1" {
		t.Errorf("back, the shared record is %s", got)
	}
	// It answers, but its lease stops changing (a wedged controller whose server still serves).
	clock.Add(22 * time.Second)
	p.PullOnce(context.Background(), peer)
	if st := statusOf(t, p, peer.Addr); !st.Stale || st.Error != "" {
		t.Errorf("lease unchanged past its duration: %+v, want stale without an error", st)
	}
	if got := shared(); got != "10.0.1.1" {
		t.Errorf("with its lease unchanged the shared record is %s", got)
	}
}

// TestPoolFirstClaimerKeeps: a peer whose export claims an owner another peer's merged export
// claims is refused whole, and the earlier one stays merged, even when the later one's export says
// it changed earlier. Pulled before any merge, the export that changed first wins, whatever the
// order of the pulls; two servers of one cluster (the same cluster name) are merged once.
func TestPoolFirstClaimerKeeps(t *testing.T) {
	renewed := time.Unix(1_800_000_000, 0)
	key := peerKey
	two := serve(t, three[1].exportAt(t, renewed))
	thief := three[1]
	thief.id, thief.address = "55555555-eeee-4000-8000-000000000005", "10.0.5.1"
	stealing := thief.exportAt(t, renewed)
	stealing.Changed = stealing.Changed.Add(-time.Hour)
	steals := serve(t, stealing)
	peerTwo := Peer{Zone: testZone, Addr: two.Addr().String(), Key: &key}
	peerThief := Peer{Zone: testZone, Addr: steals.Addr().String(), Key: &key}
	local := three[0].exportAt(t, renewed)
	shared := func(p *Pool) string {
		t.Helper()
		m, err := p.Merge(testZone, *local)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range m.Endpoints {
			if e.DNSName == "shared.gslb.example.com" && e.RecordType == "A" {
				return strings.Join(e.Targets, ",")
			}
		}
		return ""
	}

	p := New(Options{Peers: []Peer{peerTwo, peerThief}, Interval: time.Hour, Timeout: 3 * time.Second})
	p.PullOnce(context.Background(), peerTwo)
	if got := shared(p); got != "10.0.1.1,10.0.2.1" {
		t.Fatalf("peer two merged: %s", got)
	}
	p.PullOnce(context.Background(), peerThief)
	if got := shared(p); got != "10.0.1.1,10.0.2.1" {
		t.Errorf("after the thief's pull the shared record is %s, want peer two's address kept and the thief's left out", got)
	}
	if st := statusOf(t, p, peerThief.Addr); !strings.HasPrefix(st.Error, ReasonClaimed+": the export claims owner owner-two, which peer "+peerTwo.Addr+" claimed first") || !st.LastPull.IsZero() || !st.Refused {
		t.Errorf("the thief: %+v", st)
	}
	if st := statusOf(t, p, peerTwo.Addr); st.Error != "" || st.Stale || st.Refused {
		t.Errorf("peer two was evicted: %+v", st)
	}
	if n := pulls(t, p, peerThief.Addr, ReasonClaimed); n != 1 {
		t.Errorf("%v pulls of the thief counted as %s, want 1", n, ReasonClaimed)
	}

	// A fresh start, the thief pulled last: its export changed first, so it keeps the owner.
	q := New(Options{Peers: []Peer{peerTwo, peerThief}, Interval: time.Hour, Timeout: 3 * time.Second})
	q.PullOnce(context.Background(), peerTwo)
	q.PullOnce(context.Background(), peerThief)
	if got := shared(q); got != "10.0.1.1,10.0.5.1" {
		t.Errorf("fresh start: the shared record is %s, want the earlier-changed export's address", got)
	}
	if st := statusOf(t, q, peerTwo.Addr); !strings.HasPrefix(st.Error, ReasonClaimed+":") || !st.Refused || st.LastPull.IsZero() {
		t.Errorf("fresh start: peer two %+v, want refused as %s", st, ReasonClaimed)
	}

	// One cluster reached at two addresses: merged once, from the lower address (the same time).
	again := serve(t, three[1].exportAt(t, renewed))
	addrs := []string{two.Addr().String(), again.Addr().String()}
	slices.Sort(addrs)
	both := []Peer{{Zone: testZone, Addr: addrs[1], Key: &key}, {Zone: testZone, Addr: addrs[0], Key: &key}}
	r := New(Options{Peers: both, Interval: time.Hour, Timeout: 3 * time.Second})
	for _, peer := range both {
		r.PullOnce(context.Background(), peer)
	}
	if got := shared(r); got != "10.0.1.1,10.0.2.1" {
		t.Errorf("one cluster at two addresses: the shared record is %s", got)
	}
	if st := statusOf(t, r, addrs[1]); !strings.Contains(st.Error, "names cluster "+lease.Key(three[1].id)+", which peer "+addrs[0]+" claimed first") {
		t.Errorf("the second address of one cluster: %+v", st)
	}
}

// TestPoolBoundsBytes: a peer whose export grows past the pool's bound of bytes is refused at its
// pull, counted as failed, and its last good export stays merged.
func TestPoolBoundsBytes(t *testing.T) {
	key := peerKey
	renewed := time.Now()
	two := serve(t, three[1].exportAt(t, renewed))
	peer := Peer{Zone: testZone, Addr: two.Addr().String(), Key: &key}
	first, err := Pull(context.Background(), peer, 5*time.Second, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := New(Options{Peers: []Peer{peer}, Interval: time.Hour, Timeout: 3 * time.Second, MaxBytes: first.Bytes + 512})
	local := three[0].exportAt(t, renewed)
	p.PullOnce(context.Background(), peer)
	m, err := p.Merge(testZone, *local)
	if err != nil || !strings.Contains(strings.Join(records(m.Endpoints), "\n"), "[10.0.1.1 10.0.2.1]") {
		t.Fatalf("within the bound: %v\n%s", err, strings.Join(records(m.Endpoints), "\n"))
	}
	// The peer's export grows by a record of 2 KiB.
	grown := three[1].exportAt(t, renewed)
	grown.Endpoints = append(grown.Endpoints, v1alpha1.NewEndpoint("big."+testZone, "TXT", 60, strings.Repeat("x", 2048)))
	grown.Changed = grown.Changed.Add(time.Second)
	setExport(t, two, grown)
	p.PullOnce(context.Background(), peer)
	st := statusOf(t, p, peer.Addr)
	if !strings.HasPrefix(st.Error, ReasonGarbage+": the export is larger than") || st.Records != first.Records || pulls(t, p, peer.Addr, ReasonGarbage) != 1 {
		t.Errorf("over the bound: %+v, %v pulls counted as %s", st, pulls(t, p, peer.Addr, ReasonGarbage), ReasonGarbage)
	}
	if m, err = p.Merge(testZone, *local); err != nil || !strings.Contains(strings.Join(records(m.Endpoints), "\n"), "[10.0.1.1 10.0.2.1]") {
		t.Errorf("over the bound, the last good export is not merged: %v", err)
	}
}
