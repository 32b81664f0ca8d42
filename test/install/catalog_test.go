//go:build integration

package install_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/hack/controlplane"
)

// opm (built by hack/opm.sh into the cache) validates the committed file-based catalog, and refuses
// it once a channel names a bundle that is not there.
func TestCatalogValidates(t *testing.T) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", filepath.Join(root, "hack", "opm.sh")).Output()
	if err != nil {
		t.Fatalf("hack/opm.sh: %v", err)
	}
	opm := strings.TrimSpace(string(out))
	catalog := filepath.Join(root, "catalog")
	if b, err := exec.Command(opm, "validate", catalog).CombinedOutput(); err != nil {
		t.Fatalf("opm validate catalog: %v\n%s", err, b)
	}

	broken := t.TempDir()
	for _, pkg := range []string{"dnspolicy-controller", "dns-operator"} {
		data, err := os.ReadFile(filepath.Join(catalog, pkg, "catalog.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if pkg == "dns-operator" {
			data = []byte(strings.Replace(string(data), "- name: dns-operator.v", "- name: dns-operator.v9", 1))
		}
		if err := os.MkdirAll(filepath.Join(broken, pkg), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(broken, pkg, "catalog.yaml"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := exec.Command(opm, "validate", broken).CombinedOutput(); err == nil {
		t.Errorf("opm accepted a channel entry with no bundle:\n%s", b)
	}
}
