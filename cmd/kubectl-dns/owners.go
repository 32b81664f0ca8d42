package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

func (c *cli) ownersCommand() *cobra.Command {
	return c.hostCommand("owners HOST", "List the owners publishing HOST (and its loadbalanced tree), their leases and what each claims",
		func(_ context.Context, w io.Writer, t *target, z *registry.Zone, host string, now time.Time) error {
			printOwners(w, t, z, host, now)
			return nil
		})
}

func printOwners(w io.Writer, t *target, z *registry.Zone, host string, now time.Time) {
	zoneName := v1alpha1.NormalizeName(t.zone.DNSName)
	names := hostNames(z, zoneName, host)
	owners := ownersAt(z, names)
	fmt.Fprintln(w, t.header())
	fmt.Fprintf(w, "names: %s\n", strings.Join(names, ", "))
	if len(owners) == 0 {
		fmt.Fprintln(w, "no owner claims a record at these names")
		return
	}
	for _, o := range owners {
		fmt.Fprintf(w, "\nOWNER %s\n", o)
		keys := leaseKeys(z, o)
		if len(keys) == 0 {
			fmt.Fprintln(w, "  no lease: never expires (no claim of it names a lease: Kuadrant's dns-operator writes none, and our controllers name theirs only at names shared with another cluster)")
		}
		for _, k := range keys {
			for _, line := range readLease(z, zoneName, k, now).describe() {
				fmt.Fprintln(w, "  "+line)
			}
		}
		fmt.Fprintln(w, "  claims:")
		for _, n := range names {
			for _, r := range z.AtName(n) {
				for _, cl := range r.Claims {
					if cl.Owner == o {
						fmt.Fprintf(w, "    %s\n", claimLine(r, cl))
					}
				}
			}
			if h := healthAt(z, o, n); h != nil {
				fmt.Fprintf(w, "    health statement %s %s\n", h.DNSName, strings.Join(h.Targets, " "))
			}
		}
	}
}

// claimLine says what an owner wants for a record and whether it is what the zone publishes.
func claimLine(r *registry.Record, cl *registry.Claim) string {
	s := keyString(r.Key)
	switch {
	case cl.Wish != nil:
		s += " wants " + valueString(cl.Wish)
	case cl.Legacy:
		s += " " + legacyLine(cl)
	case r.Endpoint != nil:
		s += " (Kuadrant-format claim, wish not recorded; the record holds " + valueString(r.Endpoint) + ")"
	default:
		s += " (Kuadrant-format claim, wish not recorded)"
	}
	if r.Endpoint == nil {
		s += " [not published]"
	}
	return s
}

// hostCommand is a command that reads the zone publishing its one argument, HOST, and prints what
// show makes of it (owners, explain).
func (c *cli) hostCommand(use, short string, show func(context.Context, io.Writer, *target, *registry.Zone, string, time.Time) error) *cobra.Command {
	var f zoneFlags
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kc, err := c.client()
			if err != nil {
				return err
			}
			t, err := c.resolve(cmd.Context(), kc, args[0], f)
			if err != nil {
				return err
			}
			z, _, err := t.read(cmd.Context())
			if err != nil {
				return err
			}
			return show(cmd.Context(), c.out, t, z, args[0], c.now())
		},
	}
	f.bind(cmd, "zone ID or domain (default: the zone the DNSRecord publishing HOST is in, or the one the Secret's backend holds HOST in)", "publishes HOST")
	return cmd
}
