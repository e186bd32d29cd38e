// Package copies keeps sessions' working copies on this node: where each
// lives (a volume of its own, or a directory), its build cache, the
// locks that order the host's reads against the sandbox's commands, and
// the steps a copy went through (RecordStep), from which another node
// makes it again.
package copies

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/layer"
	"github.com/paddock-dev/paddock/internal/overlay"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/volume"
	"github.com/paddock-dev/paddock/internal/workspace"
)

// Set is where sessions' working copies and build caches live: for a
// session that runs commands, in a volume of its own sized to its disk
// budget (when Volumes is set); otherwise under WorkspaceDir and CacheDir,
// one directory per session. Caches are never shared: a session could
// poison another's builds.
type Set struct {
	// Node names this node among the nodes of one database: a session's
	// copy is here only when the store says this node holds it.
	Node string
	// Alive says whether a process serves as the named node now (nil: no
	// other node exists). A copy is taken over only from a node that is
	// not: a live one is merely slow, and the work waits for it.
	Alive        func(ctx context.Context, node string) (bool, error)
	WorkspaceDir string
	CacheDir     string
	Volumes      *volume.Volumes
	// Layers are the environment layers setup scripts leave; a session
	// uses one until its copy is removed.
	Layers *layer.Layers
	// Checkouts, when set, are the shared checkouts a copy is an overlay
	// of (made in constant time); nil: copies are clones.
	Checkouts *overlay.Checkouts
	// UID, when non-zero, is the sandbox user copies belong to.
	UID int
	// Remote, when set, keeps sessions' sandboxes away from the nodes
	// (pods): one goes when its session's copy goes for good.
	Remote Releaser
	// HostWork bounds git's work on a copy (recording it after a call,
	// its diff, its acceptance) as a command is bounded; nil: unbounded
	// but for time.
	HostWork workspace.Bound
	busy     sandboxed
	// mounting orders the mounts and unmounts of each copy (its
	// directory → *sync.Mutex).
	mounting sync.Map
}

