// Package plan computes the one batch of changes that takes a zone shared by several owners
// (clusters) from what it holds to what one owner wants, without taking anything from the others.
//
//	Plan(Input{OwnerID, ZoneName, Current, Previous, Desired, Expired}) -> Result{Changes, Published, Conflicts, Owners}
//
// Current is the whole zone as the provider returns it, ownership TXTs included; Desired is what
// this owner wants now (empty to withdraw everything); Previous is what it published last time
// (DNSRecord status.endpoints). Result.Changes holds the record and ownership-TXT changes for the
// zone in one batch, to be checked by registry.Zone.Check and applied all or nothing.
//
// Every owner computes the state of a name from the claims in the zone alone (see package registry:
// each owner's TXT says what it wants), so all owners reach the same answer and the zone settles:
//
//   - A record key nobody claims is created, with this owner's TXT.
//   - A, AAAA and NS records, and CNAMEs that some claimant wants with several targets, hold the
//     union of their claimants' targets. A record goes when its last claimant leaves.
//   - Everything single-valued (a CNAME's target, every TTL, a set's routing properties) keeps the
//     value published while its incumbent still wants it: a live owner that claimed the record
//     before the plan and wants exactly that value (an owner whose claim does not say what it wants
//     is presumed to want the record as published, where no claim that says, live or gone, explains
//     the value). A newcomer cannot take a value by choosing a low
//     owner ID. Only where there is no incumbent (first publication; the incumbent left, expired or
//     changed its wish) does the wish of the claimant with the lowest owner ID win. The incumbent is
//     read from the zone, so every owner picks the same. Losers publish the winner's value too, keep
//     their claim, and get a Conflict; when the winner leaves, the next claimant's wish is published
//     by whoever plans next, at the latest by the leaving winner itself.
//   - A CNAME cannot share its name. Where owners want a CNAME and other types at one name, the
//     kind (CNAME, or A/AAAA/NS) already published stays while an incumbent holds one of its records;
//     otherwise the lowest claimant's kind is published. The other kind's records go, their claims
//     stay, and their owners get a "recordType" Conflict.
//   - A record without any ownership TXT is a human's (or another tool's): it is never changed,
//     deleted, claimed or shadowed. A wish that collides with one is not written and is reported
//     with WinnerOwner "". Nor is a wish whose ownership TXT name holds a TXT that is not our claim
//     (Field "ownership"): a record we cannot claim we do not write.
//   - An owner changes records only at names where it claims something, before or after the plan.
//   - Claims written as Kuadrant's dns-operator writes them do not say what their owner wants.
//     Their owner's wish is taken to be the record as published (or what Known says), and targets
//     that no readable claim explains are kept. Ours are written so wherever that reading is right
//     and the name is not shared with another cluster; elsewhere they state the wish.
//   - Owners that are gone (listed in Expired, or whose claim names a lease LeaseExpired counts
//     expired) are treated as gone wherever a live owner still claims the record: their claims are
//     deleted and their targets withdrawn (Result.Withdrawn). Where only gone owners hold a record
//     it stays, so a name never loses its last targets to a lease.
//   - Claims name this owner's cluster lease (Lease) at names shared with another cluster's owner.
//
// A change of record type at a name (A to CNAME or back) is one batch: delete and create together.
// Re-planning against the zone after the batch, with Previous = Published, gives no changes.
package plan

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/batch"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// Input is everything a plan depends on.
type Input struct {
	// OwnerID identifies this owner in the zone's ownership TXTs.
	OwnerID string
	// ZoneName is the zone's domain: every desired name is in it, and no CNAME sits at its apex.
	ZoneName string
	// Current is every record of the zone, TXT included, as the provider returns it. It is read
	// into a registry.Zone for the plan; Zone, when set, is used instead.
	Current []*v1alpha1.Endpoint
	// Zone is the zone already read (and kept current by the batches applied since): a plan then
	// costs what the names it touches cost, not what the whole zone does. Plan does not change it.
	Zone *registry.Zone
	// Previous is what this owner published last time (status.endpoints); may be nil. It is only
	// needed where claims written by Kuadrant do not say whose targets a record holds.
	Previous []*v1alpha1.Endpoint
	// Desired is what this owner wants now; empty withdraws everything.
	Desired []*v1alpha1.Endpoint
	// Expired lists owners that are gone, whatever their claims say.
	Expired []string
	// LeaseExpired, when set, tells the leases (registry.LeaseKey of a claim) that ran out: the
	// owners of claims naming one are gone. Never asked about Lease.
	LeaseExpired func(lease string) bool
	// Lease is the lease (package lease) that vouches for this owner, "" for none. Its claims name
	// it at the names it shares with an owner of another cluster, where a lease can come to matter:
	// expiry only ever withdraws an owner where a live owner still claims. Elsewhere the claim is
	// the one Kuadrant writes. A claim that names it keeps naming it.
	Lease string
	// Local tells the owners of this owner's cluster (they renew the same lease), so sharing a name
	// with them does not call for the lease, nor for claims that state their wish; nil counts every
	// other owner as another cluster's.
	Local func(owner string) bool
	// Known, when set, tells what another owner of this cluster wants for a record key (nil: not
	// known), for its claims that do not say: the caller has seen its requests.
	Known func(owner string, key v1alpha1.EndpointKey) *v1alpha1.Endpoint
	// Group is this owner's failover group ("" none): its claims carry it as Kuadrant's grouped
	// controllers write them (registry.NewTXTInGroup), and a claim without it is rewritten with it.
	Group string
	// ClaimsWithoutTTL: the zone keeps ownership TXTs with no TTL (0), as Kuadrant's dns-operator
	// writes them into a zone kept as a DNSRecord (providers.Capabilities.ClaimsWithoutTTL), so our
	// claims are written so too, and a claim of ours with a TTL is rewritten without. Elsewhere a
	// claim has the TTL of the record it claims.
	ClaimsWithoutTTL bool
	// CleanupGroups, when not empty, are the zone's active failover groups as this owner, a member
	// of one of them, read them: the plan also removes what the owners of other groups published
	// (registry.Claim.Retired), as Kuadrant's active controllers do after a quiet pass. Their claims
	// count as gone wherever they are: at names this owner claims, as expired owners' do; at any
	// other name, a record only they claim goes with their claims (unless a live claim there is on
	// a key left unpublished), and their targets leave a record others claim, nothing else of it
	// changing. Ungrouped owners' records and humans' are never touched. The batch passes
	// registry.Zone.CheckCleanup.
	CleanupGroups []string
}

