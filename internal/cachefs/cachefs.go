// Package cachefs serves a session's build cache to its commands as a
// filesystem of its own (FUSE, mounted through the setuid fusermount), in
// front of the directory that holds it on the session's volume.
//
// Without root a session's volume is served by fuse2fs, which asks for
// every file's attributes at each stat (it mounts with attr_timeout=0
// whatever it is told) and for each open and close: a warm `go test` of
// one package opens about 1,100 cache files, and on fuse2fs took twice
// as long as on the host's disk. This filesystem is the cache's only
// writer, so the kernel may keep what it learns: attributes and names for
// an hour, file contents across opens, and no request at all for an open
// or a close (FUSE's zero-message opens). Reads and writes reach the
// store on the volume, so the session's disk budget bounds the cache as
// before (a write past it fails with ENOSPC).
//
// It holds directories and regular files only: links (symbolic or hard)
// and special files are refused, so a path it builds in the store never
// leads elsewhere on the host.
package cachefs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// keep is how long the kernel keeps names and attributes: this
// filesystem is the store's only writer while it is mounted.
const keep = time.Hour

// Mount serves the store directory at mnt (both existing directories)
// until Unmount, or until this process ends.
func Mount(store, mnt string) (*fuse.Server, error) {
	var st syscall.Stat_t
	if err := syscall.Lstat(store, &st); err != nil {
		return nil, err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return nil, fmt.Errorf("the cache's store %s is not a directory", store)
	}
	root := &fs.LoopbackRoot{Path: store, Dev: uint64(st.Dev)}
	root.NewNode = func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &node{LoopbackNode: fs.LoopbackNode{RootData: r}}
	}
	top := root.NewNode(root, nil, "", &st)
	root.RootNode = top
	k := keep
	return fs.Mount(mnt, top, &fs.Options{EntryTimeout: &k, AttrTimeout: &k, NegativeTimeout: &k,
		MountOptions: fuse.MountOptions{FsName: "paddock-cache", Name: "paddock-cache", Options: []string{"noatime"},
			DisableXAttrs: true, ExplicitDataCacheControl: true,
			// One request at a time, each with its change to the server's
			// tree of names: a path built from the tree is the store's
			// (concurrent renames could otherwise land a request in another
			// directory, even make a directory its own parent in the tree).
			// Warm, the kernel sends almost nothing.
			SingleThreaded: true}})
}

// node is a file or directory of the cache: the loopback's, with every
// file operation done by path (no handle is ever opened for the kernel).
type node struct {
	fs.LoopbackNode
}

var (
	_ fs.NodeOpener    = (*node)(nil)
	_ fs.NodeReader    = (*node)(nil)
	_ fs.NodeWriter    = (*node)(nil)
	_ fs.NodeFlusher   = (*node)(nil)
	_ fs.NodeFsyncer   = (*node)(nil)
	_ fs.NodeCreater   = (*node)(nil)
	_ fs.NodeSymlinker = (*node)(nil)
	_ fs.NodeLinker    = (*node)(nil)
	_ fs.NodeMknoder   = (*node)(nil)
)

// path is the node's path in the store.
func (n *node) path() string {
	return filepath.Join(n.RootData.Path, n.Path(n.Root()))
}

// Open asks the kernel for zero-message opens: ENOSYS once, and it opens
// and closes without asking again, keeping the file's cached contents.
func (n *node) Open(context.Context, uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, 0, syscall.ENOSYS
}

// Flush has nothing to flush (writes go straight to the store); ENOSYS
// stops the kernel sending one at each close.
func (n *node) Flush(context.Context, fs.FileHandle) syscall.Errno { return syscall.ENOSYS }

// file opens the node's file in the store, never through a link.
func (n *node) file(flags int) (int, syscall.Errno) {
	fd, err := syscall.Open(n.path(), flags|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, fs.ToErrno(err)
	}
	return fd, 0
}

