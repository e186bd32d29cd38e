package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/wire"
	"github.com/paddock-dev/paddock/internal/workflows"
)

// routedRefused records a delivery refused for good.
const routedRefused = "refused"

// findTrigger finds the agent of project declaring trigger name.
func (s *Service) findTrigger(ctx context.Context, project, name string) (spec.Agent, spec.TriggerSpec, error) {
	agents, err := s.Store.ListAgents(ctx, project)
	if err != nil {
		return spec.Agent{}, spec.TriggerSpec{}, err
	}
	for _, a := range agents {
		var sp spec.Agent
		if a.Project != project || json.Unmarshal(a.Spec, &sp) != nil {
			continue
		}
		for _, t := range sp.Triggers {
			if t.Name == name {
				sp.Defaults()
				return sp, t, nil
			}
		}
	}
	return spec.Agent{}, spec.TriggerSpec{}, fmt.Errorf("trigger %q: %w", durable.TriggerRef(project, name), errdefs.ErrNotFound)
}

// checkTriggers refuses agents whose trigger names another agent of the
// same project already uses: a delivery must reach exactly one.
func (s *Service) checkTriggers(ctx context.Context, agents []spec.Agent) error {
	type agent struct{ project, name string }
	owner := map[string]agent{}
	listed := map[string]bool{}
	for _, a := range agents {
		if !listed[a.Project] {
			listed[a.Project] = true
			existing, err := s.Store.ListAgents(ctx, a.Project)
			if err != nil {
				return err
			}
			for _, e := range existing {
				var sp spec.Agent
				if e.Project == a.Project && json.Unmarshal(e.Spec, &sp) == nil {
					for _, t := range sp.Triggers {
						owner[durable.TriggerRef(e.Project, t.Name)] = agent{e.Project, e.Name}
					}
				}
			}
		}
		for _, t := range a.Triggers {
			ref := durable.TriggerRef(a.Project, t.Name)
			if o, ok := owner[ref]; ok && o != (agent{a.Project, a.Name}) {
				return fmt.Errorf("%w: agent %s: trigger %q is already agent %s's in project %s: choose another name", errdefs.ErrInvalid, a.Name, t.Name, o.name, o.project)
			}
			owner[ref] = agent{a.Project, a.Name}
		}
	}
	return nil
}

// Trigger delivers an event (already authenticated) to the trigger's
// agent: a new session (spawn), its live session (session routing), the
// live sessions bound to the pull request it names (bound routing),
// where it waits in the held lane and flushes with the deliveries around
// it (see bound.FlushAt). key identifies the delivery: a retried or
// replayed delivery lands once, and is answered as the first time.
func (s Sessions) Trigger(ctx context.Context, project, name, event, key string, payload any) (wire.TriggerResult, error) {
	ref := durable.TriggerRef(project, name)
	if seen, err := s.Store.Delivery(ctx, ref, key); err == nil {
		var res wire.TriggerResult
		if err := json.Unmarshal(seen, &res); err != nil {
			return res, fmt.Errorf("delivery %s of trigger %s: its record: %w", key, ref, err)
		}
		if res.Routed == routedRefused {
			return wire.TriggerResult{}, fmt.Errorf("%w: this delivery was refused before: %s", errdefs.ErrInvalid, res.Error)
		}
		return res, nil
	} else if !errors.Is(err, errdefs.ErrNotFound) {
		return wire.TriggerResult{}, err
	}
	res, err := s.deliver(ctx, project, name, event, key, payload)
	if errors.Is(err, errdefs.ErrInvalid) {
		// Refused for good (its message does not render, its repository
		// is refused): so is every replay of it, under any event kind.
		record, _ := json.Marshal(wire.TriggerResult{Routed: routedRefused, Error: err.Error()})
		return res, errors.Join(err, s.Store.RecordDelivery(ctx, ref, key, record))
	}
	if err != nil {
		return res, err
	}
	record, _ := json.Marshal(res)
	return res, s.Store.RecordDelivery(ctx, ref, key, record)
}

