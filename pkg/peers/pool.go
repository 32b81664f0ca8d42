package peers

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnsserver"
	"github.com/dnspolicy/dnspolicy-controller/pkg/goroutine"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// Defaults of a Pool.
const (
	DefaultInterval = 10 * time.Second
	DefaultTimeout  = 5 * time.Second
)

// Options configure a Pool.
type Options struct {
	// Peers are the other clusters' servers, per zone.
	Peers []Peer
	// Discover finds more peers, per zone, in the NS set delegating the zone, asked again every
	// DiscoverInterval (DefaultDiscoverInterval). A discovered peer leaves when the NS set no longer
	// names it; a lookup that fails changes nothing.
	Discover         []Discovery
	DiscoverInterval time.Duration
	// Own are addresses (host:port) of this cluster's server: found in an NS set, they are this
	// cluster's own, never pulled. Behind other addresses (a load balancer's, NAT) its own server
	// is recognised by its export, which names this cluster.
	Own []string
	// Interval between two pulls of one peer (DefaultInterval); each pull is bounded by Timeout
	// (DefaultTimeout), MaxRecords (DefaultMaxRecords) and MaxBytes (DefaultMaxBytes). A pull
	// over a bound fails, and the peer's last good export is kept.
	Interval, Timeout time.Duration
	MaxRecords        int
	MaxBytes          int64
	// Duration is how long a peer whose export carries no lease, or a lease that never expires,
	// may go unpulled before it counts as gone (lease.DefaultDuration).
	Duration time.Duration
	// Tolerance is added to every lease's duration (lease.DefaultTolerance).
	Tolerance time.Duration
	// Changed is called, from a puller's goroutine, when what a zone merges changed: an export
	// accepted with new content, a peer turning stale or fresh, or refused.
	Changed func(zone string)
	// Now is the clock (time.Now).
	Now func() time.Time
	Log logr.Logger
}

// Pool pulls every peer's export on a goroutine of its own, keeps the last good one, and judges
// each peer's liveness on this reader's clock (package lease). A peer that does not resolve, does
// not answer or answers slowly delays no other peer. Merge merges a zone from this cluster's export
// and the peers'.
type Pool struct {
	opts  Options
	mu    sync.Mutex
	judge lease.Judge
	peers []*peerState
	// discoveries counts the lookups of each zone's NS set, by result ("ok" or "failed").
	discoveries map[string]map[string]uint64
	// local is, by zone, this cluster's lease key and owners, as its last export said.
	local map[string]localState
	// merged is, by zone, the last merge.
	merged map[string]lastMerge
	// holders are, by zone, the peer holding each owner and cluster name its merged export claims:
	// the first to claim one keeps it, and a later claimer is refused (see Merge).
	holders map[string]map[claim]*peerState
}

// claim is what a peer's export claims alone among the peers: an owner, or its cluster's name.
type claim struct {
	cluster bool
	id      string
}

func (c claim) String() string {
	if c.cluster {
		return "names cluster " + c.id
	}
	return "claims owner " + c.id
}

type localState struct {
	cluster string
	owners  map[string]bool
}

type peerState struct {
	peer Peer
	// discovered: found in the zone's NS set, not configured; stop ends its puller when the NS
	// set no longer names it.
	discovered bool
	stop       context.CancelFunc
	// self: a discovered server whose export names this cluster, this cluster's own server.
	self bool
	// last is the last export accepted, at lastOK.
	last   *Pulled
	lastOK time.Time
	owners map[string]bool
	// err is the last pull's error, nil after a good one.
	err   error
	stale bool
	// left: the last merge left its accepted export out for what it claims.
	left  bool
	pulls map[string]uint64 // by result: "ok" or a Reason
}

