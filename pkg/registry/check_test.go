package registry

import (
	"errors"
	"strings"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/batch"
)

func withTTL(e *v1alpha1.Endpoint, ttl v1alpha1.TTL) *v1alpha1.Endpoint {
	e.RecordTTL = ttl
	return e
}

func TestCheck(t *testing.T) {
	// o1 plans. Its neighbours: o2 (live), o3 (lease expired), and a human.
	human := ep("h.example.com", "A", "9.9.9.9")
	humanTXT := ep("t.example.com", "TXT", `"v=spf1 -all"`)
	shared := ep("s.example.com", "A", "1.1.1.1", "2.2.2.2", "3.3.3.3")
	o1Shared := mustTXT(t, "o1", ep("s.example.com", "A", "1.1.1.1"))
	o2Shared := mustTXT(t, "o2", ep("s.example.com", "A", "2.2.2.2"))
	o3Shared := mustTXT(t, "o3", ep("s.example.com", "A", "3.3.3.3"))
	o2Only := ep("b.example.com", "A", "2.2.2.2")
	o2OnlyTXT := mustTXT(t, "o2", o2Only)
	o1CNAME := ep("c.example.com", "CNAME", "lb1.example.net")
	o1CNAMETXT := mustTXT(t, "o1", o1CNAME)
	// At x, o2's A is published while o1 (the lower owner) claims a CNAME. The gate does not know
	// every owner the plan counts gone (a lease it is not told about): the CNAME may replace the A
	// in o1's batch (TestCheckIncumbentKind: not in o2's).
	xA := ep("x.example.com", "A", "2.2.2.2")
	o2xTXT := mustTXT(t, "o2", xA)
	o1xTXT := mustTXT(t, "o1", ep("x.example.com", "CNAME", "lb1.example.net"))
	// At e only the expired o3 is left; o1 holds another key at that name.
	e := ep("e.example.com", "A", "3.3.3.3")
	o3eTXT := mustTXT(t, "o3", e)
	o1eTXT := mustTXT(t, "o1", ep("e.example.com", "AAAA", "2001:db8::1"))
	eAAAA := ep("e.example.com", "AAAA", "2001:db8::1")
	// At y, the lowest owner o0 publishes a CNAME; o1 wanting an A there does not make it lose.
	yCNAME := ep("y.example.com", "CNAME", "lb0.example.net")
	o0yTXT := mustTXT(t, "o0", yCNAME)
	zone := Read([]*v1alpha1.Endpoint{human, humanTXT, shared, o1Shared, o2Shared, o3Shared, o2Only, o2OnlyTXT,
		o1CNAME, o1CNAMETXT, xA, o2xTXT, o1xTXT, e, o3eTXT, o1eTXT, eAAAA, yCNAME, o0yTXT})

	newA := ep("n.example.com", "A", "1.1.1.1")
	newATXT := mustTXT(t, "o1", newA)
	updated := func(old *v1alpha1.Endpoint, targets ...string) *v1alpha1.Endpoint {
		n := old.DeepCopy()
		n.Targets = targets
		return n
	}
	xCNAME := ep("x.example.com", "CNAME", "lb1.example.net")

	for _, tc := range []struct {
		name    string
		expired []string
		changes batch.Changes
		// refused is a part of the expected refusal, "" when the batch is allowed.
		refused string
	}{
		{name: "nothing", changes: batch.Changes{}},
		{name: "create a record with our claim", changes: batch.Changes{Create: []*v1alpha1.Endpoint{newA, newATXT}}},
		{name: "leave a shared record", changes: batch.Changes{
			UpdateOld: []*v1alpha1.Endpoint{shared}, UpdateNew: []*v1alpha1.Endpoint{updated(shared, "2.2.2.2", "3.3.3.3")},
			Delete: []*v1alpha1.Endpoint{o1Shared}, Require: []*v1alpha1.Endpoint{o2Shared}}},
		{name: "update our claim and the record", changes: batch.Changes{
			UpdateOld: []*v1alpha1.Endpoint{shared, o1Shared},
			UpdateNew: []*v1alpha1.Endpoint{updated(shared, "2.2.2.2", "3.3.3.3", "4.4.4.4"), mustTXT(t, "o1", ep("s.example.com", "A", "4.4.4.4"))}}},
		{name: "last owner leaves", changes: batch.Changes{Delete: []*v1alpha1.Endpoint{o1CNAME, o1CNAMETXT}}},
		{name: "type change by its only owner", changes: batch.Changes{
			Delete: []*v1alpha1.Endpoint{o1CNAME, o1CNAMETXT},
			Create: []*v1alpha1.Endpoint{ep("c.example.com", "A", "1.1.1.1"), mustTXT(t, "o1", ep("c.example.com", "A", "1.1.1.1"))}}},
		{name: "the kind that lost goes, its claims stay", changes: batch.Changes{
			Delete: []*v1alpha1.Endpoint{xA}, Create: []*v1alpha1.Endpoint{xCNAME}}},
		{name: "withdraw an expired owner where live owners remain", expired: []string{"o3"}, changes: batch.Changes{
			UpdateOld: []*v1alpha1.Endpoint{shared}, UpdateNew: []*v1alpha1.Endpoint{updated(shared, "1.1.1.1", "2.2.2.2")},
			Delete: []*v1alpha1.Endpoint{o3Shared}, Require: []*v1alpha1.Endpoint{o1Shared}}},
		{name: "an update of our claim holds it as a requirement does", changes: batch.Changes{
			UpdateOld: []*v1alpha1.Endpoint{shared, o1Shared},
			UpdateNew: []*v1alpha1.Endpoint{updated(shared, "1.1.1.1", "2.2.2.2", "5.5.5.5"), mustTXT(t, "o1", ep("s.example.com", "A", "1.1.1.1", "5.5.5.5"))},
			Delete:    []*v1alpha1.Endpoint{o3Shared}}, expired: []string{"o3"}},

		{name: "leave a shared record without requiring a remaining claim", changes: batch.Changes{
			UpdateOld: []*v1alpha1.Endpoint{shared}, UpdateNew: []*v1alpha1.Endpoint{updated(shared, "2.2.2.2", "3.3.3.3")},
			Delete: []*v1alpha1.Endpoint{o1Shared}}, refused: "without requiring"},
		{name: "require what the zone does not hold", changes: batch.Changes{
			Delete: []*v1alpha1.Endpoint{o1Shared}, Require: []*v1alpha1.Endpoint{mustTXT(t, "o2", ep("s.example.com", "A", "7.7.7.7"))}}, refused: "requires"},
		{name: "require a set the batch changes", changes: batch.Changes{
			Delete: []*v1alpha1.Endpoint{o1Shared}, Require: []*v1alpha1.Endpoint{o1Shared}}, refused: "required and changed"},
		{name: "update a record of another key at a name where we claim", changes: batch.Changes{
			UpdateOld: []*v1alpha1.Endpoint{e}, UpdateNew: []*v1alpha1.Endpoint{updated(e, "1.1.1.1")}}, refused: "does not claim"},

		{name: "delete a human's record", changes: batch.Changes{Delete: []*v1alpha1.Endpoint{human}}, refused: "nobody owns"},
		{name: "update a human's record", changes: batch.Changes{
			UpdateOld: []*v1alpha1.Endpoint{human}, UpdateNew: []*v1alpha1.Endpoint{updated(human, "1.1.1.1")}}, refused: "nobody owns"},
		{name: "create over a human's record", changes: batch.Changes{
			Create: []*v1alpha1.Endpoint{ep("h.example.com", "A", "1.1.1.1"), mustTXT(t, "o1", ep("h.example.com", "A", "1.1.1.1"))}}, refused: "already exists"},
		{name: "claim a human's record", changes: batch.Changes{
			Create: []*v1alpha1.Endpoint{mustTXT(t, "o1", ep("h.example.com", "A", "9.9.9.9"))}}, refused: "nobody owns"},
		{name: "delete a human's TXT", changes: batch.Changes{Delete: []*v1alpha1.Endpoint{humanTXT}}, refused: "not an ownership record"},
		{name: "shadow a human's TXT with a CNAME", changes: batch.Changes{
			Create: []*v1alpha1.Endpoint{ep("t.example.com", "CNAME", "lb.example.net"), mustTXT(t, "o1", ep("t.example.com", "CNAME", "lb.example.net"))}}, refused: "cannot share its name"},
		{name: "a CNAME beside an owned A that stays", changes: batch.Changes{
			Create: []*v1alpha1.Endpoint{ep("s.example.com", "CNAME", "lb.example.net"), mustTXT(t, "o1", ep("s.example.com", "CNAME", "lb.example.net"))}}, refused: "cannot share its name"},
		{name: "delete a neighbour's claim", changes: batch.Changes{Delete: []*v1alpha1.Endpoint{o2OnlyTXT}}, refused: "of owner o2"},
		{name: "update a neighbour's claim", changes: batch.Changes{
			UpdateOld: []*v1alpha1.Endpoint{o2Shared}, UpdateNew: []*v1alpha1.Endpoint{mustTXT(t, "o2", ep("s.example.com", "A", "5.5.5.5"))}}, refused: "not an ownership record of o1"},
		{name: "write a claim for a neighbour", changes: batch.Changes{
			Create: []*v1alpha1.Endpoint{mustTXT(t, "o2", ep("n.example.com", "A", "1.1.1.1"))}}, refused: "not an ownership record of o1"},
		{name: "turn our claim into a neighbour's", changes: batch.Changes{
			UpdateOld: []*v1alpha1.Endpoint{o1Shared}, UpdateNew: []*v1alpha1.Endpoint{withTTL(ep(o1Shared.DNSName, "TXT", `"heritage=external-dns,external-dns/owner=o2,external-dns/version=1"`), 0)}},
			refused: "not an ownership record of o1"},
		{name: "create a TXT that is not a claim", changes: batch.Changes{Create: []*v1alpha1.Endpoint{ep("z.example.com", "TXT", "hello")}}, refused: "not an ownership record"},
		{name: "delete a neighbour's record where we claim nothing", changes: batch.Changes{Delete: []*v1alpha1.Endpoint{o2Only}}, refused: "still claim"},
		{name: "update a neighbour's record where we claim nothing", changes: batch.Changes{
			UpdateOld: []*v1alpha1.Endpoint{o2Only}, UpdateNew: []*v1alpha1.Endpoint{updated(o2Only, "1.1.1.1")}}, refused: "does not claim"},
		{name: "delete a record others still claim", changes: batch.Changes{Delete: []*v1alpha1.Endpoint{shared, o1Shared}}, refused: "still claim"},
		{name: "the kind that lost goes, but nothing replaces it", changes: batch.Changes{Delete: []*v1alpha1.Endpoint{xA}}, refused: "still claim"},
		{name: "a higher owner's kind replaces the lowest owner's", changes: batch.Changes{
			Delete: []*v1alpha1.Endpoint{yCNAME}, Create: []*v1alpha1.Endpoint{ep("y.example.com", "A", "1.1.1.1"), mustTXT(t, "o1", ep("y.example.com", "A", "1.1.1.1"))}},
			refused: "still claim"},
		{name: "orphan a record by dropping its last claim", changes: batch.Changes{Delete: []*v1alpha1.Endpoint{o1CNAMETXT}}, refused: "without an owner"},
		{name: "create a record nobody claims", changes: batch.Changes{Create: []*v1alpha1.Endpoint{ep("s.example.com", "AAAA", "2001:db8::9")}}, refused: "nobody would own"},
		{name: "create a record at a name we do not hold", changes: batch.Changes{Create: []*v1alpha1.Endpoint{newA}}, refused: "claims nothing"},
		{name: "create a record beside a neighbour's where we claim nothing", changes: batch.Changes{
			Create: []*v1alpha1.Endpoint{ep("b.example.com", "AAAA", "2001:db8::2")}}, refused: "claims nothing"},
		{name: "delete a live neighbour's claim calling it expired", expired: []string{"o1"}, changes: batch.Changes{Delete: []*v1alpha1.Endpoint{o2OnlyTXT}}, refused: "of owner o2"},
		{name: "withdraw the last expired owner of a record", expired: []string{"o3"}, changes: batch.Changes{Delete: []*v1alpha1.Endpoint{o3eTXT}}, refused: "without an owner"},
		{name: "withdraw the last expired owner and the record", expired: []string{"o3"}, changes: batch.Changes{Delete: []*v1alpha1.Endpoint{o3eTXT, e}}, refused: "does not claim"},
		{name: "withdraw an expired owner where only expired owners remain", expired: []string{"o2", "o3"}, changes: batch.Changes{
			Delete:    []*v1alpha1.Endpoint{o3Shared, o1Shared},
			UpdateOld: []*v1alpha1.Endpoint{shared}, UpdateNew: []*v1alpha1.Endpoint{updated(shared, "2.2.2.2")}}, refused: "no live owner"},
		{name: "update a record that is not there", changes: batch.Changes{
			UpdateOld: []*v1alpha1.Endpoint{newA}, UpdateNew: []*v1alpha1.Endpoint{updated(newA, "2.2.2.2")}}, refused: "not in the zone"},
		{name: "uneven updates", changes: batch.Changes{UpdateOld: []*v1alpha1.Endpoint{shared}}, refused: "old and"},
		{name: "an update that changes the key", changes: batch.Changes{
			UpdateOld: []*v1alpha1.Endpoint{shared}, UpdateNew: []*v1alpha1.Endpoint{ep("s.example.com", "AAAA", "2001:db8::1")}}, refused: "another key"},
		{name: "one key twice", changes: batch.Changes{Create: []*v1alpha1.Endpoint{newA, newATXT}, Delete: []*v1alpha1.Endpoint{newA}}, refused: "twice"},
		{name: "a nil endpoint", changes: batch.Changes{Delete: []*v1alpha1.Endpoint{nil}}, refused: "nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := zone.Check([]string{"o1"}, tc.expired, &tc.changes)
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused != "" && err == nil:
				t.Fatalf("allowed, want a refusal containing %q", tc.refused)
			case tc.refused != "" && (!errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.refused)):
				t.Fatalf("refused with %v, want %q", err, tc.refused)
			}
		})
	}
	if err := zone.Check([]string{"o1"}, nil, nil); err != nil {
		t.Errorf("a nil batch: %v", err)
	}
}

