//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// obsThrottled is how many Route 53 requests in a row the emulator throttles: more than the
// backend's attempts per call (8), so the retries of at least one call run out.
const obsThrottled = 24

// runScenario makes trouble, each kind waited for in Prometheus: a failing probe, clients the
// embedded servers answer with NXDOMAIN, REFUSED, a TSIG failure and rate limiting, Route 53
// throttling, and a cluster killed until its lease has expired at the other and its export is stale.
func (f *obsFleet) runScenario(t *testing.T) {
	t.Helper()
	// The gateway of cluster 1 refuses connections: its probe fails.
	f.gateways[0].stop()
	for _, addr := range f.dns {
		for range 5 {
			_, _ = obsAsk(addr, "missing."+obsEdgeZone, dns.TypeA, obsSubnets["IE"]) // NXDOMAIN
			_, _ = obsAsk(addr, "www.example.org", dns.TypeA, netip.Prefix{})        // REFUSED: no zone of ours
			_, _ = obsAsk(addr, obsEdgeHost, dns.TypeAAAA, obsSubnets["US"])         // NOERROR, no data
		}
		badTransfer(t, addr)
		burst(t, addr, obsEdgeHost, 20*obsRRL)
	}
	f.waitFor(t, "clients refused, answered NXDOMAIN, rate limited and sent a bad signature", time.Minute,
		`sum(dnspolicy_dnsserver_rate_limited_total) > 0`,
		`sum(dnspolicy_dnsserver_tsig_failures_total) > 0`,
		`sum(dnspolicy_dnsserver_refused_total) > 0`,
		`sum(dnspolicy_dnsserver_queries_total{rcode="NXDOMAIN"}) > 0`)
	f.waitFor(t, "cluster 1's probe failing", time.Minute,
		`sum(dnspolicy_health_probes{state="unhealthy"}) >= 1`,
		`sum(dnspolicy_health_probe_checks_total{outcome="connection_refused"}) > 0`)

	// Route 53 throttles: the calls whose attempts all meet Throttling fail as transient.
	f.emu.ThrottleNext(obsThrottled)
	eventually(t, 2*time.Minute, func() string {
		if n := f.emu.Injected()["throttle"]; n < obsThrottled {
			return fmt.Sprintf("the emulator throttled %d of %d requests", n, obsThrottled)
		}
		return ""
	})
	f.waitFor(t, "throttled provider calls", time.Minute, `sum(dnspolicy_provider_calls_total{result="transient"}) > 0`)

	// Cluster 2 dies: cluster 1 withdraws its records once its lease has expired, and its export
	// goes stale at cluster 1's server.
	f.procs[1].kill(t)
	killed := time.Now()
	f.waitFor(t, "cluster 2's lease expired and its export stale", 3*time.Minute,
		`sum(dnspolicy_lease_withdrawals_total) > 0`,
		`max(dnspolicy_peer_stale) == 1`)
	t.Logf("scenario: cluster 2's lease withdrawn and its export stale %v after SIGKILL", time.Since(killed).Round(time.Second))
}

// waitFor waits until every expression returns data in Prometheus.
func (f *obsFleet) waitFor(t *testing.T, what string, timeout time.Duration, exprs ...string) {
	t.Helper()
	start := time.Now()
	eventually(t, timeout, func() string {
		for _, expr := range exprs {
			if res, err := f.prom.query(expr); err != nil || len(res) == 0 {
				return fmt.Sprintf("%s: no data for %s (%v)", what, expr, err)
			}
		}
		return ""
	})
	t.Logf("scenario: %s, seen by Prometheus after %v", what, time.Since(start).Round(100*time.Millisecond))
}

// badTransfer asks addr for a zone transfer signed with a key the server does not hold.
func badTransfer(t *testing.T, addr string) {
	t.Helper()
	m := new(dns.Msg)
	m.SetAxfr(dns.Fqdn(obsEdgeZone))
	m.SetTsig(obsKey+".", dns.HmacSHA256, 300, time.Now().Unix())
	tr := &dns.Transfer{TsigSecret: map[string]string{obsKey + ".": obsSecret(t)}, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second}
	ch, err := tr.In(m, addr)
	if err != nil {
		return // refused at once: what is wanted
	}
	for env := range ch {
		if env.Error == nil {
			t.Fatalf("%s transferred %s to a key it does not hold", addr, obsEdgeZone)
		}
	}
}

