// Package route53 is an HTTP emulator of the Amazon Route 53 API subset the aws-sdk-go-v2 route53
// client uses to publish records: ListHostedZones, ListHostedZonesByName and ListResourceRecordSets
// (paginated, in Route 53's order: names with their labels reversed, then type),
// ChangeResourceRecordSets and GetChange, in Route 53's XML. The rules it enforces and their sources
// are those of CLOUD-API-RULES.md (A1-A10), kept in the shared notes.
//
// It is as strict as Route 53. A change that breaks the request schema (none or more than one of
// TTL+ResourceRecords and an alias, a weight or geolocation without SetIdentifier, ContinentCode
// with CountryCode, a value out of its range) is refused with InvalidInput before the zone is looked
// at. Otherwise the batch is validated whole and applied all or nothing, failing with
// InvalidChangeBatch for deleting a missing set or one whose values differ, creating a set that
// exists, a value given twice in a set, a CNAME beside other types or at the apex, weighted sets of
// one name and type with different TTLs, routing policies mixed in one name and type, an unknown
// geolocation, more than 1,000 ResourceRecord elements or 32,000 characters of values (UPSERT
// counting twice), and a set changed twice in one batch (a DELETE followed by a CREATE excepted).
// Alias and traffic-policy sets are refused as not implemented (HTTP 501), never stored half-checked.
// It throttles with a token bucket (HTTP 400 Throttling), reports changes PENDING before INSYNC,
// counts calls per operation (in all and per access key), and injects faults on demand: 5xx, hung
// requests, throttling and dropped connections; a test can hold one client's requests after its
// next change. It listens on loopback only and shares no code with the backends it checks.
package route53

import (
	"encoding/xml"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/test/emulators/serve"
)

// Operation names, as counted by Calls.
const (
	OpListHostedZones          = "ListHostedZones"
	OpListHostedZonesByName    = "ListHostedZonesByName"
	OpListResourceRecordSets   = "ListResourceRecordSets"
	OpChangeResourceRecordSets = "ChangeResourceRecordSets"
	OpGetChange                = "GetChange"
)

// Route 53's documented limits per ChangeResourceRecordSets request.
const (
	MaxRecordsPerChange    = 1000
	MaxValueCharsPerChange = 32000
)

// Options configure an emulator. Zero values take Route 53's defaults.
type Options struct {
	// Zones are created at start, each with an SOA and NS set at the apex.
	Zones []string
	// RequestsPerSecond and Burst size the token bucket of all requests (default 10 and 50);
	// a negative RequestsPerSecond disables throttling.
	RequestsPerSecond float64
	Burst             int
	// ZonesPageSize and RecordsPageSize cap a page when the request asks for more or names no
	// maximum (Route 53: 100 and 300).
	ZonesPageSize   int
	RecordsPageSize int
	// InsyncAfter is how long a change stays PENDING (default 100ms).
	InsyncAfter time.Duration
	// AccessKeys, when set, are the only access key IDs accepted (others get HTTP 403
	// InvalidClientTokenId); signatures are not verified.
	AccessKeys []string
}

// Faults are injected at random rates, each in [0,1], decided per request before anything else.
type Faults struct {
	// ServerErrorRate answers HTTP 500 InternalFailure without applying the request.
	ServerErrorRate float64
	// TimeoutRate holds the request without an answer for Hang (default 2s) or until the client
	// gives up, and does not apply it.
	TimeoutRate float64
	Hang        time.Duration
	// ThrottleRate answers Throttling regardless of the token bucket.
	ThrottleRate float64
	// DropRate applies the request and then closes the connection without an answer: the client
	// cannot tell whether a change landed.
	DropRate float64
	// Seed makes the fault sequence repeatable for a given request order.
	Seed uint64
}

// Server is one emulated Route 53 account. It is safe for concurrent use.
type Server struct {
	opts Options

	mu       sync.Mutex
	zones    map[string]*zone // by ID
	order    []string         // zone IDs in creation order
	changes  map[string]time.Time
	nextID   int
	calls    map[string]int
	faults   Faults
	rng      *rand.Rand
	burst    int // throttle the next burst requests
	drops    int // drop the answers of the next drops requests
	injected map[string]int
	byKey    map[string]map[string]int // calls per access key, per operation
	// changedBy lists, per access key, the record set names of each change that applied.
	changedBy map[string][][]string
	holds     map[string]*Hold // by access key
	tokens    float64
	lastToken time.Time
	now       func() time.Time
}

