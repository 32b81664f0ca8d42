//go:build integration

package dnsrecord_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
)

func same(got, want []string) string {
	if slices.Equal(got, want) {
		return ""
	}
	return fmt.Sprintf("zone holds\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
}

// Three clusters publish A records for one host: the zone holds the union; one leaves, the others stay.
func TestSimpleTargetsMergeAndLeave(t *testing.T) {
	store := inmemory.NewStore()
	cls := startClusters(t, 3, store, fastOptions(), nil)
	const z, host = "merge.example.com", "app.merge.example.com"
	store.EnsureZone(z)
	for i, cl := range cls {
		cl.secret(t, z)
		cl.record(t, "web", host, a(host, 60, fmt.Sprintf("10.0.0.%d", i+1)))
	}
	eventually(t, 20*time.Second, func() string {
		return same(records(t, store, z), []string{host + " A 60 10.0.0.1,10.0.0.2,10.0.0.3"})
	})
	for _, cl := range cls {
		// domainOwners comes from the owner's view of the zone, refreshed at most every publish
		// MaxAge (10 s): the first owner to write sees the others only after that.
		eventually(t, 25*time.Second, func() string {
			r := cl.get(t, "web")
			if c := ready(r); c == nil || c.Status != metav1.ConditionTrue || len(r.Status.DomainOwners) != 3 {
				return fmt.Sprintf("%s: ready %v, owners %v", cl.name, c, r.Status.DomainOwners)
			}
			return ""
		})
		// The wire contract tooling written for Kuadrant reads (DESIGN 4b).
		r := cl.get(t, "web")
		if c := ready(r); c.Reason != v1alpha1.ReasonProviderSuccess || c.Message != "Provider ensured the dns record" {
			t.Errorf("%s: Ready = %s %q, want ProviderSuccess %q", cl.name, c.Reason, c.Message, "Provider ensured the dns record")
		}
		if r.Status.OwnerID != hash.Base36(string(r.UID), 8) || r.Spec.OwnerID != "" {
			t.Errorf("%s: status.ownerID %q, want hash8 of the UID %q; spec.ownerID must stay unset, is %q", cl.name, r.Status.OwnerID, hash.Base36(string(r.UID), 8), r.Spec.OwnerID)
		}
		if r.Labels[v1alpha1.ProviderNameLabel] != "inmemory" {
			t.Errorf("%s: label %s = %q, want inmemory", cl.name, v1alpha1.ProviderNameLabel, r.Labels[v1alpha1.ProviderNameLabel])
		}
		if r.Status.ZoneID != inmemory.ZoneID(z) || r.Status.ZoneDomainName != z || !slices.Contains(r.Finalizers, v1alpha1.RecordFinalizer) {
			t.Errorf("%s: zone %q/%q finalizers %v", cl.name, r.Status.ZoneID, r.Status.ZoneDomainName, r.Finalizers)
		}
	}
	if n := txtCount(t, store, z); n != 3 {
		t.Errorf("want one ownership TXT per owner, zone has %d TXT:\n%s", n, strings.Join(zone(t, store, z), "\n"))
	}

	cls[1].delete(t, "web")
	eventually(t, 5*time.Second, func() string {
		if msg := same(records(t, store, z), []string{host + " A 60 10.0.0.1,10.0.0.3"}); msg != "" {
			return msg
		}
		if n := txtCount(t, store, z); n != 2 {
			return fmt.Sprintf("%d TXT left, want 2", n)
		}
		return ""
	})
	eventually(t, 5*time.Second, func() string {
		r := &v1alpha1.DNSRecord{}
		if err := cls[1].c.Get(t.Context(), keyOf(cls[1], "web"), r); err == nil {
			return "deleted record still present, finalizers " + strings.Join(r.Finalizers, ",")
		}
		return ""
	})
}

// lbTree is one cluster's loadbalanced tree for host, Kuadrant's shape (DESIGN 3).
func lbTree(host, geo string, weight int, defaultGeo bool, leaf, ip string) []*v1alpha1.Endpoint {
	klb := "klb." + host
	geoName := strings.ToLower(geo) + "." + klb
	eps := []*v1alpha1.Endpoint{
		cname(host, 300, klb),
		cname(klb, 300, geoName).WithSetIdentifier(geo).WithProviderSpecific("geo-code", geo),
		cname(geoName, 60, leaf+"."+klb).WithSetIdentifier(leaf+"."+klb).WithProviderSpecific("weight", fmt.Sprint(weight)),
		a(leaf+"."+klb, 60, ip),
	}
	if defaultGeo {
		eps = append(eps, cname(klb, 300, geoName).WithSetIdentifier("default").WithProviderSpecific("geo-code", "*"))
	}
	return eps
}

// Three clusters' loadbalanced trees for one host share the klb names; one owner's deletion leaves
// exactly the others' trees.
func TestLoadbalancedTreesShareKlbNames(t *testing.T) {
	store := inmemory.NewStore()
	cls := startClusters(t, 3, store, fastOptions(), nil)
	const z, host = "lb.example.com", "app.lb.example.com"
	trees := [][]*v1alpha1.Endpoint{
		lbTree(host, "IE", 120, true, "aaaaaa-111111", "10.1.0.1"),
		lbTree(host, "IE", 200, false, "bbbbbb-222222", "10.1.0.2"),
		lbTree(host, "US", 100, false, "cccccc-333333", "10.1.0.3"),
	}
	store.EnsureZone(z)
	for i, cl := range cls {
		cl.secret(t, z)
		cl.record(t, "web", host, trees[i]...)
	}
	klb := "klb." + host
	all := []string{
		"aaaaaa-111111." + klb + " A 60 10.1.0.1",
		"bbbbbb-222222." + klb + " A 60 10.1.0.2",
		"cccccc-333333." + klb + " A 60 10.1.0.3",
		"ie." + klb + " CNAME 60 aaaaaa-111111." + klb + " set=aaaaaa-111111." + klb,
		"ie." + klb + " CNAME 60 bbbbbb-222222." + klb + " set=bbbbbb-222222." + klb,
		"us." + klb + " CNAME 60 cccccc-333333." + klb + " set=cccccc-333333." + klb,
		host + " CNAME 300 " + klb,
		klb + " CNAME 300 ie." + klb + " set=IE",
		klb + " CNAME 300 ie." + klb + " set=default",
		klb + " CNAME 300 us." + klb + " set=US",
	}
	slices.Sort(all)
	eventually(t, 20*time.Second, func() string { return same(records(t, store, z), all) })

	cls[0].delete(t, "web")
	var rest []string
	for _, l := range all {
		if !strings.Contains(l, "aaaaaa-111111") && !strings.HasSuffix(l, "set=default") {
			rest = append(rest, l)
		}
	}
	eventually(t, 5*time.Second, func() string { return same(records(t, store, z), rest) })
	for _, cl := range cls[1:] {
		if c := ready(cl.get(t, "web")); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("%s: Ready %v after another owner left", cl.name, c)
		}
	}
}
