package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
	"github.com/dnspolicy/dnspolicy-controller/pkg/health"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// maxNames bounds how many names a host's tree is followed through: a loadbalanced host has a few
// per geo and per cluster, and a CNAME loop must not run forever.
const maxNames = 1000

// hostNames are host and every name its CNAMEs lead to inside the zone: for a loadbalanced host,
// klb.<host>, its geo names and the clusters' leaves. Sorted, host first.
func hostNames(z *registry.Zone, zoneName, host string) []string {
	host = v1alpha1.NormalizeName(host)
	seen := map[string]bool{host: true}
	queue := []string{host}
	for i := 0; i < len(queue) && len(queue) < maxNames; i++ {
		for _, r := range z.AtName(queue[i]) {
			if r.Key.RecordType != v1alpha1.RecordTypeCNAME {
				continue
			}
			var targets []string
			if r.Endpoint != nil {
				targets = append(targets, r.Endpoint.Targets...)
			}
			for _, c := range r.Claims {
				if c.Wish != nil {
					targets = append(targets, c.Wish.Targets...)
				}
			}
			for _, t := range targets {
				t = v1alpha1.NormalizeName(t)
				if !seen[t] && inZone(t, zoneName) && len(z.AtName(t)) > 0 {
					seen[t] = true
					queue = append(queue, t)
				}
			}
		}
	}
	sort.Strings(queue[1:])
	return queue
}

// claimedWish is what a claim's owner wants for its record: what the claim states, or, for a claim
// in Kuadrant's form, the record as published, where no other claim on it is of that form too (then
// the targets cannot be told apart). nil when neither can be told.
func claimedWish(r *registry.Record, c *registry.Claim) *v1alpha1.Endpoint {
	if c.Wish != nil || c.Legacy || r.Endpoint == nil {
		return c.Wish
	}
	if slices.ContainsFunc(r.Claims, func(o *registry.Claim) bool { return o != c && o.Wish == nil }) {
		return nil
	}
	return r.Endpoint
}

func inZone(name, zoneName string) bool {
	return name == zoneName || strings.HasSuffix(name, "."+zoneName)
}

// ownersAt lists the owners claiming a record at any of names, sorted.
func ownersAt(z *registry.Zone, names []string) []string {
	set := map[string]bool{}
	for _, n := range names {
		for _, r := range z.AtName(n) {
			for _, c := range r.Claims {
				set[c.Owner] = true
			}
		}
	}
	owners := make([]string, 0, len(set))
	for o := range set {
		owners = append(owners, o)
	}
	sort.Strings(owners)
	return owners
}

// leaseKeys are the leases the owner's claims name anywhere in the zone (claims name a lease only
// where they share a name with another cluster's owner), sorted; none for an owner that never
// expires.
func leaseKeys(z *registry.Zone, owner string) []string {
	var keys []string
	for _, n := range z.Names(owner) {
		for _, r := range z.AtName(n) {
			if c := r.Claim(owner); c != nil && c.Lease() != "" && !slices.Contains(keys, c.Lease()) {
				keys = append(keys, c.Lease())
			}
		}
	}
	sort.Strings(keys)
	return keys
}

// leaseState is what one reading of a lease record can tell.
type leaseState struct {
	key string
	// record is the lease record's name.
	record string
	lease  lease.Lease
	found  bool
	// age is the time since renewed, the holder's clock read against ours: an estimate.
	age time.Duration
	// looksExpired: age exceeds a renewal period plus the duration and a reader's tolerance. Only
	// an estimate; controllers judge by when they saw the value change.
	looksExpired bool
}

// leaseRecordName is the name of the lease record a claim's lease key names: the key is the hash
// of the holder's cluster ID, as in the record's name.
func leaseRecordName(key, zoneName string) string {
	return "dnspolicy-" + lease.Kind + "-" + key + "." + zoneName
}

