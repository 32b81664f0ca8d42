package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// recordRow is one DNSRecord as `records` prints it; its JSON form is the -o json/yaml output.
type recordRow struct {
	Namespace    string   `json:"namespace"`
	Name         string   `json:"name"`
	RootHost     string   `json:"rootHost"`
	Zone         string   `json:"zone,omitempty"`
	ZoneID       string   `json:"zoneID,omitempty"`
	OwnerID      string   `json:"ownerID,omitempty"`
	DomainOwners []string `json:"domainOwners,omitempty"`
	Ready        string   `json:"ready"`
	Reason       string   `json:"reason,omitempty"`
	Message      string   `json:"message,omitempty"`
}

// recordList is the -o json/yaml document.
type recordList struct {
	Records []recordRow `json:"records"`
}

func (c *cli) recordsCommand() *cobra.Command {
	var all bool
	var output string
	cmd := &cobra.Command{
		Use:   "records",
		Short: "List this cluster's DNSRecords with their zone, the owners seen on their host, and readiness",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" && output != "yaml" {
				return fmt.Errorf("-o %s: want table, json or yaml", output)
			}
			kc, err := c.client()
			if err != nil {
				return err
			}
			var opts []client.ListOption
			if !all {
				ns, _, err := c.namespace()
				if err != nil {
					return err
				}
				opts = append(opts, client.InNamespace(ns))
			}
			list := &v1alpha1.DNSRecordList{}
			if err := kc.List(cmd.Context(), list, opts...); err != nil {
				return fmt.Errorf("listing DNSRecords: %w", err)
			}
			return printRecords(c.out, rows(list.Items), output, all)
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list the records of every namespace")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, json or yaml")
	return cmd
}

func rows(records []v1alpha1.DNSRecord) []recordRow {
	out := make([]recordRow, 0, len(records))
	for i := range records {
		r := &records[i]
		row := recordRow{
			Namespace:    r.Namespace,
			Name:         r.Name,
			RootHost:     r.Spec.RootHost,
			Zone:         r.Status.ZoneDomainName,
			ZoneID:       r.Status.ZoneID,
			OwnerID:      r.Status.OwnerID,
			DomainOwners: r.Status.DomainOwners,
			Ready:        "Unknown",
		}
		if cond := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionTypeReady); cond != nil {
			row.Ready, row.Reason, row.Message = string(cond.Status), cond.Reason, cond.Message
		}
		out = append(out, row)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func printRecords(w io.Writer, rs []recordRow, output string, namespaces bool) error {
	switch output {
	case "json":
		b, err := json.MarshalIndent(recordList{Records: rs}, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(b))
		return err
	case "yaml":
		b, err := yaml.Marshal(recordList{Records: rs})
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	if len(rs) == 0 {
		_, err := fmt.Fprintln(w, "No DNSRecords found.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := "NAME\tROOT HOST\tZONE\tOWNER\tDOMAIN OWNERS\tREADY\tREASON"
	if namespaces {
		header = "NAMESPACE\t" + header
	}
	fmt.Fprintln(tw, header)
	for _, r := range rs {
		zone := "-"
		if r.Zone != "" {
			zone = r.Zone + " (" + r.ZoneID + ")"
		}
		owners := strings.Join(r.DomainOwners, ",")
		if owners == "" {
			owners = "-"
		}
		line := strings.Join([]string{r.Name, r.RootHost, zone, dash(r.OwnerID), owners, r.Ready, dash(r.Reason)}, "\t")
		if namespaces {
			line = r.Namespace + "\t" + line
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