// The kind a live owner holds published stays: where the batch's own owner claims the published A
// (it is live and held it before), its A goes only to an incumbent of the other kind no higher than
// it, never to a newcomer's CNAME however low its owner ID.
func TestCheckIncumbentKind(t *testing.T) {
	a := ep("x.example.com", "A", "2.2.2.2")
	cname := ep("x.example.com", "CNAME", "evil.example.net")
	bTXT := mustTXT(t, "b", a)
	lowTXT := mustTXT(t, "000000", cname)
	replace := &batch.Changes{Delete: []*v1alpha1.Endpoint{a}, Create: []*v1alpha1.Endpoint{cname}}
	err := Read([]*v1alpha1.Endpoint{a, bTXT, lowTXT}).Check([]string{"b"}, nil, replace)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "still claim") {
		t.Fatalf("b's batch replaced its own published A with a newcomer's CNAME: %v", err)
	}
	// Both kinds published and held (a zone written around the owners): the lowest claimant's wins.
	both := Read([]*v1alpha1.Endpoint{a, bTXT, cname, lowTXT})
	if err := both.Check([]string{"b"}, nil, &batch.Changes{Delete: []*v1alpha1.Endpoint{a}}); err != nil {
		t.Fatalf("b's A beside a lower owner's held CNAME: %v", err)
	}
	if err := both.Check([]string{"000000"}, nil, &batch.Changes{Delete: []*v1alpha1.Endpoint{cname}}); err == nil {
		t.Fatal("000000 deleted its CNAME, which is held and lowest, for b's A")
	}
	// Both kinds held, and the lowest owner ID at the name is a gone owner's record of b's kind
	// (a zone written around us, as FuzzPlan found): a gone owner never decides the kind, so the
	// first live claimant's (000000's CNAME) stays, and b's A and the gone AAAA go.
	aaaa := ep("x.example.com", "AAAA", "2001:db8::1")
	goneTXT := mustTXT(t, "0", aaaa)
	withGone := Read([]*v1alpha1.Endpoint{a, bTXT, cname, lowTXT, aaaa, goneTXT})
	if err := withGone.Check([]string{"000000"}, []string{"0"}, &batch.Changes{Delete: []*v1alpha1.Endpoint{cname}}); err == nil {
		t.Fatal("000000 deleted its held CNAME, the first live claimant's, for a gone owner's AAAA")
	}
	if err := withGone.Check([]string{"b"}, []string{"0"}, &batch.Changes{Delete: []*v1alpha1.Endpoint{a, aaaa}}); err != nil {
		t.Fatalf("b's A and the gone owner's AAAA beside the first live claimant's held CNAME: %v", err)
	}
}

