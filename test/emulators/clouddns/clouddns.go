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
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
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

// pathRE splits a request path: project, managed zone (name or numeric ID), collection, and the
// collection's item: a change ID, or a record set's name and type.
var pathRE = regexp.MustCompile(`^/dns/v1/projects/([^/]+)/managedZones(?:/([^/]+)(?:/(rrsets|changes)(?:/([^/]+)(?:/([^/]+))?)?)?)?$`)

// operation names the API method of a request, "" when the emulator has none.
func operation(method, zone, collection, item, itemType string) string {
	switch {
	case zone == "" && method == http.MethodGet:
		return OpListManagedZones
	case zone != "" && collection == "" && method == http.MethodGet:
		return OpGetManagedZone
	case collection == "rrsets" && item == "" && method == http.MethodGet:
		return OpListRRSets
	case collection == "rrsets" && item == "" && method == http.MethodPost:
		return OpCreateRRSet
	case collection == "rrsets" && itemType != "" && method == http.MethodGet:
		return OpGetRRSet
	case collection == "rrsets" && itemType != "" && method == http.MethodPatch:
		return OpPatchRRSet
	case collection == "rrsets" && itemType != "" && method == http.MethodDelete:
		return OpDeleteRRSet
	case collection == "changes" && item == "" && itemType == "" && method == http.MethodPost:
		return OpCreateChange
	case collection == "changes" && item != "" && itemType == "" && method == http.MethodGet:
		return OpGetChange
	}
	return ""
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := pathRE.FindStringSubmatch(r.URL.Path)
	if m == nil {
		writeError(w, apiErr(http.StatusNotFound, "notFound", "unknown path"))
		return
	}
	project, zoneName, collection, item, itemType := m[1], m[2], m[3], m[4], m[5]
	op := operation(r.Method, zoneName, collection, item, itemType)
	if op == "" {
		writeError(w, apiErr(http.StatusMethodNotAllowed, "methodNotAllowed", "unsupported operation"))
		return
	}

	s.mu.Lock()
	s.calls[op]++
	fault := s.pickFault()
	limited := !s.takeToken()
	if fault != "" && !limited {
		s.injected[fault]++
	}
	hang := s.faults.Hang
	s.mu.Unlock()

	if limited {
		writeError(w, apiErr(http.StatusTooManyRequests, "rateLimitExceeded", "Rate limit exceeded."))
		return
	}
	// A fault strikes before or after the work, so a client cannot tell whether a change applied;
	// throttling always comes before.
	after := rand.IntN(2) == 0 && fault != FaultThrottle
	if fault != "" && !(after && op == OpCreateChange) {
		injectFault(w, r, fault, hang)
		return
	}
	if project != s.opts.Project {
		writeError(w, apiErr(http.StatusNotFound, "notFound", fmt.Sprintf("The project %q does not exist.", project)))
		return
	}

	var body any
	var e *apiError
	switch op {
	case OpListManagedZones:
		body, e = s.listZones(r)
	case OpGetManagedZone:
		body, e = s.getZone(zoneName)
	case OpListRRSets:
		body, e = s.listRRSets(r, zoneName)
	case OpCreateRRSet:
		body, e = s.createRRSet(r, zoneName)
	case OpGetRRSet:
		body, e = s.getRRSet(zoneName, item, itemType)
	case OpPatchRRSet:
		body, e = s.patchRRSet(r, zoneName, item, itemType)
	case OpDeleteRRSet:
		body, e = s.deleteRRSet(zoneName, item, itemType)
	case OpCreateChange:
		body, e = s.createChange(r, zoneName)
	case OpGetChange:
		body, e = s.getChange(zoneName, item)
	}
	if fault != "" {
		injectFault(w, r, fault, hang)
		return
	}
	if e != nil {
		writeError(w, e)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	_ = json.NewEncoder(w).Encode(body)
}

func (s *Server) pickFault() string {
	if s.faults.Rate <= 0 || len(s.faults.Kinds) == 0 || rand.Float64() >= s.faults.Rate {
		return ""
	}
	return s.faults.Kinds[rand.IntN(len(s.faults.Kinds))]
}

func (s *Server) takeToken() bool {
	if s.opts.RequestsPerSecond < 0 {
		return true
	}
	now := time.Now()
	s.tokens = min(float64(s.opts.Burst), s.tokens+now.Sub(s.lastFill).Seconds()*s.opts.RequestsPerSecond)
	s.lastFill = now
	if s.tokens < 1 {
		return false
	}
	s.tokens--
	return true
}

func injectFault(w http.ResponseWriter, r *http.Request, fault string, hang time.Duration) {
	switch fault {
	case FaultTimeout:
		if hang == 0 {
			hang = 2 * time.Second
		}
		select {
		case <-r.Context().Done():
		case <-time.After(hang):
		}
		writeError(w, apiErr(http.StatusGatewayTimeout, "backendError", "Deadline exceeded."))
	case FaultThrottle:
		writeError(w, apiErr(http.StatusTooManyRequests, "rateLimitExceeded", "Rate limit exceeded."))
	case FaultDrop:
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		writeError(w, apiErr(http.StatusBadGateway, "backendError", "Connection reset."))
	default:
		writeError(w, apiErr(http.StatusServiceUnavailable, "backendError", "Backend Error"))
	}
}

type apiError struct {
	code    int
	reason  string
	message string
	// more are further problems of the same reason, each its own errors[] entry, as Cloud DNS
	// reports every quota a change breaks.
	more []string
}

func apiErr(code int, reason, message string) *apiError {
	return &apiError{code: code, reason: reason, message: message}
}

// writeError writes Google's JSON error shape.
func writeError(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(e.code)
	entries := []map[string]string{{"domain": "global", "reason": e.reason, "message": e.message}}
	for _, m := range e.more {
		entries = append(entries, map[string]string{"domain": "global", "reason": e.reason, "message": m})
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"code": e.code, "message": e.message, "errors": entries,
	}})
}

