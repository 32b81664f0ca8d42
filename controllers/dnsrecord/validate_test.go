package dnsrecord

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/plan"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

func TestValidateSpec(t *testing.T) {
	const root = "app.example.com"
	long := strings.Repeat("a", 63)
	// A name of 245 characters fits DNS, but not with the ownership TXT prefix in front of it.
	nearLimit := strings.Repeat(strings.Repeat("x", 40)+".", 5) + strings.Repeat("y", 24) + "." + root
	ok := v1alpha1.NewEndpoint(root, "A", 60, "10.0.0.1")
	cases := []struct {
		name  string
		ep    *v1alpha1.Endpoint
		field string // "" means valid
		says  string
	}{
		{"A with IPv4", ok, "", ""},
		{"AAAA with IPv6", v1alpha1.NewEndpoint(root, "AAAA", 60, "2001:db8::1"), "", ""},
		{"CNAME", v1alpha1.NewEndpoint(root, "CNAME", 60, "lb.example.net"), "", ""},
		{"wildcard", v1alpha1.NewEndpoint("*."+root, "A", 60, "10.0.0.1"), "", ""},
		{"largest TTL", v1alpha1.NewEndpoint("www."+root, "A", v1alpha1.DefaultMaxTTL, "10.0.0.1"), "", ""},
		{"largest weight", v1alpha1.NewEndpoint("w."+root, "A", 60, "10.0.0.1").WithSetIdentifier("a").WithProviderSpecific(v1alpha1.ProviderSpecificWeight, "255"), "", ""},
		{"A with a hostname", v1alpha1.NewEndpoint(root, "A", 60, "10.0.0.1", "lb.example.net"), "spec.endpoints[1].targets[1]", "is not an IPv4 address"},
		{"A with IPv6", v1alpha1.NewEndpoint(root, "A", 60, "2001:db8::1"), "spec.endpoints[1].targets[0]", "is not an IPv4 address"},
		{"AAAA with IPv4", v1alpha1.NewEndpoint(root, "AAAA", 60, "10.0.0.1"), "spec.endpoints[1].targets[0]", "is not an IPv6 address"},
		{"label over 63", v1alpha1.NewEndpoint(long+"b."+root, "A", 60, "10.0.0.1"), "spec.endpoints[1].dnsName", "more than the 63 a DNS label may have"},
		{"name over 253", v1alpha1.NewEndpoint(strings.Repeat(long+".", 4)+root, "A", 60, "10.0.0.1"), "spec.endpoints[1].dnsName", "more than the 253 a DNS name may have"},
		{"ownership TXT name over 253", v1alpha1.NewEndpoint(nearLimit, "A", 60, "10.0.0.1"), "spec.endpoints[1].dnsName", "the ownership TXT record kuadrant-"},
		{"ownership TXT label over 63", v1alpha1.NewEndpoint(strings.Repeat("c", 50)+"."+root, "AAAA", 60, "2001:db8::1"), "spec.endpoints[1].dnsName", "the ownership TXT record"},
		{"negative TTL", v1alpha1.NewEndpoint(root, "CNAME", -1, "lb.example.net"), "spec.endpoints[1].recordTTL", "outside 0..86400"},
		{"TTL over the cap", v1alpha1.NewEndpoint(root, "CNAME", v1alpha1.DefaultMaxTTL+1, "lb.example.net"), "spec.endpoints[1].recordTTL", "86401 is outside 0..86400 (the operator may raise the cap with --max-ttl)"},
		{"huge TTL", v1alpha1.NewEndpoint(root, "CNAME", v1alpha1.MaxTTL, "lb.example.net"), "spec.endpoints[1].recordTTL", "outside 0..86400"},
		{"weight over 255", v1alpha1.NewEndpoint("w."+root, "A", 60, "10.0.0.1").WithSetIdentifier("a").WithProviderSpecific(v1alpha1.ProviderSpecificWeight, "256"), "spec.endpoints[1].providerSpecific[0]", "weight 256 is more than 255, the largest weight every provider accepts"},
		{"weight of 2^64", v1alpha1.NewEndpoint("w."+root, "A", 60, "10.0.0.1").WithSetIdentifier("a").WithProviderSpecific(v1alpha1.ProviderSpecificWeight, "18446744073709551616"), "spec.endpoints[1].providerSpecific[0]", "is more than 255"},
		// Left to the backend, which refuses it in Kuadrant's words (invalid weight expected a value >= 0).
		{"negative weight", v1alpha1.NewEndpoint("w."+root, "A", 60, "10.0.0.1").WithSetIdentifier("a").WithProviderSpecific(v1alpha1.ProviderSpecificWeight, "-1"), "", ""},
		{"no targets", v1alpha1.NewEndpoint(root, "CNAME", 60), "spec.endpoints[1].targets", "0 targets, want 1 to 1000"},
		{"too many targets", v1alpha1.NewEndpoint(root, "AAAA", 60, manyIPv6(MaxTargets+1)...), "spec.endpoints[1].targets", "1001 targets, want 1 to 1000"},
		{"duplicate", v1alpha1.NewEndpoint(root, "A", 300, "10.0.0.2"), "spec.endpoints[1]", "the same record set as spec.endpoints[0]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			eps := []*v1alpha1.Endpoint{ok}
			if tc.ep != ok {
				eps = append(eps, tc.ep)
			}
			rec := &v1alpha1.DNSRecord{ObjectMeta: metav1.ObjectMeta{UID: "uid-1"}, Spec: v1alpha1.DNSRecordSpec{RootHost: root, Endpoints: eps}}
			err := validateSpec(rec, v1alpha1.DefaultMaxTTL)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("valid spec refused: %v", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.field+": ") || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("got %v\nwant a problem of %s saying %q", err, tc.field, tc.says)
			}
		})
	}
	// An operator who raised the cap (--max-ttl) may publish up to it, and DNS's largest TTL at most.
	for ttl, want := range map[v1alpha1.TTL]bool{v1alpha1.MaxTTL: true, v1alpha1.MaxTTL + 1: false} {
		rec := &v1alpha1.DNSRecord{Spec: v1alpha1.DNSRecordSpec{RootHost: root, Endpoints: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(root, "A", ttl, "10.0.0.1")}}}
		if err := validateSpec(rec, v1alpha1.MaxTTL); (err == nil) != want {
			t.Errorf("TTL %d with the cap at %d: %v", ttl, v1alpha1.MaxTTL, err)
		}
	}
	// The TXT case really is about the TXT: the record's own name fits.
	if nameProblem(nearLimit) != "" || nameProblem(registry.TXTName(ownerID(&v1alpha1.DNSRecord{ObjectMeta: metav1.ObjectMeta{UID: "uid-1"}}), "A", nearLimit)) == "" {
		t.Error("the near-limit name must fit alone and not with its ownership TXT prefix")
	}
}

