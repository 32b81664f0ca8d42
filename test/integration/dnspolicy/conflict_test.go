//go:build integration

package dnspolicy_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnspolicy"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
)

// Two clusters both want to be the default geo of one hostname. One owner's wish wins; the loser's
// gateway is still published (its geo and leaf are in the tree), so its record is Ready with
// Conflicted=True, and its policy stays Enforced, naming the conflict in its message and in
// recordConditions. The winner's policy is plainly enforced.
func TestLostDefaultGeoKeepsPolicyEnforced(t *testing.T) {
	store := inmemory.NewStore()
	const zone, host = "geo.example.com", "api.geo.example.com"
	store.EnsureZone(zone)
	var cls []*cluster
	for i, geo := range []string{"IE", "US"} {
		cl := startCluster(t, []string{"eu", "us"}[i], envs[i], store)
		cl.secret(t, zone)
		cl.gateway(t, "gw", []string{fmt.Sprintf("172.17.%d.1", i)}, listener{"api", host})
		p := cl.newPolicy("lb", "gw", "")
		p.Spec.LoadBalancing = &dnsv1.LoadBalancingSpec{Geo: geo, Weight: 120, DefaultGeo: true}
		cl.create(t, p)
		cls = append(cls, cl)
	}
	var loser, winner *cluster
	eventually(t, 40*time.Second, func() string {
		loser, winner = nil, nil
		for _, cl := range cls {
			rec := cl.record(t, "gw-api")
			if rec == nil {
				return "record not created yet"
			}
			if c := meta.FindStatusCondition(rec.Status.Conditions, v1alpha1.ConditionTypeReady); c == nil || c.Status != metav1.ConditionTrue {
				return fmt.Sprintf("%s: Ready %v: both gateways are published", cl.ns, c)
			}
			c := meta.FindStatusCondition(rec.Status.Conditions, v1alpha1.ConditionTypeConflicted)
			switch {
			case c == nil:
				return cl.ns + ": no Conflicted condition yet"
			case c.Status == metav1.ConditionTrue:
				loser = cl
			default:
				winner = cl
			}
		}
		if loser == nil || winner == nil {
			return fmt.Sprintf("want one loser and one winner, got loser %v winner %v", loser != nil, winner != nil)
		}
		return ""
	})
	msg := meta.FindStatusCondition(loser.record(t, "gw-api").Status.Conditions, v1alpha1.ConditionTypeConflicted).Message
	if !strings.Contains(msg, "klb."+host+" CNAME set default: targets wants ") {
		t.Errorf("the loser's Conflicted names the default geo set: %s", msg)
	}
	p := loser.policyIs(t, "lb", dnspolicy.ConditionEnforced, "True Enforced: DNSPolicy has been successfully enforced: gw-api: Conflicted: Another owner's value is published: ")
	rc := p.Status.RecordConditions[host]
	if len(rc) != 1 || rc[0].Type != v1alpha1.ConditionTypeConflicted || rc[0].Message != msg {
		t.Errorf("loser's recordConditions %+v, want only the record's Conflicted", p.Status.RecordConditions)
	}
	p = winner.policyIs(t, "lb", dnspolicy.ConditionEnforced, "True Enforced: DNSPolicy has been successfully enforced")
	if got := condition(p, dnspolicy.ConditionEnforced); got != "True Enforced: DNSPolicy has been successfully enforced" || len(p.Status.RecordConditions) != 0 {
		t.Errorf("winner: Enforced %q, recordConditions %v", got, p.Status.RecordConditions)
	}
}
