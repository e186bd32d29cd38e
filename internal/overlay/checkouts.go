package overlay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/internal/workspace"
)

// Checkouts are the shared checkouts overlays start from: one per
// repository, commit and owner, made on first use and kept while a
// session's copy uses it; of those no copy uses, the Unused most recently
// let go stay for the next session of theirs. A checkout is never written
// once made: every session's writes go to its own upper directory.
type Checkouts struct {
	// Dir holds them, root's alone (0700): no sandbox sees it.
	Dir string
	// UID, when non-zero, owns the checkouts' files (the sandbox user), as
	// it owns a cloned copy's.
	UID int
	// Unused is how many checkouts no copy uses are kept (0: 4).
	Unused int
	locks  sync.Map // key → chan struct{} (one slot)
}

// ErrMoved says the repository's HEAD moved while its checkout was made:
// the checkout is not of the commit asked for.
var ErrMoved = errors.New("the repository's HEAD moved while its checkout was made")

// ErrWhiteouts says the repository holds names fuse-overlayfs takes for
// whiteouts (.wh.*, see Whiteout): without root, its checkout cannot be
// shared (a copy of it would lack those files, and the files they name).
var ErrWhiteouts = errors.New("the repository holds names starting with " + Whiteout + ", which fuse-overlayfs takes for whiteouts")

// lock takes checkout key's lock, or gives up when ctx ends (a wait
// behind another session's long clone).
func (c *Checkouts) lock(ctx context.Context, key string) (func(), error) {
	m, _ := c.locks.LoadOrStore(key, make(chan struct{}, 1))
	ch := m.(chan struct{})
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for the checkout another session is making: %w", ctx.Err())
	}
}

// key names the checkout of the repository at from at tip.
func (c *Checkouts) key(from string, tip workspace.Tip) string {
	sum := sha256.Sum256([]byte(from + "\x00" + tip.Commit + "\x00" + tip.Refs + "\x00" + strconv.Itoa(c.UID)))
	return hex.EncodeToString(sum[:16])
}

// Take returns the checkout of the repository at from at tip (its HEAD's
// commit and its refs as they are now), making it first when there is
// none, and records session id as one of its users.
func (c *Checkouts) Take(ctx context.Context, from string, tip workspace.Tip, id string) (string, error) {
	key := c.key(from, tip)
	unlock, err := c.lock(ctx, key)
	if err != nil {
		return "", err
	}
	defer unlock()
	dir := filepath.Join(c.Dir, key)
	tree := filepath.Join(dir, "tree")
	users := filepath.Join(dir, "users")
	if _, err := os.Lstat(filepath.Join(dir, "ready")); err != nil {
		if err := c.make(ctx, from, tip.Commit, dir, tree); err != nil {
			_ = os.RemoveAll(dir)
			return "", err
		}
	}
	if err := os.WriteFile(filepath.Join(users, id), nil, 0o600); err != nil {
		return "", err
	}
	return tree, nil
}

// Empty is an empty directory for the lower layer of a copy that shares
// no checkout (one cloned, forked or made again), where the copy must
// still be an overlay: without root, a copy seen outside its volume keeps
// what it holds in its upper layer, in the volume, within its budget.
func (c *Checkouts) Empty() (string, error) {
	dir := filepath.Join(c.Dir, ".empty")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	return dir, nil
}

