// Package peers lets the embedded DNS servers of several clusters serve one zone with the same
// answers, learning about each other over DNS alone: each server exports what its own cluster
// publishes (dnsserver.Export), pulls the exports of the others by zone transfer (Pool), refuses
// those it cannot trust, and merges them with its own (Merge) by the rules the engine applies to a
// zone shared in a cloud (package plan), so that every server computes the same zone.
package peers

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnsserver"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/pkg/plan"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// Contribution is one cluster's export as a merge takes it.
type Contribution struct {
	// Cluster names the cluster (its lease key).
	Cluster string
	// Changed is when the cluster's content last changed (by its clock).
	Changed time.Time
	// Endpoints are its records and ownership TXTs (its lease record is left out of the merge).
	Endpoints []*v1alpha1.Endpoint
	// Expired: the cluster is gone (its export could not be pulled, or its lease stopped changing,
	// for longer than its lease). Its owners are withdrawn wherever a live owner still claims.
	Expired bool
}

// Merged is a zone merged from the contributions of every cluster.
type Merged struct {
	// Endpoints are the zone's records and ownership TXTs, sorted.
	Endpoints []*v1alpha1.Endpoint
	// Changed stands for the contributions' Changed as one time: serialBase plus the sum of each
	// one's time since serialBase. The zone's serial is its Unix time (dnsserver.ZoneData.Changed),
	// so servers that merged the same exports serve the same serial, whatever order they pulled them
	// in, and it grows whenever an export changes or joins.
	Changed time.Time
	// Owners are the owners merged, sorted; Withdrawn those of expired clusters whose claims live
	// owners withdrew.
	Owners, Withdrawn []string
	// Dropped says, by owner, why an owner's wishes were left out: they cannot be planned (an
	// invalid wish), or another cluster that comes first claims the owner too.
	Dropped map[string]string
}

// ErrUnsettled is returned when a second pass over the owners still changes the zone: the rules
// did not reach a fixed point, which is a bug in them. The zone of the last pass is returned too.
var ErrUnsettled = errors.New("the merged zone does not settle")

// serialBase is where the merged zone's time (Merged.Changed) counts from: 2020-01-01 UTC. Sums
// of times since then wrap around 32 bits as serials may (RFC 1982): each change adds far less than 2^31.
var serialBase = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// settleRounds bounds the passes after the first one.
const settleRounds = 3

// owner is one owner's wishes, as the contributions say.
type owner struct {
	id, cluster string
	expired     bool
	wishes      []*v1alpha1.Endpoint
	published   []*v1alpha1.Endpoint
}

// Merge folds the contributions into one zone, each owner's wishes planned with package plan as an
// owner of a cloud zone would plan them, against a zone that starts with the records nobody owns.
//
// An owner's wish for a record is what its claim states, or, for a claim that does not say (the
// value Kuadrant writes, which we write where a cluster is alone), the record as its cluster
// exports it. The owners of expired clusters are planned first, then the live ones, each group in
// owner order, the live ones with the expired owners as plan.Input.Expired: they withdraw them
// wherever they still claim, and a name only expired owners hold keeps its records. A second pass
// over the live owners must change nothing. The result depends on the set of contributions only,
// not on their order, apart from which of two clusters claiming one owner comes first (the caller
// refuses such exports, see Pool); so every server merging the same exports serves the same zone.
func Merge(zone string, contributions []Contribution) (*Merged, error) {
	zone = v1alpha1.NormalizeName(zone)
	out := &Merged{Dropped: map[string]string{}}
	owners, unowned, sum := collect(contributions, out.Dropped)
	ids := make([]string, 0, len(owners))
	var expired []string
	for id, o := range owners {
		ids = append(ids, id)
		if o.expired {
			expired = append(expired, id)
		}
	}
	slices.Sort(expired)
	// Expired owners first, then live ones, each in owner order.
	slices.SortFunc(ids, func(a, b string) int {
		return cmp.Or(-cmp.Compare(btoi(owners[a].expired), btoi(owners[b].expired)), strings.Compare(a, b))
	})
	clusterOf := func(id string) string {
		if o := owners[id]; o != nil {
			return o.cluster
		}
		return ""
	}
	z := registry.Read(unowned)
	step := func(o *owner) (changed bool, err error) {
		in := plan.Input{
			OwnerID:  o.id,
			ZoneName: zone,
			Zone:     z,
			Previous: o.published,
			Desired:  o.wishes,
			Local:    func(other string) bool { return clusterOf(other) == o.cluster },
		}
		if !o.expired {
			in.Expired = expired
		}
		res, err := plan.Plan(in)
		if err != nil {
			return false, err
		}
		if err := z.Apply(res.Changes); err != nil {
			return false, err
		}
		o.published = res.Published
		for _, w := range res.Withdrawn {
			if !slices.Contains(out.Withdrawn, w) {
				out.Withdrawn = append(out.Withdrawn, w)
			}
		}
		return !res.Changes.Empty(), nil
	}
	var merged []string
	for _, id := range ids {
		if _, dropped := out.Dropped[id]; dropped && len(owners[id].wishes) == 0 {
			continue
		}
		if _, err := step(owners[id]); err != nil {
			out.Dropped[id] = err.Error()
			continue
		}
		merged = append(merged, id)
	}
	var unsettled error
	for round := 0; round < settleRounds; round++ {
		unsettled = nil
		for _, id := range merged {
			o := owners[id]
			if o.expired {
				continue
			}
			changed, err := step(o)
			if err != nil {
				return nil, fmt.Errorf("owner %s, pass %d: %w", id, round+2, err)
			}
			if changed && unsettled == nil {
				unsettled = fmt.Errorf("%w: owner %s still changes it in pass %d", ErrUnsettled, id, round+2)
			}
		}
		if unsettled == nil {
			break
		}
	}
	out.Changed = serialBase.Add(time.Duration(sum) * time.Second)
	out.Owners = merged
	slices.Sort(out.Withdrawn)
	out.Endpoints = endpointsOf(z)
	return out, unsettled
}

