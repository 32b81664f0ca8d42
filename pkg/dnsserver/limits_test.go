package dnsserver

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/test/metricstest"
)

// tcpConn dials the server over TCP from a loopback source address (any 127.0.0.0/8 address works
// on Linux, so one test can be several clients).
func tcpConn(t *testing.T, s *Server, from string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// tcpQuery sends one query on an open connection and reads the answer.
func tcpQuery(c net.Conn, name string) (*dns.Msg, error) {
	m := new(dns.Msg).SetQuestion(name, dns.TypeA)
	b, _ := m.Pack()
	if err := writeTCP(c, b); err != nil {
		return nil, err
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var l [2]byte
	if _, err := io.ReadFull(c, l[:]); err != nil {
		return nil, err
	}
	buf := make([]byte, binary.BigEndian.Uint16(l[:]))
	if _, err := io.ReadFull(c, buf); err != nil {
		return nil, err
	}
	resp := new(dns.Msg)
	return resp, resp.Unpack(buf)
}

// closedByServer waits for the server to close a connection: a read ends with EOF or a reset.
func closedByServer(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := c.Read(make([]byte, 1))
	if err == nil || isTimeout(err) {
		t.Fatalf("connection still open (%v)", err)
	}
}

// metricValue sums the samples of a metric of the server's collector whose labels include the
// given name="value" pairs.
func metricValue(t *testing.T, s *Server, name string, labels ...string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(s.Collector())
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var v float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			var have []string
			for _, l := range m.GetLabel() {
				have = append(have, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			if !containsAll(have, labels) {
				continue
			}
			v += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return v
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

func simpleZone(t testing.TB, s *Server) {
	t.Helper()
	setZone(t, s, "example.com", ZoneData{Endpoints: []*v1alpha1.Endpoint{ep("www.example.com", "A", 60, "192.0.2.10")}})
}

// Connections beyond the overall and per-source limits are closed at once, while other clients,
// over UDP and over TCP from other addresses, keep being answered; a connection that used up its
// queries is closed.
func TestTCPLimits(t *testing.T) {
	t.Run("overall", func(t *testing.T) {
		s := startServer(t, Options{MaxTCPConnections: 2, MaxTCPConnectionsPerSource: -1})
		simpleZone(t, s)
		a, b := tcpConn(t, s, "127.0.0.1"), tcpConn(t, s, "127.0.0.2")
		for _, c := range []net.Conn{a, b} {
			if _, err := tcpQuery(c, "www.example.com."); err != nil {
				t.Fatal(err)
			}
		}
		closedByServer(t, tcpConn(t, s, "127.0.0.3"))
		if got := exchange(t, s, "www.example.com.", dns.TypeA, queryOpts{}); len(got.Answer) != 1 {
			t.Fatalf("UDP answer while TCP is full: %v", got)
		}
		if _, err := tcpQuery(a, "www.example.com."); err != nil {
			t.Fatalf("an admitted connection stopped working: %v", err)
		}
		if v := metricValue(t, s, "dnspolicy_dnsserver_tcp_connections_rejected_total", `limit="total"`); v != 1 {
			t.Errorf("rejected total = %v", v)
		}
		// A closed connection frees its place.
		_ = b.Close()
		waitUntil(t, func() bool { return metricValue(t, s, "dnspolicy_dnsserver_tcp_connections") == 1 })
		if _, err := tcpQuery(tcpConn(t, s, "127.0.0.4"), "www.example.com."); err != nil {
			t.Fatalf("after a close: %v", err)
		}
	})
	t.Run("per source", func(t *testing.T) {
		s := startServer(t, Options{MaxTCPConnectionsPerSource: 2})
		simpleZone(t, s)
		first, second := tcpConn(t, s, "127.0.0.1"), tcpConn(t, s, "127.0.0.1")
		for _, c := range []net.Conn{first, second} {
			if _, err := tcpQuery(c, "www.example.com."); err != nil {
				t.Fatal(err)
			}
		}
		closedByServer(t, tcpConn(t, s, "127.0.0.1"))
		if _, err := tcpQuery(tcpConn(t, s, "127.0.0.9"), "www.example.com."); err != nil {
			t.Fatalf("another source was refused: %v", err)
		}
		if v := metricValue(t, s, "dnspolicy_dnsserver_tcp_connections_rejected_total", `limit="per source"`); v != 1 {
			t.Errorf("rejected per source = %v", v)
		}
	})
	t.Run("queries per connection", func(t *testing.T) {
		s := startServer(t, Options{MaxTCPQueries: 3})
		simpleZone(t, s)
		c := tcpConn(t, s, "127.0.0.1")
		for i := range 3 {
			if _, err := tcpQuery(c, "www.example.com."); err != nil {
				t.Fatalf("query %d: %v", i+1, err)
			}
		}
		if _, err := tcpQuery(c, "www.example.com."); err == nil {
			t.Fatal("a fourth query was answered")
		}
	})
	t.Run("idle", func(t *testing.T) {
		s := startServer(t, Options{TCPIdleTimeout: 200 * time.Millisecond})
		simpleZone(t, s)
		closedByServer(t, tcpConn(t, s, "127.0.0.1"))
		waitUntil(t, func() bool {
			return metricValue(t, s, "dnspolicy_dnsserver_tcp_connections_closed_total", `cause="idle"`) == 1
		})
	})
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A zone transfer gets a write deadline per message: a secondary that reads slowly but steadily
// receives a transfer that takes many times the timeout, one that stops reading is cut off after
// about one timeout. net.Pipe has no buffer, so every message waits for its reader.
func TestTransferWriteTimeoutPerMessage(t *testing.T) {
	// Generous, so a loaded machine's scheduling delays stay well inside it.
	const timeout = time.Second
	s, err := New(Options{TSIGKeys: testKeys, TransferKeys: map[string][]string{"bulk.example.net": {testKey}}, TCPWriteTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	var eps []*v1alpha1.Endpoint
	for i := range 8000 {
		eps = append(eps, ep(fmt.Sprintf("host-%04d.bulk.example.net", i), "A", 60, fmt.Sprintf("10.1.%d.%d", i/250, i%250)))
	}
	setZone(t, s, "bulk.example.net", ZoneData{Endpoints: eps})
	axfr := func(t *testing.T) []byte {
		m := new(dns.Msg).SetAxfr("bulk.example.net.")
		m.SetTsig(testKey, dns.HmacSHA256, 300, time.Now().Unix())
		b, _, err := dns.TsigGenerate(m, testSecret, "", false)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	serve := func() (net.Conn, chan struct{}) {
		client, server := net.Pipe()
		done := make(chan struct{})
		s.wg.Add(1)
		s.stats.connsOpen.Add(1)
		s.netMu.Lock()
		s.conns, s.perSource = map[net.Conn]struct{}{server: {}}, map[netip.Addr]int{{}: 1}
		s.netMu.Unlock()
		go func() { s.serveConn(server, netip.Addr{}); close(done) }()
		return client, done
	}
	readMsg := func(c net.Conn) (*dns.Msg, error) {
		var l [2]byte
		if _, err := io.ReadFull(c, l[:]); err != nil {
			return nil, err
		}
		buf := make([]byte, binary.BigEndian.Uint16(l[:]))
		if _, err := io.ReadFull(c, buf); err != nil {
			return nil, err
		}
		m := new(dns.Msg)
		return m, m.Unpack(buf)
	}

	t.Run("slow but steady reader finishes", func(t *testing.T) {
		c, done := serve()
		defer c.Close()
		go func() { _ = writeTCP(c, axfr(t)) }()
		start := time.Now()
		var records, messages int
		for {
			m, err := readMsg(c)
			if err != nil {
				t.Fatalf("after %d messages, %d records, %s: %v", messages, records, time.Since(start), err)
			}
			messages++
			records += len(m.Answer)
			if records > 1 && m.Answer[len(m.Answer)-1].Header().Rrtype == dns.TypeSOA {
				break
			}
			time.Sleep(timeout / 5)
		}
		if elapsed := time.Since(start); elapsed < 2*timeout || records != 8003 {
			t.Fatalf("%d records in %d messages took %s; the test needs a transfer longer than the timeout", records, messages, elapsed)
		}
		_ = c.Close()
		<-done
	})
	t.Run("stalled reader is cut off", func(t *testing.T) {
		c, done := serve()
		defer c.Close()
		go func() { _ = writeTCP(c, axfr(t)) }()
		if _, err := readMsg(c); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		select {
		case <-done:
		case <-time.After(20 * timeout):
			t.Fatal("the server still waits on a reader that stopped")
		}
		// The deadline of the message the server is blocked on started when it began writing it,
		// which may come a moment before the read above returned (the kernel's buffers hold several
		// messages): allow that moment, a tenth of the timeout, and no more.
		if elapsed := time.Since(start); elapsed < timeout-timeout/10 {
			t.Fatalf("cut off after %s, before the %s timeout", elapsed, timeout)
		}
		if v := metricValue(t, s, "dnspolicy_dnsserver_transfers_total", `result="error"`); v != 1 {
			t.Errorf("failed transfers = %v", v)
		}
	})
}

// Under a flood from one prefix, RRL answers up to the burst, then slips every second answer as
// truncated and drops the others; a client in another prefix is answered in full meanwhile. The
// clock stands still, so no tokens come back during the test.
func TestRateLimitSlips(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := startServer(t, Options{Now: func() time.Time { return now },
		RateLimit: RateLimit{ResponsesPerSecond: 10, Slip: 2}})
	simpleZone(t, s)
	flooder, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	defer flooder.Close()
	const sent = 100
	query := new(dns.Msg).SetQuestion("www.example.com.", dns.TypeA)
	for i := range sent {
		query.Id = uint16(i)
		b, _ := query.Pack()
		if _, err := flooder.WriteToUDPAddrPort(b, s.Addr()); err != nil {
			t.Fatal(err)
		}
	}
	// 10 answered from the burst; of the 90 held back, every second slips. Read until those 55
	// arrived (a loaded machine may take seconds), then a while longer: nothing more may come.
	var full, truncated int
	buf := make([]byte, 2048)
	deadline := time.Now().Add(20 * time.Second)
	for {
		wait := deadline
		if full+truncated >= 55 {
			wait = time.Now().Add(500 * time.Millisecond)
		}
		_ = flooder.SetReadDeadline(wait)
		n, err := flooder.Read(buf)
		if err != nil {
			break
		}
		m := new(dns.Msg)
		if err := m.Unpack(buf[:n]); err != nil {
			t.Fatal(err)
		}
		switch {
		case m.Truncated && len(m.Answer) == 0:
			truncated++
		case len(m.Answer) == 1:
			full++
		default:
			t.Fatalf("unexpected answer %v", m)
		}
	}
	if full != 10 || truncated != 45 {
		t.Errorf("flood: %d full answers, %d truncated of %d; want 10 and 45", full, truncated, sent)
	}
	other := exchange(t, s, "www.example.com.", dns.TypeA, queryOpts{source: netip.MustParseAddr("127.0.1.1")})
	if other.Truncated || len(other.Answer) != 1 {
		t.Errorf("a client of another prefix: %v", other)
	}
	// The truncated answer sends the client to TCP, which is never limited.
	if resp := exchange(t, s, "www.example.com.", dns.TypeA, queryOpts{tcp: true, source: netip.MustParseAddr("127.0.0.1")}); len(resp.Answer) != 1 {
		t.Errorf("TCP from the flooding prefix: %v", resp)
	}
	if v := metricValue(t, s, "dnspolicy_dnsserver_rate_limited_total", `action="slip"`); v != 45 {
		t.Errorf("slipped = %v", v)
	}
}

// A panic while answering ends only that packet or connection; it is counted, and the server
// serves on. The weighted choice's random source is the one caller-supplied function on the
// answer path, so a panicking one stands in for a bug.
func TestPanicsAreRecovered(t *testing.T) {
	goroutinePanics := func() float64 {
		v, _ := metricstest.Value("dnspolicy_goroutine_panics_total", map[string]string{"component": "dnsserver"})
		return v
	}
	before := goroutinePanics()
	s := startServer(t, Options{Random: func(uint64) uint64 { panic("injected") }})
	setZone(t, s, "example.com", ZoneData{Endpoints: []*v1alpha1.Endpoint{
		ep("www.example.com", "A", 60, "192.0.2.10"),
		weightedEP("w.example.com", "a.example.com", 10),
		weightedEP("w.example.com", "b.example.com", 20),
	}})
	c := &dns.Client{Timeout: 300 * time.Millisecond}
	if _, _, err := c.Exchange(new(dns.Msg).SetQuestion("w.example.com.", dns.TypeCNAME), s.Addr().String()); err == nil {
		t.Fatal("the panicking query was answered")
	}
	conn := tcpConn(t, s, "127.0.0.1")
	if _, err := tcpQuery(conn, "w.example.com."); err == nil {
		t.Fatalf("the panicking TCP query: %v", err)
	}
	for _, tcp := range []bool{false, true} {
		if got := exchange(t, s, "www.example.com.", dns.TypeA, queryOpts{tcp: tcp}); len(got.Answer) != 1 {
			t.Fatalf("after the panics (tcp=%v): %v", tcp, got)
		}
	}
	if u, tc := metricValue(t, s, "dnspolicy_dnsserver_panics_recovered_total", `transport="udp"`),
		metricValue(t, s, "dnspolicy_dnsserver_panics_recovered_total", `transport="tcp"`); u != 1 || tc != 1 {
		t.Errorf("panics recovered: udp %v, tcp %v", u, tc)
	}
	if n := goroutinePanics() - before; n != 2 {
		t.Errorf("%v panics counted in dnspolicy_goroutine_panics_total, want 2", n)
	}
}
