package registry

import (
	"errors"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/batch"
)

// CheckCleanup lets an active grouped owner remove what an inactive group's owners published, and
// nothing else of anyone's: each claim is judged by its own group label.
func TestCheckCleanup(t *testing.T) {
	a := func(name string, targets ...string) *v1alpha1.Endpoint {
		return &v1alpha1.Endpoint{DNSName: name, RecordType: v1alpha1.RecordTypeA, RecordTTL: 60, Targets: targets}
	}
	claim := func(owner, group string, r *v1alpha1.Endpoint) *v1alpha1.Endpoint {
		txt, err := NewTXTInGroup(owner, group, r)
		if err != nil {
			t.Fatal(err)
		}
		return txt
	}
	shared := a("app.example.com", "10.0.0.1", "10.0.0.2")
	only := a("only.example.com", "10.0.0.2")
	ungrouped := a("ungrouped.example.com", "10.0.0.3")
	human := a("human.example.com", "9.9.9.9")
	cname := &v1alpha1.Endpoint{DNSName: "cn.example.com", RecordType: v1alpha1.RecordTypeCNAME, RecordTTL: 60, Targets: v1alpha1.Targets{"lb.example.net"}}
	waiting := a("cn.example.com", "10.0.0.4")
	zone := []*v1alpha1.Endpoint{
		shared, claim("a", "g1", a("app.example.com", "10.0.0.1")), claim("b", "g2", a("app.example.com", "10.0.0.2")),
		only, claim("b", "g2", only),
		ungrouped, claim("c", "", ungrouped),
		human,
		cname, claim("b", "g2", cname), claim("d", "", waiting),
	}
	trimmed := a("app.example.com", "10.0.0.1")
	for _, tc := range []struct {
		name    string
		active  []string
		changes batch.Changes
		ok      bool
	}{
		{"an inactive group's record and claim", []string{"g1"}, batch.Changes{Delete: eps(only, claim("b", "g2", only))}, true},
		{"without active groups, Check", nil, batch.Changes{Delete: eps(only, claim("b", "g2", only))}, false},
		{"the group is active", []string{"g1", "g2"}, batch.Changes{Delete: eps(only, claim("b", "g2", only))}, false},
		{"the record without its claim", []string{"g1"}, batch.Changes{Delete: eps(only)}, false},
		{"an ungrouped owner's record", []string{"g1"}, batch.Changes{Delete: eps(ungrouped, claim("c", "", ungrouped))}, false},
		{"a human's record", []string{"g1"}, batch.Changes{Delete: eps(human)}, false},
		{"targets taken from a shared record", []string{"g1"}, batch.Changes{UpdateOld: eps(shared), UpdateNew: eps(trimmed),
			Delete: eps(claim("b", "g2", a("app.example.com", "10.0.0.2"))), Require: eps(claim("a", "g1", a("app.example.com", "10.0.0.1")))}, true},
		{"a target added to a shared record it does not claim", []string{"g1"}, batch.Changes{UpdateOld: eps(shared), UpdateNew: eps(a("app.example.com", "10.0.0.1", "10.0.0.9")),
			Delete: eps(claim("b", "g2", a("app.example.com", "10.0.0.2"))), Require: eps(claim("a", "g1", a("app.example.com", "10.0.0.1")))}, false},
		{"a shared record emptied", []string{"g1"}, batch.Changes{Delete: eps(shared, claim("b", "g2", a("app.example.com", "10.0.0.2")))}, false},
		{"a name left without what a live owner claims", []string{"g1"}, batch.Changes{Delete: eps(cname, claim("b", "g2", cname))}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// e claims nothing here: what it may do, it may do only as the cleanup.
			err := Read(zone).CheckCleanup([]string{"e"}, nil, tc.active, &tc.changes)
			if tc.ok && err != nil {
				t.Fatal(err)
			}
			if !tc.ok && !errors.Is(err, ErrRefused) {
				t.Fatalf("let through: %v", err)
			}
		})
	}
}

func eps(e ...*v1alpha1.Endpoint) []*v1alpha1.Endpoint { return e }
