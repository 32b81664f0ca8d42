package publish

import (
	"slices"
	"sync"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// cluster is what the publisher knows of this cluster's owners, across its queues: two Secrets can
// lead to one zone, and an owner of either is this cluster's.
type cluster struct {
	mu sync.Mutex
	// local are the owners whose requests came through the publisher, and home the lease holder
	// of each one's cluster ("" for this cluster: Request.Lease).
	local map[string]bool
	home  map[string]string
	// wishes are, by owner, what its latest plan that its zone holds wants, sorted by key: the plans
	// of the others read them where the owner's claims, written as Kuadrant writes them, do not say
	// (plan.Input.Known). A sorted slice, not a map per owner: a map of one endpoint cost ten times
	// its entry, and every DNSRecord is an owner.
	wishes map[string][]*v1alpha1.Endpoint
}

func (c *cluster) isLocal(owner string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.local[owner]
}

// sameHome reports whether owner's requests came through the publisher from the cluster whose
// lease holder is holder: such owners renew the same lease (plan.Input.Local).
func (c *cluster) sameHome(owner, holder string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.home[owner]
	return ok && h == holder
}

// sameCluster reports whether the owners a and b both came through the publisher and renew the same
// lease, as plan.Input.Local counts them for a's plans.
func (c *cluster) sameCluster(a, b string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ha, okA := c.home[a]
	hb, okB := c.home[b]
	return okA && okB && ha == hb
}

// known is plan.Input.Known: what another owner of this cluster wants for a key, as remembered.
func (c *cluster) known(owner string, key v1alpha1.EndpointKey) *v1alpha1.Endpoint {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.wishes[owner]
	if i, ok := slices.BinarySearchFunc(w, key, func(e *v1alpha1.Endpoint, k v1alpha1.EndpointKey) int { return compareKeys(e.Key(), k) }); ok {
		return w[i]
	}
	return nil
}

// remember notes what a request whose plan the zone now holds wants.
func (c *cluster) remember(p *planned) {
	if p.req.renewal {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(p.desired) == 0 {
		delete(c.wishes, p.req.OwnerID)
		return
	}
	sorted := slices.Clone(p.desired)
	slices.SortStableFunc(sorted, func(a, b *v1alpha1.Endpoint) int { return compareKeys(a.Key(), b.Key()) })
	w := sorted[:0]
	for _, e := range sorted {
		if n := len(w); n > 0 && w[n-1].Key() == e.Key() {
			w[n-1] = e // of two endpoints with one key the last stands, as in a map by key
			continue
		}
		w = append(w, e)
	}
	c.wishes[p.req.OwnerID] = slices.Clip(w)
}

func compareKeys(a, b v1alpha1.EndpointKey) int {
	switch {
	case less(a, b):
		return -1
	case less(b, a):
		return 1
	}
	return 0
}
