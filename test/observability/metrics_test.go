//go:build integration

package observability

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/VictoriaMetrics/metricsql"
)

// Every series an alert reads is one the controller's code defines, with the labels it filters and
// groups by (checkExpr, as for the dashboards), and its metric is one the metric tables of
// docs/metrics.md or docs/embedded-dns.md describe.
func TestAlertsReadOnlyMetricsTheCodeDefines(t *testing.T) {
	root := repoRoot(t)
	series := exportedSeries(t, root)
	var docs strings.Builder
	for _, p := range []string{"docs/metrics.md", "docs/embedded-dns.md"} {
		raw, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		docs.Write(raw)
	}
	for _, a := range alerts(t) {
		for _, err := range checkExpr(a.Expr, series) {
			t.Errorf("alert %s: %v", a.Alert, err)
		}
		names := selected(t, a.Expr)
		if len(names) == 0 {
			t.Errorf("alert %s: no series in %q", a.Alert, a.Expr)
		}
		for _, n := range names {
			base := n
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(n, suffix); ok && series[b+"_bucket"] != nil {
					base = b
				}
			}
			if !strings.Contains(docs.String(), "`"+base+"`") {
				t.Errorf("alert %s reads %s, which neither docs/metrics.md nor docs/embedded-dns.md lists", a.Alert, base)
			}
		}
	}
}

// selected returns the names of the series expr selects.
func selected(t *testing.T, expr string) []string {
	t.Helper()
	e, err := metricsql.Parse(expr)
	if err != nil {
		t.Fatalf("%q: %v", expr, err)
	}
	var names []string
	metricsql.VisitAll(e, func(e metricsql.Expr) {
		if m, ok := e.(*metricsql.MetricExpr); ok {
			for _, filters := range m.LabelFilterss {
				for _, f := range filters {
					if f.Label == "__name__" {
						names = append(names, f.Value)
					}
				}
			}
		}
	})
	return names
}
