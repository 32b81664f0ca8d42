package groups

import (
	"fmt"
	"slices"
	"time"
)

// Automatic failover (not Kuadrant's: its switch is a person's TXT edit) moves a zone's active
// groups along an order the administrator gives, from evidence each controller gathers on its own
// clock. Decide is the whole rule; a controller only gathers the evidence and writes the result.

// Liveness is what a controller knows of one group at a moment.
type Liveness struct {
	// Alive: some member of the group holds a live lease and passes its health checks.
	Alive bool
	// Since is when the controller first saw the group in this state (alive or not) without a
	// break; for a group it never saw, when it started looking.
	Since time.Time
}

// Failover is what Decide decides from.
type Failover struct {
	// Order is the administrator's order of groups, the preferred first.
	Order []string
	// Active are the zone's active groups as read.
	Active []string
	// Groups is the liveness of each group of Order; a group missing is not alive.
	Groups map[string]Liveness
	// LastSwitch is when the controller first saw Active as it is (a switch, by anyone, or its
	// start).
	LastSwitch time.Time
	Now        time.Time
	// After is how long the active groups must be without a live member before another group is
	// made active; HoldDown how long after the last switch a group earlier in Order may take over
	// again from a live one, which it does once it has been alive for After.
	After, HoldDown time.Duration
}

// Decision is Decide's answer.
type Decision struct {
	// Switch: Active should become To.
	Switch bool
	// From is the order's group active now ("" none), To the groups to write.
	From string
	To   []string
	// Target is the order's group To makes active.
	Target string
	// Why says why, for a log line or an event; set whether or not it switches.
	Why string
}

// Decide is the failover rule. The order's group in charge is the first of Order listed in Active
// (groups of Active not in Order are left as they are, and listed on). With none of Order active,
// nothing is done: which group serves first is a person's choice.
//
//   - Failover: when no group of Order in Active has been alive for After (counted from the later of
//     LastSwitch and when each was last seen alive, so a group just made active has After to show it
//     is), the first alive group after the one in charge in Order, else the first alive one before
//     it, takes its place. None alive: nothing changes (all of them down is no reason to move).
//   - Fail-back: while the group in charge is alive, a group earlier in Order takes over once it has
//     been alive for After and HoldDown has passed since LastSwitch.
//
// A switch writes Active with the group in charge replaced by the target (every other group of
// Order taken out too): one group of the order serves at a time.
func Decide(f Failover) Decision {
	current := ""
	for _, g := range f.Order {
		if slices.Contains(f.Active, g) {
			current = g
			break
		}
	}
	if current == "" {
		return Decision{Why: "no group of the failover order is active: the first is chosen by a person"}
	}
	at := slices.Index(f.Order, current)
	live := func(g string) (Liveness, bool) {
		l, ok := f.Groups[g]
		return l, ok && l.Alive
	}
	// aliveFor reports whether g has been alive for at least d.
	aliveFor := func(g string, d time.Duration) bool {
		l, ok := live(g)
		return ok && f.Now.Sub(l.Since) >= d
	}
	switchTo := func(target, why string) Decision {
		to := slices.DeleteFunc(slices.Clone(f.Active), func(g string) bool { return slices.Contains(f.Order, g) })
		return Decision{Switch: true, From: current, Target: target, To: With(to, target), Why: why}
	}
	if _, ok := live(current); ok {
		if f.Now.Sub(f.LastSwitch) < f.HoldDown {
			return Decision{From: current, Why: fmt.Sprintf("group %s is alive; within the hold-down since the last switch", current)}
		}
		for _, g := range f.Order[:at] {
			if aliveFor(g, f.After) {
				return switchTo(g, fmt.Sprintf("group %s, earlier in the failover order, has been alive for %v and the hold-down of %v has passed since the last switch", g, f.After, f.HoldDown))
			}
		}
		return Decision{From: current, Why: fmt.Sprintf("group %s is alive", current)}
	}
	// Dead since the later of the last switch and when it was last seen alive.
	since := f.LastSwitch
	if l, ok := f.Groups[current]; ok && l.Since.After(since) {
		since = l.Since
	}
	if down := f.Now.Sub(since); down < f.After {
		return Decision{From: current, Why: fmt.Sprintf("group %s has had no live member for %v, less than %v", current, down.Round(time.Second), f.After)}
	}
	for _, g := range slices.Concat(f.Order[at+1:], f.Order[:at]) {
		if _, ok := live(g); ok {
			return switchTo(g, fmt.Sprintf("group %s has had no live member for %v or more; %s is alive", current, f.After, g))
		}
	}
	return Decision{From: current, Why: fmt.Sprintf("group %s has had no live member for %v or more, and no other group of the order is alive", current, f.After)}
}
