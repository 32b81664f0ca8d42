package prober

import (
	"container/heap"
	"strings"
	"time"
)

// tenant is the probes that share the workers as one: one namespace's. Tenants with a check due
// take turns for a free worker (round robin), and one already running its share of the workers
// (Options.Workers divided among the tenants with checks running or due) is passed over while
// another below its share has a check due. So a tenant with 10,000 probes that hang until their
// timeout may hold every worker while no one else needs one, but each worker it frees goes to the
// next tenant waiting. Fields are guarded by Prober.mu.
type tenant struct {
	name    string
	queue   dueQueue
	running int
	// index in Prober.waiting, -1 when not there; ready: in Prober.ready.
	index int
	ready bool
}

// tenantOf is the tenant of a key: what comes before its first "/" (the probe controller's keys
// are namespace/name).
func tenantOf(key string) string {
	name, _, _ := strings.Cut(key, "/")
	return name
}

// take makes one turn around the ready tenants and takes the first due check of the first one
// running fewer than share checks. A tenant passed over keeps its place in the round; mu is held.
func (p *Prober) take(now time.Time, share int) *entry {
	for range len(p.ready) {
		t := p.ready[0]
		p.ready = p.ready[1:]
		p.setReady(t, false)
		if len(t.queue) == 0 || t.queue[0].next.After(now) {
			// Its due check was removed or rescheduled since it became ready.
			p.place(t, now)
			continue
		}
		if t.running >= share {
			p.setReady(t, true)
			p.ready = append(p.ready, t)
			continue
		}
		e := heap.Pop(&t.queue).(*entry)
		p.addRunning(t, 1)
		// Marks the entry as taken before its check starts, so Set does not queue it twice.
		e.cancel = func() {}
		p.place(t, now)
		return e
	}
	return nil
}

// tenant is the tenant named, made when first needed; mu is held.
func (p *Prober) tenant(name string) *tenant {
	t, ok := p.tenants[name]
	if !ok {
		t = &tenant{name: name, index: -1}
		p.tenants[name] = t
	}
	return t
}

// place puts t where its queue says after the queue changed: ready (at the back of the round)
// when its head is due, waiting when it is not, forgotten when it has nothing queued or running.
// A tenant already ready keeps its place; mu is held.
func (p *Prober) place(t *tenant, now time.Time) {
	switch {
	case t.ready:
	case len(t.queue) == 0:
		if t.index >= 0 {
			heap.Remove(&p.waiting, t.index)
		}
		if t.running == 0 {
			delete(p.tenants, t.name)
		}
	case t.index >= 0:
		heap.Fix(&p.waiting, t.index)
	case !t.queue[0].next.After(now):
		p.setReady(t, true)
		p.ready = append(p.ready, t)
	default:
		heap.Push(&p.waiting, t)
	}
}

// setReady and addRunning change what makes a tenant active, keeping the count; mu is held.
func (p *Prober) setReady(t *tenant, ready bool) {
	was := t.ready || t.running > 0
	t.ready = ready
	p.countActive(was, t)
}

func (p *Prober) addRunning(t *tenant, n int) {
	was := t.ready || t.running > 0
	t.running += n
	p.busy += n
	p.countActive(was, t)
}

func (p *Prober) countActive(was bool, t *tenant) {
	switch is := t.ready || t.running > 0; {
	case is && !was:
		p.active++
	case was && !is:
		p.active--
	}
}

// dueHeap is a min-heap by next check (container/heap) of items that keep their place in it
// (-1 outside it), so a changed or removed item is fixed or removed where it is.
type dueHeap[T interface {
	dueAt() time.Time
	place() *int
}] []T

func (q dueHeap[T]) Len() int           { return len(q) }
func (q dueHeap[T]) Less(i, j int) bool { return q[i].dueAt().Before(q[j].dueAt()) }
func (q dueHeap[T]) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	*q[i].place(), *q[j].place() = i, j
}
func (q *dueHeap[T]) Push(x any) {
	it := x.(T)
	*it.place() = len(*q)
	*q = append(*q, it)
}
func (q *dueHeap[T]) Pop() any {
	old := *q
	it := old[len(old)-1]
	var none T
	old[len(old)-1] = none
	*q = old[:len(old)-1]
	*it.place() = -1
	return it
}

// tenantQueue holds the tenants with a check queued, by their first entry's next check.
type tenantQueue = dueHeap[*tenant]

// dueQueue holds a tenant's entries by next check.
type dueQueue = dueHeap[*entry]

func (t *tenant) dueAt() time.Time { return t.queue[0].next }
func (t *tenant) place() *int      { return &t.index }
func (e *entry) dueAt() time.Time  { return e.next }
func (e *entry) place() *int       { return &e.index }
