package copies

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/overlay"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/volume"
)

// TestCopiesOutsideTheirVolumes is a workstation's copy (a user, not
// root): an overlay fuse-overlayfs serves beside the session's volume,
// whose layers lie in the volume. What an attempt leaves there before its
// copy is started is within the volume; the copy, once started, shares the
// checkout; a write past the budget fails; a killed fuse2fs (its volume's
// mount dead under the overlay) is mounted again with the overlay on it,
// nothing written lost; an idle session holds no mount; removal leaves
// nothing behind. .ci/run runs it as a user.
func TestCopiesOutsideTheirVolumes(t *testing.T) {
	skip := t.Skip
	if os.Getenv("PADDOCK_TEST_WORKSTATION") == "1" {
		skip = t.Fatal
	}
	if os.Getuid() == 0 {
		skip("a copy is seen outside its volume without root: .ci/run runs this test as a user")
	}
	ctx := context.Background()
	root := t.TempDir()
	if err := volume.Probe(); err != nil {
		skip(err)
	}
	if err := overlay.Probe(filepath.Join(root, "checkouts")); err != nil {
		skip(err)
	}
	repo := filepath.Join(root, "repo")
	require.NoError(t, os.MkdirAll(repo, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "kept.txt"), []byte("from the repository\n"), 0o644))
	for _, args := range [][]string{{"init", "-q"}, {"add", "kept.txt"}, {"commit", "-q", "-m", "kept"}} {
		out, err := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
	}

	c := &Set{
		Node:         "n1",
		WorkspaceDir: filepath.Join(root, "workspaces"),
		Volumes:      &volume.Volumes{Dir: filepath.Join(root, "volumes"), Size: 64 << 20},
		Checkouts:    &overlay.Checkouts{Dir: filepath.Join(root, "checkouts")},
	}
	t.Cleanup(func() { _ = c.UnmountAll(ctx) })
	s := session.Session{ID: "s1", Node: "n1"}
	dir, err := c.Dir(ctx, s, true)
	require.NoError(t, err)
	require.Equal(t, c.Volumes.CopyPath("s1"), dir, "seen beside the volumes")
	id, ok := c.volumeOf(dir)
	require.True(t, ok)
	require.Equal(t, "s1", id)
	s.Workdir = dir

	// A copy cut short, then cleared: an overlay of nothing, in the volume.
	require.NoError(t, c.Clear(dir))
	require.True(t, overlay.Mounted(dir))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "left"), []byte("an attempt's\n"), 0o644))
	require.FileExists(t, filepath.Join(c.Volumes.Path("s1"), ".work.overlay", "upper", "left"), "what the copy holds lies in the volume")
	require.NoError(t, c.Clear(dir))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "cleared again: nothing left")

	// Started: the shared checkout, seen through the overlay.
	require.NoError(t, c.Start(s)(ctx, repo, dir))
	data, err := os.ReadFile(filepath.Join(dir, "kept.txt"))
	require.NoError(t, err)
	require.Equal(t, "from the repository\n", string(data))
	require.NoFileExists(t, filepath.Join(dir, "left"))

	// What a command plants for fuse-overlayfs to read as whiteouts at the
	// next mount (hiding .git, so that a command could make another) is
	// refused or scrubbed: the copy comes back whole.
	err = unix.Setxattr(dir, "user.overlay.opaque", []byte("y"), 0)
	require.Error(t, err, "an opaque marker set through the copy")
	require.NoError(t, os.Mkdir(filepath.Join(dir, ".wh..git"), 0o755))
	require.NoError(t, os.Symlink("x", filepath.Join(dir, ".wh.kept.txt")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "t"), nil, 0o644))
	require.NoError(t, os.Rename(filepath.Join(dir, "t"), filepath.Join(dir, ".wh.HEAD")))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub", ".wh..wh..opq"), 0o755))
	require.NoError(t, c.Idle(ctx, s))
	require.NoError(t, c.Mount(ctx, dir))
	fi, err := os.Lstat(filepath.Join(dir, ".git"))
	require.NoError(t, err, "the copy's .git after a remount")
	require.True(t, fi.IsDir())
	data, err = os.ReadFile(filepath.Join(dir, "kept.txt"))
	require.NoError(t, err)
	require.Equal(t, "from the repository\n", string(data))
	for _, planted := range []string{".wh..git", ".wh.kept.txt", ".wh.HEAD", "sub/.wh..wh..opq"} {
		_, err := os.Lstat(filepath.Join(dir, planted))
		require.ErrorIs(t, err, os.ErrNotExist, planted)
	}

	// The volume's budget bounds what is written through the overlay.
	f, err := os.Create(filepath.Join(dir, "big"))
	require.NoError(t, err)
	buf := make([]byte, 1<<20)
	for range 128 {
		if _, err = f.Write(buf); err != nil {
			break
		}
	}
	if err == nil {
		err = f.Sync()
	}
	f.Close()
	require.ErrorIs(t, err, syscall.ENOSPC, "128 MiB written into a copy of a 64 MiB volume")
	require.NoError(t, os.Remove(filepath.Join(dir, "big")))
	note := filepath.Join(dir, "note.txt")
	require.NoError(t, writeSynced(note, "kept through a crash\n"))

	// fuse2fs killed: the volume mounts again and the overlay with it.
	pid, err := os.ReadFile(filepath.Join(c.Volumes.Dir, "s1.img.pid"))
	require.NoError(t, err)
	n, err := strconv.Atoi(strings.TrimSpace(string(pid)))
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(n, syscall.SIGKILL))
	require.Eventually(t, func() bool { return dead(c.Volumes.Path("s1")) }, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, c.Mount(ctx, dir))
	data, err = os.ReadFile(note)
	require.NoError(t, err, "the copy after its volume was mounted again")
	require.Equal(t, "kept through a crash\n", string(data))
	require.NoError(t, writeSynced(filepath.Join(dir, "after.txt"), "written after\n"))

	// fuse-overlayfs killed: the copy mounts again.
	require.NoError(t, syscall.Kill(server(t, dir), syscall.SIGKILL))
	require.Eventually(t, func() bool { return dead(dir) }, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, c.Mount(ctx, dir))
	data, err = os.ReadFile(filepath.Join(dir, "after.txt"))
	require.NoError(t, err, "the copy after its overlay was mounted again")
	require.Equal(t, "written after\n", string(data))

	// Idle: no mount held; mounted again on demand, nothing lost.
	require.True(t, c.Holds(s))
	require.NoError(t, c.Idle(ctx, s))
	require.False(t, overlay.Mounted(dir))
	require.False(t, volume.Mounted(c.Volumes.Path("s1")))
	require.True(t, c.Holds(s), "an idle session's copy is still this node's")
	require.NoError(t, c.Mount(ctx, dir))
	for name, want := range map[string]string{"kept.txt": "from the repository\n", "note.txt": "kept through a crash\n", "after.txt": "written after\n"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		require.Equal(t, want, string(data))
	}

	// A repository holding names fuse-overlayfs takes for whiteouts has
	// no copy here (it would lack those files), and says why.
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".wh.image"), []byte("a container image's whiteout\n"), 0o644))
	for _, args := range [][]string{{"add", ".wh.image"}, {"commit", "-q", "-m", "whiteout"}} {
		out, err := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	other := session.Session{ID: "s2", Node: "n1"}
	other.Workdir, err = c.Dir(ctx, other, true)
	require.NoError(t, err)
	require.NoError(t, c.Clear(other.Workdir))
	err = c.Start(other)(ctx, repo, other.Workdir)
	require.ErrorIs(t, err, overlay.ErrWhiteouts)
	require.ErrorContains(t, err, ".wh.image")
	require.NoError(t, c.Remove(ctx, other))

	// Removed: no mount, no mount point, no volume.
	require.NoError(t, c.Idle(ctx, s))
	require.NoError(t, c.Remove(ctx, s))
	require.NoDirExists(t, dir)
	require.False(t, c.Volumes.Has("s1"))
	mounts, err := overlay.MountsUnder(root)
	require.NoError(t, err)
	require.Empty(t, mounts)
}

// dead says dir is a FUSE mount whose server was killed.
func dead(dir string) bool {
	_, err := os.Stat(dir)
	return errors.Is(err, syscall.ENOTCONN)
}

// server is the process of the fuse-overlayfs serving the copy at dir.
func server(t *testing.T, dir string) int {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	require.NoError(t, err)
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		args := strings.Split(string(cmdline), "\x00")
		if err == nil && strings.HasSuffix(args[0], "fuse-overlayfs") && slices.Contains(args, dir) {
			n, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("no fuse-overlayfs serves %s", dir)
	return 0
}

func writeSynced(path, text string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
