package dnsserver

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"

	"github.com/dnspolicy/dnspolicy-controller/pkg/goroutine"
)

// listen opens TCP and n UDP sockets on the same address; with port 0, on the same free port.
// Several UDP sockets share the port through SO_REUSEPORT where the system has it; elsewhere there
// is one, read by n readers.
func listen(addr string, n int) ([]*net.UDPConn, net.Listener, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, nil, fmt.Errorf("dnsserver: address %q: %w", addr, err)
	}
	var lastErr error
	for range 10 {
		tcp, err := net.Listen("tcp", ap.String())
		if err != nil {
			return nil, nil, err
		}
		port := tcp.Addr().(*net.TCPAddr).Port
		udp, err := listenUDP(netip.AddrPortFrom(ap.Addr(), uint16(port)), n)
		if err == nil {
			return udp, tcp, nil
		}
		_ = tcp.Close()
		lastErr = err
		if ap.Port() != 0 {
			break
		}
	}
	return nil, nil, lastErr
}

func listenUDP(ap netip.AddrPort, n int) ([]*net.UDPConn, error) {
	lc := net.ListenConfig{Control: reusePort}
	var out []*net.UDPConn
	for i := range n {
		pc, err := lc.ListenPacket(context.Background(), "udp", ap.String())
		if err != nil {
			for _, c := range out {
				_ = c.Close()
			}
			return nil, err
		}
		out = append(out, pc.(*net.UDPConn))
		if i == 0 && !reusePortSupported {
			// One socket, read by n readers.
			for range n - 1 {
				out = append(out, out[0])
			}
			break
		}
	}
	return out, nil
}

// batchConn reads and writes several datagrams per system call (recvmmsg, sendmmsg). ipv4.Message
// and ipv6.Message are the same type.
type batchConn interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

// udpBatch is how many datagrams one system call reads or writes. Under load many queries wait in
// the socket; taking them together saves a system call per query each way.
const udpBatch = 32

func (s *Server) serveUDP(conn *net.UDPConn) {
	defer s.wg.Done()
	r := newResponder(s)
	var pc batchConn = ipv4.NewPacketConn(conn)
	if conn.LocalAddr().(*net.UDPAddr).IP.To4() == nil {
		pc = ipv6.NewPacketConn(conn)
	}
	in := make([]ipv4.Message, udpBatch)
	out := make([]ipv4.Message, udpBatch)
	for i := range in {
		in[i].Buffers = [][]byte{make([]byte, dns.MaxMsgSize)}
		out[i].Buffers = [][]byte{make([]byte, 0, dns.MaxMsgSize)}
	}
	bufs := make([][]byte, udpBatch)
	for i := range out {
		bufs[i] = out[i].Buffers[0]
	}
	for {
		n, err := pc.ReadBatch(in, 0)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		// The batch was read at once and its answers are written together, so one clock reading
		// each way times every query of it, without a reading per query.
		read := time.Now()
		k := 0
		for i := range n {
			from, ok := in[i].Addr.(*net.UDPAddr)
			if !ok {
				continue
			}
			r.req.client, r.req.tcp = from.AddrPort().Addr(), false
			answer := r.handleUDP(in[i].Buffers[0][:in[i].N])
			if answer == nil {
				continue
			}
			out[k].Buffers[0] = append(bufs[k][:0], answer...)
			out[k].Addr = in[i].Addr
			k++
		}
		sent := 0
		for sent < k {
			m, err := pc.WriteBatch(out[sent:k], 0)
			if err != nil {
				break
			}
			sent += m
		}
		if sent > 0 {
			s.stats.observeLatency(r.shard, transportUDP, time.Since(read), sent)
		}
	}
}

// handleUDP answers one datagram, applying response rate limiting. A panic is recovered and counted:
// the datagram goes unanswered and the server serves on.
func (r *responder) handleUDP(msg []byte) (out []byte) {
	defer func() {
		if v := recover(); v != nil {
			r.s.recovered("udp", v, r.req.client)
			out = nil
		}
	}()
	out = r.handle(msg)
	if out != nil && r.s.rrl != nil {
		switch r.s.rrl.check(r.req.client, r.s.now()) {
		case rrlDrop:
			r.s.stats.rrlDropped.Add(1)
			return nil
		case rrlSlip:
			r.s.stats.rrlSlipped.Add(1)
			return r.truncate()
		}
	}
	return out
}

// recovered counts and logs a recovered panic. The stack is logged: it is a bug to fix.
func (s *Server) recovered(transport string, v any, client netip.Addr) {
	if transport == "udp" {
		s.stats.panicsUDP.Add(1)
	} else {
		s.stats.panicsTCP.Add(1)
	}
	goroutine.Recovered(goroutine.DNSServer, v, s.log, "transport", transport, "client", client.String())
}

