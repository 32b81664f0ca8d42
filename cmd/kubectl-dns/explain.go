package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/batch"
	"github.com/dnspolicy/dnspolicy-controller/pkg/plan"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

func (c *cli) explainCommand() *cobra.Command {
	var output string
	var secrets clusterSecretsFlags
	cmd := c.hostCommand("explain HOST", "Explain what the zone holds at HOST: who answers which clients, claimants, wishes, winners, conflicts, expired leases, human records",
		func(ctx context.Context, w io.Writer, t *target, z *registry.Zone, host string, now time.Time) error {
			return explainAs(output, w, t, z, delegationOf(ctx, t, secrets), host, now)
		})
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table (all of the explanation, the answers as a table), svg (a picture of the answers) or html (a page with the picture and the table)")
	cmd.Flags().StringVar(&secrets.namespace, "cluster-secret-namespace", defaultClusterSecretNamespace, "on a delegation primary: namespace of the kubeconfig Secrets through which it reads other clusters (its --cluster-secret-namespace), read to name the clusters of an authoritative record's contributors; empty: none is read")
	cmd.Flags().StringVar(&secrets.label, "cluster-secret-label", defaultClusterSecretLabel, "label, set to \"true\", of those Secrets (the primary's --cluster-secret-label)")
	cmd.PreRunE = func(*cobra.Command, []string) error {
		if output != "table" && output != "svg" && output != "html" {
			return fmt.Errorf("-o %s: want table, svg or html", output)
		}
		return nil
	}
	return cmd
}

// explainAs prints explain's output for host in one format: table (the whole explanation), svg or
// html (the answers alone).
func explainAs(output string, w io.Writer, t *target, z *registry.Zone, d *delegation, host string, now time.Time) error {
	switch output {
	case "svg", "html":
		view, wh := answersOf(t, z, d, host)
		title := "Who answers " + view.Host
		if output == "svg" {
			return writeSVG(w, title, view, wh)
		}
		return writeHTML(w, title, t.header(), view, wh)
	}
	printExplain(w, t, z, d, host, now)
	return nil
}

// answersOf is the answers view of host in the zone as read, with what is known of its owners and,
// where an authoritative record answers, of its contributors (d, nil when not looked for).
func answersOf(t *target, z *registry.Zone, d *delegation, host string) (answerView, whose) {
	zoneName := v1alpha1.NormalizeName(t.zone.DNSName)
	view := answers(z, zoneName, host)
	var owners []string
	for _, r := range view.Rows {
		owners = append(owners, r.Owners...)
	}
	wh := describeOwners(z, zoneName, owners, t.records, t.cluster)
	wh.delegated = d
	return view, wh
}

// ownerPlan is what the controller's planner says about one owner that wants what its claims say.
type ownerPlan struct {
	conflicts []plan.Conflict
	// pending are the changes its next pass would make at the explained names.
	pending []string
	err     error
}

// planOwner plans owner as its controller would with its claims as its wishes: the conflicts it
// reports are the fields it loses and to whom, and any change it would make means the zone is not
// yet settled there.
func planOwner(z *registry.Zone, zoneName, owner string, names map[string]bool, leases map[string]string, expired []string) ownerPlan {
	var desired []*v1alpha1.Endpoint
	for _, n := range z.Names(owner) {
		for _, r := range z.AtName(n) {
			c := r.Claim(owner)
			if c == nil {
				continue
			}
			w := claimedWish(r, c)
			if w == nil && !c.Legacy {
				// Several Kuadrant-form claims on one record: which targets are whose cannot be
				// told, so each owner is taken to want the record as published, as the claimants'
				// lines say. Left out, the plan would withdraw the owner's claim there, which its
				// controller, knowing its wish, never does.
				w = r.Endpoint
			}
			if w != nil {
				desired = append(desired, w)
			}
		}
	}
	if len(desired) == 0 {
		return ownerPlan{}
	}
	res, err := plan.Plan(plan.Input{
		OwnerID: owner, ZoneName: zoneName, Zone: z, Previous: desired, Desired: desired,
		Lease: leases[owner], Expired: expired,
		Local: func(o string) bool { return leases[o] != "" && leases[o] == leases[owner] },
	})
	if err != nil {
		return ownerPlan{err: err}
	}
	var p ownerPlan
	for _, c := range res.Conflicts {
		if names[v1alpha1.NormalizeName(c.DNSName)] {
			p.conflicts = append(p.conflicts, c)
		}
	}
	p.pending = pendingAt(res.Changes, names)
	return p
}

