package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/batch"
	"github.com/dnspolicy/dnspolicy-controller/pkg/groups"
)

// activeTXT returns the zone's active-groups TXT as "<ttl> <targets>", "" when there is none.
func (m *memZone) activeTXT() string {
	m.t.Helper()
	view, err := m.p.Records(context.Background(), m.z)
	if err != nil {
		m.t.Fatal(err)
	}
	txt := groups.FindTXT(view.Endpoints, m.z.DNSName)
	if txt == nil {
		return ""
	}
	return fmt.Sprint(txt.RecordTTL) + " " + strings.Join(txt.Targets, " ")
}

func (m *memZone) editGroups(dryRun bool, edit func([]string) []string) string {
	m.t.Helper()
	var out bytes.Buffer
	if err := setActiveGroups(context.Background(), &out, m.target(), dryRun, edit); err != nil {
		m.t.Fatal(err)
	}
	return out.String()
}

// add-active-group and remove-active-group on the inmemory backend write the TXT Kuadrant's CLI
// writes: created with TTL 60, groups sorted, deleted with its last group; the dry run changes
// nothing; an unchanged list writes nothing.
func TestActiveGroupsEdits(t *testing.T) {
	m := newMemZone(t)
	add := func(g string) func([]string) []string {
		return func(gs []string) []string { return groups.With(gs, g) }
	}
	remove := func(g string) func([]string) []string {
		return func(gs []string) []string { return groups.Without(gs, g) }
	}

	out := m.editGroups(true, add("west"))
	outHas(t, "dry run", out, `  create TXT kuadrant-active-groups.example.com "version=1;groups=west" ttl 60`)
	outHas(t, "dry run", out, "dry run: nothing was changed")
	if got := m.activeTXT(); got != "" {
		t.Fatalf("the dry run wrote %s", got)
	}

	m.editGroups(false, add("west"))
	if got := m.activeTXT(); got != `60 "version=1;groups=west"` {
		t.Fatalf("after add west: %s", got)
	}
	out = m.editGroups(false, add("east"))
	outHas(t, "add east", out, "active groups: west -> east, west")
	if got := m.activeTXT(); got != `60 "version=1;groups=east&&west"` {
		t.Fatalf("after add east: %s", got)
	}
	outHas(t, "add east again", m.editGroups(false, add("east")), "active groups unchanged (east, west): nothing to do")
	outHas(t, "remove absent", m.editGroups(false, remove("north")), "nothing to do")

	out = m.editGroups(true, remove("west"))
	outHas(t, "remove dry run", out, "dry run: nothing was changed")
	if got := m.activeTXT(); got != `60 "version=1;groups=east&&west"` {
		t.Fatalf("the dry run changed the TXT: %s", got)
	}
	m.editGroups(false, remove("west"))
	if got := m.activeTXT(); got != `60 "version=1;groups=east"` {
		t.Fatalf("after remove west: %s", got)
	}
	out = m.editGroups(false, remove("east"))
	outHas(t, "remove the last", out, "  delete TXT kuadrant-active-groups.example.com")
	if got := m.activeTXT(); got != "" {
		t.Fatalf("the TXT is left after its last group: %s", got)
	}
}

// A TXT of another format version is left as it is, as Kuadrant's CLI leaves it.
func TestActiveGroupsOtherVersionLeftAlone(t *testing.T) {
	m := newMemZone(t)
	m.apply(&batch.Changes{Create: []*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint(groups.RecordName("example.com"), v1alpha1.RecordTypeTXT, 60, `"version=2;groups=a"`),
	}})
	var out bytes.Buffer
	err := setActiveGroups(context.Background(), &out, m.target(), false, func(gs []string) []string { return groups.With(gs, "b") })
	if err == nil || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("setActiveGroups = %v, want a refusal", err)
	}
	if got := m.activeTXT(); got != `60 "version=2;groups=a"` {
		t.Fatalf("the TXT changed: %s", got)
	}
}

func TestPrintActiveGroups(t *testing.T) {
	m := newMemZone(t)
	for _, tc := range []struct {
		txt  *v1alpha1.Endpoint
		want string
	}{
		{nil, "no kuadrant-active-groups.example.com TXT: no group is active"},
		{v1alpha1.NewEndpoint("x", "TXT", 60, `"version=1"`), "kuadrant-active-groups.example.com lists no group"},
		{v1alpha1.NewEndpoint("x", "TXT", 60, `"groups=b&&a;version=1"`), "active groups: b, a"},
	} {
		var out bytes.Buffer
		printActiveGroups(&out, m.target(), tc.txt)
		outHas(t, "get-active-groups", out.String(), tc.want)
	}
}

func outHas(t *testing.T, what, out, want string) {
	t.Helper()
	if !strings.Contains(out, want) {
		t.Errorf("%s: output lacks %q:\n%s", what, want, out)
	}
}
