package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/paddock-dev/paddock/internal/copies"
	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/secret"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
	"github.com/paddock-dev/paddock/internal/workspace"
)

// A session's deliverable: its diff against the base, accepted (recorded
// after the CLI applied it, or delivered as a branch of the repository of
// origin) or rejected (discarded).

// Diff is the session's deliverable: its working copy against the base.
func (s Review) Diff(ctx context.Context, caller identity.Principal, id string) (session.Diff, session.Session, error) {
	x, err := s.Sessions().For(ctx, caller, id, identity.Read)
	if err != nil {
		return session.Diff{}, x, err
	}
	if s.elsewhere(x) {
		out, err := s.remote(ctx, durable.Handover{Op: durable.OpDiff, SessionID: id, Home: x.Node})
		return out.Diff, out.Session, err
	}
	return s.diffHere(ctx, x)
}

func (s *Service) diffHere(ctx context.Context, x session.Session) (session.Diff, session.Session, error) {
	id := x.ID
	if x.Workdir == "" || x.BaseCommit == "" {
		return session.Diff{}, x, fmt.Errorf("session %s has no working copy yet (status %s): %w", id, x.Status, errdefs.ErrConflict)
	}
	release, err := s.hold(ctx, x)
	if err != nil {
		return session.Diff{}, x, err
	}
	defer release()
	d, err := s.compute(ctx, x)
	return d, x, err
}