// Result is a plan.
type Result struct {
	// Changes are the record and ownership-TXT changes, one batch for the zone, sorted by key.
	Changes *batch.Changes
	// Published is what this owner contributes after the changes (for status.endpoints): its desired
	// endpoints whose record is published, possibly with another owner's winning value. Wishes lost
	// to a record-type conflict or to a human's record are not in it.
	Published []*v1alpha1.Endpoint
	// Conflicts hold one entry per field where this owner's wish is not what is published.
	Conflicts []Conflict
	// Owners are the owners claiming records at the desired and previous names after the changes
	// (status.domainOwners), sorted.
	Owners []string
	// Withdrawn are the gone owners (Input.Expired, Input.LeaseExpired) whose claims the changes
	// delete, sorted.
	Withdrawn []string
	// Retired are the owners of inactive failover groups (Input.CleanupGroups) whose claims the
	// changes delete, sorted.
	Retired []string
	// RetiredNames are the names where the changes delete or take targets from records for them.
	RetiredNames []string
}

// Conflict is one field of one record where this owner's wish is not what is published.
type Conflict struct {
	DNSName, RecordType, SetIdentifier string
	// Field is FieldTargets, FieldTTL, FieldType, FieldProviderSpecific or FieldOwnership.
	Field string
	// Ours and Published are the field's values, wished and published.
	Ours, Published string
	// WinnerOwner is the owner whose wish is published, "" for a record nobody owns.
	WinnerOwner string
}

// Conflict fields.
const (
	FieldTargets          = "targets"
	FieldTTL              = "recordTTL"
	FieldType             = "recordType"
	FieldProviderSpecific = "providerSpecific"
	// FieldOwnership: the name of our ownership TXT holds a TXT that is not our claim, so we cannot
	// claim the record. Ours is the TXT we would write, Published the one found.
	FieldOwnership = "ownership"
)

// ErrInvalid is wrapped by every error of Plan: the input is not plannable, and planning it again
// will not help.
var ErrInvalid = errors.New("invalid plan input")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// Plan computes one owner's batch for a zone.
func Plan(in Input) (*Result, error) {
	p, err := newPlanner(in)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for name := range p.desiredAt {
		names[name] = true
	}
	for _, name := range p.zone.Names(p.owner) {
		names[name] = true
	}
	for _, name := range p.retiredNames() {
		names[name] = true
	}
	for _, name := range sortedKeys(names) {
		if err := p.planName(name); err != nil {
			return nil, err
		}
	}
	// Names published before but no longer claimed by us still count for the owners seen there.
	for name := range p.ownerNames {
		if names[name] {
			continue
		}
		for _, r := range p.zone.AtName(name) {
			for _, c := range r.Claims {
				p.owners[c.Owner] = true
			}
		}
	}
	return p.result(), nil
}

