//go:build integration

// Package observability checks the alerting rules in config/observability/alerts: Prometheus' own
// promtool loads them and runs their unit tests, and the rest is held to the source: every alert
// has a firing and a quiet test case, a runbook section in docs/troubleshooting.md that its
// runbook_url points to, and reads only metrics the controller's code defines.
package observability

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const (
	rulesFile = "config/observability/alerts/dnspolicy.rules.yaml"
	testsDir  = "config/observability/alerts/tests"
	runbooks  = "docs/troubleshooting.md"
	// runbookBase is how the repository links to its own files elsewhere (the chart, the CSVs).
	runbookBase = "https://github.com/dnspolicy/dnspolicy-controller/blob/main/" + runbooks + "#"
)

type rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []rule `json:"rules"`
	} `json:"groups"`
}

type testFile struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		Name          string `json:"name"`
		AlertRuleTest []struct {
			Alertname string           `json:"alertname"`
			ExpAlerts []map[string]any `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

func alerts(t *testing.T) []rule {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), rulesFile))
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	var out []rule
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	if len(out) < 10 {
		t.Fatalf("%s holds %d alerts", rulesFile, len(out))
	}
	return out
}

func testFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot(t), testsDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no promtool tests under %s (%v)", testsDir, err)
	}
	return files
}

// promtool runs Debian's promtool (`make dns-tools` installs it); a missing one fails the test.
func promtool(t *testing.T, args ...string) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found (make dns-tools installs Debian's prometheus package): %v", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = repoRoot(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
}

func TestPromtoolChecksTheRules(t *testing.T) {
	promtool(t, "check", "rules", rulesFile)
}

func TestPromtoolUnitTests(t *testing.T) {
	args := []string{"test", "rules"}
	for _, f := range testFiles(t) {
		rel, _ := filepath.Rel(repoRoot(t), f)
		args = append(args, rel)
	}
	promtool(t, args...)
}

// Every alert has a test case where it fires (exp_alerts not empty) and one where it never does
// (healthy series, every exp_alerts empty), in test files that load the rules file.
func TestEveryAlertFiresAndStaysQuietInATest(t *testing.T) {
	fires, quiet := map[string]int{}, map[string]int{}
	for _, path := range testFiles(t) {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var f testFile
		if err := yaml.Unmarshal(raw, &f); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if !slices.Contains(f.RuleFiles, "../"+filepath.Base(rulesFile)) {
			t.Errorf("%s does not load %s (rule_files: %v)", path, rulesFile, f.RuleFiles)
		}
		for _, tc := range f.Tests {
			// A test case is quiet for an alert when it evaluates the alert and expects it at no
			// evaluation: a pending alert or one resolved in a firing case does not count.
			evaluated, fired := map[string]bool{}, map[string]bool{}
			for _, a := range tc.AlertRuleTest {
				evaluated[a.Alertname] = true
				if len(a.ExpAlerts) > 0 {
					fired[a.Alertname] = true
				}
			}
			for name := range evaluated {
				if fired[name] {
					fires[name]++
				} else {
					quiet[name]++
				}
			}
		}
	}
	names := map[string]bool{}
	for _, a := range alerts(t) {
		names[a.Alert] = true
		if fires[a.Alert] == 0 {
			t.Errorf("alert %s has no test case where it fires", a.Alert)
		}
		if quiet[a.Alert] == 0 {
			t.Errorf("alert %s has no test case where it stays quiet", a.Alert)
		}
	}
	for n := range fires {
		if !names[n] {
			t.Errorf("the tests expect alert %s, which the rules file does not hold", n)
		}
	}
}

// Every alert carries a severity, a summary and description, and a runbook_url naming the section
// of docs/troubleshooting.md headed with its name.
func TestEveryAlertHasARunbook(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), runbooks))
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "#") {
			anchors[slug(strings.TrimLeft(line, "#"))] = true
		}
	}
	for _, a := range alerts(t) {
		if s := a.Labels["severity"]; s != "warning" && s != "critical" {
			t.Errorf("alert %s: severity %q, want warning or critical", a.Alert, s)
		}
		for _, k := range []string{"summary", "description", "runbook_url"} {
			if strings.TrimSpace(a.Annotations[k]) == "" {
				t.Errorf("alert %s has no %s annotation", a.Alert, k)
			}
		}
		url := a.Annotations["runbook_url"]
		anchor, ok := strings.CutPrefix(url, runbookBase)
		switch {
		case !ok:
			t.Errorf("alert %s: runbook_url %s is not a section of %s (%s...)", a.Alert, url, runbooks, runbookBase)
		case anchor != slug(a.Alert):
			t.Errorf("alert %s: runbook_url names section #%s, want the one headed %s (#%s)", a.Alert, anchor, a.Alert, slug(a.Alert))
		case !anchors[anchor]:
			t.Errorf("alert %s: %s has no section headed %s (#%s)", a.Alert, runbooks, a.Alert, anchor)
		}
	}
}

// slug is GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces as dashes.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		" DNSPolicyRecordNotReady":                              "dnspolicyrecordnotready",
		"Records published by RFC 2136 (`kuadrant.io/rfc2136`)": "records-published-by-rfc-2136-kuadrantiorfc2136",
		"DNSRecord `Ready`":                                     "dnsrecord-ready",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
}
