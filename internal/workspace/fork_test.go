package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestForkAndDeliver: a fork starts from its parent's copy as it is
// (work in progress included, on a base no ref names), its own diff is
// only its own work, and delivering it writes that work into the parent
// unless the parent changed the same file meanwhile (a sibling's work
// delivered first): that one is a conflict and keeps the parent's bytes.
func TestForkAndDeliver(t *testing.T) {
	ctx := context.Background()
	src, _ := repo(t)
	parent := filepath.Join(t.TempDir(), "parent")
	require.NoError(t, Clone(ctx, src, parent))
	head := strings.TrimSpace(gitOut(t, parent, "rev-parse", "HEAD"))
	// An accepted snapshot: a base no ref names.
	write(t, parent, "accepted.txt", "accepted\n")
	st, err := Capture(ctx, parent, head)
	require.NoError(t, err)
	base, err := Snapshot(ctx, parent, head, st.Tree, "accepted", Author{})
	require.NoError(t, err)
	write(t, parent, "main.go", "package main\n\n// parent's work in progress\n")
	require.NoError(t, os.Symlink("main.go", filepath.Join(parent, "link")))

	forks := t.TempDir()
	a, b := filepath.Join(forks, "a"), filepath.Join(forks, "b")
	aBase, skipped, err := Fork(ctx, parent, base, a)
	require.NoError(t, err)
	require.Empty(t, skipped)
	bBase, _, err := Fork(ctx, parent, base, b)
	require.NoError(t, err)
	require.Equal(t, "package main\n\n// parent's work in progress\n", read(t, a, "main.go"))
	require.Equal(t, "accepted\n", read(t, a, "accepted.txt"))
	target, err := os.Readlink(filepath.Join(a, "link"))
	require.NoError(t, err)
	require.Equal(t, "main.go", target)
	own, err := Capture(ctx, a, aBase)
	require.NoError(t, err)
	require.Empty(t, own.Files, "a fork's diff starts empty")
	require.Empty(t, strings.TrimSpace(gitOut(t, a, "status", "--porcelain")), "the fork's git shows no change")

	// Each fork works; both touch shared.txt.
	write(t, a, "main.go", "package main\n\n// a's work\n")
	write(t, a, "shared.txt", "from a\n")
	require.NoError(t, os.Remove(filepath.Join(a, "go.mod")))
	write(t, b, "b.txt", "from b\n")
	write(t, b, "shared.txt", "from b\n")

	applied, conflicts, _, err := Deliver(ctx, b, bBase, parent)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"b.txt", "shared.txt"}, applied)
	require.Empty(t, conflicts)
	applied, conflicts, _, err = Deliver(ctx, a, aBase, parent)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"main.go", "go.mod"}, applied)
	require.Equal(t, []string{"shared.txt"}, conflicts)
	require.Equal(t, "package main\n\n// a's work\n", read(t, parent, "main.go"))
	require.Equal(t, "from b\n", read(t, parent, "shared.txt"), "the first delivery stands")
	require.Equal(t, "from b\n", read(t, parent, "b.txt"))
	_, err = os.Lstat(filepath.Join(parent, "go.mod"))
	require.ErrorIs(t, err, os.ErrNotExist)

	// Delivered again (a retry after a crash): nothing new, no conflict
	// made of its own work.
	applied, conflicts, _, err = Deliver(ctx, a, aBase, parent)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"main.go", "go.mod"}, applied)
	require.Equal(t, []string{"shared.txt"}, conflicts)
}

// TestDeliverNeverFollowsLinks: a fork that plants a link where the
// parent has a directory, or a parent whose file became a link to a
// host path, never makes the delivery write outside the parent's copy.
func TestDeliverNeverFollowsLinks(t *testing.T) {
	ctx := context.Background()
	src, _ := repo(t)
	parent := filepath.Join(t.TempDir(), "parent")
	require.NoError(t, Clone(ctx, src, parent))
	head := strings.TrimSpace(gitOut(t, parent, "rev-parse", "HEAD"))
	fork := filepath.Join(t.TempDir(), "fork")
	base, _, err := Fork(ctx, parent, head, fork)
	require.NoError(t, err)
	outside := t.TempDir()
	require.NoError(t, os.Symlink(outside, filepath.Join(fork, "escape")))
	write(t, fork, "main.go", "package main // fork\n")
	// Meanwhile the parent's main.go becomes a link out.
	require.NoError(t, os.Remove(filepath.Join(parent, "main.go")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "victim"), filepath.Join(parent, "main.go")))
	applied, conflicts, _, err := Deliver(ctx, fork, base, parent)
	require.NoError(t, err)
	require.Equal(t, []string{"escape"}, applied)
	require.Equal(t, []string{"main.go"}, conflicts)
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing written outside the copy")
	target, err := os.Readlink(filepath.Join(parent, "escape"))
	require.NoError(t, err)
	require.Equal(t, outside, target, "a link is delivered as a link, never followed")
}
