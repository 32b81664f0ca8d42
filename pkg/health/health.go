// Package health decides what an owner publishes for a host whose gateways are probed: which of its
// leaf addresses stay in the tree, and when it withdraws even its last one.
//
// Within one owner the rules are Kuadrant's: a leaf whose probe has not passed is left out as long as
// another leaf of the owner passes; when none passes the owner keeps what it published (fail-open),
// and a record that never published publishes nothing.
//
// Across owners it goes further. Each owner states in the zone whether any of its leaves for the host
// passes: an owner-named TXT record (registry.NamedRecordName, kind "health"), one per owner and
// host. An owner none of whose leaves passes withdraws them all, even its only one, while another
// owner of the host states, freshly and after this owner stated that it fails, that its leaves pass.
// When no owner passes, every owner keeps publishing (fail-open across the fleet). Nobody removes
// another owner's targets.
//
// Fresh means the reader saw the statement's value change within Expiry, by its own clock: clocks
// of different clusters are never compared. A passing owner renews its statement (a new value)
// every Renewal while another owner of the host states that it fails, which is exactly while
// someone may be withdrawn on its word; otherwise statements are written only when they change, and
// a statement nobody renews counts as unknown, never as passing.
package health

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// Kind is the kind of the owner-named record an owner states its health in.
const Kind = "health"

// MinRenewal is the shortest renewal period. A reader sees other owners' statements through views
// up to publish.Options.MaxAge (10 s) old, so renewing faster than that would not be seen as fresh
// any sooner.
const MinRenewal = 10 * time.Second

// ExpiryPeriods is how many renewal periods a statement stays fresh after its value last changed.
const ExpiryPeriods = 3

// TTL of the statement record: only controllers read it, through the provider's API.
const TTL = 60

// Renewal is the renewal period for probes run every interval.
func Renewal(interval time.Duration) time.Duration { return max(interval, MinRenewal) }

// State is what the probes of one leaf address say.
type State int

const (
	// Unknown: the probe has not reported yet.
	Unknown State = iota
	// Healthy: the probe passes.
	Healthy
	// Unhealthy: the probe failed more often in a row than its failure threshold allows.
	Unhealthy
)

// Leaves returns the leaf addresses of endpoints, sorted: the targets of A and AAAA records, and the
// targets of CNAMEs that name no record of the set (a gateway's hostname).
func Leaves(endpoints []*v1alpha1.Endpoint) []string {
	names := map[string]bool{}
	for _, ep := range endpoints {
		names[v1alpha1.NormalizeName(ep.DNSName)] = true
	}
	set := map[string]bool{}
	for _, ep := range endpoints {
		switch ep.RecordType {
		case v1alpha1.RecordTypeA, v1alpha1.RecordTypeAAAA:
			for _, t := range ep.Targets {
				set[t] = true
			}
		case v1alpha1.RecordTypeCNAME:
			for _, t := range ep.Targets {
				if !names[v1alpha1.NormalizeName(t)] {
					set[v1alpha1.NormalizeName(t)] = true
				}
			}
		}
	}
	out := make([]string, 0, len(set))
	for a := range set {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// Without returns endpoints without the leaf addresses in drop: those targets leave their records, a
// record left with no target goes, and so does every CNAME that pointed at a name left with no
// record (up the tree: a weighted CNAME to a gateway's A record, the geo CNAME above it when its geo
// holds nothing else of this owner, the host's CNAME when nothing is left). The input is not changed.
func Without(endpoints []*v1alpha1.Endpoint, drop map[string]bool) []*v1alpha1.Endpoint {
	if len(drop) == 0 {
		return endpoints
	}
	kept := make([]*v1alpha1.Endpoint, 0, len(endpoints))
	had := map[string]bool{}
	for _, ep := range endpoints {
		had[v1alpha1.NormalizeName(ep.DNSName)] = true
		out := ep
		if ep.RecordType == v1alpha1.RecordTypeA || ep.RecordType == v1alpha1.RecordTypeAAAA || ep.RecordType == v1alpha1.RecordTypeCNAME {
			targets := slices.DeleteFunc(slices.Clone(ep.Targets), func(t string) bool {
				return drop[t] || drop[v1alpha1.NormalizeName(t)]
			})
			if len(targets) == 0 {
				continue
			}
			if len(targets) != len(ep.Targets) {
				out = ep.DeepCopy()
				out.Targets = targets
			}
		}
		kept = append(kept, out)
	}
	// A CNAME to a name of the set that has no record left goes too, until nothing changes.
	for {
		left := map[string]bool{}
		for _, ep := range kept {
			left[v1alpha1.NormalizeName(ep.DNSName)] = true
		}
		n := len(kept)
		kept = slices.DeleteFunc(kept, func(ep *v1alpha1.Endpoint) bool {
			if ep.RecordType != v1alpha1.RecordTypeCNAME {
				return false
			}
			for _, t := range ep.Targets {
				if t := v1alpha1.NormalizeName(t); !had[t] || left[t] {
					return false
				}
			}
			return true
		})
		if len(kept) == n {
			return kept
		}
	}
}

// Statement is what an owner states about its leaves for a host.
type Statement struct {
	Owner   string
	Healthy bool
	// Renewal distinguishes renewals of the same statement: the writer's period number.
	Renewal int64
}

// value is the statement's TXT value. It is not in external-dns's format (no heritage), so
// Kuadrant's registry reads it as a plain TXT record, which it leaves alone.
func (s Statement) value() string {
	state := "unhealthy"
	if s.Healthy {
		state = "healthy"
	}
	return fmt.Sprintf(`"dnspolicy-health=1 owner=%s state=%s renewal=%d"`, s.Owner, state, s.Renewal)
}

// Record is the statement's owner-named record for host.
func (s Statement) Record(host string) *v1alpha1.Endpoint {
	return v1alpha1.NewEndpoint(RecordName(s.Owner, host), v1alpha1.RecordTypeTXT, TTL, s.value())
}

// RecordName is the name of ownerID's statement record for host.
func RecordName(ownerID, host string) string { return registry.NamedRecordName(Kind, ownerID, host) }

// Parse reads a statement record; false when ep is none.
func Parse(ep *v1alpha1.Endpoint) (Statement, bool) {
	if ep == nil || ep.RecordType != v1alpha1.RecordTypeTXT || len(ep.Targets) != 1 {
		return Statement{}, false
	}
	fields := strings.Fields(strings.Trim(ep.Targets[0], `"`))
	if len(fields) != 4 || fields[0] != "dnspolicy-health=1" {
		return Statement{}, false
	}
	var s Statement
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "owner":
			s.Owner = v
		case "state":
			s.Healthy = v == "healthy"
		case "renewal":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return Statement{}, false
			}
			s.Renewal = n
		}
	}
	return s, s.Owner != ""
}

