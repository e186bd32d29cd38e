package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/session"
)

// worktree is a checkout made by `git worktree add` of a repository:
// on a branch of its own with a commit the main checkout lacks, an
// uncommitted edit and an untracked file.
func worktree(t *testing.T) (main, wt, head string) {
	main, _ = repo(t)
	wt = filepath.Join(t.TempDir(), "feature")
	gitOut(t, main, "worktree", "add", "-q", "-b", "feature", wt)
	write(t, wt, "notes.md", "one\ntwo\nthree\n")
	gitOut(t, wt, "add", "notes.md")
	gitOut(t, wt, "commit", "-qm", "notes, on the feature branch")
	head = strings.TrimSpace(gitOut(t, wt, "rev-parse", "HEAD"))
	write(t, wt, "main.go", "package main\n\n// edited in the worktree\n")
	write(t, wt, "todo.txt", "untracked\n")
	return main, wt, head
}

// TestAWorktreeIsCopiedAsItIs: a worktree's checkout is located through
// its .git file, copied at its own HEAD with its work in progress, and
// an accept lands in it, not in the main checkout.
func TestAWorktreeIsCopiedAsItIs(t *testing.T) {
	ctx := context.Background()
	main, wt, head := worktree(t)
	dirs, err := Locate(wt)
	require.NoError(t, err)
	common, err := filepath.EvalSymlinks(filepath.Join(main, ".git"))
	require.NoError(t, err)
	require.Equal(t, common, dirs.Common)
	require.Equal(t, filepath.Join(common, "worktrees", "feature"), dirs.Own)
	require.Len(t, dirs.Paths(), 2)

	dir := filepath.Join(t.TempDir(), "copy")
	o, err := AsIs(ctx, wt, dir, nil, Clone)
	require.NoError(t, err)
	require.Equal(t, head, o.Head, "the worktree's HEAD, not the main checkout's")
	require.ElementsMatch(t, []string{"main.go", "todo.txt"}, o.Files)
	require.Equal(t, "one\ntwo\nthree\n", read(t, dir, "notes.md"))
	require.Equal(t, "package main\n\n// edited in the worktree\n", read(t, dir, "main.go"))

	write(t, dir, "notes.md", "one\nTWO\nthree\n")
	d, err := Compute(ctx, dir, o.Base)
	require.NoError(t, err)
	require.Len(t, d.Files, 1)
	commit, err := Apply(ctx, wt, d, session.AsCommit, "agent")
	require.NoError(t, err)
	require.Equal(t, "one\nTWO\nthree\n", read(t, wt, "notes.md"))
	require.Equal(t, commit, strings.TrimSpace(gitOut(t, wt, "rev-parse", "feature")), "committed on the worktree's branch")
	require.NoFileExists(t, filepath.Join(main, "notes.md"), "the main checkout untouched")
	require.Equal(t, "package main\n\n// edited in the worktree\n", read(t, wt, "main.go"), "their edit kept")
}

// TestLocateRefusesWhatIsNotAWorktreeOfIt: a .git file must name a git
// directory that is this checkout's: a worktree that names another
// checkout back, a directory that is no repository, a link, a file
// without "gitdir:" are refused with what to do; a separate git
// directory (git init --separate-git-dir) is its own.
func TestLocateRefusesWhatIsNotAWorktreeOfIt(t *testing.T) {
	_, wt, _ := worktree(t)
	own, err := Locate(wt)
	require.NoError(t, err)

	impostor := t.TempDir()
	write(t, impostor, ".git", "gitdir: "+own.Own+"\n")
	_, err = Locate(impostor)
	require.ErrorContains(t, err, "belongs to another checkout")

	notGit := t.TempDir()
	write(t, notGit, "worktrees/x/HEAD", "ref: refs/heads/main\n")
	write(t, notGit, "worktrees/x/commondir", "../..\n")
	write(t, notGit, "worktrees/x/gitdir", filepath.Join(impostor, ".git")+"\n")
	write(t, impostor, ".git", "gitdir: "+filepath.Join(notGit, "worktrees", "x")+"\n")
	_, err = Locate(impostor)
	require.ErrorContains(t, err, "not a worktree of a repository")

	write(t, impostor, ".git", "not a pointer\n")
	_, err = Locate(impostor)
	require.ErrorContains(t, err, `does not say "gitdir: PATH"`)

	require.NoError(t, os.Remove(filepath.Join(impostor, ".git")))
	require.NoError(t, os.Symlink(filepath.Join(wt, ".git"), filepath.Join(impostor, ".git")))
	_, err = Locate(impostor)
	require.ErrorContains(t, err, "symbolic link")

	require.ErrorIs(t, func() error { _, err := Locate(t.TempDir()); return err }(), ErrNotGit)

	sep := t.TempDir()
	gitDir := filepath.Join(t.TempDir(), "separate.git")
	gitOut(t, sep, "init", "-q", "--separate-git-dir", gitDir)
	write(t, sep, "a.txt", "a\n")
	gitOut(t, sep, "add", "a.txt")
	gitOut(t, sep, "commit", "-qm", "a")
	dirs, err := Locate(sep)
	require.NoError(t, err)
	real, _ := filepath.EvalSymlinks(gitDir)
	require.Equal(t, GitDirs{Own: real, Common: real}, dirs)

	// A worktree whose common directory borrows objects is refused as
	// the repository itself would be.
	main, wt2, _ := worktree(t)
	write(t, main, ".git/objects/info/alternates", "/elsewhere/objects\n")
	_, err = Locate(wt2)
	require.True(t, err != nil && !errors.Is(err, ErrNotGit) && strings.Contains(err.Error(), "borrows another repository"), "%v", err)
}