// hold takes the lock ordering the mounts and unmounts of the copy at dir.
func (c *Set) hold(dir string) func() {
	m, _ := c.mounting.LoadOrStore(dir, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// Bounded is ctx with the bounds of the host's work on a copy.
func (c *Set) Bounded(ctx context.Context) context.Context {
	if c == nil {
		return ctx
	}
	return workspace.WithBound(ctx, c.HostWork)
}

// Releaser lets go of a session's sandbox kept elsewhere.
type Releaser interface {
	Release(ctx context.Context, sessionID string) error
}

// Release lets go of a session's remote sandbox, if any.
func (c *Set) Release(ctx context.Context, id string) error {
	if c == nil || c.Remote == nil {
		return nil
	}
	if err := c.Remote.Release(ctx, id); err != nil {
		return fmt.Errorf("release the session's sandbox: %w", err)
	}
	return nil
}

// Discard puts session x's copy back at its base, its environment layer
// (if any) restored again, and hands what git restored (as root) back to
// the sandbox user, so the agent can go on editing it.
func (c *Set) Discard(ctx context.Context, x session.Session) error {
	ctx = c.Bounded(ctx)
	if err := workspace.Discard(ctx, x.Workdir, x.BaseCommit); err != nil {
		return err
	}
	if l, ok := c.Layers.Of(x.ID); ok {
		if _, err := l.Restore(x.Workdir, "", c.UID); err != nil {
			return fmt.Errorf("restore the environment layer: %w", err)
		}
	}
	return c.Hand(x.Workdir)
}

// Hand gives the copy at dir to the sandbox user, when there is one. Of
// an overlay, only what was written on it (its upper layer) can be
// another's: its checkout is the user's already.
func (c *Set) Hand(dir string) error {
	if c == nil || c.UID == 0 {
		return nil
	}
	within := dir
	if o, ok := overlay.Load(dir, c.record(dir)); ok && overlay.Mounted(dir) {
		within = o.Upper()
	}
	if err := workspace.Chown(dir, within, c.UID); err != nil {
		return fmt.Errorf("hand the working copy to the sandbox user: %w", err)
	}
	return nil
}

// Scratch is a directory of session s's own in its volume (so its disk
// budget bounds it), "" when s has no volume.
func (c *Set) Scratch(s session.Session, name string) string {
	if id, ok := c.volumeOf(s.Workdir); ok {
		return filepath.Join(c.Volumes.Path(id), name)
	}
	return ""
}

// Dir is where session s's working copy goes, its volume made and
// mounted first when it gets one: in it, or, where FUSE serves the copy
// (outside), at its own mount point beside the volumes.
func (c *Set) Dir(ctx context.Context, s session.Session, runsCommands bool) (string, error) {
	if c.Volumes == nil || !runsCommands {
		return filepath.Join(c.WorkspaceDir, s.ID), nil
	}
	mnt, err := c.Volumes.Ensure(ctx, s.ID)
	if err != nil {
		return "", fmt.Errorf("make the session's volume: %w", err)
	}
	if c.outside() {
		if err := os.MkdirAll(c.Volumes.CopiesDir(), 0o711); err != nil {
			return "", err
		}
		return c.Volumes.CopyPath(s.ID), nil
	}
	return filepath.Join(mnt, "work"), nil
}

// outside says whether new copies in volumes are seen outside them:
// overlays without root, which fuse-overlayfs serves through a FUSE mount
// that the setuid fusermount cannot make within another (the volume's).
func (c *Set) outside() bool {
	return c != nil && c.Checkouts != nil && c.Volumes != nil && os.Getuid() != 0
}

// seenOutside says the copy at dir is seen outside volume id (an overlay
// fuse-overlayfs serves, which it must be: else it would be on the host's
// disk, beyond its budget). Its path says so, whatever this process can
// mount now.
func (c *Set) seenOutside(dir string) (id string, ok bool) {
	id, ok = c.volumeOf(dir)
	return id, ok && dir == c.Volumes.CopyPath(id)
}

// record is where the layers of the overlay seen at dir lie: beside it,
// or, for a copy seen outside its volume, in the volume (its budget
// bounds what the session writes).
func (c *Set) record(dir string) string {
	if id, ok := c.seenOutside(dir); ok {
		return filepath.Join(c.Volumes.Path(id), ".work.overlay")
	}
	return overlay.RecordOf(dir)
}

// Start is how session s's copy gets its repository's HEAD: an overlay
// of the shared checkout of that commit when this node makes them, else a
// clone.
func (c *Set) Start(s session.Session) workspace.Start {
	if c == nil || c.Checkouts == nil {
		return workspace.Clone
	}
	return func(ctx context.Context, from, dir string) error {
		tip, err := workspace.TipOf(ctx, from)
		if err != nil || tip.Commit == "" {
			return workspace.Clone(ctx, from, dir) // a repository without a commit: nothing to share
		}
		lower, err := c.Checkouts.Take(ctx, from, tip, s.ID)
		_, outside := c.seenOutside(dir)
		if errors.Is(err, overlay.ErrMoved) || (errors.Is(err, overlay.ErrWhiteouts) && !outside) {
			return workspace.Clone(ctx, from, dir) // the copy starts where the repository is now
		}
		if errors.Is(err, overlay.ErrWhiteouts) {
			// A clone of it in an overlay of nothing has the same defect.
			return fmt.Errorf("%w: without root a copy is served by fuse-overlayfs, so this repository needs a server running as root", err)
		}
		if err != nil {
			return fmt.Errorf("make the shared checkout: %w", err)
		}
		defer c.hold(dir)()
		rec := c.record(dir)
		if err := overlay.Remove(dir, rec); err != nil { // the empty one Clear left outside a volume
			return err
		}
		return overlay.Copy{Lower: lower, Record: rec, Dir: dir}.Mount()
	}
}

// Clear removes whatever stands at dir (a copy an attempt cut short left
// half made), its overlay unmounted first. A copy seen outside its volume
// is then an overlay of nothing (Checkouts.Empty), so whatever is cloned,
// forked or made again there lands in the volume.
func (c *Set) Clear(dir string) error {
	if err := c.dropOverlay(dir); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if _, ok := c.seenOutside(dir); !ok {
		return nil
	}
	empty, err := c.Checkouts.Empty()
	if err != nil {
		return err
	}
	defer c.hold(dir)()
	return overlay.Copy{Lower: empty, Record: c.record(dir), Dir: dir}.Mount()
}

// dropOverlay unmounts the overlay of the copy at dir, if it is one, and
// removes its record.
func (c *Set) dropOverlay(dir string) error {
	defer c.hold(dir)()
	return overlay.Remove(dir, c.record(dir))
}

// volumeOf says which session's volume holds dir, if any.
func (c *Set) volumeOf(dir string) (string, bool) {
	if c == nil || c.Volumes == nil || dir == "" {
		return "", false
	}
	return c.Volumes.Owns(dir)
}

// Mount makes sure a working copy is mounted, its volume then its
// overlay: both are unmounted when the process ends or the session
// idles, and mounted again on demand.
//
// Both are mounted under one lock, which Idle unmounts them under: an
// overlay is never mounted again on a volume unmounted in between. An
// overlay seen outside a volume that had to be mounted again (its fuse2fs
// killed) is detached first: it served layers of the volume's dead mount.
func (c *Set) Mount(ctx context.Context, workdir string) error {
	defer c.hold(workdir)()
	_, outside := c.seenOutside(workdir)
	if id, ok := c.volumeOf(workdir); ok {
		was := volume.Mounted(c.Volumes.Path(id))
		if _, err := c.Volumes.Ensure(ctx, id); err != nil {
			return fmt.Errorf("mount the working copy's volume: %w", err)
		}
		if !was && outside {
			if err := overlay.Unmount(workdir, true); err != nil {
				return err
			}
		}
	}
	if o, ok := overlay.Load(workdir, c.record(workdir)); ok {
		if err := o.Remount(); err != nil || !outside {
			return err
		}
		if fi, err := os.Lstat(filepath.Join(workdir, ".git")); err == nil && fi.IsDir() {
			return nil
		}
		// A whiteout a command planted while it was mounted took effect
		// once fuse-overlayfs forgot the name it hides (memory pressure):
		// mounted again, scrubbed first (see overlay.Scrub).
		if err := o.Unmount(); err != nil {
			return err
		}
		return o.Remount()
	}
	if outside {
		// Never its bare mount point, on the host's disk.
		return fmt.Errorf("%w: the record of the working copy at %s is gone", overlay.ErrLost, workdir)
	}
	return nil
}

// UnmountAll unmounts every copy's overlay, then every volume: a process
// that ends leaves no mount behind.
func (c *Set) UnmountAll(ctx context.Context) error {
	dirs := []string{c.WorkspaceDir}
	if c.Volumes != nil {
		dirs = append(dirs, c.Volumes.Dir, c.Volumes.CopiesDir())
	}
	for i, d := range dirs {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			dirs[i] = real // as the kernel lists mounts
		}
	}
	mounts, err := overlay.MountsUnder(dirs...)
	errs := []error{err}
	for _, m := range mounts {
		errs = append(errs, overlay.Unmount(m, true))
	}
	if c.Volumes != nil {
		errs = append(errs, c.Volumes.UnmountAll(ctx))
	}
	return errors.Join(errs...)
}

// Idle unmounts session x's copy (its overlay, its volume), when this
// node holds it, once its sandbox is quiet: an idle session holds no
// mount. Whatever uses the copy next mounts it again (Mount, Dir), as
// after a restart; until then its directory is an empty mount point,
// which no command can run in.
func (c *Set) Idle(ctx context.Context, x session.Session) error {
	id, vol := c.volumeOf(x.Workdir)
	if (!vol && !overlay.Mounted(x.Workdir)) || !c.Holds(x) {
		return nil
	}
	release, err := c.Quiet(ctx, x.ID, time.Minute)
	if err != nil {
		return err
	}
	defer release()
	defer c.hold(x.Workdir)()
	if err := overlay.Unmount(x.Workdir, false); err != nil || !vol {
		return err // a busy copy stays mounted, its volume with it
	}
	return c.Volumes.Unmount(ctx, id)
}

// Budget is the size of the volume holding workdir (0: none).
func (c *Set) Budget(workdir string) int64 {
	if _, ok := c.volumeOf(workdir); ok {
		return c.Volumes.Size
	}
	return 0
}

// Cache returns (creating it, owned by UID when non-zero) the session's
// build-cache directory: in its volume beside the working copy, else under
// CacheDir; "" without either.
func (c *Set) Cache(s session.Session) string {
	var dir string
	switch id, ok := c.volumeOf(s.Workdir); {
	case ok:
		if dir, ok = c.Volumes.Cache(id); !ok {
			return "" // never on a bare mount point, on the host's disk
		}
	case c != nil && c.CacheDir != "":
		dir = filepath.Join(c.CacheDir, s.ID)
		_ = os.MkdirAll(c.CacheDir, 0o711)
		_ = os.Chmod(c.CacheDir, 0o711)
	default:
		return ""
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return ""
	}
	if c.UID != 0 {
		_ = os.Chown(dir, c.UID, c.UID)
	}
	return dir
}

// Usage is the disk a session's working copy and caches use, and its
// budget (0: none).
func (c *Set) Usage(s session.Session) (used, budget int64, err error) {
	if id, ok := c.volumeOf(s.Workdir); ok {
		u, err := c.Volumes.Usage(id) // an idle session's volume stays unmounted
		return u.Used, u.Size, err
	}
	dir := s.Workdir
	if o, ok := overlay.Load(s.Workdir, c.record(s.Workdir)); ok {
		dir = o.Upper() // what the session wrote, not the checkout it shares
	}
	for _, d := range []string{dir, c.plainCache(s.ID)} {
		n, err := du(d)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return used, 0, err
		}
		used += n
	}
	return used, 0, nil
}