// Tracker remembers since when each statement record read holds its value, by this process's clock,
// for each host that some reader (a record) reads in some zone. What it remembers follows the zone
// and its readers: a statement a read no longer finds is forgotten (Peers), and a host's statements
// are forgotten when its last reader leaves (Forget) or reads another host or zone (Read).
type Tracker struct {
	mu sync.Mutex
	// hosts are the sightings of each host's statements, by zone key and host.
	hosts map[hostKey]*registry.Sightings
	// readers are the host each reader reads.
	readers map[string]hostKey
}

type hostKey struct{ zoneKey, host string }

// Read notes that reader reads the statements about host in the zone zoneKey (it lets go of any
// other host it read) and returns their sightings, for Peers.
func (t *Tracker) Read(reader, zoneKey, host string) *registry.Sightings {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := hostKey{zoneKey, v1alpha1.NormalizeName(host)}
	if prev, ok := t.readers[reader]; ok && prev != k {
		t.forgetLocked(reader)
	}
	if t.hosts == nil {
		t.hosts, t.readers = map[hostKey]*registry.Sightings{}, map[string]hostKey{}
	}
	seen, ok := t.hosts[k]
	if !ok {
		seen = &registry.Sightings{}
		t.hosts[k] = seen
	}
	t.readers[reader] = k
	return seen
}

// Forget notes that reader is gone: the statements of its host are forgotten when no other reader
// reads them.
func (t *Tracker) Forget(reader string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forgetLocked(reader)
}

func (t *Tracker) forgetLocked(reader string) {
	k, ok := t.readers[reader]
	if !ok {
		return
	}
	delete(t.readers, reader)
	for _, other := range t.readers {
		if other == k {
			return
		}
	}
	delete(t.hosts, k)
}

// Len returns how many hosts and readers the tracker remembers.
func (t *Tracker) Len() (hosts, readers int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.hosts), len(t.readers)
}

// fresh reports whether the value was seen changing within expiry of now. A value seen for the
// first time has no known age: it is not fresh until it changes, so a restarted controller
// withdraws no one on an old statement.
func fresh(s registry.Sighting, now time.Time, expiry time.Duration) bool {
	return s.Changed && now.Sub(s.Since) < expiry
}

// Peer is another owner of the host and its statement, as this owner reads the zone.
type Peer struct {
	Owner string
	// Stated is whether the zone holds a statement of the peer; Healthy and Fresh describe it, and
	// Since is when this process saw it take its value.
	Stated, Healthy, Fresh bool
	Since                  time.Time
}

// Input is what a decision depends on.
type Input struct {
	OwnerID string
	Host    string
	// Desired are the endpoints the owner wants with every leaf in.
	Desired []*v1alpha1.Endpoint
	// Probes holds the state of each probed leaf address. A leaf with no probe passes as long as
	// some leaf has one (Kuadrant's rule); with no probe at all, the probes are still being created.
	Probes map[string]State
	// Published is whether the owner has published anything for the host (status.endpoints).
	Published bool
	// Peers are the other owners of the host.
	Peers []Peer
	// Own is the owner's statement as the zone holds it, if any, and OwnSince when this process saw
	// it take its value (or first saw it).
	Own      *Statement
	OwnSince time.Time
	// Now and Renewal date renewals: the statement's Renewal is Now's period number.
	Now     time.Time
	Renewal time.Duration
}

