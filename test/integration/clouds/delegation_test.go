//go:build integration

package clouds_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/peers"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/test/emulators/cloud"
)

// The delegation of a subdomain to the clusters' embedded servers (docs/multicluster-dns.md), written
// into a parent zone one of our cloud backends holds: the DNSRecord peers.DelegationRecord makes is
// published like any record, NS set and glue claimed by its owner, and taken out again when it is
// deleted.
func TestDelegationIntoACloudParent(t *testing.T) {
	forEachCloud(t, func(t *testing.T, c *cloud.Cloud) {
		const parent, child = "deleg.example.com", "gslb.deleg.example.com"
		c.AddZone(parent)
		cl := startClusters(t, c, 1, fastOptions())[0]
		servers, err := peers.ParseServers("ns1.deleg.example.com=192.0.2.1,ns2.deleg.example.com=192.0.2.2,ns3.other.example.net=192.0.2.3")
		if err != nil {
			t.Fatal(err)
		}
		rec, err := peers.DelegationRecord(cl.ns, "delegation", "provider", child, parent, servers, 300)
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.c.Create(t.Context(), rec); err != nil {
			t.Fatal(err)
		}
		want := []string{
			"gslb.deleg.example.com NS ns1.deleg.example.com,ns2.deleg.example.com,ns3.other.example.net",
			"ns1.deleg.example.com A 192.0.2.1",
			"ns2.deleg.example.com A 192.0.2.2",
		}
		read := func() (records, claims []string) {
			eps, err := c.ReadBack(t.Context(), parent)
			if err != nil {
				return []string{"error: " + err.Error()}, nil
			}
			for _, e := range eps {
				if claim, ok := registry.ParseTXT(e); ok {
					claims = append(claims, claim.Record.DNSName+" "+claim.Record.RecordType)
					continue
				}
				if e.RecordType == v1alpha1.RecordTypeTXT || v1alpha1.NormalizeName(e.DNSName) == parent {
					continue // the apex's own NS and SOA, leases
				}
				targets := slices.Clone(e.Targets)
				for i := range targets {
					targets[i] = v1alpha1.NormalizeName(targets[i])
				}
				slices.Sort(targets)
				records = append(records, v1alpha1.NormalizeName(e.DNSName)+" "+e.RecordType+" "+strings.Join(targets, ","))
			}
			slices.Sort(records)
			slices.Sort(claims)
			return records, claims
		}
		eventually(t, 60*time.Second, func() string {
			if r := ready(cl.get(t, "delegation")); r == nil || r.Status != metav1.ConditionTrue {
				return fmt.Sprintf("delegation: Ready %v", r)
			}
			records, claims := read()
			if msg := same(c.Name+" parent zone", records, want); msg != "" {
				return msg
			}
			return same("claims", claims, []string{"gslb.deleg.example.com NS", "ns1.deleg.example.com A", "ns2.deleg.example.com A"})
		})
		if err := cl.c.Delete(t.Context(), rec); err != nil {
			t.Fatal(err)
		}
		eventually(t, 60*time.Second, func() string {
			if err := cl.c.Get(t.Context(), client.ObjectKeyFromObject(rec), &v1alpha1.DNSRecord{}); err == nil {
				return "the record is not deleted yet"
			}
			records, claims := read()
			if len(records)+len(claims) > 0 {
				return fmt.Sprintf("after the delete the parent zone holds %v %v", records, claims)
			}
			return ""
		})
	})
}
