// Package conformance is the test suite every DNS backend passes, the way every cert-manager DNS01
// solver passes test/acme. A backend is done when Run passes against its Zones (and, for one that
// declares Hosts, against its HostProvider): the engine relies on exactly these behaviours (read
// back what was written, atomic batches, strict rejection of a stale plan) and on nothing a single
// backend happens to do beyond them. A backend that declares only Records (k8gb) has no zone to
// run it against; its integration tier (test/integration/k8gb) holds it to its contract.
package conformance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// Harness connects the suite to one backend.
type Harness struct {
	// NewZone returns a provider (a Backend's Zones, or its Hosts.HostProvider) and one of its
	// zones, fresh for one subtest, with cleanup registered on t. The zone holds no record sets
	// except those the backend keeps itself (SOA, NS); the suite reads those first and expects them
	// untouched.
	NewZone func(t *testing.T) (providers.Provider, providers.Zone)
}

// DefaultBatchSize is the size of the large batch for a backend without a batch limit.
const DefaultBatchSize = 1000

// Run runs the suite. Each subtest gets its own zone from the harness.
func Run(t *testing.T, h Harness) {
	t.Run("ZonesListTheZone", func(t *testing.T) { zonesListTheZone(newFixture(t, h)) })
	t.Run("CreateAndReadBack", func(t *testing.T) { createAndReadBack(newFixture(t, h)) })
	t.Run("UpdateOneValueKeepsTheOthers", func(t *testing.T) { updateOneValue(newFixture(t, h)) })
	t.Run("DeleteOneSetKeepsItsSiblings", func(t *testing.T) { deleteOneSet(newFixture(t, h)) })
	t.Run("WeightedSets", func(t *testing.T) { weightedSets(newFixture(t, h)) })
	t.Run("GeoSets", func(t *testing.T) { geoSets(newFixture(t, h)) })
	t.Run("ReapplyingWhatWasReadChangesNothing", func(t *testing.T) { reapply(newFixture(t, h)) })
	t.Run("EmptyBatchChangesNothing", func(t *testing.T) { emptyBatch(newFixture(t, h)) })
	t.Run("BatchAtTheLimit", func(t *testing.T) { batchAtTheLimit(newFixture(t, h)) })
	t.Run("TypeChangeIsAtomic", func(t *testing.T) { typeChangeIsAtomic(newFixture(t, h)) })
	t.Run("DeletingWhatIsNotThereRejectsTheBatch", func(t *testing.T) { deleteMissing(newFixture(t, h)) })
	t.Run("CNAMEBesideAnotherTypeIsRejected", func(t *testing.T) { cnameBesideOthers(newFixture(t, h)) })
	t.Run("DuplicateKeyIsRejected", func(t *testing.T) { duplicateKey(newFixture(t, h)) })
	t.Run("RequiredSetsArePreconditions", func(t *testing.T) { requiredSets(newFixture(t, h)) })
}

func zonesListTheZone(f *fixture) {
	zones, err := f.p.Zones(f.ctx)
	if err != nil {
		f.t.Fatalf("Zones: %v", err)
	}
	if f.zone.DNSName != strings.ToLower(strings.TrimSuffix(f.zone.DNSName, ".")) {
		f.t.Errorf("zone name %q must be lower case without a trailing dot", f.zone.DNSName)
	}
	if !slices.Contains(zones, f.zone) {
		f.t.Errorf("Zones() = %v, want it to hold %v", zones, f.zone)
	}
}

func createAndReadBack(f *fixture) {
	want := f.adjust(
		v1alpha1.NewEndpoint(f.name("a"), v1alpha1.RecordTypeA, 60, "192.0.2.2", "192.0.2.1"),
		v1alpha1.NewEndpoint(f.name("a"), v1alpha1.RecordTypeAAAA, 60, "2001:db8::1"),
		v1alpha1.NewEndpoint(f.name("c"), v1alpha1.RecordTypeCNAME, 300, "target.example.net"),
		v1alpha1.NewEndpoint(f.name("t"), v1alpha1.RecordTypeTXT, 300, "some text", "more text"),
		v1alpha1.NewEndpoint(f.name("*.w"), v1alpha1.RecordTypeA, 60, "192.0.2.3"),
		ownershipTXT(f.name("a"), v1alpha1.RecordTypeA),
		ownershipTXT(f.name("a"), v1alpha1.RecordTypeAAAA),
	)
	f.create(want)
	f.expectZone(want)
}

