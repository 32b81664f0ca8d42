// Package clouddns is an HTTP emulator of the Google Cloud DNS v1 API subset the
// google.golang.org/api/dns/v1 client uses to publish records: managedZones.list (with its dnsName
// filter) and managedZones.get (by zone name or numeric ID, as every managedZone path parameter),
// resourceRecordSets.list (paginated; name, type and the documented filter expressions),
// resourceRecordSets.create, get, patch and delete, changes.create and changes.get, in the API's
// JSON. The rules it enforces and their sources are those of CLOUD-API-RULES.md (B1-B5), kept in
// the shared notes.
//
// It is as strict as Cloud DNS: a Change within its quotas (1,000 additions, 1,000 deletions,
// 100,000 bytes of rrdata, 100 rrdatas per set, 10,000 sets per zone; else HTTP 403 quotaExceeded)
// is applied all or nothing, deletions first. A deletion must match the existing record set exactly
// (TTL, rrdatas, routing policy), else HTTP 412 conditionNotMet; deleting a missing set is 404
// notFound; adding a set that exists is 409 alreadyExists; the per-set methods answer the same way.
// Records sharing a name and type are one record set: plain rrdatas, or a routing policy of WRR
// items (weight >= 0) or geo items (a Google Cloud region, each once). A CNAME cannot sit beside
// other types or at the apex. A list type without a name, a filter beside name or type, and a
// filter expression it does not implement are refused (400), never ignored. It rate-limits all
// requests with a token bucket (HTTP 429 rateLimitExceeded), reports a change "pending" until it is
// read back, counts calls per operation, and injects faults on demand: 5xx, hung requests and dropped
// connections, before or after a change applies. It listens on loopback only and shares no code with
// the backends it checks.
package clouddns

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	dns "google.golang.org/api/dns/v1"

	"github.com/dnspolicy/dnspolicy-controller/test/emulators/serve"
)

// Operation names, as counted by Calls.
const (
	OpListManagedZones = "managedZones.list"
	OpGetManagedZone   = "managedZones.get"
	OpListRRSets       = "resourceRecordSets.list"
	OpCreateRRSet      = "resourceRecordSets.create"
	OpGetRRSet         = "resourceRecordSets.get"
	OpPatchRRSet       = "resourceRecordSets.patch"
	OpDeleteRRSet      = "resourceRecordSets.delete"
	OpCreateChange     = "changes.create"
	OpGetChange        = "changes.get"
)

// Cloud DNS's documented default quotas ("Quotas and limits"; the Quota object of the discovery
// document names each: rrsetAdditionsPerChange, rrsetDeletionsPerChange, totalRrdataSizePerChange,
// resourceRecordsPerRrset, rrsetsPerManagedZone).
const (
	MaxAdditionsPerChange   = 1000
	MaxDeletionsPerChange   = 1000
	MaxRrdataBytesPerChange = 100000
	MaxRecordsPerRRSet      = 100
	MaxRRSetsPerZone        = 10000
)

// Options configure an emulator. Zero values take the defaults.
type Options struct {
	// Project is the only project the emulator serves; others get 404.
	Project string
	// Zones are created at start (DNS names), each with an SOA and NS set at the apex.
	Zones []string
	// RequestsPerSecond and Burst size the token bucket of all requests (default 20 and 50); a
	// negative RequestsPerSecond disables the limit.
	RequestsPerSecond float64
	Burst             int
	// PageSize caps a page when the request asks for more or names no maximum (default 100).
	PageSize int
}

// Faults are injected into a share of requests, chosen at random.
type Faults struct {
	// Rate is the share of requests that fail, from 0 to 1.
	Rate float64
	// Kinds are the faults to choose from: FaultServerError, FaultTimeout, FaultDrop, FaultThrottle.
	Kinds []string
	// Hang is how long a FaultTimeout request hangs before failing (default 2s); the client's own
	// deadline usually ends it first.
	Hang time.Duration
}

// Fault kinds.
const (
	FaultServerError = "5xx"
	FaultTimeout     = "timeout"
	FaultDrop        = "drop"
	// FaultThrottle answers 429 rateLimitExceeded, as a burst of other clients in the project
	// would cause, whatever the token bucket holds.
	FaultThrottle = "throttle"
)

// Server is one emulated project.
type Server struct {
	mu       sync.Mutex
	opts     Options
	zones    map[string]*zone // by managed zone name
	faults   Faults
	calls    map[string]int
	injected map[string]int
	tokens   float64
	lastFill time.Time
	nextID   int
}