// hold readies session x's copy for the host: its sandbox quiet (no
// command running, none starting) until release, then its volume mounted
// (an idle session's volume is let go under the same hold,
// copies.Set.Idle), and the copy there.
func (s *Service) hold(ctx context.Context, x session.Session) (release func(), err error) {
	release, err = s.Copies.Quiet(ctx, x.ID, quietWait)
	if err != nil {
		return nil, err
	}
	if err := s.Copies.Mount(ctx, x.Workdir); err != nil {
		release()
		return nil, err
	}
	if err := s.copyGone(x); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// compute is the diff of session x's copy, which the caller holds.
func (s *Service) compute(ctx context.Context, x session.Session) (session.Diff, error) {
	d, err := workspace.Compute(s.Copies.Bounded(ctx), x.Workdir, x.BaseCommit)
	if err == nil {
		s.remember(x.ID, d.Base, d.Tree)
	}
	return secret.Diff(d), err
}

// copyGone is a 409 when the session's working copy was removed.
func (s *Service) copyGone(x session.Session) error {
	if s.Copies.Holds(x) {
		return nil
	}
	why := "it was removed"
	switch x.Status {
	case session.StatusStopped:
		why = "a stop discards what was not accepted, and the copy went with it"
	case session.StatusFailed:
		why = "failed sessions' copies are kept for PADDOCK_RETAIN_FAILED, then collected"
	}
	return fmt.Errorf("session %s's working copy is gone (%s): %w", x.ID, why, errdefs.ErrConflict)
}

// remember records a snapshot handed out by Diff (only those of the
// session's current base are kept).
func (s *Service) remember(id, base, tree string) {
	s.diffsMu.Lock()
	defer s.diffsMu.Unlock()
	if s.diffs == nil {
		s.diffs = map[string]map[string]bool{}
	}
	m := s.diffs[id]
	if m == nil || !m["base:"+base] {
		m = map[string]bool{"base:" + base: true}
		s.diffs[id] = m
	}
	if len(m) < 1000 {
		m[tree] = true
	}
}

// handedOut reports whether Diff gave out tree at base for the session.
func (s *Service) handedOut(id, base, tree string) bool {
	s.diffsMu.Lock()
	defer s.diffsMu.Unlock()
	m := s.diffs[id]
	return m != nil && m["base:"+base] && m[tree]
}

// quietWait is how long a diff or a reject waits for a running command of
// the session to end before answering 409.
const quietWait = 10 * time.Second

// Accept records the acceptance of a session's diff (the CLI applied it
// to the user's repository with the user's own git identity). Exactly the
// snapshot that was reviewed becomes the working copy's new base, so an
// acceptance while the agent works loses nothing: its later changes are a
// new diff against what was accepted.
func (s Review) Accept(ctx context.Context, caller identity.Principal, id string, req wire.AcceptRequest) (session.Session, error) {
	x, err := s.Sessions().For(ctx, caller, id, identity.Steer)
	if err != nil {
		return session.Session{}, err
	}
	by := caller.Sender()
	if s.elsewhere(x) {
		out, err := s.remote(ctx, durable.Handover{Op: durable.OpAccept, SessionID: id, Home: x.Node, Accept: req, By: by})
		return out.Session, err
	}
	return s.accept(ctx, id, req, by, nil)
}

// AcceptToBranch accepts the reviewed snapshot (base and tree, as Diff
// gave them) by delivering it to the session's repository of origin, when
// that is a directory on this server, as branch paddock/ID: one commit
// whose message names the session and who accepted it. The repository's
// checkout is not touched; its owner merges the branch. It returns the
// branch and the commit.
func (s Review) AcceptToBranch(ctx context.Context, caller identity.Principal, id, base, tree string) (branch, commit string, err error) {
	x, err := s.Sessions().For(ctx, caller, id, identity.Steer)
	if err != nil {
		return "", "", err
	}
	by := caller.Sender()
	if s.elsewhere(x) {
		out, err := s.remote(ctx, durable.Handover{Op: durable.OpBranch, SessionID: id, Home: x.Node, Accept: wire.AcceptRequest{Mode: session.AsCommit, Base: base, Tree: tree}, By: by})
		return out.Branch, out.Commit, err
	}
	return s.acceptToBranch(ctx, id, base, tree, by)
}

func (s *Service) acceptToBranch(ctx context.Context, id, base, tree string, by session.Sender) (branch, commit string, err error) {
	branch = "paddock/" + id
	_, err = s.accept(ctx, id, wire.AcceptRequest{Mode: session.AsCommit, Base: base, Tree: tree}, by, func(x session.Session, next string) (string, error) {
		if x.Repo == "" {
			return "", fmt.Errorf("%w: session %s has no repository of origin to deliver to", errdefs.ErrInvalid, id)
		}
		if err := workspace.Branch(s.Copies.Bounded(ctx), x.Workdir, x.BaseCommit, next, x.Repo, branch); err != nil {
			return "", fmt.Errorf("%w: nothing was accepted: %w", errdefs.ErrConflict, err)
		}
		commit = next
		return fmt.Sprintf("commit %s on branch %s of %s", next, branch, x.Repo), nil
	})
	return branch, commit, err
}

// accept records an acceptance of req's snapshot; land, when given,
// delivers the snapshot's commit first and says where it went.
func (s *Service) accept(ctx context.Context, id string, req wire.AcceptRequest, by session.Sender, land func(x session.Session, next string) (string, error)) (session.Session, error) {
	if req.Mode != session.AsCommit && req.Mode != session.AsUncommitted {
		return session.Session{}, fmt.Errorf("%w: mode %q: want commit or uncommitted", errdefs.ErrInvalid, req.Mode)
	}
	if req.Base == "" || req.Tree == "" {
		return session.Session{}, fmt.Errorf("%w: base and tree are required: send those of the diff you applied (GET …/diff)", errdefs.ErrInvalid)
	}
	if err := errors.Join(session.Limit("base", req.Base, session.MaxShort), session.Limit("tree", req.Tree, session.MaxShort), session.Limit("commit", req.Commit, session.MaxShort)); err != nil {
		return session.Session{}, fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
	}
	x, err := s.Store.GetSession(ctx, id)
	if err != nil {
		return x, err
	}
	if x.Workdir == "" || x.BaseCommit == "" {
		return x, fmt.Errorf("session %s has no working copy yet (status %s): nothing to accept: %w", id, x.Status, errdefs.ErrConflict)
	}
	if x.BaseCommit != req.Base {
		return x, fmt.Errorf("session %s's diff against %.12s was already delivered; fetch the diff again for the changes since: %w", id, req.Base, errdefs.ErrConflict)
	}
	release, err := s.hold(ctx, x)
	if err != nil {
		return x, err
	}
	defer release()
	if !s.handedOut(id, req.Base, req.Tree) {
		// Not a snapshot this server handed out (it may have restarted since):
		// only the working copy's current state can be accepted then.
		d, err := s.compute(ctx, x)
		if err != nil {
			return x, err
		}
		if d.Base != req.Base || d.Tree != req.Tree {
			return x, fmt.Errorf("%w: tree %.12s is not a diff of session %s against %.12s: accept the base and tree GET …/diff gives", errdefs.ErrInvalid, req.Tree, id, req.Base)
		}
	}
	var author workspace.Author
	var authorNote string
	if x.Remote != nil && req.Commit == "" && req.Mode == session.AsCommit && s.Remotes != nil {
		// Nobody applied it to a checkout (a terminal's accept --repo
		// names the commit it made there): it goes to the forge.
		author, authorNote, land = s.Remotes.Deliver(ctx, x, by)
	}
	message := "accepted by " + by.String()
	if land != nil {
		title := x.DisplayTitle
		if title == "" {
			title = "Changes of Paddock session " + id
		}
		message = title + "\n\nPaddock-Session: " + id + "\nAccepted-By: " + by.String() + "\n"
	}
	next, err := workspace.Snapshot(s.Copies.Bounded(ctx), x.Workdir, req.Base, req.Tree, message, author)
	if errors.Is(err, workspace.ErrUnknownTree) || errors.Is(err, workspace.ErrUntrusted) {
		return x, fmt.Errorf("%w: %v", errdefs.ErrInvalid, err)
	}
	if err != nil {
		return x, err
	}
	note := string(req.Mode)
	if req.Commit != "" {
		note += " " + req.Commit
	}
	if land != nil {
		if note, err = land(x, next); err != nil {
			return x, err
		}
		if authorNote != "" {
			note += "; " + authorNote
		}
	}
	if err := s.Store.Deliver(ctx, id, req.Base, next, session.DeliveryAccepted, by, note); err != nil {
		return x, err
	}
	x, err = s.Store.GetSession(ctx, id)
	if err == nil {
		// The new base is a commit only this copy has: checkpointed with it.
		copies.RecordStep(s.Copies.Bounded(ctx), s.Store, s.ContentKey, x, "accept", req.Base)
	}
	return x, err
}

// Reject discards the session's changes: the working copy returns to its
// base, and nothing reaches the user's repository.
func (s Review) Reject(ctx context.Context, caller identity.Principal, id string) (session.Session, error) {
	x, err := s.Sessions().For(ctx, caller, id, identity.Steer)
	if err != nil {
		return session.Session{}, err
	}
	by := caller.Sender()
	if s.elsewhere(x) {
		out, err := s.remote(ctx, durable.Handover{Op: durable.OpReject, SessionID: id, Home: x.Node, By: by})
		return out.Session, err
	}
	return s.reject(ctx, id, by)
}

func (s *Service) reject(ctx context.Context, id string, by session.Sender) (session.Session, error) {
	x, err := s.Store.GetSession(ctx, id)
	if err != nil {
		return x, err
	}
	if x.Status == session.StatusRunning || x.Status == session.StatusQueued {
		return x, fmt.Errorf("session %s is %s: rejecting would pull files from under the agent; interrupt it (paddock sessions interrupt %s) or wait until it is awaiting, then reject: %w",
			id, x.Status, id, errdefs.ErrConflict)
	}
	if x.Held() {
		return x, fmt.Errorf("session %s is held by %s for inspection: nothing is discarded until it is released (paddock sessions release %s): %w",
			id, x.Hold.By, id, errdefs.ErrConflict)
	}
	if x.Workdir != "" && x.BaseCommit != "" {
		release, err := s.hold(ctx, x)
		if err != nil {
			return x, err
		}
		defer release()
		if err := s.Copies.Discard(ctx, x); err != nil {
			return x, err
		}
	}
	if err := s.Store.Deliver(ctx, id, x.BaseCommit, x.BaseCommit, session.DeliveryRejected, by, "changes discarded"); err != nil {
		return x, err
	}
	// What was discarded must not come back with a copy made again.
	copies.RecordStep(s.Copies.Bounded(ctx), s.Store, s.ContentKey, x, "reject", "")
	return s.Store.GetSession(ctx, id)
}
