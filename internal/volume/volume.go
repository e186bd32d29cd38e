// Package volume gives each session a filesystem of its own, sized to its
// disk budget: a sparse ext4 image, mounted nosuid and nodev, which holds
// the session's working copy and build caches. The budget is enforced at
// write time (a write past it fails with ENOSPC inside the command), and
// the host's own free space is never the session's to take. As root the
// image is mounted on a loop device by the kernel; as any other user it
// is served by fuse2fs (FUSE, mounted through the setuid fusermount), so
// a developer's own machine bounds disk without root. Probe says what is
// missing.
package volume

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/paddock-dev/paddock/internal/cachefs"
)

// ErrUnavailable says volumes cannot be made here; the message says why.
var ErrUnavailable = errors.New("per-session disk volumes unavailable")

// Volumes are the sessions' volumes under Dir: the image ID.img, mounted
// at ID/.
type Volumes struct {
	Dir string
	// Size is each new volume's size in bytes: the session's disk budget.
	Size int64
	// Files, when positive, bounds the files (inodes) of each new volume:
	// the session's file budget. The host's own work on a copy (git
	// stating and hashing it after each call) grows with its files, so a
	// copy may not hold more than the host can record. A volume has one
	// file per 4 KiB block at most, whichever is fewer.
	Files int64
	// UID owns the volume's root (the sandbox user), when non-zero.
	UID int
	// Lend are the host directories lent to paths of every session's
	// build cache, without root (see cachefs.Mount): the developer's own
	// Go build and npm caches on their machine.
	Lend map[string]string
	// mu serializes making, mounting and removing volumes (two callers
	// must never mount one image twice).
	mu sync.Mutex
	// caches are the build caches this process serves (volume ID →
	// server), on volumes fuse2fs serves (see cachefs).
	caches map[string]*fuse.Server
}

// CacheName is the directory of a volume holding its session's build
// cache; without root its files live in CacheStore instead, served by
// cachefs at cachePath (outside the volume's mount, which the setuid
// fusermount cannot enter: a FUSE mount is its user's alone).
const (
	CacheName  = "cache"
	CacheStore = "cache-store"
)

// cachePath is where session id's build cache appears: its volume's
// CacheName as root, else the cachefs mount point Ensure serves.
func (v *Volumes) cachePath(id string) string {
	if os.Getuid() == 0 {
		return filepath.Join(v.Path(id), CacheName)
	}
	return filepath.Join(v.Dir+"-caches", id)
}

// Cache is session id's build cache when its volume is mounted and the
// cache served: never the bare mount point, on the host's disk.
func (v *Volumes) Cache(id string) (string, bool) {
	dir := v.cachePath(id)
	if !Mounted(v.Path(id)) || (os.Getuid() != 0 && !Mounted(dir)) {
		return "", false
	}
	return dir, true
}

