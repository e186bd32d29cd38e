package layer

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestKeyCoversEveryInput(t *testing.T) {
	base := Inputs{Project: "p", Repo: "/r", Manifests: map[string]string{"go.sum": "a"}, Setup: "go mod download",
		Network: []string{"proxy.golang.org:443"}, Env: map[string]string{"A": "1"}, ReadOnly: []string{"/opt"}, Toolchains: []string{"go x"}}
	variants := map[string]func(*Inputs){
		"project":   func(in *Inputs) { in.Project = "q" },
		"repo":      func(in *Inputs) { in.Repo = "/s" },
		"manifest":  func(in *Inputs) { in.Manifests = map[string]string{"go.sum": "b"} },
		"setup":     func(in *Inputs) { in.Setup = "npm ci" },
		"network":   func(in *Inputs) { in.Network = nil },
		"env":       func(in *Inputs) { in.Env = map[string]string{"A": "2"} },
		"readOnly":  func(in *Inputs) { in.ReadOnly = nil },
		"toolchain": func(in *Inputs) { in.Toolchains = []string{"go y"} },
		"tree":      func(in *Inputs) { in.Tree = "abc" },
	}
	require.Len(t, base.Key(), 64)
	require.Equal(t, base.Key(), base.Key())
	for name, change := range variants {
		in := base
		change(&in)
		require.NotEqual(t, base.Key(), in.Key(), name)
	}
}

func TestIsManifest(t *testing.T) {
	for p, want := range map[string]bool{"go.sum": true, "a/b/package-lock.json": true, "requirements-dev.txt": true,
		"Cargo.lock": true, "main.go": false, "notes.txt": false, "docs/package.md": false} {
		require.Equal(t, want, IsManifest(p), p)
	}
}

func TestToolchainsIdentifyPrograms(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), []byte("v1"), 0o755))
	before := Toolchains(dir, nil)
	require.Len(t, before, 1)
	require.True(t, strings.HasPrefix(before[0], "go "+dir+"/go "))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), []byte("v2 longer"), 0o755))
	require.NotEqual(t, before, Toolchains(dir, nil), "an upgraded toolchain changes the key")
}

// hostileCopy is a working copy as a setup script could leave it.
func hostileCopy(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("host secret"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "node_modules", "a"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "node_modules", "a", "index.js"), []byte("ok"), 0o4755))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "node_modules", "link")))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "escape")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "node_modules", "fifo"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".git"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".git", "config"), []byte("[core]"), 0o644))
	return dir
}

// TestCaptureNeverLeavesTheCopy: links are kept as links (never
// followed), a path through a link is left out, pipes are
// left out without blocking, setuid bits dropped, .git never taken.
func TestCaptureNeverLeavesTheCopy(t *testing.T) {
	l := &Layers{Dir: t.TempDir(), MaxBytes: 1 << 30}
	b, err := l.Build("")
	require.NoError(t, err)
	src := hostileCopy(t)
	files, err := b.Capture(src, []string{"node_modules/a/index.js", "node_modules/link", "node_modules/fifo", "escape/secret", "escape",
		".git/config", "../x", "missing"})
	require.NoError(t, err)
	require.Equal(t, 3, files)
	copyDir := filepath.Join(b.dir, "copy")
	fi, err := os.Lstat(filepath.Join(copyDir, "node_modules", "link"))
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&os.ModeSymlink, "kept as a link")
	fi, err = os.Stat(filepath.Join(copyDir, "node_modules", "a", "index.js"))
	require.NoError(t, err)
	require.Zero(t, fi.Mode()&os.ModeSetuid)
	require.NoFileExists(t, filepath.Join(copyDir, "node_modules", "fifo"))
	require.NoFileExists(t, filepath.Join(copyDir, ".git", "config"))
	fi, err = os.Lstat(filepath.Join(copyDir, "escape"))
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&os.ModeSymlink, "escape/secret was not read: escape is only a link")

	lay, err := b.Commit(Meta{Key: strings.Repeat("a", 64), Files: files}, "s0")
	require.NoError(t, err)
	// Restored into a fresh copy whose tracked files win, and which has a
	// tracked link out: nothing is written through it.
	dst := t.TempDir()
	outside := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dst, "node_modules", "a"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dst, "node_modules", "a", "index.js"), []byte("tracked"), 0o644))
	n, err := lay.Restore(dst, "", 0)
	require.NoError(t, err)
	require.Equal(t, 2, n, "the tracked file is left as it is")
	data, _ := os.ReadFile(filepath.Join(dst, "node_modules", "a", "index.js"))
	require.Equal(t, "tracked", string(data))
	require.NoError(t, os.RemoveAll(filepath.Join(dst, "node_modules")))
	require.NoError(t, os.Symlink(outside, filepath.Join(dst, "node_modules")))
	n, err = lay.Restore(dst, "", 0)
	require.NoError(t, err)
	require.Zero(t, n, "nothing is written through a tracked link")
	entries, _ := os.ReadDir(outside)
	require.Empty(t, entries)
}