// page picks the page of a listing whose items have the sorted keys. The page token names the last
// key of the page before, as Cloud DNS's opaque tokens continue after the last item returned: a
// listing that runs while the zone changes may see a set in its old or new version, but never skips
// or repeats a set that was there throughout (tokens by offset would, when sets before it go).
func (s *Server) page(r *http.Request, keys []string) (int, int, string, *apiError) {
	size := s.opts.PageSize
	if v := r.URL.Query().Get("maxResults"); v != "" {
		m, err := strconv.Atoi(v)
		if err != nil || m <= 0 {
			return 0, 0, "", apiErr(http.StatusBadRequest, "invalid", "Invalid value for 'maxResults'")
		}
		size = min(size, m)
	}
	start := 0
	if t := r.URL.Query().Get("pageToken"); t != "" {
		after, err := base64.RawURLEncoding.DecodeString(t)
		if err != nil || len(after) == 0 {
			return 0, 0, "", apiErr(http.StatusBadRequest, "invalid", "Invalid value for 'pageToken'")
		}
		start = sort.Search(len(keys), func(i int) bool { return keys[i] > string(after) })
	}
	end := min(len(keys), start+size)
	next := ""
	if end < len(keys) {
		next = base64.RawURLEncoding.EncodeToString([]byte(keys[end-1]))
	}
	return start, end, next, nil
}

// listZones answers managedZones.list: zones by name, only those of dnsName when it is given.
// managedZones.list has no filter parameter in the discovery document (G-disc), so one sent is
// refused rather than ignored.
func (s *Server) listZones(r *http.Request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := r.URL.Query()
	if q.Has("filter") {
		return nil, apiErr(http.StatusBadRequest, "invalid", "Invalid parameter 'filter': managedZones.list takes no filter (use dnsName)")
	}
	dnsName := q.Get("dnsName")
	names := make([]string, 0, len(s.zones))
	for n, z := range s.zones {
		// "Restricts the list to return only zones with this domain name" (G-disc): the name as
		// written in DNS, with its trailing dot; one sent without it names the same domain.
		if dnsName == "" || z.dnsName == fqdn(dnsName) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	start, end, next, e := s.page(r, names)
	if e != nil {
		return nil, e
	}
	resp := &dns.ManagedZonesListResponse{Kind: "dns#managedZonesListResponse", NextPageToken: next, ManagedZones: []*dns.ManagedZone{}}
	for _, n := range names[start:end] {
		resp.ManagedZones = append(resp.ManagedZones, s.zones[n].resource())
	}
	return resp, nil
}

// resource is the zone as the API returns it.
func (z *zone) resource() *dns.ManagedZone {
	mz := &dns.ManagedZone{Kind: "dns#managedZone", Name: z.name, DnsName: z.dnsName, Id: z.id, Visibility: "public"}
	if ns := z.sets[setKey{z.dnsName, "NS"}]; ns != nil {
		mz.NameServers = slices.Clone(ns.Rrdatas)
	}
	return mz
}

// getZone answers managedZones.get, by zone name or numeric ID.
func (s *Server) getZone(zoneName string) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	z, e := s.zone(zoneName)
	if e != nil {
		return nil, e
	}
	return z.resource(), nil
}

