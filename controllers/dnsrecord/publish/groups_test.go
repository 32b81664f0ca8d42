package publish

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// With a failover group, a queue renews its cluster's lease and member record even where no claim
// names the lease, and reads the other clusters': cluster a publishes a record of g1; cluster b's
// record publishes nothing (an inactive group's: Keep). Each judges the other's group alive; b
// saying unhealthy makes g2 not alive at a; b cut off from the provider, its lease expires at a and
// g2 is not alive either.
func TestGroupMembersJudgedAlive(t *testing.T) {
	store, zone := newZone(t)
	var bHealthy atomic.Bool
	bHealthy.Store(true)
	oa, ob := leaseOptions("cluster-a", make(chan []string, 64)), leaseOptions("cluster-b", make(chan []string, 64))
	oa.Leases.Group = "g1"
	ob.Leases.Group, ob.Leases.Healthy = "g2", func(string) bool { return bHealthy.Load() }
	pa, pb := New(oa), New(ob)
	t.Cleanup(pa.Close)
	t.Cleanup(pb.Close)
	provB := &cutProvider{Provider: provider(store)}
	publish(t, pa, provider(store), zone, Request{OwnerID: "a1", Record: "ns/a", Desired: []*v1alpha1.Endpoint{a("s.example.com", "10.0.0.1")}})
	pb.Keep(provB, "account", zone, "ns/b", "b1")
	// A group no member record names: alive for a lease's duration and tolerance after the first
	// read (the reader may not have seen its member yet), then not.
	if got, ok := pa.GroupsAlive("account", zone, []string{"g3"}); !ok || !got["g3"] {
		t.Errorf("a group never seen, just after the first read: %v %v, want alive", got, ok)
	}

	alive := func(p *Publisher, group string, want bool, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			got, ok := p.GroupsAlive("account", zone, []string{"g1", "g2"})
			if ok && got[group] == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("group %s alive %v (read %v), want %v within %v", group, got[group], ok, want, within)
			}
			time.Sleep(50 * time.Millisecond) // the queues read the zone at each renewal, every second
		}
	}
	alive(pa, "g2", true, 10*time.Second)
	alive(pb, "g1", true, 10*time.Second)
	if q, _ := pb.Queues(); q != 1 {
		t.Errorf("b holds %d queues, want the one Keep made", q)
	}

	bHealthy.Store(false)
	alive(pa, "g2", false, 10*time.Second)
	bHealthy.Store(true)
	alive(pa, "g2", true, 10*time.Second)

	// Cut off: b's lease stops changing, and expires at a after its duration and a's tolerance.
	provB.cut.Store(true)
	alive(pa, "g2", false, 15*time.Second)
	alive(pa, "g3", false, time.Second)
}

// Without a failover group a publisher keeps nothing and reads no members.
func TestKeepWithoutFailoverDoesNothing(t *testing.T) {
	_, zone := newZone(t)
	p := New(leaseOptions("cluster-a", make(chan []string, 8)))
	t.Cleanup(p.Close)
	p.Keep(nil, "account", zone, "ns/b", "b1")
	if q, _ := p.Queues(); q != 0 {
		t.Errorf("%d queues", q)
	}
	if _, ok := p.GroupsAlive("account", zone, []string{"g1", "g2"}); ok {
		t.Error("members read without a failover group")
	}
}
