package overlay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/workspace"
)

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "safe.directory=*"}, args...)...).CombinedOutput()
	require.NoError(t, err, string(out))
	return strings.TrimSpace(string(out))
}

// repository makes a repository of n files in a few directories.
func repository(t *testing.T, n int) (dir, head string) {
	t.Helper()
	dir = t.TempDir()
	git(t, dir, "init", "-q")
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("d%d", i%10), fmt.Sprintf("f%d.txt", i))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf("file %d\n", i)), 0o644))
	}
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "files")
	return dir, git(t, dir, "rev-parse", "HEAD")
}

// mountable is a directory for checkouts where this process mounts
// overlays: the kernel's as root, fuse-overlayfs' as any other user.
func mountable(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := Probe(dir); err != nil {
		t.Skip(err)
	}
	return dir
}

// start makes session id's copy at dir as copies.Set.Start does.
func start(t *testing.T, c *Checkouts, from, head, id, dir string) Copy {
	t.Helper()
	lower, err := c.Take(context.Background(), from, workspace.Tip{Commit: head, Refs: "refs"}, id)
	require.NoError(t, err)
	o := Copy{Lower: lower, Record: RecordOf(dir), Dir: dir}
	require.NoError(t, o.Mount())
	t.Cleanup(func() { _ = Remove(dir, RecordOf(dir)) })
	return o
}

