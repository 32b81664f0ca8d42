package plan

import (
	"testing"
)

// A grouped owner's claims are Kuadrant's grouped TXTs (group and targets); an owner whose group
// changes rewrites its claim and nothing else; an ungrouped owner at the same name writes no group.
func TestGroupedClaims(t *testing.T) {
	z := newZone()
	a := &owner{id: "a"}
	desired := eps(rec("app.example.com", "A", 60, "1.1.1.1"))
	step(t, z, a, desired)
	a.published = desired

	a.group = "east"
	res := step(t, z, a, desired)
	if len(res.Changes.Create)+len(res.Changes.Delete) != 0 || len(res.Changes.UpdateNew) != 1 {
		t.Fatalf("joining a group changes more than the claim:\n%s", describeChanges(res.Changes))
	}
	expectLines(t, "claim in a group", lines(res.Changes.UpdateNew), []string{
		`kuadrant-264yzvyj-a-app.example.com TXT 60 "heritage=external-dns,external-dns/group=east,external-dns/owner=a,external-dns/targets=1.1.1.1,external-dns/version=1"`,
	})

	// Another cluster's ungrouped owner (it states its wish beside a claim of another cluster).
	b := &owner{id: "b"}
	res = step(t, z, b, eps(rec("app.example.com", "A", 60, "1.1.1.2")))
	expectLines(t, "ungrouped claim", lines(res.Changes.Create), []string{
		`kuadrant-2i9rupgs-a-app.example.com TXT 60 "heritage=external-dns,external-dns/claim-targets=1.1.1.2,external-dns/claim-ttl=60,external-dns/owner=b,external-dns/version=1"`,
	})
}