func updateOneValue(f *fixture) {
	neighbour := v1alpha1.NewEndpoint(f.name("n"), v1alpha1.RecordTypeA, 60, "192.0.2.10")
	f.create(f.adjust(
		v1alpha1.NewEndpoint(f.name("u"), v1alpha1.RecordTypeA, 60, "192.0.2.1", "192.0.2.2", "192.0.2.3"),
		neighbour,
	))
	old := f.find(v1alpha1.RecordTypeA, f.name("u"), "")
	updated := f.adjust(v1alpha1.NewEndpoint(f.name("u"), v1alpha1.RecordTypeA, 60, "192.0.2.1", "192.0.2.2", "192.0.2.4"))
	f.apply(&providers.Changes{UpdateOld: []*v1alpha1.Endpoint{old}, UpdateNew: updated})
	f.expectZone(append(f.adjust(neighbour), updated...))
}

func deleteOneSet(f *fixture) {
	set := func(recordType, id, target string) *v1alpha1.Endpoint {
		if !f.routing() {
			// Siblings without set identifiers: sets of their own names beside one another.
			return v1alpha1.NewEndpoint(f.name(id+".d"), recordType, 60, target)
		}
		return v1alpha1.NewEndpoint(f.name("d"), recordType, 60, target).
			WithSetIdentifier(id).WithProviderSpecific(v1alpha1.ProviderSpecificWeight, "100")
	}
	sets := f.adjust(
		set(v1alpha1.RecordTypeA, "one", "192.0.2.1"),
		set(v1alpha1.RecordTypeA, "two", "192.0.2.2"),
		set(v1alpha1.RecordTypeA, "three", "192.0.2.3"),
		set(v1alpha1.RecordTypeAAAA, "two", "2001:db8::2"),
	)
	f.create(sets)
	gone := f.find(v1alpha1.RecordTypeA, sets[1].DNSName, sets[1].SetIdentifier)
	f.apply(&providers.Changes{Delete: []*v1alpha1.Endpoint{gone}})
	f.expectZone([]*v1alpha1.Endpoint{sets[0], sets[2], sets[3]})
}

func weightedSets(f *fixture) {
	var desired []*v1alpha1.Endpoint
	for _, gw := range []struct{ target, weight string }{
		{"gw1.example.net", "120"}, {"gw2.example.net", "60"}, {"gw3.example.net", "0"},
	} {
		desired = append(desired,
			v1alpha1.NewEndpoint(f.name("eu.klb.app"), v1alpha1.RecordTypeCNAME, 60, gw.target).
				WithSetIdentifier(gw.target).WithProviderSpecific(v1alpha1.ProviderSpecificWeight, gw.weight),
			ownershipTXT(f.name("eu.klb.app"), v1alpha1.RecordTypeCNAME).
				WithSetIdentifier(gw.target).WithProviderSpecific(v1alpha1.ProviderSpecificWeight, gw.weight),
		)
	}
	f.routingSetsReadBack(desired, v1alpha1.ProviderSpecificWeight)
}

func geoSets(f *fixture) {
	var desired []*v1alpha1.Endpoint
	for _, geo := range []struct{ id, code, target string }{
		{"GEO-EU", "GEO-EU", "geo-eu.klb.app"},
		{"US", "US", "us.klb.app"},
		{"default", v1alpha1.WildcardGeo, "geo-eu.klb.app"},
	} {
		target := f.name(geo.target)
		desired = append(desired,
			v1alpha1.NewEndpoint(f.name("klb.app"), v1alpha1.RecordTypeCNAME, 300, target).
				WithSetIdentifier(geo.id).WithProviderSpecific(v1alpha1.ProviderSpecificGeoCode, geo.code),
			ownershipTXT(f.name("klb.app"), v1alpha1.RecordTypeCNAME).
				WithSetIdentifier(geo.id).WithProviderSpecific(v1alpha1.ProviderSpecificGeoCode, geo.code),
		)
	}
	f.routingSetsReadBack(desired, v1alpha1.ProviderSpecificGeoCode)
}

