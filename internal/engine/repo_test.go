package engine

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/session"
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

// TestCheckRepoTakesAWorktree: a worktree (its .git a file naming its
// git directory in the repository it belongs to) is a repository to copy;
// under repository roots, the repository it belongs to must be the
// project's too, since its copy reads that one's objects.
func TestCheckRepoTakesAWorktree(t *testing.T) {
	git := func(dir string, args ...string) {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	roots := t.TempDir()
	main := filepath.Join(roots, "default", "calc")
	require.NoError(t, os.MkdirAll(main, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(main, "f"), []byte("x"), 0o644))
	git(main, "init", "-q")
	git(main, "add", ".")
	git(main, "commit", "-qm", "init")
	wt := filepath.Join(roots, "default", "calc-feature")
	git(main, "worktree", "add", "-q", "-b", "feature", wt)

	var s Service
	require.NoError(t, s.checkRepo(wt, "default"))
	s.RepositoryRoots = []string{roots}
	require.NoError(t, s.checkRepo(wt, "default"), "both checkouts are the project's")

	// The same worktree seen from another project's root: its git data
	// lies in project default's repository.
	other := filepath.Join(roots, "other")
	require.NoError(t, os.MkdirAll(other, 0o755))
	moved := filepath.Join(other, "feature")
	git(main, "worktree", "move", wt, moved)
	err := s.checkRepo(moved, "other")
	require.ErrorContains(t, err, "keeps its git data in")
	require.ErrorContains(t, err, "which is not one of project other's repositories")

	// A checkout outside the server's data directory whose git data lies
	// in it is refused as the data directory itself is.
	inData := Service{DataDir: main}
	err = inData.mayCopy(context.Background(), moved, "other", session.Sender{Kind: session.SenderOperator, ID: "root"})
	require.ErrorContains(t, err, "holds or lies in the server's data directory")
}
