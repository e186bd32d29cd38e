package layer

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Layers is the directory of layers:
//
//	DIR/KEY/meta.json      what the layer is (Meta); its mtime: last use
//	DIR/KEY/deps/          the dependency caches (go/mod, npm, pip)
//	DIR/KEY/copy/          the untracked files setup left in the copy
//	DIR/KEY/users/SESSION  a live session uses the layer
//	DIR/.build-RANDOM/     a layer being built
type Layers struct {
	Dir string
	// MaxBytes bounds the layers kept; unused layers beyond it go, least
	// recently used first.
	MaxBytes int64
	// UID, when non-zero, is the sandbox user that fills a layer's
	// dependency caches while setup runs.
	UID int
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	mu sync.Mutex
}

// Meta describes a layer.
type Meta struct {
	Key    string    `json:"key"`
	Inputs Inputs    `json:"inputs"`
	Built  time.Time `json:"built"`
	// SetupSeconds is how long setup ran.
	SetupSeconds float64 `json:"setupSeconds"`
	Bytes        int64   `json:"bytes"`
	Files        int     `json:"files"`
}

// Layer is a built layer.
type Layer struct {
	Meta
	Dir string
}

// Deps is the host directory of the layer's dependency caches.
func (l Layer) Deps() string { return filepath.Join(l.Dir, "deps") }

func (l *Layers) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func validKey(key string) bool {
	if len(key) != 64 {
		return false
	}
	_, err := hex.DecodeString(key)
	return err == nil
}

// Get returns the layer named key if it is built, and marks it used now.
func (l *Layers) Get(key string) (Layer, bool) {
	if !validKey(key) {
		return Layer{}, false
	}
	dir := filepath.Join(l.Dir, key)
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		return Layer{}, false
	}
	var m Meta
	if json.Unmarshal(b, &m) != nil || m.Key != key {
		return Layer{}, false
	}
	now := l.now()
	_ = os.Chtimes(filepath.Join(dir, "meta.json"), now, now)
	return Layer{Meta: m, Dir: dir}, true
}

// Build is a layer being built: setup fills Deps (bound writable into its
// sandbox), then Capture takes the files it left in the working copy and
// Commit makes it a layer.
type Build struct {
	l   *Layers
	dir string
}

// Build starts building a layer.
func (l *Layers) Build() (*Build, error) {
	if err := os.MkdirAll(l.Dir, 0o711); err != nil {
		return nil, err
	}
	_ = os.Chmod(l.Dir, 0o711)
	var r [8]byte
	_, _ = rand.Read(r[:])
	dir := filepath.Join(l.Dir, ".build-"+hex.EncodeToString(r[:]))
	if err := os.Mkdir(dir, 0o711); err != nil {
		return nil, err
	}
	b := &Build{l: l, dir: dir}
	for _, sub := range []string{"deps", "deps/go", "deps/go/mod", "deps/npm", "deps/pip"} {
		p := filepath.Join(dir, sub)
		if err := os.Mkdir(p, 0o700); err != nil {
			b.Abort()
			return nil, err
		}
		if l.UID != 0 {
			if err := os.Chown(p, l.UID, l.UID); err != nil {
				b.Abort()
				return nil, err
			}
		}
	}
	for _, sub := range []string{"copy", "cache"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o700); err != nil {
			b.Abort()
			return nil, err
		}
	}
	return b, nil
}

// Deps is where setup writes the dependency caches.
func (b *Build) Deps() string { return filepath.Join(b.dir, "deps") }

// Abort throws the build away.
func (b *Build) Abort() { _ = os.RemoveAll(b.dir) }

// Capture copies the files at paths (relative to workdir, as git lists
// untracked files) into the layer. The working copy is hostile: every path
// is resolved inside workdir (os.Root: no symbolic link leads out), a
// regular file is read only after it is opened without following a link
// and found regular, a symbolic link is kept as a link (never followed),
// and anything else (pipes, sockets, devices) is left out.
func (b *Build) Capture(workdir string, paths []string) (files int, err error) {
	src, err := os.OpenRoot(workdir)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	dst, err := os.OpenRoot(filepath.Join(b.dir, "copy"))
	if err != nil {
		return 0, err
	}
	defer dst.Close()
	for _, p := range paths {
		n, err := copyOne(src, dst, p, -1)
		if err != nil {
			return files, fmt.Errorf("capture %s: %w", p, err)
		}
		files += n
	}
	return files, nil
}

