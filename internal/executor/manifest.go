package executor

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"syscall"
)

// Kinds of entries a working copy holds; anything else (devices, FIFOs,
// sockets) is neither listed nor carried.
const (
	KindFile    = "f"
	KindDir     = "d"
	KindSymlink = "l"
)

// Bounds of a tree either end accepts: entries, and each path's length
// and depth. A tree beyond them is refused rather than listed or walked
// without end.
const (
	MaxEntries = 500_000
	MaxPath    = 4096
	MaxDepth   = 128
)

// Entry is one path of a working copy as both ends compare it.
type Entry struct {
	Kind string `json:"k"`
	Exec bool   `json:"x,omitempty"`
	Size int64  `json:"s,omitempty"`
	Hash string `json:"h,omitempty"`
	Link string `json:"l,omitempty"`
}

// Manifest maps slash-separated paths relative to the copy's root to
// their entries.
type Manifest map[string]Entry

// Scanner lists trees. It hashes a file again only when the file is not
// the one it hashed last at that path: another inode, size, modification
// or change time (the change time moves with every write, and no user
// sets it).
type Scanner struct {
	mu   sync.Mutex
	seen map[string]stamped
}

type stamped struct {
	dev, ino     uint64
	size         int64
	mtime, ctime syscall.Timespec
	entry        Entry
}

// Scan lists the tree under root without following a symbolic link: a
// link is listed as a link, whatever it points at.
func (s *Scanner) Scan(root *os.Root) (Manifest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, seen := Manifest{}, map[string]stamped{}
	err := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if len(m) >= MaxEntries {
			return fmt.Errorf("the working copy holds more than %d entries", MaxEntries)
		}
		if _, err := Clean(p); err != nil {
			return err
		}
		switch t := d.Type(); {
		case t.IsDir():
			m[p] = Entry{Kind: KindDir}
		case t&fs.ModeSymlink != 0:
			target, err := root.Readlink(p)
			if err != nil {
				return err
			}
			m[p] = Entry{Kind: KindSymlink, Link: target}
		case t.IsRegular():
			info, err := root.Lstat(p)
			if err != nil {
				return err
			}
			st, ok := info.Sys().(*syscall.Stat_t)
			if !ok || !info.Mode().IsRegular() {
				return fmt.Errorf("%s changed while it was read", p)
			}
			now := stamped{dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtime: st.Mtim, ctime: st.Ctim}
			if old, ok := s.seen[p]; ok && old.dev == now.dev && old.ino == now.ino && old.size == now.size && old.mtime == now.mtime && old.ctime == now.ctime {
				now.entry = old.entry
			} else if now.entry, err = hashFile(root, p); err != nil {
				return err
			}
			m[p], seen[p] = now.entry, now
		}
		return nil
	})
	if err == nil {
		s.seen = seen
	}
	return m, err
}

// hashFile reads one regular file, refusing one swapped for a link.
func hashFile(root *os.Root, p string) (Entry, error) {
	f, err := root.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return Entry{}, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return Entry{}, err
	}
	if !info.Mode().IsRegular() {
		return Entry{}, fmt.Errorf("%s changed while it was read", p)
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return Entry{}, err
	}
	return Entry{Kind: KindFile, Exec: info.Mode().Perm()&0o100 != 0, Size: n, Hash: hex.EncodeToString(h.Sum(nil))}, nil
}

// Changes are what makes one tree equal to another: the paths to copy
// over (in an order where parents come first) and the paths to remove
// (children first).
type Changes struct {
	Copy   []string
	Remove []string
}

// Diff says how to turn have into want, for the paths keep accepts
// (nil: all). A path whose kind changes is removed and copied again.
func Diff(want, have Manifest, keep func(string) bool) Changes {
	var c Changes
	for p, w := range want {
		if keep != nil && !keep(p) {
			continue
		}
		h, ok := have[p]
		if ok && h == w {
			continue
		}
		if ok && h.Kind != w.Kind {
			c.Remove = append(c.Remove, p)
		}
		c.Copy = append(c.Copy, p)
	}
	for p := range have {
		if _, ok := want[p]; !ok && (keep == nil || keep(p)) {
			c.Remove = append(c.Remove, p)
		}
	}
	sort.Strings(c.Copy)
	sort.Sort(sort.Reverse(sort.StringSlice(c.Remove)))
	return c
}

// Empty says nothing changes.
func (c Changes) Empty() bool { return len(c.Copy) == 0 && len(c.Remove) == 0 }

// Clean checks a path received from the other end: relative, clean,
// slash-separated, never climbing out.
func Clean(p string) (string, error) {
	if len(p) > MaxPath || strings.Count(p, "/") >= MaxDepth {
		return "", fmt.Errorf("refused path %.64q…: longer than %d bytes or deeper than %d directories", p, MaxPath, MaxDepth)
	}
	if p == "" || path.IsAbs(p) || strings.Contains(p, "\\") || strings.ContainsRune(p, 0) || path.Clean(p) != p || p == "." || p == ".." || strings.HasPrefix(p, "../") {
		return "", fmt.Errorf("refused path %q: not a clean relative path", p)
	}
	return p, nil
}

// Returnable says whether a command may hand path p back to the host's
// copy (write, replace or remove it): anything outside .git directories.
// Nothing of a repository's .git comes back, as under bubblewrap, where
// it is read-only: its objects, index and refs are what the host's git
// reviews and delivers from, and a command could forge them (an object
// rewritten under its old name, an index hiding a change).
func Returnable(p string) bool { return !inGit(p) }

// inGit says whether p lies inside a .git directory.
func inGit(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if part == ".git" {
			return true
		}
	}
	return false
}
