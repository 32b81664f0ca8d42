package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/batch"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

func (c *cli) pruneLegacyCommand() *cobra.Command {
	var f zoneFlags
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "prune-legacy --zone ZONE",
		Short: "Delete Kuadrant's pre-version-1 ownership TXTs where version-1 claims replaced them",
		Long: `prune-legacy deletes from ZONE the ownership TXTs that Kuadrant's dns-operator wrote before its
"version 1" format (kuadrant-<type>-<name>, one per record, owners joined by "&&"), where they are
redundant: every owner each one names has written its own version-1 claim for the same record.
Controllers read legacy TXTs as claims of their owners but never write or delete them; once each
owner runs a release that writes version-1 claims, they say nothing more. A legacy TXT of an owner
that has not migrated is kept and listed. The batch must pass the controller's ownership gate, and
requires the version-1 claims it relies on, so an owner leaving at that moment makes it fail
instead. --dry-run prints the exact changes and changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.zone == "" {
				return errors.New("--zone is required (a zone ID or domain)")
			}
			kc, err := c.client()
			if err != nil {
				return err
			}
			t, err := c.resolve(cmd.Context(), kc, "", f)
			if err != nil {
				return err
			}
			return pruneLegacy(cmd.Context(), c.out, t, dryRun)
		},
	}
	f.bind(cmd, "zone ID or domain to prune (required)", "publishes into the zone")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the changes without applying them")
	return cmd
}

func pruneLegacy(ctx context.Context, w io.Writer, t *target, dryRun bool) error {
	fmt.Fprintln(w, t.header())
	for attempt := 1; ; attempt++ {
		z, view, err := t.read(ctx)
		if err != nil {
			return err
		}
		s, kept, err := legacyPrune(z)
		if err != nil {
			return err
		}
		if attempt == 1 {
			for _, line := range kept {
				fmt.Fprintln(w, line)
			}
		}
		if s.changes.Empty() {
			fmt.Fprintln(w, "no redundant legacy TXT in the zone: nothing to do")
			return nil
		}
		if !t.provider.Capabilities().Fits(s.changes) {
			return fmt.Errorf("%s is %d changes, more than one call of the %s backend takes; nothing was changed", s.what, s.changes.Len(), t.provider.Name())
		}
		printStep(w, s)
		if dryRun {
			fmt.Fprintln(w, "dry run: nothing was changed")
			return nil
		}
		applied, err := applySteps(ctx, t, view.State, []step{s})
		if err != nil && providers.KindOf(err) == providers.StaleView && applied == 0 && attempt < staleRetries {
			fmt.Fprintf(w, "the zone changed while planning (%v); planning again\n", err)
			continue
		}
		if err != nil {
			return err
		}
		if err := t.provider.AwaitPropagation(ctx, t.zone, view.State); err != nil {
			return fmt.Errorf("applied, but waiting for the changes to propagate: %w", err)
		}
		fmt.Fprintf(w, "deleted %d legacy TXTs\n", len(s.changes.Delete))
		return nil
	}
}

// legacyPrune plans the deletion of the zone's redundant legacy TXTs, requiring the version-1
// claims that make each redundant, checked by the ownership gate for the owners they name. kept
// says why each other legacy TXT stays.
func legacyPrune(z *registry.Zone) (step, []string, error) {
	changes := &batch.Changes{}
	var owners, kept []string
	for _, txt := range z.LegacyTXTs() {
		claims := z.LegacyTXT(txt.Key())
		r := z.Record(claims[0].Record)
		var missing []string
		for _, c := range claims {
			if r.Claim(c.Owner) == nil {
				missing = append(missing, c.Owner)
			}
		}
		if len(missing) > 0 {
			kept = append(kept, fmt.Sprintf("keeping legacy %s: %s wrote no version-1 claim on %s (not migrated yet)",
				formatEndpoint(txt), strings.Join(missing, ", "), keyString(claims[0].Record)))
			continue
		}
		changes.Delete = append(changes.Delete, txt)
		for _, c := range claims {
			if v1 := r.Claim(c.Owner).TXT; !slices.Contains(changes.Require, v1) {
				changes.Require = append(changes.Require, v1)
			}
			if !slices.Contains(owners, c.Owner) {
				owners = append(owners, c.Owner)
			}
		}
	}
	slices.Sort(owners)
	s := step{what: "deleting redundant legacy TXTs", owners: owners, changes: changes}
	if changes.Empty() {
		return s, kept, nil
	}
	if err := z.Check(owners, nil, changes); err != nil {
		return s, kept, fmt.Errorf("the ownership gate refuses the pruning, nothing was changed: %w", err)
	}
	return s, kept, nil
}

// legacyLine describes a legacy claim for owners and explain.
func legacyLine(c *registry.Claim) string {
	return fmt.Sprintf("(legacy claim: Kuadrant's format before version 1, TXT %s; wish not recorded; prune-legacy deletes it once %s writes a version-1 claim)",
		v1alpha1.NormalizeName(c.TXT.DNSName), c.Owner)
}
