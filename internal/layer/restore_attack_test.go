package layer

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAttackRestoreWritesIntoGitThroughTrackedSymlink: a layer built at one
// commit holds an untracked directory g/ (setup made it); a later session of
// the same repository (same manifests, so the same key) is at a commit that
// tracks a symbolic link g -> .git. Restore follows the link (os.Root allows
// links that stay inside the root) and writes the layer's files into the new
// copy's .git, which the sandbox otherwise keeps read-only because host git
// reads it later.
func TestAttackRestoreWritesIntoGitThroughTrackedSymlink(t *testing.T) {
	l := &Layers{Dir: t.TempDir(), MaxBytes: 1 << 30}
	b, err := l.Build()
	require.NoError(t, err)
	src := t.TempDir()
	for _, p := range []string{"g/info/attributes", "g/index.lock", "g/hooks/pre-commit", "h/.git/info/exclude"} {
		require.NoError(t, os.MkdirAll(filepath.Join(src, filepath.Dir(p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(src, p), []byte("* -diff\n"), 0o755))
	}
	files, err := b.Capture(src, []string{"g/info/attributes", "g/index.lock", "g/hooks/pre-commit", "h/.git/info/exclude"})
	require.NoError(t, err)
	lay, err := b.Commit(Meta{Key: strings.Repeat("b", 64), Files: files})
	require.NoError(t, err)

	dst := t.TempDir()
	for _, d := range []string{".git/info", ".git/hooks"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dst, d), 0o755))
	}
	require.NoError(t, os.Symlink(".git", filepath.Join(dst, "g"))) // tracked at the later commit
	require.NoError(t, os.Symlink(".", filepath.Join(dst, "h")))    // likewise
	uid := 0
	if os.Getuid() == 0 {
		uid = 61000
	}
	_, err = lay.Restore(dst, "", uid)
	t.Logf("restore err: %v", err)
	var wrote []string
	for _, p := range []string{".git/info/attributes", ".git/index.lock", ".git/hooks/pre-commit", ".git/info/exclude"} {
		if _, err := os.Lstat(filepath.Join(dst, p)); err == nil {
			wrote = append(wrote, p)
		}
	}
	var owned []string
	for _, p := range []string{".git", ".git/info", ".git/hooks"} {
		if fi, err := os.Lstat(filepath.Join(dst, p)); err == nil && fi.Sys().(*syscall.Stat_t).Uid == 61000 {
			owned = append(owned, p)
		}
	}
	t.Logf("handed to the sandbox user: %v", owned)
	require.Empty(t, wrote, "Restore wrote into the new copy's .git through a tracked link")
}
