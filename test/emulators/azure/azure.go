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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/dns/armdns"
	dnsfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/dns/armdns/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/trafficmanager/armtrafficmanager"
	tmfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/trafficmanager/armtrafficmanager/fake"
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

// Transport returns the transport to put into the SDK clients' options: it dispatches DNS and
// Traffic Manager requests to the fake servers backed by this store, and adds Retry-After to a 429.
func (s *Store) Transport() policy.Transporter {
	dns := dnsfake.NewServerFactoryTransport(&dnsfake.ServerFactory{
		RecordSetsServer: s.recordSetsServer(),
		ZonesServer:      s.zonesServer(),
	})
	tm := tmfake.NewServerFactoryTransport(&tmfake.ServerFactory{ProfilesServer: s.profilesServer()})
	return transport{store: s, dns: dns, tm: tm}
}

type transport struct {
	store   *Store
	dns, tm policy.Transporter
}

func (t transport) Do(req *http.Request) (*http.Response, error) {
	next := t.dns
	if strings.Contains(strings.ToLower(req.URL.Path), "/microsoft.network/trafficmanagerprofiles") {
		next = t.tm
	}
	// A fault fails the request before the fakes see it: their pagers answer each list once.
	switch t.store.fault() {
	case FaultServerError:
		return t.errorResponse(req, &azcore.ResponseError{StatusCode: http.StatusInternalServerError, ErrorCode: "InternalServerError"}), nil
	case FaultThrottle:
		resp := t.errorResponse(req, &azcore.ResponseError{StatusCode: http.StatusTooManyRequests, ErrorCode: "TooManyRequests"})
		resp.Header.Set("Retry-After", "1")
		return resp, nil
	case FaultTimeout:
		select {
		case <-req.Context().Done():
			return nil, req.Context().Err()
		case <-time.After(FaultHang):
		}
		return t.errorResponse(req, &azcore.ResponseError{StatusCode: http.StatusGatewayTimeout, ErrorCode: "GatewayTimeout"}), nil
	}
	resp, err := next.Do(t.store.ownListing(req))
	// The fakes return an error response as a Go error; the cloud sends it as an HTTP response,
	// which the SDK's pipeline retries (429, 5xx) and turns into a ResponseError itself.
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return t.errorResponse(req, re), nil
	}
	return resp, err
}

// fakePageSuffix marks the nextLink of a fake pager's later pages (azcore's fake package).
const fakePageSuffix = "/fake_page_"

// ownListing gives the first page request of a listing a path of its own, which the nextLinks of
// its later pages carry on. The fakes keep a pager's remaining pages by request path, so two
// listings of one zone at once, or one abandoned half-way, would hand each other's pages out;
// Azure's nextLink paging keeps each listing apart.
func (s *Store) ownListing(req *http.Request) *http.Request {
	api, _ := req.Context().Value(runtime.CtxAPINameKey{}).(string)
	if req.Method != http.MethodGet || !strings.HasSuffix(api, "Pager") || strings.Contains(req.URL.Path, fakePageSuffix) {
		return req
	}
	s.mu.Lock()
	s.listings++
	n := s.listings
	s.mu.Unlock()
	req = req.Clone(req.Context())
	req.URL.Path += fmt.Sprintf("/emulator-listing-%d", n)
	req.URL.RawPath = ""
	return req
}

// errorResponse is the HTTP response Azure sends for an error: the code in the body and in
// x-ms-error-code, and Retry-After on a 429.
func (t transport) errorResponse(req *http.Request, re *azcore.ResponseError) *http.Response {
	body, _ := json.Marshal(map[string]any{"error": map[string]string{"code": re.ErrorCode, "message": re.ErrorCode}})
	resp := &http.Response{
		StatusCode: re.StatusCode,
		Status:     http.StatusText(re.StatusCode),
		Header:     http.Header{"Content-Type": {"application/json"}, "X-Ms-Error-Code": {re.ErrorCode}},
		Body:       io.NopCloser(bytes.NewReader(body)),
		Request:    req,
	}
	if re.StatusCode == http.StatusTooManyRequests {
		resp.Header.Set("Retry-After", strconv.Itoa(t.store.retryAfter(req.URL.Path)))
	}
	return resp
}

