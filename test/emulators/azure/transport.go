package azure

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	dnsfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/dns/armdns/fake"
	tmfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/trafficmanager/armtrafficmanager/fake"
)

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
