// Package overlay makes a session's working copy without copying its
// repository. The repository's checkout at one commit is made once and
// shared read-only (a Checkout, kept by Checkouts); a session's copy is an
// overlay mount of it whose writes land in an upper directory of the
// session's own, in its volume when it has one, so its disk budget bounds
// what it writes and not what it was given. Making a copy is then a mount,
// whatever the repository's size.
//
// Only root mounts overlays here (Probe): a user's copies are clones.
package overlay

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

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
		return fmt.Errorf("%w: only root mounts them (a user's copies are clones)", ErrUnavailable)
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
	return c.Unmount()
}

// Copy is one session's working copy as an overlay: Lower is the shared
// checkout, Dir where the copy is seen (the merged view), Record the
// session's own directory holding its upper layer, the overlay's work
// directory and the name of its lower one (so the copy can be mounted
// again after a restart or an idle period).
type Copy struct {
	Lower, Record, Dir string
}

// RecordOf is where the record of the copy seen at dir lives: beside it,
// hidden (a name starting with a dot is never a session's).
func RecordOf(dir string) string {
	return filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".overlay")
}

// Load reads the record of the copy at dir; ok is false when the copy
// there is not an overlay (or its volume is not mounted).
func Load(dir string) (c Copy, ok bool) {
	rec := RecordOf(dir)
	lower, err := os.ReadFile(filepath.Join(rec, "lower"))
	if err != nil {
		return Copy{}, false
	}
	return Copy{Lower: string(lower), Record: rec, Dir: dir}, true
}

// Upper is the directory holding what the session wrote.
func (c Copy) Upper() string { return filepath.Join(c.Record, "upper") }

// Mount records the copy and mounts it at c.Dir (made if missing).
func (c Copy) Mount() error {
	for _, p := range []string{c.Lower, c.Record, c.Dir} {
		// The mount's options are a list separated by commas and colons.
		if strings.ContainsAny(p, ",:\\\n") {
			return fmt.Errorf("overlay: the path %q holds a character a mount's options cannot", p)
		}
	}
	work := filepath.Join(c.Record, "work")
	for _, d := range []string{c.Upper(), work, c.Dir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(c.Record, "lower"), []byte(c.Lower), 0o600); err != nil {
		return err
	}
	if Mounted(c.Dir) {
		return nil
	}
	// redirect_dir: a directory of the checkout can be renamed (else
	// EXDEV, which git mv and many programs do not get round).
	opts := "lowerdir=" + c.Lower + ",upperdir=" + c.Upper() + ",workdir=" + work + ",redirect_dir=on"
	if err := unix.Mount("overlay", c.Dir, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount the working copy's overlay at %s: %w", c.Dir, err)
	}
	return nil
}

// Unmount unmounts the copy, when mounted (detached lazily if busy, as a
// process's end must leave no mount): its record stays, so it can be
// mounted again.
func (c Copy) Unmount() error {
	return Unmount(c.Dir)
}

// Unmount unmounts the overlay at dir, when one is mounted there.
func Unmount(dir string) error {
	if !Mounted(dir) {
		return nil
	}
	if err := unix.Unmount(dir, 0); err != nil {
		if !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("unmount the working copy's overlay at %s: %w", dir, err)
		}
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("detach the working copy's overlay at %s: %w", dir, err)
		}
	}
	return nil
}

// Remove unmounts the copy at dir, if it is an overlay, and deletes its
// record and its mount point; what is at dir otherwise stays.
func Remove(dir string) error {
	if err := Unmount(dir); err != nil {
		return err
	}
	rec := RecordOf(dir)
	if _, err := os.Lstat(rec); err != nil {
		return nil
	}
	if err := os.RemoveAll(rec); err != nil {
		return err
	}
	return os.Remove(dir)
}

// Mounted says whether an overlay is mounted at dir.
func Mounted(dir string) bool {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil || st.Type != unix.OVERLAYFS_SUPER_MAGIC {
		return false
	}
	var d, p unix.Stat_t
	if unix.Stat(dir, &d) != nil || unix.Stat(filepath.Dir(dir), &p) != nil {
		return false
	}
	return d.Dev != p.Dev
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
		if !ok || len(f) < 5 || !strings.HasPrefix(post, "overlay ") {
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
	// Deeper mounts first: an overlay in a volume before the volume.
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
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
			var n int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &n); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
