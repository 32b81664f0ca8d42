package plan

import (
	"errors"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// TestConcurrentPlanners runs random rounds in which two or three owners plan from one old view of the
// zone, as clusters do whose reads raced each other, and their batches then apply in a random order.
// A batch the zone no longer fits (a precondition failed) is refused whole, and its owner plans again
// from a fresh read, as the publish queue does. After every batch that applies: the human's records
// are untouched and no record is left without an ownership TXT. After each round every owner
// re-checks (plans again from a fresh read, as its next pass does) and the zone must then be a state
// the rules give for the owners' wishes (which of two newcomers' values was published first depends
// on the order their batches applied in), with every value an owner held before the round and still
// wants unchanged (but a merged CNAME's, where the round may have passed through a moment when
// every wish was for one target: checkIncumbents). Each run ends with every owner leaving at once,
// from one view, and the zone must hold only the human's records.
func TestConcurrentPlanners(t *testing.T) {
	runSeeded(t, 10000, concurrentRun)
}

func concurrentRun(rng *rand.Rand) error {
	z := newZone(humanA, humanTXT)
	owners := []*owner{{id: "o1"}, {id: "o2"}, {id: "o3"}}
	wants := map[string][]*v1alpha1.Endpoint{}
	var history []string
	fail := func(err error) error {
		return fmt.Errorf("%w\nhistory:\n  %s\nzone:\n  %s", err, strings.Join(history, "\n  "), strings.Join(lines(z.endpoints()), "\n  "))
	}
	// round: the chosen owners plan from one view, then apply in a random order.
	round := func(party []*owner, wishes [][]*v1alpha1.Endpoint) error {
		view := z.endpoints()
		plans := make([]*Result, len(party))
		for i, o := range party {
			res, err := Plan(Input{OwnerID: o.id, ZoneName: "example.com", Current: view, Previous: o.published, Desired: wishes[i]})
			if err != nil {
				return fmt.Errorf("%s: Plan: %w", o.id, err)
			}
			if err := registry.Read(view).Check([]string{o.id}, nil, res.Changes); err != nil {
				return fmt.Errorf("%s: Check refused the plan on its own view: %w\n%s", o.id, err, describeChanges(res.Changes))
			}
			plans[i] = res
		}
		for _, i := range rng.Perm(len(party)) {
			o, res := party[i], plans[i]
			history = append(history, fmt.Sprintf("%s applies %v, planned on the old view", o.id, lines(wishes[i])))
			for attempt := 0; ; attempt++ {
				err := z.apply(res.Changes)
				if err == nil {
					o.published = res.Published
					break
				}
				if !errors.Is(err, errStale) || attempt > 0 {
					return fmt.Errorf("%s: apply: %w\n%s", o.id, err, describeChanges(res.Changes))
				}
				// The batch did not apply: plan again on a fresh read, alone now.
				history = append(history, fmt.Sprintf("%s re-plans after: %v", o.id, err))
				fresh := z.endpoints()
				if res, err = Plan(Input{OwnerID: o.id, ZoneName: "example.com", Current: fresh, Previous: o.published, Desired: wishes[i]}); err != nil {
					return fmt.Errorf("%s: Plan again: %w", o.id, err)
				}
				if err := registry.Read(fresh).Check([]string{o.id}, nil, res.Changes); err != nil {
					return fmt.Errorf("%s: Check refused the fresh plan: %w\n%s", o.id, err, describeChanges(res.Changes))
				}
			}
			wants[o.id] = wishes[i]
			if err := everyRecordClaimed(z); err != nil {
				return err
			}
		}
		return nil
	}
	settle := func(before strictZone, prevWants map[string][]*v1alpha1.Endpoint) error {
		for _, o := range owners {
			if _, err := tryStep(z, o, wants[o.id]); err != nil {
				return err
			}
		}
		if err := checkZone(z, nil, wants); err != nil {
			return err
		}
		return checkIncumbents(before, z, prevWants, wants)
	}
	for n := 1 + rng.Intn(5); n > 0; n-- {
		party := slices.Clone(owners)
		rng.Shuffle(len(party), func(i, j int) { party[i], party[j] = party[j], party[i] })
		party = party[:2+rng.Intn(2)]
		wishes := make([][]*v1alpha1.Endpoint, len(party))
		for i := range party {
			// Leaving is common: it is where a concurrent pair can strand a record.
			if rng.Intn(3) > 0 {
				wishes[i] = randomWishes(rng)
			}
		}
		before, prevWants := maps.Clone(z), maps.Clone(wants)
		if err := round(party, wishes); err != nil {
			return fail(err)
		}
		if err := settle(before, prevWants); err != nil {
			return fail(err)
		}
	}
	if err := round(owners, make([][]*v1alpha1.Endpoint, len(owners))); err != nil {
		return fail(err)
	}
	if got := lines(z.endpoints()); !slices.Equal(got, []string{line(humanA), line(humanTXT)}) {
		return fail(fmt.Errorf("after every owner left at once the zone holds %v", got))
	}
	return nil
}

// everyRecordClaimed fails for a record other than the human's that no ownership TXT claims: nobody
// could ever change or remove it.
func everyRecordClaimed(z strictZone) error {
	for _, r := range registry.Read(z.endpoints()).Records() {
		if r.Endpoint == nil || r.Owned() || r.Key == humanA.Key() || r.Key == humanTXT.Key() {
			continue
		}
		return fmt.Errorf("%s is left without an ownership TXT", line(r.Endpoint))
	}
	for _, k := range []v1alpha1.EndpointKey{humanA.Key(), humanTXT.Key()} {
		if got := z[k]; got == nil || !sameRecord(got, map[v1alpha1.EndpointKey]*v1alpha1.Endpoint{humanA.Key(): humanA, humanTXT.Key(): humanTXT}[k]) {
			return fmt.Errorf("the human's record %v is now %v", k, got)
		}
	}
	return nil
}
