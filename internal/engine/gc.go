package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store"
)

// Collected is one working copy the collector removed, and why.
type Collected struct {
	SessionID string `json:"sessionId"`
	Reason    string `json:"reason"`
	Bytes     int64  `json:"bytes"`
}

// GC removes the working copies (with their caches and volumes) that are
// no longer needed: those of stopped sessions (a stop discards what was
// not accepted), of failed sessions and sessions stopped because their
// budget ran out that ended more than retainFailed ago,
// and leftovers no session owns. Live and completed sessions keep theirs.
func (s *Service) GC(ctx context.Context, now time.Time) ([]Collected, error) {
	retainFailed := s.RetainFailed
	out := []Collected{}
	owned := map[string]bool{}
	list, err := sessionsIn(ctx, s.Store, true, session.StatusStopped, session.StatusFailed)
	if err != nil {
		return out, err
	}
	for _, x := range list {
		owned[x.ID] = true
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
		if _, err := s.Store.DeleteCheckpoints(ctx, x.ID); err != nil {
			return out, fmt.Errorf("collect session %s's checkpoints: %w", x.ID, err)
		}
		if !s.Copies.exists(x) {
			continue
		}
		if err := s.Sealer.Seal(ctx, x.ID); err != nil {
			return out, fmt.Errorf("collect session %s: %w", x.ID, err)
		}
		used, _, _ := s.Copies.Usage(x)
		if err := s.Copies.Remove(ctx, x); err != nil {
			return out, fmt.Errorf("collect session %s's working copy: %w", x.ID, err)
		}
		out = append(out, Collected{SessionID: x.ID, Reason: reason, Bytes: used})
	}
	// Leftovers: a directory or volume whose session does not exist.
	for _, id := range s.Copies.ids() {
		if owned[id] {
			continue
		}
		if _, err := s.Store.GetSession(ctx, id); !errors.Is(err, store.ErrNotFound) {
			continue
		}
		x := session.Session{ID: id, Workdir: filepath.Join(s.Copies.WorkspaceDir, id)}
		if s.Copies.hasVolume(id) {
			x.Workdir = filepath.Join(s.Copies.Volumes.Path(id), "work")
		}
		used, _, _ := s.Copies.Usage(x)
		if err := s.Copies.Remove(ctx, x); err != nil {
			return out, err
		}
		out = append(out, Collected{SessionID: id, Reason: "no such session (a leftover)", Bytes: used})
	}
	return out, nil
}