// retryAfter is the number of seconds until the zone named in path takes another write.
func (s *Store) retryAfter(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	parts := strings.Split(strings.ToLower(path), "/")
	var rg, name string
	for i := 0; i+1 < len(parts); i++ {
		switch parts[i] {
		case "resourcegroups":
			rg = parts[i+1]
		case "dnszones":
			name = parts[i+1]
		}
	}
	for key, z := range s.zones {
		if strings.EqualFold(key, rg+"/"+name) && len(z.writes) > 0 {
			wait := z.writes[0].Add(time.Minute).Sub(s.now())
			return max(1, int((wait+time.Second-1)/time.Second))
		}
	}
	return 1
}

// fault returns the kind of fault to fail the next request with ("" for none), and counts it as
// "Faults" and "Faults.<kind>".
func (s *Store) fault() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faultRate > 0 && s.rand.Float64() < s.faultRate {
		kind := s.faultKinds[s.rand.IntN(len(s.faultKinds))]
		s.calls["Faults"]++
		s.calls["Faults."+kind]++
		return kind
	}
	return ""
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

// limited reports whether the zone has used its writes of the last minute, and otherwise records
// one. Callers hold s.mu.
func (s *Store) limited(z *zone) bool {
	now := s.now()
	for len(z.writes) > 0 && !z.writes[0].After(now.Add(-time.Minute)) {
		z.writes = z.writes[1:]
	}
	if len(z.writes) >= WritesPerMinute {
		return true
	}
	z.writes = append(z.writes, now)
	return false
}

func (s *Store) recordSetsServer() dnsfake.RecordSetsServer {
	return dnsfake.RecordSetsServer{
		Get: func(_ context.Context, resourceGroup, zoneName, name string, recordType armdns.RecordType, _ *armdns.RecordSetsClientGetOptions) (resp azfake.Responder[armdns.RecordSetsClientGetResponse], errResp azfake.ErrorResponder) {
			s.mu.Lock()
			defer s.mu.Unlock()
			r, status, code := s.lookup("RecordSets.Get", resourceGroup, zoneName, name, recordType, nil, nil)
			if status == 0 && !r.exists {
				status, code = http.StatusNotFound, "NotFound"
			}
			if status != 0 {
				errResp.SetResponseError(status, code)
				return
			}
			resp.SetResponse(http.StatusOK, armdns.RecordSetsClientGetResponse{RecordSet: *copySet(r.current)}, nil)
			return
		},
		NewListAllByDNSZonePager: func(resourceGroup, zoneName string, _ *armdns.RecordSetsClientListAllByDNSZoneOptions) (resp azfake.PagerResponder[armdns.RecordSetsClientListAllByDNSZoneResponse]) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.calls["RecordSets.ListAllByDNSZone"]++
			z := s.zone(resourceGroup, zoneName)
			if z == nil {
				resp.AddResponseError(http.StatusNotFound, "ParentResourceNotFound")
				return resp
			}
			var page armdns.RecordSetsClientListAllByDNSZoneResponse
			for _, set := range z.sets {
				page.Value = append(page.Value, copySet(set))
				if len(page.Value) == pageSize {
					resp.AddPage(http.StatusOK, page, nil)
					page = armdns.RecordSetsClientListAllByDNSZoneResponse{}
				}
			}
			resp.AddPage(http.StatusOK, page, nil)
			return resp
		},
		CreateOrUpdate: func(_ context.Context, resourceGroup, zoneName, name string, recordType armdns.RecordType, set armdns.RecordSet, opts *armdns.RecordSetsClientCreateOrUpdateOptions) (resp azfake.Responder[armdns.RecordSetsClientCreateOrUpdateResponse], errResp azfake.ErrorResponder) {
			s.mu.Lock()
			defer s.mu.Unlock()
			var ifMatch, ifNoneMatch *string
			if opts != nil {
				ifMatch, ifNoneMatch = opts.IfMatch, opts.IfNoneMatch
			}
			r, status, code := s.lookup("RecordSets.CreateOrUpdate", resourceGroup, zoneName, name, recordType, ifMatch, ifNoneMatch)
			if status != 0 {
				errResp.SetResponseError(status, code)
				return
			}
			z, key, exists := r.z, r.key, r.exists
			if status, code := s.validateSet(resourceGroup, z, key, &set); status != 0 {
				errResp.SetResponseError(status, code)
				return
			}
			if s.limited(z) {
				errResp.SetResponseError(http.StatusTooManyRequests, "TooManyRequests")
				return
			}
			status = http.StatusOK
			if !exists {
				status = http.StatusCreated
			}
			resp.SetResponse(status, armdns.RecordSetsClientCreateOrUpdateResponse{RecordSet: *s.putSet(resourceGroup, z, key, set)}, nil)
			return
		},
		Delete: func(_ context.Context, resourceGroup, zoneName, name string, recordType armdns.RecordType, opts *armdns.RecordSetsClientDeleteOptions) (resp azfake.Responder[armdns.RecordSetsClientDeleteResponse], errResp azfake.ErrorResponder) {
			s.mu.Lock()
			defer s.mu.Unlock()
			var ifMatch *string
			if opts != nil {
				ifMatch = opts.IfMatch
			}
			r, status, code := s.lookup("RecordSets.Delete", resourceGroup, zoneName, name, recordType, ifMatch, nil)
			if status != 0 {
				errResp.SetResponseError(status, code)
				return
			}
			z, key, exists := r.z, r.key, r.exists
			if key.name == "@" && (recordType == armdns.RecordTypeSOA || recordType == armdns.RecordTypeNS) {
				errResp.SetResponseError(http.StatusBadRequest, "BadRequest")
				return
			}
			if s.limited(z) {
				errResp.SetResponseError(http.StatusTooManyRequests, "TooManyRequests")
				return
			}
			delete(z.sets, key)
			status = http.StatusOK
			if !exists {
				status = http.StatusNoContent
			}
			resp.SetResponse(status, armdns.RecordSetsClientDeleteResponse{}, nil)
			return
		},
	}
}