// zone finds a zone by the managedZone path parameter, which "can be the managed zone name or ID"
// (G-disc).
func (s *Server) zone(nameOrID string) (*zone, *apiError) {
	if z, ok := s.zones[nameOrID]; ok {
		return z, nil
	}
	if id, err := strconv.ParseUint(nameOrID, 10, 64); err == nil {
		for _, z := range s.zones {
			if z.id == id {
				return z, nil
			}
		}
	}
	return nil, apiErr(http.StatusNotFound, "notFound", fmt.Sprintf("The 'parameters.managedZone' resource named '%s' does not exist.", nameOrID))
}

func fqdn(name string) string {
	return strings.ToLower(strings.TrimSuffix(name, ".")) + "."
}

func (z *zone) sorted() []*dns.ResourceRecordSet {
	out := make([]*dns.ResourceRecordSet, 0, len(z.sets))
	for _, rs := range z.sets {
		out = append(out, clone(rs))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Type < out[j].Type
	})
	return out
}

// setFilter is what selects the sets of a resourceRecordSets.list: a name (or a domain suffix) and
// a type, each optional.
type setFilter struct {
	name, suffix, typ string
}

func (f setFilter) keeps(rs *dns.ResourceRecordSet) bool {
	switch {
	case f.name != "" && rs.Name != f.name:
		return false
	case f.suffix != "" && rs.Name != f.suffix && !strings.HasSuffix(rs.Name, "."+f.suffix):
		return false
	}
	return f.typ == "" || rs.Type == f.typ
}

var (
	filterName   = regexp.MustCompile(`^name\s*=\s*"([^"]*)"$`)
	filterSuffix = regexp.MustCompile(`^name\s*=\s*has_suffix\(\s*"([^"]*)"\s*\)$`)
	filterType   = regexp.MustCompile(`^type\s*=\s*"([^"]*)"$`)
	filterAnd    = regexp.MustCompile(`\s+AND\s+`)
)

// listFilter reads the name, type and filter parameters of resourceRecordSets.list by the rules of
// the discovery document (G-disc): type needs name; filter excludes both and must name a domain,
// optionally with AND type; has_suffix matches by domain suffix. The emulator implements the
// expressions the document gives as examples (name="x.", name=has_suffix("x."), each with AND
// type="T" in either order) and refuses every other AIP-160 expression as not implemented. The
// status for breaking these rules is not documented; 400 invalid is Google's answer to a bad
// parameter (CLOUD-API-RULES.md B3.7).
func listFilter(q url.Values) (setFilter, *apiError) {
	name, typ, filter := strings.ToLower(q.Get("name")), q.Get("type"), strings.TrimSpace(q.Get("filter"))
	if filter == "" {
		if typ != "" && name == "" {
			return setFilter{}, apiErr(http.StatusBadRequest, "invalid", "Invalid value for 'type': the 'name' parameter must be given with 'type'")
		}
		return setFilter{name: name, typ: typ}, nil
	}
	if name != "" || typ != "" {
		return setFilter{}, apiErr(http.StatusBadRequest, "invalid", "Invalid value for 'filter': the 'name' and 'type' parameters must be omitted when 'filter' is given")
	}
	var f setFilter
	terms := filterAnd.Split(filter, -1)
	for _, term := range terms {
		term = strings.TrimSpace(term)
		switch m := [][]string{filterName.FindStringSubmatch(term), filterSuffix.FindStringSubmatch(term), filterType.FindStringSubmatch(term)}; {
		case len(terms) > 2:
		case m[0] != nil && f.name == "" && f.suffix == "":
			f.name = strings.ToLower(m[0][1])
			continue
		case m[1] != nil && f.name == "" && f.suffix == "":
			f.suffix = strings.ToLower(m[1][1])
			continue
		case m[2] != nil && f.typ == "":
			f.typ = m[2][1]
			continue
		}
		return setFilter{}, apiErr(http.StatusBadRequest, "invalid", fmt.Sprintf("Invalid value for 'filter': %q: the Cloud DNS emulator implements only "+
			`name="<domain>" or name=has_suffix("<domain>"), optionally AND type="<type>"`, filter))
	}
	if f.name == "" && f.suffix == "" {
		return setFilter{}, apiErr(http.StatusBadRequest, "invalid", fmt.Sprintf("Invalid value for 'filter': %q: a filter must specify a domain in the 'name' field", filter))
	}
	return f, nil
}