// CaptureCache copies the session's build cache as setup left it (its
// GOCACHE, say) into the layer, by the same rules as Capture: each later
// session starts with a copy of its own, so nothing flows between
// sessions but what setup made.
func (b *Build) CaptureCache(cache string) (files int, err error) {
	return copyTree(cache, filepath.Join(b.dir, "cache"), -1)
}

// copyTree copies every file and link under from into to, owned by uid
// when uid >= 0; what to already has is kept.
func copyTree(from, to string, uid int) (files int, err error) {
	src, err := os.OpenRoot(from)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	dst, err := os.OpenRoot(to)
	if err != nil {
		return 0, err
	}
	defer dst.Close()
	err = fs.WalkDir(src.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n, err := copyOne(src, dst, p, uid)
		files += n
		return err
	})
	return files, err
}

// copyOne copies path p from src to dst (creating its parent directories),
// owned by uid when uid >= 0; it skips p when dst already has it. It
// reports 1 when it copied something.
func copyOne(src, dst *os.Root, p string, uid int) (int, error) {
	p = filepath.Clean(p)
	if p == "." || strings.HasPrefix(p, "..") || filepath.IsAbs(p) || p == ".git" || strings.HasPrefix(p, ".git/") {
		return 0, nil
	}
	fi, err := src.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if _, err := dst.Lstat(p); err == nil {
		return 0, nil // the working copy's own (tracked) file wins
	}
	if dir := filepath.Dir(p); dir != "." {
		if err := dst.MkdirAll(dir, 0o755); err != nil {
			return 0, err
		}
		if uid >= 0 {
			if err := chownParents(dst, dir, uid); err != nil {
				return 0, err
			}
		}
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := src.Readlink(p)
		if err != nil {
			return 0, err
		}
		if err := dst.Symlink(target, p); err != nil {
			return 0, err
		}
	case fi.Mode().IsRegular():
		in, err := src.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != nil {
			return 0, err
		}
		defer in.Close()
		st, err := in.Stat()
		if err != nil || !st.Mode().IsRegular() {
			return 0, nil // swapped for something else: left out
		}
		out, err := dst.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, st.Mode().Perm()&0o755)
		if err != nil {
			return 0, err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return 0, err
		}
		if err := out.Close(); err != nil {
			return 0, err
		}
	default:
		return 0, nil
	}
	if uid >= 0 {
		if err := dst.Lchown(p, uid, uid); err != nil {
			return 0, err
		}
	}
	return 1, nil
}

// chownParents gives dir and its parents (inside dst) to uid.
func chownParents(dst *os.Root, dir string, uid int) error {
	for d := dir; d != "." && d != "/"; d = filepath.Dir(d) {
		if err := dst.Lchown(d, uid, uid); err != nil {
			return err
		}
	}
	return nil
}

// Commit makes the build the layer named by m.Key: the dependency caches
// become root's, readable by all (the sandbox binds them read-only), and
// the build is renamed into place. When another build of the same key got
// there first, that one is kept and this one thrown away.
func (b *Build) Commit(m Meta) (Layer, error) {
	if !validKey(m.Key) {
		b.Abort()
		return Layer{}, fmt.Errorf("layer: invalid key %q", m.Key)
	}
	var size int64
	err := filepath.WalkDir(b.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			size += fi.Size()
		}
		if strings.HasPrefix(p, b.Deps()) {
			if err := os.Lchown(p, 0, 0); err != nil {
				return err
			}
			if d.Type()&fs.ModeSymlink == 0 {
				mode := fi.Mode().Perm() | 0o444
				if d.IsDir() {
					mode |= 0o111
				}
				return os.Chmod(p, mode&^0o022)
			}
		}
		return nil
	})
	if err != nil {
		b.Abort()
		return Layer{}, err
	}
	m.Bytes = size
	m.Built = b.l.now().UTC()
	data, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(filepath.Join(b.dir, "meta.json"), data, 0o644); err != nil {
		b.Abort()
		return Layer{}, err
	}
	_ = os.Chtimes(filepath.Join(b.dir, "meta.json"), m.Built, m.Built) // last used: now
	b.l.mu.Lock()
	defer b.l.mu.Unlock()
	final := filepath.Join(b.l.Dir, m.Key)
	if err := os.Rename(b.dir, final); err != nil {
		b.Abort()
		if l, ok := b.l.Get(m.Key); ok {
			return l, nil
		}
		return Layer{}, err
	}
	return Layer{Meta: m, Dir: final}, nil
}

