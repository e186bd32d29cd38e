package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/paddock-dev/paddock/internal/access"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// staleAfter is how long a copy another node took over is kept here.
const staleAfter = time.Hour

// GC removes the working copies (with their caches and volumes) that are
// no longer needed: those of stopped sessions (a stop discards what was
// not accepted), of failed sessions and sessions stopped because their
// budget ran out that ended more than retainFailed ago,
// and leftovers no session owns. Live and completed sessions keep theirs.
func (s Review) GC(ctx context.Context, caller identity.Principal, now time.Time) ([]wire.Collected, error) {
	if err := access.MustAdmin(caller, "collecting working copies"); err != nil {
		return nil, err
	}
	retainFailed := s.RetainFailed
	out := []wire.Collected{}
	owned := map[string]bool{}
	list, err := sessionsIn(ctx, s.Store, true, session.StatusStopped, session.StatusFailed)
	if err != nil {
		return out, err
	}
	for _, x := range list {
		owned[x.ID] = s.Copies.Mine(x) // a stale copy of another node's is a leftover here
		if x.Held() {
			continue // held for inspection: kept until released
		}
		reason := "stopped"
		if x.Status == session.StatusFailed || x.BudgetStopped() {
			if now.Sub(x.UpdatedAt) < retainFailed {
				continue
			}
			reason = fmt.Sprintf("%s more than %s ago", x.Status, retainFailed)
		}
		// The checkpoints go with the copy (wherever the copy was).
		if _, err := s.Store.DeleteSteps(ctx, x.ID); err != nil {
			return out, fmt.Errorf("collect session %s's steps: %w", x.ID, err)
		}
		if _, err := s.Attachments.Collect(ctx, x.ID); err != nil {
			return out, fmt.Errorf("collect session %s's attachments: %w", x.ID, err)
		}
		if err := s.Copies.Release(ctx, x.ID); err != nil {
			return out, fmt.Errorf("collect session %s: %w", x.ID, err)
		}
		if !s.Copies.Mine(x) || !s.Copies.Exists(x) {
			continue // another node's copy: its collector removes it
		}
		if err := s.Sealer.Seal(ctx, x.ID); err != nil {
			return out, fmt.Errorf("collect session %s: %w", x.ID, err)
		}
		used, _, _ := s.Copies.Usage(x)
		if err := s.Copies.Remove(ctx, x); err != nil {
			return out, fmt.Errorf("collect session %s's working copy: %w", x.ID, err)
		}
		out = append(out, wire.Collected{SessionID: x.ID, Reason: reason, Bytes: used})
	}
	if _, err := s.Attachments.Expire(ctx); err != nil {
		return out, fmt.Errorf("collect attachments never sent: %w", err)
	}
	// Mirrors of connections revoked, and mirrors nobody uses.
	if s.Remotes != nil {
		gone, err := s.Remotes.CollectMirrors(ctx, now)
		if out = append(out, gone...); err != nil {
			return out, err
		}
	}
	// Leftovers: a directory or volume whose session does not exist, or
	// whose session another node took over (this copy is stale) more
	// than staleAfter ago.
	for _, id := range s.Copies.IDs() {
		if owned[id] {
			continue
		}
		reason := "no such session (a leftover)"
		x, err := s.Store.GetSession(ctx, id)
		switch {
		case errors.Is(err, errdefs.ErrNotFound):
			if err := s.Copies.Release(ctx, id); err != nil {
				return out, err
			}
		case err == nil && !s.Copies.Mine(x) && now.Sub(x.UpdatedAt) > staleAfter:
			reason = "node " + x.Node + " holds the session's copy now (this one is stale)"
		default:
			continue
		}
		x = session.Session{ID: id, Workdir: filepath.Join(s.Copies.WorkspaceDir, id)}
		if s.Copies.HasVolume(id) {
			x.Workdir = filepath.Join(s.Copies.Volumes.Path(id), "work")
		}
		used, _, _ := s.Copies.Usage(x)
		if err := s.Copies.Remove(ctx, x); err != nil {
			return out, err
		}
		out = append(out, wire.Collected{SessionID: id, Reason: reason, Bytes: used})
	}
	return out, nil
}
