//go:build integration

package clouds_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/test/emulators/cloud"
)

// endpointLines renders endpoints other than TXT and the apex NS as sorted lines: name, type, TTL,
// sorted targets, set identifier and routing properties.
func endpointLines(eps []*v1alpha1.Endpoint) []string {
	var lines []string
	for _, ep := range eps {
		if ep.RecordType == v1alpha1.RecordTypeTXT || ep.RecordType == v1alpha1.RecordTypeNS {
			continue
		}
		targets := slices.Clone(ep.Targets)
		slices.Sort(targets)
		line := fmt.Sprintf("%s %s %d %s", strings.TrimSuffix(ep.DNSName, "."), ep.RecordType, ep.RecordTTL, strings.Join(targets, ","))
		if ep.SetIdentifier != "" {
			line += " set=" + ep.SetIdentifier
		}
		for _, p := range ep.ProviderSpecific {
			line += " " + p.Name + "=" + p.Value
		}
		lines = append(lines, line)
	}
	slices.Sort(lines)
	return lines
}

// nativeLines is the zone as the cloud holds it, without ownership TXT records and the apex SOA/NS.
func nativeLines(c *cloud.Cloud, zone string) []string {
	var out []string
	for _, l := range c.Dump(zone) {
		f := strings.Fields(l)
		if len(f) > 1 && (f[1] == "TXT" || f[1] == "SOA" || f[1] == "NS") {
			continue
		}
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}

// Two clusters publish loadbalanced trees for one hostname (three owners: one IE tree with the
// default geo, another IE tree and a US tree): each cloud holds them as its native weighted and geo
// record sets (Traffic Manager profiles on Azure), the backend reads them back into exactly the
// endpoints the owners published, and deleting one owner leaves exactly the others' trees.
func TestLoadbalancedTreesOfTwoClusters(t *testing.T) {
	forEachCloud(t, func(t *testing.T, c *cloud.Cloud) {
		const z, host = "lb.example.com", "app.lb.example.com"
		c.AddZone(z)
		cls := startClusters(t, c, 2, fastOptions())
		trees := map[string][]*v1alpha1.Endpoint{
			"web":    lbTree(c, host, "IE", 120, true, "aaaaaa-111111", "10.1.0.1"),
			"web-ie": lbTree(c, host, "IE", 200, false, "bbbbbb-222222", "10.1.0.2"),
			"web-us": lbTree(c, host, "US", 100, false, "cccccc-333333", "10.1.0.3"),
		}
		cls[0].record(t, "web", host, trees["web"]...)
		cls[1].record(t, "web-ie", host, trees["web-ie"]...)
		cls[1].record(t, "web-us", host, trees["web-us"]...)

		want := func(names ...string) []string {
			var eps []*v1alpha1.Endpoint
			seen := map[string]bool{}
			for _, n := range names {
				for _, ep := range trees[n] {
					// Shared names (the host CNAME, a geo set two owners publish) appear once.
					if c.Name == cloud.Google && ep.SetIdentifier == "default" {
						continue // Cloud DNS has no catch-all location: the backend drops "*"
					}
					key := ep.DNSName + "|" + ep.RecordType + "|" + ep.SetIdentifier
					if !seen[key] {
						seen[key] = true
						eps = append(eps, ep)
					}
				}
			}
			return endpointLines(eps)
		}
		readBack := func() []string {
			eps, err := c.ReadBack(t.Context(), z)
			if err != nil {
				return []string{"error: " + err.Error()}
			}
			return endpointLines(eps)
		}
		allReady := func(names ...string) string {
			for i, cl := range cls {
				for _, n := range names {
					if (i == 0) != (n == "web") {
						continue
					}
					if cnd := ready(cl.get(t, n)); cnd == nil || cnd.Status != metav1.ConditionTrue {
						return fmt.Sprintf("%s %s: Ready %v", cl.name, n, cnd)
					}
				}
			}
			return ""
		}

		eventually(t, 60*time.Second, func() string {
			if msg := same("read back", readBack(), want("web", "web-ie", "web-us")); msg != "" {
				return msg
			}
			return allReady("web", "web-ie", "web-us")
		})
		if msg := same(c.Name, nativeLines(c, z), nativeTrees(c, true)); msg != "" {
			t.Error(msg)
		}

		// Each owner's ownership TXT records (Kuadrant's format, "owner=<id>") sit beside the trees.
		owners := map[string]string{"web": cls[0].get(t, "web").Status.OwnerID,
			"web-ie": cls[1].get(t, "web-ie").Status.OwnerID, "web-us": cls[1].get(t, "web-us").Status.OwnerID}
		for n, id := range owners {
			if txts := ownershipTXTs(c, z, id); txts == 0 {
				t.Errorf("no ownership TXT of %s (owner %q) in the zone:\n%s", n, id, strings.Join(c.Dump(z), "\n"))
			}
		}

		cls[0].delete(t, "web")
		eventually(t, 60*time.Second, func() string {
			if msg := same("read back", readBack(), want("web-ie", "web-us")); msg != "" {
				return msg
			}
			return cls[0].gone(t, "web")
		})
		if msg := same(c.Name, nativeLines(c, z), nativeTrees(c, false)); msg != "" {
			t.Error(msg)
		}
		if msg := allReady("web-ie", "web-us"); msg != "" {
			t.Errorf("after the other owner left: %s", msg)
		}
		if n := ownershipTXTs(c, z, owners["web"]); n != 0 {
			t.Errorf("%d ownership TXT records of the deleted owner left:\n%s", n, strings.Join(c.Dump(z), "\n"))
		}
		for _, n := range []string{"web-ie", "web-us"} {
			if ownershipTXTs(c, z, owners[n]) == 0 {
				t.Errorf("the ownership TXT records of %s went with the other owner", n)
			}
		}
	})
}

// ownershipTXTs counts the TXT record sets of the zone that name owner.
func ownershipTXTs(c *cloud.Cloud, zone, owner string) int {
	n := 0
	for _, l := range c.Dump(zone) {
		if f := strings.Fields(l); len(f) > 1 && f[1] == "TXT" && owner != "" && strings.Contains(l, "owner="+owner) {
			n++
		}
	}
	return n
}

// nativeTrees is what each cloud holds for the trees of the test above, in Dump's terms, with the
// first owner's tree (withFirst) or without it: Route 53 weighted and geolocation record sets, Cloud
// DNS WRR and geo routing policies (one record set per name), Azure Traffic Manager profiles
// aliased from record sets.
func nativeTrees(c *cloud.Cloud, withFirst bool) []string {
	var lines []string
	add := func(first bool, l ...string) {
		if withFirst || !first {
			lines = append(lines, l...)
		}
	}
	pick := func(first bool, a, b string) string {
		if withFirst || !first {
			return a
		}
		return b
	}
	switch c.Name {
	case cloud.AWS:
		const klb = "klb.app.lb.example.com"
		add(false, "app.lb.example.com. CNAME 300 "+klb,
			klb+". CNAME 300 set=IE geo=/IE/ ie."+klb,
			klb+". CNAME 300 set=US geo=/US/ us."+klb,
			"bbbbbb-222222."+klb+". A 60 10.1.0.2",
			"cccccc-333333."+klb+". A 60 10.1.0.3",
			"ie."+klb+". CNAME 60 set=bbbbbb-222222."+klb+" weight=200 bbbbbb-222222."+klb,
			"us."+klb+". CNAME 60 set=cccccc-333333."+klb+" weight=100 cccccc-333333."+klb)
		add(true, klb+". CNAME 300 set=default geo=/*/ ie."+klb,
			"aaaaaa-111111."+klb+". A 60 10.1.0.1",
			"ie."+klb+". CNAME 60 set=aaaaaa-111111."+klb+" weight=120 aaaaaa-111111."+klb)
	case cloud.Google:
		const klb = "klb.app.lb.example.com."
		add(false, "app.lb.example.com. CNAME 300 "+klb,
			"bbbbbb-222222."+klb+" A 60 10.1.0.2",
			"cccccc-333333."+klb+" A 60 10.1.0.3",
			"europe-west1."+klb+" CNAME 60 wrr="+pick(true, "120:aaaaaa-111111."+klb+";", "")+"200:bbbbbb-222222."+klb,
			klb+" CNAME 300 geo=europe-west1:europe-west1."+klb+";us-east1:us-east1."+klb,
			"us-east1."+klb+" CNAME 60 wrr=100:cccccc-333333."+klb)
		add(true, "aaaaaa-111111."+klb+" A 60 10.1.0.1")
	case cloud.Azure:
		const klb = "klb.app.lb.example.com"
		add(false, "app CNAME 300 "+klb,
			"bbbbbb-222222.klb.app A 60 10.1.0.2",
			"cccccc-333333.klb.app A 60 10.1.0.3",
			"ie.klb.app CNAME 60 tm=Weighted["+pick(true, "aaaaaa-111111."+klb+" w=120;", "")+"bbbbbb-222222."+klb+" w=200]",
			"klb.app CNAME 300 tm=Geographic[ie."+klb+" geo=IE;"+pick(true, "ie."+klb+" geo=WORLD;", "")+"us."+klb+" geo=US]",
			"us.klb.app CNAME 60 tm=Weighted[cccccc-333333."+klb+" w=100]")
		add(true, "aaaaaa-111111.klb.app A 60 10.1.0.1")
	}
	slices.Sort(lines)
	return lines
}
