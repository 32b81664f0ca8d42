package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/groups"
	"github.com/dnspolicy/dnspolicy-controller/pkg/plan"
)

// publishInGroup plans owner's endpoints as a controller started with --group group does (its
// active groups being cleanup, when set) and applies them.
func (m *memZone) publishInGroup(owner, group string, cleanup []string, desired ...*v1alpha1.Endpoint) {
	m.t.Helper()
	z := m.read()
	res, err := plan.Plan(plan.Input{OwnerID: owner, Group: group, ZoneName: "example.com", Zone: z, Desired: desired, CleanupGroups: cleanup})
	if err != nil {
		m.t.Fatal(err)
	}
	if err := z.CheckCleanup([]string{owner}, nil, cleanup, res.Changes); err != nil {
		m.t.Fatal(err)
	}
	if !res.Changes.Empty() {
		m.apply(res.Changes)
	}
}

func (m *memZone) lines() []string {
	m.t.Helper()
	view, err := m.p.Records(context.Background(), m.z)
	if err != nil {
		m.t.Fatal(err)
	}
	var out []string
	for _, e := range view.Endpoints {
		out = append(out, formatEndpoint(e))
	}
	slices.Sort(out)
	return out
}

// remove-active-group prints, per name, what the controllers of the groups left active remove at
// their next quiet pass, and that is what such a controller's pass then removes: the west group's
// record that only it held, its target in the record shared with east and an ungrouped owner, and
// its claims; the ungrouped owner's record and the TXT change are all that is left besides.
func TestRemoveActiveGroupPrintsTheCleanup(t *testing.T) {
	m := newMemZone(t)
	a := func(name string, targets ...string) *v1alpha1.Endpoint {
		return v1alpha1.NewEndpoint(name, v1alpha1.RecordTypeA, 60, targets...)
	}
	m.editGroups(false, func([]string) []string { return []string{"east", "west"} })
	m.publishInGroup("east-1", "east", nil, a("app.example.com", "10.0.0.1"))
	m.publishInGroup("west-1", "west", nil, a("app.example.com", "10.0.0.2"), a("west.example.com", "10.0.0.2"))
	m.publishInGroup("plain-1", "", nil, a("app.example.com", "10.0.0.3"), a("plain.example.com", "10.0.0.3"))
	// Each owner's quiet pass: its claims state its wish now that others share the name.
	m.publishInGroup("east-1", "east", nil, a("app.example.com", "10.0.0.1"))
	m.publishInGroup("west-1", "west", nil, a("app.example.com", "10.0.0.2"), a("west.example.com", "10.0.0.2"))
	m.publishInGroup("plain-1", "", nil, a("app.example.com", "10.0.0.3"), a("plain.example.com", "10.0.0.3"))
	before := m.lines()

	out := m.editGroups(true, func(gs []string) []string { return groups.Without(gs, "west") })
	want := `then the active groups' controllers (east) remove, at their next quiet pass:
  app.example.com:
    targets 10.0.0.2 from A app.example.com (10.0.0.1,10.0.0.3 stay)
    the claim of owner west-1 (group west) on A app.example.com
  west.example.com:
    A west.example.com 10.0.0.2 ttl 60
    the claim of owner west-1 (group west) on A west.example.com
dry run: nothing was changed
`
	if !strings.HasSuffix(out, want) {
		t.Fatalf("dry run printed:\n%s\nwant it to end with:\n%s", out, want)
	}
	if !slices.Equal(m.lines(), before) {
		t.Fatal("the dry run changed the zone")
	}

	m.editGroups(false, func(gs []string) []string { return groups.Without(gs, "west") })
	m.publishInGroup("east-1", "east", []string{"east"}, a("app.example.com", "10.0.0.1"))
	after := m.lines()
	var gone []string
	for _, l := range before {
		if !slices.Contains(after, l) && !strings.Contains(l, groups.RecordLabel) {
			gone = append(gone, l)
		}
	}
	wantGone := []string{"A app.example.com 10.0.0.1,10.0.0.2,10.0.0.3 ttl 60", "A west.example.com 10.0.0.2 ttl 60"}
	for _, l := range gone {
		if strings.HasPrefix(l, "TXT ") {
			if !strings.Contains(l, "external-dns/group=west") {
				t.Errorf("the cleanup removed a claim not of west's: %s", l)
			}
			continue
		}
		if !slices.Contains(wantGone, l) {
			t.Errorf("the cleanup removed %s, which the dry run did not print", l)
		}
	}
	if !slices.Contains(after, "A app.example.com 10.0.0.1,10.0.0.3 ttl 60") || !slices.Contains(after, "A plain.example.com 10.0.0.3 ttl 60") {
		t.Errorf("after the cleanup the zone holds:\n%s", strings.Join(after, "\n"))
	}

	// With no group left active nothing is cleaned, and the command says so.
	out = m.editGroups(true, func(gs []string) []string { return groups.Without(gs, "east") })
	outHas(t, "the last group removed", out, "no group stays active: no controller removes what the groups published")
}