func manyIPv6(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("2001:db8::%x", i+1)
	}
	return out
}

func TestUnpublishedConflicts(t *testing.T) {
	cname := v1alpha1.NewEndpoint("mixed.example.com", "CNAME", 300, "klb.mixed.example.com")
	leaf := v1alpha1.NewEndpoint("a.klb.mixed.example.com", "A", 60, "10.0.0.2")
	typeConflict := plan.Conflict{DNSName: "mixed.example.com", RecordType: "CNAME", Field: plan.FieldType, Ours: "CNAME", Published: "A", WinnerOwner: "owner-a"}
	ttlConflict := plan.Conflict{DNSName: "a.klb.mixed.example.com", RecordType: "A", Field: plan.FieldTTL, Ours: "60", Published: "300", WinnerOwner: "owner-a"}

	// Both published, one with the winner's TTL: Ready.
	if got := unpublishedConflicts([]*v1alpha1.Endpoint{cname, leaf}, &plan.Result{Published: []*v1alpha1.Endpoint{cname, leaf}, Conflicts: []plan.Conflict{ttlConflict}}); got != nil {
		t.Errorf("every key published: got %v", got)
	}
	// The CNAME lost to an A: only its conflict is reported for Ready.
	got := unpublishedConflicts([]*v1alpha1.Endpoint{cname, leaf}, &plan.Result{Published: []*v1alpha1.Endpoint{leaf}, Conflicts: []plan.Conflict{typeConflict, ttlConflict}})
	if len(got) != 1 || got[0] != typeConflict {
		t.Errorf("got %v, want the record-type conflict only", got)
	}
	// A key missing without a conflict is still reported.
	got = unpublishedConflicts([]*v1alpha1.Endpoint{cname, leaf}, &plan.Result{Published: []*v1alpha1.Endpoint{leaf}})
	if len(got) != 1 || got[0].DNSName != "mixed.example.com" || got[0].Published != "nothing" {
		t.Errorf("got %v, want the missing CNAME", got)
	}
}
