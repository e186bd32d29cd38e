package workspace

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/paddock-dev/paddock/internal/clip"
)

// Change is one file of a checkpoint: how it differs from the base. Mode
// is git's ("100644", "100755", "120000" for a symbolic link, whose Data
// is its target); "" is a deletion.
type Change struct {
	Path string
	Mode string
	Data []byte
}

// State is a copy's state relative to its base: the tree git records for
// it, every file that differs with its bytes as they are in the copy, and
// what could not be held (a file too large, a nested repository).
type State struct {
	Tree    string
	Files   []Change
	Skipped []string
}

// Bounds of one checkpoint: the bytes of every changed file together, and
// how many files.
const (
	MaxCheckpoint      = 64 << 20
	MaxCheckpointFiles = 20000
)

// ErrCheckpointTooLarge says a copy differs from its base by more than a
// checkpoint holds.
var ErrCheckpointTooLarge = fmt.Errorf("the changed files hold more than %d MiB or number more than %d", MaxCheckpoint>>20, MaxCheckpointFiles)

// Capture is the state of the copy at dir relative to base. Which files
// differ is git's answer (as for a diff); their bytes are read from the
// copy as they are (no clean filter, no line-ending conversion), a link as
// its target, never what it points at, all through os.Root.
func Capture(ctx context.Context, dir, base string) (State, error) {
	if !isHash(base) {
		return State{}, errBase(base)
	}
	tree, skipped, env, done, err := stage(ctx, dir, base)
	if err != nil {
		return State{}, err
	}
	defer done()
	raw, err := gitRun(ctx, dir, env, "diff-tree", "-r", "-z", "--no-renames", "--end-of-options", base, tree)
	if err != nil {
		return State{}, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return State{}, err
	}
	defer root.Close()
	st := State{Tree: tree, Skipped: skipped}
	total := 0
	fields := strings.Split(strings.TrimSuffix(raw, "\x00"), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		// ":OLDMODE NEWMODE OLDID NEWID STATUS", then the path.
		meta := strings.Fields(strings.TrimPrefix(fields[i], ":"))
		if len(meta) != 5 {
			return State{}, fmt.Errorf("git diff-tree: unexpected line %q", fields[i])
		}
		p := fields[i+1]
		if len(st.Files) >= MaxCheckpointFiles {
			return State{}, ErrCheckpointTooLarge
		}
		switch {
		case meta[4] == "D":
			st.Files = append(st.Files, Change{Path: p})
			continue
		case meta[1] == "160000":
			st.Skipped = append(st.Skipped, p+": a nested repository (a commit reference; its files are not in the checkpoint)")
			continue
		}
		c, why, err := readChange(root, p)
		if err != nil {
			return State{}, err
		}
		if why != "" {
			st.Skipped = append(st.Skipped, p+": "+why)
			continue
		}
		if total += len(c.Data) + len(p); total > MaxCheckpoint {
			return State{}, ErrCheckpointTooLarge
		}
		st.Files = append(st.Files, c)
	}
	return st, nil
}

// readChange reads a changed file of the copy as it is: a link's target,
// a regular file's bytes; anything else is why it is not held.
func readChange(root *os.Root, p string) (Change, string, error) {
	fi, err := root.Lstat(p)
	if err != nil {
		return Change{}, "", fmt.Errorf("checkpoint %s: %w", p, err)
	}
	switch m := fi.Mode(); {
	case m&fs.ModeSymlink != 0:
		target, err := root.Readlink(p)
		return Change{Path: p, Mode: "120000", Data: []byte(target)}, "", err
	case !m.IsRegular():
		return Change{}, "not a regular file", nil
	case fi.Size() > MaxCheckpoint:
		return Change{}, fmt.Sprintf("larger than %d MiB", MaxCheckpoint>>20), nil
	}
	// Not a link now either (nothing of the session runs while the host
	// reads its copy; this is belt and braces).
	f, err := root.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return Change{}, "", fmt.Errorf("checkpoint %s: %w", p, err)
	}
	defer f.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(io.LimitReader(f, MaxCheckpoint+1)); err != nil {
		return Change{}, "", fmt.Errorf("checkpoint %s: %w", p, err)
	}
	if b.Len() > MaxCheckpoint {
		return Change{}, fmt.Sprintf("larger than %d MiB", MaxCheckpoint>>20), nil
	}
	mode := "100644"
	if fi.Mode()&0o111 != 0 {
		mode = "100755"
	}
	return Change{Path: p, Mode: mode, Data: b.Bytes()}, "", nil
}

