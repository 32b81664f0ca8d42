//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// panelQuery is one query of one panel of a Grafana dashboard, its template variables replaced.
type panelQuery struct {
	dashboard, panel, raw, expr string
}

func (q panelQuery) String() string {
	return fmt.Sprintf("dashboard %q, panel %q: %s", q.dashboard, q.panel, q.raw)
}

// rateWindow stands for Grafana's $__rate_interval and $__interval: the test's Prometheus scrapes
// every second, so a minute holds many samples, as a dashboard's window does at its scrape interval.
const rateWindow = "1m"

// grafanaBuiltins are Grafana's global variables a Prometheus query may use.
var grafanaBuiltins = map[string]string{
	"__rate_interval": rateWindow, "__interval": rateWindow, "__range": rateWindow,
	"__interval_ms": "60000", "__range_s": "60", "__range_ms": "60000",
}

// loadDashboards reads every dashboard JSON file matching pattern and returns the queries of all
// their panels, nested panels and collapsed rows included.
func loadDashboards(pattern string) ([]panelQuery, []string, error) {
	files, err := filepath.Glob(pattern)
	if err != nil {
		return nil, nil, err
	}
	var queries []panelQuery
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, err
		}
		var board map[string]any
		if err := json.Unmarshal(b, &board); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", f, err)
		}
		title, _ := board["title"].(string)
		if title == "" {
			title = filepath.Base(f)
		}
		vars := templateValues(board)
		walkPanels(board, func(panel map[string]any) {
			ptitle, _ := panel["title"].(string)
			targets, _ := panel["targets"].([]any)
			for _, tg := range targets {
				target, _ := tg.(map[string]any)
				expr, _ := target["expr"].(string)
				if strings.TrimSpace(expr) == "" {
					continue
				}
				queries = append(queries, panelQuery{dashboard: title, panel: ptitle, raw: expr, expr: substitute(expr, vars)})
			}
		})
	}
	return queries, files, nil
}

// walkPanels calls fn for every panel of a dashboard: top-level panels, the panels of rows
// (collapsed rows carry theirs), and the rows of the older schema.
func walkPanels(node map[string]any, fn func(map[string]any)) {
	for _, key := range []string{"panels", "rows"} {
		list, _ := node[key].([]any)
		for _, p := range list {
			panel, ok := p.(map[string]any)
			if !ok {
				continue
			}
			fn(panel)
			walkPanels(panel, fn)
		}
	}
}

// templateValues decides the value of each template variable as a user opening the dashboard with
// its defaults sees it: a query variable (a label's values) stands for every value, as "All"
// does; interval, custom, constant and text variables take their current (default) value.
func templateValues(board map[string]any) map[string]string {
	vars := map[string]string{}
	maps := func(m map[string]string) {
		for k, v := range m {
			vars[k] = v
		}
	}
	maps(grafanaBuiltins)
	templating, _ := board["templating"].(map[string]any)
	list, _ := templating["list"].([]any)
	for _, v := range list {
		variable, _ := v.(map[string]any)
		name, _ := variable["name"].(string)
		typ, _ := variable["type"].(string)
		allValue, _ := variable["allValue"].(string)
		if allValue == "" {
			allValue = ".*"
		}
		current := currentValue(variable)
		switch {
		case typ == "query" || current == "$__all" || current == "":
			vars[name] = allValue
		case strings.HasPrefix(current, "$__auto"):
			vars[name] = rateWindow
		default:
			vars[name] = current
		}
	}
	return vars
}

// currentValue is a variable's current value (the first, for a multi-value one), else its query
// (a constant's or a text box's).
func currentValue(variable map[string]any) string {
	if current, ok := variable["current"].(map[string]any); ok {
		switch v := current["value"].(type) {
		case string:
			return v
		case []any:
			if len(v) > 0 {
				return fmt.Sprint(v[0])
			}
		}
	}
	if q, ok := variable["query"].(string); ok && variable["type"] != "query" {
		return strings.Split(q, ",")[0]
	}
	return ""
}