// TestCopiesShareOneCheckout: two sessions' copies of one commit are
// overlays of one checkout; what one writes, the other and the checkout
// never see; git in a copy finds it clean without rewriting its index
// (the checkout's stat data hold through the overlay); an unmounted copy
// keeps what was written and mounts again; the checkout goes with its
// last user.
func TestCopiesShareOneCheckout(t *testing.T) {
	root := mountable(t)
	src, head := repository(t, 50)
	c := &Checkouts{Dir: filepath.Join(root, "checkouts")}
	ws := filepath.Join(root, "workspaces")
	a := start(t, c, src, head, "a", filepath.Join(ws, "a"))
	b := start(t, c, src, head, "b", filepath.Join(ws, "b"))
	require.Equal(t, a.Lower, b.Lower, "one checkout per repository and commit")
	require.True(t, Mounted(a.Dir))

	require.Empty(t, git(t, a.Dir, "status", "--porcelain"))
	_, err := os.Stat(filepath.Join(a.Upper(), ".git", "index"))
	require.ErrorIs(t, err, os.ErrNotExist, "git status rewrote the index: the checkout's stat data did not hold")

	require.NoError(t, os.WriteFile(filepath.Join(a.Dir, "d1", "f1.txt"), []byte("changed\n"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(a.Dir, "d2", "f2.txt")))
	if err := os.Rename(filepath.Join(a.Dir, "d3"), filepath.Join(a.Dir, "moved")); os.Getuid() == 0 {
		require.NoError(t, err, "redirect_dir renames a directory of the checkout")
	} else {
		// fuse-overlayfs has no redirect_dir (nor has the kernel's overlay
		// on user extended attributes): mv copies the directory instead.
		require.ErrorIs(t, err, syscall.EXDEV)
		out, err := exec.Command("mv", filepath.Join(a.Dir, "d3"), filepath.Join(a.Dir, "moved")).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	status := git(t, a.Dir, "status", "--porcelain")
	for _, want := range []string{"M d1/f1.txt", " D d2/f2.txt", " D d3/f3.txt", "?? moved/"} {
		require.Contains(t, status, want)
	}
	for _, dir := range []string{b.Dir, a.Lower} {
		data, err := os.ReadFile(filepath.Join(dir, "d1", "f1.txt"))
		require.NoError(t, err)
		require.Equal(t, "file 1\n", string(data))
		require.DirExists(t, filepath.Join(dir, "d3"))
	}

	require.NoError(t, a.Unmount())
	require.False(t, Mounted(a.Dir))
	entries, err := os.ReadDir(a.Dir)
	require.NoError(t, err)
	require.Empty(t, entries, "an unmounted copy leaves an empty mount point")
	again, ok := Load(a.Dir, a.Record)
	require.True(t, ok)
	require.NoError(t, again.Remount())
	data, err := os.ReadFile(filepath.Join(a.Dir, "d1", "f1.txt"))
	require.NoError(t, err)
	require.Equal(t, "changed\n", string(data))
	require.DirExists(t, filepath.Join(a.Dir, "moved"))

	require.NoError(t, Remove(a.Dir, a.Record))
	require.NoError(t, c.Release("a"))
	require.DirExists(t, b.Lower, "the checkout stays while a copy uses it")
	require.NoError(t, Remove(b.Dir, b.Record))
	require.NoError(t, c.Release("b"))
	require.NoError(t, c.Release("b"), "a session released twice (its end and the collector at once)")
	require.NoDirExists(t, a.Dir)
	require.DirExists(t, b.Lower, "an unused checkout is kept for the next session of its commit")
	next := start(t, c, src, head, "c", filepath.Join(ws, "c"))
	require.Equal(t, b.Lower, next.Lower)

	// A clone holds every ref: other refs, another checkout.
	other, err := c.Take(context.Background(), src, workspace.Tip{Commit: head, Refs: "other refs"}, "d")
	require.NoError(t, err)
	require.NotEqual(t, next.Lower, other)
}

// TestRemountMakesNothing: a recorded copy whose upper directory is gone
// (its volume not mounted, say) is not mounted again as an empty copy.
func TestRemountMakesNothing(t *testing.T) {
	root := mountable(t)
	src, head := repository(t, 2)
	c := &Checkouts{Dir: filepath.Join(root, "checkouts")}
	o := start(t, c, src, head, "a", filepath.Join(root, "w", "a"))
	require.NoError(t, o.Unmount())
	require.NoError(t, os.RemoveAll(o.Upper()))
	again, ok := Load(o.Dir, o.Record)
	require.True(t, ok)
	require.ErrorIs(t, again.Remount(), ErrLost)
	require.False(t, Mounted(o.Dir))
	require.NoDirExists(t, o.Upper())
}

// TestLeftoversAreCollected: a checkout a crash left without users, and
// one whose removal was cut short (in the trash), go at the next
// collection; a checkout in use stays.
func TestLeftoversAreCollected(t *testing.T) {
	root := mountable(t)
	src, head := repository(t, 2)
	c := &Checkouts{Dir: filepath.Join(root, "checkouts")}
	o := start(t, c, src, head, "a", filepath.Join(root, "w", "a"))
	for _, name := range []string{"orphan/tree", trash + "cut/tree"} {
		require.NoError(t, os.MkdirAll(filepath.Join(c.Dir, name), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(c.Dir, filepath.Dir(name), "ready"), nil, 0o600))
	}
	b := start(t, c, src, head, "b", filepath.Join(root, "w", "b"))
	require.NoError(t, Remove(b.Dir, b.Record))
	require.NoError(t, c.Release("b"))
	entries, err := os.ReadDir(c.Dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{filepath.Base(filepath.Dir(o.Lower))}, names)
}

// TestUnusedCheckoutsAreBounded: of the checkouts no copy uses, only the
// most recently let go stay; one in use always stays.
func TestUnusedCheckoutsAreBounded(t *testing.T) {
	root := mountable(t)
	src, _ := repository(t, 3)
	c := &Checkouts{Dir: filepath.Join(root, "checkouts"), Unused: 1}
	var lowers []string
	for i := range 4 {
		git(t, src, "commit", "-q", "--allow-empty", "-m", fmt.Sprint(i))
		o := start(t, c, src, git(t, src, "rev-parse", "HEAD"), fmt.Sprint(i), filepath.Join(root, "w", fmt.Sprint(i)))
		lowers = append(lowers, o.Lower)
	}
	for _, i := range []int{0, 1, 2} { // 3 stays in use
		require.NoError(t, Remove(filepath.Join(root, "w", fmt.Sprint(i)), RecordOf(filepath.Join(root, "w", fmt.Sprint(i)))))
		require.NoError(t, c.Release(fmt.Sprint(i)))
	}
	for i, want := range []bool{false, false, true, true} {
		_, err := os.Stat(lowers[i])
		require.Equal(t, want, err == nil, "checkout %d", i)
	}
}

// TestCheckoutOwnedByTheSandboxUser: with a sandbox user, the checkout's
// files are that user's (so its commands can write through the overlay)
// but for .git's config and hooks, and its index was refreshed after:
// git in a copy does not rewrite it.
func TestCheckoutOwnedByTheSandboxUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("only root hands files to another user")
	}
	root := mountable(t)
	src, head := repository(t, 20)
	c := &Checkouts{Dir: filepath.Join(root, "checkouts"), UID: 65533}
	o := start(t, c, src, head, "s", filepath.Join(root, "w", "s"))
	for p, want := range map[string]uint32{"d1/f1.txt": 65533, ".git/index": 65533, ".git/config": 0} {
		fi, err := os.Lstat(filepath.Join(o.Dir, p))
		require.NoError(t, err)
		require.Equal(t, want, fi.Sys().(*syscall.Stat_t).Uid, p)
	}
	require.Empty(t, git(t, o.Dir, "status", "--porcelain"))
	_, err := os.Stat(filepath.Join(o.Upper(), ".git", "index"))
	require.ErrorIs(t, err, os.ErrNotExist, "git status rewrote the index")
	fi, err := os.Stat(c.Dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "no one but root reaches the checkouts")
}