// burst sends n queries over UDP as fast as it can, without waiting for answers: far beyond the
// server's rate limit for one client prefix.
func burst(t *testing.T, addr, name string, n int) {
	t.Helper()
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i := range n {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), dns.TypeA)
		m.Id = uint16(i)
		b, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write(b); err != nil {
			t.Fatal(err)
		}
	}
}

// checkAlertsFire waits until every alert fired since the scenario began (all but those the
// scenario cannot cause), and describes each that did not with what its expression returns.
func (f *obsFleet) checkAlertsFire(t *testing.T, from time.Time) {
	t.Helper()
	var want []string
	for _, a := range f.alerts {
		if _, ok := obsAlertsNotCaused[a.name]; !ok && !slices.Contains(want, a.name) {
			want = append(want, a.name)
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	var missing []string
	for {
		fired, err := f.prom.firedSince(from)
		if err != nil {
			t.Fatal(err)
		}
		missing = missing[:0]
		for _, name := range want {
			if _, ok := fired[name]; !ok {
				missing = append(missing, name)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			t.Logf("alerts: %d fired in the scenario: %v", len(fired), fired)
			break
		}
		time.Sleep(2 * time.Second) // polling Prometheus' evaluations
	}
	for _, name := range missing {
		expr := f.alertExpr(name)
		res, err := f.prom.query(expr)
		t.Errorf("alert %s did not fire in the scenario; its expression %s returns %s now (%v)", name, expr, describe(res), err)
	}
	if _, problems, err := f.prom.ruleHealth(); err != nil || len(problems) > 0 {
		t.Errorf("rules: %v %v", err, problems)
	}
}

// describe shows a query's result briefly.
func describe(res []series) string {
	if len(res) == 0 {
		return "nothing"
	}
	var parts []string
	for _, s := range res[:min(len(res), 5)] {
		parts = append(parts, fmt.Sprintf("%v %v", s.Metric, s.Value))
	}
	return strings.Join(parts, "; ")
}

// checkDashboards checks every panel query over the scenario, allowing a minute for the last
// scrapes and evaluations.
func (f *obsFleet) checkDashboards(t *testing.T, from time.Time) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		problems, err := checkPanels(f.prom, f.queries, from, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if len(problems) == 0 || time.Now().After(deadline) {
			for _, p := range problems {
				t.Error(p)
			}
			t.Logf("dashboards: %d panel queries checked, %d without data or naming unknown series", len(f.queries), len(problems))
			return
		}
		time.Sleep(5 * time.Second) // polling Prometheus' scrapes
	}
}

// checkRuleSeries fails every rule whose expression names a series Prometheus does not hold after
// the scenario: such an alert can never fire.
func (f *obsFleet) checkRuleSeries(t *testing.T) {
	t.Helper()
	known, err := f.prom.metricNames()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range f.alerts {
		if missing := unknownSeries(a.expr, known); len(missing) > 0 {
			t.Errorf("alert %s (%s) names series that do not exist: %s", a.name, a.file, strings.Join(missing, ", "))
		}
	}
	for _, expr := range f.recorded {
		if missing := unknownSeries(expr, known); len(missing) > 0 {
			t.Errorf("recording rule %s names series that do not exist: %s", expr, strings.Join(missing, ", "))
		}
	}
}

// checkerCatchesMissingSeries runs the dashboard checker on a dashboard of three panels (in a
// collapsed row, with a template variable): one whose series exists and has data, one naming a
// series that does not exist, one whose series exists but whose selector matches nothing. Exactly
// the last two are reported, each naming its dashboard and panel.
func (f *obsFleet) checkerCatchesMissingSeries(t *testing.T, from time.Time) {
	dir := t.TempDir()
	board := map[string]any{
		"title": "Synthetic",
		"templating": map[string]any{"list": []any{map[string]any{"name": "zone", "type": "query", "includeAll": true,
			"current": map[string]any{"value": "$__all"}}}},
		"panels": []any{map[string]any{"type": "row", "title": "collapsed", "collapsed": true, "panels": []any{
			panelJSON("Answers", `sum by (rcode) (rate(dnspolicy_dnsserver_queries_total{zone=~"${zone}"}[$__rate_interval]))`),
			panelJSON("Bogus", `sum(rate(dnspolicy_no_such_series_total{zone=~"$zone"}[$__rate_interval]))`),
			panelJSON("Empty", `dnspolicy_dnsserver_queries_total{rcode="NO_SUCH_RCODE"}`),
		}}},
	}
	b, err := json.Marshal(board)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "synthetic.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	queries, _, err := loadDashboards(filepath.Join(dir, "*.json"))
	if err != nil || len(queries) != 3 {
		t.Fatalf("the synthetic dashboard gave %d queries (%v), want 3", len(queries), err)
	}
	problems, err := checkPanels(f.prom, queries, from, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 2 ||
		!strings.Contains(problems[0], `dashboard "Synthetic", panel "Bogus"`) || !strings.Contains(problems[0], "do not exist: dnspolicy_no_such_series_total") ||
		!strings.Contains(problems[1], `dashboard "Synthetic", panel "Empty"`) || !strings.Contains(problems[1], "no data") {
		t.Errorf("the checker reported %q, want the Bogus panel's missing series and the Empty panel's lack of data", problems)
	}
}

func panelJSON(title, expr string) map[string]any {
	return map[string]any{"type": "timeseries", "title": title, "datasource": map[string]any{"uid": "${datasource}"},
		"targets": []any{map[string]any{"refId": "A", "expr": expr, "datasource": map[string]any{"uid": "${datasource}"}}}}
}

// TestObservabilitySeriesNames: the checker's reading of PromQL finds series names, not functions,
// keywords, label names, strings or durations.
func TestObservabilitySeriesNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`sum by (le, zone) (rate(dnspolicy_dnsserver_queries_total{rcode=~"NX.*", zone!=""}[5m]))`:       {"dnspolicy_dnsserver_queries_total"},
		`histogram_quantile(0.99, sum(rate(http_client_request_latency_seconds_bucket[1m])) by (le))`:    {"http_client_request_latency_seconds_bucket"},
		`a_total / ignoring(result) group_left b_total or on() vector(0) unless c offset 5m > bool 1e3`:  {"a_total", "b_total", "c"},
		`label_replace(up, "x", "$1", "instance", "(.*):.*") and {__name__="dns_provider_record_ready"}`: {"dns_provider_record_ready", "up"},
		`topk(3, increase(job:errors:rate5m[1h] @ end())) # by (job)`:                                    {"job:errors:rate5m"},
		`max without (instance) (dnspolicy_peer_stale) == 1 and count_values("v", x_y) > Inf`:            {"dnspolicy_peer_stale", "x_y"},
	} {
		if got := seriesNames(expr); !slices.Equal(got, want) {
			t.Errorf("seriesNames(%s) = %v, want %v", expr, got, want)
		}
	}
	vars := templateValues(map[string]any{"templating": map[string]any{"list": []any{
		map[string]any{"name": "namespace", "type": "query", "current": map[string]any{"value": []any{"$__all"}}},
		map[string]any{"name": "window", "type": "interval", "current": map[string]any{"value": "5m"}},
		map[string]any{"name": "job", "type": "custom", "current": map[string]any{"value": "$__all"}, "allValue": ".+"},
	}}})
	got := substitute(`rate(x{namespace=~"$namespace",job=~"${job:regex}"}[$window]) / rate(y[$__rate_interval]) [[namespace]]`, vars)
	if want := `rate(x{namespace=~".*",job=~".+"}[5m]) / rate(y[1m]) .*`; got != want {
		t.Errorf("substitute: %s, want %s", got, want)
	}
}
