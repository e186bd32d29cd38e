// Package overlay makes a session's working copy without copying its
// repository. The repository's checkout at one commit is made once and
// shared read-only (a Checkout, kept by Checkouts); a session's copy is an
// overlay mount of it whose writes land in an upper directory of the
// session's own, in its volume when it has one, so its disk budget bounds
// what it writes and not what it was given. Making a copy is then a mount,
// whatever the repository's size.
//
// Root mounts the kernel's overlay; any other user (a developer's
// workstation) has fuse-overlayfs serve the same layers through FUSE,
// mounted by the setuid fusermount, in the host's own mount namespace, so
// the host's git reads the copy as the sandbox sees it. Probe says which,
// or what is missing.
package overlay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/paddock-dev/paddock/internal/volume"
	"golang.org/x/sys/unix"
)

// ErrUnavailable says this process cannot mount overlays.
var ErrUnavailable = errors.New("overlay mounts are unavailable")

// Probe checks, once, that this process can mount an overlay in dir (a
// directory of its own, on the disk checkouts live on).
func Probe(dir string) error {
	probeOnce.Do(func() { probeErr = probe(dir) })
	return probeErr
}

var (
	probeOnce sync.Once
	probeErr  error
)

func probe(dir string) error {
	if os.Getuid() != 0 {
		if err := volume.ProbeOverlay(); err != nil {
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(dir, ".probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	c := Copy{Lower: filepath.Join(tmp, "lower"), Record: filepath.Join(tmp, "record"), Dir: filepath.Join(tmp, "merged")}
	if err := os.MkdirAll(c.Lower, 0o700); err != nil {
		return err
	}
	if err := c.Mount(); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return Unmount(c.Dir, true)
}

// Copy is one session's working copy as an overlay: Lower is the shared
// checkout, Dir where the copy is seen (the merged view), Record the
// session's own directory holding its upper layer, the overlay's work
// directory and the name of its lower one (so the copy can be mounted
// again after a restart or an idle period).
type Copy struct {
	Lower, Record, Dir string
}

// RecordOf is where the record of the copy seen at dir lives by default:
// beside it, hidden (a name starting with a dot is never a session's).
func RecordOf(dir string) string {
	return filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".overlay")
}

// Load reads the record rec of the copy at dir; ok is false when the copy
// there is not an overlay (or its volume is not mounted).
func Load(dir, rec string) (c Copy, ok bool) {
	lower, err := os.ReadFile(filepath.Join(rec, "lower"))
	if err != nil {
		return Copy{}, false
	}
	return Copy{Lower: string(lower), Record: rec, Dir: dir}, true
}

// Upper is the directory holding what the session wrote.
func (c Copy) Upper() string { return filepath.Join(c.Record, "upper") }

// Mount records the copy (its upper and work directories, the name of
// its lower one, written whole or not at all) and mounts it at c.Dir.
func (c Copy) Mount() error {
	if err := c.check(); err != nil {
		return err
	}
	for _, d := range []string{c.Upper(), c.work(), c.Dir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	tmp := filepath.Join(c.Record, "lower.new")
	if err := os.WriteFile(tmp, []byte(c.Lower), 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(c.Record, "lower")); err != nil {
		return err
	}
	return c.mount()
}

// Remount mounts a recorded copy again (after an idle period, a restart).
// It makes nothing: a record whose directories are gone is an error, never
// an empty copy on whatever disk is there now.
func (c Copy) Remount() error {
	if err := c.check(); err != nil {
		return err
	}
	parts := []string{c.Lower, c.Upper(), c.work()}
	if !Mounted(c.Dir) { // a dead FUSE mount there is mounted again by mount
		parts = append(parts, c.Dir)
	}
	for _, d := range parts {
		if fi, err := os.Lstat(d); err != nil || !fi.IsDir() {
			return fmt.Errorf("%w: %s is missing", ErrLost, d)
		}
	}
	return c.mount()
}

// ErrLost says a recorded copy cannot be mounted again: a part of it is
// gone.
var ErrLost = errors.New("the working copy's overlay cannot be mounted again")

func (c Copy) work() string { return filepath.Join(c.Record, "work") }

// check refuses paths that would split the mount's options, a list
// separated by commas and colons.
func (c Copy) check() error {
	for _, p := range []string{c.Lower, c.Record, c.Dir} {
		if strings.ContainsAny(p, ",:\\\n") {
			return fmt.Errorf("overlay: the path %q holds a character a mount's options cannot", p)
		}
	}
	return nil
}

func (c Copy) mount() error {
	if Mounted(c.Dir) {
		var st unix.Statfs_t
		if unix.Statfs(c.Dir, &st) == nil {
			return nil
		}
		// Its fuse-overlayfs was killed, or serves layers on a volume
		// whose own server died: detached, then mounted again.
		if err := Unmount(c.Dir, true); err != nil {
			return err
		}
	}
	if os.Getuid() != 0 {
		return c.serve()
	}
	// redirect_dir: a directory of the checkout can be renamed (else
	// EXDEV, which git mv and many programs do not get round). index, xino
	// and metacopy off whatever the kernel's defaults: the checkout's inode
	// numbers stay those its settled index recorded, and a remount is not
	// checked against a former one.
	//
	// The layers are named by descriptors (/proc/self/fd/N), which the
	// kernel shows as given: a sandbox reading its mountinfo learns no
	// host path, not which checkout its copy shares.
	var layers [3]string
	for i, dir := range []string{c.Lower, c.Upper(), c.work()} {
		fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			return fmt.Errorf("open the working copy's layer %s: %w", dir, err)
		}
		defer unix.Close(fd)
		layers[i] = "/proc/self/fd/" + strconv.Itoa(fd)
	}
	opts := "lowerdir=" + layers[0] + ",upperdir=" + layers[1] + ",workdir=" + layers[2] + ",redirect_dir=on,index=off,xino=off,metacopy=off"
	if err := unix.Mount("overlay", c.Dir, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount the working copy's overlay at %s: %w", c.Dir, err)
	}
	return nil
}

// serve has fuse-overlayfs serve the copy, without root (see
// volume.ServeOverlay).
func (c Copy) serve() error {
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return err
	}
	if err := Scrub(c.Upper()); err != nil {
		return fmt.Errorf("clean the working copy's upper layer: %w", err)
	}
	if err := volume.ServeOverlay(c.Lower, c.Upper(), c.work(), c.Dir); err != nil {
		return fmt.Errorf("mount the working copy's overlay at %s: %w", c.Dir, err)
	}
	return nil
}

// Whiteout prefixes the names fuse-overlayfs takes, in any layer, for
// whiteouts: .wh.NAME hides NAME, .wh..wh..opq every name of the
// checkout in its directory. It refuses to create a file so named, but not
// a directory, a link or a rename.
const Whiteout = ".wh."

// opaque marks a directory fuse-overlayfs made opaque itself (beside a
// .wh..wh..opq file); no command can write it.
const opaque = "user.fuseoverlayfs.opaque"

// Scrub removes from the upper layer upper, not mounted, whatever a
// command planted there that fuse-overlayfs would read as a whiteout at
// its next mount (a directory, link or renamed file named .wh.*, an
// opaque marker of its own, user.overlay.opaque), hiding the checkout's
// files, .git first among them, from the copy. What fuse-overlayfs made
// itself stays: its whiteouts are character devices, and a .wh..wh..opq
// file stays only in a directory carrying its own opaque marker. Nothing
// runs in the copy meanwhile: its sandbox sees only the mounted copy.
func Scrub(upper string) error {
	return filepath.WalkDir(upper, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			// Not settable through the copy (noxattrs), but read at a mount.
			if err := unix.Lremovexattr(path, "user.overlay.opaque"); err != nil && !errors.Is(err, unix.ENODATA) && !errors.Is(err, unix.ENOTSUP) {
				return err
			}
		}
		if path == upper || !strings.HasPrefix(d.Name(), Whiteout) {
			return nil
		}
		if d.Name() == Whiteout+Whiteout+".opq" && d.Type().IsRegular() {
			if _, err := unix.Lgetxattr(filepath.Dir(path), opaque, nil); err == nil {
				return nil
			}
		}
		if err := os.RemoveAll(path); err != nil {
			return err
		}
		if d.IsDir() {
			return filepath.SkipDir
		}
		return nil
	})
}