// An owner-named record (its name carries its owner's hash) is created, changed and deleted by its
// owner only, with no ownership TXT; another owner, or a look-alike name, is refused.
func TestCheckNamedRecords(t *testing.T) {
	o1 := ep(NamedRecordName("health", "o1", "app.example.com"), "TXT", `"o1 healthy"`)
	o2 := ep(NamedRecordName("health", "o2", "app.example.com"), "TXT", `"o2 healthy"`)
	lookalike := ep("dnspolicy-health-short.app.example.com", "TXT", `"x"`)
	zone := Read([]*v1alpha1.Endpoint{o2})
	changed := o2.DeepCopy()
	changed.Targets = []string{`"o2 unhealthy"`}
	for _, tc := range []struct {
		name    string
		owner   string
		changes batch.Changes
		refused string
	}{
		{"its owner creates it", "o1", batch.Changes{Create: []*v1alpha1.Endpoint{o1}}, ""},
		{"its owner changes it", "o2", batch.Changes{UpdateOld: []*v1alpha1.Endpoint{o2}, UpdateNew: []*v1alpha1.Endpoint{changed}}, ""},
		{"its owner deletes it", "o2", batch.Changes{Delete: []*v1alpha1.Endpoint{o2}}, ""},
		{"another owner creates it", "o2", batch.Changes{Create: []*v1alpha1.Endpoint{o1}}, "the record of another owner"},
		{"another owner changes it", "o1", batch.Changes{UpdateOld: []*v1alpha1.Endpoint{o2}, UpdateNew: []*v1alpha1.Endpoint{changed}}, "the record of another owner"},
		{"another owner deletes it", "o1", batch.Changes{Delete: []*v1alpha1.Endpoint{o2}}, "the record of another owner"},
		{"a name that only looks like one", "o1", batch.Changes{Create: []*v1alpha1.Endpoint{lookalike}}, "not an ownership record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := zone.Check([]string{tc.owner}, nil, &tc.changes)
			switch {
			case tc.refused == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
				t.Errorf("got %v, want a refusal mentioning %q", err, tc.refused)
			}
		})
	}
}

