// Package lease is how clusters sharing a zone learn
// that one of them is gone: each renews a lease record in the zone, and a reader judges a lease by
// when it saw the lease's value change, on its own clock, never by comparing clocks.
package lease

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// Kind is the kind of the owner-named record a lease is.
const Kind = "lease"

// TTL of the lease record: only controllers read it, through the provider's API.
const TTL = 60

// Lease is one holder's lease in one zone.
type Lease struct {
	// Holder is the cluster ID of the controller that renews it.
	Holder string
	// Renewal is the holder's renewal period number: a new number is a renewal.
	Renewal int64
	// Duration is how long the holder asks readers to wait, after its value last changed, before
	// they count it gone.
	Duration time.Duration
}

// RecordName is the name of holder's lease record in zone.
func RecordName(holder, zone string) string { return registry.NamedRecordName(Kind, holder, zone) }

// Record is the lease's record in zone.
func (l Lease) Record(zone string) *v1alpha1.Endpoint {
	value := fmt.Sprintf(`"dnspolicy-lease=1 holder=%s renewal=%d duration=%d"`, l.Holder, l.Renewal, int64(l.Duration/time.Second))
	return v1alpha1.NewEndpoint(RecordName(l.Holder, zone), v1alpha1.RecordTypeTXT, TTL, value)
}

// Parse reads a lease record; false when ep is none.
func Parse(ep *v1alpha1.Endpoint) (Lease, bool) {
	if ep == nil || ep.RecordType != v1alpha1.RecordTypeTXT || len(ep.Targets) != 1 {
		return Lease{}, false
	}
	fields := strings.Fields(strings.Trim(ep.Targets[0], `"`))
	if len(fields) != 4 || fields[0] != "dnspolicy-lease=1" {
		return Lease{}, false
	}
	var l Lease
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "holder":
			l.Holder = v
		case "renewal", "duration":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return Lease{}, false
			}
			if k == "renewal" {
				l.Renewal = n
			} else {
				l.Duration = time.Duration(n) * time.Second
			}
		}
	}
	return l, l.Holder != "" && l.Duration > 0
}

// Renewed is the lease holder renews at now: its period number of renewal.
func Renewed(holder string, now time.Time, renewal, duration time.Duration) Lease {
	return Lease{Holder: holder, Renewal: now.UnixNano() / int64(max(renewal, time.Second)), Duration: duration}
}

// Judge remembers, per lease record, since when this reader has seen its value, by this reader's
// clock.
type Judge struct {
	mu   sync.Mutex
	seen map[string]sighting
}

type sighting struct {
	value string
	since time.Time
}

// Expired reports whether the lease read at key with value, asking for duration, has not changed for
// longer than duration plus tolerance, as this reader's clock measures it. A lease seen for the first
// time counts from that moment, so a restarted reader waits a whole duration before it counts anyone
// gone.
func (j *Judge) Expired(key, value string, duration, tolerance time.Duration, now time.Time) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.seen == nil {
		j.seen = map[string]sighting{}
	}
	s, ok := j.seen[key]
	if !ok || s.value != value {
		s = sighting{value: value, since: now}
		j.seen[key] = s
	}
	return now.Sub(s.since) > duration+tolerance
}
