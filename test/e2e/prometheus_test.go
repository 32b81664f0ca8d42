//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
)

// prometheusBin is Debian's Prometheus, which `make dns-tools` installs (hack/dns-tools.sh).
const prometheusBin = "/usr/bin/prometheus"

// promTarget is one endpoint Prometheus scrapes, with the labels a cluster's ServiceMonitor would
// give it.
type promTarget struct {
	addr    string
	cluster string
}

// promServer is a real Prometheus scraping the test's processes and evaluating the rule files.
type promServer struct {
	url  string
	http *http.Client
}

// startPrometheus runs Prometheus on a free loopback port, scraping every target each second and
// evaluating ruleFiles each second, with its storage in a temporary directory. It fails the test
// (never skips it) when the binary is missing, and waits until every target has been scraped.
func startPrometheus(t *testing.T, targets []promTarget, ruleFiles []string) *promServer {
	t.Helper()
	if _, err := os.Stat(prometheusBin); err != nil {
		t.Fatalf("no Prometheus at %s (Debian's prometheus package; `make dns-tools` installs it): %v", prometheusBin, err)
	}
	dir := t.TempDir()
	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nrule_files:\n")
	for _, f := range ruleFiles {
		fmt.Fprintf(&cfg, "- %q\n", f)
	}
	cfg.WriteString("scrape_configs:\n- job_name: dnspolicy-controller\n  static_configs:\n")
	for _, tg := range targets {
		fmt.Fprintf(&cfg, "  - targets: [%q]\n    labels: {cluster: %q}\n", tg.addr, tg.cluster)
	}
	config := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(config, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeport.Addr(t)
	logPath := filepath.Join(dir, "prometheus.log")
	cmd := exec.Command(prometheusBin, "--config.file="+config, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	exited := startLogged(t, "prometheus", logPath, cmd)
	p := &promServer{url: "http://" + addr, http: &http.Client{Timeout: 20 * time.Second}}
	eventually(t, time.Minute, func() string {
		select {
		case err := <-exited:
			exited <- err
			b, _ := os.ReadFile(logPath)
			t.Fatalf("prometheus exited: %v\n%s", err, b)
		default:
		}
		var up []map[string]any
		if err := p.get("/api/v1/query", url.Values{"query": {"up == 1"}}, &struct {
			Result *[]map[string]any `json:"result"`
		}{&up}); err != nil {
			return fmt.Sprintf("prometheus: %v", err)
		}
		if len(up) != len(targets) {
			return fmt.Sprintf("prometheus scraped %d of %d targets", len(up), len(targets))
		}
		return ""
	})
	return p
}

// get calls the HTTP API and decodes its "data" into data.
func (p *promServer) get(path string, params url.Values, data any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+path+"?"+params.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("%s answered %s: %.200s", path, resp.Status, body)
	}
	if env.Status != "success" {
		return fmt.Errorf("%s", env.Error)
	}
	return json.Unmarshal(env.Data, data)
}

// series is one result of a query: its labels (the metric) and its value or values.
type series struct {
	Metric map[string]string `json:"metric"`
	Value  []any             `json:"value"`
	Values [][]any           `json:"values"`
}

// query evaluates expr now.
func (p *promServer) query(expr string) ([]series, error) {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := p.get("/api/v1/query", url.Values{"query": {expr}}, &data); err != nil {
		return nil, err
	}
	return decodeResult(data.ResultType, data.Result)
}

// queryRange evaluates expr at every step from start to end: what a dashboard panel draws.
func (p *promServer) queryRange(expr string, start, end time.Time, step time.Duration) ([]series, error) {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	params := url.Values{"query": {expr}, "start": {unix(start)}, "end": {unix(end)}, "step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}}
	if err := p.get("/api/v1/query_range", params, &data); err != nil {
		return nil, err
	}
	return decodeResult(data.ResultType, data.Result)
}

func unix(t time.Time) string { return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64) }

// decodeResult turns a vector or matrix into series; a scalar or string counts as one series.
func decodeResult(typ string, raw json.RawMessage) ([]series, error) {
	switch typ {
	case "vector", "matrix":
		var out []series
		err := json.Unmarshal(raw, &out)
		return out, err
	default:
		var v []any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, err
		}
		return []series{{Value: v}}, nil
	}
}

// metricNames lists every series name Prometheus holds.
func (p *promServer) metricNames() (map[string]bool, error) {
	var names []string
	if err := p.get("/api/v1/label/__name__/values", url.Values{}, &names); err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, n := range names {
		set[n] = true
	}
	return set, nil
}

