package agency

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/internal/bound"
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

// MaxDelegationDepth bounds how deep delegations nest: a session's
// delegated session may delegate once more, and that one no further.
// MaxDelegations bounds how many of a session's delegations work at once.
const (
	MaxDelegationDepth = 2
	MaxDelegations     = 4
)

// Delegate starts the session that does task d for the calling one. It
// runs the calling session's agent narrowed: only tools the calling
// session has (and that its policy does not exclude), a policy that is
// its pinned one tightened by what d asks, a budget carved from what it
// has left, the same requester, identity and credentials; its working
// copy is the calling session's as it is now, and its changes go back
// there, not to the person.
func (p peers) Delegate(ctx context.Context, d tool.Delegation, call string) (session.Session, error) {
	from := p.from
	r := from.CreatedBy.Requester()
	if r.Kind == session.SenderOperator {
		if err := p.may(ctx, identity.Start); err != nil {
			return session.Session{}, err
		}
	}
	depth, err := p.depth(ctx)
	if err != nil {
		return session.Session{}, err
	}
	if depth >= MaxDelegationDepth {
		return session.Session{}, fmt.Errorf("%w: this session is %d delegations deep, the most there may be: do the task yourself", errdefs.ErrInvalid, depth)
	}
	floor, err := policy.Pinned(from.Policy)
	if err != nil {
		return session.Session{}, err
	}
	sp := specOf(from)
	child, err := narrowed(sp, floor, p.s.Tools, d, depth+1 < MaxDelegationDepth)
	if err != nil {
		return session.Session{}, err
	}
	limits, err := p.carve(ctx, sp, d.Budget, call)
	if err != nil {
		return session.Session{}, err
	}
	child.Session.MaxActions, child.Session.MaxTokens = limits.Actions, limits.Tokens
	child.Session.MaxMinutes = int(limits.Active / time.Minute)
	if limits.Active > 0 && child.Session.MaxMinutes < 1 {
		return session.Session{}, fmt.Errorf("%w: less than a minute of active time is left to delegate", errdefs.ErrInvalid)
	}
	none := 0
	child.Session.MaxExtensions = &none
	child.MaxPerSessionUSD = limits.SpendUSD
	creds, err := p.s.Store.Credentials(ctx, from.ID)
	if err != nil {
		return session.Session{}, err
	}
	if len(creds) > 0 {
		child.Identity = spec.IdentityRequester // the values come with it; nothing is adopted again
	}
	by := session.Sender{Kind: session.SenderAgent, ID: from.ID, Via: session.ViaDelegate + call, OnBehalfOf: &r}
	req := wire.CreateRequest{Project: from.Project, Message: d.Task, IdempotencyKey: "delegate/" + call, Policy: d.Policy,
		NonInteractive: !from.Interactive, Approver: from.Approver}
	return p.s.Platform.Create(ctx, req, by, &engine.Child{Spec: child, Floor: floor, From: from, Credentials: creds})
}

// depth is how many delegations the calling session is from a session
// nobody delegated.
func (p peers) depth(ctx context.Context) (int, error) {
	n, cur := 0, p.from
	for {
		parent, _ := cur.Delegated()
		if parent == "" {
			return n, nil
		}
		n++
		if n > MaxDelegationDepth {
			return n, nil
		}
		next, err := p.s.Store.GetSession(ctx, parent)
		if err != nil {
			return n, err
		}
		cur = next
	}
}

