package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// sharedDir is a directory every user may write (the repository owner,
// uid 65534 when the tests run as root, leaves markers there).
func sharedDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "paddock-atk2-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	require.NoError(t, os.Chmod(d, 0o777))
	return d
}

// ownedRepo is repo(t) handed to an unprivileged owner when the tests run
// as root, so that Branch switches users as a root server does.
func ownedRepo(t *testing.T) (string, string) {
	t.Helper()
	src, base := repo(t)
	if os.Getuid() == 0 {
		require.NoError(t, filepath.WalkDir(src, func(p string, _ os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, 65534, 65534)
		}))
		require.NoError(t, os.Chmod(filepath.Dir(src), 0o755))
	}
	return src, base
}

func acceptedCommit(t *testing.T, src, base string) (work, commit string) {
	t.Helper()
	ctx := context.Background()
	work = filepath.Join(t.TempDir(), "copy")
	require.NoError(t, Clone(ctx, src, work))
	require.NoError(t, os.WriteFile(filepath.Join(work, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644))
	d, err := Compute(ctx, work, base)
	require.NoError(t, err)
	commit, err = Snapshot(ctx, work, base, d.Tree, "accepted", Author{})
	require.NoError(t, err)
	return work, commit
}

// TestBranchLeaksServerEnvironmentToRepoOwner: a server running as
// root delivers an accepted diff by running git as the repository's owner
// with the server's whole environment (os.Environ: provider API keys,
// PADDOCK_ENCRYPTION_KEY, ...). git fetch runs the owner's core.fsmonitor
// (their repository's config or ~/.gitconfig), so any local user who owns
// a repository of origin reads the server's secrets (and could anyway from
// /proc/PID/environ of that git, which runs as them).
func TestBranchLeaksServerEnvironmentToRepoOwner(t *testing.T) {
	ctx := context.Background()
	t.Setenv("ANTHROPIC_API_KEY", "sk-attack2-secret")
	src, base := ownedRepo(t)
	work, commit := acceptedCommit(t, src, base)

	shared := sharedDir(t)
	script := filepath.Join(shared, "fsmonitor.sh")
	require.NoError(t, os.WriteFile(script, []byte(fmt.Sprintf("#!/bin/sh\nenv > %s/env-seen\nexit 1\n", shared)), 0o755))
	// The owner's own configuration of their own repository.
	cfg, err := os.OpenFile(filepath.Join(src, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = fmt.Fprintf(cfg, "[core]\n\tfsmonitor = %s\n", script)
	require.NoError(t, err)
	require.NoError(t, cfg.Close())

	require.NoError(t, Branch(ctx, work, base, commit, src, "paddock/s1"))
	seen, _ := os.ReadFile(filepath.Join(shared, "env-seen"))
	require.NotContains(t, string(seen), "sk-attack2-secret", "the repository owner's program saw the server's secrets")
	require.NoFileExists(t, filepath.Join(shared, "env-seen"), "delivering ran a program the owner configured")
}

// TestBranchFollowsSymlinkedRefsOutOfCopy: Branch runs update-ref in
// the working copy; a copy whose .git/refs/paddock is a symlink makes the
// server write refs/paddock/deliver wherever it points (as the server's
// uid). Defence in depth only: the sandbox binds .git read-only.
func TestBranchFollowsSymlinkedRefsOutOfCopy(t *testing.T) {
	ctx := context.Background()
	src, base := ownedRepo(t)
	work, commit := acceptedCommit(t, src, base)
	outside := t.TempDir()
	require.NoError(t, os.Symlink(outside, filepath.Join(work, ".git", "refs", "paddock")))
	_ = Branch(ctx, work, base, commit, src, "paddock/s1")
	entries, _ := os.ReadDir(outside)
	require.Empty(t, entries, "the host wrote through a symlink planted in the copy's .git")
}

// TestSnapshotAndBranchRefuseNames: the tree, base and commit the
// browser's form names reach git only as object names.
func TestSnapshotAndBranchRefuseNames(t *testing.T) {
	ctx := context.Background()
	src, base := repo(t)
	work := filepath.Join(t.TempDir(), "copy")
	require.NoError(t, Clone(ctx, src, work))
	for _, tree := range []string{"HEAD^{tree}", "--output=/tmp/x", "main", strings.Repeat("g", 40), base + ":"} {
		_, err := Snapshot(ctx, work, base, tree, "m", Author{})
		require.ErrorIs(t, err, ErrUntrusted, tree)
	}
	for _, c := range []string{"HEAD", "--upload-pack=touch /tmp/x", "refs/heads/main"} {
		require.ErrorIs(t, Branch(ctx, work, base, c, src, "paddock/x"), ErrUntrusted, c)
		require.ErrorIs(t, Branch(ctx, work, c, base, src, "paddock/x"), ErrUntrusted, c)
	}
}