// collect reads every contribution's records, in cluster order: the records nobody owns, and each
// owner's wishes. An owner claimed by two clusters keeps the first's claims; the second's are
// dropped (told in dropped). sum adds up the contributions' changes, in seconds since serialBase.
func collect(contributions []Contribution, dropped map[string]string) (owners map[string]*owner, unowned []*v1alpha1.Endpoint, sum int64) {
	owners = map[string]*owner{}
	sorted := slices.Clone(contributions)
	slices.SortStableFunc(sorted, func(a, b Contribution) int { return strings.Compare(a.Cluster, b.Cluster) })
	for _, c := range sorted {
		if c.Changed.After(serialBase) {
			sum += int64(c.Changed.Sub(serialBase) / time.Second)
		}
		z := registry.Read(withoutLeases(c.Endpoints))
		seen := map[string]bool{}
		for _, r := range z.Records() {
			if !r.Owned() {
				unowned = append(unowned, r.Endpoint)
				continue
			}
			for _, claim := range r.Claims {
				o := owners[claim.Owner]
				if o == nil {
					o = &owner{id: claim.Owner, cluster: c.Cluster, expired: c.Expired}
					owners[claim.Owner] = o
				} else if o.cluster != c.Cluster {
					if !seen[claim.Owner] {
						dropped[claim.Owner] = fmt.Sprintf("claimed by clusters %s and %s: only %s's claims are merged", o.cluster, c.Cluster, o.cluster)
					}
					seen[claim.Owner] = true
					continue
				}
				wish := claim.Wish
				if wish == nil {
					wish = r.Endpoint
				}
				if wish != nil && !slices.ContainsFunc(o.wishes, func(e *v1alpha1.Endpoint) bool { return e.Key() == wish.Key() }) {
					o.wishes = append(o.wishes, wish)
				}
			}
		}
	}
	return owners, unowned, sum
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// withoutLeases leaves out lease records: a merged zone is served to resolvers, and liveness is
// judged from the exports, not from the merged zone.
func withoutLeases(eps []*v1alpha1.Endpoint) []*v1alpha1.Endpoint {
	out := make([]*v1alpha1.Endpoint, 0, len(eps))
	for _, e := range eps {
		if e == nil {
			continue
		}
		if _, ok := lease.Parse(e); ok {
			continue
		}
		out = append(out, e)
	}
	return out
}

// endpointsOf lists every endpoint of a zone, ownership TXTs included, sorted.
func endpointsOf(z *registry.Zone) []*v1alpha1.Endpoint {
	seen := map[v1alpha1.EndpointKey]bool{}
	var out []*v1alpha1.Endpoint
	add := func(e *v1alpha1.Endpoint) {
		if e != nil && !seen[e.Key()] {
			seen[e.Key()] = true
			out = append(out, e)
		}
	}
	for _, r := range z.Records() {
		add(r.Endpoint)
		for _, c := range r.Claims {
			add(c.TXT)
		}
	}
	v1alpha1.SortEndpoints(out)
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