// narrowed is the agent a delegated session runs: sp with the tools d
// keeps of those sp has and floor does not exclude (delegate itself only
// when the delegated session may delegate again; never sessions_spawn,
// a way out of the tree), a model of the same provider, and nothing that
// makes it a singleton, a trigger's target or a pool. Its tool list is
// never empty: an empty list means every tool.
func narrowed(sp spec.Agent, floor *policy.Policy, all tool.Set, d tool.Delegation, mayDelegate bool) (spec.Agent, error) {
	var have []string
	for _, n := range all.Only(sp.Tools).Names() {
		if v, _ := floor.Tool(n); v != policy.Disabled && (n != tool.Delegate || mayDelegate) && n != tool.SessionsSpawn {
			have = append(have, n)
		}
	}
	if len(have) == 0 {
		return spec.Agent{}, fmt.Errorf("%w: you have no built-in tool to give a delegated session", errdefs.ErrInvalid)
	}
	servers := map[string]bool{}
	for _, m := range sp.MCPServers {
		servers[m.Name] = true
	}
	keep := have
	if len(d.Tools) > 0 {
		keep = nil
		wantServers := map[string]bool{}
		for _, n := range d.Tools {
			if name, ok := strings.CutPrefix(n, "mcp__"); ok {
				server, _, _ := strings.Cut(name, "__")
				if !servers[server] {
					return spec.Agent{}, fmt.Errorf("%w: tool %q: you have no MCP server %q", errdefs.ErrInvalid, n, server)
				}
				wantServers[server] = true
				continue
			}
			if !slices.Contains(have, n) {
				return spec.Agent{}, fmt.Errorf("%w: tool %q is not one of yours to give (you have %s)", errdefs.ErrInvalid, n, strings.Join(have, ", "))
			}
			keep = append(keep, n)
		}
		servers = wantServers
		if len(keep) == 0 {
			return spec.Agent{}, fmt.Errorf("%w: tools: name at least one built-in tool of yours (you have %s)", errdefs.ErrInvalid, strings.Join(have, ", "))
		}
	}
	c := sp
	c.Tools = keep
	c.MCPServers = nil
	for _, m := range sp.MCPServers {
		if servers[m.Name] {
			c.MCPServers = append(c.MCPServers, m)
		}
	}
	if d.Model != "" {
		// The copy goes to no provider the agent does not already use.
		theirs, _, _ := strings.Cut(sp.Model, "/")
		if p, _, _ := strings.Cut(d.Model, "/"); p != theirs && !slices.Contains(sp.FallbackModels, d.Model) {
			return spec.Agent{}, fmt.Errorf("%w: model %q: a delegated session uses a model of your provider (%s/…) or one of your fallbacks", errdefs.ErrInvalid, d.Model, theirs)
		}
		c.Model = d.Model
		c.FallbackModels = nil
	}
	c.Triggers, c.Concurrency, c.Replace, c.InitialPrompt, c.OnReplace = nil, 0, "manual", "", ""
	return c, nil
}

// carve is the budget of a delegation from the calling session: what was
// asked, within what it has left once what its live delegations hold is
// taken off.
func (p peers) carve(ctx context.Context, sp spec.Agent, asked *tool.Budget, call string) (bound.Limits, error) {
	from := p.from
	used, err := durable.ConsumptionOf(ctx, p.s.Store, from, p.s.Now())
	if err != nil {
		return bound.Limits{}, err
	}
	started, err := store.Started(ctx, p.s.Store, from)
	if err != nil {
		return bound.Limits{}, err
	}
	charged, err := p.s.Store.EventsByKey(ctx, from.ID, durable.BudgetPrefix+durable.DelegatedKey)
	if err != nil {
		return bound.Limits{}, err
	}
	collected := map[string]bool{}
	for _, e := range charged {
		collected[strings.TrimPrefix(e.Key, durable.BudgetPrefix+durable.DelegatedKey)] = true
	}
	// What its delegations not yet collected hold: a live one all it may
	// use, an ended one what it used (not yet charged to this session).
	var held bound.Limits
	n := 0
	for _, y := range started {
		parent, by := y.Delegated()
		// (One this very call made, before a crash, is its own: the
		// create returns it again.)
		if parent != from.ID || by == call || collected[by] {
			continue
		}
		if !y.Status.Terminal() {
			held = held.Add(specOf(y).Session.Limits(p.s.Defaults, y.SpendCapUSD))
			n++
			continue
		}
		c, err := durable.ConsumptionOf(ctx, p.s.Store, y, p.s.Now())
		if err != nil {
			return bound.Limits{}, err
		}
		held = held.Add(bound.Limits{Actions: c.Actions, Active: c.Active, Tokens: c.Tokens, SpendUSD: c.SpendUSD})
	}
	if n >= MaxDelegations {
		return bound.Limits{}, fmt.Errorf("%w: %d delegations of this session still work, the most at once: wait for their reports", errdefs.ErrInvalid, n)
	}
	var want bound.Limits
	if asked != nil {
		want = bound.Limits{Actions: asked.Actions, Active: time.Duration(asked.Minutes) * time.Minute, Tokens: asked.Tokens, SpendUSD: asked.SpendUSD}
	}
	l, err := bound.Carve(sp.Session.Limits(p.s.Defaults, from.SpendCapUSD), used, held, want)
	if errors.Is(err, bound.ErrNothingLeft) {
		return l, fmt.Errorf("%w: %w (this session %s)", errdefs.ErrInvalid, err, bound.Summary(sp.Session.Limits(p.s.Defaults, from.SpendCapUSD), used))
	}
	return l, err
}
