package dnsrecord

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/groups"
	"github.com/dnspolicy/dnspolicy-controller/pkg/health"
)

// Automatic failover (Options.FailoverOrder; off by default) and the spreading of a switch to this
// controller's records. The rule is groups.Decide; this file gathers its evidence, on this
// controller's clock, and writes its decision.
//
// Evidence of a group's liveness: this cluster's own group is alive while its records in the zone
// pass their health checks (an address of a probed record passes, or none is probed); another
// group is alive while one of its clusters' member records (groups.Member, renewed by the publish
// queues with the lease) names a lease that is live by this reader's clock and says healthy.

// zoneGroups is what the controller knows of one zone's groups between passes.
type zoneGroups struct {
	// active are the active groups last read, seen since when first read so (the last switch, as
	// this controller knows it).
	active []string
	since  time.Time
	// live is each group's liveness as last judged (groups.Liveness.Since: on this clock).
	live map[string]groups.Liveness
	// records are this controller's grouped records in the zone, requeued when the active groups
	// change.
	records map[types.NamespacedName]bool
	// health says, for each probed record of the zone, whether an address of it passes.
	health map[types.NamespacedName]bool
}

// failover holds the zones' group state. switching serialises the switches of this process, and
// is held over provider calls, which mu never is.
type failover struct {
	switching sync.Mutex
	mu        sync.Mutex
	zones     map[string]*zoneGroups
}

func (f *failover) zone(name string, now time.Time) *zoneGroups {
	if f.zones == nil {
		f.zones = map[string]*zoneGroups{}
	}
	z := f.zones[name]
	if z == nil {
		z = &zoneGroups{since: now, live: map[string]groups.Liveness{}, records: map[types.NamespacedName]bool{}, health: map[types.NamespacedName]bool{}}
		f.zones[name] = z
	}
	return z
}

// forget drops a record that is gone.
func (f *failover) forget(key types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, z := range f.zones {
		delete(z.records, key)
		delete(z.health, key)
	}
}

// setHealth records whether a probed record of zone has an address passing its health checks.
func (f *failover) setHealth(zone string, key types.NamespacedName, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.zone(zone, time.Now()).health[key] = ok
}

// Healthy reports whether this cluster's records in zone pass their health checks: one of its
// probed records has an address that passes (or is not reported yet), or none is probed. The publish queues write it into the
// cluster's member record (publish.Leases.Healthy).
func (r *Reconciler) Healthy(zone string) bool {
	r.failover.mu.Lock()
	defer r.failover.mu.Unlock()
	z := r.failover.zones[zone]
	if z == nil || len(z.health) == 0 {
		return true
	}
	for _, ok := range z.health {
		if ok {
			return true
		}
	}
	return false
}

// observeGroups notes the active groups a record of the zone just read. A change since the last
// read, by anyone, requeues this controller's other records of the zone at once: the TXT has no
// watch (it is read over DNS), so a record sees a switch only at its own pass, up to
// InactiveGroupRecheck (or its re-check, when active) away; the first of them to read it takes
// the others along. A switch this controller makes itself requeues them the same way
// (switchGroups), without waiting even for that first read.
func (r *Reconciler) observeGroups(s *scope, active []string) {
	sorted := slices.Sorted(slices.Values(active))
	r.failover.mu.Lock()
	z := r.failover.zone(s.zone.DNSName, time.Now())
	z.records[s.key] = true
	changed := !slices.Equal(z.active, sorted)
	if changed {
		z.active, z.since = sorted, time.Now()
	}
	others := z.othersThan(s.key)
	r.failover.mu.Unlock()
	if changed {
		r.requeue(others)
	}
}

func (z *zoneGroups) othersThan(key types.NamespacedName) []types.NamespacedName {
	var out []types.NamespacedName
	for k := range z.records {
		if k != key {
			out = append(out, k)
		}
	}
	return out
}

