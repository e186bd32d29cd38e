package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/wire"
)

// noticeDelivery is the kind of a Notice that a trigger delivery waits in
// the session's held lane.
const noticeDelivery session.CommandKind = "delivery"

// TriggerResult says where a delivery went.
type TriggerResult struct {
	// Routed is "spawn", "session", or "ignored" (an event kind the
	// trigger does not accept).
	Routed    string `json:"routed"`
	SessionID string `json:"sessionId,omitempty"`
	CommandID string `json:"commandId,omitempty"`
	// Error is why a delivery was refused (recorded, never answered).
	Error string `json:"error,omitempty"`
}

// routedRefused records a delivery refused for good.
const routedRefused = "refused"

// TriggerRef names a trigger on the server: PROJECT/NAME. A trigger, and
// the secret that signs its deliveries, belong to its project; two
// projects may each have a trigger of one name.
func TriggerRef(project, name string) string { return project + "/" + name }

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
	return spec.Agent{}, spec.TriggerSpec{}, fmt.Errorf("trigger %q: %w", TriggerRef(project, name), errdefs.ErrNotFound)
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
						owner[TriggerRef(e.Project, t.Name)] = agent{e.Project, e.Name}
					}
				}
			}
		}
		for _, t := range a.Triggers {
			ref := TriggerRef(a.Project, t.Name)
			if o, ok := owner[ref]; ok && o != (agent{a.Project, a.Name}) {
				return fmt.Errorf("%w: agent %s: trigger %q is already agent %s's in project %s: choose another name", errdefs.ErrInvalid, a.Name, t.Name, o.name, o.project)
			}
			owner[ref] = agent{a.Project, a.Name}
		}
	}
	return nil
}

// Trigger delivers an event (already authenticated) to the trigger's
// agent: a new session (spawn), or its live session (session routing),
// where it waits in the held lane and flushes with the deliveries around
// it (see bound.FlushAt). key identifies the delivery: a retried or
// replayed delivery lands once, and is answered as the first time.
func (s *Service) Trigger(ctx context.Context, project, name, event, key string, payload any) (TriggerResult, error) {
	ref := TriggerRef(project, name)
	if seen, err := s.Store.Delivery(ctx, ref, key); err == nil {
		var res TriggerResult
		if err := json.Unmarshal(seen, &res); err != nil {
			return res, fmt.Errorf("delivery %s of trigger %s: its record: %w", key, ref, err)
		}
		if res.Routed == routedRefused {
			return TriggerResult{}, fmt.Errorf("%w: this delivery was refused before: %s", errdefs.ErrInvalid, res.Error)
		}
		return res, nil
	} else if !errors.Is(err, errdefs.ErrNotFound) {
		return TriggerResult{}, err
	}
	res, err := s.deliver(ctx, project, name, event, key, payload)
	if errors.Is(err, errdefs.ErrInvalid) {
		// Refused for good (its message does not render, its repository
		// is refused): so is every replay of it, under any event kind.
		record, _ := json.Marshal(TriggerResult{Routed: routedRefused, Error: err.Error()})
		return res, errors.Join(err, s.Store.RecordDelivery(ctx, ref, key, record))
	}
	if err != nil {
		return res, err
	}
	record, _ := json.Marshal(res)
	return res, s.Store.RecordDelivery(ctx, ref, key, record)
}