// New makes a pool; Run pulls.
func New(opts Options) *Pool {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Duration <= 0 {
		opts.Duration = lease.DefaultDuration
	}
	if opts.Tolerance <= 0 {
		opts.Tolerance = lease.DefaultTolerance
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Changed == nil {
		opts.Changed = func(string) {}
	}
	if opts.DiscoverInterval <= 0 {
		opts.DiscoverInterval = DefaultDiscoverInterval
	}
	p := &Pool{opts: opts, local: map[string]localState{}, merged: map[string]lastMerge{}, discoveries: map[string]map[string]uint64{},
		holders: map[string]map[claim]*peerState{}}
	p.judge.Tolerance = opts.Tolerance
	for _, peer := range opts.Peers {
		peer.Zone = v1alpha1.NormalizeName(peer.Zone)
		p.peers = append(p.peers, &peerState{peer: peer, pulls: map[string]uint64{}})
	}
	for i := range p.opts.Discover {
		p.opts.Discover[i].Zone = v1alpha1.NormalizeName(p.opts.Discover[i].Zone)
	}
	return p
}

// Zones lists the zones that have peers, configured or to be discovered.
func (p *Pool) Zones() []string {
	var zones []string
	for _, st := range p.peers {
		if !slices.Contains(zones, st.peer.Zone) {
			zones = append(zones, st.peer.Zone)
		}
	}
	for _, d := range p.opts.Discover {
		if !slices.Contains(zones, d.Zone) {
			zones = append(zones, d.Zone)
		}
	}
	slices.Sort(zones)
	return zones
}

// HasPeers says whether a zone has peers.
func (p *Pool) HasPeers(zone string) bool {
	return slices.Contains(p.Zones(), v1alpha1.NormalizeName(zone))
}

// Run pulls every peer until ctx ends: the first pull at once, then every Interval (±10%). It
// looks up the NS sets of Options.Discover at once, then every DiscoverInterval, and pulls the
// peers found from then on.
func (p *Pool) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	p.mu.Lock()
	for _, st := range p.peers {
		p.start(ctx, &wg, st)
	}
	p.mu.Unlock()
	for _, d := range p.opts.Discover {
		wg.Go(func() {
			for {
				p.discoverRecovering(ctx, &wg, d)
				select {
				case <-ctx.Done():
					return
				case <-time.After(p.opts.DiscoverInterval):
				}
			}
		})
	}
	wg.Wait()
	return nil
}

// start runs a peer's puller on wg until ctx ends or the peer leaves. Called with p.mu held.
func (p *Pool) start(ctx context.Context, wg *sync.WaitGroup, st *peerState) {
	ctx, st.stop = context.WithCancel(ctx)
	wg.Go(func() {
		for {
			p.pullRecovering(ctx, st.peer)
			jitter := time.Duration(rand.Int64N(int64(p.opts.Interval)/5+1)) - p.opts.Interval/10
			select {
			case <-ctx.Done():
				return
			case <-time.After(p.opts.Interval + jitter):
			}
		}
	})
}

// pullRecovering is PullOnce in a puller: a pull that panics is logged and counted (package
// goroutine), and the peer is pulled again at the next interval, as after a failed pull.
func (p *Pool) pullRecovering(ctx context.Context, peer Peer) {
	defer goroutine.Recover(goroutine.Peers, p.opts.Log.WithValues("zone", peer.Zone, "peer", peer.Addr), nil)
	p.PullOnce(ctx, peer)
}

// discoverRecovering is DiscoverOnce in a discoverer: a lookup that panics is logged and counted,
// and looked up again at the next DiscoverInterval.
func (p *Pool) discoverRecovering(ctx context.Context, wg *sync.WaitGroup, d Discovery) {
	defer goroutine.Recover(goroutine.Peers, p.opts.Log.WithValues("zone", d.Zone), nil)
	p.DiscoverOnce(ctx, wg, d)
}

