package cachefs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/npmtest"
)

// mount serves a fresh store at a fresh mount point for the test, with
// lend (see Mount).
func mount(t *testing.T, lend map[string]string) (store, mnt string) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse here")
	}
	base := t.TempDir()
	store, mnt = filepath.Join(base, "store"), filepath.Join(base, "cache")
	require.NoError(t, Prepare(store, mnt))
	srv, err := Mount(store, mnt, lend)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Unmount()) })
	return store, mnt
}

// TestFilesReachTheStore: what a command writes in the cache is in the
// store, read back as written after overwrites, truncation, appends,
// renames and removals (the kernel keeps contents and attributes across
// opens, so every change must come through this filesystem correctly).
func TestFilesReachTheStore(t *testing.T) {
	store, mnt := mount(t, nil)
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
	store, mnt := mount(t, nil)
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

// mountLending serves a fresh store with lent lent to the name "go-build".
func mountLending(t *testing.T, lent string) (store, mnt string) {
	t.Helper()
	return mount(t, map[string]string{"go-build": lent})
}

// snapshot is every name under dir with its size, mode and modification time.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		out[p] = fmt.Sprint(fi.Size(), fi.Mode(), fi.ModTime().UnixNano())
		return nil
	}))
	return out
}

// TestLentNamesAreReadNotListedNorWritten: a name of the lent directory
// is found and read by that name; listings show the store's names only;
// a change copies the file into the store first, the lent one untouched;
// what is lent cannot be removed, renamed or have its times set, and a
// link or special file in it is not there at all.
func TestLentNamesAreReadNotListedNorWritten(t *testing.T) {
	lent := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(lent, "ab"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(lent, "ab", "abcd-a"), []byte("action"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(lent, "ab", "abce-d"), []byte("output"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(lent, "README"), []byte("Go build system"), 0o644))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(lent, "ab", "link")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(lent, "ab", "fifo"), 0o644))
	before := snapshot(t, lent)
	store, mnt := mountLending(t, lent)
	dir := filepath.Join(mnt, "go-build")

	got, err := os.ReadFile(filepath.Join(dir, "ab", "abcd-a"))
	require.NoError(t, err)
	require.Equal(t, "action", string(got))
	for _, name := range []string{"link", "fifo", "missing"} {
		_, err := os.Lstat(filepath.Join(dir, "ab", name))
		require.ErrorIs(t, err, os.ErrNotExist, name)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "a lent directory lists nothing")
	_, err = os.ReadFile(filepath.Join(mnt, "other", "README"))
	require.ErrorIs(t, err, os.ErrNotExist, "only the lent name reads through")

	// What is lent stays as it is.
	require.ErrorIs(t, os.Remove(filepath.Join(dir, "ab", "abcd-a")), syscall.EROFS)
	require.ErrorIs(t, os.Rename(filepath.Join(dir, "ab", "abcd-a"), filepath.Join(dir, "ab", "x")), syscall.EROFS)
	require.ErrorIs(t, os.Chtimes(filepath.Join(dir, "ab", "abce-d"), time.Now(), time.Now()), syscall.EROFS)
	require.ErrorIs(t, os.RemoveAll(filepath.Join(dir, "ab")), syscall.EROFS)

	// A change goes to the store, after a copy.
	f, err := os.OpenFile(filepath.Join(dir, "ab", "abce-d"), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(" appended")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	got, err = os.ReadFile(filepath.Join(store, "go-build", "ab", "abce-d"))
	require.NoError(t, err)
	require.Equal(t, "output appended", string(got))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ab", "abcd-a"), []byte("new"), 0o644))
	got, err = os.ReadFile(filepath.Join(dir, "ab", "abcd-a"))
	require.NoError(t, err)
	require.Equal(t, "new", string(got), "truncated and rewritten")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ab", "abcf-d"), []byte("made"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "cd"), 0o755))
	require.NoError(t, os.Rename(filepath.Join(dir, "ab", "abcf-d"), filepath.Join(dir, "cd", "abcf-d")))
	require.NoError(t, os.Remove(filepath.Join(dir, "cd", "abcf-d")), "the store's own names change freely")
	entries, err = os.ReadDir(filepath.Join(dir, "ab"))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{"abcd-a", "abce-d"}, names, "the store's names, once copied")
	require.Equal(t, before, snapshot(t, lent), "the lent directory is never written")

	// A name the store holds hides the lent one.
	require.NoError(t, os.WriteFile(filepath.Join(store, "go-build", "README"), []byte("mine"), 0o644))
	got, err = os.ReadFile(filepath.Join(store, "go-build", "README"))
	require.NoError(t, err)
	require.Equal(t, "mine", string(got))
}

