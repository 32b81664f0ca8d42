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
// what the rules give for the owners' current wishes (computed here independently, from the wishes
// alone), the ownership TXTs exactly the live owners' wishes, the human's records untouched, and
// each batch must pass the apply-time check, apply to a strict zone, and re-plan to nothing.
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
		res, err := tryStep(z, o, desired)
		if err == nil {
			wants[o.id] = desired
			err = checkReport(o, desired, res, z)
		}
		if err == nil && oneCluster {
			// Every owner knows the others' wishes: the zone is exact after every step.
			err = checkRecords(z, wants)
		}
		if err == nil {
			// A claim that does not state its owner's wish presumes it is what is published; an
			// owner learns that it no longer is (another owner joined, or won) when it plans. Once
			// every owner has planned again, claims and records are exact.
			err = checkZone(settle(z, owners, wants), wants)
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

// checkZone compares the zone with what the rules give for the owners' wishes, worked out here
// from the wishes alone (checkRecords), and checks every claim: it states its owner's wish, or it
// states none and the record is published as its owner wants it.
func checkZone(z strictZone, wants map[string][]*v1alpha1.Endpoint) error {
	if err := checkRecords(z, wants); err != nil {
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

// checkRecords compares the zone's records and claims with what the rules give for the owners'
// wishes.
func checkRecords(z strictZone, wants map[string][]*v1alpha1.Endpoint) error {
	human := map[v1alpha1.EndpointKey]*v1alpha1.Endpoint{humanA.Key(): humanA, humanTXT.Key(): humanTXT}
	for k, h := range human {
		if got := z[k]; got == nil || line(got) != line(h) {
			return fmt.Errorf("the human's %s is now %v", line(h), got)
		}
	}
	// blocked: a wish the human's records keep out (same type at the name, or a CNAME beside them).
	blocked := func(k v1alpha1.EndpointKey) bool {
		for hk := range human {
			if hk.DNSName == k.DNSName && (hk.RecordType == k.RecordType || k.RecordType == "CNAME") {
				return true
			}
		}
		return false
	}
	type wish struct {
		owner string
		e     *v1alpha1.Endpoint
	}
	byName := map[string]map[v1alpha1.EndpointKey][]wish{}
	var wantClaims []string
	for o, eps := range wants {
		for _, e := range eps {
			k := e.Key()
			if k != humanA.Key() {
				wantClaims = append(wantClaims, fmt.Sprintf("%s %s %s %s", o, k.DNSName, k.RecordType, k.SetIdentifier))
			}
			if blocked(k) {
				continue
			}
			if byName[k.DNSName] == nil {
				byName[k.DNSName] = map[v1alpha1.EndpointKey][]wish{}
			}
			byName[k.DNSName][k] = append(byName[k.DNSName][k], wish{o, e})
		}
	}
	var want []string
	for _, keys := range byName {
		lowest := ""
		for _, ws := range keys {
			for _, w := range ws {
				if lowest == "" || w.owner < lowest {
					lowest = w.owner
				}
			}
		}
		cname := true
		for k, ws := range keys {
			if k.RecordType != "CNAME" && slices.ContainsFunc(ws, func(w wish) bool { return w.owner == lowest }) {
				cname = false
			}
		}
		for k, ws := range keys {
			if (k.RecordType == "CNAME") != cname {
				continue
			}
			sort.Slice(ws, func(i, j int) bool { return ws[i].owner < ws[j].owner })
			winner := ws[0].e
			targets := winner.Targets
			if k.RecordType != "CNAME" || slices.ContainsFunc(ws, func(w wish) bool { return len(w.e.Targets) > 1 }) {
				var all []string
				for _, w := range ws {
					all = append(all, w.e.Targets...)
				}
				slices.Sort(all)
				targets = slices.Compact(all)
			}
			want = append(want, line(&v1alpha1.Endpoint{DNSName: k.DNSName, RecordType: k.RecordType, SetIdentifier: k.SetIdentifier,
				Targets: targets, RecordTTL: winner.RecordTTL, ProviderSpecific: winner.ProviderSpecific}))
		}
	}
	want = append(want, line(humanA), line(humanTXT))
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

// checkReport: an owner publishes its wish exactly where it reports no conflict, and any owner it
// reports as the winner is a lower one.
func checkReport(o *owner, desired []*v1alpha1.Endpoint, res *Result, z strictZone) error {
	conflicted := map[v1alpha1.EndpointKey]bool{}
	for _, c := range res.Conflicts {
		conflicted[v1alpha1.EndpointKey{DNSName: c.DNSName, RecordType: c.RecordType, SetIdentifier: c.SetIdentifier}] = true
		if c.WinnerOwner != "" && c.WinnerOwner >= o.id {
			return fmt.Errorf("%s reports %+v: the winner is not a lower owner", o.id, c)
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
