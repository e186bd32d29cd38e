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
//
// A directory of the cache may be lent a directory of the host (the
// developer's own Go build and npm caches, on their machine): a name the
// store lacks is looked up there, by that exact name, and read from
// there, never listed (a listing shows the store's names only) and never
// written: a lent file or directory is copied into the store at its first
// change; one cannot be removed or renamed (EROFS), nor its times set
// alone (Go's cache marks entries it uses that way, and ignores the
// error). A Go build cache names its entries by hashes of their inputs,
// so a command finds in the lent cache only what it could build itself,
// without the build.
package cachefs

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
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
// until Unmount, or until this process ends. lend maps top-level names
// of the cache (or paths below it: npm/_cacache) to the host directories
// lent to them (absolute paths of directories; see the package's
// comment). One must not hold another.
func Mount(store, mnt string, lend map[string]string) (*fuse.Server, error) {
	var st syscall.Stat_t
	if err := syscall.Lstat(store, &st); err != nil {
		return nil, err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return nil, fmt.Errorf("the cache's store %s is not a directory", store)
	}
	for name, dir := range lend {
		if !filepath.IsLocal(name) || filepath.Clean(name) != name || strings.ContainsRune(name, 0) || !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
			return nil, fmt.Errorf("cache: cannot lend %q to %q: want a clean absolute path lent to a clean relative path of the cache", dir, name)
		}
	}
	root := &fs.LoopbackRoot{Path: store, Dev: uint64(st.Dev)}
	root.NewNode = func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &node{LoopbackNode: fs.LoopbackNode{RootData: r}, lend: lend}
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
	// lend maps top-level names to the host directories lent to them.
	lend map[string]string
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
	_ fs.NodeLookuper  = (*node)(nil)
	_ fs.NodeGetattrer = (*node)(nil)
	_ fs.NodeReaddirer = (*node)(nil)
	_ fs.NodeMkdirer   = (*node)(nil)
	_ fs.NodeUnlinker  = (*node)(nil)
	_ fs.NodeRmdirer   = (*node)(nil)

	_ fs.NodeOpendirHandler = (*node)(nil)
)

// path is the node's path in the store.
func (n *node) path() string {
	return filepath.Join(n.RootData.Path, n.Path(n.Root()))
}

// lentOf is the lent directory holding rel, a path of the cache, and
// rel's path below it ("." for the directory itself); ok is false where
// none is lent.
func (n *node) lentOf(rel string) (dir, below string, ok bool) {
	for name, dir := range n.lend {
		if rest, found := strings.CutPrefix(rel, name); found && (rest == "" || rest[0] == '/') {
			if rest = strings.TrimPrefix(rest, "/"); rest == "" {
				rest = "."
			}
			return dir, rest, true
		}
	}
	return "", "", false
}

// openLent opens rel in its lent directory, never through a link (nor a
// mount point) anywhere below that directory, never blocking on a
// special file: the developer's own tools write there while a session
// runs.
func (n *node) openLent(rel string, flags int) (int, error) {
	root, below, ok := n.lentOf(rel)
	if !ok {
		return -1, syscall.ENOENT
	}
	dir, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(dir)
	if flags&unix.O_PATH == 0 {
		flags |= unix.O_NONBLOCK // openat2 refuses it beside O_PATH
	}
	return unix.Openat2(dir, below, &unix.OpenHow{Flags: uint64(flags | unix.O_NOFOLLOW | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV})
}

// pathLent is an O_PATH descriptor of rel in its lent directory, with
// its attributes: a directory or a regular file, else ENOENT.
func (n *node) pathLent(rel string) (int, syscall.Stat_t, error) {
	var st syscall.Stat_t
	fd, err := n.openLent(rel, unix.O_PATH)
	if err != nil {
		return -1, st, syscall.ENOENT
	}
	if err := syscall.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, st, err
	}
	if t := st.Mode & syscall.S_IFMT; t != syscall.S_IFDIR && t != syscall.S_IFREG {
		unix.Close(fd)
		return -1, st, syscall.ENOENT
	}
	return fd, st, nil
}

