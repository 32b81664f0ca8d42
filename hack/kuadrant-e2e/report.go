package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// The fields of Ginkgo v2's JSON report (--json-report) that the table needs; the report is a list
// of suites, each with one entry per node (BeforeSuite, It, ...).
type suiteReport struct {
	SuiteSucceeded             bool
	SpecialSuiteFailureReasons []string
	RunTime                    time.Duration
	SpecReports                []specReport
}

type specReport struct {
	ContainerHierarchyTexts  []string
	ContainerHierarchyLabels [][]string
	LeafNodeType             string
	LeafNodeText             string
	LeafNodeLabels           []string
	State                    string
	RunTime                  time.Duration
	Failure                  struct {
		Message         string
		FailureNodeType string
		Location        struct {
			FileName   string
			LineNumber int
		}
	}
}

// labels are the spec's own and its containers' labels, as Ginkgo's label filter sees them.
func (s specReport) labels() []string {
	var all []string
	for _, l := range append(append([][]string{}, s.ContainerHierarchyLabels...), s.LeafNodeLabels) {
		for _, label := range l {
			if !slices.Contains(all, label) {
				all = append(all, label)
			}
		}
	}
	return all
}

func (s specReport) name() string {
	return strings.Join(append(append([]string{}, s.ContainerHierarchyTexts...), s.LeafNodeText), " ")
}

type counts struct {
	passed, failed, skipped int
	runTime                 time.Duration
	failures                []specReport
	suiteFailures           []string
}

// tally counts the It nodes by state (a spec filtered out by labels is "skipped", as Ginkgo says);
// a failed BeforeSuite or AfterSuite fails the run without being a spec, so it is listed apart.
func tally(reports []suiteReport) counts {
	var c counts
	for _, r := range reports {
		c.runTime += r.RunTime
		c.suiteFailures = append(c.suiteFailures, r.SpecialSuiteFailureReasons...)
		for _, s := range r.SpecReports {
			failed := s.State != "passed" && s.State != "skipped" && s.State != "pending"
			if s.LeafNodeType != "It" {
				if failed {
					c.suiteFailures = append(c.suiteFailures, s.LeafNodeType+": "+brief(s.Failure.Message))
				}
				continue
			}
			switch {
			case s.State == "passed":
				c.passed++
			case failed:
				c.failed++
				c.failures = append(c.failures, s)
			default:
				c.skipped++
			}
		}
	}
	return c
}

// brief is a failure message on one line, cut short: Gomega's span many lines, and the full text
// is in the suite's log.
func brief(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 300 {
		return string(r[:300]) + " ..."
	}
	return s
}

// runReport prints, for each NAME=FILE, the specs passed, failed and skipped, then each failed
// spec with where and why it failed. It reports whether anything failed.
func runReport(w io.Writer, args []string) (bool, error) {
	if len(args) == 0 {
		return false, fmt.Errorf("report: no NAME=FILE given")
	}
	type row struct {
		name string
		c    counts
		err  error
	}
	var rows []row
	for _, arg := range args {
		name, file, ok := strings.Cut(arg, "=")
		if !ok {
			return false, fmt.Errorf("report: %q is not NAME=FILE", arg)
		}
		var reports []suiteReport
		b, err := os.ReadFile(file)
		if err == nil {
			err = json.Unmarshal(b, &reports)
		}
		rows = append(rows, row{name: name, c: tally(reports), err: err})
	}
	anyFailed := false
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "backend\tpassed\tfailed\tskipped\ttime")
	for _, r := range rows {
		if r.err != nil {
			anyFailed = true
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\tno report: %v\n", r.name, r.err)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", r.name, r.c.passed, r.c.failed, r.c.skipped, r.c.runTime.Round(time.Second))
		anyFailed = anyFailed || r.c.failed > 0 || len(r.c.suiteFailures) > 0
	}
	if err := tw.Flush(); err != nil {
		return false, err
	}
	for _, r := range rows {
		for _, f := range r.c.suiteFailures {
			fmt.Fprintf(w, "\n%s: suite failed: %s\n", r.name, f)
		}
		for _, s := range r.c.failures {
			fmt.Fprintf(w, "\n%s: FAILED [%s] %s\n  %s:%d (%s, %s)\n  %s\n", r.name, strings.Join(s.labels(), ", "), s.name(),
				s.Failure.Location.FileName, s.Failure.Location.LineNumber, s.Failure.FailureNodeType, s.State, brief(s.Failure.Message))
		}
	}
	return anyFailed, nil
}
