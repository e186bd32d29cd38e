package overlay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/paddock-dev/paddock/internal/workspace"
)

// Checkouts are the shared checkouts overlays start from: one per
// repository, commit and owner, made on first use, kept while a session's
// copy uses it and removed with its last user. A checkout is never written
// once made: every session's writes go to its own upper directory.
type Checkouts struct {
	// Dir holds them, root's alone (0700): no sandbox sees it.
	Dir string
	// UID, when non-zero, owns the checkouts' files (the sandbox user), as
	// it owns a cloned copy's.
	UID   int
	locks sync.Map // key → *sync.Mutex
}

// ErrMoved says the repository's HEAD moved while its checkout was made:
// the checkout is not of the commit asked for.
var ErrMoved = errors.New("the repository's HEAD moved while its checkout was made")

func (c *Checkouts) lock(key string) func() {
	m, _ := c.locks.LoadOrStore(key, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// key names the checkout of the repository at from, at commit head.
func (c *Checkouts) key(from, head string) string {
	sum := sha256.Sum256([]byte(from + "\x00" + head + "\x00" + strconv.Itoa(c.UID)))
	return hex.EncodeToString(sum[:16])
}

// Take returns the checkout of the repository at from at commit head,
// making it first when there is none, and records session id as one of
// its users.
func (c *Checkouts) Take(ctx context.Context, from, head, id string) (string, error) {
	key := c.key(from, head)
	defer c.lock(key)()
	dir := filepath.Join(c.Dir, key)
	tree := filepath.Join(dir, "tree")
	if _, err := os.Lstat(filepath.Join(dir, "ready")); err != nil {
		if err := c.make(ctx, from, head, dir, tree); err != nil {
			_ = os.RemoveAll(dir)
			return "", err
		}
	}
	users := filepath.Join(dir, "users")
	if err := os.MkdirAll(users, 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(users, id), nil, 0o600); err != nil {
		return "", err
	}
	return tree, nil
}

// make clones the repository at from into tree, as a copy is cloned, and
// hands it to UID; ready marks it whole.
func (c *Checkouts) make(ctx context.Context, from, head, dir, tree string) error {
	_ = os.RemoveAll(dir) // what a make cut short left
	if err := os.MkdirAll(dir, 0o700); err != nil {
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
	if c.UID != 0 {
		if err := workspace.Chown(tree, c.UID); err != nil {
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

// Release lets session id go of the checkouts it uses; one left without a
// user is removed.
func (c *Checkouts) Release(id string) error {
	held, err := filepath.Glob(filepath.Join(c.Dir, "*", "users", id))
	if err != nil {
		return err
	}
	var errs []error
	for _, u := range held {
		dir := filepath.Dir(filepath.Dir(u))
		errs = append(errs, c.release(filepath.Base(dir), dir, u))
	}
	return errors.Join(errs...)
}

func (c *Checkouts) release(key, dir, user string) error {
	defer c.lock(key)()
	if err := os.Remove(user); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	left, err := os.ReadDir(filepath.Dir(user))
	if errors.Is(err, os.ErrNotExist) {
		return nil // released twice at once: the other removed it
	}
	if err != nil || len(left) > 0 {
		return err
	}
	return os.RemoveAll(dir)
}