func (s *Server) listRRSets(r *http.Request, zoneName string) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	z, e := s.zone(zoneName)
	if e != nil {
		return nil, e
	}
	f, e := listFilter(r.URL.Query())
	if e != nil {
		return nil, e
	}
	sets := slices.DeleteFunc(z.sorted(), func(rs *dns.ResourceRecordSet) bool { return !f.keeps(rs) })
	keys := make([]string, len(sets))
	for i, rs := range sets {
		keys[i] = rs.Name + " " + rs.Type // " " sorts before any character of a name: the order of sorted()
	}
	start, end, next, e := s.page(r, keys)
	if e != nil {
		return nil, e
	}
	return &dns.ResourceRecordSetsListResponse{Kind: "dns#resourceRecordSetsListResponse", NextPageToken: next,
		Rrsets: sets[start:end]}, nil
}

// rrsetField is how Cloud DNS names the record set of a resourceRecordSets call in its errors
// (terraform-provider-google#9112; CLOUD-API-RULES.md B4.13).
func rrsetField(string, int) string { return "entity.rrset" }

// createRRSet answers resourceRecordSets.create: the set is added as a change with one addition
// would add it (409 alreadyExists when it exists), and returned as stored.
func (s *Server) createRRSet(r *http.Request, zoneName string) (any, *apiError) {
	var rs dns.ResourceRecordSet
	if err := json.NewDecoder(r.Body).Decode(&rs); err != nil {
		return nil, apiErr(http.StatusBadRequest, "parseError", "Parse Error")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	z, e := s.zone(zoneName)
	if e != nil {
		return nil, e
	}
	if e := z.apply(&dns.Change{Additions: []*dns.ResourceRecordSet{&rs}}, rrsetField); e != nil {
		return nil, e
	}
	return clone(z.sets[keyOf(&rs)]), nil
}

func keyOf(rs *dns.ResourceRecordSet) setKey { return setKey{strings.ToLower(rs.Name), rs.Type} }

// stored finds the set a per-set call names in its path. Its absence is 404 notFound, worded as
// Cloud DNS words a missing resource (the wording for these calls was not captured).
func (z *zone) stored(name, typ string) (*dns.ResourceRecordSet, *apiError) {
	rs, ok := z.sets[setKey{strings.ToLower(name), typ}]
	if !ok {
		return nil, apiErr(http.StatusNotFound, "notFound", fmt.Sprintf("The 'parameters.name' resource named '%s (%s)' does not exist.", name, typ))
	}
	return rs, nil
}

// getRRSet answers resourceRecordSets.get.
func (s *Server) getRRSet(zoneName, name, typ string) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	z, e := s.zone(zoneName)
	if e != nil {
		return nil, e
	}
	rs, e := z.stored(name, typ)
	if e != nil {
		return nil, e
	}
	return clone(rs), nil
}

// patchRRSet answers resourceRecordSets.patch, "a partial update to an existing ResourceRecordSet"
// (G-disc): the fields the body sends replace the stored ones, the others stay, and the result must
// be a valid set (rrdatas or a routing policy, not both), checked as a change replacing the set
// would be. The name and type, which identify the set, cannot be changed.
func (s *Server) patchRRSet(r *http.Request, zoneName, name, typ string) (any, *apiError) {
	var fields map[string]json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&fields); err != nil {
		return nil, apiErr(http.StatusBadRequest, "parseError", "Parse Error")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	z, e := s.zone(zoneName)
	if e != nil {
		return nil, e
	}
	cur, e := z.stored(name, typ)
	if e != nil {
		return nil, e
	}
	merged := map[string]json.RawMessage{}
	b, _ := json.Marshal(cur)
	_ = json.Unmarshal(b, &merged)
	for k, v := range fields {
		merged[k] = v
	}
	b, _ = json.Marshal(merged)
	var next dns.ResourceRecordSet
	if err := json.Unmarshal(b, &next); err != nil {
		return nil, apiErr(http.StatusBadRequest, "parseError", "Parse Error")
	}
	if keyOf(&next) != keyOf(cur) {
		return nil, apiErr(http.StatusBadRequest, "invalid", fmt.Sprintf("Invalid value for 'entity.rrset': the name and type of '%s (%s)' cannot be changed", name, typ))
	}
	if e := z.apply(&dns.Change{Deletions: []*dns.ResourceRecordSet{cur}, Additions: []*dns.ResourceRecordSet{&next}}, rrsetField); e != nil {
		return nil, e
	}
	return clone(z.sets[keyOf(&next)]), nil
}

