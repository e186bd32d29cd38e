package engine

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheckRepoSaysWhatToDo: a folder inside a repository names the
// repository to give; a repository without a commit says to commit; a
// repository with one (its branch loose or packed) passes.
func TestCheckRepoSaysWhatToDo(t *testing.T) {
	git := func(dir string, args ...string) {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	var s Service
	empty := t.TempDir()
	git(empty, "init", "-q")
	require.ErrorContains(t, s.checkRepo(empty, "default"), "has no commit yet: commit something first")

	repo := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(repo, "sub", "dir"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "sub", "dir", "f"), []byte("x"), 0o644))
	git(repo, "init", "-q")
	git(repo, "add", ".")
	git(repo, "commit", "-qm", "init")
	require.NoError(t, s.checkRepo(repo, "default"))
	err := s.checkRepo(filepath.Join(repo, "sub", "dir"), "default")
	require.ErrorContains(t, err, "is a folder inside the git repository "+repo+": name "+repo+" itself")

	git(repo, "pack-refs", "--all")
	require.NoError(t, s.checkRepo(repo, "default"), "a packed branch is a commit")
	git(repo, "checkout", "-q", "--detach")
	require.NoError(t, s.checkRepo(repo, "default"), "a detached HEAD is a commit")
}
