package dnssec

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// Policy is how a zone's keys are made and rolled. Every wait is a cache's lifetime plus
// propagation: a key signs only once every cache that matters can have seen it, and leaves the
// zone only once no cache can still hold what it signed.
type Policy struct {
	// Algorithm of new keys: ECDSAP256SHA256 (13) or ED25519 (15). A rollover makes its new key
	// with the algorithm of the key it replaces: an algorithm rollover (RFC 6781 4.1.4) is not one
	// of these, and a keyring whose algorithm differs from the policy's is reported, not changed.
	Algorithm uint8
	// Split makes a KSK and a ZSK; false, one CSK.
	Split bool
	// ZSKLifetime starts a ZSK rollover once the active ZSK has been active this long; 0 rolls
	// only by request. Split keys only: a CSK rolls only with the parent.
	ZSKLifetime time.Duration
	// DNSKEYTTL is the TTL of the DNSKEY set; MaxZoneTTL the largest TTL of the zone's other sets
	// (how long an RRSIG of the zone may be cached); DSTTL the TTL of the parent's DS set.
	DNSKEYTTL, MaxZoneTTL, DSTTL time.Duration
	// Propagation is how long a change takes to reach every server of the zone, or of the parent;
	// added to every wait.
	Propagation time.Duration
	// DSCheckEvery is how often the parent is asked again while a key waits for its DS.
	DSCheckEvery time.Duration
}

// Validate says what is wrong with a policy.
func (p Policy) Validate() error {
	switch {
	case p.Algorithm != ECDSAP256SHA256 && p.Algorithm != ED25519:
		return fmt.Errorf("algorithm %d: we sign with 13 (ECDSAP256SHA256) or 15 (ED25519)", p.Algorithm)
	case p.ZSKLifetime != 0 && !p.Split:
		return fmt.Errorf("a ZSK lifetime needs a KSK and a ZSK: a CSK rolls only by request, with the parent")
	case p.ZSKLifetime < 0 || p.Propagation < 0:
		return fmt.Errorf("the ZSK lifetime and propagation cannot be negative")
	case p.DNSKEYTTL <= 0 || p.MaxZoneTTL <= 0 || p.DSTTL <= 0 || p.DSCheckEvery <= 0:
		return fmt.Errorf("the TTLs and the DS check interval must be positive")
	}
	return nil
}

// Rollover is a rollover asked for by an administrator.
type Rollover string

const (
	// RollZSK rolls the ZSK by pre-publication (RFC 6781 4.1.1.1).
	RollZSK Rollover = "zsk"
	// RollKSK and RollCSK roll the KSK, or the CSK, by double DS (RFC 6781 4.1.2), the parent told
	// by CDS and CDNSKEY (RFC 7344).
	RollKSK Rollover = "ksk"
	RollCSK Rollover = "csk"
)

// ParentDS is what the parent was seen to hold for the zone. Asked false says it was not asked
// this time: what was seen before stands.
type ParentDS struct {
	Asked bool
	DS    []*dns.DS
}

// holds says whether the parent holds a DS of k.
func (p ParentDS) holds(k *Key) bool {
	want := k.DS()
	return slices.ContainsFunc(p.DS, func(ds *dns.DS) bool {
		return ds.KeyTag == want.KeyTag && ds.Algorithm == want.Algorithm && ds.DigestType == want.DigestType &&
			strings.EqualFold(ds.Digest, want.Digest)
	})
}

// Change is one thing a step did to one key.
type Change struct {
	Key  string
	Role Role
	// What: Created, RolloverStarted, DSSeen, DSGone, Activated, Retired, Removed or Forgotten.
	What    string
	Message string
}

func (c Change) String() string { return c.Key + " " + c.What + ": " + c.Message }

