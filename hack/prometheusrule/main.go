// Command prometheusrule writes the two copies of the alerting rules file
// (config/observability/alerts/dnspolicy.rules.yaml, the one to edit) that installs use: a
// PrometheusRule for kustomize (config/prometheus/prometheusrule.yaml) and the chart's file, which
// its prometheusrule.yaml template puts under a PrometheusRule's spec. `make install-generate` runs
// it and `make verify-install` fails when a copy is stale.
//
// The rules are copied as text, comments and all, below a header of their own; they are parsed
// first, so a file that is not a list of rule groups writes nothing.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

func main() {
	rules := flag.String("rules", "config/observability/alerts/dnspolicy.rules.yaml", "the rules file")
	kustomize := flag.String("kustomize", "config/prometheus/prometheusrule.yaml", "the PrometheusRule written for kustomize")
	chart := flag.String("chart", "charts/dnspolicy-controller/files/dnspolicy.rules.yaml", "the chart's copy of the rules")
	flag.Parse()
	if err := run(*rules, *kustomize, *chart); err != nil {
		fmt.Fprintln(os.Stderr, "prometheusrule:", err)
		os.Exit(1)
	}
}

// ruleFile is what Prometheus reads from a rules file, as far as it is checked here.
type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert  string `json:"alert"`
			Record string `json:"record"`
			Expr   string `json:"expr"`
		} `json:"rules"`
	} `json:"groups"`
}

func run(rulesPath, kustomizePath, chartPath string) error {
	raw, err := os.ReadFile(rulesPath)
	if err != nil {
		return err
	}
	var f ruleFile
	if err := yaml.Unmarshal(raw, &f); err != nil {
		return fmt.Errorf("%s: %w", rulesPath, err)
	}
	if len(f.Groups) == 0 {
		return fmt.Errorf("%s holds no rule groups", rulesPath)
	}
	for _, g := range f.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			return fmt.Errorf("%s: a group without a name or rules", rulesPath)
		}
		for _, r := range g.Rules {
			if (r.Alert == "") == (r.Record == "") || strings.TrimSpace(r.Expr) == "" {
				return fmt.Errorf("%s: group %s: a rule needs an expr and one of alert and record", rulesPath, g.Name)
			}
		}
	}
	body, err := fromGroups(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", rulesPath, err)
	}
	source := "Generated from " + rulesPath + " by `make install-generate`: edit that file, not this one."

	var pr bytes.Buffer
	pr.WriteString("# " + source + "\n")
	pr.WriteString("# The controller's alerts for the Prometheus Operator (needs its CRDs; docs/metrics.md#alerts).\n")
	pr.WriteString("apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata:\n  name: dnspolicy-controller\n  namespace: system\n")
	pr.WriteString("  labels:\n    app.kubernetes.io/name: dnspolicy-controller\nspec:\n")
	for _, line := range strings.SplitAfter(string(body), "\n") {
		if strings.TrimSpace(line) != "" {
			pr.WriteString("  ")
		}
		pr.WriteString(line)
	}
	if err := os.WriteFile(kustomizePath, pr.Bytes(), 0o644); err != nil {
		return err
	}
	return os.WriteFile(chartPath, append([]byte("# "+source+"\n"), body...), 0o644)
}

// fromGroups returns the file from its top-level groups key on, without the header comment above it.
func fromGroups(raw []byte) ([]byte, error) {
	if bytes.HasPrefix(raw, []byte("groups:")) {
		return raw, nil
	}
	i := bytes.Index(raw, []byte("\ngroups:"))
	if i < 0 {
		return nil, errors.New("no top-level groups key")
	}
	return raw[i+1:], nil
}
