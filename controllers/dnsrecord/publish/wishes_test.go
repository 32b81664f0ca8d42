package publish

import (
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// TestClusterRemembersWishes: what an owner's plan wants is found by key (name, type and set), the
// last of two endpoints with one key standing; a plan that wants nothing forgets the owner, and a
// renewal changes nothing.
func TestClusterRemembersWishes(t *testing.T) {
	c := &cluster{local: map[string]bool{}, wishes: map[string][]*v1alpha1.Endpoint{}}
	a1 := &v1alpha1.Endpoint{DNSName: "a.example.com", RecordType: "A", Targets: v1alpha1.Targets{"1.1.1.1"}}
	a2 := &v1alpha1.Endpoint{DNSName: "a.example.com", RecordType: "A", Targets: v1alpha1.Targets{"2.2.2.2"}}
	eu := &v1alpha1.Endpoint{DNSName: "a.example.com", RecordType: "A", SetIdentifier: "eu", Targets: v1alpha1.Targets{"3.3.3.3"}}
	cname := &v1alpha1.Endpoint{DNSName: "b.example.com", RecordType: "CNAME", Targets: v1alpha1.Targets{"lb.example.net"}}
	aaaa := &v1alpha1.Endpoint{DNSName: "a.example.com", RecordType: "AAAA", Targets: v1alpha1.Targets{"2001:db8::1"}}
	wants := func(owner string, renewal bool, desired ...*v1alpha1.Endpoint) *planned {
		return &planned{waiter: &waiter{req: Request{OwnerID: owner, renewal: renewal}}, desired: desired}
	}
	c.remember(wants("o1", false, cname, a1, eu, aaaa, a2))
	c.remember(wants("o2", false, a1))
	for _, tc := range []struct {
		owner string
		key   v1alpha1.EndpointKey
		want  *v1alpha1.Endpoint
	}{
		{"o1", a1.Key(), a2},
		{"o1", eu.Key(), eu},
		{"o1", cname.Key(), cname},
		{"o1", aaaa.Key(), aaaa},
		{"o1", v1alpha1.EndpointKey{DNSName: "a.example.com", RecordType: "A", SetIdentifier: "us"}, nil},
		{"o2", a1.Key(), a1},
		{"o2", cname.Key(), nil},
		{"o3", a1.Key(), nil},
	} {
		if got := c.known(tc.owner, tc.key); got != tc.want {
			t.Errorf("known(%s, %v) = %v, want %v", tc.owner, tc.key, got, tc.want)
		}
	}
	c.remember(wants("o1", true))
	if c.known("o1", cname.Key()) != cname {
		t.Error("a renewal changed what o1 wants")
	}
	c.remember(wants("o1", false))
	if c.known("o1", cname.Key()) != nil || c.known("o2", a1.Key()) != a1 {
		t.Error("a plan of o1 that wants nothing did not forget o1 alone")
	}
}