// DiscoverOnce looks up d's NS set now: a server it names that is no peer yet becomes one (pulled
// on wg until ctx ends), a discovered peer it no longer names leaves, and its export leaves the
// merge. A failed lookup is logged and counted and changes nothing: the peers found before are
// kept, so that a parent that cannot be reached withdraws no cluster.
func (p *Pool) DiscoverOnce(ctx context.Context, wg *sync.WaitGroup, d Discovery) {
	addrs, skipped, err := Lookup(ctx, d, p.opts.Timeout)
	if ctx.Err() != nil {
		return
	}
	p.mu.Lock()
	if p.discoveries[d.Zone] == nil {
		p.discoveries[d.Zone] = map[string]uint64{}
	}
	if err != nil {
		p.discoveries[d.Zone]["failed"]++
		p.mu.Unlock()
		p.opts.Log.Error(err, "looking up a zone's peers in its NS set; the peers found before are kept", "zone", d.Zone)
		return
	}
	p.discoveries[d.Zone]["ok"]++
	var added, removed []string
	kept := p.peers[:0]
	for _, st := range p.peers {
		if st.discovered && st.peer.Zone == d.Zone && !slices.Contains(addrs, st.peer.Addr) {
			st.stop()
			p.release(st)
			removed = append(removed, st.peer.Addr)
			continue
		}
		kept = append(kept, st)
	}
	clear(p.peers[len(kept):])
	p.peers = kept
	for _, addr := range addrs {
		if p.state(Peer{Zone: d.Zone, Addr: addr}) != nil {
			continue
		}
		st := &peerState{peer: Peer{Zone: d.Zone, Addr: addr, Key: d.Key}, discovered: true, pulls: map[string]uint64{}}
		p.peers = append(p.peers, st)
		if slices.Contains(p.opts.Own, addr) {
			st.self, st.stop = true, func() {}
			continue
		}
		p.start(ctx, wg, st)
		added = append(added, addr)
	}
	p.mu.Unlock()
	if len(skipped) > 0 {
		p.opts.Log.Info("servers of a zone's NS set do not resolve; the others are peers", "zone", d.Zone, "unresolved", skipped)
	}
	if len(added) > 0 || len(removed) > 0 {
		p.opts.Log.Info("the zone's NS set changed its peers", "zone", d.Zone, "added", added, "removed", removed)
	}
	if len(removed) > 0 {
		p.opts.Changed(d.Zone)
	}
}

// PullOnce pulls one peer now and takes in what it got.
func (p *Pool) PullOnce(ctx context.Context, peer Peer) {
	var have uint32
	p.mu.Lock()
	if st := p.state(peer); st != nil && st.last != nil && st.err == nil {
		have = st.last.Serial
	}
	p.mu.Unlock()
	pulled, err := Pull(ctx, peer, p.opts.Timeout, p.opts.MaxRecords, p.opts.MaxBytes, have)
	if ctx.Err() != nil {
		return
	}
	p.take(peer, pulled, err)
}

func (p *Pool) state(peer Peer) *peerState {
	for _, st := range p.peers {
		if st.peer.Zone == v1alpha1.NormalizeName(peer.Zone) && st.peer.Addr == peer.Addr {
			return st
		}
	}
	return nil
}

