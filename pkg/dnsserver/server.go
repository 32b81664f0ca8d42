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
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
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

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/goroutine"
)

const notifyAttempts = 5

// Defaults of the resource limits, beside BIND's and Knot's equivalents (docs/embedded-dns.md).
const (
	// DefaultMaxTCPConnections bounds open TCP connections (BIND tcp-clients 150; Knot
	// tcp-max-clients, a share of the open-file limit). Ours is higher: connections are goroutines.
	DefaultMaxTCPConnections = 1024
	// DefaultMaxTCPConnectionsPerSource bounds one client address's share of them.
	DefaultMaxTCPConnectionsPerSource = 64
	// DefaultMaxTCPQueries is how many queries one connection may send before it is closed.
	DefaultMaxTCPQueries = 1000
	// DefaultTCPIdleTimeout is how long a connection may wait between queries (RFC 7766 6.2.3;
	// BIND tcp-idle-timeout 30 s, Knot tcp-idle-timeout 10 s).
	DefaultTCPIdleTimeout = 10 * time.Second
	// DefaultTCPWriteTimeout bounds writing one message, each envelope of a zone transfer included
	// (Knot tcp-io-timeout 0.5 s, tcp-remote-io-timeout 5 s).
	DefaultTCPWriteTimeout = 5 * time.Second
	// DefaultGeoIPReloadInterval is how often the geo database file is checked for a change.
	DefaultGeoIPReloadInterval = 10 * time.Second
)

// Options configure a Server.
type Options struct {
	// Addr is the host:port to serve on, over UDP and TCP. Port 0 picks a free port, the same for both.
	Addr string
	// GeoIPDatabase is the path of a MaxMind-format database (country or city). Without one, every
	// client is of unknown location and gets the default geo. The file is checked every
	// GeoIPReloadInterval and reloaded when it changed; a file that does not parse keeps the
	// database in use.
	GeoIPDatabase string
	// GeoIPReloadInterval defaults to DefaultGeoIPReloadInterval; negative never reloads.
	GeoIPReloadInterval time.Duration
	// TSIGKeys are the keys peers may sign with (ParseTSIGKeys reads them from a file or Secret).
	TSIGKeys []TSIGKey
	// TransferKeys names, by zone, the keys allowed to transfer it; a zone not listed cannot be
	// transferred. Its first key signs the zone's NOTIFY messages.
	TransferKeys map[string][]string
	// Exports says, by zone, who may pull the zone's export (ZoneData.Export): peers of other
	// clusters. A zone not listed exports to nobody.
	Exports map[string]ExportAccess
	// NameserverAddresses are the addresses of nameserver names (ZoneData.Nameservers), by name. A
	// zone whose nameserver name is inside it answers that name's A and AAAA queries from here, and
	// sends them as glue with its NS answers, so that a delegation to it is not lame; records at
	// such a name are refused.
	NameserverAddresses map[string][]netip.Addr
	// MaxUDPSize caps UDP answers; larger ones are truncated so the client retries over TCP. Default 1232.
	MaxUDPSize int
	// MaxTCPConnections, MaxTCPConnectionsPerSource and MaxTCPQueries bound TCP clients; 0 means the
	// Default... value, negative means no limit. A connection over a limit is closed at once.
	MaxTCPConnections          int
	MaxTCPConnectionsPerSource int
	MaxTCPQueries              int
	// TCPIdleTimeout and TCPWriteTimeout default to DefaultTCPIdleTimeout and DefaultTCPWriteTimeout.
	TCPIdleTimeout  time.Duration
	TCPWriteTimeout time.Duration
	// RateLimit is response rate limiting over UDP; the zero value is off.
	RateLimit RateLimit
	// MaxTTL caps the TTL of every endpoint served, as the record controller caps every record's
	// (--max-ttl); an endpoint above it is refused. 0 means v1alpha1.DefaultMaxTTL.
	MaxTTL int64
	// NotifyTimeout is how long to wait for a secondary to acknowledge a NOTIFY; default 2s, doubled
	// per retry.
	NotifyTimeout time.Duration
	// Random returns a number in [0, n) for the weighted choice; default math/rand/v2.Uint64N. It is
	// called concurrently.
	Random func(n uint64) uint64
	// Now is the clock for serials and TSIG; default time.Now.
	Now func() time.Time
	// Log receives errors that have no caller to return to (failed NOTIFYs, transfers, geo reloads).
	Log logr.Logger
}

