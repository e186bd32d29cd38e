// Package agency is what an agent does to its project's sessions through
// its tools: reads them (the sessions_* tools), starts and steers them
// (sessions_spawn, sessions_send) and hands them part of its task
// (delegate), always as the requester of the session it runs in, and
// never with more than that requester or that session may.
package agency

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/internal/access"
	"github.com/paddock-dev/paddock/internal/bound"
	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/engine"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/tool"
	"github.com/paddock-dev/paddock/internal/wire"
)

// Service is what agents reach of their project's sessions.
type Service struct {
	Store    store.Store
	Access   *access.Service
	Platform engine.Platform
	// Tools are the built-in tools (what a delegation may keep);
	// Defaults the server's session budget.
	Tools    tool.Set
	Defaults bound.Limits
	Now      func() time.Time
}

// For is what session from's agent sees of its project's sessions
// through the sessions_* tools, and what it does to them: the sessions of
// its own project, as its requester may read them there, and what its
// requester may start and steer there. Whatever the agent asks, nothing
// of another project is found, and an agent never acts for anyone but its
// session's requester.
func (s *Service) For(from session.Session) tool.Sessions {
	return peers{s: s, from: from}
}

type peers struct {
	s    *Service
	from session.Session
}

// may checks that the calling session's requester may still do a in its
// project: a person by their role there now (a revoked user, or one
// whose role was taken away, may do nothing); a trigger or the system,
// which started the session on the project's own configuration, only
// reads.
func (p peers) may(ctx context.Context, a identity.Action) error {
	r := p.from.CreatedBy.Requester()
	hidden := fmt.Sprintf("project %q", p.from.Project)
	if r.Kind != session.SenderOperator {
		if a == identity.Read {
			return nil
		}
		return fmt.Errorf("%w: session %s was started by %s, not a person; only a person's sessions start or steer others", errdefs.ErrDenied, p.from.ID, r)
	}
	who, err := p.s.Access.Principal(ctx, r.ID, "session:"+p.from.ID)
	if err != nil {
		return err
	}
	return p.s.Access.Allow(ctx, who, p.from.Project, a, hidden)
}

// session is session id (the calling one when empty) when the requester
// may do a on it: one of another project is not found.
func (p peers) session(ctx context.Context, id string, a identity.Action) (session.Session, error) {
	if id == "" {
		id = p.from.ID
	}
	notFound := fmt.Errorf("session %q: %w", clip.String(id, 64), errdefs.ErrNotFound)
	x, err := p.s.Store.GetSession(ctx, id)
	if errors.Is(err, errdefs.ErrNotFound) || err == nil && x.Project != p.from.Project {
		return session.Session{}, notFound
	}
	if err != nil {
		return x, err
	}
	if err := p.may(ctx, a); err != nil {
		if errors.Is(err, errdefs.ErrNotFound) {
			return session.Session{}, notFound
		}
		return session.Session{}, err
	}
	return x, nil
}

func summaryOf(x session.Session) tool.SessionSummary {
	return tool.SessionSummary{ID: x.ID, Agent: x.Agent, Status: string(x.Status), Phase: string(x.RuntimePhase), Archived: x.ArchivedAt != nil,
		Title: x.DisplayTitle, Ambient: x.AmbientStatus, Error: x.Error, StopReason: x.StopReason, CreatedBy: x.CreatedBy.String(),
		CreatedAt: x.CreatedAt, UpdatedAt: x.UpdatedAt}
}

func (p peers) Summary(ctx context.Context, id string) (tool.SessionSummary, error) {
	x, err := p.session(ctx, id, identity.Read)
	if err != nil {
		return tool.SessionSummary{}, err
	}
	out := summaryOf(x)
	c, err := durable.ConsumptionOf(ctx, p.s.Store, x, p.s.Now())
	if err != nil {
		return out, err
	}
	sp := specOf(x)
	out.Budget = bound.Summary(sp.Session.Limits(p.s.Defaults, x.SpendCapUSD), c)
	parks, err := p.s.Store.ListParks(ctx, x.ID, true)
	if err != nil {
		return out, err
	}
	for _, k := range parks {
		out.Parks = append(out.Parks, tool.ParkUse{Reason: k.Reason, Detail: k.Detail, Since: k.CreatedAt})
	}
	pending, err := p.s.Store.ListApprovals(ctx, session.ApprovalFilter{SessionID: x.ID, Status: session.ApprovalPending})
	for _, ap := range pending {
		out.Approvals = append(out.Approvals, tool.ApprovalUse{Tool: ap.Tool, Rule: ap.Rule, Since: ap.CreatedAt})
	}
	return out, err
}

func (p peers) Conversation(ctx context.Context, id string, after int64, limit int) ([]session.Event, error) {
	x, err := p.session(ctx, id, identity.Read)
	if err != nil {
		return nil, err
	}
	return p.s.Store.ListEvents(ctx, x.ID, after, limit)
}

// searchScan bounds how many of the project's sessions a search reads.
const searchScan = 5000

