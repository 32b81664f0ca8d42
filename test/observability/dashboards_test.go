// Package observability checks the Grafana dashboards under config/observability/dashboards: that
// Grafana's own dashboard schema accepts them, that every panel says what to do when it looks wrong,
// and that every query reads only series the binaries export, with labels they carry.
package observability

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/VictoriaMetrics/metricsql"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
)

// dashboards are the files and the uid and title each must keep: links, bookmarks and the chart's
// ConfigMaps name them.
var dashboards = map[string][2]string{
	"dnspolicy-fleet.json":      {"dnspolicy-fleet", "dnspolicy-controller / Fleet overview"},
	"dnspolicy-zones.json":      {"dnspolicy-zones", "dnspolicy-controller / Zones and providers"},
	"dnspolicy-dns-server.json": {"dnspolicy-dns-server", "dnspolicy-controller / Embedded DNS server"},
	"dnspolicy-probes.json":     {"dnspolicy-probes", "dnspolicy-controller / Health probes"},
}

// targetLabels are the labels Prometheus adds to every scraped series; a query may also name these.
var targetLabels = []string{"job", "instance"}

func TestDashboards(t *testing.T) {
	root := repoRoot(t)
	dir := filepath.Join(root, "config", "observability", "dashboards")
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	if want := slices.Sorted(func(yield func(string) bool) {
		for n := range dashboards {
			if !yield(n) {
				return
			}
		}
	}); !slices.Equal(names, want) {
		t.Fatalf("dashboards in %s: %v, want %v", dir, names, want)
	}
	series := exportedSeries(t, root)
	// The panel and query plugins (timeseries, stat, table, prometheus) decode their options and
	// queries strictly too, not as free-form maps.
	plugins.RegisterDefaultPlugins()
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			d, panels := checkSchema(t, raw)
			want := dashboards[filepath.Base(f)]
			if d.Uid == nil || *d.Uid != want[0] || d.Title == nil || *d.Title != want[1] {
				t.Errorf("uid %v, title %v; want %q, %q", deref(d.Uid), deref(d.Title), want[0], want[1])
			}
			vars := checkVariables(t, d)
			checkPanels(t, panels, vars, series)
		})
	}
}