// take judges a pull: it refuses an export that claims owners or a lease of this cluster, or what
// another peer holds, keeps the last good export otherwise, and tells Changed when the zone's merge
// changes.
func (p *Pool) take(peer Peer, pulled *Pulled, err error) {
	now := p.opts.Now()
	p.mu.Lock()
	st := p.state(peer)
	if st == nil {
		p.mu.Unlock()
		return
	}
	var owners map[string]bool
	if err == nil && pulled.Unchanged {
		if st.last == nil || st.last.Serial != pulled.Serial {
			err = failed(ReasonGarbage, "the peer says serial %d is current, which is not the export held", pulled.Serial)
		} else {
			pulled, owners = st.last, st.owners
		}
	} else if err == nil {
		if st.discovered && p.isSelf(st, pulled.Export) {
			changed := st.last != nil
			p.markSelf(st)
			p.mu.Unlock()
			if changed {
				p.opts.Changed(peer.Zone)
			}
			return
		}
		owners, err = p.check(st, pulled.Export)
	}
	changed := false
	hadErr := st.err
	if err != nil {
		st.pulls[ReasonOf(err)]++
		st.err = err
		if hadErr == nil || hadErr.Error() != err.Error() {
			p.opts.Log.Error(err, "pulling a peer's export", "zone", peer.Zone, "peer", peer.Addr, "reason", ReasonOf(err))
		}
	} else {
		st.pulls["ok"]++
		if hadErr != nil {
			p.opts.Log.Info("pulling a peer's export again", "zone", peer.Zone, "peer", peer.Addr, "cluster", pulled.Export.Cluster)
		}
		changed = st.last == nil || st.last.Serial != pulled.Serial || hadErr != nil
		st.err, st.last, st.lastOK, st.owners = nil, pulled, now, owners
		// Seen at the pull, so that a lease's age counts from when it was pulled, not merged.
		p.expired(st, now)
	}
	if stale := p.expired(st, now); stale != st.stale {
		st.stale, changed = stale, true
		if stale {
			p.opts.Log.Info("peer is stale: its owners are withdrawn where live owners claim", "zone", peer.Zone, "peer", peer.Addr, "error", errText(st.err))
		}
	}
	p.mu.Unlock()
	if changed {
		p.opts.Changed(peer.Zone)
	}
}

// isSelf says whether an export is this cluster's own, as its last merge named it. Called with
// p.mu held.
func (p *Pool) isSelf(st *peerState, ex dnsserver.Export) bool {
	local, ok := p.local[st.peer.Zone]
	return ok && ex.Cluster != "" && ex.Cluster == local.cluster
}

// markSelf makes a discovered peer this cluster's own server: it stays listed, unpulled, so
// that the NS set does not make it a peer again. Called with p.mu held.
func (p *Pool) markSelf(st *peerState) {
	p.opts.Log.Info("a server of the zone's NS set is this cluster's own: not a peer", "zone", st.peer.Zone, "server", st.peer.Addr)
	st.self, st.last, st.err, st.stale = true, nil, nil, false
	st.stop()
	p.release(st)
}

