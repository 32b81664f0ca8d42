package plan

import (
	"flag"
	"fmt"
	"maps"
	"math/rand"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

var seedFlag = flag.Int64("plan.seed", 0, "seed of TestInterleavings; 0 picks one from the clock")

// The human's records: an A at h (our owners' A and CNAME wishes there collide with it) and a TXT
// at n2 (a CNAME there would shadow it).
var (
	humanA   = rec("h.example.com", "A", 300, "9.9.9.9")
	humanTXT = rec("n2.example.com", "TXT", 300, `"v=spf1 -all"`)
)

// TestInterleavings runs random interleavings of three owners creating, changing and deleting
// their records in one zone beside a human's records. After every step the zone must be exactly
// what the rules give for the owners' current wishes and what was published before (computed here
// independently, from the wishes and the previous step's expected records alone), the ownership
// TXTs exactly the live owners' wishes, the human's records untouched, at most one kind and one
// single value published per name, a published value changed only where every owner that held it
// left it or changed its wish, and each batch must pass the apply-time check, apply to a strict
// zone, and re-plan to nothing.
func TestInterleavings(t *testing.T) {
	runSeeded(t, 10000, interleaving)
}

// runSeeded runs n random cases spread over the cores. Case i draws from its own source, seed+i, so
// it replays alone; the seed is logged, and -plan.seed picks it.
func runSeeded(t *testing.T, n int64, run func(*rand.Rand) error) {
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (rerun with -plan.seed=%d)", seed, seed)
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for w := runtime.GOMAXPROCS(0); w > 0; w-- {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < n && !failed.Load(); i = next.Add(1) - 1 {
				if err := run(rand.New(rand.NewSource(seed + i))); err != nil {
					failed.Store(true)
					t.Errorf("seed %d, case %d: %v", seed, i, err)
				}
			}
		}()
	}
	wg.Wait()
}

func interleaving(rng *rand.Rand) error {
	z := newZone(humanA, humanTXT)
	owners := []*owner{{id: "o1"}, {id: "o2"}, {id: "o3"}}
	wants := map[string][]*v1alpha1.Endpoint{}
	// Half the cases are three clusters, half three owners of one cluster, which know each other's
	// wishes (the publish queue remembers them) and so write Kuadrant's claims everywhere.
	oneCluster := rng.Intn(2) == 0
	if oneCluster {
		for _, o := range owners {
			o.local = func(string) bool { return true }
			o.known = func(owner string, k v1alpha1.EndpointKey) *v1alpha1.Endpoint {
				if i := slices.IndexFunc(wants[owner], func(e *v1alpha1.Endpoint) bool { return e.Key() == k }); i >= 0 {
					return wants[owner][i]
				}
				return nil
			}
		}
	}
	var history []string
	act := func(o *owner, desired []*v1alpha1.Endpoint) error {
		verb := "updates"
		switch {
		case len(desired) == 0:
			verb = "deletes"
		case len(wants[o.id]) == 0:
			verb = "creates"
		}
		history = append(history, fmt.Sprintf("%s %s %v", o.id, verb, lines(desired)))
		// The rules publish what the owners want, given what the zone published before the step.
		before, prevWants := maps.Clone(z), maps.Clone(wants)
		var model map[v1alpha1.EndpointKey]*v1alpha1.Endpoint
		res, err := tryStep(z, o, desired)
		if err == nil {
			wants[o.id] = desired
			model = expectPublished(before, prevWants, wants)
			err = checkReport(o, desired, res, z, wants)
		}
		if err == nil && oneCluster {
			// Every owner knows the others' wishes: the zone is exact after every step.
			err = checkRecords(z, model, wants)
		}
		if err == nil {
			// A claim that does not state its owner's wish presumes it is what is published; an
			// owner learns that it no longer is (another owner joined, or won) when it plans. Once
			// every owner has planned again, claims and records are exact.
			next := settle(z, owners, wants)
			if !oneCluster {
				// Which value a claim that presumed a stale one let through first depends on the
				// order the owners settle in: any the rules allow.
				model = nil
			}
			err = checkZone(next, model, wants)
			if err == nil {
				err = checkIncumbents(before, next, prevWants, wants)
			}
		}
		if err != nil {
			return fmt.Errorf("%w\nhistory:\n  %s\nzone:\n  %s", err, strings.Join(history, "\n  "), strings.Join(lines(z.endpoints()), "\n  "))
		}
		return nil
	}
	for n := 2 + rng.Intn(7); n > 0; n-- {
		o := owners[rng.Intn(len(owners))]
		var desired []*v1alpha1.Endpoint
		if rng.Intn(4) > 0 {
			desired = randomWishes(rng)
		}
		if err := act(o, desired); err != nil {
			return err
		}
	}
	for _, i := range rng.Perm(len(owners)) {
		if err := act(owners[i], nil); err != nil {
			return err
		}
	}
	if got := lines(z.endpoints()); !slices.Equal(got, []string{line(humanA), line(humanTXT)}) {
		return fmt.Errorf("after every owner left the zone holds %v", got)
	}
	return nil
}