func (n *node) Read(_ context.Context, _ fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	fd, errno := n.file(syscall.O_RDONLY)
	if errno != 0 {
		return nil, errno
	}
	defer syscall.Close(fd)
	k, err := syscall.Pread(fd, dest, off)
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	return fuse.ReadResultData(dest[:k]), 0
}

func (n *node) Write(_ context.Context, _ fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	fd, errno := n.file(syscall.O_WRONLY)
	if errno != 0 {
		return 0, errno
	}
	defer syscall.Close(fd)
	k, err := syscall.Pwrite(fd, data, off)
	if err != nil {
		return 0, fs.ToErrno(err)
	}
	return uint32(k), 0
}

func (n *node) Fsync(context.Context, fs.FileHandle, uint32) syscall.Errno {
	fd, errno := n.file(syscall.O_RDONLY)
	if errno != 0 {
		return errno
	}
	defer syscall.Close(fd)
	return fs.ToErrno(syscall.Fsync(fd))
}

// Create makes the file (honouring O_EXCL and O_TRUNC) and answers as a
// lookup of it would, with no handle: later reads and writes go by path.
func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	keep := int(flags) & (syscall.O_EXCL | syscall.O_TRUNC)
	fd, err := syscall.Open(filepath.Join(n.path(), name), syscall.O_WRONLY|syscall.O_CREAT|syscall.O_NOFOLLOW|syscall.O_CLOEXEC|keep, mode&0o777)
	if err != nil {
		return nil, nil, 0, fs.ToErrno(err)
	}
	_ = syscall.Close(fd)
	child, errno := n.Lookup(ctx, name, out)
	return child, nil, 0, errno
}

// A cache holds directories and regular files: no links, which would
// lead paths in the store elsewhere, and no special files.
func (n *node) Symlink(context.Context, string, string, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

func (n *node) Link(context.Context, fs.InodeEmbedder, string, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

func (n *node) Mknod(context.Context, string, uint32, uint32, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

// Rename moves or replaces (RENAME_NOREPLACE honoured): an exchange
// would let the server's tree and the store disagree under racing
// requests, and a whiteout is a special file.
func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if flags&^unix.RENAME_NOREPLACE != 0 {
		return syscall.EINVAL
	}
	return n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
}

// Tmpfile is refused: an O_TMPFILE file would be a descriptor the
// server holds for the kernel, which this filesystem never hands out.
func (n *node) Tmpfile(context.Context, uint32, uint32, *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EOPNOTSUPP
}

// Statx never follows a link at the node's path (the loopback's honours
// the caller's flags).
func (n *node) Statx(ctx context.Context, f fs.FileHandle, flags uint32, mask uint32, out *fuse.StatxOut) syscall.Errno {
	return n.LoopbackNode.Statx(ctx, nil, flags|unix.AT_SYMLINK_NOFOLLOW, mask, out)
}

// Setattr changes a directory or a regular file only: the loopback's
// chmod and truncate go by path and would follow a link.
func (n *node) Setattr(ctx context.Context, _ fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	var st syscall.Stat_t
	if err := syscall.Lstat(n.path(), &st); err != nil {
		return fs.ToErrno(err)
	}
	if t := st.Mode & syscall.S_IFMT; t != syscall.S_IFDIR && t != syscall.S_IFREG {
		return syscall.EPERM
	}
	return n.LoopbackNode.Setattr(ctx, nil, in, out)
}

// Prepare makes the store of a cache mounted at mnt: a cache directory
// of the layout before this filesystem (a plain directory, which a
// command could have filled with links) is emptied.
func Prepare(store, mnt string) error {
	if _, err := os.Lstat(store); err == nil {
		return nil
	}
	if err := os.RemoveAll(mnt); err != nil {
		return err
	}
	if err := os.Mkdir(mnt, 0o700); err != nil {
		return err
	}
	return os.Mkdir(store, 0o700)
}
