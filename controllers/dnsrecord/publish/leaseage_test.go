package publish

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// fakeClock is the publishers' clock in these tests: the renewal periods are an hour long, so no
// renewal timer fires while they run and every renewal comes with a request.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) set(t time.Time)     { c.ns.Store(t.UnixNano()) }
func (c *fakeClock) add(d time.Duration) { c.ns.Add(int64(d)) }

func clockedLeases(clock *fakeClock, holder string, duration time.Duration) *Publisher {
	o := slow()
	o.Leases = Leases{Holder: holder, Every: time.Hour, Duration: duration, Tolerance: time.Minute}
	p := New(o)
	p.now = clock.now
	return p
}

// sharing is two clusters publishing s.example.com: cluster-a (lease duration 3 h) and cluster-b
// (2 h), each with its lease written, at 10:00 on the clock.
type sharing struct {
	t            *testing.T
	clock        *fakeClock
	zone         providers.Zone
	a, b         *Publisher
	provA        *cutProvider
	provB        providers.Provider
	keyA, keyB   string
	wantA, wantB []*v1alpha1.Endpoint
	prevA, prevB []*v1alpha1.Endpoint
}

func newSharing(t *testing.T) *sharing {
	store, zone := newZone(t)
	s := &sharing{clock: &fakeClock{}, zone: zone, t: t, keyA: lease.Key("cluster-a"), keyB: lease.Key("cluster-b"),
		wantA: []*v1alpha1.Endpoint{a("s.example.com", "10.0.0.1")}, wantB: []*v1alpha1.Endpoint{a("s.example.com", "10.0.0.2")}}
	s.clock.set(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	s.a, s.b = clockedLeases(s.clock, "cluster-a", 3*time.Hour), clockedLeases(s.clock, "cluster-b", 2*time.Hour)
	t.Cleanup(s.a.Close)
	t.Cleanup(s.b.Close)
	s.provA, s.provB = &cutProvider{Provider: provider(store)}, provider(store)
	// Each cluster's second pass names its lease (it sees the other), its third writes it.
	s.publishA()
	for range 2 {
		s.publishB()
	}
	for range 2 {
		s.publishA()
	}
	return s
}

// publishA is a pass of cluster-a's owner a1 on a fresh read of the zone.
func (s *sharing) publishA() {
	s.t.Helper()
	s.a.Forget("account", s.zone)
	s.prevA = publish(s.t, s.a, s.provA, s.zone, Request{OwnerID: "a1", Previous: s.prevA, Desired: s.wantA}).Plan.Published
}

func (s *sharing) publishB() {
	s.t.Helper()
	s.b.Forget("account", s.zone)
	s.prevB = publish(s.t, s.b, s.provB, s.zone, Request{OwnerID: "b1", Previous: s.prevB, Desired: s.wantB}).Plan.Published
}

// leasesText is what a publisher's snapshot says, one zone per line, once its cycles are over: a
// request is answered before its cycle records how the renewal went.
func leasesText(t *testing.T, p *Publisher) string {
	t.Helper()
	p.mu.Lock()
	queues := make([]*queue, 0, len(p.queues))
	for _, q := range p.queues {
		queues = append(queues, q)
	}
	p.mu.Unlock()
	for _, q := range queues {
		awaitStopped(t, q)
	}
	out := ""
	for _, z := range p.Leases() {
		out += fmt.Sprintf("%s failing=%v", z.Zone, z.RenewalFailing)
		for _, l := range z.Leases {
			out += fmt.Sprintf(" %s/own=%v/age=%v/duration=%v", l.Key, l.Own, l.Age, l.Duration)
		}
		out += "\n"
	}
	return out
}

// Ages as cluster-a's queue tells them at each step: its own lease's since it was written or found
// current, cluster-b's since cluster-a's reader saw it change, growing between reads; each with its
// own duration, cluster-b's read from its lease record.
func TestLeaseAges(t *testing.T) {
	s := newSharing(t)
	line := func(failing bool, own, other time.Duration) string {
		return fmt.Sprintf("example.com failing=%v %s/own=true/age=%v/duration=3h0m0s %s/own=false/age=%v/duration=2h0m0s\n",
			failing, s.keyA, own, s.keyB, other)
	}
	if s.keyA > s.keyB {
		line = func(failing bool, own, other time.Duration) string {
			return fmt.Sprintf("example.com failing=%v %s/own=false/age=%v/duration=2h0m0s %s/own=true/age=%v/duration=3h0m0s\n",
				failing, s.keyB, other, s.keyA, own)
		}
	}
	for _, step := range []struct {
		name    string
		advance time.Duration
		do      func(s *sharing)
		want    func() string
	}{
		{"both leases just written and read", 0, nil, func() string { return line(false, 0, 0) }},
		{"between reads both ages grow", 10 * time.Minute, nil, func() string { return line(false, 10*time.Minute, 10*time.Minute) }},
		{"a read in the same period finds cluster-a's lease current and cluster-b's unchanged", 5 * time.Minute, (*sharing).publishA,
			func() string { return line(false, 15*time.Minute, 15*time.Minute) }},
		{"the next period's renewal writes cluster-a's lease", 50 * time.Minute, (*sharing).publishA,
			func() string { return line(false, 0, 65*time.Minute) }},
		{"cluster-b renews: cluster-a's next read sees its lease change", 10 * time.Minute, func(s *sharing) { s.publishB(); s.publishA() },
			func() string { return line(false, 10*time.Minute, 0) }},
		{"cluster-a cut off from its provider: its renewal fails and both ages grow", 55 * time.Minute, func(s *sharing) {
			s.provA.cut.Store(true)
			s.a.Forget("account", s.zone)
			if _, err := s.a.Publish(context.Background(), s.provA, "account", s.zone, Request{OwnerID: "a1", Previous: s.prevA, Desired: s.wantA}); err == nil {
				t.Fatal("a pass of a cut-off cluster succeeded")
			}
		}, func() string { return line(true, 65*time.Minute, 55*time.Minute) }},
		{"back: renewed", 5 * time.Minute, func(s *sharing) { s.provA.cut.Store(false); s.publishA() },
			func() string { return line(false, 0, 60*time.Minute) }},
	} {
		s.clock.add(step.advance)
		if step.do != nil {
			step.do(s)
		}
		if got, want := leasesText(t, s.a), step.want(); got != want {
			t.Errorf("%s:\n got  %s want %s", step.name, got, want)
		}
	}
}

// A queue reports only where this cluster's lease is needed, only leases some claim names, and
// nothing once closed.
func TestLeaseAgesReported(t *testing.T) {
	for _, tc := range []struct {
		name string
		// leases returns the publisher whose snapshot is checked, after what the case does.
		leases func(t *testing.T) *Publisher
		want   string
	}{
		{"leases off", func(t *testing.T) *Publisher {
			store, zone := newZone(t)
			p := New(slow())
			t.Cleanup(p.Close)
			publish(t, p, provider(store), zone, Request{OwnerID: "a1", Desired: []*v1alpha1.Endpoint{a("s.example.com", "10.0.0.1")}})
			return p
		}, ""},
		{"alone in the zone: no lease needed", func(t *testing.T) *Publisher {
			store, zone := newZone(t)
			p := clockedLeases(&fakeClock{}, "cluster-a", time.Hour)
			t.Cleanup(p.Close)
			publish(t, p, provider(store), zone, Request{OwnerID: "a1", Desired: []*v1alpha1.Endpoint{a("s.example.com", "10.0.0.1")}})
			return p
		}, ""},
		{"closed", func(t *testing.T) *Publisher {
			s := newSharing(t)
			s.a.Close()
			return s.a
		}, ""},
		{"the other cluster's owner left: its lease goes, ours is still named", func(t *testing.T) *Publisher {
			s := newSharing(t)
			s.clock.add(time.Minute)
			s.b.Forget("account", s.zone)
			publish(t, s.b, s.provB, s.zone, Request{OwnerID: "b1", Previous: s.prevB})
			s.publishB() // b's renewal finds its lease no longer needed and deletes it
			s.publishA()
			return s.a
		}, fmt.Sprintf("example.com failing=false %s/own=true/age=1m0s/duration=3h0m0s\n", lease.Key("cluster-a"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := leasesText(t, tc.leases(t)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// Two queues of one cluster serve one zone (two Secrets): whichever renews first writes the
// period's value, and the other finds it current, so neither tells an age older than the period.
func TestLeaseFoundCurrentByAnotherQueue(t *testing.T) {
	s := newSharing(t)
	publishVia := func(account string) {
		s.a.Forget(account, s.zone)
		if _, err := s.a.Publish(context.Background(), s.provA, account, s.zone, Request{OwnerID: "a2", Desired: []*v1alpha1.Endpoint{a("s.example.com", "10.0.0.3")}}); err != nil {
			t.Fatal(err)
		}
	}
	s.clock.add(time.Hour + 10*time.Second) // 11:00:10
	publishVia("account-2")                 // writes the 11:00 value
	s.clock.add(time.Hour + 20*time.Second) // 12:00:30
	s.publishA()                            // "account" writes the 12:00 value
	publishVia("account-2")                 // finds it current
	text := leasesText(t, s.a)
	zones := s.a.Leases()
	if len(zones) != 2 {
		t.Fatalf("two queues of example.com reported %d zones: %s", len(zones), text)
	}
	var ages []time.Duration
	for _, z := range zones {
		for _, l := range z.Leases {
			if l.Own {
				ages = append(ages, l.Age)
			}
		}
	}
	// The queue that wrote counts from its write, the one that found the value current from the
	// start of the period the value is of.
	if fmt.Sprint(ages) != "[0s 30s]" && fmt.Sprint(ages) != "[30s 0s]" {
		t.Errorf("own lease ages %v, want 0s and 30s", ages)
	}
}