// settle returns a copy of the zone after every owner with wishes planned them again, once each in
// owner order, and then once more: the second round must change nothing. The owners and zone given
// are left as they are.
func settle(z strictZone, owners []*owner, wants map[string][]*v1alpha1.Endpoint) strictZone {
	settled := maps.Clone(z)
	copies := make([]*owner, len(owners))
	for i, o := range owners {
		c := *o
		copies[i] = &c
	}
	for round := 0; round < 2; round++ {
		for _, o := range copies {
			if len(wants[o.id]) == 0 {
				continue
			}
			res, err := tryStep(settled, o, wants[o.id])
			if err == nil && round == 1 && !res.Changes.Empty() {
				err = fmt.Errorf("%s still writes in a second round:\n%s", o.id, describeChanges(res.Changes))
			}
			if err != nil {
				settled[v1alpha1.EndpointKey{DNSName: "settle-failed.example.com", RecordType: "TXT"}] = rec("settle-failed.example.com", "TXT", 0, err.Error())
				return settled
			}
		}
	}
	return settled
}

func randomWishes(rng *rand.Rand) []*v1alpha1.Endpoint {
	pick := func(pool ...string) string { return pool[rng.Intn(len(pool))] }
	ttl := func() v1alpha1.TTL { return v1alpha1.TTL([]int{60, 300}[rng.Intn(2)]) }
	ips := func(pool ...string) []string {
		out := []string{pick(pool...)}
		if rng.Intn(2) == 0 {
			out = append(out, pick(pool...))
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	var out []*v1alpha1.Endpoint
	for _, name := range []string{"n0.example.com", "n1.example.com", "n2.example.com", "h.example.com"} {
		switch rng.Intn(6) {
		case 0, 1:
		case 2:
			out = append(out, rec(name, "A", ttl(), ips("10.0.0.1", "10.0.0.2", "10.0.0.3")...))
			if rng.Intn(2) == 0 {
				out = append(out, rec(name, "AAAA", ttl(), ips("2001:db8::1", "2001:db8::2")...))
			}
		case 3:
			out = append(out, rec(name, "AAAA", ttl(), ips("2001:db8::1", "2001:db8::2")...))
		default:
			targets := []string{pick("lb1.example.net", "lb2.example.net", "lb3.example.net")}
			if rng.Intn(8) == 0 {
				targets = ips("lb1.example.net", "lb2.example.net", "lb3.example.net")
			}
			out = append(out, rec(name, "CNAME", ttl(), targets...))
		}
	}
	if rng.Intn(2) == 0 {
		out = append(out, rec("klb.g.example.com", "CNAME", 300, pick("ie", "us")+".klb.g.example.com").
			WithSetIdentifier("default").WithProviderSpecific("geo-code", "*"))
	}
	if rng.Intn(3) == 0 {
		out = append(out, rec("ie.klb.g.example.com", "CNAME", 60, "lb.example.net").
			WithSetIdentifier("lb.example.net").WithProviderSpecific("weight", pick("100", "120")))
	}
	return out
}

// checkZone compares the zone with what the rules publish (checkRecords), and checks every claim:
// it states its owner's wish, or it states none and the record is published as its owner wants it.
func checkZone(z strictZone, model map[v1alpha1.EndpointKey]*v1alpha1.Endpoint, wants map[string][]*v1alpha1.Endpoint) error {
	if err := checkRecords(z, model, wants); err != nil {
		return err
	}
	read := registry.Read(z.endpoints())
	for _, r := range read.Records() {
		for _, c := range r.Claims {
			i := slices.IndexFunc(wants[c.Owner], func(w *v1alpha1.Endpoint) bool { return w.Key() == c.Record })
			if i < 0 {
				return fmt.Errorf("%s claims %v, which it does not want", c.Owner, c.Record)
			}
			w := wants[c.Owner][i]
			switch p := r.Endpoint; {
			case c.Wish != nil && !sameRecord(c.Wish, w):
				return fmt.Errorf("%s's claim says %v, it wants %v", c.Owner, c.Wish, w)
			case c.Wish != nil:
			case p == nil || p.RecordTTL != w.RecordTTL || !sameProviderSpecific(p.ProviderSpecific, w.ProviderSpecific) ||
				slices.ContainsFunc(w.Targets, func(t string) bool { return !slices.Contains(p.Targets, t) }) ||
				p.RecordType == "CNAME" && len(p.Targets) == 1 && !p.Targets.SameTargets(w.Targets):
				return fmt.Errorf("%s's claim says nothing, it wants %v, the zone publishes %v", c.Owner, w, p)
			}
		}
	}
	return nil
}

// human holds the human's records; blocked tells a wish they keep out (same type at the name, or a
// CNAME beside them).
var human = map[v1alpha1.EndpointKey]*v1alpha1.Endpoint{humanA.Key(): humanA, humanTXT.Key(): humanTXT}

func blocked(k v1alpha1.EndpointKey) bool {
	for hk := range human {
		if hk.DNSName == k.DNSName && (hk.RecordType == k.RecordType || k.RecordType == "CNAME") {
			return true
		}
	}
	return false
}

// wants reports whether owner o wants key k in ws, and with what.
func wanted(ws map[string][]*v1alpha1.Endpoint, o string, k v1alpha1.EndpointKey) *v1alpha1.Endpoint {
	if i := slices.IndexFunc(ws[o], func(e *v1alpha1.Endpoint) bool { return e.Key() == k }); i >= 0 {
		return ws[o][i]
	}
	return nil
}

// expectPublished works out what the rules publish for the owners' wishes, from the wishes, the
// zone before (prev; only the records at keys some owner wants count) and the wishes then
// (prevWants) alone. An owner holds a key when
// it claimed it before (wanted it then) and still wants it. At a name, the kind (CNAME or the rest)
// of a published key that an owner holds stays; where no kind (or both) is held so, the lowest
// owner's kind. For each key, the single values (a single-target CNAME's target, the TTL, the
// routing properties) of its incumbent (the lowest holder that wants exactly what was published)
// stay; without one, the lowest owner's are published. Targets of A, AAAA and multi-target CNAMEs
// are the union of the wishes.
func expectPublished(prev strictZone, prevWants, wants map[string][]*v1alpha1.Endpoint) map[v1alpha1.EndpointKey]*v1alpha1.Endpoint {
	type wish struct {
		owner string
		e     *v1alpha1.Endpoint
		held  bool
	}
	byName := map[string]map[v1alpha1.EndpointKey][]wish{}
	for o, eps := range wants {
		for _, e := range eps {
			k := e.Key()
			if blocked(k) {
				continue
			}
			if byName[k.DNSName] == nil {
				byName[k.DNSName] = map[v1alpha1.EndpointKey][]wish{}
			}
			byName[k.DNSName][k] = append(byName[k.DNSName][k], wish{o, e, wanted(prevWants, o, k) != nil})
		}
	}
	out := map[v1alpha1.EndpointKey]*v1alpha1.Endpoint{}
	for _, keys := range byName {
		heldKinds := map[bool]bool{}
		for k, ws := range keys {
			if prev[k] != nil && slices.ContainsFunc(ws, func(w wish) bool { return w.held }) {
				heldKinds[k.RecordType == "CNAME"] = true
			}
		}
		var cname bool
		if len(heldKinds) == 1 {
			cname = heldKinds[true]
		} else {
			lowest := ""
			for _, ws := range keys {
				for _, w := range ws {
					if lowest == "" || w.owner < lowest {
						lowest = w.owner
					}
				}
			}
			cname = true
			for k, ws := range keys {
				if k.RecordType != "CNAME" && slices.ContainsFunc(ws, func(w wish) bool { return w.owner == lowest }) {
					cname = false
				}
			}
		}
		for k, ws := range keys {
			if (k.RecordType == "CNAME") != cname {
				continue
			}
			sort.Slice(ws, func(i, j int) bool { return ws[i].owner < ws[j].owner })
			multi := k.RecordType != "CNAME" || slices.ContainsFunc(ws, func(w wish) bool { return len(w.e.Targets) > 1 })
			winner := ws[0].e
			if p := prev[k]; p != nil {
				for _, w := range ws {
					if w.held && (multi || w.e.Targets.SameTargets(p.Targets)) && w.e.RecordTTL == p.RecordTTL &&
						sameProviderSpecific(w.e.ProviderSpecific, p.ProviderSpecific) {
						winner = w.e
						break
					}
				}
			}
			targets := winner.Targets
			if multi {
				var all []string
				for _, w := range ws {
					all = append(all, w.e.Targets...)
				}
				slices.Sort(all)
				targets = slices.Compact(all)
			}
			out[k] = &v1alpha1.Endpoint{DNSName: k.DNSName, RecordType: k.RecordType, SetIdentifier: k.SetIdentifier,
				Targets: targets, RecordTTL: winner.RecordTTL, ProviderSpecific: winner.ProviderSpecific}
		}
	}
	return out
}

// checkRecords compares the zone's records with model (expectPublished) and the human's, and its
// claims with the owners' wishes. A nil model (owners that planned from one old view, whose order
// decides which value is published first) asks only for a state the rules allow (checkWishes).
func checkRecords(z strictZone, model map[v1alpha1.EndpointKey]*v1alpha1.Endpoint, wants map[string][]*v1alpha1.Endpoint) error {
	for k, h := range human {
		if got := z[k]; got == nil || line(got) != line(h) {
			return fmt.Errorf("the human's %s is now %v", line(h), got)
		}
	}
	var wantClaims []string
	for o, eps := range wants {
		for _, e := range eps {
			if k := e.Key(); k != humanA.Key() {
				wantClaims = append(wantClaims, fmt.Sprintf("%s %s %s %s", o, k.DNSName, k.RecordType, k.SetIdentifier))
			}
		}
	}
	if model == nil {
		if err := checkWishes(z, wants); err != nil {
			return err
		}
		model = map[v1alpha1.EndpointKey]*v1alpha1.Endpoint{}
		for k, e := range z {
			if _, ok := human[k]; !ok && e.RecordType != "TXT" {
				model[k] = e
			}
		}
	}
	want := []string{line(humanA), line(humanTXT)}
	for _, e := range model {
		want = append(want, line(e))
	}
	sort.Strings(want)
	sort.Strings(wantClaims)
	read := registry.Read(z.endpoints())
	var got, gotClaims []string
	for _, r := range read.Records() {
		if r.Endpoint != nil {
			got = append(got, line(r.Endpoint))
		}
		for _, c := range r.Claims {
			gotClaims = append(gotClaims, fmt.Sprintf("%s %s %s %s", c.Owner, c.Record.DNSName, c.Record.RecordType, c.Record.SetIdentifier))
		}
	}
	sort.Strings(got)
	sort.Strings(gotClaims)
	if !slices.Equal(got, want) {
		return fmt.Errorf("zone records\n  got  %v\n  want %v", got, want)
	}
	if !slices.Equal(gotClaims, wantClaims) {
		return fmt.Errorf("claims\n  got  %v\n  want %v", gotClaims, wantClaims)
	}
	return nil
}

// checkWishes checks that the zone publishes, at each name some owner wants records at that the
// human's do not block, the records of one kind (CNAME or the rest) that are wanted, each with the
// single values (target of a single-target CNAME, TTL, routing properties) of one owner's wish and
// the union of the wishes' targets otherwise, and nothing else.
func checkWishes(z strictZone, wants map[string][]*v1alpha1.Endpoint) error {
	byKey := map[v1alpha1.EndpointKey][]*v1alpha1.Endpoint{}
	for _, eps := range wants {
		for _, e := range eps {
			if !blocked(e.Key()) {
				byKey[e.Key()] = append(byKey[e.Key()], e)
			}
		}
	}
	kinds := map[string]map[bool]bool{}
	for k, e := range z {
		if _, ok := human[k]; ok || e.RecordType == "TXT" {
			continue
		}
		ws := byKey[k]
		if len(ws) == 0 {
			return fmt.Errorf("%s is published, nobody wants it", line(e))
		}
		if kinds[k.DNSName] == nil {
			kinds[k.DNSName] = map[bool]bool{}
		}
		kinds[k.DNSName][k.RecordType == "CNAME"] = true
		multi := k.RecordType != "CNAME" || slices.ContainsFunc(ws, func(w *v1alpha1.Endpoint) bool { return len(w.Targets) > 1 })
		var all []string
		for _, w := range ws {
			all = append(all, w.Targets...)
		}
		slices.Sort(all)
		all = slices.Compact(all)
		if !slices.ContainsFunc(ws, func(w *v1alpha1.Endpoint) bool {
			return (multi && slices.Equal(e.Targets, all) || !multi && w.Targets.SameTargets(e.Targets)) &&
				w.RecordTTL == e.RecordTTL && sameProviderSpecific(w.ProviderSpecific, e.ProviderSpecific)
		}) {
			return fmt.Errorf("%s is no owner's wish: %v", line(e), lines(ws))
		}
	}
	for k := range byKey {
		if ks := kinds[k.DNSName]; len(ks) != 1 {
			return fmt.Errorf("%s publishes %d kinds of record for wishes %v", k.DNSName, len(ks), lines(byKey[k]))
		} else if ks[k.RecordType == "CNAME"] && z[k] == nil {
			return fmt.Errorf("%s of the published kind is not published", line(byKey[k][0]))
		}
	}
	return nil
}

// checkIncumbents checks, between two settled zones, the properties the model above encodes, read
// off the zones themselves: at most one kind (CNAME or the rest) and, for a single-target CNAME,
// one target is published at a name; and where a published key's single values (target of a
// single-target CNAME, TTL, routing properties) or its name's kind changed, no owner that held
// them (claimed the key before and wanted exactly that) still wants them. A CNAME whose targets
// were merged is exempt where one target is chosen: nobody held it exactly (also where the owners'
// changes may have passed through that, mayGoSingle).
func checkIncumbents(before, after strictZone, prevWants, wants map[string][]*v1alpha1.Endpoint) error {
	kinds := map[string]map[bool]bool{}
	for k, e := range after {
		if _, ok := human[k]; ok || !slices.Contains(registry.OwnedTypes, k.RecordType) {
			continue
		}
		if kinds[k.DNSName] == nil {
			kinds[k.DNSName] = map[bool]bool{}
		}
		kinds[k.DNSName][e.RecordType == "CNAME"] = true
		if len(kinds[k.DNSName]) > 1 {
			return fmt.Errorf("%s publishes a CNAME beside other types", k.DNSName)
		}
	}
	holders := func(k v1alpha1.EndpointKey, same func(w *v1alpha1.Endpoint) bool) []string {
		var out []string
		for o := range wants {
			if p, w := wanted(prevWants, o, k), wanted(wants, o, k); p != nil && w != nil && same(p) && same(w) {
				out = append(out, o)
			}
		}
		return out
	}
	for k, b := range before {
		if _, ok := human[k]; ok || !slices.Contains(registry.OwnedTypes, k.RecordType) {
			continue
		}
		a := after[k]
		single := b.RecordType == "CNAME" && len(b.Targets) == 1
		sameValue := func(w *v1alpha1.Endpoint) bool {
			return (!single || w.Targets.SameTargets(b.Targets)) && w.RecordTTL == b.RecordTTL && sameProviderSpecific(w.ProviderSpecific, b.ProviderSpecific)
		}
		switch {
		case a == nil:
			// Gone: its kind lost only if no owner still holds it.
			if hs := holders(k, func(*v1alpha1.Endpoint) bool { return true }); len(hs) > 0 {
				return fmt.Errorf("%s went while %v still hold it", line(b), hs)
			}
		case b.RecordType == "CNAME" && !single && len(a.Targets) == 1:
			// The targets merged before and one is chosen now: nobody held a single target.
		case b.RecordType == "CNAME" && !single && mayGoSingle(k, prevWants, wants):
			// The targets merged before and, at some moment between the two zones, every wish at
			// the key may have been for a single target (the owners that wanted several had
			// changed to one, or left; those that join with several had not yet applied): the
			// key then published one owner's target, as in the case above, and the merged value
			// was nobody's exact wish, so the lowest owner's TTL and routing properties took it,
			// and owners that later merged targets into it again found that owner the incumbent.
			// A step of one owner (TestInterleavings) that allows such a moment ends in it, the
			// case above; owners that plan concurrently (TestConcurrentPlanners) may pass through
			// it within a round, in the order their batches apply.
		case single && len(a.Targets) == 1 && !a.Targets.SameTargets(b.Targets) || a.RecordTTL != b.RecordTTL ||
			!sameProviderSpecific(a.ProviderSpecific, b.ProviderSpecific):
			if hs := holders(k, sameValue); len(hs) > 0 {
				return fmt.Errorf("%s became %s while %v still want it", line(b), line(a), hs)
			}
		}
	}
	return nil
}

// mayGoSingle reports whether the wishes at a CNAME key could all be for a single target (or none)
// at one moment between the zone of prevWants and that of wants, because an owner that wanted
// several targets changed to one or left: each owner's wish, before or after, is absent or
// single-target, so an order of the owners' changes passes through that moment.
func mayGoSingle(k v1alpha1.EndpointKey, prevWants, wants map[string][]*v1alpha1.Endpoint) bool {
	single := func(w *v1alpha1.Endpoint) bool { return w == nil || len(w.Targets) == 1 }
	went := false
	for _, ws := range []map[string][]*v1alpha1.Endpoint{prevWants, wants} {
		for o := range ws {
			p, w := wanted(prevWants, o, k), wanted(wants, o, k)
			if !single(p) && !single(w) {
				return false
			}
			went = went || !single(p) && single(w)
		}
	}
	return went
}

// checkReport: an owner publishes its wish exactly where it reports no conflict, and any owner it
// reports as the winner is another that wants a record at the name (which one, lower or higher,
// the zone's records tell: checkZone).
func checkReport(o *owner, desired []*v1alpha1.Endpoint, res *Result, z strictZone, wants map[string][]*v1alpha1.Endpoint) error {
	conflicted := map[v1alpha1.EndpointKey]bool{}
	for _, c := range res.Conflicts {
		conflicted[v1alpha1.EndpointKey{DNSName: c.DNSName, RecordType: c.RecordType, SetIdentifier: c.SetIdentifier}] = true
		if c.WinnerOwner == "" {
			continue
		}
		if c.WinnerOwner == o.id || !slices.ContainsFunc(wants[c.WinnerOwner], func(e *v1alpha1.Endpoint) bool { return e.Key().DNSName == c.DNSName }) {
			return fmt.Errorf("%s reports %+v: the winner is not another owner that wants a record there", o.id, c)
		}
	}
	for _, d := range desired {
		if conflicted[d.Key()] {
			continue
		}
		r := z[d.Key()]
		if r == nil || r.RecordTTL != d.RecordTTL || !sameProviderSpecific(r.ProviderSpecific, d.ProviderSpecific) ||
			slices.ContainsFunc(d.Targets, func(t string) bool { return !slices.Contains(r.Targets, t) }) {
			return fmt.Errorf("%s reports no conflict for %s, the zone holds %v", o.id, line(d), r)
		}
		if !slices.ContainsFunc(res.Published, func(p *v1alpha1.Endpoint) bool { return p.Key() == d.Key() }) {
			return fmt.Errorf("%s does not list %s as published", o.id, line(d))
		}
	}
	return nil
}
