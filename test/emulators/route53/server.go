package route53

import (
	"encoding/xml"
	"fmt"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

var (
	zonesPath   = regexp.MustCompile(`^/2013-04-01/hostedzone/?$`)
	byNamePath  = regexp.MustCompile(`^/2013-04-01/hostedzonesbyname/?$`)
	rrsetPath   = regexp.MustCompile(`^/2013-04-01/hostedzone/([^/]+)/rrset/?$`)
	changePath  = regexp.MustCompile(`^/2013-04-01/change/([^/]+)$`)
	errNotFound = apiError{status: http.StatusNotFound, code: "UnknownOperationException", message: "unknown operation"}
)

type apiError struct {
	status        int
	code, message string
	messages      []string
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op, zoneID, changeID := route(r)
	key := accessKeyOf(r)
	s.mu.Lock()
	hold := s.holds[key]
	s.mu.Unlock()
	if hold != nil {
		select {
		case <-hold.holding:
			select {
			case <-hold.released:
			case <-r.Context().Done():
				return
			}
		default:
		}
	}
	s.mu.Lock()
	if op != "" {
		s.calls[op]++
		if s.byKey[key] == nil {
			s.byKey[key] = map[string]int{}
		}
		s.byKey[key][op]++
	}
	fault := s.pickFault()
	if fault != "" {
		s.injected[fault]++
	}
	throttled := fault == "throttle" || !s.takeToken()
	hang := s.faults.Hang
	s.mu.Unlock()

	switch {
	case op == "":
		writeError(w, errNotFound)
		return
	case !s.knownKey(r):
		writeError(w, apiError{status: http.StatusForbidden, code: "InvalidClientTokenId",
			message: "The security token included in the request is invalid."})
		return
	case fault == "timeout":
		select {
		case <-r.Context().Done():
		case <-time.After(hang):
		}
		writeError(w, apiError{status: http.StatusGatewayTimeout, code: "RequestTimeout", message: "request timed out"})
		return
	case fault == "error":
		writeError(w, apiError{status: http.StatusInternalServerError, code: "InternalFailure", message: "internal failure"})
		return
	case throttled:
		writeError(w, apiError{status: http.StatusBadRequest, code: "Throttling", message: "Rate exceeded"})
		return
	}

	var body any
	var apiErr *apiError
	switch op {
	case OpListHostedZones:
		body, apiErr = s.listZones(r)
	case OpListHostedZonesByName:
		body, apiErr = s.listZonesByName(r)
	case OpListResourceRecordSets:
		body, apiErr = s.listRecordSets(r, zoneID)
	case OpChangeResourceRecordSets:
		body, apiErr = s.change(r, zoneID)
		if apiErr == nil && hold != nil {
			s.mu.Lock()
			select {
			case <-hold.holding:
			default:
				close(hold.holding)
			}
			s.mu.Unlock()
		}
	case OpGetChange:
		body, apiErr = s.getChange(changeID)
	}
	if fault == "drop" {
		dropConnection(w)
		return
	}
	if apiErr != nil {
		writeError(w, *apiErr)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("X-Amzn-Requestid", newRequestID())
	_, _ = w.Write([]byte(xml.Header))
	_ = xml.NewEncoder(w).Encode(body)
}

// knownKey checks the access key ID of the SigV4 Authorization header against Options.AccessKeys.
func (s *Server) knownKey(r *http.Request) bool {
	if len(s.opts.AccessKeys) == 0 {
		return true
	}
	key := accessKeyOf(r)
	return key != "" && slices.Contains(s.opts.AccessKeys, key)
}

// accessKeyOf returns the access key ID of the SigV4 Authorization header, or "".
func accessKeyOf(r *http.Request) string {
	_, cred, ok := strings.Cut(r.Header.Get("Authorization"), "Credential=")
	if !ok {
		return ""
	}
	key, _, _ := strings.Cut(cred, "/")
	return key
}

func route(r *http.Request) (op, zoneID, changeID string) {
	p := r.URL.Path
	switch {
	case r.Method == http.MethodGet && zonesPath.MatchString(p):
		return OpListHostedZones, "", ""
	case r.Method == http.MethodGet && byNamePath.MatchString(p):
		return OpListHostedZonesByName, "", ""
	case rrsetPath.MatchString(p):
		zoneID = rrsetPath.FindStringSubmatch(p)[1]
		switch r.Method {
		case http.MethodGet:
			return OpListResourceRecordSets, zoneID, ""
		case http.MethodPost:
			return OpChangeResourceRecordSets, zoneID, ""
		}
	case r.Method == http.MethodGet && changePath.MatchString(p):
		return OpGetChange, "", changePath.FindStringSubmatch(p)[1]
	}
	return "", "", ""
}

// pickFault draws at most one fault for a request. s.mu is held.
func (s *Server) pickFault() string {
	if s.burst > 0 {
		s.burst--
		return "throttle"
	}
	if s.drops > 0 {
		s.drops--
		return "drop"
	}
	f := s.faults
	x := s.rng.Float64()
	for _, c := range []struct {
		rate float64
		name string
	}{{f.ServerErrorRate, "error"}, {f.TimeoutRate, "timeout"}, {f.ThrottleRate, "throttle"}, {f.DropRate, "drop"}} {
		if x < c.rate {
			return c.name
		}
		x -= c.rate
	}
	return ""
}

// takeToken refills the bucket for the time passed and takes one token. s.mu is held.
func (s *Server) takeToken() bool {
	if s.opts.RequestsPerSecond < 0 {
		return true
	}
	now := s.now()
	s.tokens = min(float64(s.opts.Burst), s.tokens+now.Sub(s.lastToken).Seconds()*s.opts.RequestsPerSecond)
	s.lastToken = now
	if s.tokens < 1 {
		return false
	}
	s.tokens--
	return true
}

func dropConnection(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

func writeError(w http.ResponseWriter, e apiError) {
	kind := "Sender"
	if e.status >= 500 {
		kind = "Receiver"
	}
	w.Header().Set("Content-Type", "text/xml")
	id := newRequestID()
	w.Header().Set("X-Amzn-Requestid", id)
	w.WriteHeader(e.status)
	_, _ = w.Write([]byte(xml.Header))
	_ = xml.NewEncoder(w).Encode(errorResponse{Xmlns: xmlns, Type: kind, Code: e.code, Message: e.message,
		Messages: e.messages, RequestID: id})
}

// newRequestID returns a fresh ID per response, as Route 53 does, so tests can check that no
// request ID leaks into status text.
func newRequestID() string {
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", rand.Uint32(), rand.Uint32()&0xffff, rand.Uint32()&0xffff,
		rand.Uint32()&0xffff, rand.Uint64()&0xffffffffffff)
}

func maxItems(r *http.Request, limit int) int {
	n, err := strconv.Atoi(r.URL.Query().Get("maxitems"))
	if err != nil || n <= 0 || n > limit {
		return limit
	}
	return n
}
