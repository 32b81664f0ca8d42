// Package lease is how clusters sharing a zone learn that one of them is gone: each renews a lease
// record in the zone, and a reader judges a lease by when it saw the lease's value change, on its
// own clock, never by comparing a time written by another clock with its own.
//
// A lease is an owner-named record (registry.NamedRecordName) of kind "lease" at the zone's apex,
// held by a cluster (its ID, the UID of kube-system):
//
//	dnspolicy-lease-<hash8(clusterID)>.<zone>  TXT  "dnspolicy-lease=1 holder=<clusterID> renewed=<unix s> every=<s> duration=<s>"
//
// Claims of that cluster's owners name it (registry.LeaseKey = Key(clusterID)) where they share a
// name with another cluster's owner. renewed is the start of the holder's renewal period by the
// holder's clock: two publish queues of one cluster renewing in the same period write the same value.
// It is there for people (kubectl dns owners); readers only look at whether the value changed.
package lease

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// Kind is the kind of the owner-named record a lease is.
const Kind = "lease"

// TTL of the lease record: only controllers read it, through the provider's API.
const TTL = 60

// Defaults: a SIGKILLed cluster's lease is judged expired within Duration + Tolerance of its last
// renewal (plus a reader's view age), well under two minutes.
const (
	DefaultEvery     = 30 * time.Second
	DefaultDuration  = 75 * time.Second
	DefaultTolerance = 10 * time.Second
	// MinEvery is the shortest renewal period: renewals cost a provider change each.
	MinEvery = 5 * time.Second
)

// Lease is one holder's lease in one zone.
type Lease struct {
	// Holder is the cluster ID of the controller that renews it.
	Holder string
	// Renewed is the start of the renewal period, by the holder's clock.
	Renewed time.Time
	// Every is the holder's renewal period.
	Every time.Duration
	// Duration is how long the holder asks readers to wait, after its value last changed, before
	// they count it gone; 0 asks them never to.
	Duration time.Duration
}

// Key is what claims write (registry.LeaseKey) to name holder's lease.
func Key(holder string) string { return hash.Base36(holder, 8) }

// RecordName is the name of holder's lease record in zone.
func RecordName(holder, zone string) string { return registry.NamedRecordName(Kind, holder, zone) }

// Renew is holder's lease renewed at now.
func Renew(holder string, now time.Time, every, duration time.Duration) Lease {
	every = max(every, time.Second)
	return Lease{Holder: holder, Renewed: now.Truncate(every), Every: every, Duration: duration}
}

// Record is the lease's record in zone.
func (l Lease) Record(zone string) *v1alpha1.Endpoint {
	return v1alpha1.NewEndpoint(RecordName(l.Holder, zone), v1alpha1.RecordTypeTXT, TTL, `"`+l.Value()+`"`)
}

// Value is the lease's value, as its record holds it (unquoted) and as a delegating record carries
// it (v1alpha1.OwnerLeaseAnnotation).
func (l Lease) Value() string {
	return fmt.Sprintf("dnspolicy-lease=1 holder=%s renewed=%d every=%d duration=%d",
		l.Holder, l.Renewed.Unix(), seconds(l.Every), seconds(l.Duration))
}

func seconds(d time.Duration) int64 { return int64(d / time.Second) }

// Parse reads a lease record; false when ep is none.
func Parse(ep *v1alpha1.Endpoint) (Lease, bool) {
	if ep == nil || ep.RecordType != v1alpha1.RecordTypeTXT || len(ep.Targets) != 1 {
		return Lease{}, false
	}
	l, ok := ParseValue(ep.Targets[0])
	return l, ok && ep.DNSName == RecordName(l.Holder, zoneOf(ep.DNSName))
}

// ParseValue reads a lease's value (Value), quoted or not; false when it is none.
func ParseValue(value string) (Lease, bool) {
	fields := strings.Fields(strings.Trim(value, `"`))
	if len(fields) != 5 || fields[0] != "dnspolicy-lease=1" {
		return Lease{}, false
	}
	var l Lease
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		if k == "holder" {
			l.Holder = v
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return Lease{}, false
		}
		switch k {
		case "renewed":
			l.Renewed = time.Unix(n, 0)
		case "every":
			l.Every = time.Duration(n) * time.Second
		case "duration":
			l.Duration = time.Duration(n) * time.Second
		default:
			return Lease{}, false
		}
	}
	return l, l.Holder != "" && l.Every > 0
}