type planner struct {
	owner    string
	group    string
	lease    string
	local    func(string) bool
	known    func(string, v1alpha1.EndpointKey) *v1alpha1.Endpoint
	zone     *registry.Zone
	desired  map[v1alpha1.EndpointKey]*v1alpha1.Endpoint
	previous map[v1alpha1.EndpointKey]*v1alpha1.Endpoint
	// desiredAt holds the desired keys by name.
	desiredAt map[string][]v1alpha1.EndpointKey
	// ownerNames are the desired and previous names, whose owners the result lists.
	ownerNames map[string]bool
	expired    map[string]bool
	// leaseExpired is Input.LeaseExpired; withdrawn the gone owners whose claims the plan deletes.
	leaseExpired func(string) bool
	withdrawn    map[string]bool
	// active is Input.CleanupGroups; retired the owners of other groups whose claims the plan
	// deletes, at retiredAt names.
	active    []string
	retired   map[string]bool
	retiredAt map[string]bool
	// noClaimTTL is Input.ClaimsWithoutTTL.
	noClaimTTL bool

	changes   batch.Changes
	published []*v1alpha1.Endpoint
	conflicts []Conflict
	owners    map[string]bool
}

func newPlanner(in Input) (*planner, error) {
	if err := registry.ValidOwnerID(in.OwnerID); err != nil {
		return nil, invalid("%v", err)
	}
	zoneName := v1alpha1.NormalizeName(in.ZoneName)
	if zoneName == "" {
		return nil, invalid("no zone name")
	}
	if in.Zone == nil {
		in.Zone = registry.Read(in.Current)
	}
	p := &planner{
		owner:        in.OwnerID,
		group:        in.Group,
		noClaimTTL:   in.ClaimsWithoutTTL,
		lease:        in.Lease,
		local:        in.Local,
		known:        in.Known,
		zone:         in.Zone,
		desired:      map[v1alpha1.EndpointKey]*v1alpha1.Endpoint{},
		previous:     map[v1alpha1.EndpointKey]*v1alpha1.Endpoint{},
		desiredAt:    map[string][]v1alpha1.EndpointKey{},
		ownerNames:   map[string]bool{},
		expired:      map[string]bool{},
		leaseExpired: in.LeaseExpired,
		withdrawn:    map[string]bool{},
		owners:       map[string]bool{},
		active:       in.CleanupGroups,
		retired:      map[string]bool{},
		retiredAt:    map[string]bool{},
	}
	for _, o := range in.Expired {
		if o == in.OwnerID {
			return nil, invalid("owner %s is listed as expired by itself", o)
		}
		p.expired[o] = true
	}
	for _, e := range in.Previous {
		if e != nil {
			p.previous[e.Key()] = e
			p.ownerNames[e.Key().DNSName] = true
		}
	}
	for _, e := range in.Desired {
		if err := validateDesired(e, zoneName); err != nil {
			return nil, err
		}
		// Our claim may have to state the wish (ourTXT): it must fit a TXT, whichever is written.
		if _, err := registry.NewWishTXTInGroup(in.OwnerID, in.Group, in.Lease, e); err != nil {
			return nil, invalid("%v", err)
		}
		k := e.Key()
		if _, dup := p.desired[k]; dup {
			return nil, invalid("%s is desired twice", describe(k))
		}
		p.desired[k] = e
		p.desiredAt[k.DNSName] = append(p.desiredAt[k.DNSName], k)
		p.ownerNames[k.DNSName] = true
	}
	for name, keys := range p.desiredAt {
		cname := slices.ContainsFunc(keys, func(k v1alpha1.EndpointKey) bool { return k.RecordType == v1alpha1.RecordTypeCNAME })
		other := slices.ContainsFunc(keys, func(k v1alpha1.EndpointKey) bool { return k.RecordType != v1alpha1.RecordTypeCNAME })
		if cname && other {
			return nil, invalid("%s is desired as a CNAME and as another type: a CNAME cannot share its name", name)
		}
	}
	return p, nil
}

