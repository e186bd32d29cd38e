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
// followed), a path through a link out of the copy is not read, pipes are
// left out without blocking, setuid bits dropped, .git never taken.
func TestCaptureNeverLeavesTheCopy(t *testing.T) {
	l := &Layers{Dir: t.TempDir(), MaxBytes: 1 << 30}
	b, err := l.Build()
	require.NoError(t, err)
	src := hostileCopy(t)
	files, err := b.Capture(src, []string{"node_modules/a/index.js", "node_modules/link", "node_modules/fifo", "escape/secret", "escape",
		".git/config", "../x", "missing"})
	require.Error(t, err, "a path through a link out of the copy is refused")
	require.Contains(t, err.Error(), "escape/secret")
	b.Abort()
	b, err = l.Build()
	require.NoError(t, err)
	files, err = b.Capture(src, []string{"node_modules/a/index.js", "node_modules/link", "node_modules/fifo", "escape", ".git/config", "../x", "missing"})
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

	lay, err := b.Commit(Meta{Key: strings.Repeat("a", 64), Files: files})
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
	_, err = lay.Restore(dst, "", 0)
	require.Error(t, err, "a tracked link out of the copy is not written through")
	entries, _ := os.ReadDir(outside)
	require.Empty(t, entries)
}

func TestEvictLeastRecentlyUsedButNeverInUse(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	l := &Layers{Dir: t.TempDir(), MaxBytes: 25, Now: func() time.Time { return now }}
	keys := []string{strings.Repeat("1", 64), strings.Repeat("2", 64), strings.Repeat("3", 64)}
	for _, k := range keys {
		b, err := l.Build()
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(b.dir, "copy", "f"), make([]byte, 10), 0o644))
		_, err = b.Commit(Meta{Key: k})
		require.NoError(t, err)
		now = now.Add(time.Minute)
	}
	_, ok := l.Get(keys[0]) // the oldest is used again: now the newest
	require.True(t, ok)
	require.NoError(t, l.Use(keys[1], "s1"))
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
	b, err := l.Build()
	require.NoError(t, err)
	l.Sweep()
	require.NoDirExists(t, b.dir)
}
