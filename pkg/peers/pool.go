package peers

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/goroutine"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
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
