//go:build integration

package observability

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// Every metric an alert reads is one the controller's code defines (a prometheus.NewDesc or the Name
// of a Counter, Gauge, Histogram or Summary's options under pkg, controllers, providers or cmd), and
// one the metric tables of docs/metrics.md or docs/embedded-dns.md describe.
func TestAlertsReadOnlyMetricsTheCodeDefines(t *testing.T) {
	defined := definedMetrics(t)
	if len(defined) < 30 {
		t.Fatalf("found only %d metric names in the Go source: %v", len(defined), defined)
	}
	var docs strings.Builder
	for _, p := range []string{"docs/metrics.md", "docs/embedded-dns.md"} {
		raw, err := os.ReadFile(filepath.Join(root(t), p))
		if err != nil {
			t.Fatal(err)
		}
		docs.Write(raw)
	}
	for _, a := range alerts(t) {
		names := metricNames(a.Expr)
		if len(names) == 0 {
			t.Errorf("alert %s: no metric found in %q", a.Alert, a.Expr)
		}
		for _, n := range names {
			base, ok := defined[n]
			if !ok {
				t.Errorf("alert %s reads %s, which the controller's code does not define", a.Alert, n)
				continue
			}
			if !strings.Contains(docs.String(), "`"+base+"`") {
				t.Errorf("alert %s reads %s, which neither docs/metrics.md nor docs/embedded-dns.md lists", a.Alert, base)
			}
		}
	}
}

// definedMetrics maps each series name the code can export to its metric's name (a histogram's
// _bucket, _sum and _count series to the histogram).
func definedMetrics(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	add := func(name string, histogram bool) {
		out[name] = name
		if histogram {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				out[name+s] = name
			}
		}
	}
	for _, dir := range []string{"pkg", "controllers", "providers", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root(t), dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					if isPrometheus(n.Fun, "NewDesc") && len(n.Args) > 0 {
						if s, ok := stringLit(n.Args[0]); ok {
							add(s, false)
						}
					}
				case *ast.CompositeLit:
					for _, kind := range []string{"CounterOpts", "GaugeOpts", "HistogramOpts", "SummaryOpts"} {
						if isPrometheus(n.Type, kind) {
							if s := optsName(n); s != "" {
								add(s, kind == "HistogramOpts" || kind == "SummaryOpts")
							}
						}
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
	return out
}

func isPrometheus(e ast.Expr, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == "prometheus"
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// optsName is the full name of a metric's options: Namespace_Subsystem_Name, the empty parts left out.
func optsName(lit *ast.CompositeLit) string {
	parts := map[string]string{}
	for _, el := range lit.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		if k, ok := kv.Key.(*ast.Ident); ok {
			if s, ok := stringLit(kv.Value); ok {
				parts[k.Name] = s
			}
		}
	}
	if parts["Name"] == "" {
		return ""
	}
	var name []string
	for _, k := range []string{"Namespace", "Subsystem", "Name"} {
		if parts[k] != "" {
			name = append(name, parts[k])
		}
	}
	return strings.Join(name, "_")
}

// promqlWords are PromQL's keywords and aggregation operators (which may be followed by by or
// without before their parenthesis), which read like metric names but are not.
var promqlWords = []string{"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "inf", "nan",
	"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio"}

// metricNames returns the metric names a PromQL expression selects. It scans the expression's tokens:
// strings, label matchers ({...}), ranges ([...]) and numbers are skipped, a name followed by "(" is
// a function or an aggregation, and the label lists of by, without, on, ignoring and group_left or
// group_right are no metrics.
func metricNames(expr string) []string {
	var names []string
	rs := []rune(expr)
	skipTo := func(i int, end rune) int {
		for i < len(rs) && rs[i] != end {
			if rs[i] == '"' || rs[i] == '\'' || rs[i] == '`' {
				i = skipString(rs, i)
			}
			i++
		}
		return i
	}
	labelList := false // the next parenthesis holds labels
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '"' || r == '\'' || r == '`':
			i = skipString(rs, i)
		case r == '{':
			i = skipTo(i, '}')
		case r == '[':
			i = skipTo(i, ']')
		case r == '(' && labelList:
			i = skipTo(i, ')')
			labelList = false
		case unicode.IsDigit(r) || r == '.':
			for i+1 < len(rs) && (unicode.IsLetter(rs[i+1]) || unicode.IsDigit(rs[i+1]) || rs[i+1] == '.' || rs[i+1] == '_') {
				i++
			}
		case unicode.IsLetter(r) || r == '_' || r == ':':
			j := i
			for j+1 < len(rs) && (unicode.IsLetter(rs[j+1]) || unicode.IsDigit(rs[j+1]) || rs[j+1] == '_' || rs[j+1] == ':') {
				j++
			}
			word := string(rs[i : j+1])
			k := j + 1
			for k < len(rs) && unicode.IsSpace(rs[k]) {
				k++
			}
			switch {
			case slices.Contains([]string{"by", "without", "on", "ignoring", "group_left", "group_right"}, word):
				labelList = k < len(rs) && rs[k] == '('
			case slices.Contains(promqlWords, strings.ToLower(word)):
			case k < len(rs) && rs[k] == '(':
				// a function or an aggregation
			default:
				if !slices.Contains(names, word) {
					names = append(names, word)
				}
			}
			i = j
		}
	}
	return names
}

// skipString returns the index of the quote closing the string opened at rs[i].
func skipString(rs []rune, i int) int {
	q := rs[i]
	for i++; i < len(rs) && rs[i] != q; i++ {
		if rs[i] == '\\' && q != '`' {
			i++
		}
	}
	return i
}

func TestMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`max by (dns_record_namespace, dns_record_name) (dns_provider_record_ready) == 0`:                                                         {"dns_provider_record_ready"},
		`sum by (reason) (rate(a_total{reason="not authoritative",x=~"a|b"}[10m])) / ignoring (reason) group_left sum(rate(b_total[10m])) > 0.25`: {"a_total", "b_total"},
		`sum by (p, name) (label_replace(increase(c_total[1h]), "p", "$1", "namespace", "(.*)")) > 30`:                                            {"c_total"},
		`x > 0 unless on (zone) y{a="}"} or z offset 5m and bool 1e3`:                                                                             {"x", "y", "z"},
		`histogram_quantile(0.99, sum by (le) (rate(d_seconds_bucket[5m]))) > 0x10`:                                                               {"d_seconds_bucket"},
	} {
		if got := metricNames(expr); !slices.Equal(got, want) {
			t.Errorf("metricNames(%q) = %v, want %v", expr, got, want)
		}
	}
}