// runFailover decides, from what this controller knows of the zone's groups, whether another group
// should be active, and switches when it should. It returns the active groups the pass goes on
// with: those read, or those it wrote.
func (r *Reconciler) runFailover(ctx context.Context, s *scope, active []string) []string {
	o := r.Options
	if len(o.FailoverOrder) == 0 || s.provider == nil {
		return active
	}
	others, ok := r.Publisher.GroupsAlive(s.backend.Account, s.zone, o.FailoverOrder)
	if !ok {
		return active // the zone not read yet: no evidence of the others
	}
	now := time.Now()
	r.failover.mu.Lock()
	z := r.failover.zone(s.zone.DNSName, now)
	own := len(z.health) == 0 || slices.Contains(mapValues(z.health), true)
	for _, g := range o.FailoverOrder {
		alive := others[g] || g == o.Group && own
		if l, seen := z.live[g]; !seen || l.Alive != alive {
			z.live[g] = groups.Liveness{Alive: alive, Since: now}
		}
	}
	d := groups.Decide(groups.Failover{Order: o.FailoverOrder, Active: active, Groups: z.live, LastSwitch: z.since, Now: now,
		After: o.FailoverAfter, HoldDown: o.FailoverHoldDown})
	r.failover.mu.Unlock()
	if !d.Switch {
		return active
	}
	return r.switchGroups(ctx, s, active, d)
}

func mapValues[K comparable, V any](m map[K]V) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// switchGroups writes the decision through the provider, as `kubectl dns add-active-group` writes:
// only if the TXT still lists what the decision was made from (another controller that saw the
// same first has switched already: nothing is done), one switch of a zone at a time in this
// process. It returns the active groups the pass goes on with.
func (r *Reconciler) switchGroups(ctx context.Context, s *scope, read []string, d groups.Decision) []string {
	log := logf.FromContext(ctx).WithValues("zone", s.zone.DNSName)
	r.failover.switching.Lock()
	defer r.failover.switching.Unlock()
	view, err := s.provider.Records(ctx, s.zone)
	if err != nil {
		r.failoverFailed(s, d, err)
		return read
	}
	txt := groups.FindTXT(view.Endpoints, s.zone.DNSName)
	var current []string
	if txt != nil {
		if current, err = groups.ParseTarget(txt.Targets[0]); err != nil {
			r.failoverFailed(s, d, fmt.Errorf("%s holds %s: %w", txt.DNSName, txt.Targets[0], err))
			return read
		}
	}
	// The conditional write: the backend's preconditions (view.State) guard the read to the write.
	if !slices.Equal(slices.Sorted(slices.Values(current)), slices.Sorted(slices.Values(read))) {
		log.Info("active groups changed since they were read: no failover", "read", read, "now", current)
		return read
	}
	changes := groups.Changes(v1alpha1.NormalizeName(s.zone.DNSName), txt, d.To)
	if err := s.provider.Apply(ctx, s.zone, view.State, changes); err != nil {
		r.failoverFailed(s, d, err)
		return read
	}
	from, to := strings.Join(read, ","), strings.Join(d.To, ",")
	groupFailovers.WithLabelValues(s.zone.DNSName, from, to).Inc()
	log.Info("switched the zone's active failover groups", "from", read, "to", d.To, "why", d.Why)
	r.Recorder.Eventf(s.record, nil, corev1.EventTypeNormal, v1alpha1.ReasonGroupFailover, "Failover",
		"switched the active groups of zone %s from %s to %s: %s", s.zone.DNSName, listOrNone(read), listOrNone(d.To), d.Why)
	r.failover.mu.Lock()
	z := r.failover.zone(s.zone.DNSName, time.Now())
	z.active, z.since = slices.Sorted(slices.Values(d.To)), time.Now()
	others := z.othersThan(s.key)
	r.failover.mu.Unlock()
	r.requeue(others)
	return d.To
}

func (r *Reconciler) failoverFailed(s *scope, d groups.Decision, err error) {
	logf.Log.WithName("dnsrecord").WithValues("dnsrecord", s.key).Error(err, "automatic failover not written", "zone", s.zone.DNSName, "to", d.To)
	r.Recorder.Eventf(s.record, nil, corev1.EventTypeWarning, v1alpha1.ReasonGroupFailoverFailed, "Failover",
		"could not switch the active groups of zone %s to %s (%s): %v", s.zone.DNSName, listOrNone(d.To), d.Why, err)
}

func listOrNone(gs []string) string {
	if len(gs) == 0 {
		return "none"
	}
	return strings.Join(gs, ",")
}

// passing reports whether an address passes its health check or has not reported yet: what an
// inactive record, which makes no health decision, says of its group's health.
func passing(probes map[string]health.State) bool {
	for _, st := range probes {
		if st != health.Unhealthy {
			return true
		}
	}
	return len(probes) == 0
}