// pendingAt describes the changes of a batch that concern the names (records there, and the
// ownership claims on them).
func pendingAt(c *batch.Changes, names map[string]bool) []string {
	at := func(e *v1alpha1.Endpoint) bool {
		if cl, ok := registry.ParseTXT(e); ok {
			return names[cl.Record.DNSName]
		}
		return names[e.Key().DNSName]
	}
	var out []string
	for i := range c.UpdateOld {
		// An owner's claim rewritten in another form (stating its wish or not) changes no answer,
		// and a Kuadrant cluster, which the plan takes for one of ours, never writes it.
		if old, ok := registry.ParseTXT(c.UpdateOld[i]); ok {
			if updated, ok := registry.ParseTXT(c.UpdateNew[i]); ok && updated.Owner == old.Owner && updated.Record == old.Record {
				continue
			}
		}
		if at(c.UpdateOld[i]) {
			out = append(out, fmt.Sprintf("update %s: %s -> %s", keyString(c.UpdateOld[i].Key()), valueString(c.UpdateOld[i]), valueString(c.UpdateNew[i])))
		}
	}
	for _, e := range c.Delete {
		if at(e) {
			out = append(out, "delete "+formatEndpoint(e))
		}
	}
	for _, e := range c.Create {
		if at(e) {
			out = append(out, "create "+formatEndpoint(e))
		}
	}
	return out
}

func printExplain(w io.Writer, t *target, z *registry.Zone, d *delegation, host string, now time.Time) {
	zoneName := v1alpha1.NormalizeName(t.zone.DNSName)
	names := hostNames(z, zoneName, host)
	nameSet := map[string]bool{}
	for _, n := range names {
		nameSet[n] = true
	}
	owners := ownersAt(z, names)
	fmt.Fprintln(w, t.header())
	fmt.Fprintf(w, "names: %s\n", strings.Join(names, ", "))
	fmt.Fprintln(w)
	view, described := answersOf(t, z, d, host)
	printAnswers(w, view, described)
	if d != nil {
		for _, n := range d.notes {
			fmt.Fprintln(w, "  ! "+n)
		}
	}

	// Leases, as far as one reading tells: the age is an estimate on this machine's clock.
	leases := map[string]string{}
	expired := map[string]bool{}
	for _, o := range owners {
		for _, k := range leaseKeys(z, o) {
			leases[o] = k
			if st := readLease(z, zoneName, k, now); st.looksExpired {
				expired[o] = true
			}
		}
	}
	plans := map[string]ownerPlan{}
	for _, o := range owners {
		plans[o] = planOwner(z, zoneName, o, nameSet, leases, nil)
	}
	named := map[v1alpha1.EndpointKey]string{}
	for _, o := range owners {
		for _, e := range ownerNamed(z, o) {
			named[e.Key()] = o
		}
	}

	for _, n := range names {
		for _, r := range z.AtName(n) {
			fmt.Fprintf(w, "\n%s\n", keyString(r.Key))
			explainRecord(w, r, plans, expired, named)
			explainMerged(w, d, r)
		}
		// Owners' statements about the name sit at names of their own.
		for _, o := range owners {
			if h := healthAt(z, o, n); h != nil {
				fmt.Fprintf(w, "\n%s\n  published: %s\n  health statement of %s about %s (its statement about itself; only it changes it)\n", keyString(h.Key()), valueString(h), o, n)
			}
		}
	}

	fmt.Fprintln(w)
	var exp []string
	for _, o := range owners {
		if expired[o] {
			exp = append(exp, o)
		}
	}
	if len(exp) == 0 {
		fmt.Fprintln(w, "leases: no owner's lease looks expired (estimate by this machine's clock)")
	} else {
		fmt.Fprintf(w, "leases: the lease of %s looks expired (estimate by this machine's clock); the surviving controllers withdraw such an owner once they have seen its lease unchanged for its duration, or run: kubectl dns remove-owner OWNER --zone %s\n", strings.Join(exp, ", "), t.zone.ID)
	}
	if len(exp) > 0 {
		// What expiry would do here: the plan of the first live owner that would change something
		// once it counts the expired owners gone (any survivor's pass does the same).
		for _, o := range owners {
			if expired[o] {
				continue
			}
			if p := planOwner(z, zoneName, o, nameSet, leases, exp); len(p.pending) > 0 {
				fmt.Fprintf(w, "once those leases are judged expired, %s's next pass would change:\n", o)
				for _, line := range p.pending {
					fmt.Fprintf(w, "  %s\n", line)
				}
				break
			}
		}
	}
	settled := true
	for _, o := range owners {
		p := plans[o]
		if p.err != nil {
			settled = false
			fmt.Fprintf(w, "owner %s cannot be planned: %v\n", o, p.err)
		}
		if len(p.pending) > 0 {
			settled = false
			fmt.Fprintf(w, "owner %s's next pass would change:\n", o)
			for _, line := range p.pending {
				fmt.Fprintf(w, "  %s\n", line)
			}
		}
	}
	if settled {
		fmt.Fprintln(w, "settled: with every lease counted live, planning every owner with what its claims wish changes nothing here")
	}
}

