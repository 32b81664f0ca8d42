// Package inmemory is the kuadrant.io/inmemory backend: zones held in process memory, for tests and
// dry runs.
//
// It is as strict as a hosted DNS service: it refuses to delete or update what is not there, to
// create what already is, and to put a CNAME beside other records, and it applies each batch all or
// nothing. A plan that a cloud would reject therefore fails here too, in a unit test, instead of
// first in production.
package inmemory

import (
	"context"
	"slices"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// ProviderName is the value of the kuadrant.io/dns-provider-name label for this backend.
const ProviderName = "inmemory"

// Calls counts backend operations, so tests can bound how often the engine lists and writes.
type Calls struct {
	// Zones counts zone listings.
	Zones int
	// Records counts reads of a zone's record sets.
	Records int
	// Apply counts batches, failed ones included.
	Apply int
}

// callCounter keeps Records and Apply per zone, because "at most N writes to that zone" is what a
// test of a shared zone asserts.
type callCounter struct {
	zones   int
	records map[string]int
	apply   map[string]int
}

func newCallCounter() callCounter {
	return callCounter{records: map[string]int{}, apply: map[string]int{}}
}

func (c *callCounter) total() Calls {
	calls := Calls{Zones: c.zones}
	for _, n := range c.records {
		calls.Records += n
	}
	for _, n := range c.apply {
		calls.Apply += n
	}
	return calls
}

func (c *callCounter) zone(zoneID string) Calls {
	return Calls{Records: c.records[zoneID], Apply: c.apply[zoneID]}
}

// Store holds zones and their record sets. Providers built from Secrets of different clusters share
// one Store the way clusters share one cloud account, which is how multi-cluster tests in one process
// share a zone. A Store is safe for concurrent use.
type Store struct {
	mu                 sync.Mutex
	zones              map[string]*zone
	maxChangesPerBatch int
	calls              callCounter
}

type zone struct {
	name    string
	records []*v1alpha1.Endpoint
	// applied lists the names each batch applied to the zone changed, for tests that tell one kind
	// of write from another.
	applied [][]string
}

// NewStore returns a store with no zones and no batch limit.
func NewStore() *Store {
	return &Store{zones: map[string]*zone{}, calls: newCallCounter()}
}

// SetMaxChangesPerBatch makes Apply refuse larger batches, as a cloud's API does; 0 means no limit.
// Tests use it to check that the engine splits a zone's changes into batches.
func (s *Store) SetMaxChangesPerBatch(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maxChangesPerBatch = n
}

// ZoneID is the ID of the zone with the given name. It differs from the name on purpose, so code
// that confuses the two fails against this backend.
func ZoneID(name string) string {
	return "inmem-" + hash.Base36(v1alpha1.NormalizeName(name), 8)
}

// EnsureZone creates the zone when absent and returns it.
func (s *Store) EnsureZone(name string) providers.Zone {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ensureZone(name)
}

func (s *Store) ensureZone(name string) providers.Zone {
	name = v1alpha1.NormalizeName(name)
	id := ZoneID(name)
	if _, ok := s.zones[id]; !ok {
		s.zones[id] = &zone{name: name}
	}
	return providers.Zone{ID: id, DNSName: name}
}

// Snapshot returns copies of a zone's record sets without counting a call, for tests that inspect
// the zone the controllers write.
func (s *Store) Snapshot(zoneID string) ([]*v1alpha1.Endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	z, err := s.zone(zoneID)
	if err != nil {
		return nil, err
	}
	return copyEndpoints(z.records), nil
}

// Applied returns, for every batch applied to the zone, the names it changed, in order.
func (s *Store) Applied(zoneID string) ([][]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	z, err := s.zone(zoneID)
	if err != nil {
		return nil, err
	}
	return slices.Clone(z.applied), nil
}

// Calls returns the operations made by every provider of this store, over all zones.
func (s *Store) Calls() Calls {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls.total()
}

// ZoneCalls returns the Records and Apply calls made against one zone by every provider of this store.
func (s *Store) ZoneCalls(zoneID string) Calls {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls.zone(zoneID)
}

func (s *Store) zone(zoneID string) (*zone, error) {
	z, ok := s.zones[zoneID]
	if !ok {
		return nil, providers.Errorf(providers.Permanent, "inmemory zone %q does not exist", zoneID)
	}
	return z, nil
}

// Provider is one view of a Store, built from one provider Secret. Every provider sees every zone of
// its store.
type Provider struct {
	store *Store
	// calls is guarded by store.mu.
	calls callCounter
}

var _ providers.Provider = (*Provider)(nil)

// New returns a provider of the store, creating the zones the options name.
func New(store *Store, opts Options) *Provider {
	store.mu.Lock()
	defer store.mu.Unlock()
	for _, name := range opts.InitZones {
		store.ensureZone(name)
	}
	return &Provider{store: store, calls: newCallCounter()}
}

// NewConstructor returns the constructor of kuadrant.io/inmemory Secrets; every provider it builds
// shares the store.
func NewConstructor(store *Store) providers.Constructor {
	return func(_ context.Context, secret *corev1.Secret, _ providers.Env) (providers.Backend, error) {
		opts, err := ParseOptions(secret)
		if err != nil {
			return providers.Backend{}, err
		}
		return providers.Backend{Zones: New(store, opts)}, nil
	}
}

// Calls returns the operations made by this provider, over all zones.
func (p *Provider) Calls() Calls {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	return p.calls.total()
}

// ZoneCalls returns the Records and Apply calls this provider made against one zone.
func (p *Provider) ZoneCalls(zoneID string) Calls {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	return p.calls.zone(zoneID)
}

// Name implements providers.Provider.
func (p *Provider) Name() string { return ProviderName }

// Capabilities implements providers.Provider.
func (p *Provider) Capabilities() providers.Capabilities {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	return providers.Capabilities{
		ApexRecords:        true,
		MaxChangesPerBatch: p.store.maxChangesPerBatch,
	}
}

// Zones implements providers.Provider.
func (p *Provider) Zones(_ context.Context) ([]providers.Zone, error) {
	s := p.store
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls.zones++
	p.calls.zones++
	zones := make([]providers.Zone, 0, len(s.zones))
	for id, z := range s.zones {
		zones = append(zones, providers.Zone{ID: id, DNSName: z.name})
	}
	sort.Slice(zones, func(i, j int) bool { return zones[i].DNSName < zones[j].DNSName })
	return zones, nil
}

// Records implements providers.Provider.
func (p *Provider) Records(_ context.Context, zone providers.Zone) (providers.View, error) {
	s := p.store
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls.records[zone.ID]++
	p.calls.records[zone.ID]++
	z, err := s.zone(zone.ID)
	if err != nil {
		return providers.View{}, err
	}
	records := copyEndpoints(z.records)
	v1alpha1.SortEndpoints(records)
	return providers.View{Endpoints: records}, nil
}

// Apply implements providers.Provider.
func (p *Provider) Apply(_ context.Context, zone providers.Zone, _ providers.State, changes *providers.Changes) error {
	s := p.store
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls.apply[zone.ID]++
	p.calls.apply[zone.ID]++
	z, err := s.zone(zone.ID)
	if err != nil {
		return err
	}
	if changes == nil {
		return nil
	}
	if s.maxChangesPerBatch > 0 && changes.Len() > s.maxChangesPerBatch {
		return providers.Errorf(providers.Permanent, "batch of %d changes exceeds the limit of %d per batch",
			changes.Len(), s.maxChangesPerBatch)
	}
	// A real zone holds SOA and NS at its apex, which no CNAME may sit beside.
	for _, ep := range slices.Concat(changes.Create, changes.UpdateNew) {
		if ep != nil && ep.RecordType == v1alpha1.RecordTypeCNAME && v1alpha1.NormalizeName(ep.DNSName) == z.name {
			return providers.Errorf(providers.Permanent, "cannot put a CNAME at the apex of zone %s", z.name)
		}
	}
	records, err := providers.ApplyChanges(z.name, z.records, changes)
	if err != nil {
		return err
	}
	z.records = records
	var names []string
	for _, ep := range slices.Concat(changes.Create, changes.UpdateNew, changes.Delete) {
		names = append(names, ep.DNSName)
	}
	z.applied = append(z.applied, names)
	return nil
}

// AwaitPropagation implements providers.Provider: the store serves what it accepts at once.
func (p *Provider) AwaitPropagation(context.Context, providers.Zone, providers.State) error {
	return nil
}

// AdjustEndpoints implements providers.Provider. This backend stores every property as given.
func (p *Provider) AdjustEndpoints(endpoints []*v1alpha1.Endpoint) ([]*v1alpha1.Endpoint, error) {
	return copyEndpoints(endpoints), nil
}

func copyEndpoints(eps []*v1alpha1.Endpoint) []*v1alpha1.Endpoint {
	out := make([]*v1alpha1.Endpoint, len(eps))
	for i, ep := range eps {
		out[i] = ep.DeepCopy()
	}
	return out
}