func (s *Server) serveTCP(l net.Listener) {
	defer s.wg.Done()
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: wait for some to be released.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		var source netip.Addr
		if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
			source = ap.Addr().Unmap()
		}
		s.netMu.Lock()
		if s.ctx.Err() != nil {
			s.netMu.Unlock()
			_ = c.Close()
			return
		}
		switch {
		case len(s.conns) >= s.maxConns:
			s.stats.connsRejTotal.Add(1)
		case s.perSource[source] >= s.maxPerSource:
			s.stats.connsRejSource.Add(1)
		default:
			s.conns[c] = struct{}{}
			s.perSource[source]++
			s.stats.connsOpen.Add(1)
			s.wg.Add(1)
			s.netMu.Unlock()
			go s.serveConn(c, source)
			continue
		}
		s.netMu.Unlock()
		// Over a limit: close at once, so the client tries another server or later, and the
		// connection costs nothing while it waits.
		_ = c.Close()
	}
}

// serveConn answers the queries of one TCP connection in order, until it is idle, has sent its
// share of queries, or is closed. A panic ends only this connection.
func (s *Server) serveConn(c net.Conn, source netip.Addr) {
	defer s.wg.Done()
	defer func() {
		s.netMu.Lock()
		delete(s.conns, c)
		if s.perSource[source]--; s.perSource[source] <= 0 {
			delete(s.perSource, source)
		}
		s.netMu.Unlock()
		s.stats.connsOpen.Add(-1)
		_ = c.Close()
	}()
	defer func() {
		if v := recover(); v != nil {
			s.recovered("tcp", v, source)
		}
	}()
	// The connection's buffers are taken for each query and given back once it is answered, so an
	// idle connection holds none and a held one (a client that does not read) holds one answer.
	r := &responder{s: s, cands: make([]int, 0, 16), shard: int(s.stats.nextShard.Add(1) % statShards)}
	r.req.client = source
	r.req.tcp = true
	var length [2]byte
	for queries := 0; ; queries++ {
		if queries == s.maxQueries {
			s.stats.connsQueryLimit.Add(1)
			return
		}
		_ = c.SetReadDeadline(time.Now().Add(s.idleTimeout))
		if _, err := io.ReadFull(c, length[:]); err != nil {
			if isTimeout(err) {
				s.stats.connsIdle.Add(1)
			}
			return
		}
		in := takeBuffer()
		n := int(binary.BigEndian.Uint16(length[:]))
		if _, err := io.ReadFull(c, (*in)[:n]); err != nil {
			giveBuffer(in)
			if isTimeout(err) {
				s.stats.connsIdle.Add(1)
			}
			return
		}
		read := time.Now()
		outBuf := takeBuffer()
		r.out = (*outBuf)[:0]
		out := r.handle((*in)[:n])
		// The answer holds copies of what it needs of the query.
		r.req.msg = nil
		giveBuffer(in)
		err := s.respondTCP(c, r, out)
		*outBuf = r.out
		r.out = nil
		giveBuffer(outBuf)
		if err != nil {
			return
		}
		// A zone transfer's time is the peer's reading of the whole zone, not a query's.
		if out != nil && r.xfr == nil {
			s.stats.observeLatency(r.shard, transportTCP, time.Since(read), 1)
		}
	}
}

// respondTCP sends a TCP connection's answer, or streams its zone transfer.
func (s *Server) respondTCP(c net.Conn, r *responder, out []byte) error {
	if x := r.xfr; x != nil {
		if err := x.stream(c, &r.req, s.now, s.writeTimeout); err != nil {
			x.entry.stats.transfersFailed.Add(1)
			if isTimeout(err) {
				s.stats.connsWriteTimout.Add(1)
			}
			s.log.Error(err, "zone transfer failed", "zone", x.snap.origin, "peer", c.RemoteAddr().String())
			return err
		}
		x.entry.stats.transfersOK.Add(1)
		return nil
	}
	if out == nil {
		return nil
	}
	_ = c.SetWriteDeadline(time.Now().Add(s.writeTimeout))
	if err := writeTCP(c, out); err != nil {
		if isTimeout(err) {
			s.stats.connsWriteTimout.Add(1)
		}
		return err
	}
	return nil
}

// tcpBuffers hold a query or an answer of a TCP connection while it is read, answered and sent.
var tcpBuffers = sync.Pool{New: func() any { b := make([]byte, answerBufferSize); return &b }}

func takeBuffer() *[]byte {
	b := tcpBuffers.Get().(*[]byte)
	*b = (*b)[:cap(*b)]
	return b
}

// giveBuffer returns a buffer to the pool; one that grew past its size (it cannot, answers being
// bounded, but a pool must never keep a grown buffer) is dropped for the collector.
func giveBuffer(b *[]byte) {
	if cap(*b) == answerBufferSize {
		tcpBuffers.Put(b)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
