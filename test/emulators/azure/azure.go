// Package azure emulates Azure DNS and Traffic Manager behind the SDK's own fake servers
// (armdns/fake, armtrafficmanager/fake). The fakes dispatch in process without HTTP, so the cloud's
// rules live in the Store behind their function fields:
//
//   - record sets carry ETags; If-Match and If-None-Match preconditions fail with 412;
//   - more than 200 record-set writes per minute to one zone fail with 429 and a Retry-After header;
//   - a record set holds at most 20 records, and either records or an alias (targetResource);
//   - a CNAME record set cannot share its name with another type, nor sit at the zone apex;
//   - an alias must point at an existing Traffic Manager profile;
//   - profiles route by Weighted (weights 1-1000) or Geographic (each region mapped to at most one
//     endpoint, Traffic Manager region codes), hold at most 200 endpoints, and have a relative DNS
//     name unique across the store.
//
// Every operation is counted, and faults (HTTP 500, 429 or a hang ending in 504, before anything is
// applied) can be injected at a rate. The clock is injectable, so a test can cross the rate limit's minute without waiting it.
package azure

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/dns/armdns"
	dnsfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/dns/armdns/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/trafficmanager/armtrafficmanager"
)

// Azure's documented limits that the store enforces.
const (
	// WritesPerMinute is how many record-set writes (create, update, delete) one zone takes per minute.
	WritesPerMinute = 200
	// RecordsPerSet is the most records one record set holds.
	RecordsPerSet = 20
	// EndpointsPerProfile is the most endpoints one Traffic Manager profile holds.
	EndpointsPerProfile = 200
	// pageSize is how many items one list page returns.
	pageSize = 100
)

// Store is the state of one subscription: DNS zones and Traffic Manager profiles per resource
// group. It is safe for concurrent use.
type Store struct {
	mu           sync.Mutex
	subscription string
	now          func() time.Time
	groups       map[string]bool     // resource groups, lower case
	zones        map[string]*zone    // by resource group + "/" + zone name
	profiles     map[string]*profile // by resource group + "/" + profile name
	calls        map[string]int
	faultRate    float64
	faultKinds   []string
	rand         *rand.Rand
	etags        int
	listings     int
}

type zone struct {
	name   string
	sets   map[setKey]*armdns.RecordSet
	writes []time.Time
}

type setKey struct {
	name       string // relative name, lower case; "@" is the apex
	recordType armdns.RecordType
}

type profile struct {
	resourceGroup string
	value         armtrafficmanager.Profile
}

// NewStore returns an empty store of one subscription, on the real clock and without faults.
func NewStore(subscription string) *Store {
	return &Store{
		subscription: subscription,
		now:          time.Now,
		groups:       map[string]bool{},
		zones:        map[string]*zone{},
		profiles:     map[string]*profile{},
		calls:        map[string]int{},
		rand:         rand.New(rand.NewPCG(1, 2)),
	}
}

// SetClock replaces the clock the rate limit reads.
func (s *Store) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// Fault kinds for SetFaults.
const (
	// FaultServerError answers HTTP 500 InternalServerError.
	FaultServerError = "5xx"
	// FaultThrottle answers HTTP 429 with Retry-After: 1, as ARM does when other clients of the
	// subscription spend its request budget.
	FaultThrottle = "throttle"
	// FaultTimeout holds the request for FaultHang or until the client gives up, then answers
	// HTTP 504 GatewayTimeout.
	FaultTimeout = "timeout"
	// FaultHang is how long a FaultTimeout request hangs.
	FaultHang = 2 * time.Second
)

// SetFaults makes that fraction of requests fail before anything is applied, each with one of kinds
// chosen at random (FaultServerError when none is given); seed makes the sequence repeatable.
func (s *Store) SetFaults(rate float64, seed uint64, kinds ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(kinds) == 0 {
		kinds = []string{FaultServerError}
	}
	s.faultRate, s.faultKinds = rate, kinds
	s.rand = rand.New(rand.NewPCG(seed, seed+1))
}

// AddResourceGroup creates an empty resource group. Listing the zones of a resource group that does
// not exist fails with 404 ResourceGroupNotFound, as Azure Resource Manager does.
func (s *Store) AddResourceGroup(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.groups[strings.ToLower(name)] = true
}

// AddZone creates a zone (with its SOA and NS record sets at the apex) in a resource group, which
// it creates if needed.
func (s *Store) AddZone(resourceGroup, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.groups[strings.ToLower(resourceGroup)] = true
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	z := &zone{name: name, sets: map[setKey]*armdns.RecordSet{}}
	s.zones[resourceGroup+"/"+name] = z
	s.putSet(resourceGroup, z, setKey{"@", armdns.RecordTypeSOA}, armdns.RecordSet{Properties: &armdns.RecordSetProperties{
		TTL: to.Ptr[int64](3600), SoaRecord: &armdns.SoaRecord{Host: to.Ptr("ns1-01.azure-dns.com."), Email: to.Ptr("azuredns-hostmaster.microsoft.com")},
	}})
	s.putSet(resourceGroup, z, setKey{"@", armdns.RecordTypeNS}, armdns.RecordSet{Properties: &armdns.RecordSetProperties{
		TTL: to.Ptr[int64](172800), NsRecords: []*armdns.NsRecord{{Nsdname: to.Ptr("ns1-01.azure-dns.com.")}},
	}})
}

