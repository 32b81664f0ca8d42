package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A report as Ginkgo v2 writes it (--json-report), cut to the fields read: a BeforeSuite, a passed,
// a failed, a label-filtered (skipped) and a timed-out spec.
const ginkgoReport = `[{"SuiteSucceeded":false,"SpecialSuiteFailureReasons":null,"RunTime":75000000000,"SpecReports":[
{"LeafNodeType":"BeforeSuite","State":"passed"},
{"ContainerHierarchyTexts":["Single Record Test","simple"],"LeafNodeType":"It","LeafNodeText":"makes available a hostname","LeafNodeLabels":["single_record","simple"],"State":"passed"},
{"ContainerHierarchyTexts":["Single Record Test"],"ContainerHierarchyLabels":[["single_record"]],"LeafNodeType":"It","LeafNodeText":"handles wildcards","LeafNodeLabels":["single_record","wildcard"],"State":"failed",
 "Failure":{"Message":"Expected\n    <string>: a\nto equal\n    <string>: b","FailureNodeType":"It","Location":{"FileName":"/x/single_record_test.go","LineNumber":222}}},
{"ContainerHierarchyTexts":["Health Check Test"],"LeafNodeType":"It","LeafNodeText":"probes","LeafNodeLabels":["health_checks"],"State":"skipped"},
{"ContainerHierarchyTexts":["Multi Record Test"],"LeafNodeType":"It","LeafNodeText":"deletes","State":"timedout",
 "Failure":{"Message":"A spec timeout occurred","FailureNodeType":"AfterEach","Location":{"FileName":"/x/multi_record_test.go","LineNumber":90}}},
{"LeafNodeType":"AfterSuite","State":"failed","Failure":{"Message":"cleanup failed"}}
]}]`

func TestReport(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "report.json")
	if err := os.WriteFile(file, []byte(ginkgoReport), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	failed, err := runReport(&out, []string{"coredns=" + file, "endpoint=" + filepath.Join(dir, "missing.json")})
	if err != nil {
		t.Fatal(err)
	}
	if !failed {
		t.Error("a run with failed specs was not reported as failed")
	}
	got := out.String()
	for _, want := range []string{
		"backend   passed  failed  skipped  time\n",
		"coredns   1       2       1        1m15s\n",
		"endpoint  -       -       -        -  no report: open ",
		"coredns: suite failed: AfterSuite: cleanup failed\n",
		"coredns: FAILED [single_record, wildcard] Single Record Test handles wildcards\n  /x/single_record_test.go:222 (It, failed)\n  Expected <string>: a to equal <string>: b\n",
		"coredns: FAILED [] Multi Record Test deletes\n  /x/multi_record_test.go:90 (AfterEach, timedout)\n  A spec timeout occurred\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
}

// A run where every spec passed or was filtered out is not a failure.
func TestReportAllPassed(t *testing.T) {
	file := filepath.Join(t.TempDir(), "report.json")
	report := `[{"SuiteSucceeded":true,"RunTime":1000000000,"SpecReports":[{"LeafNodeType":"It","State":"passed"},{"LeafNodeType":"It","State":"skipped"}]}]`
	if err := os.WriteFile(file, []byte(report), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	failed, err := runReport(&out, []string{"endpoint=" + file})
	if err != nil || failed {
		t.Fatalf("failed=%v err=%v\n%s", failed, err, out.String())
	}
	if !strings.Contains(out.String(), "endpoint  1       0       1        1s\n") {
		t.Errorf("unexpected table:\n%s", out.String())
	}
}