// Stepped is a keyring after a step, what the step did, and what the keys wait for.
type Stepped struct {
	Keys Keyring
	// Changed says whether Keys differ from the keyring given, and must be written back.
	Changed bool
	Changes []Change
	// Next is when the step is due again: the next timed transition, or the next time to ask the
	// parent while a key waits for its DS; zero when nothing is pending.
	Next time.Time
	// Waiting says what the keys wait for, "" for nothing; without times, so a status made of it
	// changes only when a wait does.
	Waiting string
	// WaitingForDS says a key waits for the parent to hold its DS.
	WaitingForDS bool
	// Refused says why the requested rollover was not started.
	Refused string
	// Mismatch says how the keys differ from the policy (algorithm, CSK or split): reported only;
	// keys are never changed to fit.
	Mismatch string
}

// StepKeys moves a zone's keys along at now: it makes the first keys of an empty keyring, starts
// the rollover asked for (or one due by the ZSK's lifetime), and moves every key whose wait is
// over, until none is, so a keyring read back after an outage catches up in one call. It only
// computes: the caller reads the clock, the parent and the Secret, and writes the result back.
func StepKeys(r Keyring, p Policy, now time.Time, request Rollover, parent ParentDS) (Stepped, error) {
	if err := p.Validate(); err != nil {
		return Stepped{}, err
	}
	st := &stepper{p: p, now: now, parent: parent, r: cloneKeyring(r)}
	st.r.Zone = dns.CanonicalName(r.Zone)
	if len(st.r.set().Published()) == 0 {
		if err := st.first(); err != nil {
			return Stepped{}, err
		}
	} else if err := st.r.set().Valid(); err != nil {
		return Stepped{}, err
	}
	st.startClocks()
	out := Stepped{Mismatch: st.mismatch()}
	switch {
	case request != "":
		if why := st.start(request, "requested"); why != "" {
			out.Refused = fmt.Sprintf("%s rollover refused: %s", strings.ToUpper(string(request)), why)
		}
	case st.zskDue():
		st.start(RollZSK, fmt.Sprintf("the ZSK was active for its lifetime, %s", p.ZSKLifetime))
	}
	for st.advance() {
	}
	out.Keys, out.Changed, out.Changes = st.r, st.changed, st.changes
	out.Next, out.Waiting, out.WaitingForDS = st.pending()
	return out, nil
}

type stepper struct {
	p       Policy
	now     time.Time
	parent  ParentDS
	r       Keyring
	changed bool
	changes []Change
}

func cloneKeyring(r Keyring) Keyring {
	out := Keyring{Zone: r.Zone, Keys: slices.Clone(r.Keys), Times: map[string]KeyTimes{}}
	for id, t := range r.Times {
		out.Times[id] = t
	}
	return out
}

func (r *Keyring) set() *KeySet { return &KeySet{Keys: r.Keys} }

// startClocks gives a key without a time (a Secret written by hand) the step's time: its waits
// start now, never at the epoch, which would make it due at once.
func (st *stepper) startClocks() {
	for _, k := range st.r.Keys {
		if t := st.r.Times[k.ID]; t.Changed.IsZero() {
			t.Changed = st.now
			st.r.Times[k.ID] = t
			st.changed = true
		}
	}
}

func (st *stepper) note(k *Key, what, msg string) {
	st.changed = true
	st.changes = append(st.changes, Change{Key: k.ID, Role: k.Role, What: what, Message: msg})
}

// move puts k in state and starts its clock.
func (st *stepper) move(k *Key, state State, what, msg string) {
	k.State = state
	st.r.Times[k.ID] = KeyTimes{Changed: st.now, DSSeen: st.r.Times[k.ID].DSSeen}
	if state == Removed {
		// Nothing is signed with it again: the Secret stops holding its private half.
		k.Signer, k.WantDS = nil, false
	}
	st.note(k, what, msg)
}