// Calls returns how often each operation was called, keyed "<server>.<operation>", for example
// "RecordSets.CreateOrUpdate"; failed calls count.
func (s *Store) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.calls)
}

// Profiles returns the names of the Traffic Manager profiles of a resource group.
func (s *Store) Profiles(resourceGroup string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for _, p := range s.profiles {
		if p.resourceGroup == resourceGroup {
			names = append(names, *p.value.Name)
		}
	}
	return names
}

func (s *Store) zone(resourceGroup, name string) *zone {
	for key, z := range s.zones {
		if strings.EqualFold(key, resourceGroup+"/"+strings.TrimSuffix(name, ".")) {
			return z
		}
	}
	return nil
}

func (s *Store) zoneValue(resourceGroup string, z *zone) *armdns.Zone {
	return &armdns.Zone{
		ID:       to.Ptr("/subscriptions/" + s.subscription + "/resourceGroups/" + resourceGroup + "/providers/Microsoft.Network/dnszones/" + z.name),
		Name:     to.Ptr(z.name),
		Type:     to.Ptr("Microsoft.Network/dnszones"),
		Location: to.Ptr("global"),
		Properties: &armdns.ZoneProperties{
			NumberOfRecordSets: to.Ptr(int64(len(z.sets))),
			ZoneType:           to.Ptr(armdns.ZoneTypePublic),
		},
	}
}

func (s *Store) zonesServer() dnsfake.ZonesServer {
	return dnsfake.ZonesServer{
		NewListByResourceGroupPager: func(resourceGroup string, _ *armdns.ZonesClientListByResourceGroupOptions) (resp azfake.PagerResponder[armdns.ZonesClientListByResourceGroupResponse]) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.calls["Zones.ListByResourceGroup"]++
			if !s.groups[strings.ToLower(resourceGroup)] {
				resp.AddResponseError(http.StatusNotFound, "ResourceGroupNotFound")
				return resp
			}
			var page armdns.ZonesClientListByResourceGroupResponse
			for key, z := range s.zones {
				if strings.EqualFold(strings.SplitN(key, "/", 2)[0], resourceGroup) {
					page.Value = append(page.Value, s.zoneValue(resourceGroup, z))
				}
			}
			resp.AddPage(http.StatusOK, page, nil)
			return resp
		},
	}
}

// Dump returns the record sets of a zone, one line each sorted ("name type ttl values"); a set
// aliasing a Traffic Manager profile shows the profile's routing method and endpoints instead of
// values ("name type ttl tm=Weighted[target w=N;...]" or "tm=Geographic[target geo=IE,FR;...]"),
// with "(disabled)" on a disabled endpoint. It counts no call: tests compare what landed with what
// they meant.
func (s *Store) Dump(resourceGroup, zoneName string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	z := s.zone(resourceGroup, zoneName)
	if z == nil {
		return nil
	}
	var lines []string
	for key, set := range z.sets {
		p := set.Properties
		line := fmt.Sprintf("%s %s %d ", key.name, key.recordType, deref(p.TTL))
		var values []string
		switch {
		case p.TargetResource != nil:
			values = append(values, s.dumpProfile(deref(p.TargetResource.ID)))
		case p.CnameRecord != nil:
			values = append(values, deref(p.CnameRecord.Cname))
		}
		for _, r := range p.ARecords {
			values = append(values, deref(r.IPv4Address))
		}
		for _, r := range p.AaaaRecords {
			values = append(values, deref(r.IPv6Address))
		}
		for _, r := range p.NsRecords {
			values = append(values, deref(r.Nsdname))
		}
		for _, r := range p.TxtRecords {
			var parts []string
			for _, v := range r.Value {
				parts = append(parts, deref(v))
			}
			values = append(values, strconv.Quote(strings.Join(parts, "")))
		}
		if p.SoaRecord != nil {
			values = append(values, deref(p.SoaRecord.Host))
		}
		sort.Strings(values)
		lines = append(lines, line+strings.Join(values, ","))
	}
	sort.Strings(lines)
	return lines
}

// dumpProfile renders the profile id names for Dump. Callers hold s.mu.
func (s *Store) dumpProfile(id string) string {
	for _, p := range s.profiles {
		if !strings.EqualFold(deref(p.value.ID), id) {
			continue
		}
		props := p.value.Properties
		var eps []string
		for _, e := range props.Endpoints {
			ep := deref(e.Properties.Target)
			if props.TrafficRoutingMethod != nil && *props.TrafficRoutingMethod == armtrafficmanager.TrafficRoutingMethodGeographic {
				var codes []string
				for _, c := range e.Properties.GeoMapping {
					codes = append(codes, deref(c))
				}
				ep += " geo=" + strings.Join(codes, ",")
			} else {
				ep += fmt.Sprintf(" w=%d", deref(e.Properties.Weight))
			}
			if e.Properties.EndpointStatus != nil && *e.Properties.EndpointStatus == armtrafficmanager.EndpointStatusDisabled {
				ep += " (disabled)"
			}
			eps = append(eps, ep)
		}
		sort.Strings(eps)
		return fmt.Sprintf("tm=%s[%s]", deref(props.TrafficRoutingMethod), strings.Join(eps, ";"))
	}
	return "tm=missing[" + id + "]"
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
