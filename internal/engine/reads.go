package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
)

// The reads of the core. Each takes the caller and checks what it may see
// here, whatever transport asked: a session, approval or agent of a
// project the caller has no role in is not found, worded as one that does
// not exist; lists hold only what the caller may read.

// For is session id when p may do a on it.
func (s Sessions) For(ctx context.Context, p identity.Principal, id string, a identity.Action) (session.Session, error) {
	x, err := s.Store.GetSession(ctx, id)
	if err != nil {
		return session.Session{}, err
	}
	if err := s.Access.Allow(ctx, p, x.Project, a, fmt.Sprintf("session %q", id)); err != nil {
		return session.Session{}, err
	}
	return x, nil
}

// Get is session id, when p may read it.
func (s Sessions) Get(ctx context.Context, p identity.Principal, id string) (session.Session, error) {
	return s.Sessions().For(ctx, p, id, identity.Read)
}

// ApprovalFor is approval id and its session when p may do a on them.
func (s Gates) ApprovalFor(ctx context.Context, p identity.Principal, id string, a identity.Action) (session.Approval, session.Session, error) {
	ap, err := s.Store.GetApproval(ctx, id)
	if err != nil {
		return ap, session.Session{}, err
	}
	x, err := s.Store.GetSession(ctx, ap.SessionID)
	if err != nil {
		return ap, x, err
	}
	if err := s.Access.Allow(ctx, p, x.Project, a, fmt.Sprintf("approval %q", id)); err != nil {
		return session.Approval{}, session.Session{}, err
	}
	return ap, x, nil
}

// List lists the sessions f matches among those p may read, newest
// first, one page at a time (f.Before: the cursor).
func (s Sessions) List(ctx context.Context, p identity.Principal, f session.Filter) ([]session.Session, error) {
	if f.Status != "" && !f.Status.Valid() {
		return nil, fmt.Errorf("%w: status %q: want queued, running, awaiting, failed or stopped", errdefs.ErrInvalid, f.Status)
	}
	if f.Agent != "" {
		if err := identity.CheckName(identity.AgentName, f.Agent); err != nil {
			return nil, err
		}
	}
	if f.Limit < 0 {
		return nil, fmt.Errorf("%w: limit %d: want a positive number", errdefs.ErrInvalid, f.Limit)
	}
	var err error
	if f.Within, f.Scoped, err = s.Access.Readable(ctx, p, identity.Read); err != nil {
		return nil, err
	}
	return s.Store.ListSessions(ctx, f)
}

// Approvals lists the approvals f matches among those of the projects
// where p may do a (identity.Read for a list, identity.Approve for an
// inbox).
func (s Gates) Approvals(ctx context.Context, p identity.Principal, a identity.Action, f session.ApprovalFilter) ([]session.Approval, error) {
	if f.Status != "" && !f.Status.Valid() {
		return nil, fmt.Errorf("%w: status %q: want pending, approved, rejected or expired", errdefs.ErrInvalid, clip.String(string(f.Status), 40))
	}
	var err error
	if f.Within, f.Scoped, err = s.Access.Readable(ctx, p, a); err != nil {
		return nil, err
	}
	return s.Store.ListApprovals(ctx, f)
}

// Commands lists session id's commands.
func (s Sessions) Commands(ctx context.Context, p identity.Principal, id string) ([]session.Command, error) {
	if _, err := s.Sessions().Get(ctx, p, id); err != nil {
		return nil, err
	}
	return s.Store.ListCommands(ctx, id)
}

// Turns lists session id's turns.
func (s Sessions) Turns(ctx context.Context, p identity.Principal, id string) ([]session.Turn, error) {
	if _, err := s.Sessions().Get(ctx, p, id); err != nil {
		return nil, err
	}
	return s.Store.ListTurns(ctx, id)
}

// Usage sums session id's usage, in all and per turn.
func (s Sessions) Usage(ctx context.Context, p identity.Principal, id string) (session.SessionUsage, error) {
	if _, err := s.Sessions().Get(ctx, p, id); err != nil {
		return session.SessionUsage{}, err
	}
	return s.Store.SessionUsage(ctx, id)
}

// Costs is what each of sessions (the rows of a list) has cost so far,
// for those p may read: their projects are checked once, not per row.
func (s Sessions) Costs(ctx context.Context, p identity.Principal, sessions []session.Session) (map[string]float64, error) {
	within, scoped, err := s.Access.Readable(ctx, p, identity.Read)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, x := range sessions {
		if scoped && !slices.Contains(within, x.Project) {
			continue
		}
		if u, err := s.Store.SessionUsage(ctx, x.ID); err == nil {
			out[x.ID] = u.CostUSD
		}
	}
	return out, nil
}

// Disk is how much of its disk budget session id's copy uses (budget 0:
// no volume of its own).
func (s Sessions) Disk(ctx context.Context, p identity.Principal, id string) (used, budget int64, err error) {
	x, err := s.Sessions().Get(ctx, p, id)
	if err != nil {
		return 0, 0, err
	}
	return s.Copies.Usage(x)
}