func explainRecord(w io.Writer, r *registry.Record, plans map[string]ownerPlan, expired map[string]bool, named map[v1alpha1.EndpointKey]string) {
	if r.Endpoint != nil {
		fmt.Fprintf(w, "  published: %s\n", valueString(r.Endpoint))
	} else {
		fmt.Fprintln(w, "  published: nothing (claimed, but its claimants lost the name's record-type conflict or are blocked)")
	}
	if !r.Owned() {
		if o, ok := named[r.Key]; ok {
			fmt.Fprintf(w, "  owner-named record of %s (its statement about itself; only it changes it)\n", o)
			return
		}
		fmt.Fprintln(w, "  no owner claims it: a human's (or another tool's) record, which no controller changes")
		return
	}
	fmt.Fprintln(w, "  claimants:")
	for _, c := range r.Claims {
		line := "    " + c.Owner
		if c.Wish != nil {
			line += " wants " + valueString(c.Wish)
		} else if c.Legacy {
			line += " " + legacyLine(c)
		} else {
			line += " (Kuadrant-format claim: wish not recorded; taken to be the record as published)"
		}
		if expired[c.Owner] {
			line += " [lease looks expired]"
		}
		fmt.Fprintln(w, line)
	}
	var lines []string
	for _, c := range r.Claims {
		for _, cf := range plans[c.Owner].conflicts {
			if (v1alpha1.EndpointKey{DNSName: v1alpha1.NormalizeName(cf.DNSName), RecordType: cf.RecordType, SetIdentifier: cf.SetIdentifier}) != r.Key {
				continue
			}
			winner := "the wish of " + cf.WinnerOwner + " (it holds the published value)"
			if cf.WinnerOwner == "" {
				winner = "blocked by a record no owner claims (a human's)"
			}
			lines = append(lines, fmt.Sprintf("    %s: %s wants %s, %s is published, %s", cf.Field, c.Owner, dash(cf.Ours), dash(cf.Published), winner))
		}
	}
	slices.Sort(lines)
	if len(lines) == 0 {
		fmt.Fprintln(w, "  conflicts: none (every readable wish is what is published; A, AAAA, NS and multi-target CNAMEs hold the union of the claimants' targets)")
		return
	}
	fmt.Fprintln(w, "  conflicts:")
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}
