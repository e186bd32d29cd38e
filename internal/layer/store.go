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

// get reads the layer named key, if it is built.
func (l *Layers) get(key string) (Layer, bool) {
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
	return Layer{Meta: m, Dir: dir}, true
}

// Acquire returns the layer named key if it is built, marked used now and
// used by session: it is not evicted until Release(session).
func (l *Layers) Acquire(key, session string) (Layer, bool, error) {
	if !validSession(session) {
		return Layer{}, false, fmt.Errorf("layer: invalid session %q", session)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	lay, ok := l.get(key)
	if !ok {
		return Layer{}, false, nil
	}
	return lay, true, l.use(lay, session)
}

// use marks lay used now, by session. Call with mu held.
func (l *Layers) use(lay Layer, session string) error {
	now := l.now()
	_ = os.Chtimes(filepath.Join(lay.Dir, "meta.json"), now, now)
	dir := filepath.Join(lay.Dir, "users")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, session), nil, 0o600)
}

// Build is a layer being built: setup fills Deps (bound writable into its
// sandbox), then Capture takes the files it left in the working copy and
// Commit makes it a layer.
type Build struct {
	l   *Layers
	dir string
	// deps is where setup writes the dependency caches: under the build,
	// or a directory of the session's own (its volume, so its disk budget
	// bounds what setup writes), copied into the layer at Commit.
	deps string
	// Limit bounds the bytes a layer may hold (apparent sizes, so a sparse
	// or hard-linked file counts in full); 0 for no bound.
	Limit int64
	bytes int64
}

// ErrTooLarge says an environment outgrew its layer's bound.
var ErrTooLarge = errors.New("the environment is larger than its bound")

// Build starts building a layer; deps, when set, is an empty directory of
// the session's own where setup writes the dependency caches (owned by
// the sandbox user), else they go under the build.
func (l *Layers) Build(deps string) (*Build, error) {
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
	b := &Build{l: l, dir: dir, deps: deps}
	if deps == "" {
		b.deps = filepath.Join(dir, "deps")
		if err := os.Mkdir(b.deps, 0o700); err != nil {
			b.Abort()
			return nil, err
		}
	}
	for _, sub := range []string{".", "go", "go/mod", "npm", "pip"} {
		p := filepath.Join(b.deps, sub)
		if err := os.MkdirAll(p, 0o700); err != nil {
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
func (b *Build) Deps() string { return b.deps }

// Abort throws the build away.
func (b *Build) Abort() {
	_ = os.RemoveAll(b.dir)
	if b.deps != filepath.Join(b.dir, "deps") {
		_ = os.RemoveAll(b.deps)
	}
}

// Capture copies the files at paths (relative to workdir, as git lists
// untracked files) into the layer. The working copy is hostile: a path
// with a symbolic link among its directories is left out (and os.Root
// keeps every path inside workdir), a regular file is read only after it
// is opened without following a link and found regular, a symbolic link
// is kept as a link (never followed), anything else (pipes, sockets,
// devices) and anything in a .git directory is left out, and the bytes
// copied count against Limit.
func (b *Build) Capture(workdir string, paths []string) (files int, err error) {
	return b.copy(workdir, filepath.Join(b.dir, "copy"), paths)
}

// CaptureCache copies the session's build cache as setup left it (its
// GOCACHE, say) into the layer, by the same rules as Capture: each later
// session starts with a copy of its own, so nothing flows between
// sessions but what setup made.
func (b *Build) CaptureCache(cache string) (files int, err error) {
	return b.copy(cache, filepath.Join(b.dir, "cache"), nil)
}

// copy copies paths (every file under from when nil) into to, counting
// against the build's Limit.
func (b *Build) copy(from, to string, paths []string) (int, error) {
	c := copier{uid: -1, limit: b.Limit, used: b.bytes}
	n, err := c.tree(from, to, paths)
	b.bytes = c.used
	return n, err
}

// copier copies files between two trees, hostile ones included.
type copier struct {
	// uid owns what is created, when >= 0.
	uid int
	// limit bounds used (0: none).
	limit, used int64
}

// tree copies paths (every file under from when nil) from from into to.
func (c *copier) tree(from, to string, paths []string) (files int, err error) {
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
	one := func(p string) error {
		n, err := c.one(src, dst, p)
		files += n
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		return nil
	}
	if paths != nil {
		for _, p := range paths {
			if err := one(p); err != nil {
				return files, err
			}
		}
		return files, nil
	}
	err = fs.WalkDir(src.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return one(p)
	})
	return files, err
}

// one copies path p from src to dst, making the directories above it
// (owned by uid when uid >= 0; directories that exist are left as they
// are). It skips p when a directory above it is a link or not a directory
// on either side, when dst already has it, and when it is not a regular
// file or a link. It reports 1 when it copied something.
func (c *copier) one(src, dst *os.Root, p string) (int, error) {
	p = filepath.Clean(p)
	if p == "." || p == ".." || strings.HasPrefix(p, "../") || filepath.IsAbs(p) {
		return 0, nil
	}
	parts := strings.Split(p, "/")
	if slices.Contains(parts, ".git") {
		return 0, nil
	}
	for i := 1; i < len(parts); i++ {
		fi, err := src.Lstat(filepath.Join(parts[:i]...))
		if err != nil || !fi.IsDir() {
			return 0, nil
		}
	}
	fi, err := src.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if !fi.Mode().IsRegular() && fi.Mode()&fs.ModeSymlink == 0 {
		return 0, nil
	}
	for i := 1; i < len(parts); i++ {
		dir := filepath.Join(parts[:i]...)
		di, err := dst.Lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := dst.Mkdir(dir, 0o755); err != nil {
				return 0, err
			}
			if c.uid >= 0 {
				if err := dst.Lchown(dir, c.uid, c.uid); err != nil {
					return 0, err
				}
			}
		case err != nil:
			return 0, err
		case !di.IsDir():
			return 0, nil // a link or a file of the destination's own: left alone
		}
	}
	if _, err := dst.Lstat(p); err == nil {
		return 0, nil // the destination's own (tracked) file wins
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := src.Readlink(p)
		if err != nil {
			return 0, err
		}
		if err := dst.Symlink(target, p); err != nil {
			return 0, err
		}
	} else {
		in, err := src.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != nil {
			return 0, err
		}
		defer in.Close()
		st, err := in.Stat()
		if err != nil || !st.Mode().IsRegular() {
			return 0, nil // swapped for something else: left out
		}
		if c.limit > 0 && c.used+st.Size() > c.limit {
			return 0, fmt.Errorf("%w (%d bytes)", ErrTooLarge, c.limit)
		}
		c.used += st.Size()
		out, err := dst.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, st.Mode().Perm()&0o755)
		if err != nil {
			return 0, err
		}
		_, err = io.Copy(out, io.LimitReader(in, st.Size()))
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return 0, err
		}
		_ = dst.Chtimes(p, st.ModTime(), st.ModTime())
	}
	if c.uid >= 0 {
		if err := dst.Lchown(p, c.uid, c.uid); err != nil {
			return 0, err
		}
	}
	return 1, nil
}