// deliver is Trigger for a delivery not seen before.
func (s *Service) deliver(ctx context.Context, project, name, event, key string, payload any) (wire.TriggerResult, error) {
	ref := durable.TriggerRef(project, name)
	sp, t, err := s.findTrigger(ctx, project, name)
	if err != nil {
		return wire.TriggerResult{}, err
	}
	if len(t.Events) > 0 && !slices.Contains(t.Events, event) {
		return wire.TriggerResult{Routed: "ignored"}, nil
	}
	if (t.Release || t.Route(&sp) == spec.RouteBound) && s.Remotes == nil {
		return wire.TriggerResult{}, fmt.Errorf("%w: trigger %s follows pull requests' bindings, but this server takes no remote repositories", errdefs.ErrInvalid, ref)
	}
	if t.Release {
		n, err := s.Remotes.Release(ctx, project, t, payload, session.Sender{Kind: session.SenderTrigger, ID: name})
		if err != nil {
			return wire.TriggerResult{}, err
		}
		return wire.TriggerResult{Routed: "released", Released: n}, nil
	}
	text, err := t.Render(event, payload)
	if err != nil {
		return wire.TriggerResult{}, fmt.Errorf("%w: trigger %s: rendering its message: %w", errdefs.ErrInvalid, ref, err)
	}
	if strings.TrimSpace(text) == "" {
		text = fmt.Sprintf("Event %s arrived through trigger %s.", event, name)
	}
	by := session.Sender{Kind: session.SenderTrigger, ID: name}
	d := session.Delivery{Trigger: name, Event: event, Key: key, Message: text, At: s.now().UTC()}
	route := func(sessionID string) (wire.TriggerResult, error) {
		payload, _ := json.Marshal(session.MessagePayload{Message: text, Deliveries: []session.Delivery{d}})
		c, _, err := s.Store.AppendCommand(ctx, store.NewCommand{ID: uuid.NewString(), SessionID: sessionID, Kind: session.KindMessage, Payload: payload,
			Sender: by, IdempotencyKey: reservedDelivery + ref + ":" + key, Held: true})
		if err != nil {
			return wire.TriggerResult{}, err
		}
		return wire.TriggerResult{Routed: spec.RouteSession, SessionID: sessionID, CommandID: c.ID},
			s.notify(ctx, sessionID, workflows.Notice{CommandID: c.ID, Kind: durable.NoticeDelivery})
	}
	if t.Route(&sp) == spec.RouteBound {
		// Into every live session of the trigger's agent bound to the pull
		// request the delivery names (none bound: nothing happens).
		bound, err := s.Remotes.Bound(ctx, project, t, payload)
		if err != nil {
			return wire.TriggerResult{}, err
		}
		res := wire.TriggerResult{Routed: spec.RouteBound}
		for _, b := range bound {
			if x, err := s.Store.GetSession(ctx, b.SessionID); err != nil || x.Status.Terminal() || x.Agent != sp.Name {
				continue
			}
			r, err := route(b.SessionID)
			if err != nil {
				return res, err
			}
			res.Sessions, res.Commands = append(res.Sessions, r.SessionID), append(res.Commands, r.CommandID)
		}
		return res, nil
	}
	if t.Route(&sp) == spec.RouteSession {
		live, err := s.Store.ListSessions(ctx, session.Filter{Project: sp.Project, Agent: sp.Name, IncludeArchived: true, Limit: 1,
			Statuses: []session.Status{session.StatusQueued, session.StatusRunning, session.StatusAwaiting}})
		if err != nil {
			return wire.TriggerResult{}, err
		}
		if len(live) > 0 {
			return route(live[0].ID)
		}
	}
	gitRef, err := t.RenderRef(event, payload)
	if err != nil {
		return wire.TriggerResult{}, fmt.Errorf("%w: trigger %s: rendering its ref: %w", errdefs.ErrInvalid, ref, err)
	}
	x, err := s.createSession(ctx, wire.CreateRequest{Project: sp.Project, Agent: sp.Name, Message: text, Repo: t.Repo, Ref: gitRef,
		IdempotencyKey: reservedTrigger + ref + ":" + key, NonInteractive: true}, by)
	var slot *errdefs.SlotConflictError
	if errors.As(err, &slot) && t.Route(&sp) == spec.RouteSession {
		// Another delivery of the same burst spawned the live session
		// meanwhile: this one joins it.
		return route(slot.SessionID)
	}
	if err != nil {
		return wire.TriggerResult{}, err
	}
	return wire.TriggerResult{Routed: spec.RouteSpawn, SessionID: x.ID}, nil
}

// Idempotency keys the platform makes for triggers; a caller may not use
// them (see reservedKey).
const (
	reservedTrigger  = "trigger:"
	reservedDelivery = "delivery:"
)