// make clones the repository at from into tree, as a copy is cloned, and
// hands it to UID; ready marks it whole.
func (c *Checkouts) make(ctx context.Context, from, head, dir, tree string) error {
	_ = os.RemoveAll(dir) // what a make cut short left
	// Its users directory first: a checkout without one is a crash's
	// leftover, which the collector removes.
	if err := os.MkdirAll(filepath.Join(dir, "users"), 0o700); err != nil {
		return err
	}
	if err := os.Chmod(c.Dir, 0o700); err != nil {
		return err
	}
	if err := workspace.Clone(ctx, from, tree); err != nil {
		return err
	}
	got, err := workspace.Head(ctx, tree)
	if err != nil {
		return err
	}
	if got != head {
		return fmt.Errorf("%w: %.12s, not %.12s", ErrMoved, got, head)
	}
	if os.Getuid() != 0 {
		if name := whiteoutIn(tree); name != "" {
			return fmt.Errorf("%w: %s", ErrWhiteouts, name)
		}
	}
	if c.UID != 0 {
		if err := workspace.Chown(tree, tree, c.UID); err != nil {
			return fmt.Errorf("hand the checkout to the sandbox user: %w", err)
		}
	}
	// The copies' git (the sandbox's cannot write the index) finds the
	// files as the index has them, and hashes none of them again.
	if err := workspace.Settle(ctx, tree); err != nil {
		return err
	}
	if c.UID != 0 {
		// The refresh wrote the index anew, as root.
		if err := os.Lchown(filepath.Join(tree, ".git", "index"), c.UID, c.UID); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "ready"), nil, 0o600)
}

// whiteoutIn names a path under tree, if any, whose name starts with
// Whiteout.
func whiteoutIn(tree string) (found string) {
	_ = filepath.WalkDir(tree, func(path string, d os.DirEntry, err error) error {
		if err == nil && path != tree && strings.HasPrefix(d.Name(), Whiteout) {
			found, _ = filepath.Rel(tree, path)
			return filepath.SkipAll
		}
		return err
	})
	return found
}

// Release lets session id go of the checkouts it uses; of those left
// without a user, the least recently let go beyond Unused are removed.
func (c *Checkouts) Release(id string) error {
	held, err := filepath.Glob(filepath.Join(c.Dir, "*", "users", id))
	if err != nil {
		return err
	}
	now := time.Now() // to the nanosecond, which a directory's own times are not
	for _, u := range held {
		if err := os.Remove(u); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		_ = os.Chtimes(filepath.Dir(u), now, now)
	}
	if len(held) == 0 {
		return nil
	}
	return c.collect()
}

// collect removes the unused checkouts beyond the Unused most recently
// let go (the time its users directory was last left), a checkout a crash
// left without users, and what a removal cut short left in the trash.
func (c *Checkouts) collect() error {
	keep := c.Unused
	if keep == 0 {
		keep = 4
	}
	entries, err := os.ReadDir(c.Dir)
	if err != nil {
		return err
	}
	type unused struct {
		key  string
		left time.Time
	}
	var idle []unused
	var errs []error
	for _, e := range entries {
		name := filepath.Join(c.Dir, e.Name())
		switch {
		case strings.HasPrefix(e.Name(), trash):
			errs = append(errs, os.RemoveAll(name))
			continue
		case !e.IsDir() || strings.HasPrefix(e.Name(), "."):
			continue
		}
		users, err := os.ReadDir(filepath.Join(name, "users"))
		if errors.Is(err, os.ErrNotExist) {
			errs = append(errs, c.remove(e.Name())) // a crash's leftover, never kept
			continue
		}
		if err != nil || len(users) > 0 {
			continue
		}
		if fi, err := os.Stat(filepath.Join(name, "users")); err == nil {
			idle = append(idle, unused{e.Name(), fi.ModTime()})
		}
	}
	slices.SortFunc(idle, func(a, b unused) int { return b.left.Compare(a.left) })
	for _, u := range idle[min(keep, len(idle)):] {
		errs = append(errs, c.remove(u.key))
	}
	return errors.Join(errs...)
}

// trash prefixes a checkout being removed: renamed first, so a removal
// cut short never leaves a checkout that looks whole.
const trash = ".trash-"

// remove deletes the checkout key unless a session took it meanwhile.
func (c *Checkouts) remove(key string) error {
	unlock, err := c.lock(context.Background(), key)
	if err != nil {
		return err
	}
	defer unlock()
	dir := filepath.Join(c.Dir, key)
	if users, err := os.ReadDir(filepath.Join(dir, "users")); len(users) > 0 || (err != nil && !errors.Is(err, os.ErrNotExist)) {
		return err
	}
	gone := filepath.Join(c.Dir, trash+key)
	if err := os.Rename(dir, gone); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	return os.RemoveAll(gone)
}
