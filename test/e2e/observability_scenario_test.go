//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	route53emu "github.com/dnspolicy/dnspolicy-controller/test/emulators/route53"
)

// obsStage is how long a stage of the scenario waits for its alerts (each a shortened `for:` after
// its expression first holds); those still missing then are reported at the end.
const obsStage = 2 * time.Minute

// runScenario makes trouble in stages, each waited for through the alerts it should fire:
//  1. cluster 1's gateway refuses connections (its probe fails, its record is not Ready); clients
//     flood the embedded servers with questions for other zones over TCP and beyond the rate limit
//     over UDP, open more TCP connections than one address may, ask for names the zone lacks and
//     for a transfer with a bad signature; a Secret with a key Route 53 refuses; two clusters want
//     different TTLs for one name.
//  2. cluster 2's gateway flaps between healthy and failing, and
//  3. Route 53 throttles every request.
//  4. cluster 2 is killed (SIGKILL): cluster 1 withdraws its owner once its lease expired, and its
//     export goes stale at cluster 1's server.
//  5. cluster 2 comes back with a rotated TSIG key, finding its peer in the zone's NS set: each
//     server refuses the other's pulls.
func (f *obsFleet) runScenario(t *testing.T, from time.Time) {
	t.Helper()
	f.gateways[0].stop()
	stopFloods := f.flood(t)
	for _, addr := range f.dns {
		for range 5 {
			_, _ = obsAsk(addr, "missing."+obsEdgeZone, dns.TypeA, obsSubnets["IE"]) // NXDOMAIN
			_, _ = obsAsk(addr, obsEdgeHost, dns.TypeAAAA, obsSubnets["US"])         // NOERROR, no data
		}
		badTransfer(t, addr)
	}
	tcpBurst(t, f.dns[0], 2*obsTCPPerSource)
	f.refusedSecret(t)
	f.conflict(t)
	f.waitAlerts(t, from, "1: a failing probe, floods, a refused key, a conflict",
		"DNSPolicyRecordNotReady", "DNSPolicyDNSServerRefusing", "DNSPolicyDNSServerDropping",
		"DNSPolicyDNSServerRejectingConnections", "DNSPolicyProviderRefusing", "DNSPolicyConflictPersists")
	stopFloods()

	// Flapping and throttling at once: the probe's status writes go to the API server, not to
	// Route 53, and the throttled alert needs minutes of failed calls.
	stopFlapping := f.flap(f.gateways[1])
	f.emu.SetFaults(route53emu.Faults{ThrottleRate: 1})
	f.waitAlerts(t, from, "2 and 3: a flapping probe, Route 53 throttling", "DNSPolicyHealthProbeFlapping", "DNSPolicyProviderThrottled")
	stopFlapping()
	f.emu.SetFaults(route53emu.Faults{})
	t.Logf("scenario: Route 53 throttled %d requests", f.emu.Injected()["throttle"])

	f.procs[1].kill(t)
	f.waitFor(t, "cluster 2's owner withdrawn and its export stale", obsStage,
		`sum(dnspolicy_lease_withdrawals_total) > 0`, `max(dnspolicy_peer_stale) == 1`)
	f.waitAlerts(t, from, "4: a dead cluster", "DNSPolicyOwnerLeaseExpired", "DNSPolicyPeerStale")

	p := f.procs[1]
	peersAt := slices.Index(p.args, "--dns-peers")
	keyAt := slices.Index(p.args, "--dns-tsig-key-file")
	p.args = slices.Clone(p.args)
	p.args[keyAt+1] = writeObsKey(t, t.TempDir(), "rotated.conf")
	p.args = append(slices.Delete(p.args, peersAt, peersAt+2), "--dns-peer-discovery", obsEdgeZone+"="+f.dns[0],
		"--dns-peer-port", strconv.Itoa(f.dnsPort), "--dns-peer-discovery-interval", mcPull.String())
	p.restart(t)
	f.waitFor(t, "cluster 2 back, finding its peer in the NS set", obsStage, `sum(dnspolicy_peer_discoveries_total{result="ok"}) > 0`)
	// The pulls refused for their signature (stage 1's burst of connections may already have cut
	// a pull short, which counts as "garbage").
	f.waitAlerts(t, from, "5: a peer with a rotated key", `DNSPolicyPeerRefused{result=~"tsig|refused"}`)
}

// waitAlerts waits until each alert fired since from, at most obsStage; checkAlertsFire reports
// those that did not. A name may carry label matchers, "Name{label=~...}": a series of the alert
// with those labels must have fired.
func (f *obsFleet) waitAlerts(t *testing.T, from time.Time, stage string, names ...string) {
	t.Helper()
	start := time.Now()
	var missing []string
	for {
		missing = missing[:0]
		for _, name := range names {
			alert, matchers, _ := strings.Cut(strings.TrimSuffix(name, "}"), "{")
			selector := []string{fmt.Sprintf("alertname=%q", alert)}
			if matchers != "" {
				selector = append(selector, matchers)
			}
			fired, err := f.prom.firedSince(from, selector...)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := fired[alert]; !ok {
				missing = append(missing, name)
			}
		}
		if len(missing) == 0 || time.Since(start) > obsStage {
			break
		}
		time.Sleep(time.Second) // polling Prometheus' evaluations
	}
	t.Logf("stage %s: %d of %d alerts fired within %v; not fired: %v", stage, len(names)-len(missing), len(names),
		time.Since(start).Round(100*time.Millisecond), missing)
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

// checkAlertsFire waits until every alert fired since the scenario began (all but those the
// scenario cannot cause), and describes each that did not with what its expression returns.
func (f *obsFleet) checkAlertsFire(t *testing.T, from time.Time) {
	t.Helper()
	for name := range obsAlertsNotCaused {
		if f.alertExpr(name) == "?" {
			t.Errorf("obsAlertsNotCaused names %s, which no rule file defines", name)
		}
	}
	var want []string
	for _, a := range f.alerts {
		if _, ok := obsAlertsNotCaused[a.name]; !ok && !slices.Contains(want, a.name) {
			want = append(want, a.name)
		}
	}
	// The stages waited for their alerts; this allows a last evaluation or two.
	deadline := time.Now().Add(15 * time.Second)
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
		// What its series hold: a counter whose series is born at its first increment has no
		// increase() to show for that increment.
		var held []string
		for _, n := range seriesNames(expr) {
			s, _ := f.prom.query(n)
			held = append(held, n+": "+describe(s))
		}
		t.Errorf("alert %s did not fire in the scenario; its expression %s returns %s now (%v); its series now: %s",
			name, expr, describe(res), err, strings.Join(held, "; "))
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
