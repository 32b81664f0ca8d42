package azure

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/dns/armdns"
	dnsfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/dns/armdns/fake"
)

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
