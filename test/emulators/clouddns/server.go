package clouddns

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"time"
)

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
