package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadOnlyPathsThroughLinks: a place's read-only path that is a link
// (a toolchain's usual /opt/sdk -> sdk-1.2) shows its target; one whose
// parent is a link into the hidden data directory is refused.
func TestReadOnlyPathsThroughLinks(t *testing.T) {
	root := t.TempDir()
	_ = os.Chmod(root, 0o755)
	_ = os.Chmod(filepath.Dir(root), 0o711)
	data := filepath.Join(root, "data")
	_ = os.MkdirAll(filepath.Join(data, "copies", "other-session"), 0o755)
	_ = os.WriteFile(filepath.Join(data, "copies", "other-session", "secret.txt"), []byte("other session's code"), 0o644)
	_ = os.Symlink(data, filepath.Join(root, "innocent"))
	_ = os.MkdirAll(filepath.Join(root, "sdk-1.2", "bin"), 0o755)
	_ = os.WriteFile(filepath.Join(root, "sdk-1.2", "bin", "tool"), []byte("tool"), 0o755)
	_ = os.Symlink("sdk-1.2", filepath.Join(root, "sdk"))
	b := *box
	b.Hide = []string{data}
	saved := box
	box = &b
	defer func() { box = saved }()
	dir := workdir(t)
	_, err := box.Run(context.Background(), Command{Place: Place{Workdir: dir, ReadOnly: []string{filepath.Join(root, "innocent", "copies")}}, Script: "true"})
	require.ErrorContains(t, err, "Paddock's data directory")
	res, out := runIn(t, dir, "ls "+root+"/sdk/bin/ "+root+"/sdk-1.2/bin/", func(c *Command) {
		c.ReadOnly = []string{filepath.Join(root, "sdk")}
	})
	require.Equal(t, 0, res.ExitCode, out)
	require.Equal(t, 2, strings.Count(out, "tool"), out)
}