// release forgets what a peer holds: it left, or turned out to be this cluster's own server.
// Called with p.mu held.
func (p *Pool) release(st *peerState) {
	maps.DeleteFunc(p.holders[st.peer.Zone], func(_ claim, h *peerState) bool { return h == st })
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// check refuses an export whose cluster, lease or owners are this cluster's, or that claims what
// another peer of the zone holds (claimed first, see Merge), and returns its owners. Called with
// p.mu held.
func (p *Pool) check(st *peerState, ex dnsserver.Export) (map[string]bool, error) {
	zone := st.peer.Zone
	owners := ownersOf(ex.Endpoints)
	for _, e := range ex.Endpoints {
		if l, ok := lease.Parse(e); ok && lease.Key(l.Holder) != ex.Cluster {
			return nil, failed(ReasonOwners, "the export of cluster %s holds the lease of cluster %s", ex.Cluster, lease.Key(l.Holder))
		}
	}
	local := p.local[zone]
	if ex.Cluster == local.cluster {
		return nil, failed(ReasonOwners, "the export names this cluster (%s)", ex.Cluster)
	}
	for o := range owners {
		if local.owners[o] {
			return nil, failed(ReasonOwners, "the export claims owner %s, which is this cluster's", o)
		}
	}
	for _, c := range claimsOf(ex.Cluster, owners) {
		if h := p.holders[zone][c]; h != nil && h != st && h.claims(c) {
			return nil, claimedFirst(c, h)
		}
	}
	return owners, nil
}

// claimsOf lists what an export claims, in a fixed order: its cluster, then its owners sorted.
func claimsOf(cluster string, owners map[string]bool) []claim {
	out := []claim{{cluster: true, id: cluster}}
	for _, o := range slices.Sorted(maps.Keys(owners)) {
		out = append(out, claim{id: o})
	}
	return out
}

// claims says whether the peer's accepted export claims c.
func (st *peerState) claims(c claim) bool {
	if st.last == nil {
		return false
	}
	if c.cluster {
		return st.last.Export.Cluster == c.id
	}
	return st.owners[c.id]
}

func claimedFirst(c claim, holder *peerState) error {
	return failed(ReasonClaimed, "the export %s, which peer %s claimed first", c, holder.peer.Addr)
}

// ownersOf lists the owners claiming records in endpoints.
func ownersOf(eps []*v1alpha1.Endpoint) map[string]bool {
	owners := map[string]bool{}
	for _, e := range eps {
		if e == nil || e.RecordType != v1alpha1.RecordTypeTXT {
			continue
		}
		if c, ok := registry.ParseTXT(e); ok {
			owners[c.Owner] = true
		} else if cs, ok := registry.ParseLegacyTXT(e); ok {
			for _, c := range cs {
				owners[c.Owner] = true
			}
		}
	}
	return owners
}

// expired judges a peer: gone when its lease stopped changing for its duration, or when it has not
// been pulled for that long (its export's lease, else Options.Duration). Called with p.mu held.
func (p *Pool) expired(st *peerState, now time.Time) bool {
	if st.last == nil {
		return false
	}
	duration := p.opts.Duration
	for _, e := range st.last.Export.Endpoints {
		l, ok := lease.Parse(e)
		if !ok || lease.Key(l.Holder) != st.last.Export.Cluster {
			continue
		}
		if v := p.judge.Judge(st.peer.String(), l, e, now); v.Expired {
			return true
		}
		if l.Duration > 0 {
			duration = l.Duration
		}
	}
	return now.Sub(st.lastOK) > duration+p.opts.Tolerance
}

// PeerStatus is what the pool knows of one peer.
type PeerStatus struct {
	Peer Peer
	// Cluster is the lease key its export names, "" before a good pull.
	Cluster string
	// LastPull is when its export was last pulled and accepted; zero for never.
	LastPull time.Time
	// Serial and Records are the accepted export's SOA serial and record count.
	Serial  uint32
	Records int
	// Stale: the peer counts as gone (its owners are withdrawn where a live owner claims).
	Stale bool
	// Refused: nothing of the peer is merged for what its export claims (Error says what): the
	// last merge left its export out, or none of its exports was ever accepted.
	Refused bool
	// Error is why the last pull failed, "" after a good one.
	Error string
	// Discovered: found in the zone's NS set, not configured.
	Discovered bool
}

// Status reports the peers of a zone, by address; this cluster's own server, found in the NS set,
// is none.
func (p *Pool) Status(zone string) []PeerStatus {
	zone = v1alpha1.NormalizeName(zone)
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []PeerStatus
	for _, st := range p.peers {
		if st.peer.Zone != zone || st.self {
			continue
		}
		s := PeerStatus{Peer: st.peer, LastPull: st.lastOK, Stale: st.stale, Error: errText(st.err), Discovered: st.discovered,
			Refused: st.left || st.last == nil && st.err != nil && (ReasonOf(st.err) == ReasonOwners || ReasonOf(st.err) == ReasonClaimed)}
		if st.last != nil {
			s.Cluster, s.Serial, s.Records = st.last.Export.Cluster, st.last.Serial, st.last.Records
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b PeerStatus) int { return strings.Compare(a.Peer.Addr, b.Peer.Addr) })
	return out
}

// Merge merges a zone from this cluster's export (local) and the last good export of each of its
// peers, each peer judged live or gone at now. It remembers local's cluster and owners: peers'
// exports that claim them are refused from then on.
func (p *Pool) Merge(zone string, local dnsserver.Export) (*Merged, error) {
	zone = v1alpha1.NormalizeName(zone)
	now := p.opts.Now()
	p.mu.Lock()
	localOwners := ownersOf(local.Endpoints)
	p.local[zone] = localState{cluster: local.Cluster, owners: localOwners}
	contributions := []Contribution{{Cluster: local.Cluster, Changed: local.Changed, Endpoints: local.Endpoints}}
	var candidates []*peerState
	for _, st := range p.peers {
		if st.peer.Zone != zone || st.last == nil {
			continue
		}
		// A discovered server pulled before this cluster's first merge may be this cluster's own.
		if st.discovered && p.isSelf(st, st.last.Export) {
			p.markSelf(st)
			continue
		}
		// An export accepted before this cluster claimed one of its owners is left out now.
		if ex := st.last.Export; ex.Cluster == local.Cluster || overlaps(st.owners, localOwners) {
			st.err, st.left = failed(ReasonOwners, "the export claims this cluster's owners or names it"), true
			continue
		}
		candidates = append(candidates, st)
	}
	for _, st := range p.claimFirst(zone, candidates) {
		st.stale = p.expired(st, now)
		contributions = append(contributions, Contribution{
			Cluster: st.last.Export.Cluster, Changed: st.last.Export.Changed, Endpoints: st.last.Export.Endpoints, Expired: st.stale,
		})
	}
	// Leases renew every period, and they are not merged: a merge of contributions that say they
	// have not changed since the last one (each one's time and liveness) is the last one's.
	key := mergeKey(contributions)
	if last, ok := p.merged[zone]; ok && last.key == key {
		p.mu.Unlock()
		return last.merged, nil
	}
	p.mu.Unlock()
	merged, err := Merge(zone, contributions)
	if err == nil {
		p.mu.Lock()
		p.merged[zone] = lastMerge{key: key, merged: merged}
		p.mu.Unlock()
	}
	return merged, err
}

// claimFirst decides which of the candidates (peers of zone with an accepted export) are merged:
// of peers whose exports claim one owner or name one cluster, the one that held it in the last
// merge keeps it, and among those that did not, the one whose export says it changed first (then
// the lower address) takes it, so that servers starting together choose alike. Every other
// claimer is refused whole, never part of it: an export is one cluster's view of its records and
// their claims, and one that claims what is not its cluster's is misconfigured or hostile, so none
// of it is trusted until it stops; the earlier one is never evicted. Called with p.mu held.
func (p *Pool) claimFirst(zone string, candidates []*peerState) []*peerState {
	slices.SortFunc(candidates, func(a, b *peerState) int {
		return cmp.Or(a.last.Export.Changed.Compare(b.last.Export.Changed), strings.Compare(a.peer.Addr, b.peer.Addr))
	})
	held := map[claim]*peerState{}
	for c, h := range p.holders[zone] {
		if slices.Contains(candidates, h) && h.claims(c) {
			held[c] = h
		}
	}
	var merged []*peerState
	for _, st := range candidates {
		cs := claimsOf(st.last.Export.Cluster, st.owners)
		i := slices.IndexFunc(cs, func(c claim) bool { h := held[c]; return h != nil && h != st })
		if i >= 0 {
			err := claimedFirst(cs[i], held[cs[i]])
			if errText(st.err) != err.Error() {
				// Counted once, as a pull refused; a pull the holder still blocks counts again.
				st.pulls[ReasonClaimed]++
				p.opts.Log.Info("a peer's export is refused: another peer claimed first what it claims", "zone", zone, "peer", st.peer.Addr, "reason", ReasonClaimed, "error", err.Error())
			}
			st.err, st.left = err, true
			continue
		}
		st.left = false
		for _, c := range cs {
			held[c] = st
		}
		merged = append(merged, st)
	}
	p.holders[zone] = held
	return merged
}

// PeerOwners are the owners the peers' exports merged in zone's last merge claim: statements this
// cluster exports for them would contradict their own.
func (p *Pool) PeerOwners(zone string) map[string]bool {
	zone = v1alpha1.NormalizeName(zone)
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]bool{}
	for c := range p.holders[zone] {
		if !c.cluster {
			out[c.id] = true
		}
	}
	return out
}