// Commit makes the build the layer named by m.Key, used by session: the
// dependency caches are copied into it when setup wrote them elsewhere
// (counting against Limit), become root's and readable by all (the
// sandbox binds them read-only), and the build is renamed into place.
// When another build of the same key got there first, that one is kept
// and this one thrown away.
func (b *Build) Commit(m Meta, session string) (Layer, error) {
	if !validKey(m.Key) || !validSession(session) {
		b.Abort()
		return Layer{}, fmt.Errorf("layer: invalid key %q or session %q", m.Key, session)
	}
	deps := filepath.Join(b.dir, "deps")
	if b.deps != deps {
		if err := os.Mkdir(deps, 0o755); err != nil {
			b.Abort()
			return Layer{}, err
		}
		if _, err := b.copy(b.deps, deps, nil); err != nil {
			b.Abort()
			return Layer{}, fmt.Errorf("dependency caches: %w", err)
		}
		_ = os.RemoveAll(b.deps)
		b.deps = deps
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
		if p == deps || strings.HasPrefix(p, deps+"/") {
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
	b.l.mu.Lock()
	defer b.l.mu.Unlock()
	lay := Layer{Meta: m, Dir: filepath.Join(b.l.Dir, m.Key)}
	if err := os.Rename(b.dir, lay.Dir); err != nil {
		b.Abort()
		var ok bool
		if lay, ok = b.l.get(m.Key); !ok {
			return Layer{}, err
		}
	}
	return lay, b.l.use(lay, session)
}

// Restore copies the layer's files into workdir (a fresh working copy)
// and its build cache into cache (the session's own, "" for none), owned
// by uid when it is not 0; a path the copy already has (tracked at its
// base) is left as it is, and nothing is written through a link of the
// copy's or into its .git.
func (l Layer) Restore(workdir, cache string, uid int) (files int, err error) {
	c := copier{uid: -1}
	if uid != 0 {
		c.uid = uid
	}
	if files, err = c.tree(filepath.Join(l.Dir, "copy"), workdir, nil); err != nil || cache == "" {
		return files, err
	}
	if _, err := os.Stat(filepath.Join(l.Dir, "cache")); err != nil {
		return files, nil
	}
	n, err := c.tree(filepath.Join(l.Dir, "cache"), cache, nil)
	return files + n, err
}

// Of is the layer session uses, if any.
func (l *Layers) Of(session string) (Layer, bool) {
	if l == nil || !validSession(session) {
		return Layer{}, false
	}
	matches, _ := filepath.Glob(filepath.Join(l.Dir, "*", "users", session))
	for _, m := range matches {
		if lay, ok := l.get(filepath.Base(filepath.Dir(filepath.Dir(m)))); ok {
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