// deleteRRSet answers resourceRecordSets.delete with the empty ResourceRecordSetsDeleteResponse.
func (s *Server) deleteRRSet(zoneName, name, typ string) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	z, e := s.zone(zoneName)
	if e != nil {
		return nil, e
	}
	cur, e := z.stored(name, typ)
	if e != nil {
		return nil, e
	}
	if e := z.apply(&dns.Change{Deletions: []*dns.ResourceRecordSet{cur}}, rrsetField); e != nil {
		return nil, e
	}
	return &dns.ResourceRecordSetsDeleteResponse{}, nil
}

func (s *Server) getChange(zoneName, id string) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	z, e := s.zone(zoneName)
	if e != nil {
		return nil, e
	}
	c, ok := z.changes[id]
	if !ok {
		return nil, apiErr(http.StatusNotFound, "notFound", fmt.Sprintf("The 'parameters.changeId' resource named '%s' does not exist.", id))
	}
	// A change is "pending" when created and "done" from the first read on.
	out := *c
	c.Status = "done"
	return &out, nil
}

func (s *Server) createChange(r *http.Request, zoneName string) (any, *apiError) {
	var c dns.Change
	if err := json.NewDecoder(r.Body).Decode(&c); err != nil {
		return nil, apiErr(http.StatusBadRequest, "parseError", "Parse Error")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	z, e := s.zone(zoneName)
	if e != nil {
		return nil, e
	}
	if e := z.apply(&c, changeField); e != nil {
		return nil, e
	}
	s.nextID++
	c.Id = strconv.Itoa(s.nextID)
	c.Kind = "dns#change"
	c.Status = "pending"
	c.StartTime = time.Now().UTC().Format(time.RFC3339)
	z.changes[c.Id] = &c
	return &c, nil
}

// changeField is how Cloud DNS names the additions and deletions of a Change in its errors.
func changeField(list string, i int) string { return fmt.Sprintf("entity.change.%s[%d]", list, i) }

// apply validates a change whole, then applies it: deletions first, then additions. field names
// the i-th set of a list ("additions", "deletions") in errors.
func (z *zone) apply(c *dns.Change, field func(list string, i int) string) *apiError {
	if len(c.Additions) == 0 && len(c.Deletions) == 0 {
		return apiErr(http.StatusBadRequest, "required", "The 'entity.change' resource must have at least one addition or deletion.")
	}
	if e := perChangeQuotas(c); e != nil {
		return e
	}
	next := make(map[setKey]*dns.ResourceRecordSet, len(z.sets))
	for k, v := range z.sets {
		next[k] = v
	}
	for i, d := range c.Deletions {
		field := field("deletions", i)
		if d == nil {
			return apiErr(http.StatusBadRequest, "required", "Required field '"+field+"' not specified")
		}
		k := setKey{strings.ToLower(d.Name), d.Type}
		cur, ok := next[k]
		if !ok {
			return apiErr(http.StatusNotFound, "notFound", fmt.Sprintf("The resource '%s' named '%s (%s)' does not exist.", field, d.Name, d.Type))
		}
		if !sameSet(cur, d) {
			return apiErr(http.StatusPreconditionFailed, "conditionNotMet", fmt.Sprintf("Precondition not met for '%s'", field))
		}
		delete(next, k)
	}
	for i, a := range c.Additions {
		field := field("additions", i)
		if e := z.validate(field, a); e != nil {
			return e
		}
		k := setKey{strings.ToLower(a.Name), a.Type}
		if _, ok := next[k]; ok {
			return apiErr(http.StatusConflict, "alreadyExists", fmt.Sprintf("The resource '%s' named '%s (%s)' already exists", field, a.Name, a.Type))
		}
		stored := clone(a)
		stored.Name = strings.ToLower(a.Name)
		stored.Kind = "dns#resourceRecordSet"
		next[k] = stored
	}
	if len(next) > MaxRRSetsPerZone && len(next) > len(z.sets) {
		return quotaExceeded([]string{"The change would exceed quota for rrsets per managed zone."})
	}
	types := map[string][]string{}
	for k := range next {
		types[k.name] = append(types[k.name], k.typ)
	}
	for name, ts := range types {
		if len(ts) > 1 && slices.Contains(ts, "CNAME") {
			return apiErr(http.StatusBadRequest, "cnameResourceRecordSetConflict",
				fmt.Sprintf("The resource record set 'entity.change' named '%s' is a CNAME and conflicts with another record set at that name.", name))
		}
	}
	z.sets = next
	return nil
}

// perChangeQuotas refuses a change over Cloud DNS's quotas: HTTP 403 quotaExceeded, one errors[]
// entry per quota broken (external-dns#1028 captured "The change would exceed quota for additions
// per change."; the other entries take the same form with the quota's name).
func perChangeQuotas(c *dns.Change) *apiError {
	var broken []string
	if len(c.Additions) > MaxAdditionsPerChange {
		broken = append(broken, "The change would exceed quota for additions per change.")
	}
	if len(c.Deletions) > MaxDeletionsPerChange {
		broken = append(broken, "The change would exceed quota for deletions per change.")
	}
	size, perSet := 0, false
	for _, rs := range slices.Concat(c.Additions, c.Deletions) {
		if rs == nil {
			continue
		}
		lists := [][]string{rs.Rrdatas}
		if rp := rs.RoutingPolicy; rp != nil && rp.Wrr != nil {
			for _, it := range rp.Wrr.Items {
				if it != nil {
					lists = append(lists, it.Rrdatas)
				}
			}
		}
		if rp := rs.RoutingPolicy; rp != nil && rp.Geo != nil {
			for _, it := range rp.Geo.Items {
				if it != nil {
					lists = append(lists, it.Rrdatas)
				}
			}
		}
		for _, l := range lists {
			perSet = perSet || len(l) > MaxRecordsPerRRSet
			for _, d := range l {
				size += len(d)
			}
		}
	}
	if perSet {
		broken = append(broken, "The change would exceed quota for resource records per rrset.")
	}
	if size > MaxRrdataBytesPerChange {
		broken = append(broken, "The change would exceed quota for total rrdata size per change.")
	}
	if len(broken) == 0 {
		return nil
	}
	return quotaExceeded(broken)
}

func quotaExceeded(broken []string) *apiError {
	e := apiErr(http.StatusForbidden, "quotaExceeded", broken[0])
	e.more = broken[1:]
	return e
}

var supportedTypes = []string{"A", "AAAA", "CAA", "CNAME", "MX", "NS", "PTR", "SRV", "TXT"}

func (z *zone) validate(field string, a *dns.ResourceRecordSet) *apiError {
	invalid := func(format string, args ...any) *apiError {
		return apiErr(http.StatusBadRequest, "invalid", fmt.Sprintf("Invalid value for '%s': ", field)+fmt.Sprintf(format, args...))
	}
	if a == nil {
		return apiErr(http.StatusBadRequest, "required", "Required field '"+field+"' not specified")
	}
	name := strings.ToLower(a.Name)
	if !strings.HasSuffix(name, ".") || (name != z.dnsName && !strings.HasSuffix(name, "."+z.dnsName)) {
		return invalid("name %q is not a fully qualified name in zone %s", a.Name, z.dnsName)
	}
	if !slices.Contains(supportedTypes, a.Type) {
		return invalid("record type %q is not supported", a.Type)
	}
	if a.Ttl < 0 || a.Ttl > 604800 {
		return invalid("ttl %d is out of range", a.Ttl)
	}
	if a.Type == "CNAME" && name == z.dnsName {
		return apiErr(http.StatusBadRequest, "cnameResourceRecordSetConflict", "A CNAME cannot be created at the zone apex.")
	}
	rp := a.RoutingPolicy
	if rp == nil {
		if len(a.Rrdatas) == 0 {
			return invalid("a record set needs rrdatas or a routing policy")
		}
		return validateRRDatas(invalid, a.Type, a.Rrdatas)
	}
	if len(a.Rrdatas) > 0 {
		return invalid("a record set cannot have both rrdatas and a routing policy")
	}
	if a.Type == "NS" {
		return invalid("routing policies are not supported for NS record sets")
	}
	switch {
	case rp.Wrr != nil && rp.Geo == nil && rp.PrimaryBackup == nil:
		if len(rp.Wrr.Items) == 0 {
			return invalid("a WRR routing policy needs at least one item")
		}
		for i, item := range rp.Wrr.Items {
			if item == nil || item.Weight < 0 {
				return invalid("WRR item %d needs a weight >= 0", i)
			}
			if e := validateRRDatas(invalid, a.Type, item.Rrdatas); e != nil {
				return e
			}
		}
	case rp.Geo != nil && rp.Wrr == nil && rp.PrimaryBackup == nil:
		if len(rp.Geo.Items) == 0 {
			return invalid("a geo routing policy needs at least one item")
		}
		seen := map[string]bool{}
		for i, item := range rp.Geo.Items {
			if item == nil || !slices.Contains(Regions, item.Location) {
				return invalid("geo item %d: location must be a Google Cloud region", i)
			}
			if seen[item.Location] {
				return invalid("geo item %d: location %s is used twice", i, item.Location)
			}
			seen[item.Location] = true
			if e := validateRRDatas(invalid, a.Type, item.Rrdatas); e != nil {
				return e
			}
		}
	default:
		return invalid("a routing policy needs exactly one of wrr and geo")
	}
	return nil
}

func validateRRDatas(invalid func(string, ...any) *apiError, typ string, rrdatas []string) *apiError {
	if len(rrdatas) == 0 {
		return invalid("rrdatas are required")
	}
	seen := map[string]bool{}
	for _, d := range rrdatas {
		if d == "" || seen[d] {
			return invalid("rrdata %q is empty or repeated", d)
		}
		seen[d] = true
		switch typ {
		case "A":
			if ip := net.ParseIP(d); ip == nil || ip.To4() == nil {
				return invalid("rrdata %q is not an IPv4 address", d)
			}
		case "AAAA":
			if ip := net.ParseIP(d); ip == nil || ip.To4() != nil {
				return invalid("rrdata %q is not an IPv6 address", d)
			}
		case "CNAME", "NS", "PTR":
			if !strings.HasSuffix(d, ".") {
				return invalid("rrdata %q is not a fully qualified name", d)
			}
		}
	}
	if typ == "CNAME" && len(rrdatas) > 1 {
		return invalid("a CNAME holds one rrdata")
	}
	return nil
}

// sameSet reports whether a deletion matches the stored set exactly, as Cloud DNS requires.
func sameSet(stored, d *dns.ResourceRecordSet) bool {
	return canonical(stored) == canonical(d)
}

func canonical(rs *dns.ResourceRecordSet) string {
	c := clone(rs)
	c.Name = strings.ToLower(c.Name)
	c.Kind = ""
	if rp := c.RoutingPolicy; rp != nil {
		rp.Kind = ""
		if rp.Wrr != nil {
			rp.Wrr.Kind = ""
			for _, it := range rp.Wrr.Items {
				it.Kind = ""
			}
		}
		if rp.Geo != nil {
			rp.Geo.Kind = ""
			for _, it := range rp.Geo.Items {
				it.Kind = ""
			}
		}
	}
	b, _ := json.Marshal(c)
	return string(b)
}

func clone(rs *dns.ResourceRecordSet) *dns.ResourceRecordSet {
	b, _ := json.Marshal(rs)
	var out dns.ResourceRecordSet
	_ = json.Unmarshal(b, &out)
	return &out
}

// Regions are the Google Cloud regions a geo routing item may name.
var Regions = []string{
	"africa-south1",
	"asia-east1", "asia-east2", "asia-northeast1", "asia-northeast2", "asia-northeast3",
	"asia-south1", "asia-south2", "asia-southeast1", "asia-southeast2",
	"australia-southeast1", "australia-southeast2",
	"europe-central2", "europe-north1", "europe-north2", "europe-southwest1", "europe-west1",
	"europe-west2", "europe-west3", "europe-west4", "europe-west6", "europe-west8", "europe-west9",
	"europe-west10", "europe-west12",
	"me-central1", "me-central2", "me-west1",
	"northamerica-northeast1", "northamerica-northeast2", "northamerica-south1",
	"southamerica-east1", "southamerica-west1",
	"us-central1", "us-east1", "us-east4", "us-east5", "us-south1", "us-west1", "us-west2",
	"us-west3", "us-west4",
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
