//go:build integration

package main

import (
	"slices"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/groups"
)

// The failover-group commands run as a user runs them (kubeconfig, a provider Secret) against the
// Route 53 emulator: the TXT they write is the one Kuadrant's CLI writes, and the record controller
// reads its groups alike.
func TestActiveGroupCommandsRoute53(t *testing.T) {
	f := newFixture(t, "groups-")
	txt := func() *v1alpha1.Endpoint { return groups.FindTXT(f.read(t), zoneName) }

	out := f.run(t, "get-active-groups", "--zone", zoneName, "--secret", "provider")
	contains(t, "get-active-groups on an empty zone", out, "no kuadrant-active-groups.example.com TXT: no group is active")

	f.run(t, "add-active-group", "east", "--zone", zoneName, "--secret", "provider")
	f.run(t, "add-active-group", "west", "--zone", zoneName, "--secret", "provider")
	got := txt()
	if got == nil || got.RecordTTL != groups.RecordTTL || !slices.Equal(got.Targets, v1alpha1.Targets{`"version=1;groups=east&&west"`}) {
		t.Fatalf("TXT after adding east and west: %v", got)
	}
	contains(t, "get-active-groups", f.run(t, "get-active-groups", "--zone", zoneName, "--secret", "provider"), "active groups: east, west")

	out = f.run(t, "remove-active-group", "east", "--zone", zoneName, "--secret", "provider", "--dry-run")
	contains(t, "remove-active-group --dry-run", out, "dry run: nothing was changed")
	if got := txt(); got == nil || got.Targets[0] != `"version=1;groups=east&&west"` {
		t.Fatalf("the dry run changed the TXT: %v", got)
	}
	f.run(t, "remove-active-group", "east", "--zone", zoneName, "--secret", "provider")
	if got := txt(); got == nil || got.Targets[0] != `"version=1;groups=west"` {
		t.Fatalf("TXT after removing east: %v", got)
	}
	f.run(t, "remove-active-group", "west", "--zone", zoneName, "--secret", "provider")
	if got := txt(); got != nil {
		t.Fatalf("TXT left after its last group: %v", got)
	}
}