type zone struct {
	id, name string // name lower case with a trailing dot
	sets     []*recordSet
}

// recordSet is one stored set; names are lower case, with a trailing dot and "*" as \052.
type recordSet struct {
	Name, Type, SetIdentifier string
	Weight                    *int64
	Geo                       *geoLocationXML
	TTL                       int64
	Values                    []string
}

// New returns an emulator holding the zones of opts.
func New(opts Options) *Server {
	if opts.RequestsPerSecond == 0 {
		opts.RequestsPerSecond = 10
	}
	if opts.Burst == 0 {
		opts.Burst = 50
	}
	if opts.ZonesPageSize == 0 {
		opts.ZonesPageSize = 100
	}
	if opts.RecordsPageSize == 0 {
		opts.RecordsPageSize = 300
	}
	if opts.InsyncAfter == 0 {
		opts.InsyncAfter = 100 * time.Millisecond
	}
	s := &Server{
		opts:      opts,
		zones:     map[string]*zone{},
		changes:   map[string]time.Time{},
		calls:     map[string]int{},
		injected:  map[string]int{},
		byKey:     map[string]map[string]int{},
		changedBy: map[string][][]string{},
		holds:     map[string]*Hold{},
		rng:       rand.New(rand.NewPCG(0, 0)),
		tokens:    float64(opts.Burst),
		now:       time.Now,
	}
	s.lastToken = s.now()
	for _, name := range opts.Zones {
		s.AddZone(name)
	}
	return s
}

// AddZone creates a hosted zone with its apex SOA and NS sets and returns its ID (without the
// /hostedzone/ prefix).
func (s *Server) AddZone(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	id := fmt.Sprintf("Z%011dEMU", s.nextID)
	fqdn := canonicalName(name)
	s.zones[id] = &zone{id: id, name: fqdn, sets: []*recordSet{
		{Name: fqdn, Type: "SOA", TTL: 900, Values: []string{"ns-1.emulator.invalid. hostmaster.emulator.invalid. 1 7200 900 1209600 86400"}},
		{Name: fqdn, Type: "NS", TTL: 172800, Values: []string{"ns-1.emulator.invalid.", "ns-2.emulator.invalid."}},
	}}
	s.order = append(s.order, id)
	return id
}

// SetFaults replaces the injected faults.
func (s *Server) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.Hang == 0 {
		f.Hang = 2 * time.Second
	}
	s.faults = f
	s.rng = rand.New(rand.NewPCG(f.Seed, f.Seed^0x9e3779b97f4a7c15))
}

// ThrottleNext answers the next n requests with Throttling: a burst of throttling.
func (s *Server) ThrottleNext(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.burst = n
}

// DropNext applies the next n requests and closes their connections without an answer.
func (s *Server) DropNext(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drops = n
}

// Injected returns how many faults of each kind ("error", "timeout", "throttle", "drop") were
// injected, so a test can tell that its faults happened.
func (s *Server) Injected() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.injected)
}

// Calls returns the requests received per operation, throttled and failed ones included.
func (s *Server) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.calls)
}

// CallsBy returns the requests signed with one access key per operation, throttled and failed ones
// included: which of several clients sharing a zone (clusters, each with its own key) keeps writing.
func (s *Server) CallsBy(accessKey string) map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.byKey[accessKey])
}

// ChangedBy returns, for each change signed with accessKey that applied, the names of the record
// sets it changed (as sent): a test tells the writes it expects (a lease renewal) from the others.
func (s *Server) ChangedBy(accessKey string) [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.changedBy[accessKey])
}

// Hold holds a client's requests after one of its changes, so a test can put another client's write
// between a client's change and its next read: the interleaving of two writers that start together.
type Hold struct {
	holding  chan struct{}
	released chan struct{}
	once     sync.Once
}

// Holding is closed once the change has applied and the client's later requests are held.
func (h *Hold) Holding() <-chan struct{} { return h.holding }

// Release lets the held requests (and every later one) through; it may be called more than once.
func (h *Hold) Release() { h.once.Do(func() { close(h.released) }) }

