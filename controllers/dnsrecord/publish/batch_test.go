package publish

import (
	"reflect"
	"strings"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/batch"
	"github.com/dnspolicy/dnspolicy-controller/pkg/plan"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// keys renders changes as the keys and values each part names, for comparison.
func keys(c *batch.Changes) map[string][]string {
	out := map[string][]string{}
	part := func(name string, eps []*v1alpha1.Endpoint) {
		for _, e := range eps {
			out[name] = append(out[name], e.DNSName+" "+e.RecordType+" "+strings.Join(e.Targets, ","))
		}
	}
	part("create", c.Create)
	part("updateOld", c.UpdateOld)
	part("updateNew", c.UpdateNew)
	part("delete", c.Delete)
	part("require", c.Require)
	return out
}

// A batch's sum is pure given a zone: what the plans changed, from the value before the first to
// the value after the last, with the sets they require and do not change.
func TestBatchSum(t *testing.T) {
	web, api := a("web.example.com", "10.0.0.1"), a("api.example.com", "10.0.0.2")
	zone := []*v1alpha1.Endpoint{web}
	for _, tc := range []struct {
		name string
		// plans are applied one after another, each summed into the batch.
		plans []*batch.Changes
		want  map[string][]string
	}{
		{"nothing", nil, map[string][]string{}},
		{"create", []*batch.Changes{{Create: []*v1alpha1.Endpoint{api}}},
			map[string][]string{"create": {"api.example.com A 10.0.0.2"}}},
		{"update", []*batch.Changes{{UpdateOld: []*v1alpha1.Endpoint{web}, UpdateNew: []*v1alpha1.Endpoint{a("web.example.com", "10.0.0.9")}}},
			map[string][]string{"updateOld": {"web.example.com A 10.0.0.1"}, "updateNew": {"web.example.com A 10.0.0.9"}}},
		{"delete", []*batch.Changes{{Delete: []*v1alpha1.Endpoint{web}}},
			map[string][]string{"delete": {"web.example.com A 10.0.0.1"}}},
		{"a create then its delete cancel out", []*batch.Changes{{Create: []*v1alpha1.Endpoint{api}}, {Delete: []*v1alpha1.Endpoint{api}}},
			map[string][]string{}},
		{"two updates of one set are one, from the first old value to the last new one", []*batch.Changes{
			{UpdateOld: []*v1alpha1.Endpoint{web}, UpdateNew: []*v1alpha1.Endpoint{a("web.example.com", "10.0.0.8")}},
			{UpdateOld: []*v1alpha1.Endpoint{a("web.example.com", "10.0.0.8")}, UpdateNew: []*v1alpha1.Endpoint{a("web.example.com", "10.0.0.9")}},
		}, map[string][]string{"updateOld": {"web.example.com A 10.0.0.1"}, "updateNew": {"web.example.com A 10.0.0.9"}}},
		{"an update back to the value before is no change", []*batch.Changes{
			{UpdateOld: []*v1alpha1.Endpoint{web}, UpdateNew: []*v1alpha1.Endpoint{a("web.example.com", "10.0.0.8")}},
			{UpdateOld: []*v1alpha1.Endpoint{a("web.example.com", "10.0.0.8")}, UpdateNew: []*v1alpha1.Endpoint{web}},
		}, map[string][]string{}},
		{"a required set the batch leaves alone is required", []*batch.Changes{{Create: []*v1alpha1.Endpoint{api}, Require: []*v1alpha1.Endpoint{web}}},
			map[string][]string{"create": {"api.example.com A 10.0.0.2"}, "require": {"web.example.com A 10.0.0.1"}}},
		{"a required set the batch changes is held by its old value instead", []*batch.Changes{
			{Create: []*v1alpha1.Endpoint{api}, Require: []*v1alpha1.Endpoint{web}},
			{Delete: []*v1alpha1.Endpoint{web}},
		}, map[string][]string{"create": {"api.example.com A 10.0.0.2"}, "delete": {"web.example.com A 10.0.0.1"}}},
		{"sorted by key", []*batch.Changes{{Create: []*v1alpha1.Endpoint{a("b.example.com", "10.0.0.3"), a("a.example.com", "10.0.0.4")}}},
			map[string][]string{"create": {"a.example.com A 10.0.0.4", "b.example.com A 10.0.0.3"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := registry.Read(zone)
			b := newPendingBatch()
			for _, c := range tc.plans {
				// What the sum of the batch so far and this plan would be, before the plan is added.
				preview := b.sum(z, c)
				before := map[v1alpha1.EndpointKey]*v1alpha1.Endpoint{}
				for _, e := range append(append(append([]*v1alpha1.Endpoint{}, c.Create...), c.UpdateOld...), c.Delete...) {
					before[e.Key()] = z.Endpoint(e.Key())
				}
				if err := z.Apply(c); err != nil {
					t.Fatalf("plan does not apply to the zone: %v", err)
				}
				b.add(&planned{waiter: &waiter{req: Request{OwnerID: "owner"}}, plan: &plan.Result{Changes: c}}, before, z)
				if got, again := keys(preview), keys(b.sum(z, nil)); !reflect.DeepEqual(got, again) {
					t.Errorf("the sum with a plan (%v) differs from the sum after adding it (%v)", got, again)
				}
			}
			if got := keys(b.sum(z, nil)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("sum = %v, want %v", got, tc.want)
			}
		})
	}
}

// destructive tells removals (which are planned on a fresh read) from everything else.
func TestDestructive(t *testing.T) {
	web := a("web.example.com", "10.0.0.1", "10.0.0.2")
	txt := v1alpha1.NewEndpoint("web.example.com", v1alpha1.RecordTypeTXT, 300, "heritage=external-dns")
	for _, tc := range []struct {
		name    string
		changes batch.Changes
		want    bool
	}{
		{"create", batch.Changes{Create: []*v1alpha1.Endpoint{web}}, false},
		{"a target added", batch.Changes{UpdateOld: []*v1alpha1.Endpoint{a("web.example.com", "10.0.0.1")}, UpdateNew: []*v1alpha1.Endpoint{web}}, false},
		{"an ownership TXT deleted", batch.Changes{Delete: []*v1alpha1.Endpoint{txt}}, false},
		{"a record deleted", batch.Changes{Delete: []*v1alpha1.Endpoint{web}}, true},
		{"a target taken away", batch.Changes{UpdateOld: []*v1alpha1.Endpoint{web}, UpdateNew: []*v1alpha1.Endpoint{a("web.example.com", "10.0.0.1")}}, true},
	} {
		c := tc.changes
		if got := destructive([]*pendingBatch{{changes: &c}}); got != tc.want {
			t.Errorf("%s: destructive = %v, want %v", tc.name, got, tc.want)
		}
	}
}