// Restore makes dir a working copy of repo (an empty repository when repo
// is "") at base, with bundles unpacked first (in order: each makes a
// later base from an earlier one, or, without a repository, the first base
// itself) and files written as they were: the copy a checkpoint recorded,
// made again on a node that did not have it. No path, link or name of a
// checkpoint reaches outside dir or into a .git.
func Restore(ctx context.Context, repo, dir, base string, bundles [][]byte, files []Change) error {
	if !isHash(base) {
		return errBase(base)
	}
	if repo == "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		if _, err := gitRun(ctx, "", nil, "init", "--quiet", "--template=", dir); err != nil {
			return err
		}
	} else if err := Clone(ctx, repo, dir); err != nil {
		return err
	}
	for i, b := range bundles {
		f, err := os.CreateTemp("", "paddock-bundle-")
		if err != nil {
			return err
		}
		_, werr := f.Write(b)
		f.Close()
		if werr == nil {
			_, werr = gitRun(ctx, dir, nil, "bundle", "unbundle", f.Name())
		}
		os.Remove(f.Name())
		if werr != nil {
			return fmt.Errorf("the session's accepted snapshot %d of %d does not unpack: %w", i+1, len(bundles), werr)
		}
	}
	if _, err := gitRun(ctx, dir, nil, "reset", "--hard", "--quiet", "--no-recurse-submodules", base); err != nil {
		return fmt.Errorf("the session's base %s cannot be made again (the repository no longer has it?): %w", clip.ID(base), err)
	}
	return WriteBack(dir, files)
}

// WriteBack writes a checkpoint's files into the copy at dir as they were,
// deletions first. No path, link or name reaches outside dir or into a
// .git.
func WriteBack(dir string, files []Change) error {
	return writeChanges(dir, files, nil)
}

// writeChanges is WriteBack; with from set, a regular file's bytes are
// read from the file of the same path under from as they are written
// (its Data is empty), so no file is held in memory whole.
func writeChanges(dir string, files []Change, from *os.Root) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, c := range files {
		if !safePath(c.Path) {
			return fmt.Errorf("%w: checkpoint path %q", ErrUntrusted, c.Path)
		}
	}
	// Deletions first: a file may take the place of a removed directory.
	for _, c := range files {
		if c.Mode == "" {
			if err := throughDirs(root, c.Path); err != nil {
				return err
			}
			if err := root.RemoveAll(c.Path); err != nil {
				return fmt.Errorf("restore %s: %w", c.Path, err)
			}
		}
	}
	for _, c := range files {
		if c.Mode == "" {
			continue
		}
		p := c.Path
		if d := path.Dir(p); d != "." {
			if err := throughDirs(root, p); err != nil {
				return err
			}
			if err := root.MkdirAll(d, 0o755); err != nil {
				return fmt.Errorf("restore %s: %w", p, err)
			}
		}
		if err := root.RemoveAll(p); err != nil {
			return fmt.Errorf("restore %s: %w", p, err)
		}
		var err error
		switch c.Mode {
		case "120000":
			if bytes.IndexByte(c.Data, 0) >= 0 {
				return fmt.Errorf("%w: link %q", ErrUntrusted, c.Path)
			}
			err = root.Symlink(string(c.Data), p)
		case "100755":
			err = writeRegular(root, p, 0o755, c.Data, from)
		case "100644":
			err = writeRegular(root, p, 0o644, c.Data, from)
		default:
			return fmt.Errorf("%w: mode %q of %q", ErrUntrusted, c.Mode, c.Path)
		}
		if err != nil {
			return fmt.Errorf("restore %s: %w", p, err)
		}
	}
	return nil
}

// writeRegular writes the regular file p under root: data, or the bytes
// of the file p under from when from is set.
func writeRegular(root *os.Root, p string, perm os.FileMode, data []byte, from *os.Root) error {
	if from == nil {
		return root.WriteFile(p, data, perm)
	}
	in, err := from.Open(filepath.FromSlash(p))
	if err != nil {
		return err
	}
	defer in.Close()
	if st, err := in.Stat(); err != nil || !st.Mode().IsRegular() {
		return fmt.Errorf("%s is no longer a regular file", p)
	}
	out, err := root.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// throughDirs refuses a path whose directories include a link: a write
// goes where its name says, not where a link made by the same checkpoint
// would send it (into .git, say).
func throughDirs(root *os.Root, p string) error {
	d := path.Dir(p)
	for d != "." && d != "/" {
		if fi, err := root.Lstat(d); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%w: checkpoint path %q goes through the link %q", ErrUntrusted, p, d)
		}
		d = path.Dir(d)
	}
	return nil
}

// safePath says p is a plain relative path inside a copy, with no .git
// component at any depth (in any case).
func safePath(p string) bool {
	c := path.Clean(p)
	if c != p || c == "." || path.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../") || strings.ContainsRune(c, 0) {
		return false
	}
	for _, part := range strings.Split(c, "/") {
		if strings.EqualFold(part, ".git") {
			return false
		}
	}
	return filepath.IsLocal(c)
}
