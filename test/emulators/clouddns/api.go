package clouddns

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	dns "google.golang.org/api/dns/v1"
)

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
