package durable

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store"
)

// SweepEvery is how often the sweeper runs.
const SweepEvery = 10 * time.Minute

// Swept is what one sweep did.
type Swept struct {
	Archived []string `json:"archived,omitempty"`
	Repaired []string `json:"repaired,omitempty"`
	// Expired counts audit contents deleted at the end of their retention.
	Expired int64 `json:"expired,omitempty"`
	// Unpublished says why the audit checkpoint was not published
	// everywhere (a witness down or refusing); the sweep goes on.
	Unpublished string `json:"unpublished,omitempty"`
}

// sweeper is who archives inactive sessions.
var sweeper = session.Sender{Kind: session.SenderSystem, ID: "sweeper"}

// Sweep deletes audit content whose retention is over, archives awaiting sessions inactive for longer than their agent's
// session.archiveAfterInactive (skipping any with active commands or
// turns, or held), and repairs queued or running rows with no active work
// back to awaiting.
func (a Lifecycle) Sweep(ctx context.Context) (Swept, error) {
	var out Swept
	n, err := a.Store.ExpireAuditContent(ctx, a.Now())
	if err != nil {
		return out, err
	}
	out.Expired = n
	// The tree's head is published every sweep, so a history rewritten
	// later is caught by a checkpoint published before.
	if _, err := a.Sealer.Publish(ctx); err != nil {
		out.Unpublished = err.Error() // the sweep's result, in the workflow's history
	}
	list, err := store.AllSessions(ctx, a.Store, session.Filter{Statuses: []session.Status{session.StatusQueued, session.StatusRunning, session.StatusAwaiting}})
	if err != nil {
		return out, err
	}
	for _, x := range list {
		if x.Held() {
			continue
		}
		if x.Status != session.StatusAwaiting {
			// A row is stale only when its status has not moved for a
			// while: work that just started is left alone.
			if a.Now().Sub(x.UpdatedAt) < SweepEvery {
				continue
			}
			if _, parked := a.parked(ctx, x.ID); parked {
				continue // waiting on someone (a start approval, say), not stale
			}
			ok, err := a.Store.Repair(ctx, x.ID)
			if err != nil {
				return out, err
			}
			if ok {
				out.Repaired = append(out.Repaired, x.ID)
			}
			continue
		}
		var sp struct {
			Session struct {
				ArchiveAfterInactive string `json:"archiveAfterInactive"`
			} `json:"session"`
		}
		_ = json.Unmarshal(x.AgentSpec, &sp)
		after, err := time.ParseDuration(sp.Session.ArchiveAfterInactive)
		if err != nil || after <= 0 || a.Now().Sub(x.UpdatedAt) < after {
			continue
		}
		if active, err := a.activeWork(ctx, x.ID); err != nil || active {
			continue
		}
		if _, parked := a.parked(ctx, x.ID); parked {
			continue // it waits on someone: not done
		}
		var held *session.HeldError
		if err := a.Store.Archive(ctx, x.ID, sweeper, ""); errors.As(err, &held) {
			continue // bound to an open pull request: it waits on the forge
		} else if err != nil {
			return out, err
		}
		out.Archived = append(out.Archived, x.ID)
	}
	return out, nil
}

// activeWork says whether a session has a command or a turn in flight.
func (a *Activities) activeWork(ctx context.Context, id string) (bool, error) {
	cmds, err := a.Store.ListCommands(ctx, id)
	if err != nil {
		return false, err
	}
	for _, c := range cmds {
		if c.State == session.CommandPending || c.State == session.CommandDispatching {
			return true, nil
		}
	}
	turns, err := a.Store.ListTurns(ctx, id)
	if err != nil {
		return false, err
	}
	for _, t := range turns {
		if !t.Status.Settled() {
			return true, nil
		}
	}
	return false, nil
}
