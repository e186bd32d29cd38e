package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// secretNames are files under the read-only trees never shown, whatever
// their mode.
var secretNames = map[string]bool{"shadow": true, "shadow-": true, "gshadow": true, "gshadow-": true, "sudoers": true,
	"opasswd": true, "krb5.keytab": true, "master.passwd": true, "machine-id": true}

// tree is what the view hides under one read-only root (/etc, a
// toolchain), kept current: files and directories the sandbox user could
// not read anyway or that hold secrets (private keys, shadow), and every
// socket, named pipe and device. Hidden files are "f:PATH" (shown empty),
// hidden directories "d:PATH" (an empty tmpfs).
//
// The walk is done again whenever a directory of the tree changed since
// the last one (a socket a host service created after Paddock started is
// masked at the next sandbox's start; a directory made private is hidden):
// each start costs a stat per directory, a walk only after a change. What
// changes while a command runs is seen by the next one; the system trees
// (/usr and the like) are not walked (too large to stat at every start).
//
// A process that starts one sandbox and exits (paddock sandbox exec) would
// walk at every start: the tree is kept in a file of Paddock's data
// directory (kept), read by the next process, which checks its directories
// as above and walks only after a change (or a reboot).
type tree struct {
	root string

	mu     sync.Mutex
	dirs   map[string]time.Time // every directory walked, and its change time
	masks  []string
	walked time.Time
}

// settled is how old a directory's modification must be for the walk to
// have seen its end: the kernel's timestamps are coarse (a few
// milliseconds), so a change in the same tick as the walk would leave the
// time as it was.
const settled = 2 * time.Second // a filesystem's timestamps may be whole seconds

// current returns the tree's masks as of now; dir (when not empty) is
// where the tree is kept between processes.
func (t *tree) current(dir string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dirs == nil && dir != "" {
		t.load(dir)
	}
	if t.dirs == nil || t.changed() {
		t.walk()
		if dir != "" {
			t.save(dir)
		}
	}
	return t.masks
}

// kept is a tree as a file keeps it: for the boot it was walked in, by
// the rules of the walk that made it.
type kept struct {
	Root   string               `json:"root"`
	Rules  string               `json:"rules"`
	Boot   string               `json:"boot"`
	Walked time.Time            `json:"walked"`
	Dirs   map[string]time.Time `json:"dirs"`
	Masks  []string             `json:"masks"`
}

// maskRules names the rules of walk: a tree kept by a Paddock whose walk
// hid other things (an upgrade in place, a client and a server of two
// versions on one data directory) is walked again. Change it with walk.
const maskRules = "2026-12-06: sockets, pipes, devices; unreadable files and directories; shadow, shadow-, gshadow, gshadow-, sudoers, opasswd, krb5.keytab, master.passwd, machine-id, *_key, *.key, private/"

// keptFor is how long a kept tree is taken: a file's mode changed
// with its directory unchanged (chmod 600) is seen by the next walk.
const keptFor = 10 * time.Minute

// keptPath is the file that keeps the tree of root in dir.
func keptPath(dir, root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(dir, "masks-"+hex.EncodeToString(sum[:8])+".json")
}

// boot names this boot of the machine (read once a process): a tree
// kept in another is walked again.
var boot = sync.OnceValue(func() string {
	id, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(id))
})

// load takes the tree kept in dir, if one is there for this root and boot
// in a file of this user's that no one else may write; else nothing.
func (t *tree) load(dir string) {
	f, err := os.Open(keptPath(dir, t.root))
	if err != nil {
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o022 != 0 || int(st.Uid) != os.Geteuid() || fi.Size() > 16<<20 {
		return
	}
	var k kept
	if json.NewDecoder(f).Decode(&k) != nil || k.Root != t.root || k.Rules != maskRules || k.Boot == "" || k.Boot != boot() ||
		len(k.Dirs) == 0 || k.Dirs[t.root].IsZero() || time.Since(k.Walked).Abs() > keptFor {
		return
	}
	t.dirs, t.masks, t.walked = k.Dirs, k.Masks, k.Walked
}

// save keeps the tree in dir for the next process (best effort: a
// process that cannot walks again).
func (t *tree) save(dir string) {
	b, err := json.Marshal(kept{Root: t.root, Rules: maskRules, Boot: boot(), Walked: t.walked, Dirs: t.dirs, Masks: t.masks})
	if err != nil || os.MkdirAll(dir, 0o700) != nil {
		return
	}
	f, err := os.CreateTemp(dir, ".masks-*")
	if err != nil {
		return
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil && cerr == nil {
		err = os.Rename(f.Name(), keptPath(dir, t.root))
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
}

// changed says whether a directory walked has changed (or gone) since.
func (t *tree) changed() bool {
	for dir, mod := range t.dirs {
		fi, err := os.Lstat(dir)
		if err != nil || !changeTime(fi).Equal(mod) || !mod.Before(t.walked.Add(-settled)) {
			return true
		}
	}
	return false
}

func (t *tree) walk() {
	t.dirs, t.masks, t.walked = map[string]time.Time{}, nil, time.Now()
	_ = filepath.WalkDir(t.root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.Type()&os.ModeSymlink != 0 {
			return nil // a link is shown as a link: where it leads is masked there (/etc/alternatives holds hundreds)
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if p == t.root {
			t.dirs[p] = changeTime(fi)
			return nil
		}
		m, name := fi.Mode(), d.Name()
		secret := secretNames[name] || strings.HasSuffix(name, "_key") || strings.HasSuffix(name, ".key") ||
			(name == "private" && m.IsDir())
		switch {
		case m&(os.ModeSocket|os.ModeNamedPipe|os.ModeDevice|os.ModeCharDevice) != 0:
			t.masks = append(t.masks, "f:"+p)
		case m.IsDir() && (m.Perm()&0o005 != 0o005 || secret):
			t.masks = append(t.masks, "d:"+p)
			return filepath.SkipDir
		case m.IsDir():
			t.dirs[p] = changeTime(fi)
		case m.IsRegular() && (m.Perm()&0o004 == 0 || secret):
			t.masks = append(t.masks, "f:"+p)
		}
		return nil
	})
}

// changeTime is when a directory last changed: its entries (as its
// modification time says) or its own mode and owner.
func changeTime(fi os.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Ctim.Unix())
	}
	return fi.ModTime()
}