// Server serves zones. Create it with New, feed it with SetZone, and Start it.
type Server struct {
	addr         string
	geoPath      string
	geoInterval  time.Duration
	geo          atomic.Pointer[geoDB]
	keys         map[string]*tsigKey
	transferKeys map[string][]string // by canonical zone name, canonical key names
	// exportPrefixes are, by canonical export name, the sources that may pull it unsigned.
	exportPrefixes map[string][]netip.Prefix
	// nsAddrs are Options.NameserverAddresses by canonical name.
	nsAddrs       map[string][]netip.Addr
	maxTTL        int64
	maxUDP        int
	maxConns      int
	maxPerSource  int
	maxQueries    int
	idleTimeout   time.Duration
	writeTimeout  time.Duration
	rrl           *rateLimiter
	notifyTimeout time.Duration
	random        func(uint64) uint64
	now           func() time.Time
	log           logr.Logger
	stats         serverStats

	zones atomic.Pointer[zoneTable]
	mu    sync.Mutex // serialises changes to zones

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	netMu     sync.Mutex
	udp       []*net.UDPConn
	tcp       net.Listener
	conns     map[net.Conn]struct{}
	perSource map[netip.Addr]int
	started   bool
}

// zoneTable maps lower-cased wire-form zone names to zones. It changes only when a zone is added or
// removed; a zone's content changes inside its entry.
type zoneTable map[string]*zoneEntry