// statLent is rel's attributes in its lent directory (see pathLent).
func (n *node) statLent(rel string) (syscall.Stat_t, error) {
	fd, st, err := n.pathLent(rel)
	if err == nil {
		unix.Close(fd)
	}
	return st, err
}

// rel is the node's path in the cache.
func (n *node) rel() string { return n.Path(n.Root()) }

// lendable says whether a lent directory could hold the node: what the
// store lacks is read from there.
func (n *node) lendable() bool {
	_, _, ok := n.lentOf(n.rel())
	return ok
}

// lent says whether the node is a lent directory's, not (yet) the
// store's: the store lacks its path.
func (n *node) lent() bool {
	var st syscall.Stat_t
	return n.lendable() && syscall.Lstat(n.path(), &st) == syscall.ENOENT
}

// lentHas says whether a lent directory holds the child name of n (a
// directory or a regular file, never through a link).
func (n *node) lentHas(name string) (syscall.Stat_t, bool) {
	st, err := n.statLent(filepath.Join(n.rel(), name))
	return st, err == nil
}

// Lookup finds name in the store, else in a lent directory.
func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ch, errno := n.LoopbackNode.Lookup(ctx, name, out)
	if errno != syscall.ENOENT || len(n.lend) == 0 {
		return ch, errno
	}
	st, ok := n.lentHas(name)
	if !ok {
		return nil, syscall.ENOENT
	}
	out.Attr.FromStat(&st)
	// Inode numbers as the loopback makes them: the device's mixed in,
	// so a lent file's never equals a stored one's.
	swap := func(d uint64) uint64 { return d<<32 | d>>32 }
	child := &node{LoopbackNode: fs.LoopbackNode{RootData: n.RootData}, lend: n.lend}
	return n.NewInode(ctx, child, fs.StableAttr{Mode: st.Mode, Gen: 1, Ino: swap(uint64(st.Dev)) ^ swap(n.RootData.Dev) ^ st.Ino}), 0
}

// own copies a lent node into the store before its first change (the
// directories above it made as needed), contents and all (a truncation
// that then fails leaves the file as it was).
func (n *node) own() syscall.Errno {
	if !n.lent() {
		return 0
	}
	dst := n.path()
	st, err := n.statLent(n.rel())
	if err != nil {
		return fs.ToErrno(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fs.ToErrno(err)
	}
	if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		if err := syscall.Mkdir(dst, st.Mode&0o777|0o700); err != nil && err != syscall.EEXIST {
			return fs.ToErrno(err)
		}
		return 0
	}
	fd, err := n.openLent(n.rel(), unix.O_RDONLY)
	if err != nil {
		return fs.ToErrno(err)
	}
	in := os.NewFile(uintptr(fd), "lent")
	defer in.Close()
	return fs.ToErrno(copyFile(in, dst))
}

// copyFile copies the regular file in to dst, a new file of its mode.
func copyFile(in *os.File, dst string) error {
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return syscall.EPERM
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, fi.Mode().Perm())
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(dst)
	}
	return err
}

// readOnlyLent turns the store's ENOENT for name into EROFS where a lent
// directory holds it: what is lent is never removed nor renamed.
func (n *node) readOnlyLent(name string, errno syscall.Errno) syscall.Errno {
	if errno == syscall.ENOENT {
		if _, ok := n.lentHas(name); ok {
			return syscall.EROFS
		}
	}
	return errno
}

func (n *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	errno := n.LoopbackNode.Getattr(ctx, f, out)
	if errno != syscall.ENOENT || !n.lendable() {
		return errno
	}
	st, err := n.statLent(n.rel())
	if err != nil {
		return fs.ToErrno(err)
	}
	out.FromStat(&st)
	return 0
}

