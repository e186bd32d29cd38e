package cachefs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// mount serves a fresh store at a fresh mount point for the test.
func mount(t *testing.T) (store, mnt string) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse here")
	}
	base := t.TempDir()
	store, mnt = filepath.Join(base, "store"), filepath.Join(base, "cache")
	require.NoError(t, Prepare(store, mnt))
	srv, err := Mount(store, mnt)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Unmount()) })
	return store, mnt
}

// TestFilesReachTheStore: what a command writes in the cache is in the
// store, read back as written after overwrites, truncation, appends,
// renames and removals (the kernel keeps contents and attributes across
// opens, so every change must come through this filesystem correctly).
func TestFilesReachTheStore(t *testing.T) {
	store, mnt := mount(t)
	p := filepath.Join(mnt, "go-build", "ab", "abcd-d")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o777))
	require.NoError(t, os.WriteFile(p, []byte("hello, world"), 0o666))
	got, err := os.ReadFile(filepath.Join(store, "go-build", "ab", "abcd-d"))
	require.NoError(t, err)
	require.Equal(t, "hello, world", string(got))

	for range 3 {
		got, err = os.ReadFile(p) // from the kernel's cache after the first
		require.NoError(t, err)
		require.Equal(t, "hello, world", string(got))
	}
	require.NoError(t, os.WriteFile(p, []byte("bye"), 0o666))
	got, err = os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "bye", string(got), "an overwrite truncates")
	fi, err := os.Stat(p)
	require.NoError(t, err)
	require.EqualValues(t, 3, fi.Size())

	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(" now")
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
	got, err = os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "bye now", string(got))
	require.NoError(t, os.Truncate(p, 3))
	got, err = os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "bye", string(got))

	_, err = os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
	require.ErrorIs(t, err, os.ErrExist)

	q := filepath.Join(mnt, "go-build", "ab", "renamed")
	require.NoError(t, os.Rename(p, q))
	require.NoFileExists(t, p)
	got, err = os.ReadFile(q)
	require.NoError(t, err)
	require.Equal(t, "bye", string(got))
	require.NoError(t, os.RemoveAll(filepath.Join(mnt, "go-build")))
	entries, err := os.ReadDir(store)
	require.NoError(t, err)
	require.Empty(t, entries, "removed from the store too")
}

// TestNoLinksNorSpecialFiles: a command can make no link (symbolic or
// hard) nor a special file in the cache, so no path the server builds in
// the store leads out of it.
func TestNoLinksNorSpecialFiles(t *testing.T) {
	store, mnt := mount(t)
	require.NoError(t, os.WriteFile(filepath.Join(mnt, "f"), []byte("x"), 0o666))
	for name, err := range map[string]error{
		"symlink": os.Symlink("/etc", filepath.Join(mnt, "out")),
		"link":    os.Link(filepath.Join(mnt, "f"), filepath.Join(mnt, "hard")),
		"fifo":    syscall.Mkfifo(filepath.Join(mnt, "fifo"), 0o666),
		"socket":  syscall.Mknod(filepath.Join(mnt, "sock"), syscall.S_IFSOCK|0o666, 0),
	} {
		require.True(t, errors.Is(err, syscall.EPERM), "%s: %v", name, err)
	}
	entries, err := os.ReadDir(store)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, "f", entries[0].Name())
}

// TestPrepareEmptiesACacheOfTheOldLayout: a volume's cache directory
// from before (a plain directory a command may have filled with links)
// is emptied before the store is served; a store already there is kept.
func TestPrepareEmptiesACacheOfTheOldLayout(t *testing.T) {
	base := t.TempDir()
	store, mnt := filepath.Join(base, "store"), filepath.Join(base, "cache")
	require.NoError(t, os.MkdirAll(filepath.Join(mnt, "sub"), 0o755))
	require.NoError(t, os.Symlink("/etc", filepath.Join(mnt, "sub", "out")))
	require.NoError(t, Prepare(store, mnt))
	entries, err := os.ReadDir(mnt)
	require.NoError(t, err)
	require.Empty(t, entries)
	require.DirExists(t, store)
	require.NoError(t, os.WriteFile(filepath.Join(store, "kept"), nil, 0o644))
	require.NoError(t, Prepare(store, mnt))
	require.FileExists(t, filepath.Join(store, "kept"))
}