type zoneEntry struct {
	snap  atomic.Pointer[snapshot]
	stats zoneStats
	// export marks a zone's export (ZoneData.Export): it answers zone transfers only.
	export bool

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
		addr:           opts.Addr,
		geoPath:        opts.GeoIPDatabase,
		geoInterval:    cmp.Or(opts.GeoIPReloadInterval, DefaultGeoIPReloadInterval),
		keys:           map[string]*tsigKey{},
		transferKeys:   map[string][]string{},
		exportPrefixes: map[string][]netip.Prefix{},
		maxUDP:         cmp.Or(opts.MaxUDPSize, maxUDPDefault),
		maxConns:       limit(opts.MaxTCPConnections, DefaultMaxTCPConnections),
		maxPerSource:   limit(opts.MaxTCPConnectionsPerSource, DefaultMaxTCPConnectionsPerSource),
		maxQueries:     limit(opts.MaxTCPQueries, DefaultMaxTCPQueries),
		idleTimeout:    cmp.Or(opts.TCPIdleTimeout, DefaultTCPIdleTimeout),
		writeTimeout:   cmp.Or(opts.TCPWriteTimeout, DefaultTCPWriteTimeout),
		notifyTimeout:  cmp.Or(opts.NotifyTimeout, 2*time.Second),
		random:         opts.Random,
		now:            opts.Now,
		log:            opts.Log,
	}
	if s.maxUDP < dns.MinMsgSize || s.maxUDP > dns.MaxMsgSize {
		return nil, fmt.Errorf("MaxUDPSize %d is outside [%d, %d]", s.maxUDP, dns.MinMsgSize, dns.MaxMsgSize)
	}
	if s.idleTimeout < 0 || s.writeTimeout < 0 {
		return nil, errors.New("TCP timeouts must be positive")
	}
	if s.random == nil {
		s.random = rand.Uint64N
	}
	if s.maxTTL = opts.MaxTTL; s.maxTTL <= 0 {
		s.maxTTL = v1alpha1.DefaultMaxTTL
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.nsAddrs = map[string][]netip.Addr{}
	for name, addrs := range opts.NameserverAddresses {
		ns, err := canonicalName(name)
		if err != nil {
			return nil, fmt.Errorf("nameserver address of %q: %w", name, err)
		}
		for _, a := range addrs {
			if !a.IsValid() || a.Zone() != "" {
				return nil, fmt.Errorf("nameserver %s: %q is not an address", name, a)
			}
			if a = a.Unmap(); !slices.Contains(s.nsAddrs[ns], a) {
				s.nsAddrs[ns] = append(s.nsAddrs[ns], a)
			}
		}
	}
	for _, k := range opts.TSIGKeys {
		key, err := newTSIGKey(k)
		if err != nil {
			return nil, err
		}
		if s.keys[key.name] != nil {
			return nil, fmt.Errorf("TSIG key %q is given twice", k.Name)
		}
		s.keys[key.name] = key
	}
	for zone, names := range opts.TransferKeys {
		origin, err := canonicalName(zone)
		if err != nil {
			return nil, fmt.Errorf("transfer keys of zone %q: %w", zone, err)
		}
		for _, name := range names {
			key := dns.CanonicalName(name)
			if s.keys[key] == nil {
				return nil, fmt.Errorf("zone %s: transfer key %q is not one of the TSIG keys", zone, name)
			}
			if !slices.Contains(s.transferKeys[origin], key) {
				s.transferKeys[origin] = append(s.transferKeys[origin], key)
			}
		}
	}
	for zone, access := range opts.Exports {
		origin, err := canonicalName(zone)
		if err != nil {
			return nil, fmt.Errorf("export of zone %q: %w", zone, err)
		}
		export := ExportName(origin)
		for _, name := range access.Keys {
			key := dns.CanonicalName(name)
			if s.keys[key] == nil {
				return nil, fmt.Errorf("zone %s: export key %q is not one of the TSIG keys", zone, name)
			}
			if !slices.Contains(s.transferKeys[export], key) {
				s.transferKeys[export] = append(s.transferKeys[export], key)
			}
		}
		for _, p := range access.Prefixes {
			s.exportPrefixes[export] = append(s.exportPrefixes[export], p.Masked())
		}
	}
	var err error
	if s.rrl, err = newRateLimiter(opts.RateLimit); err != nil {
		return nil, err
	}
	if opts.GeoIPDatabase != "" {
		g, err := openGeoDB(opts.GeoIPDatabase)
		if err != nil {
			return nil, err
		}
		s.geo.Store(g)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.zones.Store(&zoneTable{})
	return s, nil
}

// limit reads a limit option: 0 is the default, negative is none.
func limit(v, def int) int {
	switch {
	case v == 0:
		return def
	case v < 0:
		return math.MaxInt
	}
	return v
}

// transferAllowed says whether a key may transfer a zone.
func (s *Server) transferAllowed(origin, key string) bool {
	return slices.Contains(s.transferKeys[origin], key)
}

// notifyKey is the key that signs a zone's NOTIFY messages: its first transfer key, if any.
func (s *Server) notifyKey(origin string) *tsigKey {
	if keys := s.transferKeys[origin]; len(keys) > 0 {
		return s.keys[keys[0]]
	}
	return nil
}

// ZoneStatus reports what SetZone served.
type ZoneStatus struct {
	// Serial is the zone's SOA serial after the call.
	Serial uint32
	// Changed says whether the content changed (and so the serial moved and secondaries were told).
	Changed bool
	// Skipped describes endpoints and record sets left out, and why; the rest of the zone is served.
	Skipped []string
	// Refused holds the same descriptions by the name of the Source they came from.
	Refused map[string][]string
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
	snap, refused, err := buildZone(origin, data, serial, s.nsAddrs, s.maxTTL)
	if err != nil {
		if entry != nil {
			entry.stats.buildsFailed.Add(1)
		}
		return ZoneStatus{}, err
	}
	if err := s.setExport(origin, data.Export, data.Nameservers); err != nil {
		return ZoneStatus{}, err
	}
	table = *s.zones.Load()
	status := ZoneStatus{Serial: serial, Changed: true, Skipped: refused.all, Refused: refused.bySource}
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
	entry.stats.buildsOK.Add(1)
	entry.stats.refusals.Store(int64(len(refused.all)))
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
	_ = s.setExport(origin, nil, nil)
	s.removeEntry(string(key))
}

// removeEntry takes a zone (or export) out of the table. Called with s.mu held.
func (s *Server) removeEntry(key string) {
	table := *s.zones.Load()
	entry := table[key]
	if entry == nil {
		return
	}
	close(entry.removed)
	next := make(zoneTable, len(table))
	for k, v := range table {
		if k != key {
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
func (s *Server) findZone(lname []byte) *zoneEntry {
	table := *s.zones.Load()
	for off := 0; off < len(lname); off += int(lname[off]) + 1 {
		if e := table[string(lname[off:])]; e != nil {
			return e
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
		func() {
			// A round that panics is logged and counted; the next change starts another.
			defer goroutine.Recover(goroutine.DNSServer, s.log.WithValues("zone", snap.origin), nil)
			defer cancel()
			s.notify(ctx, e.wake, snap.origin, snap.soaRR, secondaries)
		}()
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
	udp, tcp, err := listen(s.addr, runtime.GOMAXPROCS(0))
	if err != nil {
		return err
	}
	s.udp, s.tcp, s.conns, s.perSource, s.started = udp, tcp, map[net.Conn]struct{}{}, map[netip.Addr]int{}, true
	if s.geoPath != "" && s.geoInterval > 0 {
		s.wg.Add(1)
		go s.watchGeo()
	}
	// One reader per CPU, each on its own socket (SO_REUSEPORT: the kernel spreads clients over
	// them), with its own buffers: answering needs no coordination, not even on a socket's queue.
	for _, c := range udp {
		s.wg.Add(1)
		go s.serveUDP(c)
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

// Addr returns the address the server listens on, once started.
func (s *Server) Addr() netip.AddrPort {
	s.netMu.Lock()
	defer s.netMu.Unlock()
	if len(s.udp) == 0 {
		return netip.AddrPort{}
	}
	return s.udp[0].LocalAddr().(*net.UDPAddr).AddrPort()
}

// Shutdown stops listening, closes open connections and NOTIFY rounds, and waits for them to end or
// ctx to expire. The server cannot be started again.
func (s *Server) Shutdown(ctx context.Context) error {
	s.cancel()
	s.netMu.Lock()
	var errs []error
	for i, c := range s.udp {
		if i == 0 || c != s.udp[0] {
			errs = append(errs, c.Close())
		}
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
			answer := r.handleUDP(in[i].Buffers[0][:in[i].N])
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