// routingSetsReadBack writes sets that share a name and checks that they read back as adjusted, that
// adjusting them again changes nothing (so a plan comparing desired with read state is stable), and
// that every set kept its identifier and routing property (every backend holds routing policies).
func (f *fixture) routingSetsReadBack(desired []*v1alpha1.Endpoint, property string) {
	if !f.routing() {
		f.routingSetsRefused(desired)
		return
	}
	adjusted := f.adjust(desired...)
	if len(adjusted) != len(desired) {
		f.t.Fatalf("AdjustEndpoints turned %d sets into %d, want each set kept", len(desired), len(adjusted))
	}
	for i, ep := range adjusted {
		if ep.SetIdentifier != desired[i].SetIdentifier {
			f.t.Errorf("AdjustEndpoints changed the set identifier of %s to %q", desired[i], ep.SetIdentifier)
		}
		if _, ok := ep.GetProviderSpecific(property); !ok {
			f.t.Errorf("AdjustEndpoints dropped %s from %s", property, desired[i])
		}
	}
	f.create(adjusted)
	read := f.expectZone(adjusted)
	sameEndpoints(f.t, "AdjustEndpoints(read back)", f.adjust(read...), read)
}

func reapply(f *fixture) {
	sets := []*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint(f.name("r"), v1alpha1.RecordTypeA, 60, "192.0.2.1", "192.0.2.2"),
		v1alpha1.NewEndpoint(f.name("rc"), v1alpha1.RecordTypeCNAME, 300, "target.example.net"),
		ownershipTXT(f.name("r"), v1alpha1.RecordTypeA),
	}
	if f.routing() {
		sets = append(sets,
			v1alpha1.NewEndpoint(f.name("rw"), v1alpha1.RecordTypeA, 60, "192.0.2.3").
				WithSetIdentifier("a").WithProviderSpecific(v1alpha1.ProviderSpecificWeight, "10"),
			v1alpha1.NewEndpoint(f.name("rw"), v1alpha1.RecordTypeA, 60, "192.0.2.4").
				WithSetIdentifier("b").WithProviderSpecific(v1alpha1.ProviderSpecificWeight, "20"))
	}
	f.create(f.adjust(sets...))
	before := f.read()
	for _, batch := range f.batches(f.withoutBaseline(before)) {
		f.apply(&providers.Changes{UpdateOld: copyEndpoints(batch), UpdateNew: copyEndpoints(batch)})
	}
	sameEndpoints(f.t, "zone after re-applying what was read", f.read(), before)
}

func emptyBatch(f *fixture) {
	f.create(f.adjust(v1alpha1.NewEndpoint(f.name("e"), v1alpha1.RecordTypeA, 60, "192.0.2.1")))
	before := f.read()
	f.apply(&providers.Changes{})
	sameEndpoints(f.t, "zone after an empty batch", f.read(), before)
}

func batchAtTheLimit(f *fixture) {
	limit := f.p.Capabilities().MaxChangesPerBatch
	size := limit
	if size == 0 {
		size = DefaultBatchSize
	}
	batch := f.manyRecords("batch", size)
	f.apply(&providers.Changes{Create: batch})
	f.expectZone(batch)

	if limit > 0 {
		// A batch over the limit is a caller error; it must fail whole, not be applied in part.
		f.expectRejected(&providers.Changes{Create: f.manyRecords("over", limit+1)})
	}
}