// Steps lists the states session id's copy went through.
func (s Review) Steps(ctx context.Context, p identity.Principal, id string) ([]session.Step, error) {
	if _, err := s.Sessions().Get(ctx, p, id); err != nil {
		return nil, err
	}
	return s.Store.Steps(ctx, id)
}

// LastStep is the latest state of session id's copy (errdefs.ErrNotFound:
// none recorded).
func (s Review) LastStep(ctx context.Context, p identity.Principal, id string) (session.Step, error) {
	if _, err := s.Sessions().Get(ctx, p, id); err != nil {
		return session.Step{}, err
	}
	return s.Store.LastStep(ctx, id)
}

// Parks lists session id's parks, newest first (open: only those still
// waiting).
func (s Gates) Parks(ctx context.Context, p identity.Principal, id string, open bool) ([]session.Park, error) {
	if _, err := s.Sessions().Get(ctx, p, id); err != nil {
		return nil, err
	}
	return s.Store.ListParks(ctx, id, open)
}

// Transcript is session id's transcript as p reads it: p is checked once,
// here. A reader that stays open (a stream) checks its caller again
// itself, every few seconds, as the API does.
func (s Sessions) Transcript(ctx context.Context, p identity.Principal, id string) (*Transcript, error) {
	if _, err := s.Sessions().Get(ctx, p, id); err != nil {
		return nil, err
	}
	return &Transcript{s: s.Service, id: id}, nil
}

// Transcript reads one session's transcript for a caller already checked.
type Transcript struct {
	s  *Service
	id string
}

// After lists the events after seq after (limit 0: all).
func (t *Transcript) After(ctx context.Context, after int64, limit int) ([]session.Event, error) {
	return t.s.Store.ListEvents(ctx, t.id, after, limit)
}

// Subscribe returns a channel that receives after any new event (see
// store.Store.Subscribe); cancel ends it.
func (t *Transcript) Subscribe() (<-chan struct{}, func()) {
	return t.s.Store.Subscribe(t.id)
}

// Ended says whether the session has ended.
func (t *Transcript) Ended(ctx context.Context) (bool, error) {
	x, err := t.s.Store.GetSession(ctx, t.id)
	return err == nil && x.Status.Terminal(), err
}

// OpenQuestion is the question session id waits on an answer to (nil:
// none).
func (s Sessions) OpenQuestion(ctx context.Context, p identity.Principal, id string) (*session.Question, error) {
	if _, err := s.Sessions().Get(ctx, p, id); err != nil {
		return nil, err
	}
	return s.openQuestion(ctx, id)
}

// Agents lists project's agents, when p may read it.
func (s Projects) Agents(ctx context.Context, p identity.Principal, project string) ([]spec.Record, error) {
	if err := s.Access.Allow(ctx, p, project, identity.Read, fmt.Sprintf("project %q", project)); err != nil {
		return nil, err
	}
	return s.Store.ListAgents(ctx, project)
}

// Agent is project's agent name, when p may read the project.
func (s Projects) Agent(ctx context.Context, p identity.Principal, project, name string) (spec.Record, error) {
	if err := s.Access.Allow(ctx, p, project, identity.Read, fmt.Sprintf("project %q", project)); err != nil {
		return spec.Record{}, err
	}
	return s.Store.GetAgent(ctx, project, name)
}

// openQuestion is the last question session id asked, unless answered.
func (s *Service) openQuestion(ctx context.Context, id string) (*session.Question, error) {
	qs, err := s.Store.EventsByKey(ctx, id, "question/")
	if err != nil || len(qs) == 0 {
		return nil, err
	}
	var q session.Question
	if err := json.Unmarshal(qs[len(qs)-1].Data, &q); err != nil {
		return nil, nil // not a question this server wrote: none to show
	}
	answered, err := s.Store.EventsByKey(ctx, id, "answer/"+q.ToolCallID)
	if err != nil {
		return nil, err
	}
	for _, e := range answered {
		if e.Key == "answer/"+q.ToolCallID {
			return nil, nil
		}
	}
	return &q, nil
}

// All lists every session f matches among those p may read,
// however many (see store.AllSessions): for work over the whole set.
func (s Sessions) All(ctx context.Context, p identity.Principal, f session.Filter) ([]session.Session, error) {
	var err error
	if f.Within, f.Scoped, err = s.Access.Readable(ctx, p, identity.Read); err != nil {
		return nil, err
	}
	return store.AllSessions(ctx, s.Store, f)
}

// Started are the sessions session id's agent started (delegated or
// spawned), newest first, when p may read id.
func (s Sessions) Started(ctx context.Context, p identity.Principal, id string) ([]session.Session, error) {
	x, err := s.Sessions().Get(ctx, p, id)
	if err != nil {
		return nil, err
	}
	return store.Started(ctx, s.Store, x)
}
