//go:build integration

package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord"
	"github.com/dnspolicy/dnspolicy-controller/pkg/batch"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// A zone written by a Kuadrant release before "version 1" (one TXT per record, owners joined by
// "&&"), on Route 53: the controller takes the legacy owners' records as theirs and joins them;
// prune-legacy deletes a legacy TXT only once each owner it names wrote a version-1 claim.
func TestPruneLegacyRoute53(t *testing.T) {
	f := newFixture(t, "prune-legacy-")
	ns := f.ns

	// What the old release left: app.example.com held by this cluster's owner and a Kuadrant
	// cluster's, and old.example.com by the Kuadrant cluster alone.
	shared := v1alpha1.NewEndpoint("app.example.com", "A", 60, kuadrant)
	appLegacy := legacyTXT("a", "app.example.com", ownerA+"&&"+ownerK)
	old := v1alpha1.NewEndpoint("old.example.com", "CNAME", 300, "lb.example.net")
	oldLegacy := legacyTXT("cname", "old.example.com", ownerK)
	f.write(t, nil, &batch.Changes{Create: []*v1alpha1.Endpoint{shared, appLegacy, old, oldLegacy}})

	opts := dnsrecord.DefaultOptions()
	opts.MinRecheck, opts.MaxRecheck = 300*time.Millisecond, 600*time.Millisecond
	stop := testenv.StartManagerIn(t, envs[0], ns, func(mgr ctrl.Manager) error {
		return app.AddControllers(mgr, app.Options{EnableRecordController: true}, factory(), opts)
	})
	f.record(t, "web", ownerA, "app.example.com", v1alpha1.NewEndpoint("app.example.com", "A", 60, "10.0.0.1"))
	// Held by a legacy claim, the record is an owner's, not a human's: the controller merges into it.
	testenv.Eventually(t, time.Minute, func() string {
		r := f.get(t, "web")
		if cond := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionTypeReady); cond == nil || cond.Status != metav1.ConditionTrue {
			return fmt.Sprintf("record not ready: %+v", r.Status.Conditions)
		}
		if !slices.Equal(r.Status.DomainOwners, []string{ownerA, ownerK}) {
			return fmt.Sprintf("domainOwners %v", r.Status.DomainOwners)
		}
		return ""
	})
	stop()
	z := registry.Read(f.read(t))
	if got := z.Endpoint(shared.Key()); got == nil || !slices.Equal(got.Targets, []string{"10.0.0.1", kuadrant}) {
		t.Fatalf("app.example.com is %v, want the Kuadrant cluster's target and ours", got)
	}
	if r := z.Record(shared.Key()); r.Claim(ownerA) == nil || r.Claim(ownerA).Wish == nil {
		t.Fatalf("the controller wrote no version-1 claim: %+v", r.Claims)
	}

	// The Kuadrant cluster has not migrated: prune-legacy keeps both.
	out := f.run(t, "prune-legacy", "--zone", zoneName)
	contains(t, "prune-legacy before migration", out, ownerK+" wrote no version-1 claim on A app.example.com (not migrated yet)")
	contains(t, "prune-legacy before migration", out, "no redundant legacy TXT in the zone: nothing to do")

	// It upgrades and writes its version-1 claim for app.example.com only.
	f.write(t, nil, &batch.Changes{Create: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(registry.TXTName(ownerK, "A", "app.example.com"), "TXT", 60,
		registry.FormatValue(map[string]string{registry.OwnerKey: ownerK, registry.VersionKey: registry.FormatVersion}))}})
	before := f.read(t)
	out = f.run(t, "prune-legacy", "--zone", f.zone.ID, "--dry-run")
	contains(t, "prune-legacy --dry-run", out, "deleting redundant legacy TXTs: 1 changes (ownership gate passed for "+ownerA+", "+ownerK+")")
	contains(t, "prune-legacy --dry-run", out, "  delete TXT kuadrant-a-app.example.com ")
	contains(t, "prune-legacy --dry-run", out, "keeping legacy TXT kuadrant-cname-old.example.com ")
	if got := f.read(t); len(got) != len(before) {
		t.Fatalf("the dry run changed the zone: %d record sets, then %d", len(before), len(got))
	}
	out = f.run(t, "prune-legacy", "--zone", zoneName)
	contains(t, "prune-legacy", out, "deleted 1 legacy TXTs")

	after := map[v1alpha1.EndpointKey]*v1alpha1.Endpoint{}
	for _, e := range f.read(t) {
		after[e.Key()] = e
	}
	for _, e := range before {
		got, gone := after[e.Key()], e.Key() == appLegacy.Key()
		switch {
		case gone && got != nil:
			t.Errorf("the redundant legacy TXT is still there: %v", got)
		case !gone && (got == nil || !got.SameValues(e)):
			t.Errorf("%s %s changed: %v, then %v", e.RecordType, e.DNSName, e, got)
		}
	}
	if len(after) != len(before)-1 {
		t.Errorf("%d record sets after pruning, want %d", len(after), len(before)-1)
	}
	z = registry.Read(f.read(t))
	if r := z.Record(old.Key()); r == nil || !slices.Equal(r.Owners(), []string{ownerK}) {
		t.Errorf("old.example.com after pruning: %+v", r)
	}
	contains(t, "owners", f.run(t, "owners", "old.example.com", "--secret", "provider"), "CNAME old.example.com (legacy claim: Kuadrant's format before version 1, TXT kuadrant-cname-old.example.com;")
	out = f.run(t, "prune-legacy", "--zone", zoneName)
	if strings.Contains(out, "delete") {
		t.Errorf("a second prune deletes again:\n%s", out)
	}
}