// checkSchema decodes a dashboard with the Grafana Foundation SDK, whose types are generated from
// Grafana's dashboard schema: the strict decoding fails on an unknown field, a wrong type or a
// missing required field, anywhere down to a panel's options and a query; Validate checks the
// schema's constraints on values. It returns the dashboard and its panels (rows left out).
func checkSchema(t *testing.T, raw []byte) (classicDashboard, []panel) {
	t.Helper()
	var d classicDashboard
	if err := buildErrors(d.UnmarshalJSONStrict(raw)); err != nil {
		t.Fatalf("Grafana's dashboard schema refuses it: %v", err)
	}
	if err := d.Validate(); err != nil {
		t.Fatalf("Grafana's dashboard schema refuses it: %v", err)
	}
	// The SDK's decoders of a panel-or-row and of a query (v0.0.22) report errors but leave a valid
	// panel out of Dashboard.Panels and a valid query out of Panel.Targets (their own empty error
	// list reads as a failure), and the panel's reads fieldConfig loosely: each panel, its queries
	// and its fieldConfig are decoded again on their own, strictly.
	var loose struct {
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(raw, &loose); err != nil {
		t.Fatal(err)
	}
	var panels []panel
	for i, rawPanel := range loose.Panels {
		var kind struct {
			Type        string            `json:"type"`
			FieldConfig json.RawMessage   `json:"fieldConfig"`
			Targets     []json.RawMessage `json:"targets"`
		}
		if err := json.Unmarshal(rawPanel, &kind); err != nil {
			t.Fatal(err)
		}
		if kind.Type == "row" {
			var row dashboard.RowPanel
			if err := buildErrors(row.UnmarshalJSONStrict(rawPanel)); err != nil {
				t.Errorf("panels[%d]: Grafana's dashboard schema refuses the row: %v", i, err)
			}
			continue
		}
		var p dashboard.Panel
		if err := buildErrors(p.UnmarshalJSONStrict(rawPanel)); err != nil {
			t.Errorf("panels[%d]: Grafana's dashboard schema refuses it: %v", i, err)
			continue
		}
		if err := p.Validate(); err != nil {
			t.Errorf("panels[%d] %q: Grafana's dashboard schema refuses it: %v", i, deref(p.Title), err)
		}
		if kind.FieldConfig != nil {
			var fc dashboard.FieldConfigSource
			if err := buildErrors(fc.UnmarshalJSONStrict(kind.FieldConfig)); err != nil {
				t.Errorf("panels[%d] %q: Grafana's dashboard schema refuses its fieldConfig: %v", i, deref(p.Title), err)
			}
		}
		var queries []prometheus.Dataquery
		for j, rawTarget := range kind.Targets {
			var q prometheus.Dataquery
			if err := buildErrors(q.UnmarshalJSONStrict(rawTarget)); err != nil {
				t.Errorf("panels[%d] %q: Grafana's Prometheus query schema refuses targets[%d]: %v", i, deref(p.Title), j, err)
				continue
			}
			queries = append(queries, q)
		}
		panels = append(panels, panel{Panel: p, queries: queries})
	}
	if d.SchemaVersion < 41 {
		t.Errorf("schemaVersion %d: Grafana migrates it on every load; write it for Grafana 12 (41 or later)", d.SchemaVersion)
	}
	return d, panels
}

// classicDashboard is the dashboard JSON model that Grafana's file provisioning, its dashboard
// sidecar and Import read. The SDK marks it deprecated in favour of the v2 schema of Grafana 12's
// dashboard API, a different resource that none of those three loads.
type classicDashboard = dashboard.Dashboard //nolint:staticcheck // the model the sidecar and Import read (above)

// panel is a panel with its queries.
type panel struct {
	dashboard.Panel
	queries []prometheus.Dataquery
}

// buildErrors is err, or nil for an empty cog.BuildErrors: the SDK's strict decoders return their
// list of errors as an error even when it is empty.
func buildErrors(err error) error {
	var list cog.BuildErrors
	if errors.As(err, &list) && len(list) == 0 {
		return nil
	}
	return err
}

// checkVariables requires a datasource variable of type prometheus and, for every other variable,
// an All option whose value is ".*", so that each query runs unchanged once the variables take
// their defaults. It returns the variables' names.
func checkVariables(t *testing.T, d classicDashboard) []string {
	t.Helper()
	var names []string
	hasDatasource := false
	for _, v := range d.Templating.List {
		names = append(names, v.Name)
		switch {
		case v.Type == dashboard.VariableTypeDatasource:
			if v.Name != "datasource" || v.Query == nil || v.Query.String == nil || *v.Query.String != "prometheus" {
				t.Errorf("variable %q: the datasource variable must be named datasource and list prometheus data sources", v.Name)
			}
			hasDatasource = true
		case v.Type == dashboard.VariableTypeQuery:
			if v.IncludeAll == nil || !*v.IncludeAll || v.AllValue == nil || *v.AllValue != ".*" {
				t.Errorf("variable %q: want includeAll with allValue \".*\", so queries run with the default", v.Name)
			}
			if v.Datasource == nil || deref(v.Datasource.Uid) != "${datasource}" {
				t.Errorf("variable %q: want its values from ${datasource}", v.Name)
			}
		default:
			t.Errorf("variable %q: type %q; only the datasource and query variables are substituted by the checks", v.Name, v.Type)
		}
	}
	if !hasDatasource {
		t.Error("no datasource variable: the dashboards must not name a data source of one Grafana")
	}
	return names
}

// substitute replaces what Grafana replaces before a query reaches Prometheus, as the e2e suite
// does with the dashboards' defaults: $__rate_interval by a duration, and every $variable or
// ${variable} by its All value ".*" (variables are only used as `label=~"$variable"`).
func substitute(expr string, vars []string) string {
	expr = strings.ReplaceAll(expr, "$__rate_interval", "5m")
	for _, v := range vars {
		expr = strings.ReplaceAll(expr, "${"+v+"}", ".*")
		expr = regexp.MustCompile(`\$`+regexp.QuoteMeta(v)+`\b`).ReplaceAllString(expr, ".*")
	}
	return expr
}

// checkPanels requires every panel to say what to do when it looks wrong, to read ${datasource},
// and to query only exported series with their labels.
func checkPanels(t *testing.T, panels []panel, vars []string, series map[string][]string) {
	t.Helper()
	queries := 0
	for _, p := range panels {
		title := deref(p.Title)
		if strings.TrimSpace(deref(p.Description)) == "" {
			t.Errorf("panel %q has no description of what to do when it looks wrong", title)
		}
		if p.Datasource == nil || deref(p.Datasource.Uid) != "${datasource}" || deref(p.Datasource.Type) != "prometheus" {
			t.Errorf("panel %q: want the datasource ${datasource} of type prometheus", title)
		}
		if len(p.queries) == 0 {
			t.Errorf("panel %q has no query", title)
		}
		for _, q := range p.queries {
			queries++
			expr := substitute(q.Expr, vars)
			if strings.Contains(expr, "$") {
				t.Errorf("panel %q: %s keeps a $ after substitution: a variable that is not defined", title, expr)
				continue
			}
			for _, err := range checkExpr(expr, series) {
				t.Errorf("panel %q: %s: %v", title, q.Expr, err)
			}
		}
	}
	if queries == 0 {
		t.Error("no queries checked")
	}
}

// checkExpr parses expr and checks that each series it selects is exported, that each label it
// filters on is one of that series', and that each label it groups by is one of the selected
// series'. The parser is MetricsQL's, a superset of PromQL: it catches syntax errors and gives the
// names, and the e2e suite runs every query against a real Prometheus.
func checkExpr(expr string, series map[string][]string) []error {
	e, err := metricsql.Parse(expr)
	if err != nil {
		return []error{err}
	}
	var errs []error
	known := slices.Clone(targetLabels)
	metricsql.VisitAll(e, func(e metricsql.Expr) {
		m, ok := e.(*metricsql.MetricExpr)
		if !ok {
			return
		}
		for _, filters := range m.LabelFilterss {
			name := ""
			for _, f := range filters {
				if f.Label == "__name__" {
					name = f.Value
				}
			}
			labels, ok := series[name]
			if !ok {
				errs = append(errs, errors.New("series "+strconv.Quote(name)+" is not exported by the binaries"))
				continue
			}
			known = append(known, labels...)
			for _, f := range filters {
				if f.Label != "__name__" && !slices.Contains(labels, f.Label) && !slices.Contains(targetLabels, f.Label) {
					errs = append(errs, errors.New(name+" has no label "+strconv.Quote(f.Label)))
				}
			}
		}
	})
	// label_replace and label_join make the label their second argument names.
	metricsql.VisitAll(e, func(e metricsql.Expr) {
		if f, ok := e.(*metricsql.FuncExpr); ok && (f.Name == "label_replace" || f.Name == "label_join") && len(f.Args) > 1 {
			if dst, ok := f.Args[1].(*metricsql.StringExpr); ok {
				known = append(known, dst.S)
			}
		}
	})
	metricsql.VisitAll(e, func(e metricsql.Expr) {
		a, ok := e.(*metricsql.AggrFuncExpr)
		if !ok {
			return
		}
		for _, l := range a.Modifier.Args {
			if !slices.Contains(known, l) {
				errs = append(errs, errors.New(a.Name+" groups by "+strconv.Quote(l)+", a label none of its series has"))
			}
		}
	})
	return errs
}

// exportedSeries reads the metrics the binaries define from their Go source (the non-test files
// under cmd, controllers, pkg and providers): each prometheus.NewDesc and each
// prometheus.New{Counter,Gauge,Histogram,Summary}[Vec] with its name and labels. A histogram gives
// its _bucket (with le), _sum and _count series; a NewDesc is a histogram's when the variable it is
// assigned to is passed to prometheus.(Must)NewConstHistogram in the same package (a collector
// over counters of its own, like the DNS server's).
func exportedSeries(t *testing.T, root string) map[string][]string {
	t.Helper()
	files := map[string]*ast.File{}
	histogramDescs := map[string]bool{} // package directory + "." + variable name
	for _, top := range []string{"cmd", "controllers", "pkg", "providers"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, de fs.DirEntry, err error) error {
			if err != nil || de.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				return err
			}
			files[path] = f
			ast.Inspect(f, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok && len(call.Args) > 0 && isPrometheus(call.Fun, "MustNewConstHistogram", "NewConstHistogram") {
					if id, ok := call.Args[0].(*ast.Ident); ok {
						histogramDescs[filepath.Dir(path)+"."+id.Name] = true
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	out := map[string][]string{}
	add := func(name string, labels []string, histogram bool) {
		if histogram {
			out[name+"_bucket"] = append(slices.Clone(labels), "le")
			out[name+"_sum"], out[name+"_count"] = labels, labels
		} else {
			out[name] = labels
		}
	}
	// read are the NewDesc calls read with the variable they are assigned to.
	read := map[*ast.CallExpr]bool{}
	for path, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if spec, ok := n.(*ast.ValueSpec); ok {
				// A NewDesc assigned to a variable is read here, where its name is known.
				for i, v := range spec.Values {
					call, ok := v.(*ast.CallExpr)
					if !ok || i >= len(spec.Names) || !isPrometheus(call.Fun, "NewDesc") {
						continue
					}
					read[call] = true
					name, labels, _ := metricOf("NewDesc", call.Args)
					if name != "" {
						add(name, labels, histogramDescs[filepath.Dir(path)+"."+spec.Names[i].Name])
					}
				}
				return true
			}
			call, ok := n.(*ast.CallExpr)
			if !ok || read[call] {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !isIdent(sel.X, "prometheus") {
				return true
			}
			if name, labels, histogram := metricOf(sel.Sel.Name, call.Args); name != "" {
				add(name, labels, histogram)
			}
			return true
		})
	}
	// A sanity floor: the source scan found the metrics docs/metrics.md lists.
	for _, want := range []string{"dnspolicy_provider_calls_total", "dns_provider_record_ready", "dnspolicy_dnsserver_queries_total", "dnspolicy_peer_stale"} {
		if _, ok := out[want]; !ok {
			t.Fatalf("the source scan did not find %s; it found %d series", want, len(out))
		}
	}
	return out
}

// A histogram a collector builds with MustNewConstHistogram from a NewDesc is read as a histogram:
// its _bucket carries le, and its bare name is no series.
func TestSourceScanReadsConstHistograms(t *testing.T) {
	series := exportedSeries(t, repoRoot(t))
	const h = "dnspolicy_dnsserver_query_duration_seconds"
	if got := series[h+"_bucket"]; !slices.Equal(got, []string{"transport", "le"}) {
		t.Errorf("%s_bucket labels %q, want transport and le", h, got)
	}
	if got := series[h+"_count"]; !slices.Equal(got, []string{"transport"}) {
		t.Errorf("%s_count labels %q, want transport", h, got)
	}
	if _, ok := series[h]; ok {
		t.Errorf("%s is read as a series of its own", h)
	}
	if got := series["dnspolicy_dnsserver_answers_total"]; !slices.Equal(got, []string{"zone", "source"}) {
		t.Errorf("answers_total labels %q", got)
	}
}

// isPrometheus says whether fun is prometheus.<one of names>.
func isPrometheus(fun ast.Expr, names ...string) bool {
	sel, ok := fun.(*ast.SelectorExpr)
	return ok && isIdent(sel.X, "prometheus") && slices.Contains(names, sel.Sel.Name)
}

// metricOf reads the name and labels of a prometheus constructor call, "" when it is none.
func metricOf(constructor string, args []ast.Expr) (name string, labels []string, histogram bool) {
	switch constructor {
	case "NewDesc":
		if len(args) < 3 {
			return "", nil, false
		}
		return stringLit(args[0]), stringList(args[2]), false
	case "NewCounter", "NewGauge", "NewHistogram", "NewSummary", "NewCounterVec", "NewGaugeVec", "NewHistogramVec", "NewSummaryVec":
		if len(args) == 0 {
			return "", nil, false
		}
		opts, ok := args[0].(*ast.CompositeLit)
		if !ok {
			return "", nil, false
		}
		for _, el := range opts.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok && isIdent(kv.Key, "Name") {
				name = stringLit(kv.Value)
			}
		}
		if strings.HasSuffix(constructor, "Vec") && len(args) > 1 {
			labels = stringList(args[1])
		}
		return name, labels, strings.HasPrefix(constructor, "NewHistogram")
	}
	return "", nil, false
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

func stringLit(e ast.Expr) string {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return ""
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return ""
	}
	return s
}

func stringList(e ast.Expr) []string {
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil
	}
	var out []string
	for _, el := range lit.Elts {
		out = append(out, stringLit(el))
	}
	return out
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// The chart's copies are the same bytes as the dashboards (make install-generate copies them; make
// verify-install fails on a stale copy; this says so in the unit tier too).
func TestChartCarriesTheDashboards(t *testing.T) {
	root := repoRoot(t)
	for name := range dashboards {
		src, err := os.ReadFile(filepath.Join(root, "config", "observability", "dashboards", name))
		if err != nil {
			t.Fatal(err)
		}
		cp, err := os.ReadFile(filepath.Join(root, "charts", "dnspolicy-controller", "dashboards", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(src, cp) {
			t.Errorf("charts/dnspolicy-controller/dashboards/%s differs from config/observability/dashboards: run make install-generate", name)
		}
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = parent
	}
}
