package resolver

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
)

// Tamper changes an answer in flight; it reports whether it changed anything.
type Tamper func(*dns.Msg) bool

// FlipSignature corrupts the signature of the first RRSIG in the answer section: the records are
// intact, their proof is not.
func FlipSignature(m *dns.Msg) bool {
	for _, rr := range m.Answer {
		if sig, ok := rr.(*dns.RRSIG); ok {
			b := []byte(sig.Signature)
			// The base64 text's first character: changing it between two letters keeps it valid
			// base64 and changes the first six bits of the signature.
			if b[0] == 'A' {
				b[0] = 'B'
			} else {
				b[0] = 'A'
			}
			sig.Signature = string(b)
			return true
		}
	}
	return false
}

// FlipAddress changes the last byte of the first A record in the answer section: a forged address
// under a genuine signature.
func FlipAddress(m *dns.Msg) bool {
	for _, rr := range m.Answer {
		if a, ok := rr.(*dns.A); ok {
			ip := a.A.To4()
			a.A = net.IPv4(ip[0], ip[1], ip[2], ip[3]^1)
			return true
		}
	}
	return false
}

// Proxy forwards DNS over UDP and TCP to an authoritative server, changing its answers with a
// Tamper. Tampered counts the answers it changed, so a test knows its bogus answer was really sent.
type Proxy struct {
	Addr     netip.AddrPort
	upstream netip.AddrPort
	tamper   Tamper
	mu       sync.Mutex
	tampered int
}

// StartProxy listens on a free loopback port, forwarding to upstream (any DNS server) and changing
// what it answers with tamper, until the test ends.
func StartProxy(t testing.TB, upstream netip.AddrPort, tamper Tamper) *Proxy {
	t.Helper()
	p := &Proxy{upstream: upstream, tamper: tamper}
	var (
		udp net.PacketConn
		tcp net.Listener
		err error
	)
	// The port must be free for both protocols at once; another test may take it between the pick
	// and the binds, so a few picks are tried.
	for range 10 {
		p.Addr = netip.MustParseAddrPort(freeport.Addr(t))
		if udp, err = net.ListenPacket("udp", p.Addr.String()); err != nil {
			continue
		}
		if tcp, err = net.Listen("tcp", p.Addr.String()); err != nil {
			_ = udp.Close()
			continue
		}
		break
	}
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.serveUDP(udp) }()
	go func() { defer wg.Done(); p.serveTCP(tcp) }()
	t.Cleanup(func() {
		_ = udp.Close()
		_ = tcp.Close()
		wg.Wait()
	})
	return p
}

// Tampered is the number of answers changed so far.
func (p *Proxy) Tampered() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tampered
}

// forward sends one query to the upstream over network and returns its answer as changed by the
// tamper.
func (p *Proxy) forward(network string, query []byte) ([]byte, error) {
	c, err := net.DialTimeout(network, p.upstream.String(), 2*time.Second)
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	// Signed answers outgrow the 512 bytes a dns.Conn reads over UDP by default.
	conn := &dns.Conn{Conn: c, UDPSize: dns.MaxMsgSize}
	if _, err := conn.Write(query); err != nil {
		return nil, err
	}
	answer, err := conn.ReadMsg()
	if err != nil {
		return nil, err
	}
	if p.tamper(answer) {
		p.mu.Lock()
		p.tampered++
		p.mu.Unlock()
	}
	// Changed records keep their length, so the answer fits where the original did.
	return answer.Pack()
}

func (p *Proxy) serveUDP(c net.PacketConn) {
	buf := make([]byte, dns.MaxMsgSize)
	for {
		n, from, err := c.ReadFrom(buf)
		if err != nil {
			return
		}
		query := append([]byte(nil), buf[:n]...)
		go func() {
			if answer, err := p.forward("udp", query); err == nil {
				_, _ = c.WriteTo(answer, from)
			}
		}()
	}
}

func (p *Proxy) serveTCP(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer func() { _ = c.Close() }()
			for {
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				var size [2]byte
				if _, err := io.ReadFull(c, size[:]); err != nil {
					return
				}
				query := make([]byte, binary.BigEndian.Uint16(size[:]))
				if _, err := io.ReadFull(c, query); err != nil {
					return
				}
				answer, err := p.forward("tcp", query)
				if err != nil {
					return
				}
				out := binary.BigEndian.AppendUint16(nil, uint16(len(answer)))
				if _, err := c.Write(append(out, answer...)); err != nil && !errors.Is(err, net.ErrClosed) {
					return
				}
			}
		}()
	}
}