// add generates a key in state and adds it. A key tag already in the keyring (one in 65536) is
// generated again: the tag names the key in its ID, its DS and its signatures.
func (st *stepper) add(role Role, algorithm uint8, state State, wantDS bool, what, msg string) error {
	for range 8 {
		k, err := Generate(st.r.Zone, algorithm, role)
		if err != nil {
			return fmt.Errorf("generating a %s: %w", upper(role), err)
		}
		if slices.ContainsFunc(st.r.Keys, func(have Key) bool { return have.KeyTag() == k.KeyTag() }) {
			continue
		}
		k.State, k.WantDS = state, wantDS
		st.r.Keys = append(st.r.Keys, k)
		st.move(&st.r.Keys[len(st.r.Keys)-1], state, what, msg)
		return nil
	}
	return fmt.Errorf("generating a %s: every key made has a key tag already in use", upper(role))
}

// first makes an empty keyring's keys, active at once: nothing was signed before, so no cache holds
// anything to wait for. The parent's DS is wanted for the key-signing key; until the parent holds
// it the zone is signed but insecure (resolvers do not validate it).
func (st *stepper) first() error {
	if !st.p.Split {
		return st.add(CSK, st.p.Algorithm, Active, true, "Created", "the zone's first CSK")
	}
	if err := st.add(KSK, st.p.Algorithm, Active, true, "Created", "the zone's first KSK"); err != nil {
		return err
	}
	return st.add(ZSK, st.p.Algorithm, Active, false, "Created", "the zone's first ZSK")
}

// mismatch says how the active keys differ from the policy.
func (st *stepper) mismatch() string {
	var out []string
	algs, csk := map[uint8]bool{}, false
	for _, k := range st.r.set().Published() {
		algs[k.DNSKEY.Algorithm] = true
		csk = csk || k.Role == CSK
	}
	for _, a := range slices.Sorted(func(yield func(uint8) bool) {
		for a := range algs {
			if !yield(a) {
				return
			}
		}
	}) {
		if a != st.p.Algorithm {
			out = append(out, fmt.Sprintf("the keys are of algorithm %d, the policy's is %d", a, st.p.Algorithm))
		}
	}
	switch {
	case csk && st.p.Split:
		out = append(out, "the keys are a CSK, the policy asks for a KSK and a ZSK")
	case !csk && !st.p.Split:
		out = append(out, "the keys are a KSK and a ZSK, the policy asks for a CSK")
	}
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, "; ") + " (changing either needs a rollover of another kind, which is not done: the keys are kept and rolled as they are)"
}

// running says which rollover is under way, "" for none: a key published and not yet active, or
// retired and not yet removed.
func (st *stepper) running() string {
	for _, k := range st.r.set().Published() {
		switch k.State {
		case Published:
			return fmt.Sprintf("a %s rollover is in progress (%s is published, not yet active)", upper(k.Role), k.ID)
		case Retired:
			return fmt.Sprintf("a %s rollover is in progress (%s is retired, not yet removed)", upper(k.Role), k.ID)
		}
	}
	return ""
}

// active is the active key of a role, nil for none.
func (st *stepper) active(role Role) *Key {
	for _, k := range st.r.set().Published() {
		if k.State == Active && k.Role == role {
			return k
		}
	}
	return nil
}

func (st *stepper) zskDue() bool {
	if st.p.ZSKLifetime == 0 || st.running() != "" {
		return false
	}
	z := st.active(ZSK)
	return z != nil && !st.now.Before(st.r.Times[z.ID].Changed.Add(st.p.ZSKLifetime))
}

