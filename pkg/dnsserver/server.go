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
	"errors"
	"fmt"
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

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

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
	// DNSSECCacheBytes bounds, per signed zone, the signatures kept for answers that depend on the
	// query name (denials of names that do not exist, wildcard answers); default
	// DefaultDNSSECCacheBytes. The signatures of the zone's own sets are kept beside them and are
	// bounded by the zone.
	DNSSECCacheBytes int
	// Now is the clock for serials, TSIG and DNSSEC signatures; default time.Now.
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
	sigCacheBytes int
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
		sigCacheBytes:  cmp.Or(opts.DNSSECCacheBytes, DefaultDNSSECCacheBytes),
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
	if err := s.readNameserverAddresses(opts.NameserverAddresses); err != nil {
		return nil, err
	}
	if err := s.readKeys(opts); err != nil {
		return nil, err
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

// readNameserverAddresses reads the addresses of the zones' nameserver names (Options.NameserverAddresses),
// by canonical name, in normal form and without duplicates.
func (s *Server) readNameserverAddresses(byName map[string][]netip.Addr) error {
	s.nsAddrs = map[string][]netip.Addr{}
	for name, addrs := range byName {
		ns, err := canonicalName(name)
		if err != nil {
			return fmt.Errorf("nameserver address of %q: %w", name, err)
		}
		for _, a := range addrs {
			if !a.IsValid() || a.Zone() != "" {
				return fmt.Errorf("nameserver %s: %q is not an address", name, a)
			}
			if a = a.Unmap(); !slices.Contains(s.nsAddrs[ns], a) {
				s.nsAddrs[ns] = append(s.nsAddrs[ns], a)
			}
		}
	}
	return nil
}

// readKeys reads the TSIG keys, and which of them may transfer each zone and each export
// (Options.TransferKeys, Options.Exports); an export also admits its prefixes.
func (s *Server) readKeys(opts Options) error {
	for _, k := range opts.TSIGKeys {
		key, err := newTSIGKey(k)
		if err != nil {
			return err
		}
		if s.keys[key.name] != nil {
			return fmt.Errorf("TSIG key %q is given twice", k.Name)
		}
		s.keys[key.name] = key
	}
	for zone, names := range opts.TransferKeys {
		origin, err := canonicalName(zone)
		if err != nil {
			return fmt.Errorf("transfer keys of zone %q: %w", zone, err)
		}
		for _, name := range names {
			key := dns.CanonicalName(name)
			if s.keys[key] == nil {
				return fmt.Errorf("zone %s: transfer key %q is not one of the TSIG keys", zone, name)
			}
			if !slices.Contains(s.transferKeys[origin], key) {
				s.transferKeys[origin] = append(s.transferKeys[origin], key)
			}
		}
	}
	for zone, access := range opts.Exports {
		origin, err := canonicalName(zone)
		if err != nil {
			return fmt.Errorf("export of zone %q: %w", zone, err)
		}
		export := ExportName(origin)
		for _, name := range access.Keys {
			key := dns.CanonicalName(name)
			if s.keys[key] == nil {
				return fmt.Errorf("zone %s: export key %q is not one of the TSIG keys", zone, name)
			}
			if !slices.Contains(s.transferKeys[export], key) {
				s.transferKeys[export] = append(s.transferKeys[export], key)
			}
		}
		for _, p := range access.Prefixes {
			s.exportPrefixes[export] = append(s.exportPrefixes[export], p.Masked())
		}
	}
	return nil
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
		if snap.signing != nil {
			snap.signing.attach(&entry.stats, s.log, s.sigCacheBytes)
		}
		next := make(zoneTable, len(table)+1)
		for k, v := range table {
			next[k] = v
		}
		next[string(key)] = entry
		entry.stats.ensureGeo(snap.geoSlots)
		entry.snap.Store(snap)
		s.zones.Store(&next)
	} else if status.Changed {
		if snap.signing != nil {
			snap.signing.attach(&entry.stats, s.log, s.sigCacheBytes)
		}
		// The counters of its geo codes exist before a query can reach the new content.
		entry.stats.ensureGeo(snap.geoSlots)
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