// Probe checks that this machine can make volumes: as root, a loop
// device controller, mkfs.ext4 and mount; as another user, FUSE
// (/dev/fuse open to them, fuse2fs and fusermount).
func Probe() error {
	for _, prog := range []string{"mkfs.ext4", "e2fsck"} {
		if _, err := find(prog); err != nil {
			return fmt.Errorf("%w: %s is not installed (Debian/Ubuntu: sudo apt-get install e2fsprogs)", ErrUnavailable, prog)
		}
	}
	if os.Getuid() != 0 {
		if _, err := find("fuse2fs"); err != nil {
			return fmt.Errorf("%w: fuse2fs is not installed, which serves a session's volume without root (Debian/Ubuntu: sudo apt-get install fuse2fs fuse3)", ErrUnavailable)
		}
		if err := ProbeFUSE(); err != nil {
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return nil
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		return fmt.Errorf("%w: no loop device controller (/dev/loop-control): load the loop module (modprobe loop)", ErrUnavailable)
	}
	for _, prog := range []string{"mount", "umount"} {
		if _, err := find(prog); err != nil {
			return fmt.Errorf("%w: %s is not installed (Debian/Ubuntu: apt-get install mount)", ErrUnavailable, prog)
		}
	}
	return nil
}

// ProbeFUSE checks that this user (not root) can mount FUSE filesystems:
// the setuid fusermount, and /dev/fuse open to them.
func ProbeFUSE() error {
	if _, err := fusermount(); err != nil {
		return errors.New("fusermount is not installed, which mounts FUSE filesystems without root (Debian/Ubuntu: sudo apt-get install fuse3)")
	}
	if err := syscall.Access("/dev/fuse", 6); err != nil {
		return fmt.Errorf("/dev/fuse cannot be opened by this user (%v), which FUSE needs without root: sudo chmod 0666 /dev/fuse "+
			"(what Debian's udev rules do; persist it with a udev rule KERNEL==\"fuse\", MODE=\"0666\")", err)
	}
	return nil
}

// ProbeOverlay checks that this user (not root) can have fuse-overlayfs
// serve a working copy (see ServeOverlay).
func ProbeOverlay() error {
	if _, err := find("fuse-overlayfs"); err != nil {
		return errors.New("fuse-overlayfs is not installed, which makes a session's copy without copying its repository without root (Debian/Ubuntu: sudo apt-get install fuse-overlayfs)")
	}
	return ProbeFUSE()
}

// ServeOverlay has fuse-overlayfs serve at dir the overlay of lower with
// upper and work (paths without commas or colons; see overlay.Copy): the
// same layers and rules as the kernel's overlay, with whiteouts made as
// the kernel's (a 0/0 character device, which any user may make), but no
// directory of lower renamed (EXDEV: it has no redirect_dir). No extended
// attribute is read or written through it (noxattrs): a command could
// otherwise mark a directory opaque (user.overlay.opaque), hiding the
// checkout's .git at the next mount. Names starting with .wh. are its
// whiteouts in any layer: the caller keeps them out (see overlay). It runs
// on as its own daemon once the mount is made, in its own process group (a
// ^C at the terminal stops the server, which then unmounts it); a server
// that dies leaves it serving, and the next one uses it. The layers' paths
// go on its command line, which no sandbox sees (its own PID namespace);
// the kernel's mountinfo names none of them.
func ServeOverlay(lower, upper, work, dir string) error {
	prog, err := find("fuse-overlayfs")
	if err != nil {
		return err
	}
	cmd := exec.Command(prog, "-o", "lowerdir="+lower+",upperdir="+upper+",workdir="+work+",noacl,noxattrs=1", dir)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("fuse-overlayfs: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// fusermount is the setuid helper that mounts FUSE filesystems for users.
func fusermount() (string, error) {
	if p, err := find("fusermount3"); err == nil {
		return p, nil
	}
	return find("fusermount")
}

func (v *Volumes) image(id string) string { return filepath.Join(v.Dir, id+".img") }

// Path is where session id's volume is mounted.
func (v *Volumes) Path(id string) string { return filepath.Join(v.Dir, id) }

// Owns says whether dir lies in a volume of these (or is seen outside it,
// at CopyPath), and whose.
func (v *Volumes) Owns(dir string) (string, bool) {
	for _, under := range []string{v.Dir, v.CopiesDir()} {
		rel, err := filepath.Rel(under, dir)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		id, _, _ := strings.Cut(rel, string(filepath.Separator))
		return id, true
	}
	return "", false
}

// CopiesDir holds, without root, the mount points of the sessions'
// working copies served by FUSE over their volumes (CopyPath).
func (v *Volumes) CopiesDir() string { return v.Dir + "-copies" }

// CopyPath is where session id's working copy is seen when FUSE serves it
// over its volume (an overlay, without root): outside the volume, which
// the setuid fusermount cannot enter, while what the copy holds stays in
// it, within its budget.
func (v *Volumes) CopyPath(id string) string { return filepath.Join(v.CopiesDir(), id) }

// find locates a system program in the system directories, whatever the
// PATH of the process (root's tools live in sbin).
func find(name string) (string, error) {
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
}

func run(ctx context.Context, name string, args ...string) error {
	path, err := find(name)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(out.String()))
	}
	return nil
}

// Mounted says whether a filesystem is mounted at dir.
func Mounted(dir string) bool {
	var d, p syscall.Stat_t
	if syscall.Stat(dir, &d) != nil || syscall.Stat(filepath.Dir(dir), &p) != nil {
		return false
	}
	return d.Dev != p.Dev
}

// Ensure makes session id's volume if it has none, and mounts it if it is
// not mounted (after a reboot, say). It returns the mount point.
func (v *Volumes) Ensure(ctx context.Context, id string) (string, error) {
	if id == "" || strings.ContainsAny(id, "/\x00") || id == "." || id == ".." {
		return "", fmt.Errorf("volume: bad session id %q", id)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	mnt := v.Path(id)
	if Mounted(mnt) {
		return mnt, v.serveCache(id, mnt)
	}
	if stale(mnt) {
		// Its fuse2fs was killed: the dead mount is detached (its image is
		// checked before it is served again).
		if err := v.unmount(ctx, mnt, true); err != nil {
			return "", fmt.Errorf("detach the session's dead volume: %w", err)
		}
	}
	if err := os.MkdirAll(mnt, 0o711); err != nil {
		return "", err
	}
	if err := os.Chmod(v.Dir, 0o711); err != nil {
		return "", err
	}
	img := v.image(id)
	if _, err := os.Stat(img); errors.Is(err, os.ErrNotExist) {
		if err := v.create(ctx, img); err != nil {
			_ = os.Remove(img)
			return "", err
		}
	}
	if err := v.mount(ctx, img, mnt); err != nil {
		return "", fmt.Errorf("mount the session's volume: %w", err)
	}
	if err := os.Chmod(mnt, 0o711); err != nil {
		return "", err
	}
	return mnt, v.serveCache(id, mnt)
}

// serveCache serves the build cache of the volume mounted at mnt through
// cachefs, on a volume fuse2fs serves (a loop-mounted one is as fast as
// the host's disk): once per process, again after the process that
// served it ended (its mount then answers ENOTCONN and is detached).
func (v *Volumes) serveCache(id, mnt string) error {
	if os.Getuid() == 0 {
		return nil
	}
	dir, store := v.cachePath(id), filepath.Join(mnt, CacheStore)
	if v.caches[id] != nil && Mounted(dir) {
		return nil
	}
	if stale(dir) || Mounted(dir) {
		if err := detach(dir); err != nil {
			return fmt.Errorf("detach the session's dead build cache: %w", err)
		}
	}
	if err := cachefs.Prepare(store, filepath.Join(mnt, CacheName)); err != nil {
		return fmt.Errorf("the session's build cache: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o711); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	srv, err := cachefs.Mount(store, dir, v.Lend)
	if err != nil {
		return fmt.Errorf("serve the session's build cache: %w", err)
	}
	if v.caches == nil {
		v.caches = map[string]*fuse.Server{}
	}
	v.caches[id] = srv
	return nil
}

// stopCache unmounts the build cache of volume id before the volume
// itself (lazily when lazy is set and it is busy).
func (v *Volumes) stopCache(id string, lazy bool) error {
	dir := v.cachePath(id)
	if srv := v.caches[id]; srv != nil && srv.Unmount() == nil {
		delete(v.caches, id)
		return nil
	}
	if !Mounted(dir) && !stale(dir) {
		delete(v.caches, id)
		return nil
	}
	if !lazy {
		// Still mounted and served: kept, so a later Ensure uses it.
		return fmt.Errorf("the session's build cache at %s is busy", dir)
	}
	delete(v.caches, id)
	// The volume's own lazy detach takes this mount along where this one
	// fails (under a volume whose fuse2fs died, say).
	_ = detach(dir)
	return nil
}

// detach unmounts a FUSE mount lazily.
func detach(dir string) error {
	fm, err := fusermount()
	if err != nil {
		return err
	}
	return run(context.Background(), filepath.Base(fm), "-u", "-z", dir)
}

// UnmountFUSE unmounts this user's FUSE mount at dir through the setuid
// fusermount; when it is busy, it is detached lazily (gone once no one
// uses it) if lazy is set, else left mounted with an error.
func UnmountFUSE(ctx context.Context, dir string, lazy bool) error {
	fm, err := fusermount()
	if err != nil {
		return err
	}
	if err := run(ctx, filepath.Base(fm), "-u", dir); err != nil {
		if !lazy {
			return err
		}
		return detach(dir)
	}
	return nil
}

// mount mounts the image img at mnt: on a loop device as root, else
// served by fuse2fs, which is checked (and repaired, after a crash) first.
func (v *Volumes) mount(ctx context.Context, img, mnt string) error {
	if os.Getuid() == 0 {
		return run(ctx, "mount", "-t", "ext4", "-o", "loop,nosuid,nodev,noatime", img, mnt)
	}
	waitServer(img)
	// Preen: nothing to do on an image unmounted cleanly; the repairs
	// fsck makes without asking after a crash.
	if err := fsck(ctx, img); err != nil {
		return err
	}
	prog, err := find("fuse2fs")
	if err != nil {
		return err
	}
	// fakeroot: fuse2fs checks no permission of its own (it refuses a file
	// created read-only to the open that creates it, as git makes its
	// packs); the mount is this user's alone (no allow_other), nosuid and
	// nodev, and the kernel keeps read-only binds read-only.
	cmd := exec.Command(prog, "-f", "-o", "fakeroot,kernel_cache,attr_timeout=3600,entry_timeout=3600,negative_timeout=3600", img, mnt)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// Its own process group: a ^C at the terminal stops the server, which
	// then unmounts; fuse2fs must not die first with writes unflushed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	if err := os.WriteFile(img+".pid", []byte(strconv.Itoa(cmd.Process.Pid)), 0o600); err != nil {
		_ = cmd.Process.Kill()
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// fuse2fs reports success even when the mount failed: the mount is
	// what is checked.
	deadline := time.Now().Add(30 * time.Second)
	for !Mounted(mnt) {
		select {
		case err := <-exited:
			return fmt.Errorf("fuse2fs: %v: %s", err, strings.TrimSpace(out.String()))
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			return fmt.Errorf("fuse2fs did not mount %s within 30 s: %s", img, strings.TrimSpace(out.String()))
		}
	}
	return nil
}

// fsck checks an image before fuse2fs serves it: nothing to do on one
// unmounted cleanly; after a crash, the repairs e2fsck makes without
// asking, then (when those do not suffice) every repair it can.
func fsck(ctx context.Context, img string) error {
	err := run(ctx, "e2fsck", "-p", img)
	if err == nil || fixed(err) {
		return nil
	}
	if err := run(ctx, "e2fsck", "-f", "-y", img); err != nil && !fixed(err) {
		return fmt.Errorf("the session's volume is damaged beyond repair (%w): its copy is made again from the recorded steps once the image is removed (rm %s)", err, img)
	}
	return nil
}

// fixed says e2fsck exited saying it corrected errors (1 or 2).
func fixed(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && (ee.ExitCode() == 1 || ee.ExitCode() == 2)
}

// stale says dir is a FUSE mount whose server is gone.
func stale(dir string) bool {
	var st syscall.Stat_t
	return errors.Is(syscall.Stat(dir, &st), syscall.ENOTCONN)
}

// waitServer waits (up to a minute) for the fuse2fs that served img, if
// any, to end: it writes the image's last blocks after the unmount
// returns, and a new mount before then would find it inconsistent.
func waitServer(img string) {
	data, err := os.ReadFile(img + ".pid")
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 {
		return
	}
	for range 12000 {
		if !servingImage(pid, img) {
			_ = os.Remove(img + ".pid")
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// servingImage says whether process pid is a fuse2fs on img.
func servingImage(pid int, img string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	return bytes.Contains(cmdline, []byte("fuse2fs")) && bytes.Contains(cmdline, []byte(img))
}

// unmount unmounts mnt (lazily when busy and lazy is set) and, for a
// FUSE volume, waits for its server to have written everything.
func (v *Volumes) unmount(ctx context.Context, mnt string, lazy bool) error {
	if os.Getuid() == 0 {
		if err := run(ctx, "umount", mnt); err != nil {
			if !lazy {
				return err
			}
			return run(ctx, "umount", "-l", mnt)
		}
		return nil
	}
	if err := v.stopCache(filepath.Base(mnt), lazy); err != nil {
		return err
	}
	if err := UnmountFUSE(ctx, mnt, lazy); err != nil {
		return err
	}
	waitServer(v.image(filepath.Base(mnt)))
	return nil
}

// create makes a sparse image of the budget's size with an ext4
// filesystem (no space reserved for root: the budget is all the
// session's).
func (v *Volumes) create(ctx context.Context, img string) error {
	f, err := os.OpenFile(img, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if err := f.Truncate(v.Size); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	owner := ""
	switch {
	case v.UID != 0:
		owner = ",root_owner=" + strconv.Itoa(v.UID) + ":" + strconv.Itoa(v.UID)
	case os.Getuid() != 0:
		owner = ",root_owner=" + strconv.Itoa(os.Getuid()) + ":" + strconv.Itoa(os.Getgid())
	}
	args := []string{"-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard" + owner}
	if os.Getuid() != 0 {
		args = append(args, "-O", "^has_journal") // fuse2fs does not write a journal
	}
	if v.Files > 0 && v.Files < v.Size/minBytesPerFile {
		args = append(args, "-N", strconv.FormatInt(v.Files, 10))
	}
	return run(ctx, "mkfs.ext4", append(args, img)...)
}

// minBytesPerFile is the least space a file may stand for: a volume holds
// at most one file per block (mkfs rounds -N up to whole block groups, by
// a few hundred files).
const minBytesPerFile = 4096

// Remove unmounts session id's volume and deletes it with everything in
// it. A volume still in use is detached lazily (it goes when the last
// user does).
func (v *Volumes) Remove(ctx context.Context, id string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	mnt := v.Path(id)
	if Mounted(mnt) || stale(mnt) {
		if err := v.unmount(ctx, mnt, true); err != nil {
			return err
		}
	}
	_ = os.Remove(v.image(id) + ".pid")
	if os.Getuid() != 0 {
		_ = v.stopCache(id, true) // its volume unmounted by hand, say
		if err := os.Remove(v.cachePath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if err := os.Remove(mnt); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.Remove(v.image(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Usage is how much of a filesystem is used, and its size, in bytes;
// and how many files it holds, of how many it can.
type Usage struct {
	Used, Size int64
	Files, Max int64
}

// UsageOf reads the usage of the filesystem holding path.
func UsageOf(path string) (Usage, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return Usage{}, err
	}
	size := int64(st.Blocks) * st.Bsize
	return Usage{Used: size - int64(st.Bfree)*st.Bsize, Size: size, Files: int64(st.Files - st.Ffree), Max: int64(st.Files)}, nil
}

// Exhausted says what of the volume holding path is used up: "space"
// (under 1 MiB free), "files" (under 16 files left), or "" (room left,
// or no volume to ask). The tool result then says so.
func Exhausted(path string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return ""
	}
	switch {
	case int64(st.Bavail)*st.Bsize < 1<<20:
		return "space"
	case st.Files > 0 && st.Ffree < 16:
		return "files"
	}
	return ""
}

// UnmountAll unmounts every mounted volume, keeping the images: a process
// that ends leaves no mount behind, and Ensure mounts a volume again when
// its session next needs it.
func (v *Volumes) UnmountAll(ctx context.Context) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	entries, err := os.ReadDir(v.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if mnt := v.Path(e.Name()); e.IsDir() && Mounted(mnt) {
			errs = append(errs, v.unmount(ctx, mnt, true))
		}
	}
	for id := range v.caches {
		errs = append(errs, v.stopCache(id, true))
	}
	return errors.Join(errs...)
}

// Unmount unmounts session id's volume when it is mounted, so an idle
// session holds no mount; Ensure mounts it again at its next use.
func (v *Volumes) Unmount(ctx context.Context, id string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if mnt := v.Path(id); Mounted(mnt) {
		return v.unmount(ctx, mnt, false)
	}
	return nil
}

// Usage is what session id's volume uses of its budget: the mounted
// filesystem's figures, or, unmounted (idle), the blocks its image holds
// on the host, read without mounting it.
func (v *Volumes) Usage(id string) (Usage, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if mnt := v.Path(id); Mounted(mnt) {
		return UsageOf(mnt)
	}
	fi, err := os.Stat(v.image(id))
	if err != nil {
		return Usage{}, err
	}
	used := fi.Size()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		used = st.Blocks * 512
	}
	return Usage{Used: used, Size: v.Size}, nil
}

// Has says whether session id has a volume (an image), mounted or not.
func (v *Volumes) Has(id string) bool {
	_, err := os.Stat(v.image(id))
	return err == nil
}

// IDs lists the sessions that have a volume (an image), mounted or not.
func (v *Volumes) IDs() ([]string, error) {
	entries, err := os.ReadDir(v.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	var ids []string
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), ".img"); ok && !e.IsDir() {
			ids = append(ids, id)
		}
	}
	return ids, err
}
