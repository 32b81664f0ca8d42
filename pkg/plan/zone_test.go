package plan

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/batch"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// errStale marks a batch that the zone no longer fits: another owner wrote since the plan's view.
var errStale = errors.New("stale")

// strictZone is a zone as a strict backend keeps it: a batch applies whole or not at all; deleting
// or updating needs the exact record, creating needs a free key, and a CNAME shares its name with
// nothing.
type strictZone map[v1alpha1.EndpointKey]*v1alpha1.Endpoint

func newZone(eps ...*v1alpha1.Endpoint) strictZone {
	z := strictZone{}
	for _, e := range eps {
		z[e.Key()] = e.DeepCopy()
	}
	return z
}

// endpoints lists the zone, sorted. The zone keeps its own copies, and Plan does not change its
// input (TestPlanKeepsItsInput), so these are the zone's.
func (z strictZone) endpoints() []*v1alpha1.Endpoint {
	out := make([]*v1alpha1.Endpoint, 0, len(z))
	for _, e := range z {
		out = append(out, e)
	}
	sortByKey(out)
	return out
}

func (z strictZone) apply(c *batch.Changes) error {
	for _, e := range c.Require {
		if have, ok := z[e.Key()]; !ok || !sameRecord(have, e) {
			return fmt.Errorf("%w: required %s: the zone holds %v", errStale, e, have)
		}
	}
	next := strictZone{}
	for k, e := range z {
		next[k] = e
	}
	remove := func(e *v1alpha1.Endpoint, verb string) error {
		have, ok := next[e.Key()]
		if !ok {
			return fmt.Errorf("%w: %s %s: not in the zone", errStale, verb, e)
		}
		if !sameRecord(have, e) {
			return fmt.Errorf("%w: %s %s: the zone holds %s", errStale, verb, e, have)
		}
		delete(next, e.Key())
		return nil
	}
	for _, e := range c.Delete {
		if err := remove(e, "delete"); err != nil {
			return err
		}
	}
	if len(c.UpdateOld) != len(c.UpdateNew) {
		return fmt.Errorf("uneven update")
	}
	for i, e := range c.UpdateOld {
		if err := remove(e, "update"); err != nil {
			return err
		}
		if c.UpdateNew[i].Key() != e.Key() {
			return fmt.Errorf("update changes the key of %s", e)
		}
		next[e.Key()] = c.UpdateNew[i].DeepCopy()
	}
	for _, e := range c.Create {
		if _, ok := next[e.Key()]; ok {
			return fmt.Errorf("%w: create %s: exists", errStale, e)
		}
		next[e.Key()] = e.DeepCopy()
	}
	types := map[string]map[string]bool{}
	for k := range next {
		if types[k.DNSName] == nil {
			types[k.DNSName] = map[string]bool{}
		}
		types[k.DNSName][k.RecordType] = true
	}
	for name, ts := range types {
		if ts[v1alpha1.RecordTypeCNAME] && len(ts) > 1 {
			return fmt.Errorf("%w: a CNAME shares %s with %v", errStale, name, ts)
		}
	}
	for k := range z {
		delete(z, k)
	}
	for k, e := range next {
		z[k] = e
	}
	return nil
}

// records lists the zone's records other than ownership TXTs, as "NAME TYPE [set] TTL targets".
func (z strictZone) records() []string {
	records, _ := z.view()
	return records
}

// claims lists the ownership TXTs as "owner NAME TYPE set".
func (z strictZone) claims() []string {
	_, claims := z.view()
	return claims
}

func (z strictZone) view() (records, claims []string) {
	for _, r := range registry.Read(z.endpoints()).Records() {
		if r.Endpoint != nil {
			records = append(records, line(r.Endpoint))
		}
		for _, c := range r.Claims {
			claims = append(claims, fmt.Sprintf("%s %s %s %s", c.Owner, c.Record.DNSName, c.Record.RecordType, c.Record.SetIdentifier))
		}
	}
	sort.Strings(records)
	sort.Strings(claims)
	return records, claims
}

func line(e *v1alpha1.Endpoint) string {
	s := fmt.Sprintf("%s %s", e.DNSName, e.RecordType)
	if e.SetIdentifier != "" {
		s += " [" + e.SetIdentifier + "]"
	}
	s += fmt.Sprintf(" %d %s", e.RecordTTL, formatTargets(e.Targets))
	if len(e.ProviderSpecific) > 0 {
		s += " {" + formatProviderSpecific(e.ProviderSpecific) + "}"
	}
	return s
}