// Unmount unmounts the copy, when mounted; its record stays, so it can be
// mounted again. A busy copy is an error and stays mounted.
func (c Copy) Unmount() error {
	return Unmount(c.Dir, false)
}

// Unmount unmounts the overlay at dir, when one is mounted there; when it
// is busy, it is detached lazily if detach is set (a process's end, a
// copy's removal), else left mounted with an error.
func Unmount(dir string, detach bool) error {
	if !Mounted(dir) {
		return nil
	}
	if os.Getuid() != 0 {
		if err := volume.UnmountFUSE(context.Background(), dir, detach); err != nil {
			return fmt.Errorf("unmount the working copy's overlay at %s: %w", dir, err)
		}
		return nil
	}
	err := unix.Unmount(dir, 0)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.EBUSY) || !detach {
		return fmt.Errorf("unmount the working copy's overlay at %s: %w", dir, err)
	}
	if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the working copy's overlay at %s: %w", dir, err)
	}
	return nil
}

// Remove unmounts the copy at dir, if it is an overlay, and deletes its
// record rec and its mount point; what is at dir otherwise stays.
func Remove(dir, rec string) error {
	if err := Unmount(dir, true); err != nil {
		return err
	}
	if _, err := os.Lstat(rec); err != nil {
		return nil
	}
	if err := os.RemoveAll(rec); err != nil {
		return err
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Mounted says whether an overlay is mounted at dir: the kernel's (as
// root), or one fuse-overlayfs serves, alive or not (as listed by the
// kernel's mountinfo: a dead one answers no statfs).
func Mounted(dir string) bool {
	if os.Getuid() != 0 {
		// As the kernel names it (a dead mount cannot be resolved itself).
		real := filepath.Clean(dir)
		if parent, err := filepath.EvalSymlinks(filepath.Dir(real)); err == nil {
			real = filepath.Join(parent, filepath.Base(real))
		}
		mounts, err := MountsUnder(real)
		return err == nil && slices.Contains(mounts, real)
	}
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == unix.OVERLAYFS_SUPER_MAGIC && volume.Mounted(dir)
}

// MountsUnder lists the overlays mounted at or under any of dirs, deepest
// first (from /proc/self/mountinfo).
func MountsUnder(dirs ...string) ([]string, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		// "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER"
		pre, post, ok := strings.Cut(line, " - ")
		f := strings.Fields(pre)
		if !ok || len(f) < 5 || !(strings.HasPrefix(post, "overlay ") || strings.HasPrefix(post, "fuse.fuse-overlayfs ")) {
			continue
		}
		mnt := unescape(f[4])
		for _, d := range dirs {
			if d != "" && strings.HasPrefix(mnt+"/", filepath.Clean(d)+"/") {
				out = append(out, mnt)
				break
			}
		}
	}
	slices.Reverse(out) // deeper mounts first: an overlay in a volume before the volume
	return out, nil
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