type zone struct {
	name    string // managed zone name (its ID in paths)
	dnsName string // with a trailing dot
	id      uint64
	sets    map[setKey]*dns.ResourceRecordSet
	changes map[string]*dns.Change
}

type setKey struct{ name, typ string }

// New returns an emulator with the zones of opts.
func New(opts Options) *Server {
	if opts.RequestsPerSecond == 0 {
		opts.RequestsPerSecond = 20
	}
	if opts.Burst == 0 {
		opts.Burst = 50
	}
	if opts.PageSize == 0 {
		opts.PageSize = 100
	}
	s := &Server{opts: opts, zones: map[string]*zone{}, calls: map[string]int{}, injected: map[string]int{},
		tokens: float64(opts.Burst), lastFill: time.Now()}
	for _, z := range opts.Zones {
		s.AddZone(z)
	}
	return s
}

// ZoneName is the managed zone name Cloud DNS users pick for a domain; the emulator derives it, so
// it differs from the DNS name and code that confuses the two fails.
func ZoneName(dnsName string) string {
	return "zone-" + strings.ReplaceAll(strings.Trim(strings.ToLower(dnsName), "."), ".", "-")
}

// AddZone creates a zone with its apex SOA and NS and returns its managed zone name.
func (s *Server) AddZone(dnsName string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	fqdn := strings.ToLower(strings.TrimSuffix(dnsName, ".")) + "."
	name := ZoneName(fqdn)
	if _, ok := s.zones[name]; ok {
		return name
	}
	s.nextID++
	z := &zone{name: name, dnsName: fqdn, id: uint64(1000 + s.nextID), sets: map[setKey]*dns.ResourceRecordSet{},
		changes: map[string]*dns.Change{}}
	z.sets[setKey{fqdn, "SOA"}] = &dns.ResourceRecordSet{Name: fqdn, Type: "SOA", Ttl: 21600,
		Rrdatas: []string{"ns-cloud-a1.googledomains.com. cloud-dns-hostmaster.google.com. 1 21600 3600 259200 300"}}
	z.sets[setKey{fqdn, "NS"}] = &dns.ResourceRecordSet{Name: fqdn, Type: "NS", Ttl: 21600,
		Rrdatas: []string{"ns-cloud-a1.googledomains.com.", "ns-cloud-a2.googledomains.com."}}
	s.zones[name] = z
	return name
}

// SetFaults replaces the fault injection settings.
func (s *Server) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = f
}

// Calls returns the requests received per operation, failed ones included.
func (s *Server) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.calls)
}

// Injected returns how many faults of each kind were injected, so a test can tell that its faults
// happened.
func (s *Server) Injected() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.injected)
}

// RecordSets returns copies of a zone's record sets sorted by name and type, without counting a call.
func (s *Server) RecordSets(zoneName string) []*dns.ResourceRecordSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	z, ok := s.zones[zoneName]
	if !ok {
		return nil
	}
	return z.sorted()
}

// Listen serves on addr, which must be a loopback address ("127.0.0.1:0" picks a port), and returns
// the server and the root URL to give option.WithEndpoint.
func (s *Server) Listen(addr string) (*http.Server, string, error) {
	srv, a, err := serve.Loopback(addr, s)
	if err != nil {
		return nil, "", err
	}
	return srv, "http://" + a.String() + "/", nil
}

// Dump returns the record sets of the zone for dnsName, one line each sorted by name and type
// ("name type ttl values" or "name type ttl wrr=w:values;... " / "geo=region:values;..."), without
// counting a call: tests compare what landed with what they meant.
func (s *Server) Dump(dnsName string) []string {
	var lines []string
	for _, rs := range s.RecordSets(ZoneName(dnsName)) {
		line := fmt.Sprintf("%s %s %d", rs.Name, rs.Type, rs.Ttl)
		switch rp := rs.RoutingPolicy; {
		case rp == nil:
			line += " " + sortedJoin(rs.Rrdatas)
		case rp.Wrr != nil:
			var items []string
			for _, it := range rp.Wrr.Items {
				items = append(items, fmt.Sprintf("%g:%s", it.Weight, sortedJoin(it.Rrdatas)))
			}
			line += " wrr=" + strings.Join(items, ";")
		case rp.Geo != nil:
			var items []string
			for _, it := range rp.Geo.Items {
				items = append(items, it.Location+":"+sortedJoin(it.Rrdatas))
			}
			line += " geo=" + strings.Join(items, ";")
		}
		lines = append(lines, line)
	}
	return lines
}

func sortedJoin(values []string) string {
	values = slices.Clone(values)
	slices.Sort(values)
	return strings.Join(values, ",")
}