func readLease(z *registry.Zone, zoneName, key string, now time.Time) leaseState {
	st := leaseState{key: key, record: leaseRecordName(key, zoneName)}
	ep := z.Endpoint(v1alpha1.EndpointKey{DNSName: st.record, RecordType: v1alpha1.RecordTypeTXT})
	l, ok := lease.Parse(ep)
	if !ok || lease.Key(l.Holder) != key {
		return st
	}
	st.lease, st.found = l, true
	st.age = now.Sub(l.Renewed)
	st.looksExpired = l.Duration > 0 && st.age > l.Every+l.Duration+lease.DefaultTolerance
	return st
}

func (st leaseState) describe() []string {
	if !st.found {
		return []string{fmt.Sprintf("lease %s: no lease record %s in the zone", st.key, st.record)}
	}
	l := st.lease
	expiry := fmt.Sprintf("expires %s after its value last changed", l.Duration)
	if l.Duration == 0 {
		expiry = "asks never to expire"
	}
	verdict := "looks live"
	if st.looksExpired {
		verdict = "looks EXPIRED"
	}
	return []string{
		fmt.Sprintf("lease: holder %s, record %s", l.Holder, st.record),
		fmt.Sprintf("  renewed %s by the holder's clock, every %s, %s", l.Renewed.UTC().Format(time.RFC3339), l.Every, expiry),
		fmt.Sprintf("  %s (estimate: clocks differ), %s", st.ageText(), verdict),
	}
}

func (st leaseState) ageText() string {
	if st.age < 0 {
		return fmt.Sprintf("renewed %s ahead of this machine's clock", (-st.age).Round(time.Second))
	}
	return fmt.Sprintf("age about %s by this machine's clock", st.age.Round(time.Second))
}

// ownerNamed lists the owner's owner-named records (its health statements and anything else it
// states about itself) in the zone, except leases, which are the cluster's and not the owner's.
func ownerNamed(z *registry.Zone, owner string) []*v1alpha1.Endpoint {
	h := hash.Base36(owner, 8)
	var out []*v1alpha1.Endpoint
	for _, r := range z.Records() {
		e := r.Endpoint
		if e == nil || e.RecordType != v1alpha1.RecordTypeTXT || e.SetIdentifier != "" || r.Owned() {
			continue
		}
		first, _, _ := strings.Cut(e.Key().DNSName, ".")
		kind, ok := strings.CutPrefix(first, "dnspolicy-")
		if !ok {
			continue
		}
		kind, ok = strings.CutSuffix(kind, "-"+h)
		if ok && kind != lease.Kind && kind != "" && strings.Trim(kind, "abcdefghijklmnopqrstuvwxyz") == "" {
			out = append(out, e)
		}
	}
	return out
}

// healthAt is the owner's health statement at one name, or nil.
func healthAt(z *registry.Zone, owner, name string) *v1alpha1.Endpoint {
	return z.Endpoint(v1alpha1.EndpointKey{DNSName: health.RecordName(owner, name), RecordType: v1alpha1.RecordTypeTXT})
}

// formatEndpoint is one record set on one line: type, name, set, targets, TTL, routing properties.
func formatEndpoint(e *v1alpha1.Endpoint) string {
	return keyString(e.Key()) + " " + valueString(e)
}

func keyString(k v1alpha1.EndpointKey) string {
	s := k.RecordType + " " + k.DNSName
	if k.SetIdentifier != "" {
		s += fmt.Sprintf(" [set %s]", k.SetIdentifier)
	}
	return s
}

func valueString(e *v1alpha1.Endpoint) string {
	targets := slices.Clone([]string(e.Targets))
	sort.Strings(targets)
	s := strings.Join(targets, ",") + fmt.Sprintf(" ttl %d", e.RecordTTL)
	if len(e.ProviderSpecific) > 0 {
		ps := make([]string, len(e.ProviderSpecific))
		for i, p := range e.ProviderSpecific {
			ps[i] = p.Name + "=" + p.Value
		}
		sort.Strings(ps)
		s += " (" + strings.Join(ps, ",") + ")"
	}
	return s
}
