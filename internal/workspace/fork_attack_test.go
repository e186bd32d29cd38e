package workspace

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// attackFork is a parent copy and a fork of it.
func attackFork(t *testing.T, prepare func(parent string)) (parent, fork, base string) {
	t.Helper()
	ctx := context.Background()
	src, _ := repo(t)
	parent = filepath.Join(t.TempDir(), "parent")
	require.NoError(t, Clone(ctx, src, parent))
	head := strings.TrimSpace(gitOut(t, parent, "rev-parse", "HEAD"))
	if prepare != nil {
		prepare(parent)
	}
	fork = filepath.Join(t.TempDir(), "fork")
	base, _, err := Fork(ctx, parent, head, fork)
	require.NoError(t, err)
	return parent, fork, base
}

// TestAttackDeliverIntoGitThroughSwappedDir: the parent (whose other
// calls of the step run while the child works) plants d/config and
// d/HEAD byte-equal to its .git's, lets the child fork, then swaps d for
// a link to .git; the child changes d/config and deletes d/HEAD. The
// check (currentVersion, through os.Root, which follows links inside the
// root) sees the parent's d/config "as it was": Deliver must still write
// nothing into .git.
func TestAttackDeliverIntoGitThroughSwappedDir(t *testing.T) {
	ctx := context.Background()
	var config, head []byte
	parent, fork, base := attackFork(t, func(parent string) {
		var err error
		config, err = os.ReadFile(filepath.Join(parent, ".git", "config"))
		require.NoError(t, err)
		head, err = os.ReadFile(filepath.Join(parent, ".git", "HEAD"))
		require.NoError(t, err)
		write(t, parent, "d/config", string(config))
		write(t, parent, "d/HEAD", string(head))
	})
	write(t, fork, "d/config", "[core]\n\tfsmonitor = touch /tmp/pwned\n")
	require.NoError(t, os.Remove(filepath.Join(fork, "d/HEAD")))
	// The parent swaps d for a link into its .git.
	require.NoError(t, os.RemoveAll(filepath.Join(parent, "d")))
	require.NoError(t, os.Symlink(".git", filepath.Join(parent, "d")))

	_, _, _, err := Deliver(ctx, fork, base, parent)
	t.Logf("deliver: %v", err)
	got, rerr := os.ReadFile(filepath.Join(parent, ".git", "config"))
	require.NoError(t, rerr)
	require.Equal(t, string(config), string(got), ".git/config written by Deliver")
	got, rerr = os.ReadFile(filepath.Join(parent, ".git", "HEAD"))
	require.NoError(t, rerr, ".git/HEAD removed by Deliver")
	require.Equal(t, string(head), string(got))
}

// TestAttackDeliverModesAndDirs: a setuid file of the child is delivered
// without its setuid bit; a file the child adds where the parent made a
// directory meanwhile is a conflict (the parent's directory is not
// RemoveAll'd).
func TestAttackDeliverModesAndDirs(t *testing.T) {
	ctx := context.Background()
	parent, fork, base := attackFork(t, nil)
	write(t, fork, "suid", "#!/bin/sh\n")
	require.NoError(t, os.Chmod(filepath.Join(fork, "suid"), 0o4755|os.ModeSetuid))
	write(t, fork, "big", "a file\n")
	write(t, parent, "big/keep.txt", "the parent's work\n")
	applied, conflicts, _, err := Deliver(ctx, fork, base, parent)
	require.NoError(t, err)
	t.Logf("applied %v conflicts %v", applied, conflicts)
	fi, err := os.Lstat(filepath.Join(parent, "suid"))
	require.NoError(t, err)
	require.Zero(t, fi.Mode()&(os.ModeSetuid|os.ModeSetgid), "setuid carried: %v", fi.Mode())
	require.Equal(t, "the parent's work\n", read(t, parent, "big/keep.txt"))
}

// TestAttackDeliverNestedRepository: the child makes a nested repository
// whose own .git holds hooks; nothing of a .git reaches the parent.
func TestAttackDeliverNestedRepository(t *testing.T) {
	ctx := context.Background()
	parent, fork, base := attackFork(t, nil)
	sub := filepath.Join(fork, "sub")
	require.NoError(t, os.MkdirAll(sub, 0o755))
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"}} {
		out, err := exec.Command("git", append([]string{"-C", sub}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	write(t, fork, "sub/.git/hooks/post-checkout", "#!/bin/sh\ntouch /tmp/pwned\n")
	write(t, fork, "sub/file", "x\n")
	_, _, skipped, err := Deliver(ctx, fork, base, parent)
	t.Logf("skipped %v err %v", skipped, err)
	_, serr := os.Lstat(filepath.Join(parent, "sub", ".git"))
	require.ErrorIs(t, serr, os.ErrNotExist)
}

// TestAttackDeliverErrorLeavesPartialWrites: a path that goes through a
// link the parent planted (where WriteBack would stop midway, after
// writing what came before it) is a conflict, known before anything is
// written; the rest is applied and reported so.
func TestAttackDeliverErrorLeavesPartialWrites(t *testing.T) {
	ctx := context.Background()
	parent, fork, base := attackFork(t, func(parent string) {
		write(t, parent, "z/f", "z\n")
	})
	write(t, fork, "a/new.txt", "from the child\n")
	write(t, fork, "z/f", "changed\n")
	require.NoError(t, os.RemoveAll(filepath.Join(parent, "z")))
	require.NoError(t, os.Mkdir(filepath.Join(parent, "elsewhere"), 0o755))
	write(t, parent, "elsewhere/f", "z\n")
	require.NoError(t, os.Symlink("elsewhere", filepath.Join(parent, "z")))
	applied, conflicts, _, err := Deliver(ctx, fork, base, parent)
	require.NoError(t, err, "a path through the parent's link is a conflict, found before anything is written")
	require.Equal(t, []string{"a/new.txt"}, applied)
	require.Equal(t, []string{"z/f"}, conflicts)
	require.Equal(t, "z\n", read(t, parent, "elsewhere/f"), "nothing written through the link")
	require.Equal(t, "from the child\n", read(t, parent, "a/new.txt"))
}