func validateDesired(e *v1alpha1.Endpoint, zoneName string) error {
	if e == nil {
		return invalid("a nil desired endpoint")
	}
	name := e.Key().DNSName
	if name != zoneName && !strings.HasSuffix(name, "."+zoneName) {
		return invalid("%s is not in zone %s", e.DNSName, zoneName)
	}
	labels := strings.Split(name, ".")
	if slices.Contains(labels, "") {
		return invalid("%q has an empty label", e.DNSName)
	}
	// The ownership format writes a leading "*" as "wildcard": the two names would share claims.
	if labels[0] == registry.WildcardLabel {
		return invalid("%s cannot be told apart from *.%s in ownership records", e.DNSName, strings.Join(labels[1:], "."))
	}
	if !slices.Contains(registry.OwnedTypes, e.RecordType) {
		return invalid("%s: record type %q cannot be owned (one of %v)", e.DNSName, e.RecordType, registry.OwnedTypes)
	}
	if e.RecordType == v1alpha1.RecordTypeCNAME && name == zoneName {
		return invalid("%s: a CNAME cannot be at the zone apex", e.DNSName)
	}
	if len(e.Targets) == 0 {
		return invalid("%s has no targets", describe(e.Key()))
	}
	for _, t := range e.Targets {
		if err := registry.ValidTarget(t); err != nil {
			return invalid("%s: %v", describe(e.Key()), err)
		}
	}
	if e.RecordTTL < 0 {
		return invalid("%s has a negative TTL", describe(e.Key()))
	}
	return nil
}

func (p *planner) result() *Result {
	sortChanges(&p.changes)
	v1alpha1.SortEndpoints(p.published)
	sort.Slice(p.conflicts, func(i, j int) bool {
		a, b := p.conflicts[i], p.conflicts[j]
		if a.DNSName != b.DNSName {
			return a.DNSName < b.DNSName
		}
		if a.RecordType != b.RecordType {
			return a.RecordType < b.RecordType
		}
		if a.SetIdentifier != b.SetIdentifier {
			return a.SetIdentifier < b.SetIdentifier
		}
		return a.Field < b.Field
	})
	return &Result{Changes: &p.changes, Published: p.published, Conflicts: p.conflicts, Owners: sortedKeys(p.owners), Withdrawn: sortedKeys(p.withdrawn),
		Retired: sortedKeys(p.retired), RetiredNames: sortedKeys(p.retiredAt)}
}

func sortChanges(c *batch.Changes) {
	sortByKey(c.Create)
	sortByKey(c.Delete)
	sortByKey(c.Require)
	// Several keys at a name can depend on one set; a set the batch changes itself is held by the
	// exact old values the change names.
	c.Require = slices.CompactFunc(c.Require, func(a, b *v1alpha1.Endpoint) bool { return a.Key() == b.Key() })
	changed := map[v1alpha1.EndpointKey]bool{}
	for _, e := range slices.Concat(c.Create, c.UpdateOld, c.Delete) {
		changed[e.Key()] = true
	}
	c.Require = slices.DeleteFunc(c.Require, func(e *v1alpha1.Endpoint) bool { return changed[e.Key()] })
	pairs := make([][2]*v1alpha1.Endpoint, len(c.UpdateOld))
	for i := range pairs {
		pairs[i] = [2]*v1alpha1.Endpoint{c.UpdateOld[i], c.UpdateNew[i]}
	}
	sort.Slice(pairs, func(i, j int) bool { return keyLess(pairs[i][0].Key(), pairs[j][0].Key()) })
	for i := range pairs {
		c.UpdateOld[i], c.UpdateNew[i] = pairs[i][0], pairs[i][1]
	}
}

func sortByKey(eps []*v1alpha1.Endpoint) {
	sort.Slice(eps, func(i, j int) bool { return keyLess(eps[i].Key(), eps[j].Key()) })
}

func keyLess(a, b v1alpha1.EndpointKey) bool {
	if a.DNSName != b.DNSName {
		return a.DNSName < b.DNSName
	}
	if a.RecordType != b.RecordType {
		return a.RecordType < b.RecordType
	}
	return a.SetIdentifier < b.SetIdentifier
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func describe(k v1alpha1.EndpointKey) string {
	s := k.RecordType + " " + k.DNSName
	if k.SetIdentifier != "" {
		s += fmt.Sprintf(" (set %q)", k.SetIdentifier)
	}
	return s
}

func formatTargets(t v1alpha1.Targets) string {
	s := slices.Clone([]string(t))
	sort.Strings(s)
	return strings.Join(s, ",")
}

func formatTTL(t v1alpha1.TTL) string { return strconv.FormatInt(int64(t), 10) }

func formatProviderSpecific(ps v1alpha1.ProviderSpecific) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.Name + "=" + p.Value
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

func sameProviderSpecific(a, b v1alpha1.ProviderSpecific) bool {
	return formatProviderSpecific(a) == formatProviderSpecific(b)
}

// sameRecord compares what a backend stores: targets, TTL and routing properties. Labels are
// metadata that backends do not publish.
func sameRecord(a, b *v1alpha1.Endpoint) bool {
	return a.Targets.SameTargets(b.Targets) && a.RecordTTL == b.RecordTTL && sameProviderSpecific(a.ProviderSpecific, b.ProviderSpecific)
}
