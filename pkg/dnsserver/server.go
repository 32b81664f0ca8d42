// Package dnsserver is an authoritative DNS server for zones made of DNSRecord endpoints, answering
// loadbalanced record sets the way Kuadrant's CoreDNS plugin does, and where it falls short, the way
// Route53 does: the geo step picks the client's country, else its continent ("GEO-XX"), else the
// default ("*"), else the first set; the weighted step picks one target in proportion to weight.
//
// Data comes in through SetZone (a zone's whole content) and RemoveZone. Each zone is an immutable
// snapshot swapped atomically, so a change rebuilds only its zone and queries never wait on a lock.
// Queries are read and answered as bytes from records encoded when the zone is built.
//
// Several geo codes on one record set: an endpoint's geo codes are every "geo-code" property it
// carries, each split at commas ("IE,GB,GEO-EU"). Several endpoints with different set identifiers
// and the same target (Kuadrant's shape, one code each) work too: each is a member of the routed set.
// A client matching several members at the same level gets the first by set identifier, or, when the
// members carry weights, a weighted choice among them. Only the weighted choice is random, so
// replicas given the same data (and ZoneData.Changed) answer alike.
//
// TXT targets are read as external-dns providers read them: a quoted target is zone-file text, so
// Kuadrant's quoted ownership records reach clients without the quotes, as from Route53 (Kuadrant's
// plugin serves the quote characters as data).
//
// A secondary cannot route, so a zone transfer carries a static view of each routed set: address and
// text sets with every member's records, a CNAME set with the member a client of unknown location
// gets (the default geo, the heaviest weight).
package dnsserver

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/miekg/dns"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

const (
	notifyAttempts = 5
	// tcpIdleTimeout is how long a TCP connection may wait for its next query (RFC 7766 6.2.3).
	tcpIdleTimeout = 8 * time.Second
)

// Options configure a Server.
type Options struct {
	// Addr is the host:port to serve on, over UDP and TCP. Port 0 picks a free port, the same for both.
	Addr string
	// GeoIPDatabase is the path of a MaxMind-format database (country or city). Without one, every
	// client is of unknown location and gets the default geo.
	GeoIPDatabase string
	// TSIGKeys are HMAC-SHA256 secrets (base64) by key name. A peer signing with one may transfer zones.
	TSIGKeys map[string]string
	// NotifyKey names the key of TSIGKeys that signs NOTIFY messages; empty sends them unsigned.
	NotifyKey string
	// MaxUDPSize caps UDP answers; larger ones are truncated so the client retries over TCP. Default 1232.
	MaxUDPSize int
	// NotifyTimeout is how long to wait for a secondary to acknowledge a NOTIFY; default 2s, doubled
	// per retry.
	NotifyTimeout time.Duration
	// Random returns a number in [0, n) for the weighted choice; default math/rand/v2.Uint64N. It is
	// called concurrently.
	Random func(n uint64) uint64
	// Now is the clock for serials; default time.Now.
	Now func() time.Time
	// Log receives errors that have no caller to return to (failed NOTIFYs, transfers).
	Log logr.Logger
}

// Server serves zones. Create it with New, feed it with SetZone, and Start it.
type Server struct {
	addr          string
	geo           *geoDB
	keys          map[string]string
	notifyKey     string
	maxUDP        int
	notifyTimeout time.Duration
	random        func(uint64) uint64
	now           func() time.Time
	log           logr.Logger

	zones atomic.Pointer[zoneTable]
	mu    sync.Mutex // serialises changes to zones

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	netMu   sync.Mutex
	udp     *net.UDPConn
	tcp     net.Listener
	conns   map[net.Conn]struct{}
	started bool
}

// zoneTable maps lower-cased wire-form zone names to zones. It changes only when a zone is added or
// removed; a zone's content changes inside its entry.
type zoneTable map[string]*zoneEntry

type zoneEntry struct {
	snap atomic.Pointer[snapshot]

	// Guarded by Server.mu.
	secondaries []string
	notifier    bool
	// wake tells the zone's notifier of a change; removed ends it.
	wake    chan struct{}
	removed chan struct{}
}