// A weighted member only an expired owner holds goes with its claim where a live owner's member of
// the same group stays and the batch holds it (its owner is the batch's, or its claim is required);
// never where that would leave the group to gone owners, nor for a live owner's member.
func TestCheckGoneMember(t *testing.T) {
	member := func(owner, leaf string) (*v1alpha1.Endpoint, *v1alpha1.Endpoint) {
		e := ep("ie.klb.example.com", "CNAME", leaf).WithSetIdentifier(leaf).WithProviderSpecific("weight", "120")
		return e, mustTXT(t, owner, e)
	}
	dead, deadTXT := member("o3", "c3.klb.example.com")
	live, liveTXT := member("o2", "c2.klb.example.com")
	ours, oursTXT := member("o1", "c1.klb.example.com")
	zone := Read([]*v1alpha1.Endpoint{dead, deadTXT, live, liveTXT, ours, oursTXT})
	gone := batch.Changes{Delete: []*v1alpha1.Endpoint{dead, deadTXT}}
	if err := zone.Check([]string{"o1"}, []string{"o3"}, &gone); err != nil {
		t.Errorf("o1, holding a member, withdraws the expired o3's: %v", err)
	}
	if err := zone.Check([]string{"o1"}, nil, &gone); err == nil {
		t.Error("o3's member was withdrawn with o3 not expired")
	}
	leaving := batch.Changes{Delete: []*v1alpha1.Endpoint{dead, deadTXT, ours, oursTXT}}
	if err := zone.Check([]string{"o1"}, []string{"o3"}, &leaving); err == nil {
		t.Error("o1 withdrew o3's member while leaving, on the strength of o2's member it does not hold")
	}
	leaving.Require = []*v1alpha1.Endpoint{liveTXT}
	if err := zone.Check([]string{"o1"}, []string{"o3"}, &leaving); err != nil {
		t.Errorf("o1 leaving withdraws o3's member, requiring o2's claim: %v", err)
	}
	alone := Read([]*v1alpha1.Endpoint{dead, deadTXT, ours, oursTXT})
	last := batch.Changes{Delete: []*v1alpha1.Endpoint{dead, deadTXT, ours, oursTXT}}
	if err := alone.Check([]string{"o1"}, []string{"o3"}, &last); err == nil {
		t.Error("o1 leaving took o3's member with its own: the group was left empty")
	}
	def := ep("klb.example.com", "CNAME", "jp.klb.example.com").WithSetIdentifier("default").WithProviderSpecific("geo-code", "*")
	jp := ep("klb.example.com", "CNAME", "jp.klb.example.com").WithSetIdentifier("JP").WithProviderSpecific("geo-code", "JP")
	us := ep("klb.example.com", "CNAME", "us.klb.example.com").WithSetIdentifier("US").WithProviderSpecific("geo-code", "US")
	geos := Read([]*v1alpha1.Endpoint{def, mustTXT(t, "o3", def), jp, mustTXT(t, "o3", jp), us, mustTXT(t, "o1", us)})
	if err := geos.Check([]string{"o1"}, []string{"o3"}, &batch.Changes{Delete: []*v1alpha1.Endpoint{jp, mustTXT(t, "o3", jp)}}); err != nil {
		t.Errorf("o1 withdraws the expired o3's JP geo: %v", err)
	}
	if err := geos.Check([]string{"o1"}, []string{"o3"}, &batch.Changes{Delete: []*v1alpha1.Endpoint{def, mustTXT(t, "o3", def)}}); err == nil {
		t.Error("o1 withdrew the default geo, which only the expired o3 held")
	}
	// o1 claims the default geo only the expired o3 held as it withdraws o3's JP geo and o3's claim on
	// the default (FuzzPlan found the plan doing so): the default stays, held by o1's new claim.
	joining := Read([]*v1alpha1.Endpoint{def, mustTXT(t, "o3", def), jp, mustTXT(t, "o3", jp)})
	if err := joining.Check([]string{"o1"}, []string{"o3"}, &batch.Changes{Create: []*v1alpha1.Endpoint{mustTXT(t, "o1", def)},
		Delete: []*v1alpha1.Endpoint{jp, mustTXT(t, "o3", jp), mustTXT(t, "o3", def)}}); err != nil {
		t.Errorf("o1, claiming the default geo, withdraws the expired o3's JP geo: %v", err)
	}
	notMember := Read([]*v1alpha1.Endpoint{ep("x.example.com", "A", "3.3.3.3"), mustTXT(t, "o3", ep("x.example.com", "A", "3.3.3.3")),
		ep("x.example.com", "AAAA", "2001:db8::1"), mustTXT(t, "o1", ep("x.example.com", "AAAA", "2001:db8::1"))})
	plain := batch.Changes{Delete: []*v1alpha1.Endpoint{ep("x.example.com", "A", "3.3.3.3"), mustTXT(t, "o3", ep("x.example.com", "A", "3.3.3.3"))}}
	if err := notMember.Check([]string{"o1"}, []string{"o3"}, &plain); err == nil {
		t.Error("a record only an expired owner holds, in no set group, was withdrawn")
	}
}