// ruleHealth describes every rule Prometheus loaded that failed its last evaluation, and returns
// the number of alerting rules loaded.
func (p *promServer) ruleHealth() (alerting int, problems []string, err error) {
	var data struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Name      string `json:"name"`
				Type      string `json:"type"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := p.get("/api/v1/rules", url.Values{}, &data); err != nil {
		return 0, nil, err
	}
	for _, g := range data.Groups {
		for _, r := range g.Rules {
			if r.Type == "alerting" {
				alerting++
			}
			if r.Health == "err" {
				problems = append(problems, fmt.Sprintf("rule %s (group %s) fails to evaluate: %s", r.Name, g.Name, r.LastError))
			}
		}
	}
	return alerting, problems, nil
}

// firedSince returns the alerts that were firing at some evaluation since start, each with the
// labels of one of its firing series; matchers (PromQL label matchers, or none) narrow the series.
func (p *promServer) firedSince(start time.Time, matchers ...string) (map[string]string, error) {
	window := max(time.Since(start).Round(time.Second)+time.Second, 2*time.Second)
	selector := strings.Join(append([]string{`alertstate="firing"`}, matchers...), ", ")
	res, err := p.query(fmt.Sprintf(`max_over_time(ALERTS{%s}[%ds])`, selector, int(window.Seconds())))
	if err != nil {
		return nil, err
	}
	fired := map[string]string{}
	for _, s := range res {
		labels := make([]string, 0, len(s.Metric))
		for k, v := range s.Metric {
			if k != "__name__" && k != "alertstate" {
				labels = append(labels, k+"="+strconv.Quote(v))
			}
		}
		slices.Sort(labels)
		fired[s.Metric["alertname"]] = "{" + strings.Join(labels, ", ") + "}"
	}
	return fired, nil
}

// alertRule is one alerting rule of a rule file.
type alertRule struct {
	file, group, name, expr string
	forDuration             time.Duration
}

// narrowWindow caps the `for:` of alerts whose condition a test run holds only briefly.
// DNSPolicyLeaseAgeing: with the e2e tests' 20 s leases, a dead cluster's lease is older than 75% of
// its duration from 15 s, and its series go with its owners' withdrawal at about 28 to 30 s; a 10 s
// `for:` left the alert a window of a few seconds against Prometheus's scrape and evaluation ticks
// (it missed once in CI), 2 s leaves it ten.
var narrowWindow = map[string]time.Duration{"DNSPolicyLeaseAgeing": 2 * time.Second}

// shortenRules reads Prometheus rule files and writes copies into dir in which each alert's `for:`
// is at most maxFor, its expression and everything else unchanged; it returns the copies' paths and
// the alerting rules (with their original `for:`) and the recording rules' expressions.
//
// The promtool unit tests beside the rules check their timings (that an alert waits its `for:`);
// this test checks that each expression selects the series a real run produces, within minutes.
func shortenRules(t *testing.T, files []string, dir string, maxFor time.Duration) (paths []string, alerts []alertRule, recorded []string) {
	t.Helper()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := yaml.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		groups, _ := doc["groups"].([]any)
		for _, g := range groups {
			group, _ := g.(map[string]any)
			rules, _ := group["rules"].([]any)
			for _, r := range rules {
				rule, _ := r.(map[string]any)
				expr := fmt.Sprint(rule["expr"])
				if name, ok := rule["alert"].(string); ok {
					a := alertRule{file: filepath.Base(f), group: fmt.Sprint(group["name"]), name: name, expr: expr}
					if s, ok := rule["for"].(string); ok {
						d, err := parsePromDuration(s)
						if err != nil {
							t.Fatalf("%s: alert %s: for %q: %v", f, name, s, err)
						}
						a.forDuration = d
						limit := maxFor
						if w, ok := narrowWindow[name]; ok && w < limit {
							limit = w
						}
						if d > limit {
							rule["for"] = fmt.Sprintf("%ds", int(limit.Seconds()))
						}
					}
					alerts = append(alerts, a)
				} else {
					recorded = append(recorded, expr)
				}
			}
		}
		out, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, filepath.Base(f))
		if err := os.WriteFile(path, out, 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	return paths, alerts, recorded
}

// parsePromDuration parses a Prometheus duration: units ms, s, m, h, d, w, y, possibly chained
// ("1h30m").
func parsePromDuration(s string) (time.Duration, error) {
	units := map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "m": time.Minute, "h": time.Hour,
		"d": 24 * time.Hour, "w": 7 * 24 * time.Hour, "y": 365 * 24 * time.Hour}
	var total time.Duration
	rest := s
	for rest != "" {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		j := i
		for j < len(rest) && (rest[j] < '0' || rest[j] > '9') {
			j++
		}
		n, err := strconv.Atoi(rest[:i])
		unit, ok := units[rest[i:j]]
		if err != nil || !ok {
			return 0, fmt.Errorf("not a Prometheus duration: %q", s)
		}
		total += time.Duration(n) * unit
		rest = rest[j:]
	}
	return total, nil
}