func (c *Set) plainCache(id string) string {
	if c == nil || c.CacheDir == "" {
		return ""
	}
	return filepath.Join(c.CacheDir, id)
}

// du sums the sizes of the files under dir (symlinks not followed).
func du(dir string) (int64, error) {
	if dir == "" {
		return 0, nil
	}
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return n, err
}

// Remove deletes a session's working copy and caches, its volume with
// them. Idempotent.
func (c *Set) Remove(ctx context.Context, s session.Session) error {
	if c == nil {
		return nil
	}
	c.Layers.Release(s.ID)
	var errs []error
	if s.Workdir != "" {
		// The overlay goes first: its upper layer may be in the volume.
		errs = append(errs, c.dropOverlay(s.Workdir))
	}
	if c.Checkouts != nil {
		errs = append(errs, c.Checkouts.Release(s.ID))
	}
	if id, ok := c.volumeOf(s.Workdir); ok {
		if _, outside := c.seenOutside(s.Workdir); outside {
			// Its mount point, whose record an unmounted volume hid.
			if err := os.Remove(s.Workdir); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		return errors.Join(append(errs, c.Volumes.Remove(ctx, id))...)
	}
	if s.Workdir != "" {
		errs = append(errs, os.RemoveAll(s.Workdir))
	}
	if d := c.plainCache(s.ID); d != "" {
		errs = append(errs, os.RemoveAll(d))
	}
	return errors.Join(errs...)
}

// sandboxed holds, per session, whether a sandboxed process of it runs:
// the host never reads a working copy while one does, since a process
// swapping a file for a symlink between git's check and its read could
// make the host (root) read any file into the diff.
type sandboxed struct {
	mu    sync.Mutex
	slots map[string]chan struct{}
}

func (s *sandboxed) slot(id string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.slots == nil {
		s.slots = map[string]chan struct{}{}
	}
	ch, ok := s.slots[id]
	if !ok {
		ch = make(chan struct{}, 1)
		s.slots[id] = ch
	}
	return ch
}

// Sandboxed marks session id's sandbox in use until release is called:
// host-side reads of its copy wait (Quiet).
func (c *Set) Sandboxed(ctx context.Context, id string) (release func(), err error) {
	ch := c.busy.slot(id)
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// ErrBusy says a session's sandbox runs a command, so its copy cannot be
// read by the host now.
var ErrBusy = errors.New("a command is running in the session's sandbox")

// Quiet waits up to wait for session id's sandbox to have no process, and
// holds it so until release: the host may then read the copy.
func (c *Set) Quiet(ctx context.Context, id string, wait time.Duration) (release func(), err error) {
	ch := c.busy.slot(id)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-timer.C:
		return nil, fmt.Errorf("%w: the host reads the working copy between commands; try again when it ends: %w", ErrBusy, errdefs.ErrConflict)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Holds says whether session x's working copy is here: on this node as
// the store says (a copy another node took over since is stale), its
// directory present (or, in a volume, its image: an idle session's
// volume is unmounted). A session recorded before nodes were named is on
// whichever node has its directory.
func (c *Set) Holds(x session.Session) bool {
	if !c.Mine(x) {
		return false
	}
	if id, ok := c.volumeOf(x.Workdir); ok && !volume.Mounted(c.Volumes.Path(id)) {
		return c.Volumes.Has(id)
	}
	_, err := os.Stat(x.Workdir)
	return x.Workdir != "" && err == nil
}

// Mine says the store names this node as holding x's copy; a session
// recorded before nodes were named is this node's when its directory is
// one of this node's (another node's on a shared disk is not).
func (c *Set) Mine(x session.Session) bool {
	switch {
	case c == nil:
		return x.Node == ""
	case x.Node != "":
		return x.Node == c.Node
	}
	if _, ok := c.volumeOf(x.Workdir); ok {
		return true
	}
	return c.WorkspaceDir != "" && strings.HasPrefix(filepath.Clean(x.Workdir), filepath.Clean(c.WorkspaceDir)+string(filepath.Separator))
}

// Exists says whether session x still has a working copy or a volume.
func (c *Set) Exists(x session.Session) bool {
	if id, ok := c.volumeOf(x.Workdir); ok {
		return c.HasVolume(id)
	}
	if x.Workdir != "" {
		if _, err := os.Lstat(x.Workdir); err == nil {
			return true
		}
	}
	if d := c.plainCache(x.ID); d != "" {
		if _, err := os.Lstat(d); err == nil {
			return true
		}
	}
	return false
}

func (c *Set) HasVolume(id string) bool {
	return c.Volumes != nil && c.Volumes.Has(id)
}

// IDs lists every session ID that has a directory or a volume here.
func (c *Set) IDs() []string {
	seen := map[string]bool{}
	var out []string
	add := func(id string) {
		if id != "" && !seen[id] && !strings.HasPrefix(id, ".") {
			seen[id] = true
			out = append(out, id)
		}
	}
	for _, dir := range []string{c.WorkspaceDir, c.CacheDir} {
		if dir == "" {
			continue
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			add(e.Name())
		}
	}
	if c.Volumes != nil {
		ids, _ := c.Volumes.IDs()
		for _, id := range ids {
			add(id)
		}
	}
	return out
}

// ErrNotHere says a session's working copy is not on this node.
var ErrNotHere = errors.New("the working copy is not on this node")

// Fork makes dir a fork of parent's working copy as it is now
// (workspace.Fork), holding parent's sandbox quiet meanwhile; detail
// says what it made. A parent without a copy gives an empty one.
func (c *Set) Fork(ctx context.Context, parent session.Session, dir string) (detail string, err error) {
	if parent.Workdir == "" || parent.BaseCommit == "" {
		if err := workspace.Init(ctx, dir); err != nil {
			return "", err
		}
		return "an empty working copy (session " + parent.ID + ", which delegated the task, has none)", nil
	}
	if !c.Holds(parent) {
		return "", fmt.Errorf("%w: session %s, which delegated the task, has its copy on node %s, where a delegated session is made", ErrNotHere, parent.ID, parent.Node)
	}
	if err := c.Mount(ctx, parent.Workdir); err != nil {
		return "", err
	}
	release, err := c.Sandboxed(ctx, parent.ID)
	if err != nil {
		return "", err
	}
	defer release()
	_, skipped, err := workspace.Fork(c.Bounded(ctx), parent.Workdir, parent.BaseCommit, dir)
	if err != nil {
		return "", fmt.Errorf("fork the working copy of session %s: %w", parent.ID, err)
	}
	detail = "a fork of session " + parent.ID + "'s working copy as it is"
	if len(skipped) > 0 {
		detail += " (without what it could not carry: " + strings.Join(skipped, "; ") + ")"
	}
	return detail, nil
}

// Deliver writes the work of child, a fork of into's copy, into into's
// copy (workspace.Deliver), both sandboxes held quiet; what it wrote,
// even in part, is handed to the sandbox user.
func (c *Set) Deliver(ctx context.Context, child, into session.Session) (applied, conflicts, skipped []string, err error) {
	if !c.Holds(child) {
		return nil, nil, nil, fmt.Errorf("%w: session %s's (it was stopped, or node %s holds it)", ErrNotHere, child.ID, child.Node)
	}
	if err := c.Mount(ctx, child.Workdir); err != nil {
		return nil, nil, nil, err
	}
	for _, id := range []string{into.ID, child.ID} {
		release, err := c.Sandboxed(ctx, id)
		if err != nil {
			return nil, nil, nil, err
		}
		defer release()
	}
	applied, conflicts, skipped, err = workspace.Deliver(c.Bounded(ctx), child.Workdir, child.BaseCommit, into.Workdir)
	return applied, conflicts, skipped, errors.Join(err, c.Hand(into.Workdir))
}
