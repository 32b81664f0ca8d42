package dnssec

import (
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// testPolicy's waits: a published key activates 1h5m after publication, a retired ZSK or CSK goes
// 2h5m after retirement (a KSK 1h5m), a KSK activates 1h5m after its DS is first seen.
func testPolicy(split bool) Policy {
	return Policy{Algorithm: ECDSAP256SHA256, Split: split, DNSKEYTTL: time.Hour, MaxZoneTTL: 2 * time.Hour,
		DSTTL: time.Hour, Propagation: 5 * time.Minute, DSCheckEvery: 10 * time.Minute}
}

// tick is one step of a scenario: at t0+at, with the request and what the parent holds.
type tick struct {
	at      time.Duration
	request Rollover
	// parent: "" not asked; "none" asked, holds nothing; "all" holds a DS of every key that wants
	// one; "old" holds the DS of the keys that wanted one before the step.
	parent string
	// want is the keys after the step, in order, as role/state (with "+ds" when a DS is wanted).
	want string
	// next is when the step says to come back, as an offset from t0; -1: nothing pending.
	next time.Duration
	// waiting, refused: substrings of the step's texts ("" for none); forDS: WaitingForDS.
	waiting, refused string
	forDS            bool
}

func summary(r Keyring) string {
	var parts []string
	for _, k := range r.Keys {
		s := string(k.Role) + "/" + string(k.State)
		if k.WantDS {
			s += "+ds"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func parentOf(r Keyring, what string) ParentDS {
	switch what {
	case "":
		return ParentDS{}
	case "none":
		return ParentDS{Asked: true}
	}
	var set []*dns.DS
	for i := range r.Keys {
		if k := &r.Keys[i]; k.WantDS && (what == "all" || k.State == Active) {
			set = append(set, k.DS())
		}
	}
	return ParentDS{Asked: true, DS: set}
}

// run plays a scenario, writing the keyring to its Secret data and reading it back between steps,
// as the controller does on every pass (a restart at any tick resumes from what it read).
func run(t *testing.T, p Policy, ticks []tick) Keyring {
	t.Helper()
	ring := Keyring{Zone: "example.com"}
	for i, tk := range ticks {
		st, err := StepKeys(ring, p, t0.Add(tk.at), tk.request, parentOf(ring, tk.parent))
		if err != nil {
			t.Fatalf("tick %d (%v): %v", i, tk.at, err)
		}
		if got := summary(st.Keys); got != tk.want {
			t.Fatalf("tick %d (%v): keys %q, want %q (changes %v)", i, tk.at, got, tk.want, st.Changes)
		}
		wantNext := time.Time{}
		if tk.next >= 0 {
			wantNext = t0.Add(tk.next)
		}
		if !st.Next.Equal(wantNext) {
			t.Fatalf("tick %d (%v): next %v, want %v", i, tk.at, st.Next.Sub(t0), tk.next)
		}
		if !contains(st.Waiting, tk.waiting) || !contains(st.Refused, tk.refused) || st.WaitingForDS != tk.forDS {
			t.Fatalf("tick %d (%v): waiting %q (for DS %v), refused %q; want %q (%v), %q", i, tk.at, st.Waiting, st.WaitingForDS, st.Refused, tk.waiting, tk.forDS, tk.refused)
		}
		if err := st.Keys.KeySet().Valid(); err != nil {
			t.Fatalf("tick %d (%v): the zone cannot be signed: %v", i, tk.at, err)
		}
		data, err := Marshal(st.Keys)
		if err != nil {
			t.Fatalf("tick %d: marshal: %v", i, err)
		}
		if ring, err = Parse("example.com.", data); err != nil {
			t.Fatalf("tick %d: parse: %v", i, err)
		}
		if summary(ring) != tk.want {
			t.Fatalf("tick %d: read back %q", i, summary(ring))
		}
	}
	return ring
}

func contains(have, want string) bool {
	if want == "" {
		return have == ""
	}
	return strings.Contains(have, want)
}

const (
	h = time.Hour
	m = time.Minute
)

func TestCreate(t *testing.T) {
	run(t, testPolicy(false), []tick{{at: 0, want: "csk/active+ds", next: -1}})
	split := testPolicy(true)
	split.ZSKLifetime = 30 * 24 * h
	ring := run(t, split, []tick{{at: 0, want: "ksk/active+ds zsk/active", next: 30 * 24 * h}})
	if ds := ring.DSRecords(); len(ds) != 1 || !strings.HasPrefix(ds[0], "example.com. IN DS ") || !strings.Contains(ds[0], " 13 2 ") {
		t.Fatalf("DS records %q", ds)
	}
}

func TestZSKRolloverByPrePublication(t *testing.T) {
	run(t, testPolicy(true), []tick{
		{at: 0, want: "ksk/active+ds zsk/active", next: -1},
		{at: 1 * m, request: RollZSK, want: "ksk/active+ds zsk/active zsk/published", next: 1*m + 1*h + 5*m, waiting: "reach caches"},
		// Not before the new DNSKEY set is in every cache.
		{at: 1 * h, want: "ksk/active+ds zsk/active zsk/published", next: 1*h + 6*m, waiting: "is published"},
		{at: 1*h + 6*m, want: "ksk/active+ds zsk/retired zsk/active", next: 1*h + 6*m + 2*h + 5*m, waiting: "retired"},
		// The old ZSK stays until its signatures (max zone TTL) left caches.
		{at: 3 * h, want: "ksk/active+ds zsk/retired zsk/active", next: 3*h + 11*m, waiting: "retired"},
		{at: 3*h + 11*m, want: "ksk/active+ds zsk/removed zsk/active", next: 3*h + 11*m + 1*h + 5*m},
		{at: 5 * h, want: "ksk/active+ds zsk/active", next: -1},
	})
}

func TestKSKRolloverByDoubleDS(t *testing.T) {
	run(t, testPolicy(true), []tick{
		{at: 0, want: "ksk/active+ds zsk/active", next: -1},
		// CDS and CDNSKEY list both keys from now on.
		{at: 0, request: RollKSK, want: "ksk/active+ds zsk/active ksk/published+ds", next: 10 * m, waiting: "waits for the parent to hold its DS", forDS: true},
		// The parent holds only the old DS: the rollover waits, and asks again.
		{at: 2 * h, parent: "old", want: "ksk/active+ds zsk/active ksk/published+ds", next: 2*h + 10*m, waiting: "IN DS", forDS: true},
		// Seen now: the old DS set must leave caches first.
		{at: 3 * h, parent: "all", want: "ksk/active+ds zsk/active ksk/published+ds", next: 4*h + 5*m, waiting: "old DS set to leave caches"},
		{at: 4*h + 5*m, parent: "all", want: "ksk/retired zsk/active ksk/active+ds", next: 5*h + 10*m, waiting: "retired"},
		{at: 5*h + 10*m, parent: "old", want: "ksk/removed zsk/active ksk/active+ds", next: 6*h + 15*m},
		{at: 6*h + 15*m, want: "zsk/active ksk/active+ds", next: -1},
	})
}

func TestCSKRolloverWaitsForBoth(t *testing.T) {
	run(t, testPolicy(false), []tick{
		{at: 0, want: "csk/active+ds", next: -1},
		{at: 0, request: RollCSK, want: "csk/active+ds csk/published+ds", next: 10 * m, waiting: "reach caches", forDS: true},
		// The parent is quick: both waits run, the DS set's the longer.
		{at: 10 * m, parent: "all", want: "csk/active+ds csk/published+ds", next: 1*h + 15*m, waiting: "reach caches"},
		{at: 1*h + 5*m, parent: "all", want: "csk/active+ds csk/published+ds", next: 1*h + 15*m, waiting: "old DS set"},
		{at: 1*h + 15*m, parent: "all", want: "csk/retired csk/active+ds", next: 3*h + 20*m, waiting: "retired"},
		{at: 3*h + 20*m, want: "csk/removed csk/active+ds", next: 4*h + 25*m},
	})
}

func TestParentNeverPublishesTheDS(t *testing.T) {
	ticks := []tick{
		{at: 0, want: "csk/active+ds", next: -1},
		{at: 0, request: RollCSK, want: "csk/active+ds csk/published+ds", next: 10 * m, waiting: "reach caches", forDS: true},
	}
	for d := 24 * h; d <= 10*24*h; d += 24 * h {
		ticks = append(ticks, tick{at: d, parent: "old", want: "csk/active+ds csk/published+ds", next: d + 10*m, waiting: "waits for the parent to hold its DS", forDS: true})
	}
	run(t, testPolicy(false), ticks)
}

func TestParentWithdrawsTheDS(t *testing.T) {
	run(t, testPolicy(false), []tick{
		{at: 0, want: "csk/active+ds", next: -1},
		{at: 0, request: RollCSK, want: "csk/active+ds csk/published+ds", next: 10 * m, waiting: "reach caches", forDS: true},
		{at: 2 * h, parent: "all", want: "csk/active+ds csk/published+ds", next: 3*h + 5*m, waiting: "old DS set"},
		// Gone again before its wait was over: the wait starts over when it is back.
		{at: 2*h + 30*m, parent: "old", want: "csk/active+ds csk/published+ds", next: 2*h + 40*m, forDS: true, waiting: "waits for the parent"},
		{at: 3 * h, parent: "all", want: "csk/active+ds csk/published+ds", next: 4*h + 5*m, waiting: "old DS set"},
		{at: 4*h + 5*m, parent: "all", want: "csk/retired csk/active+ds", next: 6*h + 10*m, waiting: "retired"},
	})
}

func TestRolloverRefused(t *testing.T) {
	run(t, testPolicy(true), []tick{
		{at: 0, want: "ksk/active+ds zsk/active", next: -1},
		{at: 0, request: RollCSK, want: "ksk/active+ds zsk/active", next: -1, refused: "no active CSK (its keys: KSK, ZSK)"},
		{at: 0, request: RollZSK, want: "ksk/active+ds zsk/active zsk/published", next: 1*h + 5*m, waiting: "reach caches"},
		{at: 1 * m, request: RollKSK, want: "ksk/active+ds zsk/active zsk/published", next: 1*h + 5*m, waiting: "reach caches",
			refused: "KSK rollover refused: a ZSK rollover is in progress"},
		// Still refused while the old ZSK is retired.
		{at: 1*h + 5*m, want: "ksk/active+ds zsk/retired zsk/active", next: 3*h + 10*m, waiting: "retired"},
		{at: 2 * h, request: RollZSK, want: "ksk/active+ds zsk/retired zsk/active", next: 3*h + 10*m, waiting: "retired", refused: "ZSK rollover refused: a ZSK rollover is in progress (zsk-13-"},
	})
}

func TestZSKLifetime(t *testing.T) {
	p := testPolicy(true)
	p.ZSKLifetime = 24 * h
	run(t, p, []tick{
		{at: 0, want: "ksk/active+ds zsk/active", next: 24 * h},
		{at: 23 * h, want: "ksk/active+ds zsk/active", next: 24 * h},
		{at: 24 * h, want: "ksk/active+ds zsk/active zsk/published", next: 25*h + 5*m, waiting: "reach caches"},
		{at: 25*h + 5*m, want: "ksk/active+ds zsk/retired zsk/active", next: 27*h + 10*m, waiting: "retired"},
		{at: 27*h + 10*m, want: "ksk/active+ds zsk/removed zsk/active", next: 28*h + 15*m},
		// The new ZSK's lifetime counts from its activation.
		{at: 28*h + 15*m, want: "ksk/active+ds zsk/active", next: 49*h + 5*m},
	})
}

// A Secret written by hand, without times, starts its timers at the first step: a published key is
// not taken to have waited since the epoch.
func TestMissingTimesStartNow(t *testing.T) {
	ring := run(t, testPolicy(false), []tick{{at: 0, want: "csk/active+ds", next: -1}})
	next, err := Generate("example.com", ECDSAP256SHA256, CSK)
	if err != nil {
		t.Fatal(err)
	}
	next.WantDS = true
	ring.Keys = append(ring.Keys, next)
	ring.Times = nil
	st, err := StepKeys(ring, testPolicy(false), t0.Add(48*h), "", ParentDS{Asked: true, DS: []*dns.DS{ring.Keys[0].DS(), next.DS()}})
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(st.Keys); got != "csk/active+ds csk/published+ds" {
		t.Fatalf("keys %q", got)
	}
	if want := t0.Add(49*h + 5*m); !st.Next.Equal(want) {
		t.Fatalf("next %v, want %v", st.Next, want)
	}
}

func TestMismatchIsReportedNotActedOn(t *testing.T) {
	ring := run(t, testPolicy(false), []tick{{at: 0, want: "csk/active+ds", next: -1}})
	p := testPolicy(true)
	p.Algorithm = ED25519
	st, err := StepKeys(ring, p, t0.Add(h), RollCSK, ParentDS{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(st.Mismatch, "algorithm 13, the policy's is 15") || !strings.Contains(st.Mismatch, "asks for a KSK and a ZSK") {
		t.Fatalf("mismatch %q", st.Mismatch)
	}
	// The CSK is rolled as a CSK, with its own algorithm.
	if len(st.Keys.Keys) != 2 || st.Keys.Keys[1].Role != CSK || st.Keys.Keys[1].DNSKEY.Algorithm != ECDSAP256SHA256 {
		t.Fatalf("keys %s", summary(st.Keys))
	}
}

// A step with nothing due changes nothing, so the controller writes the Secret only when a key moved;
// a step that moved says what moved.
func TestStepChangesOnlyWhatIsDue(t *testing.T) {
	ring := run(t, testPolicy(true), []tick{{at: 0, want: "ksk/active+ds zsk/active", next: -1}})
	st, err := StepKeys(ring, testPolicy(true), t0.Add(24*h), "", ParentDS{Asked: true})
	if err != nil {
		t.Fatal(err)
	}
	if st.Changed || len(st.Changes) != 0 {
		t.Fatalf("nothing was due, yet changed %v", st.Changes)
	}
	st, err = StepKeys(ring, testPolicy(true), t0.Add(24*h), RollZSK, ParentDS{})
	if err != nil {
		t.Fatal(err)
	}
	if !st.Changed || len(st.Changes) != 1 || st.Changes[0].What != "RolloverStarted" || st.Changes[0].Role != ZSK {
		t.Fatalf("changes %v", st.Changes)
	}
	// An invalid keyring is refused, not stepped.
	bad := ring
	bad.Keys = []Key{ring.Keys[1]}
	if _, err := StepKeys(bad, testPolicy(true), t0, "", ParentDS{}); err == nil || !strings.Contains(err.Error(), "no active KSK or CSK") {
		t.Fatalf("error %v", err)
	}
}
