package executor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/sandbox"
	"github.com/paddock-dev/paddock/internal/workspace"
)

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=u", "-c", "user.email=u@x"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	return strings.TrimSpace(string(out))
}

// pushedClone makes a repository of files (its first commit the base), a
// working copy cloned from it, and an executor holding that copy.
func pushedClone(t *testing.T, files map[string]string) (origin, host, base string, c *Client, root *os.Root) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ctx := context.Background()
	origin = t.TempDir()
	gitIn(t, origin, "init", "-q", "-b", "main")
	for name, body := range files {
		write(t, origin, name, body)
	}
	gitIn(t, origin, "add", ".")
	gitIn(t, origin, "commit", "-qm", "base")
	host = filepath.Join(t.TempDir(), "copy")
	require.NoError(t, workspace.Clone(ctx, origin, host))
	base, err := workspace.Head(ctx, host)
	require.NoError(t, err)
	c, _ = pod(t)
	root = openRoot(t, host)
	_, err = c.Push(ctx, Work, root)
	require.NoError(t, err)
	return origin, host, base, c, root
}

// TestForgedObjectsStayInThePod (from an attack review): a command in the
// pod overwrites an existing object file under its old name (git does not
// verify the hash of subtrees it reads), deleting a file and hiding the
// deletion from the base tree. Nothing of .git comes back, so the host's
// diff (what the user reviews) shows the deletion, and what
// AcceptToBranch delivers is exactly what was reviewed.
func TestForgedObjectsStayInThePod(t *testing.T) {
	ctx := context.Background()
	origin, host, base, c, root := pushedClone(t, map[string]string{"auth/check.go": "package auth // the security check\n", "auth/other.go": "package auth\n", "README": "readme\n"})

	// The command: unpack the clone's pack into loose objects, overwrite
	// the base's auth/ subtree object with a tree lacking check.go, delete
	// check.go, and make one innocent visible change.
	script := `set -e
export GIT_DIR=$PWD/.git GIT_WORK_TREE=$PWD
for p in .git/objects/pack/*.pack; do mv "$p" ../p.pack; rm -f "${p%.pack}".*; git unpack-objects -q < ../p.pack; done
S=$(git rev-parse HEAD:auth)
S2=$(git ls-tree HEAD:auth | grep -v 'check.go$' | git mktree)
f=.git/objects/${S:0:2}/${S:2}; rm -f "$f"; cp .git/objects/${S2:0:2}/${S2:2} "$f"
rm auth/check.go
echo 'readme, typo fixed' > README`
	var out strings.Builder
	res, err := c.Run(ctx, sandbox.Command{ID: "forge/1", Script: script, Stdout: &out, Stderr: &out, Timeout: time.Minute}, nil)
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, out.String())
	_, err = c.Pull(ctx, Work, Into{Root: root, UID: -1, Limit: 1 << 30})
	require.NoError(t, err)

	// What the user reviews: both changes.
	d, err := workspace.Compute(ctx, host, base)
	require.NoError(t, err)
	var paths []string
	for _, f := range d.Files {
		paths = append(paths, f.Path)
	}
	require.ElementsMatch(t, []string{"README", "auth/check.go"}, paths, "the reviewed diff shows the deletion")

	// What AcceptToBranch delivers (Snapshot of the reviewed tree, then
	// Branch to the user's repository).
	next, err := workspace.Snapshot(ctx, host, base, d.Tree, "accepted", workspace.Author{})
	require.NoError(t, err)
	require.NoError(t, workspace.Branch(ctx, host, base, next, origin, "paddock/forged"))
	delivered := gitIn(t, origin, "diff", "--name-status", base, "paddock/forged")
	require.Equal(t, "M\tREADME\nD\tauth/check.go", delivered, "what is delivered is what was reviewed")
	gitIn(t, host, "fsck", "--strict") // the host's objects are intact
}

// TestHostileIndexStaysInThePod (from an attack review): a command sets
// skip-worktree on a tracked file it changed; the index does not come
// back, so the host's Discard (reject) still puts the file back.
func TestHostileIndexStaysInThePod(t *testing.T) {
	ctx := context.Background()
	_, host, base, c, root := pushedClone(t, map[string]string{"main.go": "package main // good\n"})
	var out strings.Builder
	res, err := c.Run(ctx, sandbox.Command{ID: "idx/1", Timeout: time.Minute, Stdout: &out, Stderr: &out,
		Script: `GIT_DIR=$PWD/.git GIT_WORK_TREE=$PWD git update-index --skip-worktree main.go && echo 'package main // evil' > main.go`}, nil)
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, out.String())
	_, err = c.Pull(ctx, Work, Into{Root: root, UID: -1, Limit: 1 << 30})
	require.NoError(t, err)

	require.NoError(t, workspace.Discard(ctx, host, base))
	b, err := os.ReadFile(filepath.Join(host, "main.go"))
	require.NoError(t, err)
	require.Equal(t, "package main // good\n", string(b), "the rejected change is gone")
}