func typeChangeIsAtomic(f *fixture) {
	f.create(f.adjust(v1alpha1.NewEndpoint(f.name("x"), v1alpha1.RecordTypeA, 60, "192.0.2.1")))
	a := f.find(v1alpha1.RecordTypeA, f.name("x"), "")
	cname := f.adjust(v1alpha1.NewEndpoint(f.name("x"), v1alpha1.RecordTypeCNAME, 60, "target.example.net"))

	// Read the zone while the batch applies: every view must hold exactly one of the A and the CNAME.
	// problems is read only after done closes.
	var (
		problems []string
		stop     = make(chan struct{})
		done     = make(chan struct{})
	)
	go func() {
		defer close(done)
		for {
			read, err := f.p.Records(f.ctx, f.zone)
			var problem string
			if err != nil {
				problem = fmt.Sprintf("Records during the batch: %v", err)
			} else if types := typesAt(read.Endpoints, f.name("x")); len(types) != 1 {
				problem = fmt.Sprintf("during the batch, %s held %v, want exactly one of A and CNAME", f.name("x"), types)
			}
			// A few problems diagnose the failure; the rest would only repeat them.
			if problem != "" && len(problems) < 5 {
				problems = append(problems, problem)
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	err := f.p.Apply(f.ctx, f.zone, f.state, &providers.Changes{Delete: []*v1alpha1.Endpoint{a}, Create: cname})
	close(stop)
	<-done
	if err != nil {
		f.t.Fatalf("Apply(delete A, create CNAME): %v", err)
	}
	for _, p := range problems {
		f.t.Error(p)
	}
	f.expectZone(cname)
}

func deleteMissing(f *fixture) {
	f.create(f.adjust(v1alpha1.NewEndpoint(f.name("keep"), v1alpha1.RecordTypeA, 60, "192.0.2.1")))
	f.expectRejected(&providers.Changes{
		Create: f.adjust(v1alpha1.NewEndpoint(f.name("new"), v1alpha1.RecordTypeA, 60, "192.0.2.2")),
		Delete: f.adjust(v1alpha1.NewEndpoint(f.name("missing"), v1alpha1.RecordTypeA, 60, "192.0.2.3")),
	})
}

func cnameBesideOthers(f *fixture) {
	f.create(f.adjust(
		v1alpha1.NewEndpoint(f.name("mixed"), v1alpha1.RecordTypeA, 60, "192.0.2.1"),
		v1alpha1.NewEndpoint(f.name("alias"), v1alpha1.RecordTypeCNAME, 60, "target.example.net"),
	))
	f.expectRejected(&providers.Changes{Create: f.adjust(
		v1alpha1.NewEndpoint(f.name("mixed"), v1alpha1.RecordTypeCNAME, 60, "target.example.net"),
	)})
	f.expectRejected(&providers.Changes{Create: f.adjust(
		v1alpha1.NewEndpoint(f.name("alias"), v1alpha1.RecordTypeTXT, 60, "text"),
	)})
	f.expectRejected(&providers.Changes{Create: f.adjust(
		v1alpha1.NewEndpoint(f.name("both"), v1alpha1.RecordTypeA, 60, "192.0.2.1"),
		v1alpha1.NewEndpoint(f.name("both"), v1alpha1.RecordTypeCNAME, 60, "target.example.net"),
	)})
}

func duplicateKey(f *fixture) {
	f.create(f.adjust(
		f.weighted(v1alpha1.NewEndpoint(f.name("dup"), v1alpha1.RecordTypeA, 60, "192.0.2.1"), "a", "10"),
	))
	f.expectRejected(&providers.Changes{Create: f.adjust(
		f.weighted(v1alpha1.NewEndpoint(f.name("dup"), v1alpha1.RecordTypeA, 60, "192.0.2.2"), "a", "20"),
	)})
	f.expectRejected(&providers.Changes{Create: f.adjust(
		v1alpha1.NewEndpoint(f.name("twice"), v1alpha1.RecordTypeA, 60, "192.0.2.3"),
		v1alpha1.NewEndpoint(f.name("twice"), v1alpha1.RecordTypeA, 60, "192.0.2.4"),
	)})
}

// fixture is one subtest's provider and zone, and what the zone held before the subtest.
type fixture struct {
	t        *testing.T
	ctx      context.Context
	p        providers.Provider
	zone     providers.Zone
	baseline []*v1alpha1.Endpoint
	// state is the State of the last read, which every Apply is planned from, as the engine plans.
	state providers.State
}

func newFixture(t *testing.T, h Harness) *fixture {
	t.Helper()
	p, zone := h.NewZone(t)
	f := &fixture{t: t, ctx: t.Context(), p: p, zone: zone}
	f.baseline = f.read()
	return f
}

// requiredSets: a batch that requires a set applies while the set holds the required values, and is
// rejected whole (StaleView) once the set changed or went: the engine's guard against two owners
// leaving a shared record at once.
func requiredSets(f *fixture) {
	f.create(f.adjust(
		v1alpha1.NewEndpoint(f.name("r"), v1alpha1.RecordTypeA, 60, "192.0.2.1"),
		ownershipTXT(f.name("r"), v1alpha1.RecordTypeA),
		v1alpha1.NewEndpoint(f.name("s"), v1alpha1.RecordTypeA, 60, "192.0.2.2"),
	))
	claim := f.find(v1alpha1.RecordTypeTXT, ownershipTXT(f.name("r"), v1alpha1.RecordTypeA).DNSName, "")
	s := f.find(v1alpha1.RecordTypeA, f.name("s"), "")
	added := f.adjust(v1alpha1.NewEndpoint(f.name("t"), v1alpha1.RecordTypeA, 60, "192.0.2.3"))
	f.apply(&providers.Changes{Create: added, Require: []*v1alpha1.Endpoint{claim, s}})
	f.expectZone(f.withoutBaseline(f.read()))
	if got := f.find(v1alpha1.RecordTypeA, f.name("t"), ""); !got.SameValues(added[0]) {
		f.t.Errorf("the batch with its requirements met wrote %v, want %v", got, added[0])
	}
	if got := f.find(v1alpha1.RecordTypeA, f.name("s"), ""); !got.SameValues(s) {
		f.t.Errorf("a required set was changed by the batch: %v, want %v", got, s)
	}

	// Someone else changes s; a batch planned before (requiring s as it was) must not apply.
	changed := s.DeepCopy()
	changed.Targets = v1alpha1.Targets{"192.0.2.9"}
	stale := f.state
	f.apply(&providers.Changes{UpdateOld: []*v1alpha1.Endpoint{s}, UpdateNew: []*v1alpha1.Endpoint{changed}})
	before := f.read()
	err := f.p.Apply(f.ctx, f.zone, stale, &providers.Changes{Create: f.adjust(v1alpha1.NewEndpoint(f.name("u"), v1alpha1.RecordTypeA, 60, "192.0.2.4")),
		Require: []*v1alpha1.Endpoint{s}})
	if providers.KindOf(err) != providers.StaleView || err == nil {
		f.t.Errorf("Apply with a requirement no longer met = %v, want a StaleView error", err)
	}
	sameEndpoints(f.t, "zone after a batch whose requirement failed", f.read(), before)
}

// routing reports whether the backend holds weighted and geo sets: every backend but those that
// declare Capabilities.NoRoutingPolicies. The subtests about other behaviours use plain sets on
// the others, so each behaviour is still checked there.
func (f *fixture) routing() bool { return !f.p.Capabilities().NoRoutingPolicies }

// weighted gives ep a set identifier and a weight where the backend holds weighted sets.
func (f *fixture) weighted(ep *v1alpha1.Endpoint, id, weight string) *v1alpha1.Endpoint {
	if !f.routing() {
		return ep
	}
	return ep.WithSetIdentifier(id).WithProviderSpecific(v1alpha1.ProviderSpecificWeight, weight)
}

// routingSetsRefused checks, for a backend that declares no routing policies, that weighted or geo
// sets are refused as Permanent both when adjusted and when a batch carries them anyway, and that
// nothing of them is written: a tree published in part would answer wrongly.
func (f *fixture) routingSetsRefused(desired []*v1alpha1.Endpoint) {
	f.t.Helper()
	if _, err := f.p.AdjustEndpoints(copyEndpoints(desired)); err == nil || providers.KindOf(err) != providers.Permanent {
		f.t.Errorf("AdjustEndpoints(routing sets) = %v, want a Permanent error: the backend declares NoRoutingPolicies", err)
	}
	f.read()
	changes := &providers.Changes{Create: copyEndpoints(desired)}
	if err := f.p.Apply(f.ctx, f.zone, f.state, changes); err == nil || providers.KindOf(err) != providers.Permanent {
		f.t.Errorf("Apply(routing sets) = %v, want a Permanent error: the backend declares NoRoutingPolicies", err)
	}
	f.expectZone(nil)
}

// name returns a name in the zone, lower case because backends may return names lower-cased.
func (f *fixture) name(label string) string {
	return label + "." + f.zone.DNSName
}

func (f *fixture) adjust(eps ...*v1alpha1.Endpoint) []*v1alpha1.Endpoint {
	f.t.Helper()
	adjusted, err := f.p.AdjustEndpoints(copyEndpoints(eps))
	if err != nil {
		f.t.Fatalf("AdjustEndpoints: %v", err)
	}
	return adjusted
}

func (f *fixture) apply(changes *providers.Changes) {
	f.t.Helper()
	if err := f.p.Apply(f.ctx, f.zone, f.state, changes); err != nil {
		f.t.Fatalf("Apply: %v", err)
	}
}

// create writes record sets in as many batches as the backend's limit needs: how a zone is set up
// is not what a subtest checks.
func (f *fixture) create(eps []*v1alpha1.Endpoint) {
	f.t.Helper()
	for _, batch := range f.batches(eps) {
		f.apply(&providers.Changes{Create: batch})
	}
}

func (f *fixture) batches(eps []*v1alpha1.Endpoint) [][]*v1alpha1.Endpoint {
	limit := f.p.Capabilities().MaxChangesPerBatch
	if limit == 0 {
		limit = len(eps)
	}
	var batches [][]*v1alpha1.Endpoint
	for len(eps) > 0 {
		n := min(limit, len(eps))
		batches = append(batches, eps[:n])
		eps = eps[n:]
	}
	return batches
}

func (f *fixture) read() []*v1alpha1.Endpoint {
	f.t.Helper()
	read, err := f.p.Records(f.ctx, f.zone)
	if err != nil {
		f.t.Fatalf("Records: %v", err)
	}
	f.state = read.State
	return read.Endpoints
}

// find returns the record set the zone holds under a key, as read.
func (f *fixture) find(recordType, name, setIdentifier string) *v1alpha1.Endpoint {
	f.t.Helper()
	key := (&v1alpha1.Endpoint{DNSName: name, RecordType: recordType, SetIdentifier: setIdentifier}).Key()
	for _, ep := range f.read() {
		if ep.Key() == key {
			return ep
		}
	}
	f.t.Fatalf("the zone holds no %s %s (set %q)", recordType, name, setIdentifier)
	return nil
}

// expectZone checks that the zone holds its baseline and want, nothing else, and returns what it read.
func (f *fixture) expectZone(want []*v1alpha1.Endpoint) []*v1alpha1.Endpoint {
	f.t.Helper()
	read := f.read()
	sameEndpoints(f.t, "zone", read, append(copyEndpoints(f.baseline), want...))
	return f.withoutBaseline(read)
}

// expectRejected checks that a batch fails whole: the zone afterwards is what it was before.
func (f *fixture) expectRejected(changes *providers.Changes) {
	f.t.Helper()
	before := f.read()
	err := f.p.Apply(f.ctx, f.zone, f.state, changes)
	if err == nil {
		f.t.Errorf("Apply succeeded, want it rejected: %s", describe(changes))
	} else if providers.KindOf(err) == providers.Transient {
		f.t.Errorf("Apply rejected %s with a transient error (%v); retrying the same batch cannot succeed, so "+
			"it must be StaleView or Permanent", describe(changes), err)
	}
	sameEndpoints(f.t, "zone after a rejected batch", f.read(), before)
}

func (f *fixture) withoutBaseline(eps []*v1alpha1.Endpoint) []*v1alpha1.Endpoint {
	base := map[string]bool{}
	for _, ep := range f.baseline {
		base[canonical(ep)] = true
	}
	var ours []*v1alpha1.Endpoint
	for _, ep := range eps {
		if !base[canonical(ep)] {
			ours = append(ours, ep)
		}
	}
	return ours
}

// manyRecords returns n adjusted A records under one label.
func (f *fixture) manyRecords(label string, n int) []*v1alpha1.Endpoint {
	eps := make([]*v1alpha1.Endpoint, n)
	for i := range eps {
		eps[i] = v1alpha1.NewEndpoint(f.name(fmt.Sprintf("r%d.%s", i, label)), v1alpha1.RecordTypeA, 60,
			fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255))
	}
	return f.adjust(eps...)
}

// ownershipTXT is a registry record in Kuadrant's format, quotes included, which backends must store
// and return unchanged or clusters stop recognising their own records.
func ownershipTXT(dnsName, recordType string) *v1alpha1.Endpoint {
	owner := "conformance1"
	name := fmt.Sprintf("kuadrant-%s-%s-%s", hash.Base36(owner, 8), strings.ToLower(recordType),
		strings.Replace(dnsName, "*", "wildcard", 1))
	return v1alpha1.NewEndpoint(name, v1alpha1.RecordTypeTXT, 300,
		`"heritage=external-dns,external-dns/owner=`+owner+`,external-dns/version=1"`)
}

func typesAt(eps []*v1alpha1.Endpoint, name string) []string {
	var types []string
	for _, ep := range eps {
		if canonicalName(ep.DNSName) == canonicalName(name) && !slices.Contains(types, ep.RecordType) {
			types = append(types, ep.RecordType)
		}
	}
	slices.Sort(types)
	return types
}

// sameEndpoints compares record sets ignoring order (of sets and of targets), name case and labels.
func sameEndpoints(t *testing.T, what string, got, want []*v1alpha1.Endpoint) {
	t.Helper()
	g, w := canonicalAll(got), canonicalAll(want)
	if slices.Equal(g, w) {
		return
	}
	var missing, unexpected []string
	for _, s := range w {
		if !slices.Contains(g, s) {
			missing = append(missing, s)
		}
	}
	for _, s := range g {
		if !slices.Contains(w, s) {
			unexpected = append(unexpected, s)
		}
	}
	t.Errorf("%s: got %d record sets, want %d\nmissing:\n  %s\nunexpected:\n  %s", what, len(g), len(w),
		strings.Join(missing, "\n  "), strings.Join(unexpected, "\n  "))
}

func canonicalAll(eps []*v1alpha1.Endpoint) []string {
	s := make([]string, len(eps))
	for i, ep := range eps {
		s[i] = canonical(ep)
	}
	slices.Sort(s)
	return s
}

func canonical(ep *v1alpha1.Endpoint) string {
	targets := make([]string, len(ep.Targets))
	for i, t := range ep.Targets {
		// TXT values are case-sensitive text; the other types hold names or addresses.
		if ep.RecordType == v1alpha1.RecordTypeTXT {
			targets[i] = t
		} else {
			targets[i] = canonicalName(t)
		}
	}
	slices.Sort(targets)
	props := make([]string, len(ep.ProviderSpecific))
	for i, p := range ep.ProviderSpecific {
		props[i] = p.Name + "=" + p.Value
	}
	slices.Sort(props)
	return fmt.Sprintf("%s %d %s set=%q targets=%q props=%q",
		canonicalName(ep.DNSName), ep.RecordTTL, ep.RecordType, ep.SetIdentifier, targets, props)
}

func canonicalName(name string) string {
	return strings.ToLower(strings.TrimSuffix(name, "."))
}

func describe(c *providers.Changes) string {
	var parts []string
	for _, l := range []struct {
		op  string
		eps []*v1alpha1.Endpoint
	}{{"create", c.Create}, {"update", c.UpdateNew}, {"delete", c.Delete}} {
		for _, ep := range l.eps {
			parts = append(parts, l.op+" "+ep.String())
		}
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

func copyEndpoints(eps []*v1alpha1.Endpoint) []*v1alpha1.Endpoint {
	out := make([]*v1alpha1.Endpoint, len(eps))
	for i, ep := range eps {
		out[i] = ep.DeepCopy()
	}
	return out
}