// TestRestoreNeverWritesThroughLinksIntoGit: a layer built at one commit
// holds an untracked g/; a later commit tracks g -> .git (a link that stays
// inside the copy): nothing lands in .git, and .git stays root's.
func TestRestoreNeverWritesThroughLinksIntoGit(t *testing.T) {
	l := &Layers{Dir: t.TempDir(), MaxBytes: 1 << 30}
	b, err := l.Build("")
	require.NoError(t, err)
	src := t.TempDir()
	paths := []string{"g/info/attributes", "g/index.lock", "g/hooks/pre-commit", "h/.git/info/exclude", "file/x"}
	for _, p := range paths {
		require.NoError(t, os.MkdirAll(filepath.Join(src, filepath.Dir(p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(src, p), []byte("* -diff\n"), 0o755))
	}
	files, err := b.Capture(src, paths)
	require.NoError(t, err)
	require.Equal(t, 4, files, "h/.git/... is never taken")
	lay, err := b.Commit(Meta{Key: strings.Repeat("b", 64), Files: files}, "s")
	require.NoError(t, err)

	dst := t.TempDir()
	for _, d := range []string{".git/info", ".git/hooks"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dst, d), 0o755))
	}
	require.NoError(t, os.Symlink(".git", filepath.Join(dst, "g")))
	require.NoError(t, os.Symlink(".", filepath.Join(dst, "h")))
	require.NoError(t, os.WriteFile(filepath.Join(dst, "file"), []byte("tracked file where the layer has a directory"), 0o644))
	uid := 0
	if os.Getuid() == 0 {
		uid = 61000
	}
	n, err := lay.Restore(dst, "", uid)
	require.NoError(t, err)
	require.Zero(t, n)
	for _, p := range []string{".git/info/attributes", ".git/index.lock", ".git/hooks/pre-commit", ".git/info/exclude"} {
		require.NoFileExists(t, filepath.Join(dst, p))
	}
	for _, p := range []string{".git", ".git/info", ".git/hooks"} {
		fi, err := os.Lstat(filepath.Join(dst, p))
		require.NoError(t, err)
		require.NotEqual(t, uint32(61000), fi.Sys().(*syscall.Stat_t).Uid, p)
	}
}

// TestLayersAreBounded: what setup leaves counts by its apparent size (a
// sparse file in full) against the build's limit, dependency caches
// included, so a setup script cannot fill the host's disk through them.
func TestLayersAreBounded(t *testing.T) {
	l := &Layers{Dir: t.TempDir(), MaxBytes: 1 << 30}
	b, err := l.Build("")
	require.NoError(t, err)
	defer b.Abort()
	b.Limit = 1 << 20
	src := t.TempDir()
	f, err := os.Create(filepath.Join(src, "sparse"))
	require.NoError(t, err)
	require.NoError(t, f.Truncate(256<<20))
	require.NoError(t, f.Close())
	_, err = b.Capture(src, []string{"sparse"})
	require.ErrorIs(t, err, ErrTooLarge)

	deps := t.TempDir()
	b, err = l.Build(deps)
	require.NoError(t, err)
	b.Limit = 1 << 20
	require.NoError(t, os.WriteFile(filepath.Join(deps, "go", "mod", "big"), make([]byte, 2<<20), 0o644))
	_, err = b.Commit(Meta{Key: strings.Repeat("c", 64)}, "s")
	require.ErrorIs(t, err, ErrTooLarge)
	_, ok, _ := l.Acquire(strings.Repeat("c", 64), "t")
	require.False(t, ok)
	require.NoDirExists(t, deps, "the session's scratch caches are gone either way")
}

// TestAcquiredLayerIsNeverEvicted: a layer found for a session is marked
// used in the same step, so an eviction racing the restore leaves it.
func TestAcquiredLayerIsNeverEvicted(t *testing.T) {
	l := &Layers{Dir: t.TempDir(), MaxBytes: 5}
	key := strings.Repeat("d", 64)
	b, err := l.Build("")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(b.dir, "copy", "f"), make([]byte, 10), 0o644))
	_, err = b.Commit(Meta{Key: key}, "builder")
	require.NoError(t, err)
	l.Release("builder")
	lay, ok, err := l.Acquire(key, "A")
	require.NoError(t, err)
	require.True(t, ok)
	gone, err := l.Evict()
	require.NoError(t, err)
	require.Empty(t, gone)
	_, err = lay.Restore(t.TempDir(), "", 0)
	require.NoError(t, err)
}

func TestEvictLeastRecentlyUsedButNeverInUse(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	l := &Layers{Dir: t.TempDir(), MaxBytes: 25, Now: func() time.Time { return now }}
	keys := []string{strings.Repeat("1", 64), strings.Repeat("2", 64), strings.Repeat("3", 64)}
	for _, k := range keys {
		b, err := l.Build("")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(b.dir, "copy", "f"), make([]byte, 10), 0o644))
		_, err = b.Commit(Meta{Key: k}, "builder")
		require.NoError(t, err)
		l.Release("builder")
		now = now.Add(time.Minute)
	}
	_, ok, err := l.Acquire(keys[0], "s0") // the oldest is used again: now the newest
	require.True(t, ok)
	require.NoError(t, err)
	l.Release("s0")
	_, ok, err = l.Acquire(keys[1], "s1")
	require.True(t, ok)
	require.NoError(t, err)
	gone, err := l.Evict()
	require.NoError(t, err)
	require.Equal(t, []string{keys[2]}, gone, "the least recently used layer no session uses")
	l.MaxBytes = 0
	gone, err = l.Evict()
	require.NoError(t, err)
	require.Equal(t, []string{keys[0]}, gone)
	lay, ok := l.Of("s1")
	require.True(t, ok)
	require.Equal(t, keys[1], lay.Key)
	l.Release("s1")
	_, ok = l.Of("s1")
	require.False(t, ok)
	gone, err = l.Evict()
	require.NoError(t, err)
	require.Equal(t, []string{keys[1]}, gone)
}

func TestSweepRemovesUnfinishedBuilds(t *testing.T) {
	l := &Layers{Dir: t.TempDir()}
	b, err := l.Build("")
	require.NoError(t, err)
	l.Sweep()
	require.NoDirExists(t, b.dir)
}
