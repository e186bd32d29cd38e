package attachment

import (
	"bytes"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"

	"github.com/paddock-dev/paddock/internal/session"
)

// File is an attachment's content, to place in a working copy.
type File struct {
	Name string
	Data []byte
}

// Place writes files into the working copy at dir, under
// session.AttachmentsDir, read-only (files 0444, their directory 0555):
// through an os.Root, so a link the session planted leads nowhere outside
// the copy, and a file already there with the same content is left alone.
// The directory is owned by whoever runs Place (root on a server: the
// sandbox's user can neither change nor remove what is in it).
func Place(dir string, files []File) error {
	if len(files) == 0 {
		return nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	into := session.AttachmentsDir
	if err := root.MkdirAll(into, 0o755); err != nil {
		return err
	}
	if err := root.Chmod(into, 0o755); err != nil {
		return err
	}
	defer func() { _ = root.Chmod(into, 0o555) }()
	for _, f := range files {
		p := path.Join(into, f.Name)
		// Only a regular file of the same size is read (never a pipe).
		if fi, err := root.Lstat(p); err == nil && fi.Mode().IsRegular() && fi.Size() == int64(len(f.Data)) {
			if have, err := root.ReadFile(p); err == nil && bytes.Equal(have, f.Data) {
				continue
			}
		}
		if err := root.RemoveAll(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := root.WriteFile(p, f.Data, 0o444); err != nil {
			return err
		}
		if err := root.Chmod(p, 0o444); err != nil {
			return err
		}
	}
	return nil
}

// Stale lists the files of files (name → size) that Place would write in
// the working copy at dir: absent, or not a read-only regular file of
// their size there.
func Stale(dir string, files map[string]int64) []string {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return slices.Sorted(maps.Keys(files))
	}
	defer root.Close()
	var out []string
	for name, size := range files {
		fi, err := root.Lstat(path.Join(session.AttachmentsDir, name))
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o444 || fi.Size() != size {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
