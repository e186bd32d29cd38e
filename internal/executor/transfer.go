package executor

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
)

// removal marks a tar entry that removes its path rather than writing it.
const removal = "PADDOCK.remove"

// Pack writes the changes as a tar stream: removals first (as entries
// marked for removal), then the paths to copy, read from root without
// following links.
func Pack(w io.Writer, root *os.Root, ch Changes) error {
	tw := tar.NewWriter(w)
	for _, p := range ch.Remove {
		if err := tw.WriteHeader(&tar.Header{Name: p, Typeflag: tar.TypeReg, Mode: 0o600, Format: tar.FormatPAX, PAXRecords: map[string]string{removal: "1"}}); err != nil {
			return err
		}
	}
	for _, p := range ch.Copy {
		if err := packOne(tw, root, p); err != nil {
			return err
		}
	}
	return tw.Close()
}

func packOne(tw *tar.Writer, root *os.Root, p string) error {
	info, err := root.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // gone since it was listed: the next sync sees it
	}
	if err != nil {
		return err
	}
	h := &tar.Header{Name: p, Mode: int64(info.Mode().Perm()), Format: tar.FormatPAX}
	switch {
	case info.IsDir():
		h.Typeflag = tar.TypeDir
		return tw.WriteHeader(h)
	case info.Mode()&fs.ModeSymlink != 0:
		if h.Linkname, err = root.Readlink(p); err != nil {
			return err
		}
		h.Typeflag = tar.TypeSymlink
		return tw.WriteHeader(h)
	case !info.Mode().IsRegular():
		return nil
	}
	f, err := root.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if info, err = f.Stat(); err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s changed while it was read", p)
	}
	h.Typeflag, h.Size, h.Mode = tar.TypeReg, info.Size(), int64(info.Mode().Perm())
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if _, err := io.CopyN(tw, f, h.Size); err != nil {
		return fmt.Errorf("%s changed while it was read: %w", p, err)
	}
	return nil
}

// Into says where and how Unpack writes.
type Into struct {
	Root *os.Root
	// Accept, when set, says which paths the sender may touch; any other
	// fails the whole transfer.
	Accept func(string) bool
	// Limit bounds the bytes written (0: none).
	Limit int64
	// UID owns what is written (negative: the writer's own).
	UID int
}

// Totals count what a transfer did.
type Totals struct {
	Written int   `json:"written"`
	Removed int   `json:"removed"`
	Bytes   int64 `json:"bytes"`
}

// Unpack applies a tar stream of Pack to the tree, as hostile input: every
// path is clean and relative, no parent is a link (so nothing lands
// outside the tree or inside .git through one), links inside .git and
// entries other than files, directories and links are refused, and the
// bytes stay within the limit.
func Unpack(r io.Reader, into Into) (Totals, error) {
	var t Totals
	dirs := checked{} // directories known real in this transfer
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return t, nil
		}
		if err != nil {
			return t, err
		}
		p, err := Clean(h.Name)
		if err != nil {
			return t, err
		}
		if into.Accept != nil && !into.Accept(p) {
			return t, fmt.Errorf("refused path %q: not one the sender may change", p)
		}
		dirs.forget(p) // whatever p becomes, nothing under it is known
		if h.PAXRecords[removal] == "1" {
			gone, err := remove(into.Root, p, dirs)
			if err != nil {
				return t, err
			}
			if gone {
				t.Removed++
			}
			continue
		}
		if err := parents(into.Root, p, into.UID, dirs); err != nil {
			return t, err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if info, err := into.Root.Lstat(p); err == nil && info.IsDir() {
				err = into.Root.Chmod(p, fs.FileMode(h.Mode)&0o755|0o700)
				if err != nil {
					return t, err
				}
				continue
			}
			if err := into.Root.RemoveAll(p); err != nil {
				return t, err
			}
			if err := into.Root.Mkdir(p, fs.FileMode(h.Mode)&0o755|0o700); err != nil {
				return t, err
			}
		case tar.TypeSymlink:
			if inGit(p) {
				return t, fmt.Errorf("refused path %q: a link inside .git", p)
			}
			if err := into.Root.RemoveAll(p); err != nil {
				return t, err
			}
			if err := into.Root.Symlink(h.Linkname, p); err != nil {
				return t, err
			}
		case tar.TypeReg:
			if into.Limit > 0 && t.Bytes+h.Size > into.Limit {
				return t, fmt.Errorf("the files to write exceed %d MiB, the session's disk budget", into.Limit>>20)
			}
			if err := into.Root.RemoveAll(p); err != nil {
				return t, err
			}
			f, err := into.Root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, fs.FileMode(h.Mode)&0o755|0o600)
			if err != nil {
				return t, err
			}
			n, err := io.CopyN(f, tr, h.Size)
			t.Bytes += n
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return t, err
			}
		default:
			return t, fmt.Errorf("refused path %q: tar entry type %q is not a file, directory or link", p, h.Typeflag)
		}
		if into.UID >= 0 {
			if err := into.Root.Lchown(p, into.UID, into.UID); err != nil {
				return t, err
			}
		}
		t.Written++
	}
}

// checked are the directories of a tree known to be real directories
// (not links) during one transfer; each is checked once, not once per
// entry below it.
type checked map[string]bool

// forget drops p and everything under it: p is about to change.
func (c checked) forget(p string) {
	if !c[p] {
		return // nothing under an unchecked path was checked
	}
	for d := range c {
		if d == p || strings.HasPrefix(d, p+"/") {
			delete(c, d)
		}
	}
}

// remove deletes p (a whole tree for a directory, the link itself for a
// link) unless a parent of p is missing or not a real directory.
func remove(root *os.Root, p string, dirs checked) (bool, error) {
	if ok, err := walkParents(root, p, dirs, func(string) (bool, error) { return false, nil }); !ok || err != nil {
		return false, err
	}
	if _, err := root.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return true, root.RemoveAll(p)
}

// parents makes sure every directory above p is a real directory of the
// tree, making missing ones owned by uid (when not negative): a link or
// file in the way is refused, since going through a link could reach
// .git or another path the sender may not touch.
func parents(root *os.Root, p string, uid int, dirs checked) error {
	_, err := walkParents(root, p, dirs, func(sub string) (bool, error) {
		if err := root.Mkdir(sub, 0o755); err != nil {
			return false, err
		}
		if uid >= 0 {
			return true, root.Lchown(sub, uid, uid)
		}
		return true, nil
	})
	return err
}

// walkParents checks each directory above p (missing ones go to
// missing, which says whether to go on) and says whether all are there.
func walkParents(root *os.Root, p string, dirs checked, missing func(string) (bool, error)) (bool, error) {
	dir := path.Dir(p)
	if dir == "." {
		return true, nil
	}
	parts := strings.Split(dir, "/")
	for i := range parts {
		sub := strings.Join(parts[:i+1], "/")
		if dirs[sub] {
			continue
		}
		info, err := root.Lstat(sub)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if ok, err := missing(sub); !ok || err != nil {
				return false, err
			}
		case err != nil:
			return false, err
		case !info.IsDir():
			return false, fmt.Errorf("refused path %q: %s is not a directory", p, sub)
		}
		dirs[sub] = true
	}
	return true, nil
}
