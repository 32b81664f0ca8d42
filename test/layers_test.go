package test

import (
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/dnspolicy/dnspolicy-controller"

// pure is the core: packages that compute, given their inputs, and reach nothing outside the
// process. The others under pkg/ are the services the controllers drive (the DNS server, peers,
// the prober, grants read from a file, goroutine supervision).
var pure = []string{"pkg/batch", "pkg/builder", "pkg/conditions", "pkg/dnssec", "pkg/geo", "pkg/hash", "pkg/health",
	"pkg/groups", "pkg/lease", "pkg/plan", "pkg/registry", "pkg/zone"}

// impure are the imports that reach outside the process, or into the cluster or the metrics registry
// (with the packages under them; net/netip and the like are values, not reach).
var impure = []string{"net", "net/http", "os", "os/exec", "syscall"}
var impureTrees = []string{"k8s.io/client-go", "sigs.k8s.io/controller-runtime", "github.com/prometheus/client_golang"}

// backendImports are the backends that may import another backend, and which: the coredns backend
// is Kuadrant's endpoint model plus its CoreDNS plugin's zone. builtin (the registry of backends) and
// conformance (the suite every backend passes) name backends by design.
var backendImports = map[string][]string{"providers/coredns": {"providers/endpoint"}}

// layerRule says why one import of a package breaks the layers, "" when it does not.
func layerRule(pkg, imp string) string {
	local, ours := strings.CutPrefix(imp, module+"/")
	under := func(path, dir string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }
	switch {
	case under(pkg, "pkg") && ours && (under(local, "providers") || under(local, "controllers") || under(local, "cmd") ||
		under(local, "test") || under(local, "hack")):
		return "pkg/ imports nothing from providers/, controllers/, cmd/, test/ or hack/: the data flows down to backends"
	case slices.Contains(pure, pkg) && ours && under(local, "pkg") && !slices.Contains(pure, local):
		return "the pure core imports only the pure core"
	case slices.Contains(pure, pkg) && (slices.Contains(impure, imp) || slices.ContainsFunc(impureTrees, func(p string) bool { return under(imp, p) })):
		return "the pure core reaches nothing outside the process (no network, files, cluster or metrics registry)"
	case under(pkg, "providers") && ours && (under(local, "controllers") || under(local, "cmd")):
		return "a backend never calls back into the engine or its controllers"
	case under(pkg, "providers") && ours && under(local, "pkg") && !slices.Contains(pure, local):
		return "a backend uses only the pure core of pkg/"
	case strings.Count(pkg, "/") == 1 && under(pkg, "providers") && pkg != "providers/builtin" && pkg != "providers/conformance" &&
		ours && strings.Count(local, "/") >= 1 && under(local, "providers") && !under(local, pkg) &&
		!slices.ContainsFunc(backendImports[pkg], func(b string) bool { return under(local, b) }):
		return "a backend imports no other backend (providers/builtin names them all)"
	}
	return ""
}

// The import direction of the house (docs/architecture.md): checked on every non-test Go file under
// pkg/ and providers/.
func TestLayers(t *testing.T) {
	root := repoRoot(t)
	checked := 0
	for _, top := range []string{"pkg", "providers"} {
		walkGo(t, root, filepath.Join(root, top), func(path, rel string) error {
			if strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			pkg := filepath.ToSlash(filepath.Dir(rel))
			for _, spec := range f.Imports {
				imp, _ := strconv.Unquote(spec.Path.Value)
				if why := layerRule(pkg, imp); why != "" {
					t.Errorf("%s imports %s: %s", rel, imp, why)
				}
			}
			checked++
			return nil
		})
	}
	if checked < 50 {
		t.Fatalf("checked only %d files: the walk missed the tree", checked)
	}
}

// The rules themselves, each on an import that breaks it and one that does not.
func TestLayerRules(t *testing.T) {
	for _, tc := range []struct {
		pkg, imp string
		broken   bool
	}{
		{"pkg/dnsserver", module + "/providers", true},
		{"pkg/peers", module + "/controllers/dnsrecord", true},
		{"pkg/peers", module + "/pkg/plan", false},
		{"pkg/plan", module + "/pkg/registry", false},
		{"pkg/plan", module + "/pkg/dnsserver", true},
		{"pkg/registry", "net", true},
		{"pkg/registry", "net/netip", false},
		{"pkg/lease", "k8s.io/client-go/rest", true},
		{"pkg/health", "github.com/prometheus/client_golang/prometheus", true},
		{"pkg/dnsserver", "net", false},
		{"providers/route53", module + "/controllers/dnsrecord/publish", true},
		{"providers/route53", module + "/pkg/geo", false},
		{"providers/route53", module + "/pkg/prober", true},
		{"providers/route53", module + "/providers/clouddns", true},
		{"providers/route53", module + "/providers", false},
		{"providers/coredns", module + "/providers/endpoint", false},
		{"providers/builtin", module + "/providers/azure", false},
	} {
		t.Run(fmt.Sprintf("%s imports %s", tc.pkg, tc.imp), func(t *testing.T) {
			if why := layerRule(tc.pkg, tc.imp); (why != "") != tc.broken {
				t.Errorf("broken %v, want %v (%q)", why != "", tc.broken, why)
			}
		})
	}
}

// docs/architecture.md names every package of pkg/, controllers/ and providers/, so a new one is
// placed on the map when it is made.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	root := repoRoot(t)
	page, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, top := range []string{"pkg", "controllers", "providers"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			files, _ := filepath.Glob(filepath.Join(path, "*.go"))
			if len(files) == 0 || path == filepath.Join(root, top) {
				return nil
			}
			rel, _ := filepath.Rel(root, path)
			if !strings.Contains(string(page), "`"+filepath.ToSlash(rel)+"`") {
				t.Errorf("docs/architecture.md does not name %s", rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