// New prepares a server; it serves nothing until Start.
func New(opts Options) (*Server, error) {
	s := &Server{
		addr:          opts.Addr,
		keys:          map[string]string{},
		maxUDP:        opts.MaxUDPSize,
		notifyTimeout: opts.NotifyTimeout,
		random:        opts.Random,
		now:           opts.Now,
		log:           opts.Log,
	}
	if s.maxUDP == 0 {
		s.maxUDP = maxUDPDefault
	}
	if s.maxUDP < dns.MinMsgSize || s.maxUDP > dns.MaxMsgSize {
		return nil, fmt.Errorf("MaxUDPSize %d is outside [%d, %d]", s.maxUDP, dns.MinMsgSize, dns.MaxMsgSize)
	}
	if s.notifyTimeout == 0 {
		s.notifyTimeout = 2 * time.Second
	}
	if s.random == nil {
		s.random = rand.Uint64N
	}
	if s.now == nil {
		s.now = time.Now
	}
	for name, secret := range opts.TSIGKeys {
		if _, err := base64.StdEncoding.DecodeString(secret); err != nil {
			return nil, fmt.Errorf("TSIG key %q: secret is not base64: %w", name, err)
		}
		s.keys[dns.CanonicalName(name)] = secret
	}
	if opts.NotifyKey != "" {
		s.notifyKey = dns.CanonicalName(opts.NotifyKey)
		if _, ok := s.keys[s.notifyKey]; !ok {
			return nil, fmt.Errorf("NotifyKey %q is not one of TSIGKeys", opts.NotifyKey)
		}
	}
	if opts.GeoIPDatabase != "" {
		g, err := openGeoDB(opts.GeoIPDatabase)
		if err != nil {
			return nil, err
		}
		s.geo = g
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.zones.Store(&zoneTable{})
	return s, nil
}

// ZoneStatus reports what SetZone served.
type ZoneStatus struct {
	// Serial is the zone's SOA serial after the call.
	Serial uint32
	// Changed says whether the content changed (and so the serial moved and secondaries were told).
	Changed bool
	// Skipped describes endpoints left out, and why; the rest of the zone is served.
	Skipped []string
}

// SetZone serves a zone with the given content, replacing what it served before. Only this zone is
// rebuilt. The serial moves only when the content changed; then secondaries are sent a NOTIFY.
func (s *Server) SetZone(name string, data ZoneData) (ZoneStatus, error) {
	origin, err := canonicalName(name)
	if err != nil {
		return ZoneStatus{}, fmt.Errorf("zone %q: %w", name, err)
	}
	key, _ := wireName(origin)
	s.mu.Lock()
	defer s.mu.Unlock()
	table := *s.zones.Load()
	entry := table[string(key)]
	var prev *snapshot
	if entry != nil {
		prev = entry.snap.Load()
	}
	changed := data.Changed
	if changed.IsZero() {
		changed = s.now()
	}
	serial := uint32(changed.Unix())
	if prev != nil && !serialNewer(serial, prev.serial) {
		serial = prev.serial + 1
	}
	snap, skipped, err := buildZone(origin, data, serial)
	if err != nil {
		return ZoneStatus{}, err
	}
	status := ZoneStatus{Serial: serial, Changed: true, Skipped: skipped}
	if prev != nil && prev.digest == snap.digest {
		status.Serial, status.Changed = prev.serial, false
	}
	if entry == nil {
		entry = &zoneEntry{wake: make(chan struct{}, 1), removed: make(chan struct{})}
		next := make(zoneTable, len(table)+1)
		for k, v := range table {
			next[k] = v
		}
		next[string(key)] = entry
		entry.snap.Store(snap)
		s.zones.Store(&next)
	} else if status.Changed {
		entry.snap.Store(snap)
	}
	entry.secondaries = slices.Clone(data.Secondaries)
	if status.Changed {
		s.kickNotify(entry)
	}
	return status, nil
}

// RemoveZone stops serving a zone; its names are then REFUSED.
func (s *Server) RemoveZone(name string) {
	origin, err := canonicalName(name)
	if err != nil {
		return
	}
	key, _ := wireName(origin)
	s.mu.Lock()
	defer s.mu.Unlock()
	table := *s.zones.Load()
	entry := table[string(key)]
	if entry == nil {
		return
	}
	close(entry.removed)
	next := make(zoneTable, len(table))
	for k, v := range table {
		if k != string(key) {
			next[k] = v
		}
	}
	s.zones.Store(&next)
}

// Serial returns the SOA serial of a zone, and whether it is served.
func (s *Server) Serial(name string) (uint32, bool) {
	key, err := wireName(name)
	if err != nil {
		return 0, false
	}
	entry := (*s.zones.Load())[string(key)]
	if entry == nil {
		return 0, false
	}
	return entry.snap.Load().serial, true
}

// findZone returns the most specific zone holding a name, by its suffixes, longest first.
func (s *Server) findZone(lname []byte) *snapshot {
	table := *s.zones.Load()
	for off := 0; off < len(lname); off += int(lname[off]) + 1 {
		if e := table[string(lname[off:])]; e != nil {
			return e.snap.Load()
		}
		if lname[off] == 0 {
			break
		}
	}
	return nil
}

// kickNotify tells a zone's notifier that the zone changed, starting it on first use. Called with
// s.mu held.
func (s *Server) kickNotify(e *zoneEntry) {
	if len(e.secondaries) == 0 {
		return
	}
	if !e.notifier {
		e.notifier = true
		s.wg.Add(1)
		go s.notifier(e)
	}
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// notifier sends a zone's NOTIFYs, one round per change. A change during a round ends it: the next
// round announces the newer serial, and secondaries only care about the latest.
func (s *Server) notifier(e *zoneEntry) {
	defer s.wg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-e.removed:
			return
		case <-e.wake:
		}
		s.mu.Lock()
		snap, secondaries := e.snap.Load(), e.secondaries
		s.mu.Unlock()
		ctx, cancel := context.WithCancel(s.ctx)
		go func() {
			select {
			case <-e.removed:
			case <-ctx.Done():
			}
			cancel()
		}()
		s.notify(ctx, e.wake, snap.origin, snap.soa.rrs[0], secondaries)
		cancel()
	}
}

