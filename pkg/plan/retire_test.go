package plan

import (
	"slices"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// An active grouped owner's plan with CleanupGroups removes what the inactive group published, as
// Kuadrant's unpublishInactiveGroups does: its targets leave a record shared with live owners, a
// record only it holds goes (at a name the planning owner never claimed), and its claims go. An
// ungrouped owner's record, a human's, a Kuadrant-format claim of an active group, and a name where
// a live claim waits unpublished behind the inactive group's record stay. Planned again, nothing
// changes.
func TestCleanupInactiveGroups(t *testing.T) {
	human := rec("human.example.com", "A", 300, "9.9.9.9")
	z := newZone(human)
	a := &owner{id: "a", group: "g1"}
	b := &owner{id: "b", group: "g2"}
	c := &owner{id: "c"}
	d := &owner{id: "d"}
	step(t, z, a, eps(rec("app.example.com", "A", 60, "10.0.0.1")))
	step(t, z, b, eps(rec("app.example.com", "A", 60, "10.0.0.2"), rec("only.example.com", "A", 60, "10.0.0.2"),
		rec("cn.example.com", "CNAME", 60, "lb.example.net")))
	step(t, z, c, eps(rec("app.example.com", "A", 60, "10.0.0.3"), rec("ungrouped.example.com", "A", 60, "10.0.0.3")))
	// d's A loses to b's CNAME, the incumbent: it stays claimed, unpublished.
	step(t, z, d, eps(rec("cn.example.com", "A", 60, "10.0.0.4")))
	// A Kuadrant controller of the active group, its claim not stating its wish.
	kq := rec("kq.example.com", "A", 60, "10.0.0.5")
	z[kq.Key()] = kq
	ktxt := kuadrantTXT("k", kq)
	ktxt.Targets = v1alpha1.Targets{`"heritage=external-dns,external-dns/group=g1,external-dns/owner=k,external-dns/targets=10.0.0.5,external-dns/version=1"`}
	z[ktxt.Key()] = ktxt

	// a's quiet pass: it states its wish now that other clusters share its name.
	if res := step(t, z, a, eps(rec("app.example.com", "A", 60, "10.0.0.1"))); !res.Changes.Empty() {
		if res = step(t, z, a, eps(rec("app.example.com", "A", 60, "10.0.0.1"))); !res.Changes.Empty() {
			t.Fatalf("a's pass is not quiet:\n%s", describeChanges(res.Changes))
		}
	}
	before := lines(z.endpoints())
	a.active = []string{"g1"}
	res := step(t, z, a, eps(rec("app.example.com", "A", 60, "10.0.0.1")))
	if !slices.Equal(res.Retired, []string{"b"}) || !slices.Equal(res.RetiredNames, []string{"app.example.com", "only.example.com"}) || len(res.Withdrawn) != 0 {
		t.Errorf("retired %v at %v, withdrawn %v", res.Retired, res.RetiredNames, res.Withdrawn)
	}
	after := lines(z.endpoints())
	var gone, came []string
	for _, l := range before {
		if !slices.Contains(after, l) {
			gone = append(gone, l)
		}
	}
	for _, l := range after {
		if !slices.Contains(before, l) {
			came = append(came, l)
		}
	}
	expectLines(t, "removed", gone, []string{
		"app.example.com A 60 10.0.0.1,10.0.0.2,10.0.0.3",
		registry.TXTName("b", "A", "app.example.com") + " TXT 60 " + txtValue(t, rec("app.example.com", "A", 60, "10.0.0.2"), "b", "g2", true),
		registry.TXTName("b", "A", "only.example.com") + " TXT 60 " + txtValue(t, rec("only.example.com", "A", 60, "10.0.0.2"), "b", "g2", false),
		"only.example.com A 60 10.0.0.2",
	})
	expectLines(t, "added", came, []string{"app.example.com A 60 10.0.0.1,10.0.0.3"})
	for _, keep := range []string{"human.example.com A 300 9.9.9.9", "ungrouped.example.com A 60 10.0.0.3", "cn.example.com CNAME 60 lb.example.net", "kq.example.com A 60 10.0.0.5"} {
		if !slices.Contains(after, keep) {
			t.Errorf("%s is gone", keep)
		}
	}

	// Without CleanupGroups nothing of an inactive group's is touched.
	b.active = nil
	a.active = nil
	res = step(t, z, a, eps(rec("app.example.com", "A", 60, "10.0.0.1")))
	if len(res.Retired) != 0 {
		t.Errorf("retired %v without CleanupGroups", res.Retired)
	}
}

// txtValue is the value of owner's grouped claim on r, stating its wish where wish says.
func txtValue(t *testing.T, r *v1alpha1.Endpoint, owner, group string, wish bool) string {
	t.Helper()
	var txt *v1alpha1.Endpoint
	var err error
	if wish {
		txt, err = registry.NewWishTXTInGroup(owner, group, "", r)
	} else {
		txt, err = registry.NewTXTInGroup(owner, group, r)
	}
	if err != nil {
		t.Fatal(err)
	}
	return txt.Targets[0]
}
