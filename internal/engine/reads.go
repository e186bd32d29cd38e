package engine

import (
	"context"
	"encoding/json"
	"fmt"

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

// SessionFor is session id when p may do a on it.
func (s *Service) SessionFor(ctx context.Context, p identity.Principal, id string, a identity.Action) (session.Session, error) {
	x, err := s.Store.GetSession(ctx, id)
	if err != nil {
		return session.Session{}, err
	}
	if err := s.Access.Allow(ctx, p, x.Project, a, fmt.Sprintf("session %q", id)); err != nil {
		return session.Session{}, err
	}
	return x, nil
}

// Session is session id, when p may read it.
func (s *Service) Session(ctx context.Context, p identity.Principal, id string) (session.Session, error) {
	return s.SessionFor(ctx, p, id, identity.Read)
}

// ApprovalFor is approval id and its session when p may do a on them.
func (s *Service) ApprovalFor(ctx context.Context, p identity.Principal, id string, a identity.Action) (session.Approval, session.Session, error) {
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

// scoped narrows a list to the projects p may do a in.
func (s *Service) scoped(ctx context.Context, p identity.Principal, a identity.Action) (within []string, scoped bool, err error) {
	within, all, err := s.Access.Readable(ctx, p, a)
	return within, !all, err
}

// Sessions lists the sessions f matches among those p may read, newest
// first, one page at a time (f.Before: the cursor).
func (s *Service) Sessions(ctx context.Context, p identity.Principal, f session.Filter) ([]session.Session, error) {
	if f.Status != "" && !f.Status.Valid() {
		return nil, fmt.Errorf("%w: status %q: want queued, running, awaiting, failed or stopped", errdefs.ErrInvalid, f.Status)
	}
	if f.Agent != "" && !spec.ValidName(f.Agent) {
		return nil, fmt.Errorf("%w: agent %q: want 1-63 lowercase letters, digits and dashes", errdefs.ErrInvalid, f.Agent)
	}
	if f.Limit < 0 {
		return nil, fmt.Errorf("%w: limit %d: want a positive number", errdefs.ErrInvalid, f.Limit)
	}
	var err error
	if f.Within, f.Scoped, err = s.scoped(ctx, p, identity.Read); err != nil {
		return nil, err
	}
	return s.Store.ListSessions(ctx, f)
}

// Approvals lists the approvals f matches among those of the projects
// where p may do a (identity.Read for a list, identity.Approve for an
// inbox).
func (s *Service) Approvals(ctx context.Context, p identity.Principal, a identity.Action, f session.ApprovalFilter) ([]session.Approval, error) {
	if f.Status != "" && !f.Status.Valid() {
		return nil, fmt.Errorf("%w: status %q: want pending, approved, rejected or expired", errdefs.ErrInvalid, f.Status)
	}
	var err error
	if f.Within, f.Scoped, err = s.scoped(ctx, p, a); err != nil {
		return nil, err
	}
	return s.Store.ListApprovals(ctx, f)
}

// Commands lists session id's commands.
func (s *Service) Commands(ctx context.Context, p identity.Principal, id string) ([]session.Command, error) {
	if _, err := s.Session(ctx, p, id); err != nil {
		return nil, err
	}
	return s.Store.ListCommands(ctx, id)
}

// Turns lists session id's turns.
func (s *Service) Turns(ctx context.Context, p identity.Principal, id string) ([]session.Turn, error) {
	if _, err := s.Session(ctx, p, id); err != nil {
		return nil, err
	}
	return s.Store.ListTurns(ctx, id)
}

// Usage sums session id's usage, in all and per turn.
func (s *Service) Usage(ctx context.Context, p identity.Principal, id string) (session.SessionUsage, error) {
	if _, err := s.Session(ctx, p, id); err != nil {
		return session.SessionUsage{}, err
	}
	return s.Store.SessionUsage(ctx, id)
}

// Disk is how much of its disk budget session id's copy uses (budget 0:
// no volume of its own).
func (s *Service) Disk(ctx context.Context, p identity.Principal, id string) (used, budget int64, err error) {
	x, err := s.Session(ctx, p, id)
	if err != nil {
		return 0, 0, err
	}
	return s.Copies.Usage(x)
}

// Steps lists the states session id's copy went through.
func (s *Service) Steps(ctx context.Context, p identity.Principal, id string) ([]session.Step, error) {
	if _, err := s.Session(ctx, p, id); err != nil {
		return nil, err
	}
	return s.Store.Steps(ctx, id)
}

// LastStep is the latest state of session id's copy (errdefs.ErrNotFound:
// none recorded).
func (s *Service) LastStep(ctx context.Context, p identity.Principal, id string) (session.Step, error) {
	if _, err := s.Session(ctx, p, id); err != nil {
		return session.Step{}, err
	}
	return s.Store.LastStep(ctx, id)
}

// Parks lists session id's parks, newest first (open: only those still
// waiting).
func (s *Service) Parks(ctx context.Context, p identity.Principal, id string, open bool) ([]session.Park, error) {
	if _, err := s.Session(ctx, p, id); err != nil {
		return nil, err
	}
	return s.Store.ListParks(ctx, id, open)
}

// Events lists session id's transcript after seq after (limit 0: all).
func (s *Service) Events(ctx context.Context, p identity.Principal, id string, after int64, limit int) ([]session.Event, error) {
	if _, err := s.Session(ctx, p, id); err != nil {
		return nil, err
	}
	return s.Store.ListEvents(ctx, id, after, limit)
}

// OpenQuestion is the question session id waits on an answer to (nil:
// none).
func (s *Service) OpenQuestion(ctx context.Context, p identity.Principal, id string) (*session.Question, error) {
	if _, err := s.Session(ctx, p, id); err != nil {
		return nil, err
	}
	return s.openQuestion(ctx, id)
}

// Subscribe returns a channel that receives after any new event of
// session id (see store.Store.Subscribe); cancel ends it.
func (s *Service) Subscribe(ctx context.Context, p identity.Principal, id string) (<-chan struct{}, func(), error) {
	if _, err := s.Session(ctx, p, id); err != nil {
		return nil, nil, err
	}
	ch, cancel := s.Store.Subscribe(id)
	return ch, cancel, nil
}

// Agents lists project's agents, when p may read it.
func (s *Service) Agents(ctx context.Context, p identity.Principal, project string) ([]spec.Record, error) {
	if err := s.Access.Allow(ctx, p, project, identity.Read, fmt.Sprintf("project %q", project)); err != nil {
		return nil, err
	}
	return s.Store.ListAgents(ctx, project)
}

// Agent is project's agent name, when p may read the project.
func (s *Service) Agent(ctx context.Context, p identity.Principal, project, name string) (spec.Record, error) {
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

// AllSessions lists every session f matches among those p may read,
// however many (see store.AllSessions): for work over the whole set.
func (s *Service) AllSessions(ctx context.Context, p identity.Principal, f session.Filter) ([]session.Session, error) {
	var err error
	if f.Within, f.Scoped, err = s.scoped(ctx, p, identity.Read); err != nil {
		return nil, err
	}
	return store.AllSessions(ctx, s.Store, f)
}