// namePrefix begins every lease record's name.
const namePrefix = "dnspolicy-" + Kind + "-"

// zoneOf is the zone a lease record named name sits at the apex of.
func zoneOf(name string) string {
	_, zone, _ := strings.Cut(name, ".")
	return zone
}

// Judge judges leases on this reader's clock.
type Judge struct {
	// Tolerance is added to a lease's duration: the reader's view of the zone may be that old.
	Tolerance time.Duration
	seen      registry.Sightings
}

// Verdict is what a reader knows of one lease.
type Verdict struct {
	Lease
	// Age is how long the value has not changed, by this reader's clock (since it was first seen,
	// for a value never seen changing).
	Age time.Duration
	// Expired: Age exceeds the lease's duration plus the judge's tolerance.
	Expired bool
}

// Judge observes the lease record ep read at now (zoneKey tells zones apart) and judges it. A lease
// seen for the first time counts from that moment, so a restarted reader waits a whole duration
// before it counts anyone gone; a lease asking for no expiry (duration 0) never expires.
func (j *Judge) Judge(zoneKey string, l Lease, ep *v1alpha1.Endpoint, now time.Time) Verdict {
	s := j.seen.Observe(sightingKey(zoneKey, ep), ep.Targets[0], now)
	age := now.Sub(s.Since)
	return Verdict{Lease: l, Age: age, Expired: l.Duration > 0 && age > l.Duration+j.Tolerance}
}

// Len returns how many leases the judge remembers.
func (j *Judge) Len() int { return j.seen.Len() }

func sightingKey(zoneKey string, ep *v1alpha1.Endpoint) string { return zoneKey + "/" + ep.DNSName }

// Survey is what one read of a zone tells about leases.
type Survey struct {
	// Verdicts are the zone's leases as this reader judges them, by Key.
	Verdicts map[string]Verdict
	// Named counts, by lease key, the claims naming it: a holder renews while its claims need it.
	Named map[string]int
	// Sharers, by lease key, are the owners claiming at names where a claim names the lease: those
	// that plan anew when it expires.
	Sharers map[string][]string
}

// Survey judges every lease in a zone read at now, whose records are eps and index z. The judge
// forgets the leases of the zone that the read no longer finds (their holders left).
func (j *Judge) Survey(zoneKey string, eps []*v1alpha1.Endpoint, z *registry.Zone, now time.Time) Survey {
	s := Survey{Verdicts: map[string]Verdict{}, Named: map[string]int{}, Sharers: map[string][]string{}}
	names := map[string]map[string]bool{} // lease key -> names where a claim names it
	found := map[string]bool{}
	defer func() { j.seen.Retain(zoneKey+"/", found) }()
	for _, ep := range eps {
		if ep.RecordType != v1alpha1.RecordTypeTXT {
			continue
		}
		if strings.HasPrefix(ep.DNSName, namePrefix) {
			if l, ok := Parse(ep); ok {
				s.Verdicts[Key(l.Holder)] = j.Judge(zoneKey, l, ep, now)
				found[sightingKey(zoneKey, ep)] = true
			}
			continue
		}
		if !strings.Contains(strings.Join(ep.Targets, ""), registry.LeaseKey+"=") {
			continue
		}
		c, ok := registry.ParseTXT(ep)
		if !ok || c.Lease() == "" {
			continue
		}
		s.Named[c.Lease()]++
		if names[c.Lease()] == nil {
			names[c.Lease()] = map[string]bool{}
		}
		names[c.Lease()][c.Record.DNSName] = true
	}
	for key := range s.Verdicts {
		owners := map[string]bool{}
		for name := range names[key] {
			for _, r := range z.AtName(name) {
				for _, o := range r.Owners() {
					owners[o] = true
				}
			}
		}
		for o := range owners {
			s.Sharers[key] = append(s.Sharers[key], o)
		}
	}
	return s
}
