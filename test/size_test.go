package test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// Limits a reader can hold in their head: a file of one idea, a function read without scrolling back.
const (
	maxFileLines = 600
	maxFuncLines = 120
)

// Every non-test, non-generated Go file of the repository keeps to the limits.
func TestFileAndFunctionSizes(t *testing.T) {
	root := repoRoot(t)
	checked := 0
	walkGo(t, root, root, func(path, rel string) error {
		if strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		checked++
		if n := bytes.Count(src, []byte("\n")); n > maxFileLines {
			t.Errorf("%s: %d lines, more than %d: split it along its seams", rel, n, maxFileLines)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > maxFuncLines {
				t.Errorf("%s: func %s is %d lines, more than %d", rel, fn.Name.Name, n, maxFuncLines)
			}
		}
		return nil
	})
	if checked < 100 {
		t.Fatalf("checked only %d files: the walk missed the tree", checked)
	}
}