// TestCheckoutOfAMovedHead: a checkout that is not of the commit asked
// for (the repository's HEAD moved meanwhile) is refused and left
// nowhere.
func TestCheckoutOfAMovedHead(t *testing.T) {
	root := mountable(t)
	src, head := repository(t, 3)
	git(t, src, "commit", "-q", "--allow-empty", "-m", "second")
	c := &Checkouts{Dir: filepath.Join(root, "checkouts")}
	_, err := c.Take(context.Background(), src, workspace.Tip{Commit: head}, "s")
	require.True(t, errors.Is(err, ErrMoved), "%v", err)
	entries, err := os.ReadDir(c.Dir)
	require.NoError(t, err)
	require.Empty(t, entries)
}

// TestMountsUnder lists the overlays under some directories, deepest
// first, whatever their names.
func TestMountsUnder(t *testing.T) {
	root := mountable(t)
	src, head := repository(t, 1)
	c := &Checkouts{Dir: filepath.Join(root, "checkouts")}
	odd := filepath.Join(root, "w", "with space")
	start(t, c, src, head, "x", odd)
	other := filepath.Join(t.TempDir(), "elsewhere")
	start(t, c, src, head, "y", other)
	got, err := MountsUnder(filepath.Join(root, "w"))
	require.NoError(t, err)
	require.Equal(t, []string{odd}, got)
	got, err = MountsUnder(filepath.Join(root, "w", "with"))
	require.NoError(t, err)
	require.Empty(t, got, "a directory's name is not a prefix of another's")
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		`/a/b`:             "/a/b",
		`/a/with\040space`: "/a/with space",
		`/tab\011x`:        "/tab\tx",
		`/back\134slash`:   `/back\slash`,
		`/trailing\04`:     `/trailing\04`,
	} {
		require.Equal(t, want, unescape(in), in)
	}
}

// TestMountRefusesOptionCharacters: a path that would split the mount's
// options is refused, not mounted.
func TestMountRefusesOptionCharacters(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"a,b", "a:b", `a\b`} {
		err := Copy{Lower: root, Record: filepath.Join(root, "rec"), Dir: filepath.Join(root, name)}.Mount()
		require.ErrorContains(t, err, "cannot", name)
	}
}

// TestTakeGivesUpWithItsContext: a session waiting behind another's
// making of the same checkout gives up when its context ends.
func TestTakeGivesUpWithItsContext(t *testing.T) {
	root := t.TempDir()
	c := &Checkouts{Dir: filepath.Join(root, "checkouts")}
	tip := workspace.Tip{Commit: "0123456789012345678901234567890123456789", Refs: "r"}
	unlock, err := c.lock(context.Background(), c.key("/repo", tip))
	require.NoError(t, err)
	defer unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Take(ctx, "/repo", tip, "s")
	require.ErrorIs(t, err, context.Canceled)
}