// grafanaVariable matches $var, ${var}, ${var:format} and [[var]].
var grafanaVariable = regexp.MustCompile(`\$\{(\w+)(?::[^}]*)?\}|\$(\w+)|\[\[(\w+)(?::[^\]]*)?\]\]`)

// substitute replaces the template variables of expr; an unknown one stays, and the query fails.
func substitute(expr string, vars map[string]string) string {
	return grafanaVariable.ReplaceAllStringFunc(expr, func(m string) string {
		sub := grafanaVariable.FindStringSubmatch(m)
		name := sub[1] + sub[2] + sub[3]
		if v, ok := vars[name]; ok {
			return v
		}
		return m
	})
}

// promqlKeywords are the words of PromQL that are not series names.
var promqlKeywords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true, "bool": true,
	"and": true, "or": true, "unless": true, "offset": true, "atan2": true, "inf": true, "nan": true,
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true, "count": true,
	"count_values": true, "bottomk": true, "topk": true, "quantile": true, "limitk": true, "limit_ratio": true,
}

// labelListers are the keywords followed by a list of label names in parentheses.
var labelListers = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

// seriesNames returns the series names a PromQL expression selects: every identifier that is not a
// function, a keyword, a label name, a string, a duration or a number, plus __name__ matchers.
func seriesNames(expr string) []string {
	var names []string
	nameMatcher := regexp.MustCompile(`__name__\s*=\s*"([^"]+)"`)
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(expr, i)
		case c == '#':
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case c == '{' || c == '[':
			end := strings.IndexByte(expr[i:], map[byte]byte{'{': '}', '[': ']'}[c])
			if end < 0 {
				return names
			}
			for _, m := range nameMatcher.FindAllStringSubmatch(expr[i:i+end], -1) {
				names = append(names, m[1])
			}
			i += end + 1
		case c >= '0' && c <= '9' || c == '.':
			for i < len(expr) && isIdentChar(expr[i]) || i < len(expr) && expr[i] == '.' {
				i++
			}
		case isIdentChar(c):
			j := i
			for j < len(expr) && isIdentChar(expr[j]) {
				j++
			}
			word := expr[i:j]
			next := j
			for next < len(expr) && (expr[next] == ' ' || expr[next] == '\t' || expr[next] == '\n' || expr[next] == '\r') {
				next++
			}
			lower := strings.ToLower(word)
			switch {
			case labelListers[lower] && next < len(expr) && expr[next] == '(':
				end := strings.IndexByte(expr[next:], ')')
				if end < 0 {
					return names
				}
				j = next + end + 1
			case promqlKeywords[lower], next < len(expr) && expr[next] == '(':
			default:
				names = append(names, word)
			}
			i = j
		default:
			i++
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

func isIdentChar(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// skipString returns the index after the string literal starting at i.
func skipString(s string, i int) int {
	quote := s[i]
	for i++; i < len(s); i++ {
		if s[i] == '\\' && quote != '`' {
			i++
			continue
		}
		if s[i] == quote {
			return i + 1
		}
	}
	return i
}

// unknownSeries describes each series name expr selects that Prometheus does not hold.
func unknownSeries(expr string, known map[string]bool) []string {
	var missing []string
	for _, n := range seriesNames(expr) {
		if !known[n] {
			missing = append(missing, n)
		}
	}
	return missing
}

// checkPanels queries every panel query over [start, end] as the panel draws it, and describes
// each one that names a series Prometheus does not hold, fails, or returns no data at any step.
func checkPanels(p *promServer, queries []panelQuery, start, end time.Time) ([]string, error) {
	known, err := p.metricNames()
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, q := range queries {
		if missing := unknownSeries(q.expr, known); len(missing) > 0 {
			problems = append(problems, fmt.Sprintf("%s: names series that do not exist: %s", q, strings.Join(missing, ", ")))
			continue
		}
		res, err := p.queryRange(q.expr, start, end, 2*time.Second)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s: query %s fails: %v", q, q.expr, err))
		case len(res) == 0:
			problems = append(problems, fmt.Sprintf("%s: no data over the scenario (queried as %s)", q, q.expr))
		}
	}
	return problems, nil
}