// setRequest is the zone and the record set a request names.
type setRequest struct {
	z       *zone
	key     setKey
	current *armdns.RecordSet
	exists  bool
}

// lookup counts the call op and finds the zone and the record set a request names, failing it as
// Azure does: 404 ParentResourceNotFound without the zone, 412 when If-Match names another ETag (or
// no set is there) or If-None-Match "*" finds one. Callers hold s.mu.
func (s *Store) lookup(op, resourceGroup, zoneName, name string, recordType armdns.RecordType, ifMatch, ifNoneMatch *string) (setRequest, int, string) {
	s.calls[op]++
	z := s.zone(resourceGroup, zoneName)
	if z == nil {
		return setRequest{}, http.StatusNotFound, "ParentResourceNotFound"
	}
	key := setKey{strings.ToLower(name), recordType}
	current, exists := z.sets[key]
	if ifNoneMatch != nil && *ifNoneMatch == "*" && exists || ifMatch != nil && (!exists || *ifMatch != *current.Etag) {
		return setRequest{}, http.StatusPreconditionFailed, "PreconditionFailed"
	}
	return setRequest{z, key, current, exists}, 0, ""
}

// validateSet applies Azure DNS's rules to a record set about to be written. It returns 0 when the
// set is valid. Callers hold s.mu.
func (s *Store) validateSet(resourceGroup string, z *zone, key setKey, set *armdns.RecordSet) (int, string) {
	p := set.Properties
	if p == nil || p.TTL == nil || *p.TTL < 0 || *p.TTL > 2147483647 {
		return http.StatusBadRequest, "BadRequest"
	}
	records := len(p.ARecords) + len(p.AaaaRecords) + len(p.TxtRecords) + len(p.NsRecords)
	if p.CnameRecord != nil {
		records++
	}
	if records > RecordsPerSet {
		return http.StatusBadRequest, "BadRequest"
	}
	// Only records of the set's own type may be given.
	other := map[armdns.RecordType]int{
		armdns.RecordTypeA: len(p.ARecords), armdns.RecordTypeAAAA: len(p.AaaaRecords), armdns.RecordTypeTXT: len(p.TxtRecords),
		armdns.RecordTypeNS: len(p.NsRecords),
	}
	if p.CnameRecord != nil {
		other[armdns.RecordTypeCNAME] = 1
	}
	for t, n := range other {
		if t != key.recordType && n > 0 {
			return http.StatusBadRequest, "BadRequest"
		}
	}
	if p.TargetResource != nil {
		if records > 0 || p.TargetResource.ID == nil || !s.profileExists(*p.TargetResource.ID) {
			return http.StatusBadRequest, "BadRequest"
		}
		if key.recordType != armdns.RecordTypeA && key.recordType != armdns.RecordTypeAAAA && key.recordType != armdns.RecordTypeCNAME {
			return http.StatusBadRequest, "BadRequest"
		}
	}
	for _, txt := range p.TxtRecords {
		for _, v := range txt.Value {
			if v == nil || len(*v) > 255 {
				return http.StatusBadRequest, "BadRequest"
			}
		}
	}
	if key.recordType == armdns.RecordTypeCNAME && key.name == "@" {
		return http.StatusBadRequest, "BadRequest"
	}
	for k := range z.sets {
		if k.name == key.name && k.recordType != key.recordType &&
			(k.recordType == armdns.RecordTypeCNAME || key.recordType == armdns.RecordTypeCNAME) {
			return http.StatusConflict, "Conflict"
		}
	}
	return 0, ""
}