// owner is one owner in a test: its ID and what it published last. local and known, when set, are
// its plans' Input.Local and Input.Known (owners of one cluster); unset, every other owner is
// another cluster's.
type owner struct {
	id        string
	group     string
	published []*v1alpha1.Endpoint
	local     func(string) bool
	known     func(string, v1alpha1.EndpointKey) *v1alpha1.Endpoint
	// active, when set, are the zone's active groups, for a plan that removes the others' records.
	active []string
	// claimsWithoutTTL: the zone keeps ownership TXTs without a TTL (an authoritative record).
	claimsWithoutTTL bool
}

// step plans for one owner against the zone, checks the batch as the controller would, applies it
// strictly, and plans again: the second plan must change nothing and report the same.
func step(t testing.TB, z strictZone, o *owner, desired []*v1alpha1.Endpoint, expired ...string) *Result {
	t.Helper()
	res, err := tryStep(z, o, desired, expired...)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func tryStep(z strictZone, o *owner, desired []*v1alpha1.Endpoint, expired ...string) (*Result, error) {
	current, previous := z.endpoints(), o.published
	in := Input{OwnerID: o.id, ZoneName: "example.com", Current: current, Previous: previous, Desired: desired, Expired: expired,
		Local: o.local, Known: o.known, Group: o.group, CleanupGroups: o.active, ClaimsWithoutTTL: o.claimsWithoutTTL}
	res, err := Plan(in)
	if err != nil {
		return nil, fmt.Errorf("%s: Plan: %w", o.id, err)
	}
	if err := registry.Read(current).CheckCleanup([]string{o.id}, expired, o.active, res.Changes); err != nil {
		return nil, fmt.Errorf("%s: Check refused the plan: %w\n%s", o.id, err, describeChanges(res.Changes))
	}
	if err := z.apply(res.Changes); err != nil {
		return nil, fmt.Errorf("%s: apply: %w\n%s", o.id, err, describeChanges(res.Changes))
	}
	o.published = res.Published
	in.Current, in.Previous = z.endpoints(), res.Published
	again, err := Plan(in)
	if err != nil {
		return nil, fmt.Errorf("%s: Plan again: %w", o.id, err)
	}
	if !again.Changes.Empty() {
		return nil, fmt.Errorf("%s: planning again changes the zone:\n%s", o.id, describeChanges(again.Changes))
	}
	// Owners are seen on the desired and previous names: the same again unless previous names
	// were dropped.
	sameOwners := fmt.Sprint(again.Owners) == fmt.Sprint(res.Owners)
	for _, e := range previous {
		if !slices.ContainsFunc(desired, func(d *v1alpha1.Endpoint) bool { return d.Key().DNSName == e.Key().DNSName }) {
			sameOwners = true
		}
	}
	if fmt.Sprint(again.Conflicts) != fmt.Sprint(res.Conflicts) || !sameOwners {
		return nil, fmt.Errorf("%s: planning again reports %v %v, first %v %v", o.id, again.Conflicts, again.Owners, res.Conflicts, res.Owners)
	}
	return res, nil
}

func describeChanges(c *batch.Changes) string {
	s := ""
	for _, e := range c.Create {
		s += "  create " + line(e) + "\n"
	}
	for i, e := range c.UpdateOld {
		s += "  update " + line(e) + " -> " + line(c.UpdateNew[i]) + "\n"
	}
	for _, e := range c.Delete {
		s += "  delete " + line(e) + "\n"
	}
	return s
}

// endpoint is the record at name of type, which must exist.
func (z strictZone) endpoint(t testing.TB, name, recordType string) *v1alpha1.Endpoint {
	t.Helper()
	for _, e := range z.endpoints() {
		if e.DNSName == name && e.RecordType == recordType && e.SetIdentifier == "" {
			return e
		}
	}
	t.Fatalf("no %s record at %s", recordType, name)
	return nil
}

// owners are the owners claiming the record at name of type.
func (z strictZone) owners(t testing.TB, name, recordType string) []string {
	t.Helper()
	r := registry.Read(z.endpoints()).Record(v1alpha1.EndpointKey{DNSName: name, RecordType: recordType})
	if r == nil {
		t.Fatalf("no %s record at %s", recordType, name)
	}
	return r.Owners()
}