// TestGoBuildsFromTheLentCache: with the developer's own Go build cache
// lent, a fresh session's first `go test` of what they tested is served
// from it ("(cached)"), their cache unchanged; what the session builds
// anew lands in its own store.
func TestGoBuildsFromTheLentCache(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no Go toolchain")
	}
	base := t.TempDir()
	mod, lent := filepath.Join(base, "m"), filepath.Join(base, "gocache")
	require.NoError(t, os.MkdirAll(mod, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/m\n\ngo 1.21\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(mod, "m_test.go"), []byte("package m\n\nimport \"testing\"\n\nfunc TestM(t *testing.T) {}\n"), 0o644))
	goTest := func(cache string) string {
		cmd := exec.Command(goBin, "test", "./...")
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "GOCACHE="+cache, "GOFLAGS=", "GOTOOLCHAIN=local")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		return string(out)
	}
	goTest(lent) // the developer's own run
	before := snapshot(t, lent)
	store, mnt := mountLending(t, lent)
	require.Contains(t, goTest(filepath.Join(mnt, "go-build")), "(cached)")
	require.Equal(t, before, snapshot(t, lent))

	require.NoError(t, os.WriteFile(filepath.Join(mod, "n_test.go"), []byte("package m\n\nimport \"testing\"\n\nfunc TestN(t *testing.T) {}\n"), 0o644))
	require.NotContains(t, goTest(filepath.Join(mnt, "go-build")), "(cached)")
	require.Contains(t, goTest(filepath.Join(mnt, "go-build")), "(cached)")
	require.Equal(t, before, snapshot(t, lent), "the session's build went to its own store")
	var stored int
	require.NoError(t, filepath.Walk(filepath.Join(store, "go-build"), func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			stored++
		}
		return err
	}))
	require.Positive(t, stored)
}

// TestNpmInstallsFromTheLentCache: with the developer's npm cache lent,
// a session's npm installs offline what they installed (a package of a
// registry served here, down by then), their cache unchanged.
func TestNpmInstallsFromTheLentCache(t *testing.T) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("no npm")
	}
	srv := npmtest.Registry(t)
	base := t.TempDir()
	install := func(dir, cache string, args ...string) error {
		t.Helper()
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "package.json"), []byte(npmtest.PackageJSON), 0o644))
		cmd := exec.Command(npm, append([]string{"install", "--registry", srv.URL, "--cache", cache, "--no-audit", "--no-fund", "--no-update-notifier"}, args...)...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), "HOME="+base, "npm_config_logs_dir="+filepath.Join(base, "logs"))
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		got, err := os.ReadFile(filepath.Join(dir, "node_modules", "tiny", "index.js"))
		require.NoError(t, err)
		require.Equal(t, npmtest.Index, string(got))
		return nil
	}
	person := filepath.Join(base, "npm-cache")
	require.NoError(t, install(filepath.Join(base, "theirs"), person)) // the developer's own install
	srv.Close()
	before := snapshot(t, person)
	_, mnt := mount(t, map[string]string{"npm/_cacache": filepath.Join(person, "_cacache")})
	require.Error(t, install(filepath.Join(base, "elsewhere"), filepath.Join(mnt, "other"), "--offline"), "the registry is down")
	require.NoError(t, install(filepath.Join(base, "session"), filepath.Join(mnt, "npm"), "--prefer-offline"))
	require.Equal(t, before, snapshot(t, person), "the developer's cache is never written")
}

