package peers

import (
	"maps"
	"slices"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnsserver"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

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
