// Package test holds the emulators, integration and end-to-end suites and the benchmarks; this file
// keeps the test tiers honest: `go test ./...` needs nothing but Go, because every test file that
// needs a control plane, a Debian DNS tool or a built binary says so with a build tag, and
// `make test` sets the tags.
package test

import (
	"go/build/constraint"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// needsIntegration are the imports that mean a test needs the envtest binaries or Debian's tools.
var needsIntegration = []string{
	"github.com/dnspolicy/dnspolicy-controller/test/testenv",
	"github.com/dnspolicy/dnspolicy-controller/test/bind",
	"github.com/dnspolicy/dnspolicy-controller/test/resolver",
	"github.com/dnspolicy/dnspolicy-controller/test/externaldns",
	"github.com/dnspolicy/dnspolicy-controller/hack/controlplane",
	"sigs.k8s.io/controller-runtime/pkg/envtest",
}

// Every test file importing what starts a control plane or runs BIND or dig is built only with the
// integration tag; test/e2e only with e2e; test/mixedfleet only with mixedfleet. A test file that
// runs a tool itself (os/exec) must carry one of the tags too. (A test under test/integration that needs only Go, such as in-process
// emulators, may stay in the unit tier.)
func TestTiersAreTagged(t *testing.T) {
	root := repoRoot(t)
	checked := 0
	walkGo(t, root, root, func(path, rel string) error {
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		var expr constraint.Expr
		for _, group := range f.Comments {
			if group.Pos() > f.Package {
				break
			}
			for _, c := range group.List {
				if constraint.IsGoBuild(c.Text) {
					if expr, err = constraint.Parse(c.Text); err != nil {
						return err
					}
				}
			}
		}
		// with reports whether the file is built when exactly these tags are set.
		with := func(tags ...string) bool {
			return expr == nil || expr.Eval(func(tag string) bool {
				for _, t := range tags {
					if t == tag {
						return true
					}
				}
				return tag == "linux" || tag == "unix" || tag == "amd64" || tag == "arm64"
			})
		}
		checked++
		want := ""
		switch {
		case strings.HasPrefix(rel, filepath.Join("test", "e2e")+string(filepath.Separator)):
			want = "e2e"
		case strings.HasPrefix(rel, filepath.Join("test", "mixedfleet")+string(filepath.Separator)):
			// Needs a checkout of Kuadrant's dns-operator: `make mixed-fleet`, outside `make test`.
			want = "mixedfleet"
		default:
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				for _, n := range needsIntegration {
					if p == n {
						want = "integration"
					}
				}
				if p == "os/exec" && with() {
					t.Errorf("%s runs a tool (imports os/exec) and is built without a tag: add //go:build integration", rel)
				}
			}
		}
		if want == "integration" && with("tenancy") && !with("integration") {
			// The adversarial tier (test/install, `make test-tenancy`) needs what integration needs.
			want = "tenancy"
		}
		if want != "" && (with() || !with(want)) {
			t.Errorf("%s needs more than Go and must be built only with the %s tag: start it with //go:build %s", rel, want, want)
		}
		return nil
	})
	if checked < 20 {
		t.Fatalf("only %d test files found under %s", checked, root)
	}
}