// putSet stores a record set with a fresh ETag and returns a copy. Callers hold s.mu.
func (s *Store) putSet(resourceGroup string, z *zone, key setKey, set armdns.RecordSet) *armdns.RecordSet {
	s.etags++
	fqdn := z.name + "."
	if key.name != "@" {
		fqdn = key.name + "." + fqdn
	}
	stored := copySet(&set)
	stored.Etag = to.Ptr(strconv.Itoa(s.etags))
	stored.Name = to.Ptr(key.name)
	stored.Type = to.Ptr("Microsoft.Network/dnszones/" + string(key.recordType))
	stored.ID = to.Ptr("/subscriptions/" + s.subscription + "/resourceGroups/" + resourceGroup + "/providers/Microsoft.Network/dnszones/" +
		z.name + "/" + string(key.recordType) + "/" + key.name)
	if stored.Properties == nil {
		stored.Properties = &armdns.RecordSetProperties{}
	}
	stored.Properties.Fqdn = to.Ptr(fqdn)
	stored.Properties.ProvisioningState = to.Ptr("Succeeded")
	z.sets[key] = stored
	return copySet(stored)
}

// copySet returns a deep copy, so no caller shares memory with the store.
func copySet(set *armdns.RecordSet) *armdns.RecordSet {
	out := *set
	if set.Properties == nil {
		return &out
	}
	p := *set.Properties
	p.ARecords = copyEach(p.ARecords)
	p.AaaaRecords = copyEach(p.AaaaRecords)
	p.NsRecords = copyEach(p.NsRecords)
	p.TxtRecords = nil
	for _, r := range set.Properties.TxtRecords {
		p.TxtRecords = append(p.TxtRecords, &armdns.TxtRecord{Value: copyEach(r.Value)})
	}
	if p.CnameRecord != nil {
		p.CnameRecord = to.Ptr(*p.CnameRecord)
	}
	if p.TargetResource != nil {
		p.TargetResource = to.Ptr(*p.TargetResource)
	}
	if p.Metadata != nil {
		p.Metadata = make(map[string]*string, len(set.Properties.Metadata))
		for k, v := range set.Properties.Metadata {
			p.Metadata[k] = to.Ptr(*v)
		}
	}
	out.Properties = &p
	return &out
}

func copyEach[T any](in []*T) []*T {
	if in == nil {
		return nil
	}
	out := make([]*T, len(in))
	for i, v := range in {
		c := *v
		out[i] = &c
	}
	return out
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