// lastMerge is a zone's last merge and what it was merged from.
type lastMerge struct {
	key    string
	merged *Merged
}

// mergeKey identifies the contributions of a merge by each one's cluster, time and liveness: a
// cluster's export time moves with every change of its records (not of its lease).
func mergeKey(contributions []Contribution) string {
	parts := make([]string, len(contributions))
	for i, c := range contributions {
		parts[i] = fmt.Sprintf("%s/%d/%t/%d", c.Cluster, c.Changed.Unix(), c.Expired, len(c.Endpoints))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func overlaps(a, b map[string]bool) bool {
	for k := range a {
		if b[k] {
			return true
		}
	}
	return false
}

// Metrics.
var (
	descPulls = prometheus.NewDesc("dnspolicy_peer_pulls_total",
		"Pulls of peers' exports, by zone, peer and result (ok, or the reason it failed: unreachable, refused, tsig, garbage, owners, claimed; an export refused at the merge for claimed counts once more).",
		[]string{"zone", "peer", "result"}, nil)
	descLastPull = prometheus.NewDesc("dnspolicy_peer_last_pull_timestamp_seconds",
		"When a peer's export was last pulled and accepted (Unix time; absent before the first).", []string{"zone", "peer"}, nil)
	descSerial = prometheus.NewDesc("dnspolicy_peer_serial",
		"The SOA serial of a peer's last accepted export.", []string{"zone", "peer"}, nil)
	descRecords = prometheus.NewDesc("dnspolicy_peer_records",
		"Records in a peer's last accepted export.", []string{"zone", "peer"}, nil)
	descStale = prometheus.NewDesc("dnspolicy_peer_stale",
		"1 while a peer counts as gone (its export not pulled, or its lease not changing, for its lease duration).", []string{"zone", "peer"}, nil)
	descDiscoveries = prometheus.NewDesc("dnspolicy_peer_discoveries_total",
		"Lookups of a zone's NS set for its peers, by result (ok, failed).", []string{"zone", "result"}, nil)
)

// Collector exports the pool's metrics.
func (p *Pool) Collector() prometheus.Collector { return collector{p} }

type collector struct{ p *Pool }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPulls, descLastPull, descSerial, descRecords, descStale, descDiscoveries} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	for _, d := range c.p.opts.Discover {
		for _, result := range []string{"ok", "failed"} {
			ch <- prometheus.MustNewConstMetric(descDiscoveries, prometheus.CounterValue, float64(c.p.discoveries[d.Zone][result]), d.Zone, result)
		}
	}
	for _, st := range c.p.peers {
		if st.self {
			continue
		}
		zone, addr := st.peer.Zone, st.peer.Addr
		for _, result := range []string{"ok", ReasonUnreachable, ReasonRefused, ReasonTSIG, ReasonGarbage, ReasonOwners, ReasonClaimed} {
			ch <- prometheus.MustNewConstMetric(descPulls, prometheus.CounterValue, float64(st.pulls[result]), zone, addr, result)
		}
		stale := 0.0
		if st.stale {
			stale = 1
		}
		ch <- prometheus.MustNewConstMetric(descStale, prometheus.GaugeValue, stale, zone, addr)
		if st.last != nil {
			ch <- prometheus.MustNewConstMetric(descLastPull, prometheus.GaugeValue, float64(st.lastOK.UnixNano())/1e9, zone, addr)
			ch <- prometheus.MustNewConstMetric(descSerial, prometheus.GaugeValue, float64(st.last.Serial), zone, addr)
			ch <- prometheus.MustNewConstMetric(descRecords, prometheus.GaugeValue, float64(st.last.Records), zone, addr)
		}
	}
}