// Decision is what the owner publishes.
type Decision struct {
	// Endpoints are the owner's endpoints to publish, its statement not included.
	Endpoints []*v1alpha1.Endpoint
	// Statement is what the owner states; nil when it publishes nothing at all.
	Statement *Statement
	// NotHealthy are the probed leaves that do not pass, sorted.
	NotHealthy []string
	// Probed is the number of leaves with a probe, Reported the number of those that have reported.
	Probed, Reported int
	// AnyHealthy is whether some leaf passes.
	AnyHealthy bool
	// Withdrawn: no leaf passes and every leaf is withdrawn, since HealthyPeer passes.
	Withdrawn   bool
	HealthyPeer string
	// NotPublishing: no leaf passes and nothing was published before, so nothing is.
	NotPublishing bool
}

// Decide applies the rules of the package.
func Decide(in Input) Decision {
	var d Decision
	leaves := Leaves(in.Desired)
	for _, leaf := range leaves {
		st, probed := in.Probes[leaf]
		switch {
		case probed:
			d.Probed++
			if st != Unknown {
				d.Reported++
			}
			if st == Healthy {
				d.AnyHealthy = true
			} else {
				d.NotHealthy = append(d.NotHealthy, leaf)
			}
		case len(in.Probes) > 0:
			d.AnyHealthy = true
		}
	}
	if d.AnyHealthy {
		drop := map[string]bool{}
		for _, a := range d.NotHealthy {
			drop[a] = true
		}
		d.Endpoints = Without(in.Desired, drop)
		d.Statement = in.statement(true)
		return d
	}
	// A peer's word counts once the zone says this owner fails, and the peer stated that it passes
	// after that (it renews on reading such a statement): two owners failing at the same moment each
	// still see the other's older statement that it passes, and neither may withdraw on it.
	if in.Own != nil && !in.Own.Healthy {
		for _, p := range in.Peers {
			if p.Stated && p.Healthy && p.Fresh && p.Since.After(in.OwnSince) {
				d.HealthyPeer = p.Owner
				break
			}
		}
	}
	switch {
	case !in.Published:
		d.NotPublishing = true
	case d.HealthyPeer != "":
		all := map[string]bool{}
		for _, a := range leaves {
			all[a] = true
		}
		d.Endpoints = Without(in.Desired, all)
		d.Withdrawn = true
		d.Statement = in.statement(false)
	default:
		d.Endpoints = in.Desired
		d.Statement = in.statement(false)
	}
	return d
}

// statement is the owner's statement: renewed (a new period number) while some peer states that it
// fails and this one passes, else the one in the zone when it says the same.
func (in Input) statement(healthy bool) *Statement {
	period := in.Now.UnixNano() / int64(max(in.Renewal, time.Second))
	renew := false
	if healthy {
		for _, p := range in.Peers {
			renew = renew || (p.Stated && !p.Healthy)
		}
	}
	if in.Own != nil && in.Own.Healthy == healthy && (!renew || in.Own.Renewal == period) {
		own := *in.Own
		return &own
	}
	return &Statement{Owner: in.OwnerID, Healthy: healthy, Renewal: period}
}

// Peers reads the other owners of host and their statements from z: the owners claiming records at
// host, which every owner of a loadbalanced or simple host does. seen are the sightings of the
// host's statements in this zone (Tracker.Read); those z no longer holds are forgotten.
func Peers(z *registry.Zone, seen *registry.Sightings, ownerID, host string, now time.Time, expiry time.Duration) (peers []Peer, own *Statement, ownSince time.Time) {
	found := map[string]bool{}
	defer func() { seen.Retain("", found) }()
	if ep := z.Endpoint(statementKey(ownerID, host)); ep != nil {
		if st, ok := Parse(ep); ok && st.Owner == ownerID {
			own, ownSince = &st, seen.Observe(ep.DNSName, ep.Targets[0], now).Since
			found[ep.DNSName] = true
		}
	}
	owners := map[string]bool{}
	for _, r := range z.AtName(v1alpha1.NormalizeName(host)) {
		for _, o := range r.Owners() {
			owners[o] = true
		}
	}
	delete(owners, ownerID)
	names := make([]string, 0, len(owners))
	for o := range owners {
		names = append(names, o)
	}
	sort.Strings(names)
	for _, o := range names {
		p := Peer{Owner: o}
		ep := z.Endpoint(statementKey(o, host))
		if st, ok := Parse(ep); ok && st.Owner == o {
			s := seen.Observe(ep.DNSName, ep.Targets[0], now)
			found[ep.DNSName] = true
			p.Stated, p.Healthy, p.Since = true, st.Healthy, s.Since
			p.Fresh = fresh(s, now, expiry)
		}
		peers = append(peers, p)
	}
	return peers, own, ownSince
}

func statementKey(ownerID, host string) v1alpha1.EndpointKey {
	return v1alpha1.EndpointKey{DNSName: RecordName(ownerID, host), RecordType: v1alpha1.RecordTypeTXT}
}