// deliver is Trigger for a delivery not seen before.
func (s *Service) deliver(ctx context.Context, project, name, event, key string, payload any) (TriggerResult, error) {
	ref := TriggerRef(project, name)
	sp, t, err := s.findTrigger(ctx, project, name)
	if err != nil {
		return TriggerResult{}, err
	}
	if len(t.Events) > 0 && !slices.Contains(t.Events, event) {
		return TriggerResult{Routed: "ignored"}, nil
	}
	text, err := t.Render(event, payload)
	if err != nil {
		return TriggerResult{}, fmt.Errorf("%w: trigger %s: rendering its message: %w", errdefs.ErrInvalid, ref, err)
	}
	if strings.TrimSpace(text) == "" {
		text = fmt.Sprintf("Event %s arrived through trigger %s.", event, name)
	}
	by := session.Sender{Kind: session.SenderTrigger, ID: name}
	d := session.Delivery{Trigger: name, Event: event, Key: key, Message: text, At: s.now().UTC()}
	route := func(sessionID string) (TriggerResult, error) {
		payload, _ := json.Marshal(session.MessagePayload{Message: text, Deliveries: []session.Delivery{d}})
		c, _, err := s.Store.AppendCommand(ctx, store.NewCommand{ID: uuid.NewString(), SessionID: sessionID, Kind: session.KindMessage, Payload: payload,
			Sender: by, IdempotencyKey: reservedDelivery + ref + ":" + key, Held: true})
		if err != nil {
			return TriggerResult{}, err
		}
		return TriggerResult{Routed: spec.RouteSession, SessionID: sessionID, CommandID: c.ID},
			s.notify(ctx, sessionID, Notice{CommandID: c.ID, Kind: noticeDelivery})
	}
	if t.Route(&sp) == spec.RouteSession {
		live, err := s.Store.ListSessions(ctx, session.Filter{Project: sp.Project, Agent: sp.Name, IncludeArchived: true, Limit: 1,
			Statuses: []session.Status{session.StatusQueued, session.StatusRunning, session.StatusAwaiting}})
		if err != nil {
			return TriggerResult{}, err
		}
		if len(live) > 0 {
			return route(live[0].ID)
		}
	}
	x, err := s.createSession(ctx, wire.CreateRequest{Project: sp.Project, Agent: sp.Name, Message: text, Repo: t.Repo,
		IdempotencyKey: reservedTrigger + ref + ":" + key, NonInteractive: true}, by)
	var slot *errdefs.SlotConflictError
	if errors.As(err, &slot) && t.Route(&sp) == spec.RouteSession {
		// Another delivery of the same burst spawned the live session
		// meanwhile: this one joins it.
		return route(slot.SessionID)
	}
	if err != nil {
		return TriggerResult{}, err
	}
	return TriggerResult{Routed: spec.RouteSpawn, SessionID: x.ID}, nil
}

// Idempotency keys the platform makes for triggers; a caller may not use
// them (see reservedKey).
const (
	reservedTrigger  = "trigger:"
	reservedDelivery = "delivery:"
)

// Flush says what a flush of held deliveries did.
type Flush struct {
	// Delivered is the command carrying them (empty: none were held).
	Delivered string `json:"delivered,omitempty"`
	// Interrupt says a turn in flight should stop so the steering lands
	// at once: some delivery is not a CI verdict.
	Interrupt bool `json:"interrupt,omitempty"`
}

// FlushDeliveries turns the session's held deliveries into one message
// command that lists each.
func (a *Activities) FlushDeliveries(ctx context.Context, sessionID string) (Flush, error) {
	held, err := a.Store.HeldDeliveries(ctx, sessionID)
	if err != nil || len(held) == 0 {
		return Flush{}, err
	}
	var all []session.Delivery
	interrupt := false
	var ids []string
	for _, c := range held {
		var p session.MessagePayload
		_ = json.Unmarshal(c.Payload, &p)
		all = append(all, p.Deliveries...)
		ids = append(ids, c.ID)
		for _, d := range p.Deliveries {
			interrupt = interrupt || !session.CIVerdict(d.Event)
		}
	}
	text := all[0].Message
	if len(all) > 1 {
		var b strings.Builder
		fmt.Fprintf(&b, "%d events arrived together:\n", len(all))
		for i, d := range all {
			fmt.Fprintf(&b, "\n%d. [%s via %s] %s\n", i+1, d.Event, d.Trigger, d.Message)
		}
		text = b.String()
	}
	payload, _ := json.Marshal(session.MessagePayload{Message: text, Deliveries: all})
	c, err := a.Store.AbsorbDeliveries(ctx, ids, store.NewCommand{ID: "flush-" + held[0].ID, SessionID: sessionID, Kind: session.KindMessage,
		Payload: payload, Sender: held[0].Sender, IdempotencyKey: "flush:" + held[0].ID})
	var ended *errdefs.TerminalError
	if errors.As(err, &ended) {
		return Flush{}, nil // the session ended: its deliveries were canceled with it
	}
	if err != nil {
		return Flush{}, err
	}
	return Flush{Delivered: c.ID, Interrupt: interrupt}, nil
}
