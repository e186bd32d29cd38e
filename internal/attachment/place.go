package attachment

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/session"
)

// File is an attachment's content, to place in a working copy.
type File struct {
	Name string
	Data []byte
}

// Place writes files into the working copy at dir, under
// session.AttachmentsDir, read-only (files 0444, their directory 0555,
// owned by whoever runs Place: root on a server, so the sandbox's user
// can neither change nor remove them). The session owns the copy and may
// have planted anything on the way, so no link is ever followed: each
// directory is opened relative to the one before with O_NOFOLLOW, a link
// or a file where a directory goes is removed (the session's own plant),
// and each file is created anew (O_EXCL, O_NOFOLLOW) unless one of the
// same content is there (read through the same open file, never a pipe).
func Place(dir string, files []File) error {
	if len(files) == 0 {
		return nil
	}
	att, err := openAttachments(dir, true)
	if err != nil {
		return fmt.Errorf("place attachments in the working copy: %w", err)
	}
	defer unix.Close(att)
	if err := unix.Fchmod(att, 0o755); err != nil {
		return err
	}
	defer func() { _ = unix.Fchmod(att, 0o555) }()
	var errs []error
	for _, f := range files {
		if err := placeOne(att, f); err != nil {
			errs = append(errs, fmt.Errorf("place attachment %s: %w", f.Name, err))
		}
	}
	return errors.Join(errs...)
}

// placeOne writes f in directory att (each file on its own: one that
// cannot be placed leaves the others be).
func placeOne(att int, f File) error {
	if f.Name != Name(f.Name) {
		return fmt.Errorf("not a name of Name's")
	}
	if same(att, f.Name, f.Data) {
		return nil
	}
	if err := removeAt(att, f.Name); err != nil {
		return err
	}
	fd, err := unix.Openat(att, f.Name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o444)
	if err != nil {
		return err
	}
	out := os.NewFile(uintptr(fd), f.Name)
	_, err = out.Write(f.Data)
	if err == nil {
		err = out.Chmod(0o444)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// Stale lists the files of files (name → size) that Place would write in
// the working copy at dir: absent, or not a read-only regular file of
// their size there (every file when the directory is not Place's).
func Stale(dir string, files map[string]int64) []string {
	var out []string
	att, err := openAttachments(dir, false)
	if err == nil {
		defer unix.Close(att)
	}
	for name, size := range files {
		var st unix.Stat_t
		if err != nil || unix.Fstatat(att, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil ||
			st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o777 != 0o444 || st.Size != size {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// openAttachments opens the attachments directory of the copy at dir
// without following a link on the way; with create, what is missing is
// made and a link or a file where a directory goes is replaced.
func openAttachments(dir string, create bool) (int, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for _, name := range strings.Split(session.AttachmentsDir, "/") {
		next, err := subdir(fd, name, create)
		_ = unix.Close(fd)
		if err != nil {
			return -1, fmt.Errorf("%s: %w", name, err)
		}
		fd = next
	}
	return fd, nil
}

// subdir opens directory name of parent, never through a link.
func subdir(parent int, name string, create bool) (int, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(parent, name, flags, 0)
	switch {
	case err == nil || !create:
		return fd, err
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
		if err := unix.Unlinkat(parent, name, 0); err != nil {
			return -1, err
		}
		fallthrough
	case errors.Is(err, unix.ENOENT):
		if err := unix.Mkdirat(parent, name, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, err
		}
		return unix.Openat(parent, name, flags, 0)
	}
	return -1, err
}

// same says the file name in directory att holds data: a regular file
// of its size, read through the one descriptor that was checked.
func same(att int, name string, data []byte) bool {
	fd, err := unix.Openat(att, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(data)) || fi.Mode().Perm() != 0o444 {
		return false
	}
	have, err := io.ReadAll(io.LimitReader(f, int64(len(data))+1))
	return err == nil && bytes.Equal(have, data)
}

// removeAt removes whatever is at name in directory att: a file, a link
// (never what it points at), an empty directory.
func removeAt(att int, name string) error {
	err := unix.Unlinkat(att, name, 0)
	if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EPERM) {
		err = unix.Unlinkat(att, name, unix.AT_REMOVEDIR)
	}
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}