// Restore copies the layer's files into workdir (a fresh working copy)
// and its build cache into cache (the session's own, "" for none), owned
// by uid when it is not 0; a path the copy already has (tracked at its
// base) is left as it is.
func (l Layer) Restore(workdir, cache string, uid int) (files int, err error) {
	owner := -1
	if uid != 0 {
		owner = uid
	}
	if files, err = copyTree(filepath.Join(l.Dir, "copy"), workdir, owner); err != nil || cache == "" {
		return files, err
	}
	if _, err := os.Stat(filepath.Join(l.Dir, "cache")); err != nil {
		return files, nil
	}
	n, err := copyTree(filepath.Join(l.Dir, "cache"), cache, owner)
	return files + n, err
}

// Use records that session uses the layer: it is not evicted while so.
func (l *Layers) Use(key, session string) error {
	if !validKey(key) || !validSession(session) {
		return fmt.Errorf("layer: invalid key or session")
	}
	dir := filepath.Join(l.Dir, key, "users")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, session), nil, 0o600)
}

// Of is the layer session uses, if any.
func (l *Layers) Of(session string) (Layer, bool) {
	if l == nil || !validSession(session) {
		return Layer{}, false
	}
	matches, _ := filepath.Glob(filepath.Join(l.Dir, "*", "users", session))
	for _, m := range matches {
		if lay, ok := l.Get(filepath.Base(filepath.Dir(filepath.Dir(m)))); ok {
			return lay, true
		}
	}
	return Layer{}, false
}

// Release records that session no longer uses any layer.
func (l *Layers) Release(session string) {
	if l == nil || !validSession(session) {
		return
	}
	matches, _ := filepath.Glob(filepath.Join(l.Dir, "*", "users", session))
	for _, m := range matches {
		_ = os.Remove(m)
	}
}

func validSession(s string) bool {
	return s != "" && !strings.ContainsAny(s, "/\\*?[") && s != "." && s != ".."
}

// List returns the built layers, least recently used first.
func (l *Layers) List() ([]Layer, error) {
	entries, err := os.ReadDir(l.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	type used struct {
		Layer
		at time.Time
	}
	var all []used
	for _, e := range entries {
		if !validKey(e.Name()) {
			continue
		}
		dir := filepath.Join(l.Dir, e.Name())
		fi, err := os.Stat(filepath.Join(dir, "meta.json"))
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
		if err != nil {
			continue
		}
		var m Meta
		if json.Unmarshal(b, &m) != nil {
			continue
		}
		all = append(all, used{Layer{Meta: m, Dir: dir}, fi.ModTime()})
	}
	slices.SortFunc(all, func(a, b used) int { return a.at.Compare(b.at) })
	out := make([]Layer, len(all))
	for i, u := range all {
		out[i] = u.Layer
	}
	return out, nil
}

// Evict removes unused layers, least recently used first, until the rest
// fit in MaxBytes; it returns the keys removed.
func (l *Layers) Evict() ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	all, err := l.List()
	if err != nil {
		return nil, err
	}
	var total int64
	for _, x := range all {
		total += x.Bytes
	}
	var gone []string
	for _, x := range all {
		if total <= l.MaxBytes {
			break
		}
		if users, _ := os.ReadDir(filepath.Join(x.Dir, "users")); len(users) > 0 {
			continue
		}
		if err := os.RemoveAll(x.Dir); err != nil {
			return gone, err
		}
		total -= x.Bytes
		gone = append(gone, x.Key)
	}
	return gone, nil
}

// Sweep removes builds a previous process left unfinished. Call it at
// start, before any build.
func (l *Layers) Sweep() {
	entries, _ := os.ReadDir(l.Dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".build-") {
			_ = os.RemoveAll(filepath.Join(l.Dir, e.Name()))
		}
	}
}
