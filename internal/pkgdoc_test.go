// Package internal_test checks that every package says what it is for.
package internal_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

func TestEveryPackageHasADocComment(t *testing.T) {
	dirs := map[string]bool{}
	for _, root := range []string{".", "../cmd"} {
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
				dirs[filepath.Dir(path)] = true
			}
			return err
		})
	}
	for dir := range dirs {
		pkgs, err := parser.ParseDir(token.NewFileSet(), dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			t.Fatal(err)
		}
		for name, p := range pkgs {
			documented := false
			for _, f := range p.Files {
				documented = documented || f.Doc != nil
			}
			if !documented {
				t.Errorf("package %s (%s) has no doc comment", name, dir)
			}
		}
	}
}