// roles are the roles of the live keys, for messages.
func (st *stepper) roles() string {
	var out []string
	for _, k := range st.r.set().Published() {
		if r := upper(k.Role); !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return strings.Join(out, ", ")
}

// start begins a rollover, or says why it cannot: one is already running (rollovers never
// overlap, so each key's wait is about one change), or there is no active key of the role.
func (st *stepper) start(roll Rollover, why string) string {
	role := map[Rollover]Role{RollZSK: ZSK, RollKSK: KSK, RollCSK: CSK}[roll]
	if role == "" {
		return fmt.Sprintf("%q is not zsk, ksk or csk", roll)
	}
	if running := st.running(); running != "" {
		return running
	}
	old := st.active(role)
	if old == nil {
		return fmt.Sprintf("no active %s (its keys: %s)", upper(role), st.roles())
	}
	if role == ZSK {
		return errText(st.add(ZSK, old.DNSKEY.Algorithm, Published, false, "RolloverStarted",
			fmt.Sprintf("ZSK rollover begun (%s): pre-published, to replace %s", why, old.ID)))
	}
	old.WantDS = true
	return errText(st.add(role, old.DNSKEY.Algorithm, Published, true, "RolloverStarted",
		fmt.Sprintf("%s rollover begun (%s): published, its DS wanted beside that of %s", upper(role), why, old.ID)))
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// advance moves every key whose wait is over one state on, and says whether any moved.
func (st *stepper) advance() bool {
	moved := false
	for i := range st.r.Keys {
		k := &st.r.Keys[i]
		switch k.State {
		case Published:
			moved = st.activate(k) || moved
		case Retired:
			if !st.now.Before(st.r.Times[k.ID].Changed.Add(st.retireWait(k))) {
				st.move(k, Removed, "Removed", "no cache can hold a signature of it any longer")
				moved = true
			}
		}
	}
	return st.forget() || moved
}

// activate makes a published key active, and the key it replaces retired, once its waits are over.
// A key-signing key first waits for the parent to hold its DS: seen, the time is kept; seen gone
// again, the wait starts over.
func (st *stepper) activate(k *Key) bool {
	t := st.r.Times[k.ID]
	if k.Role != ZSK && st.parent.Asked {
		switch holds := st.parent.holds(k); {
		case holds && t.DSSeen.IsZero():
			t.DSSeen = st.now
			st.note(k, "DSSeen", fmt.Sprintf("the parent holds its DS (tag %d)", k.KeyTag()))
		case !holds && !t.DSSeen.IsZero():
			t.DSSeen = time.Time{}
			st.note(k, "DSGone", fmt.Sprintf("the parent no longer holds its DS (tag %d): waiting for it again", k.KeyTag()))
		}
		st.r.Times[k.ID] = t
	}
	if due, ok := st.activation(k); !ok || st.now.Before(due) {
		return false
	}
	var replaced []string
	for _, old := range st.r.set().Published() {
		if old.State == Active && old.Role == k.Role {
			old.WantDS = false
			st.move(old, Retired, "Retired", fmt.Sprintf("replaced by %s", k.ID))
			replaced = append(replaced, old.ID)
		}
	}
	st.move(k, Active, "Activated", fmt.Sprintf("signs in place of %s", strings.Join(replaced, ", ")))
	return true
}

// activation is when a published key may sign: once every resolver can have its DNSKEY (the DNSKEY
// set's TTL after it was published) and, for a key-signing key, its DS (the DS set's TTL after the
// parent was seen holding it, so no cache still holds the DS set without it). ok is false while
// the DS has not been seen.
func (st *stepper) activation(k *Key) (time.Time, bool) {
	t := st.r.Times[k.ID]
	due := t.Changed.Add(st.p.DNSKEYTTL + st.p.Propagation)
	if k.Role == ZSK {
		return due, true
	}
	if t.DSSeen.IsZero() {
		return time.Time{}, false
	}
	if ds := t.DSSeen.Add(st.p.DSTTL + st.p.Propagation); ds.After(due) {
		due = ds
	}
	return due, true
}

// retireWait is how long a retired key stays published: as long as a resolver may hold a
// signature it made, of the DNSKEY set (a KSK), of the rest of the zone (a ZSK), or of either (a
// CSK).
func (st *stepper) retireWait(k *Key) time.Duration {
	switch k.Role {
	case KSK:
		return st.p.DNSKEYTTL + st.p.Propagation
	case ZSK:
		return st.p.MaxZoneTTL + st.p.Propagation
	}
	return max(st.p.DNSKEYTTL, st.p.MaxZoneTTL) + st.p.Propagation
}

// forget drops removed keys once the DNSKEY set without them can have reached every cache; until
// then status shows them.
func (st *stepper) forget() bool {
	n := len(st.r.Keys)
	st.r.Keys = slices.DeleteFunc(st.r.Keys, func(k Key) bool {
		if k.State != Removed || st.now.Before(st.r.Times[k.ID].Changed.Add(st.p.DNSKEYTTL+st.p.Propagation)) {
			return false
		}
		st.changes = append(st.changes, Change{Key: k.ID, Role: k.Role, What: "Forgotten", Message: "dropped from the Secret"})
		delete(st.r.Times, k.ID)
		return true
	})
	if len(st.r.Keys) == n {
		return false
	}
	st.changed = true
	return true
}

// pending is when the keys are due again, what they wait for, and whether a key waits for its DS.
func (st *stepper) pending() (time.Time, string, bool) {
	var next time.Time
	at := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	var waits []string
	forDS, running := false, st.running() != ""
	for i := range st.r.Keys {
		k := &st.r.Keys[i]
		t := st.r.Times[k.ID]
		switch k.State {
		case Published:
			w, due, ok := st.publishedWait(k)
			waits = append(waits, w)
			if !ok {
				forDS = true
				due = st.now.Add(st.p.DSCheckEvery)
			}
			at(due)
		case Retired:
			waits = append(waits, fmt.Sprintf("%s %s is retired, and removed once no cache can hold a signature of it", upper(k.Role), k.ID))
			at(t.Changed.Add(st.retireWait(k)))
		case Removed:
			at(t.Changed.Add(st.p.DNSKEYTTL + st.p.Propagation))
		case Active:
			if k.Role == ZSK && st.p.ZSKLifetime > 0 && !running {
				at(t.Changed.Add(st.p.ZSKLifetime))
			}
		}
	}
	return next, strings.Join(waits, "; "), forDS
}

// publishedWait says what a published key waits for and when that is over; ok is false while it
// waits for the parent's DS, which no time ends.
func (st *stepper) publishedWait(k *Key) (string, time.Time, bool) {
	t := st.r.Times[k.ID]
	var waits []string
	if k.Role != ZSK && t.DSSeen.IsZero() {
		waits = append(waits, fmt.Sprintf("for the parent to hold its DS (%s)", dsText(k)))
	}
	if st.now.Before(t.Changed.Add(st.p.DNSKEYTTL + st.p.Propagation)) {
		waits = append(waits, "for its DNSKEY to reach caches")
	}
	if k.Role != ZSK && !t.DSSeen.IsZero() && st.now.Before(t.DSSeen.Add(st.p.DSTTL+st.p.Propagation)) {
		waits = append(waits, "for the old DS set to leave caches")
	}
	due, ok := st.activation(k)
	return fmt.Sprintf("%s %s is published and waits %s before it signs", upper(k.Role), k.ID, strings.Join(waits, " and ")), due, ok
}

// DSRecords are the DS records the parent should hold (those of the keys that want one), in
// zone-file form without a TTL (the parent's own): "example.com. IN DS 12345 13 2 ABCD...".
func (r *Keyring) DSRecords() []string {
	var out []string
	for _, k := range r.set().WantDS() {
		out = append(out, dsText(k))
	}
	return out
}

func dsText(k *Key) string {
	ds := k.DS()
	return fmt.Sprintf("%s IN DS %d %d %d %s", ds.Hdr.Name, ds.KeyTag, ds.Algorithm, ds.DigestType, strings.ToUpper(ds.Digest))
}

func upper(r Role) string { return strings.ToUpper(string(r)) }
