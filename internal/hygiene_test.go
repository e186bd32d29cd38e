package internal_test

import (
	"bytes"
	"go/format"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTreeIsTidy fails when a Go file is not gofmt-formatted, go vet
// complains, or go.mod/go.sum are not tidy: CI runs only `go test ./...`,
// so the hygiene checks live here.
func TestTreeIsTidy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go vet over the whole module")
	}
	_ = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if out, err := format.Source(src); err != nil || !bytes.Equal(out, src) {
			t.Errorf("%s is not gofmt-formatted (run gofmt -w %s)", path, path)
		}
		return nil
	})
	for _, args := range [][]string{{"vet", "./..."}, {"mod", "tidy", "-diff"}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
