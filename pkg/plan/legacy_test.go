package plan

import (
	"reflect"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// legacyTXT is the TXT a Kuadrant release before "version 1" wrote for a record: one per record,
// its owners joined by "&&", no version (pkg/registry ParseLegacyTXT has the sources).
func legacyTXT(r *v1alpha1.Endpoint, owners string) *v1alpha1.Endpoint {
	txt := rec(registry.Prefix+map[string]string{"A": "a", "AAAA": "aaaa", "CNAME": "cname", "NS": "ns"}[r.RecordType]+"-"+r.DNSName,
		"TXT", r.RecordTTL, `"heritage=external-dns,external-dns/owner=`+owners+`"`)
	txt.SetIdentifier = r.SetIdentifier
	return txt
}

// A record held only by a legacy claim is an owned record, not a human's: another owner merges into
// it and, leaving, takes only its own targets; the legacy TXT is never written or withdrawn.
func TestLegacyOwners(t *testing.T) {
	shared := rec("s.example.com", "A", 60, "1.1.1.1", "9.9.9.9")
	cname := rec("www.example.com", "CNAME", 300, "lb-k.example.net")
	sharedTXT, cnameTXT := legacyTXT(shared, "k&&m"), legacyTXT(cname, "k")
	z := newZone(shared, sharedTXT, cname, cnameTXT)
	o := &owner{id: "z"}
	res := step(t, z, o, eps(rec("s.example.com", "A", 60, "2.2.2.2"), rec("www.example.com", "CNAME", 60, "lb-z.example.net")))
	// A human's records would block both wishes (conflicts with no winner, no claims); here z joins.
	expectLines(t, "records", z.records(), []string{"s.example.com A 60 1.1.1.1,2.2.2.2,9.9.9.9", "www.example.com CNAME 300 lb-k.example.net"})
	expectConflicts(t, res,
		Conflict{DNSName: "www.example.com", RecordType: "CNAME", Field: FieldTTL, Ours: "60", Published: "300", WinnerOwner: "k"},
		Conflict{DNSName: "www.example.com", RecordType: "CNAME", Field: FieldTargets, Ours: "lb-z.example.net", Published: "lb-k.example.net", WinnerOwner: "k"},
	)
	expectLines(t, "claims", z.claims(), []string{"k s.example.com A ", "k www.example.com CNAME ", "m s.example.com A ", "z s.example.com A ", "z www.example.com CNAME "})
	if !reflect.DeepEqual(res.Owners, []string{"k", "m", "z"}) {
		t.Fatalf("owners %v", res.Owners)
	}
	o.published = res.Published

	// z leaves: its target goes, the legacy owners' stay, and their TXTs are untouched.
	res = step(t, z, o, nil)
	expectLines(t, "records", z.records(), []string{"s.example.com A 60 1.1.1.1,9.9.9.9", "www.example.com CNAME 300 lb-k.example.net"})
	expectLines(t, "claims", z.claims(), []string{"k s.example.com A ", "k www.example.com CNAME ", "m s.example.com A "})
	for _, e := range append(res.Changes.Delete, res.Changes.UpdateOld...) {
		if e.Key() == sharedTXT.Key() || e.Key() == cnameTXT.Key() {
			t.Fatalf("the plan changes a legacy TXT:\n%s", describeChanges(res.Changes))
		}
	}
}

// Legacy owners carry no lease and their TXT is shared: an owner listed as gone keeps its legacy
// claim (only prune-legacy, where it is redundant, deletes it), and the plan still passes the gate.
func TestLegacyOwnerNeverWithdrawn(t *testing.T) {
	shared := rec("s.example.com", "A", 60, "1.1.1.1")
	z := newZone(shared, legacyTXT(shared, "k"))
	o := &owner{id: "z"}
	res := step(t, z, o, eps(rec("s.example.com", "A", 60, "2.2.2.2")), "k")
	if len(res.Withdrawn) != 0 {
		t.Fatalf("withdrew %v", res.Withdrawn)
	}
	expectLines(t, "records", z.records(), []string{"s.example.com A 60 1.1.1.1,2.2.2.2"})
	expectLines(t, "claims", z.claims(), []string{"k s.example.com A ", "z s.example.com A "})
}

// A cluster that ran a Kuadrant release before version 1 under the same owner ID: its legacy claim
// holds the record like anyone's until it writes its own version-1 claim, which hides the legacy
// one; the legacy TXT stays for prune-legacy.
func TestLegacyClaimOfOurOwn(t *testing.T) {
	shared := rec("s.example.com", "A", 60, "1.1.1.1", "9.9.9.9")
	other := rec("s.example.com", "AAAA", 60, "2001:db8::1")
	z := newZone(shared, legacyTXT(shared, "z"), other, mustTXT(t, "z", other))
	o := &owner{id: "z", published: eps(other)}
	// z publishes only its AAAA there: the A, held by z's legacy claim alone, stays.
	step(t, z, o, eps(other))
	expectLines(t, "records", z.records(), []string{"s.example.com A 60 1.1.1.1,9.9.9.9", "s.example.com AAAA 60 2001:db8::1"})
	// z wants the A: its version-1 claim is written, and, the record's only owner, its wish is the
	// record; the legacy TXT is kept as it is.
	res := step(t, z, o, eps(other, rec("s.example.com", "A", 60, "1.1.1.1")))
	expectLines(t, "records", z.records(), []string{"s.example.com A 60 1.1.1.1", "s.example.com AAAA 60 2001:db8::1"})
	expectLines(t, "claims", z.claims(), []string{"z s.example.com A ", "z s.example.com AAAA "})
	if len(res.Changes.Create) != 1 || res.Changes.Create[0].RecordType != "TXT" || len(res.Changes.Delete) != 0 {
		t.Fatalf("want our version-1 claim created:\n%s", describeChanges(res.Changes))
	}
	if _, ok := z[legacyTXT(shared, "z").Key()]; !ok {
		t.Fatal("the legacy TXT is gone")
	}
}
