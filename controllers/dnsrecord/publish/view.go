package publish

import (
	"context"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// view is the queue's one view of its zone.
type view struct {
	zone  *registry.Zone
	state providers.State
	at    time.Time
}

// currentView returns the queue's view, or reads the zone when there is none, it is older than
// MaxAge, or fresh asks for one read after since. A view read through an older backend object of the
// same Secret (rotated credentials) stays good: a Secret's type, and so its backend, cannot change.
func (q *queue) currentView(ctx context.Context, prov providers.Provider, fresh bool, since time.Time) (*view, error) {
	q.mu.Lock()
	v := q.view
	q.mu.Unlock()
	if v != nil && q.now().Sub(v.at) <= q.opts.MaxAge && (!fresh || !v.at.Before(since)) {
		return v, nil
	}
	at := q.now()
	callCtx, cancel := q.call(ctx)
	read, err := prov.Records(callCtx, q.zone)
	cancel()
	if err != nil {
		q.forget()
		return nil, err
	}
	// The index of the latest read is brought up to date in place, not built again beside it: at
	// scale a second whole index alive beside the first and the read was the cycle's peak.
	q.mu.Lock()
	z := q.parsed
	q.view = nil
	q.mu.Unlock()
	if z == nil {
		z = registry.Read(read.Endpoints)
	} else {
		z.ReadAgain(read.Endpoints)
	}
	v = &view{zone: z, state: read.State, at: at}
	q.mu.Lock()
	q.view, q.parsed = v, z
	q.mu.Unlock()
	q.surveyLeases(v, read.Endpoints)
	q.replanUnstated(v.zone)
	return v, nil
}

// forget drops the view: it may no longer match the zone. Its index stays, to be brought up to date
// by the next read.
func (q *queue) forget() {
	q.mu.Lock()
	q.view = nil
	q.mu.Unlock()
}

// discard drops the view and its index: a cycle that failed half way may have left the index
// inconsistent with itself, which a read in place would not mend.
func (q *queue) discard() {
	q.mu.Lock()
	q.view, q.parsed = nil, nil
	q.mu.Unlock()
}

// unclaimedConflicts returns the records no owner claims that the plans conflict with.
func unclaimedConflicts(planned []*planned) []v1alpha1.EndpointKey {
	var keys []v1alpha1.EndpointKey
	for _, p := range planned {
		if p.plan == nil {
			continue
		}
		for _, c := range p.plan.Conflicts {
			if c.WinnerOwner == "" {
				keys = append(keys, v1alpha1.EndpointKey{DNSName: v1alpha1.NormalizeName(c.DNSName), RecordType: c.RecordType, SetIdentifier: c.SetIdentifier})
			}
		}
	}
	return keys
}

// unconfirmed reports whether any of keys has not been confirmed unclaimed by a second read.
func (q *queue) unconfirmed(keys []v1alpha1.EndpointKey) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, k := range keys {
		if !q.unclaimed[k] {
			return true
		}
	}
	return false
}

func (q *queue) confirm(keys []v1alpha1.EndpointKey) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.unclaimed == nil {
		q.unclaimed = map[v1alpha1.EndpointKey]bool{}
	}
	for _, k := range keys {
		q.unclaimed[k] = true
	}
}
