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
	"github.com/dnspolicy/dnspolicy-controller/pkg/groups"
)

// The failover-group commands edit a zone's kuadrant-active-groups TXT (package groups) as
// Kuadrant's CLI does (cmd/plugin/failover): straight through the provider, with no ownership TXT,
// for the TXT belongs to no owner.

func (c *cli) addActiveGroupCommand() *cobra.Command {
	var f zoneFlags
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "add-active-group GROUP --zone ZONE",
		Short: "Make a failover group active in a zone: its controllers' records are published",
		Long: `add-active-group adds GROUP to the zone's kuadrant-active-groups TXT ("version=1;groups=a&&b",
created when missing, as Kuadrant's CLI writes it). Controllers started with --group GROUP then
publish their records in the zone at their next pass. --dry-run prints the change and changes nothing.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] == "" {
				return errors.New("the group is empty")
			}
			if err := groups.Validate(args[0]); err != nil {
				return err
			}
			return c.editActiveGroups(cmd.Context(), f, dryRun, func(gs []string) []string { return groups.With(gs, args[0]) })
		},
	}
	f.bind(cmd, "zone ID or domain whose active groups to change (required)", "publishes into the zone")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the change without applying it")
	return cmd
}

func (c *cli) removeActiveGroupCommand() *cobra.Command {
	var f zoneFlags
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "remove-active-group GROUP --zone ZONE",
		Short: "Make a failover group inactive in a zone: its controllers stop publishing there",
		Long: `remove-active-group takes GROUP out of the zone's kuadrant-active-groups TXT, and deletes the TXT
when no group is left, as Kuadrant's CLI does. Controllers started with --group GROUP then write
nothing to the zone (their records say Ready=False MemberOfInactiveGroup), and the controllers of
the groups still active remove, at their next quiet pass, what the inactive groups' owners
published (Kuadrant's cleanup): the command prints it per name, as the zone holds it now. With no
group left active nothing is removed. --dry-run prints the change and what the cleanup would remove,
and changes nothing.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] == "" {
				return errors.New("the group is empty")
			}
			return c.editActiveGroups(cmd.Context(), f, dryRun, func(gs []string) []string { return groups.Without(gs, args[0]) })
		},
	}
	f.bind(cmd, "zone ID or domain whose active groups to change (required)", "publishes into the zone")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the change without applying it")
	return cmd
}

func (c *cli) getActiveGroupsCommand() *cobra.Command {
	var f zoneFlags
	cmd := &cobra.Command{
		Use:   "get-active-groups --zone ZONE",
		Short: "List the active failover groups of a zone",
		Long: `get-active-groups reads the zone's kuadrant-active-groups TXT through the provider and lists its
groups, as the record controller reads them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := c.groupsTarget(cmd.Context(), f)
			if err != nil {
				return err
			}
			fmt.Fprintln(c.out, t.header())
			txt, err := activeGroupsTXT(cmd.Context(), t)
			if err != nil {
				return err
			}
			printActiveGroups(c.out, t, txt)
			return nil
		},
	}
	f.bind(cmd, "zone ID or domain (required)", "publishes into the zone")
	return cmd
}

func (c *cli) groupsTarget(ctx context.Context, f zoneFlags) (*target, error) {
	if f.zone == "" {
		return nil, errors.New("--zone is required (a zone ID or domain)")
	}
	kc, err := c.client()
	if err != nil {
		return nil, err
	}
	return c.resolve(ctx, kc, "", f)
}

func (c *cli) editActiveGroups(ctx context.Context, f zoneFlags, dryRun bool, edit func([]string) []string) error {
	t, err := c.groupsTarget(ctx, f)
	if err != nil {
		return err
	}
	fmt.Fprintln(c.out, t.header())
	return setActiveGroups(ctx, c.out, t, dryRun, edit)
}

// activeGroupsTXT reads the zone's active-groups TXT, nil when there is none.
func activeGroupsTXT(ctx context.Context, t *target) (*v1alpha1.Endpoint, error) {
	_, view, err := t.read(ctx)
	if err != nil {
		return nil, err
	}
	return groups.FindTXT(view.Endpoints, t.zone.DNSName), nil
}

func printActiveGroups(w io.Writer, t *target, txt *v1alpha1.Endpoint) {
	name := groups.RecordName(v1alpha1.NormalizeName(t.zone.DNSName))
	if txt == nil {
		fmt.Fprintf(w, "no %s TXT: no group is active (ungrouped records publish)\n", name)
		return
	}
	active := groups.Parse(txt.Targets)
	if len(active) == 0 {
		fmt.Fprintf(w, "%s lists no group: no group is active (ungrouped records publish)\n", name)
		return
	}
	fmt.Fprintf(w, "active groups: %s\n", strings.Join(active, ", "))
}

// setActiveGroups changes the zone's active-groups TXT to edit's groups: created when missing,
// deleted when none is left. A TXT of another format version is left as it is.
func setActiveGroups(ctx context.Context, w io.Writer, t *target, dryRun bool, edit func([]string) []string) error {
	_, view, err := t.read(ctx)
	if err != nil {
		return err
	}
	txt := groups.FindTXT(view.Endpoints, t.zone.DNSName)
	var current []string
	if txt != nil {
		if current, err = groups.ParseTarget(txt.Targets[0]); err != nil {
			return fmt.Errorf("%s holds %s: %w; nothing was changed", txt.DNSName, txt.Targets[0], err)
		}
	}
	next := edit(current)
	if slices.Equal(next, current) {
		fmt.Fprintf(w, "active groups unchanged (%s): nothing to do\n", listOrNone(current))
		return nil
	}
	changes := groups.Changes(v1alpha1.NormalizeName(t.zone.DNSName), txt, next)
	fmt.Fprintf(w, "active groups: %s -> %s\n", listOrNone(current), listOrNone(next))
	for i := range changes.UpdateOld {
		fmt.Fprintf(w, "  update %s: %s -> %s\n", keyString(changes.UpdateOld[i].Key()), valueString(changes.UpdateOld[i]), valueString(changes.UpdateNew[i]))
	}
	for _, e := range changes.Delete {
		fmt.Fprintf(w, "  delete %s\n", formatEndpoint(e))
	}
	for _, e := range changes.Create {
		fmt.Fprintf(w, "  create %s\n", formatEndpoint(e))
	}
	if slices.ContainsFunc(current, func(g string) bool { return !slices.Contains(next, g) }) {
		// A group loses activity: what the controllers of the groups left do about it.
		if err := printCleanup(w, v1alpha1.NormalizeName(t.zone.DNSName), view.Endpoints, next); err != nil {
			return err
		}
	}
	if dryRun {
		fmt.Fprintln(w, "dry run: nothing was changed")
		return nil
	}
	if err := t.provider.Apply(ctx, t.zone, view.State, changes); err != nil {
		return err
	}
	if err := t.provider.AwaitPropagation(ctx, t.zone, view.State); err != nil {
		return fmt.Errorf("applied, but waiting for the change to propagate: %w", err)
	}
	fmt.Fprintln(w, "applied")
	return nil
}

func listOrNone(gs []string) string {
	if len(gs) == 0 {
		return "none"
	}
	return strings.Join(gs, ", ")
}