// A lent directory lists nothing: its names are found by lookup alone.
func (n *node) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	if n.lent() {
		return fs.NewListDirStream(nil), 0
	}
	return n.LoopbackNode.Readdir(ctx)
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if n.lent() {
		return fs.NewListDirStream(nil), 0, 0
	}
	return n.LoopbackNode.OpendirHandle(ctx, flags)
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if errno := n.own(); errno != 0 {
		return nil, errno
	}
	return n.LoopbackNode.Mkdir(ctx, name, mode, out)
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	return n.readOnlyLent(name, n.LoopbackNode.Unlink(ctx, name))
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	return n.readOnlyLent(name, n.LoopbackNode.Rmdir(ctx, name))
}

// Open asks the kernel for zero-message opens: ENOSYS once, and it opens
// and closes without asking again, keeping the file's cached contents.
func (n *node) Open(context.Context, uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, 0, syscall.ENOSYS
}

// Flush has nothing to flush (writes go straight to the store); ENOSYS
// stops the kernel sending one at each close.
func (n *node) Flush(context.Context, fs.FileHandle) syscall.Errno { return syscall.ENOSYS }

// file opens the node's file in the store, never through a link, else
// (to read) in its lent directory.
func (n *node) file(flags int) (int, syscall.Errno) {
	fd, err := syscall.Open(n.path(), flags|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err == syscall.ENOENT && flags == syscall.O_RDONLY && n.lendable() {
		fd, err = n.openLent(n.rel(), flags)
	}
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
	if errno := n.own(); errno != 0 {
		return 0, errno
	}
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
	if n.lent() {
		return 0 // nothing of the store's to sync
	}
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
	if errno := n.own(); errno != 0 {
		return nil, nil, 0, errno
	}
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
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(n.path(), name), &st); err != nil {
		return n.readOnlyLent(name, fs.ToErrno(err))
	}
	to, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	if errno := to.own(); errno != 0 {
		return errno
	}
	// By path, as every operation here: the loopback's checks a
	// directory's inode against the node's, which a copied one fails.
	return fs.ToErrno(unix.Renameat2(unix.AT_FDCWD, filepath.Join(n.path(), name), unix.AT_FDCWD, filepath.Join(to.path(), newName), uint(flags)))
}

// Tmpfile is refused: an O_TMPFILE file would be a descriptor the
// server holds for the kernel, which this filesystem never hands out.
func (n *node) Tmpfile(context.Context, uint32, uint32, *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EOPNOTSUPP
}

// Statx never follows a link at the node's path (the loopback's honours
// the caller's flags).
func (n *node) Statx(_ context.Context, _ fs.FileHandle, flags uint32, mask uint32, out *fuse.StatxOut) syscall.Errno {
	var st unix.Statx_t
	err := unix.Statx(unix.AT_FDCWD, n.path(), int(flags|unix.AT_SYMLINK_NOFOLLOW), int(mask), &st)
	if err == syscall.ENOENT && n.lendable() {
		var fd int
		if fd, _, err = n.pathLent(n.rel()); err == nil {
			err = unix.Statx(fd, "", int(flags|unix.AT_EMPTY_PATH), int(mask), &st)
			unix.Close(fd)
		}
	}
	if err != nil {
		return fs.ToErrno(err)
	}
	out.FromStatx(&st)
	return 0
}

// Setattr changes a directory or a regular file only: the loopback's
// chmod and truncate go by path and would follow a link. A lent node is
// copied into the store first, unless only its times would change.
func (n *node) Setattr(ctx context.Context, _ fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if n.lent() {
		_, mode := in.GetMode()
		_, uid := in.GetUID()
		_, gid := in.GetGID()
		_, sized := in.GetSize()
		if !mode && !uid && !gid && !sized {
			return syscall.EROFS
		}
		if errno := n.own(); errno != 0 {
			return errno
		}
	}
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