func (p peers) Search(ctx context.Context, q tool.SessionQuery) ([]tool.SessionSummary, error) {
	if err := p.may(ctx, identity.Read); err != nil {
		if errors.Is(err, errdefs.ErrNotFound) {
			return nil, nil // a project the requester lost: nothing
		}
		return nil, err
	}
	needle := strings.ToLower(q.Text)
	f := session.Filter{Project: p.from.Project, Agent: q.Agent, Status: q.Status, IncludeArchived: true, Limit: 200}
	var out []tool.SessionSummary
	for scanned := 0; scanned < searchScan && len(out) < q.Limit; {
		page, err := p.s.Store.ListSessions(ctx, f)
		if err != nil {
			return out, err
		}
		for _, x := range page {
			text := strings.ToLower(x.ID + "\n" + x.Agent + "\n" + x.DisplayTitle + "\n" + x.AmbientStatus + "\n" + x.Input)
			if strings.Contains(text, needle) && len(out) < q.Limit {
				out = append(out, summaryOf(x))
			}
		}
		scanned += len(page)
		if len(page) < f.Limit {
			break
		}
		f.Before = page[len(page)-1].ID
	}
	return out, nil
}

func (p peers) Tools(ctx context.Context, id string) ([]tool.ToolUse, error) {
	x, err := p.session(ctx, id, identity.Read)
	if err != nil {
		return nil, err
	}
	pol, err := policy.Pinned(x.Policy)
	if err != nil {
		return nil, err
	}
	sp := specOf(x)
	var out []tool.ToolUse
	use := func(name string) {
		v, _ := pol.Tool(name)
		out = append(out, tool.ToolUse{Name: name, Policy: v.Short()})
	}
	for _, n := range p.s.Tools.Only(sp.Tools).Names() {
		use(n)
	}
	for _, m := range sp.MCPServers {
		use("mcp__" + m.Name + "__*")
	}
	return out, nil
}

func (p peers) Triggers(ctx context.Context, id string) ([]tool.TriggerUse, error) {
	x, err := p.session(ctx, id, identity.Read)
	if err != nil {
		return nil, err
	}
	cmds, err := p.s.Store.ListCommands(ctx, x.ID)
	if err != nil {
		return nil, err
	}
	sp := specOf(x)
	out := []tool.TriggerUse{}
	for _, t := range sp.Triggers {
		u := tool.TriggerUse{Name: t.Name, Events: t.Events, Routing: t.Route(&sp)}
		for _, c := range cmds {
			if c.Sender.Kind == session.SenderTrigger && c.Sender.ID == t.Name {
				u.Deliveries++
			}
		}
		out = append(out, u)
	}
	return out, nil
}

func (p peers) Bindings(ctx context.Context, id string) (tool.Bindings, error) {
	x, err := p.session(ctx, id, identity.Read)
	if err != nil {
		return tool.Bindings{}, err
	}
	var out tool.Bindings
	if x.CreatedBy.Kind == session.SenderAgent {
		out.StartedBy = x.CreatedBy.ID
	}
	started, err := store.Started(ctx, p.s.Store, x)
	if err != nil {
		return out, err
	}
	for _, y := range started {
		out.Started = append(out.Started, y.ID)
	}
	if out.PullRequests, err = p.s.Store.Bindings(ctx, x.ID); err != nil {
		return out, err
	}
	sp := specOf(x)
	if !x.Status.Terminal() {
		for _, t := range sp.Triggers {
			if t.Route(&sp) == spec.RouteSession {
				out.Routed = append(out.Routed, t.Name)
			}
		}
	}
	return out, nil
}

func (p peers) Commands(ctx context.Context, id string, limit int) ([]session.Command, error) {
	x, err := p.session(ctx, id, identity.Read)
	if err != nil {
		return nil, err
	}
	cmds, err := p.s.Store.ListCommands(ctx, x.ID)
	if len(cmds) > limit {
		cmds = cmds[len(cmds)-limit:]
	}
	return cmds, err
}

// by is the calling session's agent acting for its requester.
func (p peers) by() session.Sender {
	r := p.from.CreatedBy.Requester()
	return session.Sender{Kind: session.SenderAgent, ID: p.from.ID, OnBehalfOf: &r}
}

func (p peers) Spawn(ctx context.Context, agent, message, call string) (session.Session, error) {
	if parent, _ := p.from.Delegated(); parent != "" {
		// Its budget, policy and depth are its delegating session's
		// share: a session it spawned would have none of those bounds.
		return session.Session{}, fmt.Errorf("%w: a delegated session does not spawn sessions; session %s, which delegated your task, can", errdefs.ErrInvalid, parent)
	}
	if err := p.may(ctx, identity.Start); err != nil {
		return session.Session{}, err
	}
	// The same repository and the same people: the agent names neither a
	// path on the host nor someone to act for.
	req := wire.CreateRequest{Project: p.from.Project, Agent: agent, Message: message, Repo: p.from.Repo, IdempotencyKey: "spawn/" + call,
		NonInteractive: !p.from.Interactive, Approver: p.from.Approver}
	by := p.by()
	by.Via = session.ViaSpawn + call
	return p.s.Platform.Create(ctx, req, by, nil)
}

func (p peers) Send(ctx context.Context, id, message, call string) (session.Command, error) {
	if id == p.from.ID {
		return session.Command{}, fmt.Errorf("%w: session %s is your own; say it in your turn instead", errdefs.ErrInvalid, id)
	}
	x, err := p.session(ctx, id, identity.Steer)
	if err != nil {
		return session.Command{}, err
	}
	payload, _ := json.Marshal(session.MessagePayload{Message: message})
	return p.s.Platform.Send(ctx, x.ID, wire.SendRequest{Kind: session.KindMessage, Payload: payload, IdempotencyKey: "send/" + call}, p.by())
}

// specOf is a session's agent spec as snapshotted (the defaults when it
// does not read).
func specOf(x session.Session) spec.Agent {
	var sp spec.Agent
	_ = json.Unmarshal(x.AgentSpec, &sp)
	return sp
}