// Start listens on Options.Addr over UDP and TCP and serves until Shutdown. Secondaries of every zone
// are sent a NOTIFY, so that after a restart they check their copy.
func (s *Server) Start() error {
	s.netMu.Lock()
	defer s.netMu.Unlock()
	if s.started {
		return errors.New("dnsserver: already started")
	}
	udp, tcp, err := listen(s.addr)
	if err != nil {
		return err
	}
	s.udp, s.tcp, s.conns, s.started = udp, tcp, map[net.Conn]struct{}{}, true
	// One reader per CPU: each owns its buffers, so answering needs no coordination.
	for range runtime.GOMAXPROCS(0) {
		s.wg.Add(1)
		go s.serveUDP(udp)
	}
	s.wg.Add(1)
	go s.serveTCP(tcp)
	s.mu.Lock()
	for _, e := range *s.zones.Load() {
		s.kickNotify(e)
	}
	s.mu.Unlock()
	return nil
}

// listen opens UDP and TCP on the same address; with port 0, on the same free port.
func listen(addr string) (*net.UDPConn, net.Listener, error) {
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
		udp, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ap.Addr(), uint16(port))))
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

// Addr returns the address the server listens on, once started.
func (s *Server) Addr() netip.AddrPort {
	s.netMu.Lock()
	defer s.netMu.Unlock()
	if s.udp == nil {
		return netip.AddrPort{}
	}
	return s.udp.LocalAddr().(*net.UDPAddr).AddrPort()
}

// Shutdown stops listening, closes open connections and NOTIFY rounds, and waits for them to end or
// ctx to expire. The server cannot be started again.
func (s *Server) Shutdown(ctx context.Context) error {
	s.cancel()
	s.netMu.Lock()
	var errs []error
	if s.udp != nil {
		errs = append(errs, s.udp.Close())
	}
	if s.tcp != nil {
		errs = append(errs, s.tcp.Close())
	}
	for c := range s.conns {
		_ = c.Close()
	}
	s.netMu.Unlock()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, ctx.Err())
	}
	if s.geo != nil {
		errs = append(errs, s.geo.close())
	}
	return errors.Join(errs...)
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
		k := 0
		for i := range n {
			from, ok := in[i].Addr.(*net.UDPAddr)
			if !ok {
				continue
			}
			r.req.client, r.req.tcp = from.AddrPort().Addr(), false
			answer := r.handle(in[i].Buffers[0][:in[i].N])
			if answer == nil {
				continue
			}
			out[k].Buffers[0] = append(bufs[k][:0], answer...)
			out[k].Addr = in[i].Addr
			k++
		}
		for sent := 0; sent < k; {
			m, err := pc.WriteBatch(out[sent:k], 0)
			if err != nil {
				break
			}
			sent += m
		}
	}
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
		s.netMu.Lock()
		if s.ctx.Err() != nil {
			s.netMu.Unlock()
			_ = c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.netMu.Unlock()
		go s.serveConn(c)
	}
}

// serveConn answers the queries of one TCP connection in order, until it is idle or closed.
func (s *Server) serveConn(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.netMu.Lock()
		delete(s.conns, c)
		s.netMu.Unlock()
		_ = c.Close()
	}()
	r := newResponder(s)
	if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
		r.req.client = ap.Addr()
	}
	r.req.tcp = true
	buf := make([]byte, dns.MaxMsgSize)
	for {
		_ = c.SetReadDeadline(time.Now().Add(tcpIdleTimeout))
		if _, err := io.ReadFull(c, buf[:2]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint16(buf))
		if _, err := io.ReadFull(c, buf[:n]); err != nil {
			return
		}
		out := r.handle(buf[:n])
		_ = c.SetWriteDeadline(time.Now().Add(tcpIdleTimeout))
		if r.xfr != nil {
			if err := r.xfr.stream(c, &r.req); err != nil {
				s.log.Error(err, "zone transfer failed", "zone", r.xfr.snap.origin, "peer", c.RemoteAddr().String())
				return
			}
			continue
		}
		if out == nil {
			continue
		}
		if err := writeTCP(c, out); err != nil {
			return
		}
	}
}