// HoldAfterChange arms a hold for the client signing with accessKey: after its next successful
// ChangeResourceRecordSets, every request it sends waits until Release (or until it gives up). The
// change itself is answered at once.
func (s *Server) HoldAfterChange(accessKey string) *Hold {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := &Hold{holding: make(chan struct{}), released: make(chan struct{})}
	s.holds[accessKey] = h
	return h
}

// Listen serves the API on addr, which must be a loopback address ("127.0.0.1:0" picks a port),
// until the returned server is closed. It returns the base URL for the SDK's BaseEndpoint.
func (s *Server) Listen(addr string) (*http.Server, string, error) {
	srv, a, err := serve.Loopback(addr, s)
	if err != nil {
		return nil, "", err
	}
	return srv, "http://" + a.String(), nil
}

func (s *Server) listZones(r *http.Request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	marker := r.URL.Query().Get("marker")
	start := 0
	if marker != "" {
		start = -1
		for i, id := range s.order {
			if id == marker {
				start = i
			}
		}
		if start < 0 {
			return nil, &apiError{status: http.StatusBadRequest, code: "InvalidInput", message: "invalid marker"}
		}
	}
	n := maxItems(r, s.opts.ZonesPageSize)
	resp := listHostedZonesResponse{Xmlns: xmlns, Marker: marker, MaxItems: n}
	end := min(start+n, len(s.order))
	for _, id := range s.order[start:end] {
		z := s.zones[id]
		resp.HostedZones = append(resp.HostedZones, hostedZoneXML{ID: "/hostedzone/" + id, Name: z.name,
			CallerReference: id, ResourceRecordSetCount: len(z.sets)})
	}
	if end < len(s.order) {
		resp.IsTruncated, resp.NextMarker = true, s.order[end]
	}
	return resp, nil
}

// listZonesByName answers ListHostedZonesByName: zones sorted by name with the labels reversed (then
// by ID, as one account may hold several zones of one name), from the first zone whose name is at
// least dnsname, or, with hostedzoneid as well, from that zone on.
func (s *Server) listZonesByName(r *http.Request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := r.URL.Query()
	dnsName, zoneID := q.Get("dnsname"), q.Get("hostedzoneid")
	if zoneID != "" && dnsName == "" {
		// The API model: hostedzoneid is sent only with dnsname, from a previous response's
		// NextDNSName and NextHostedZoneId. Route 53's wording for breaking that was not captured.
		return nil, &apiError{status: http.StatusBadRequest, code: "InvalidInput",
			message: "Invalid request: hostedzoneid requires dnsname"}
	}
	zones := make([]*zone, 0, len(s.zones))
	for _, z := range s.zones {
		zones = append(zones, z)
	}
	less := func(a, b *zone) int {
		return strings.Compare(reversed(a.name)+" "+a.id, reversed(b.name)+" "+b.id)
	}
	slices.SortFunc(zones, less)
	start := 0
	if dnsName != "" {
		from := &zone{name: canonicalName(dnsName), id: zoneID}
		start, _ = slices.BinarySearchFunc(zones, from, less)
	}
	n := maxItems(r, s.opts.ZonesPageSize)
	end := min(start+n, len(zones))
	resp := listHostedZonesByNameResponse{Xmlns: xmlns, DNSName: dnsName, HostedZoneID: zoneID, MaxItems: n}
	for _, z := range zones[start:end] {
		resp.HostedZones = append(resp.HostedZones, hostedZoneXML{ID: "/hostedzone/" + z.id, Name: z.name,
			CallerReference: z.id, ResourceRecordSetCount: len(z.sets)})
	}
	if end < len(zones) {
		resp.IsTruncated, resp.NextDNSName, resp.NextHostedZoneID = true, zones[end].name, zones[end].id
	}
	return resp, nil
}

