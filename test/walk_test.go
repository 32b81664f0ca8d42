package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is the repository's root: tests run in their package's directory, test/.
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(wd)
}

// walkGo calls visit with every Go file under dir (its path, and its path relative to root), past
// testdata, bin and hidden directories, and returns how many it visited.
func walkGo(t *testing.T, root, dir string, visit func(path, rel string) error) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != dir && (d.Name() == "testdata" || d.Name() == "bin" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		n++
		return visit(path, rel)
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
