package groups

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	const after, hold = 30 * time.Second, 5 * time.Minute
	alive := func(since time.Duration) Liveness { return Liveness{Alive: true, Since: t0.Add(since)} }
	dead := func(since time.Duration) Liveness { return Liveness{Since: t0.Add(since)} }
	order := []string{"g1", "g2", "g3"}
	for _, tc := range []struct {
		name       string
		order      []string
		active     []string
		groups     map[string]Liveness
		lastSwitch time.Duration // after t0
		now        time.Duration // after t0
		want       []string      // nil: no switch
		why        string        // a part of Why
	}{
		{name: "no order", order: nil, active: []string{"g1"}, now: time.Hour, why: "no group of the failover order"},
		{name: "none of the order active: a person chooses", active: []string{"other"}, groups: map[string]Liveness{"g1": alive(0)}, now: time.Hour,
			why: "chosen by a person"},
		{name: "no TXT", active: nil, groups: map[string]Liveness{"g1": alive(0)}, now: time.Hour, why: "chosen by a person"},
		{name: "active alive", active: []string{"g1"}, groups: map[string]Liveness{"g1": alive(0), "g2": alive(0)}, now: time.Hour, why: "g1 is alive"},
		{name: "active dead, not yet for long enough", active: []string{"g1"}, groups: map[string]Liveness{"g1": dead(time.Minute), "g2": alive(0)},
			now: time.Minute + after - time.Second, why: "less than 30s"},
		{name: "active dead for After: the next alive group", active: []string{"g1"}, groups: map[string]Liveness{"g1": dead(time.Minute), "g2": alive(0)},
			now: time.Minute + after, want: []string{"g2"}, why: "g2 is alive"},
		{name: "the next group dead too: the one after", active: []string{"g1"}, groups: map[string]Liveness{"g1": dead(0), "g2": dead(0), "g3": alive(0)},
			now: time.Hour, want: []string{"g3"}},
		{name: "a group never seen counts as dead", active: []string{"g1"}, groups: map[string]Liveness{"g2": alive(0)}, now: after, want: []string{"g2"}},
		{name: "dead since the switch at the earliest: a group just made active has After", active: []string{"g2"},
			groups: map[string]Liveness{"g2": dead(0), "g1": alive(0)}, lastSwitch: time.Hour, now: time.Hour + after/2, why: "less than"},
		{name: "the last group dead: wraps to an earlier alive one, hold-down or not", active: []string{"g3"},
			groups: map[string]Liveness{"g3": dead(0), "g1": dead(0), "g2": alive(0)}, lastSwitch: time.Minute, now: time.Minute + after, want: []string{"g2"}},
		{name: "all dead: nothing moves", active: []string{"g1"}, groups: map[string]Liveness{"g1": dead(0), "g2": dead(0), "g3": dead(0)},
			now: time.Hour, why: "no other group of the order is alive"},
		{name: "fail-back waits for the hold-down", active: []string{"g2"}, groups: map[string]Liveness{"g1": alive(0), "g2": alive(0)},
			lastSwitch: time.Minute, now: time.Minute + hold - time.Second, why: "within the hold-down"},
		{name: "fail-back after the hold-down", active: []string{"g2"}, groups: map[string]Liveness{"g1": alive(0), "g2": alive(0)},
			lastSwitch: time.Minute, now: time.Minute + hold, want: []string{"g1"}, why: "earlier in the failover order"},
		{name: "fail-back needs the earlier group alive for After", active: []string{"g2"}, groups: map[string]Liveness{"g1": alive(time.Hour), "g2": alive(0)},
			lastSwitch: 0, now: time.Hour + after - time.Second, why: "g2 is alive"},
		{name: "no fail-back to a dead group", active: []string{"g2"}, groups: map[string]Liveness{"g1": dead(0), "g2": alive(0)},
			now: time.Hour, why: "g2 is alive"},
		{name: "a later group never takes over from a live one", active: []string{"g1"}, groups: map[string]Liveness{"g1": alive(0), "g3": alive(0)},
			now: time.Hour, why: "g1 is alive"},
		{name: "groups outside the order stay listed", active: []string{"g1", "shared"}, groups: map[string]Liveness{"g1": dead(0), "g2": alive(0)},
			now: time.Hour, want: []string{"g2", "shared"}},
		{name: "two of the order active: the first is in charge, both replaced", active: []string{"g2", "g3"}, groups: map[string]Liveness{"g1": alive(0), "g2": alive(0)},
			now: time.Hour, want: []string{"g1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := order
			if tc.name == "no order" {
				o = tc.order
			}
			d := Decide(Failover{Order: o, Active: tc.active, Groups: tc.groups, LastSwitch: t0.Add(tc.lastSwitch), Now: t0.Add(tc.now), After: after, HoldDown: hold})
			if d.Switch != (tc.want != nil) || !slices.Equal(d.To, tc.want) {
				t.Fatalf("switch %v to %v (%s), want to %v", d.Switch, d.To, d.Why, tc.want)
			}
			if !strings.Contains(d.Why, tc.why) {
				t.Errorf("why %q, want it to say %q", d.Why, tc.why)
			}
			if d.Switch && (d.Target == "" || !slices.Contains(d.To, d.Target) || d.From == "") {
				t.Errorf("from %q target %q to %v", d.From, d.Target, d.To)
			}
		})
	}
}

// Whatever the evidence, a decision never switches to the group in charge, never to a group not
// alive, and its result lists exactly one group of the order.
func TestDecideInvariants(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	order := []string{"a", "b", "c"}
	states := []Liveness{{}, {Alive: true, Since: t0}, {Alive: true, Since: t0.Add(50 * time.Second)}, {Since: t0.Add(50 * time.Second)}}
	for i := range 4 * 4 * 4 * 3 {
		gs := map[string]Liveness{"a": states[i%4], "b": states[i/4%4], "c": states[i/16%4]}
		active := []string{order[i/64]}
		for _, now := range []time.Duration{10 * time.Second, time.Minute, time.Hour} {
			d := Decide(Failover{Order: order, Active: active, Groups: gs, LastSwitch: t0, Now: t0.Add(now), After: 30 * time.Second, HoldDown: 5 * time.Minute})
			if !d.Switch {
				continue
			}
			if d.Target == active[0] || !gs[d.Target].Alive || len(d.To) != 1 || d.To[0] != d.Target {
				t.Fatalf("%v active %v at +%v: %+v", gs, active, now, d)
			}
		}
	}
}

func TestMemberRecord(t *testing.T) {
	m := Member{Group: "east", Lease: "abcd1234", Healthy: true}
	ep := m.Record("cluster-uid", "example.com")
	if !strings.HasPrefix(ep.DNSName, "dnspolicy-group-") || !strings.HasSuffix(ep.DNSName, ".example.com") {
		t.Errorf("name %s", ep.DNSName)
	}
	if got, ok := ParseMember(ep); !ok || got != m {
		t.Errorf("read back %+v %v", got, ok)
	}
	for _, bad := range []string{`"dnspolicy-group=1 group=east lease=abcd1234"`, `"dnspolicy-group=2 group=east lease=a healthy=true"`,
		`"dnspolicy-group=1 group= lease=a healthy=true"`, `"dnspolicy-group=1 group=east lease=a healthy=true x=y"`} {
		e := ep.DeepCopy()
		e.Targets[0] = bad
		if _, ok := ParseMember(e); ok {
			t.Errorf("%s read as a member", bad)
		}
	}
}
