package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/batch"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/pkg/plan"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// staleRetries is how often remove-owner plans again when the zone changed between its read and its
// write (a controller published meanwhile).
const staleRetries = 3

func (c *cli) removeOwnerCommand() *cobra.Command {
	var f zoneFlags
	var dryRun bool
	var holder string
	cmd := &cobra.Command{
		Use:   "remove-owner OWNER --zone ZONE",
		Short: "Withdraw a dead owner's claims, targets, sole records and owner-named records from a zone",
		Long: `remove-owner withdraws OWNER from ZONE as OWNER itself would when its last DNSRecord is deleted:
its ownership claims go, its targets leave the records it shares, and records only it claims are
deleted; its owner-named records (health statements) are deleted too. With --lease CLUSTER_ID the
lease record of that cluster goes as well, once no claim left in the zone names it. Records of
other owners and records no owner claims (a human's) are never touched: the batch must pass the
controller's ownership gate with OWNER as its only owner. --dry-run prints the exact changes and
changes nothing.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.zone == "" {
				return errors.New("--zone is required (a zone ID or domain)")
			}
			if err := registry.ValidOwnerID(args[0]); err != nil {
				return err
			}
			kc, err := c.client()
			if err != nil {
				return err
			}
			if err := notLocal(cmd.Context(), kc, args[0]); err != nil {
				return err
			}
			t, err := c.resolve(cmd.Context(), kc, "", f)
			if err != nil {
				return err
			}
			return removeOwner(cmd.Context(), c.out, t, args[0], holder, dryRun, c.now())
		},
	}
	f.bind(cmd, "zone ID or domain to withdraw the owner from (required)", "publishes into the zone")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the changes without applying them")
	cmd.Flags().StringVar(&holder, "lease", "", "also delete the lease record of this cluster ID (the UID of its kube-system namespace), once no claim names it")
	return cmd
}

// warnLive warns when the owner's lease looks live: its controller would publish it again.
func warnLive(w io.Writer, z *registry.Zone, zoneName, owner string, now time.Time) {
	for _, k := range leaseKeys(z, owner) {
		if st := readLease(z, zoneName, k, now); st.found && !st.looksExpired {
			fmt.Fprintf(w, "warning: the lease of %s (holder %s) looks live, %s: if its controller runs, it publishes %s again\n", owner, st.lease.Holder, st.ageText(), owner)
		}
	}
}

// notLocal refuses to withdraw an owner that is a DNSRecord of this cluster: its controller would
// publish it again at its next pass, and deleting the record is how it leaves for good.
func notLocal(ctx context.Context, kc client.Client, owner string) error {
	list := &v1alpha1.DNSRecordList{}
	if err := kc.List(ctx, list); err != nil {
		// Without the right to list every namespace the check cannot be made; the zone still can.
		return nil //nolint:nilerr // on purpose, as said
	}
	for _, r := range list.Items {
		if r.Status.OwnerID == owner {
			return fmt.Errorf("owner %s is DNSRecord %s/%s of this cluster: delete that record instead (its controller withdraws it), nothing was changed", owner, r.Namespace, r.Name)
		}
	}
	return nil
}

// step is one batch and the owners the gate checks it for.
type step struct {
	what    string
	owners  []string
	changes *batch.Changes
}

func removeOwner(ctx context.Context, w io.Writer, t *target, owner, holder string, dryRun bool, now time.Time) error {
	fmt.Fprintln(w, t.header())
	for attempt := 1; ; attempt++ {
		z, view, err := t.read(ctx)
		if err != nil {
			return err
		}
		if attempt == 1 {
			warnLive(w, z, v1alpha1.NormalizeName(t.zone.DNSName), owner, now)
		}
		steps, err := withdrawal(z, v1alpha1.NormalizeName(t.zone.DNSName), owner, holder)
		if err != nil {
			return err
		}
		total := 0
		for _, s := range steps {
			if !t.provider.Capabilities().Fits(s.changes) {
				return fmt.Errorf("%s is %d changes, more than one call of the %s backend takes; nothing was changed", s.what, s.changes.Len(), t.provider.Name())
			}
			total += s.changes.Len()
		}
		if total == 0 {
			fmt.Fprintf(w, "owner %s has nothing in the zone: nothing to do\n", owner)
			return nil
		}
		for _, s := range steps {
			printStep(w, s)
		}
		if dryRun {
			fmt.Fprintln(w, "dry run: nothing was changed")
			return nil
		}
		applied, err := applySteps(ctx, t, view.State, steps)
		if err != nil && providers.KindOf(err) == providers.StaleView && applied == 0 && attempt < staleRetries {
			fmt.Fprintf(w, "the zone changed while planning (%v); planning again\n", err)
			continue
		}
		if err != nil {
			return fmt.Errorf("applied %d of %d batches: %w", applied, len(steps), err)
		}
		if err := t.provider.AwaitPropagation(ctx, t.zone, view.State); err != nil {
			return fmt.Errorf("applied, but waiting for the changes to propagate: %w", err)
		}
		fmt.Fprintf(w, "applied %d changes in %d batches\n", total, applied)
		return nil
	}
}

func applySteps(ctx context.Context, t *target, state providers.State, steps []step) (int, error) {
	applied := 0
	for _, s := range steps {
		if s.changes.Empty() {
			continue
		}
		if err := t.provider.Apply(ctx, t.zone, state, s.changes); err != nil {
			return applied, err
		}
		applied++
	}
	return applied, nil
}

// withdrawal plans the batches that take owner out of the zone: the controller's plan of owner with
// nothing desired (what owner's own controller writes when its last record is deleted), plus the
// deletion of its owner-named records, checked by the ownership gate with owner as the only owner;
// then, for holder, the deletion of that cluster's lease record, checked with holder as the owner
// (the lease is named by its hash). z is left as the zone after the batches.
func withdrawal(z *registry.Zone, zoneName, owner, holder string) ([]step, error) {
	var previous []*v1alpha1.Endpoint
	for _, n := range z.Names(owner) {
		for _, r := range z.AtName(n) {
			if c := r.Claim(owner); c != nil {
				if w := claimedWish(r, c); w != nil {
					previous = append(previous, w)
				}
			}
		}
	}
	res, err := plan.Plan(plan.Input{OwnerID: owner, ZoneName: zoneName, Zone: z, Previous: previous})
	if err != nil {
		return nil, err
	}
	changes := res.Changes
	changes.Delete = append(changes.Delete, ownerNamed(z, owner)...)
	if err := z.Check([]string{owner}, nil, changes); err != nil {
		return nil, fmt.Errorf("the ownership gate refuses the withdrawal of %s, nothing was changed: %w", owner, err)
	}
	steps := []step{{what: "withdrawing owner " + owner, owners: []string{owner}, changes: changes}}
	if holder == "" {
		return steps, nil
	}
	if err := z.Apply(changes); err != nil {
		return nil, err
	}
	key := lease.Key(holder)
	var naming []string
	for _, r := range z.Records() {
		for _, c := range r.Claims {
			if c.Lease() == key && !slices.Contains(naming, c.Owner) {
				naming = append(naming, c.Owner)
			}
		}
	}
	if len(naming) > 0 {
		return nil, fmt.Errorf("the lease of cluster %s is still named by claims of %s: remove those owners first (nothing was changed)", holder, strings.Join(naming, ", "))
	}
	ep := z.Endpoint(v1alpha1.EndpointKey{DNSName: lease.RecordName(holder, zoneName), RecordType: v1alpha1.RecordTypeTXT})
	if l, ok := lease.Parse(ep); !ok || l.Holder != holder {
		return nil, fmt.Errorf("no lease record of cluster %s (%s) in the zone (nothing was changed)", holder, lease.RecordName(holder, zoneName))
	}
	leaseBatch := &batch.Changes{Delete: []*v1alpha1.Endpoint{ep}}
	if err := z.Check([]string{holder}, nil, leaseBatch); err != nil {
		return nil, fmt.Errorf("the ownership gate refuses deleting the lease of %s, nothing was changed: %w", holder, err)
	}
	return append(steps, step{what: "deleting the lease of cluster " + holder, owners: []string{holder}, changes: leaseBatch}), nil
}

func printStep(w io.Writer, s step) {
	c := s.changes
	fmt.Fprintf(w, "%s: %d changes (ownership gate passed for %s)\n", s.what, c.Len(), strings.Join(s.owners, ", "))
	for i := range c.UpdateOld {
		fmt.Fprintf(w, "  update %s: %s -> %s\n", keyString(c.UpdateOld[i].Key()), valueString(c.UpdateOld[i]), valueString(c.UpdateNew[i]))
	}
	for _, e := range c.Delete {
		fmt.Fprintf(w, "  delete %s\n", formatEndpoint(e))
	}
	for _, e := range c.Create {
		fmt.Fprintf(w, "  create %s\n", formatEndpoint(e))
	}
	for _, e := range c.Require {
		fmt.Fprintf(w, "  require unchanged %s\n", formatEndpoint(e))
	}
}