// listRecordSets answers ListResourceRecordSets in Route 53's order (sortSets), from the first set
// at or after name, type and identifier.
func (s *Server) listRecordSets(r *http.Request, zoneID string) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	z, ok := s.zones[zoneID]
	if !ok {
		return nil, noSuchZone(zoneID)
	}
	q := r.URL.Query()
	if q.Get("type") != "" && q.Get("name") == "" {
		// The API model: "If you specify Type but not Name, Amazon Route 53 returns the InvalidInput
		// error." Its wording was not captured.
		return nil, &apiError{status: http.StatusBadRequest, code: "InvalidInput",
			message: "Invalid request: the type parameter (StartRecordType) requires the name parameter (StartRecordName)"}
	}
	sortSets(z.sets)
	start := 0
	if name := q.Get("name"); name != "" {
		from := &recordSet{Name: canonicalName(name), Type: q.Get("type"), SetIdentifier: q.Get("identifier")}
		start = sort.Search(len(z.sets), func(i int) bool { return !lessSet(z.sets[i], from) })
	}
	n := maxItems(r, s.opts.RecordsPageSize)
	end := min(start+n, len(z.sets))
	resp := listRecordSetsResponse{Xmlns: xmlns, MaxItems: n}
	for _, rs := range z.sets[start:end] {
		resp.RecordSets = append(resp.RecordSets, rs.toXML())
	}
	if end < len(z.sets) {
		next := z.sets[end]
		resp.IsTruncated = true
		resp.NextRecordName, resp.NextRecordType, resp.NextRecordIdentifier = next.Name, next.Type, next.SetIdentifier
	}
	return resp, nil
}

func (s *Server) getChange(id string) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.changes[id]
	if !ok {
		return nil, &apiError{status: http.StatusNotFound, code: "NoSuchChange", message: "A change with the specified change ID does not exist."}
	}
	return getChangeResponse{Xmlns: xmlns, ChangeInfo: s.changeInfo(id, at)}, nil
}

func (s *Server) changeInfo(id string, at time.Time) changeInfoXML {
	status := "PENDING"
	if s.now().Sub(at) >= s.opts.InsyncAfter {
		status = "INSYNC"
	}
	return changeInfoXML{ID: "/change/" + id, Status: status, SubmittedAt: at.UTC().Format(time.RFC3339)}
}

func (s *Server) change(r *http.Request, zoneID string) (any, *apiError) {
	var req changeRequest
	if err := xml.NewDecoder(r.Body).Decode(&req); err != nil {
		return nil, &apiError{status: http.StatusBadRequest, code: "InvalidInput", message: "malformed request body"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	z, ok := s.zones[zoneID]
	if !ok {
		return nil, noSuchZone(zoneID)
	}
	next, refused := applyBatch(z, req.Changes)
	if refused != nil {
		return nil, refused
	}
	z.sets = next
	names := make([]string, len(req.Changes))
	for i, c := range req.Changes {
		names[i] = c.RecordSet.Name
	}
	key := accessKeyOf(r)
	s.changedBy[key] = append(s.changedBy[key], names)
	s.nextID++
	id := fmt.Sprintf("C%011dEMU", s.nextID)
	s.changes[id] = s.now()
	return changeResponse{Xmlns: xmlns, ChangeInfo: s.changeInfo(id, s.changes[id])}, nil
}

func noSuchZone(id string) *apiError {
	return &apiError{status: http.StatusNotFound, code: "NoSuchHostedZone", message: "No hosted zone found with ID: " + id}
}

// Dump returns the record sets of the zone named dnsName as Route 53 holds them, one line each in
// listing order ("name type ttl [set=ID] [weight=N] [geo=continent/country/subdivision] values"),
// without counting a call: tests compare what landed with what they meant.
func (s *Server) Dump(dnsName string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	fqdn := canonicalName(dnsName)
	for _, z := range s.zones {
		if z.name != fqdn {
			continue
		}
		sets := slices.Clone(z.sets)
		sortSets(sets)
		var lines []string
		for _, rs := range sets {
			line := fmt.Sprintf("%s %s %d", rs.Name, rs.Type, rs.TTL)
			if rs.SetIdentifier != "" {
				line += " set=" + rs.SetIdentifier
			}
			if rs.Weight != nil {
				line += fmt.Sprintf(" weight=%d", *rs.Weight)
			}
			if g := rs.Geo; g != nil {
				line += fmt.Sprintf(" geo=%s/%s/%s", g.ContinentCode, g.CountryCode, g.SubdivisionCode)
			}
			values := slices.Clone(rs.Values)
			slices.Sort(values)
			lines = append(lines, line+" "+strings.Join(values, ","))
		}
		return lines
	}
	return nil
}
