// Package datadir is what Paddock keeps in a data directory by name
// and what a process learns of its holder: the lock one server process
// holds (recording its address, process and whether a client command
// started it in the background) and the files clients read.
package datadir

import (
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
)

// AdminToken is the file where the first administrator's token is
// written on the first start (mode 0600).
const AdminToken = "admin.token"

// InUseError says another process holds the data directory; URL is the
// address of the server it runs, when it recorded one.
type InUseError struct {
	Dir, URL string
	// PID is the holding server's process, when it recorded one.
	PID int
	// Background says a client command started it for itself.
	Background bool
	// Build is the holding program's build (see Build), when it
	// recorded one.
	Build string
}

func (e *InUseError) Error() string {
	if e.URL == "" {
		return fmt.Sprintf("data directory %s is in use by another paddock process (one not serving the API); "+
			"wait for it to finish, or use another --data-dir", e.Dir)
	}
	return fmt.Sprintf("data directory %s is in use by the paddock server at %s; "+
		"talk to it with --server %s (or PADDOCK_SERVER), or use another --data-dir", e.Dir, e.URL, e.URL)
}

// Holder is the server holding data directory dir, if one does: its
// URL and process. It takes nothing: a lock it happens to get is let go.
func Holder(dir string) (*InUseError, bool) {
	l, err := Lock(dir)
	var inUse *InUseError
	if errors.As(err, &inUse) {
		return inUse, true
	}
	if err == nil {
		_ = l.Unlock()
	}
	return nil, false
}

// Held is the data directory's lock, held by this process.
type Held struct{ f *os.File }

// Lock takes an exclusive lock on the data directory: two processes
// must never run embedded servers on the same databases. Another
// holder is an *InUseError with what it recorded.
func Lock(dir string) (*Held, error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		data, _ := io.ReadAll(io.LimitReader(f, 512))
		_ = f.Close()
		lines := append(strings.Split(strings.TrimSpace(string(data)), "\n"), "", "", "")
		n, _ := strconv.Atoi(strings.TrimSpace(lines[1]))
		lines = append(lines, "")
		return nil, &InUseError{Dir: dir, URL: strings.TrimSpace(lines[0]), PID: n, Background: strings.TrimSpace(lines[2]) == "background",
			Build: strings.TrimSpace(lines[3])}
	}
	_ = f.Truncate(0)
	return &Held{f: f}, nil
}

// Record writes the server's address, process and build in the lock
// file, so clients find it; background marks a server a client command
// started.
func (h *Held) Record(url string, background bool) {
	kind := "serve"
	if background {
		kind = "background"
	}
	rec := url + "\n" + strconv.Itoa(os.Getpid()) + "\n" + kind + "\n" + Build() + "\n"
	_ = h.f.Truncate(0)
	_, _ = h.f.WriteAt([]byte(rec), 0)
}

// Unlock lets the data directory go, its record emptied.
func (h *Held) Unlock() error {
	_ = h.f.Truncate(0)
	return h.f.Close()
}

// Build names this program's build: its module version when it was
// installed at one, else the commit it was built from ("+dirty" with
// uncommitted changes); "" when the build recorded neither.
func Build() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	return buildName(bi)
}

// BuildOf is Build of the program at path, read from the file.
func BuildOf(path string) string {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return ""
	}
	return buildName(bi)
}

func buildName(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" && !strings.Contains(v, "+dirty") {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision" && len(s.Value) >= 12:
			rev = s.Value[:12]
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "+dirty"
		}
	}
	if rev == "" {
		return ""
	}
	return rev + dirty
}
