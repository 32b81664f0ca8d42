package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/plan"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// cleanupPreviewOwner plans the preview: an owner ID that claims nothing in any zone, so that every
// change its plan makes is the cleanup's.
const cleanupPreviewOwner = "kubectl-dns-cleanup-preview"

// printCleanup prints, per name, what the controllers of the groups that stay active remove from
// the zone once the TXT lists next (Kuadrant's cleanup, package plan's Input.CleanupGroups): the
// records only inactive groups' owners hold, the targets they alone put in records others hold, and
// their ownership TXTs. It is the plan an active controller makes on its next quiet pass, made here
// for an owner that claims nothing; at a name where the cleaning controller itself claims a record
// it merges its own wish too, which this preview leaves out. Nothing is cleaned while no group is
// active.
func printCleanup(w io.Writer, zone string, eps []*v1alpha1.Endpoint, next []string) error {
	if len(next) == 0 {
		fmt.Fprintln(w, "no group stays active: no controller removes what the groups published (their records stay)")
		return nil
	}
	res, err := plan.Plan(plan.Input{OwnerID: cleanupPreviewOwner, ZoneName: zone, Current: eps, CleanupGroups: next})
	if err != nil {
		return fmt.Errorf("working out what the active groups' controllers remove: %w", err)
	}
	c := res.Changes
	if c.Empty() {
		fmt.Fprintf(w, "the active groups' controllers (%s) remove nothing: no record of another group is in the zone\n", strings.Join(next, ", "))
		return nil
	}
	fmt.Fprintf(w, "then the active groups' controllers (%s) remove, at their next quiet pass:\n", strings.Join(next, ", "))
	byName := map[string][]string{}
	add := func(name, line string) { byName[name] = append(byName[name], line) }
	for i, old := range c.UpdateOld {
		gone := slices.DeleteFunc(slices.Clone(old.Targets), func(t string) bool { return slices.Contains(c.UpdateNew[i].Targets, t) })
		add(old.Key().DNSName, fmt.Sprintf("    targets %s from %s (%s stay)", strings.Join(gone, ","), keyString(old.Key()), strings.Join(c.UpdateNew[i].Targets, ",")))
	}
	// Records first, then the claims that go with them.
	for _, e := range c.Delete {
		if _, ok := registry.ParseTXT(e); !ok {
			add(e.Key().DNSName, fmt.Sprintf("    %s %s", keyString(e.Key()), valueString(e)))
		}
	}
	for _, e := range c.Delete {
		if claim, ok := registry.ParseTXT(e); ok {
			add(claim.Record.DNSName, fmt.Sprintf("    the claim of owner %s (group %s) on %s", claim.Owner, claim.Group(), keyString(claim.Record)))
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %s:\n", n)
		for _, l := range byName[n] {
			fmt.Fprintln(w, l)
		}
	}
	return nil
}