// TestLentDirectoryChangedUnderTheSession: the developer's own tools
// write their cache while a session runs. A directory the kernel knows
// replaced by a link to elsewhere leads nowhere; a file replaced by a
// FIFO fails its read at once (the server answers one request at a
// time, so a blocking open would stop the whole cache).
func TestLentDirectoryChangedUnderTheSession(t *testing.T) {
	lent := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(lent, "ab"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(lent, "ab", "abcd-a"), []byte("action"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(lent, "README"), []byte("Go build system"), 0o644))
	_, mnt := mountLending(t, lent)
	dir := filepath.Join(mnt, "go-build")
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("host secret"), 0o644))

	_, err := os.Stat(filepath.Join(dir, "ab", "abcd-a")) // known to the kernel from here on
	require.NoError(t, err)
	require.NoError(t, os.Rename(filepath.Join(lent, "ab"), filepath.Join(lent, "ab.old")))
	require.NoError(t, os.Symlink(outside, filepath.Join(lent, "ab")))
	_, err = os.ReadFile(filepath.Join(dir, "ab", "secret"))
	require.Error(t, err, "read outside the lent directory through a link put there later")
	require.NoError(t, os.Remove(filepath.Join(lent, "ab")))
	require.NoError(t, os.Rename(filepath.Join(lent, "ab.old"), filepath.Join(lent, "ab")))

	fifo := filepath.Join(lent, "ab", "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	require.NoError(t, os.Rename(fifo, filepath.Join(lent, "ab", "abcd-a")))
	done := make(chan error, 1)
	go func() { _, err := os.ReadFile(filepath.Join(dir, "ab", "abcd-a")); done <- err }()
	select {
	case err := <-done:
		require.Error(t, err)
	case <-time.After(60 * time.Second):
		// Let the server go before failing, or the test process hangs too.
		if fd, err := syscall.Open(filepath.Join(lent, "ab", "abcd-a"), syscall.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			_ = syscall.Close(fd)
		}
		t.Fatal("the server blocked opening a FIFO of the lent directory")
	}
	got, err := os.ReadFile(filepath.Join(dir, "README"))
	require.NoError(t, err, "the cache still answers")
	require.Equal(t, "Go build system", string(got))
}

// TestChangesToLentFilesKeepTheirContents: a truncation that fails (a
// read-only file) leaves the contents as they were; a file moved with
// RENAME_NOREPLACE into a lent directory lands (the directory copied on
// the way); a store file renamed over a lent name reads as itself.
func TestChangesToLentFilesKeepTheirContents(t *testing.T) {
	lent := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(lent, "ab"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(lent, "ab", "abcd-a"), []byte("action"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(lent, "ab", "ro"), []byte("precious"), 0o444))
	before := snapshot(t, lent)
	_, mnt := mountLending(t, lent)
	dir := filepath.Join(mnt, "go-build")

	if f, err := os.OpenFile(filepath.Join(dir, "ab", "ro"), os.O_WRONLY|os.O_TRUNC, 0); err == nil {
		require.NoError(t, f.Close()) // as root, no permission check stops it
	} else {
		got, err := os.ReadFile(filepath.Join(dir, "ab", "ro"))
		require.NoError(t, err)
		require.Equal(t, "precious", string(got), "a truncation that failed emptied the file")
	}

	require.NoError(t, os.Mkdir(filepath.Join(dir, "cd"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cd", "f"), []byte("made"), 0o644))
	require.NoError(t, unix.Renameat2(unix.AT_FDCWD, filepath.Join(dir, "cd", "f"), unix.AT_FDCWD, filepath.Join(dir, "ab", "f"), unix.RENAME_NOREPLACE))
	require.ErrorIs(t, unix.Renameat2(unix.AT_FDCWD, filepath.Join(dir, "ab", "f"), unix.AT_FDCWD, filepath.Join(dir, "ab", "abcd-a"), unix.RENAME_NOREPLACE), syscall.EEXIST)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "ab", "tmp"), []byte("mine"), 0o644))
	require.NoError(t, os.Rename(filepath.Join(dir, "ab", "tmp"), filepath.Join(dir, "ab", "abcd-a")))
	got, err := os.ReadFile(filepath.Join(dir, "ab", "abcd-a"))
	require.NoError(t, err)
	require.Equal(t, "mine", string(got))
	require.Equal(t, before, snapshot(t, lent))
}
