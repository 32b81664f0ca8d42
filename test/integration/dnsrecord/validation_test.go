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
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
)

// Bad input is refused before planning, naming the field: the bad records never reach the zone's
// batch, and the good records created with them in the same zone at the same moment are published.
func TestValidationBeforePlanning(t *testing.T) {
	store := inmemory.NewStore()
	const z = "valid.example.com"
	store.EnsureZone(z)
	cl := startClusters(t, 1, store, fastOptions(), nil)[0]
	cl.secret(t, z)

	label64 := strings.Repeat("l", 64)
	// 254 characters: within the CRD's 255, over DNS's 253.
	name254 := func(root string) string {
		pad := 254 - len(root) - 1
		var labels []string
		for pad > 0 {
			n := min(pad, 63)
			if pad-n == 1 { // never leave a one-character remainder for the dot
				n--
			}
			labels = append(labels, strings.Repeat("n", n))
			pad -= n + 1
		}
		return strings.Join(labels, ".") + "." + root
	}
	// 240 characters: fits DNS, but not with kuadrant-<hash8>-a- in front.
	name240 := func(root string) string {
		return strings.Repeat(strings.Repeat("t", 40)+".", 5) + strings.Repeat("u", 239-200-len(root)) + "." + root
	}
	ips := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("10.%d.%d.%d", i/65536, i/256%256, i%256)
		}
		return out
	}

	cases := []struct {
		name  string
		bad   func(root string) *v1alpha1.Endpoint
		field string
		says  string
	}{
		{"a-hostname", func(r string) *v1alpha1.Endpoint { return a("x."+r, 60, "lb.example.net") }, "spec.endpoints[1].targets[0]", "is not an IPv4 address"},
		{"aaaa-ipv4", func(r string) *v1alpha1.Endpoint { return v1alpha1.NewEndpoint("x."+r, "AAAA", 60, "10.0.0.1") }, "spec.endpoints[1].targets[0]", "is not an IPv6 address"},
		{"label-64", func(r string) *v1alpha1.Endpoint { return a(label64+"."+r, 60, "10.0.0.1") }, "spec.endpoints[1].dnsName", "more than the 63 a DNS label may have"},
		{"name-254", func(r string) *v1alpha1.Endpoint { return a(name254(r), 60, "10.0.0.1") }, "spec.endpoints[1].dnsName", "is 254 characters long, more than the 253"},
		{"txt-name", func(r string) *v1alpha1.Endpoint { return a(name240(r), 60, "10.0.0.1") }, "spec.endpoints[1].dnsName", "the ownership TXT record kuadrant-"},
		{"ttl-huge", func(r string) *v1alpha1.Endpoint { return a("x."+r, 2147483647, "10.0.0.1") }, "spec.endpoints[1].recordTTL", "2147483647 is outside 0..86400 (the operator may raise the cap with --max-ttl)"},
		{"ttl-negative", func(r string) *v1alpha1.Endpoint { return a("x."+r, -5, "10.0.0.1") }, "spec.endpoints[1].recordTTL", "-5 is outside 0..86400"},
		{"weight-256", func(r string) *v1alpha1.Endpoint {
			return a("x."+r, 60, "10.0.0.1").WithSetIdentifier("x").WithProviderSpecific(v1alpha1.ProviderSpecificWeight, "256")
		}, "spec.endpoints[1].providerSpecific[0]", "weight 256 is more than 255"},
		{"no-targets", func(r string) *v1alpha1.Endpoint { return a("x."+r, 60) }, "spec.endpoints[1].targets", "0 targets, want 1 to 1000"},
		{"many-targets", func(r string) *v1alpha1.Endpoint { return a("x."+r, 60, ips(1001)...) }, "spec.endpoints[1].targets", "1001 targets, want 1 to 1000"},
		{"duplicate", func(r string) *v1alpha1.Endpoint { return a(r, 300, "10.0.0.9") }, "spec.endpoints[1]", "the same record set as spec.endpoints[0]"},
	}
	var want []string
	for i, tc := range cases {
		// A good record beside each bad one, created together so they share the zone's cycles.
		good := fmt.Sprintf("good-%d.%s", i, z)
		cl.record(t, fmt.Sprintf("good-%d", i), good, a(good, 60, fmt.Sprintf("10.5.0.%d", i+1)))
		want = append(want, fmt.Sprintf("%s A 60 10.5.0.%d", good, i+1))
		root := tc.name + "." + z
		cl.record(t, tc.name, root, a(root, 60, "10.6.0.1"), tc.bad(root))
	}
	slices.Sort(want)
	for i := range cases {
		cl.waitReady(t, fmt.Sprintf("good-%d", i))
	}
	for _, tc := range cases {
		eventually(t, 10*time.Second, func() string {
			c := ready(cl.get(t, tc.name))
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonValidationError || !strings.HasPrefix(c.Message, tc.field+": ") || !strings.Contains(c.Message, tc.says) {
				return fmt.Sprintf("%s: Ready %v, want ValidationError naming %s and saying %q", tc.name, c, tc.field, tc.says)
			}
			return ""
		})
		if r := cl.get(t, tc.name); len(r.Finalizers) != 0 || r.Status.ZoneID != "" {
			t.Errorf("%s: a refused record touches no zone: finalizers %v, zone %q", tc.name, r.Finalizers, r.Status.ZoneID)
		}
	}
	// Only the good records, and their ownership TXTs, are in the zone.
	eventually(t, 10*time.Second, func() string { return same(records(t, store, z), want) })
	if n := txtCount(t, store, z); n != len(want) {
		t.Errorf("%d ownership TXTs for %d good records", n, len(want))
	}
	// A spec that cannot be published is not retried: a new generation starts the next pass.
	for _, tc := range cases {
		if n := passes(cl, tc.name); n > 3 {
			t.Errorf("%s: %v passes for a spec that did not change, want at most 3", tc.name, n)
		}
	}
	// Fixing the spec publishes it.
	r := cl.get(t, "ttl-huge")
	r.Spec.Endpoints[1].RecordTTL = 120
	if err := cl.c.Update(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	cl.waitReady(t, "ttl-huge")
}
