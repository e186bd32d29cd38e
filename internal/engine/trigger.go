package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
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
}

// findTrigger finds the agent declaring trigger name.
func (s *Service) findTrigger(ctx context.Context, name string) (spec.Agent, spec.TriggerSpec, error) {
	agents, err := s.Store.ListAgents(ctx, "")
	if err != nil {
		return spec.Agent{}, spec.TriggerSpec{}, err
	}
	for _, a := range agents {
		var sp spec.Agent
		if json.Unmarshal(a.Spec, &sp) != nil {
			continue
		}
		for _, t := range sp.Triggers {
			if t.Name == name {
				sp.Defaults()
				return sp, t, nil
			}
		}
	}
	return spec.Agent{}, spec.TriggerSpec{}, fmt.Errorf("trigger %q: %w", name, store.ErrNotFound)
}

// checkTriggers refuses agents whose trigger names another agent already
// uses: a delivery must reach exactly one.
func (s *Service) checkTriggers(ctx context.Context, p identity.Principal, agents []spec.Agent) error {
	existing, err := s.Store.ListAgents(ctx, "")
	if err != nil {
		return err
	}
	type agent struct{ project, name string }
	owner := map[string]agent{}
	for _, a := range existing {
		var sp spec.Agent
		if json.Unmarshal(a.Spec, &sp) == nil {
			for _, t := range sp.Triggers {
				owner[t.Name] = agent{a.Project, a.Name}
			}
		}
	}
	for _, a := range agents {
		for _, t := range a.Triggers {
			if o, ok := owner[t.Name]; ok && o != (agent{a.Project, a.Name}) {
				// Another project's agent is named only to who may read it.
				if s.Allow(ctx, p, o.project, identity.Read, "") == nil {
					return fmt.Errorf("%w: agent %s: trigger %q is already agent %s/%s's", ErrInvalid, a.Name, t.Name, o.project, o.name)
				}
				return fmt.Errorf("%w: agent %s: the trigger name %q is taken: choose another", ErrInvalid, a.Name, t.Name)
			}
			owner[t.Name] = agent{a.Project, a.Name}
		}
	}
	return nil
}

// Trigger delivers an event (already authenticated) to the trigger's
// agent: a new session (spawn), or its live session (session routing),
// where it waits in the held lane and flushes with the deliveries around
// it (see bound.FlushAt). key identifies the delivery: a retried delivery
// lands once.
func (s *Service) Trigger(ctx context.Context, name, event, key string, payload any) (TriggerResult, error) {
	sp, t, err := s.findTrigger(ctx, name)
	if err != nil {
		return TriggerResult{}, err
	}
	if len(t.Events) > 0 && !slices.Contains(t.Events, event) {
		return TriggerResult{Routed: "ignored"}, nil
	}
	text, err := t.Render(event, payload)
	if err != nil {
		return TriggerResult{}, fmt.Errorf("%w: trigger %s: rendering its message: %w", ErrInvalid, name, err)
	}
	if strings.TrimSpace(text) == "" {
		text = fmt.Sprintf("Event %s arrived through trigger %s.", event, name)
	}
	by := session.Sender{Kind: session.SenderTrigger, ID: name}
	d := session.Delivery{Trigger: name, Event: event, Key: key, Message: text, At: time.Now().UTC()}
	route := func(sessionID string) (TriggerResult, error) {
		payload, _ := json.Marshal(session.MessagePayload{Message: text, Deliveries: []session.Delivery{d}})
		c, _, err := s.Store.AppendCommand(ctx, store.NewCommand{ID: uuid.NewString(), SessionID: sessionID, Kind: session.KindMessage, Payload: payload,
			Sender: by, IdempotencyKey: reservedDelivery + name + ":" + key, Held: true})
		if err != nil {
			return TriggerResult{}, err
		}
		return TriggerResult{Routed: spec.RouteSession, SessionID: sessionID, CommandID: c.ID},
			s.notify(ctx, sessionID, Notice{CommandID: c.ID, Kind: noticeDelivery})
	}
	if t.Route(&sp) == spec.RouteSession {
		live, err := s.Store.ListSessions(ctx, store.SessionFilter{Project: sp.Project, Agent: sp.Name, IncludeArchived: true, Limit: 1,
			Statuses: []session.Status{session.StatusQueued, session.StatusRunning, session.StatusAwaiting}})
		if err != nil {
			return TriggerResult{}, err
		}
		if len(live) > 0 {
			return route(live[0].ID)
		}
	}
	x, err := s.CreateSession(ctx, CreateRequest{Project: sp.Project, Agent: sp.Name, Message: text, Repo: t.Repo,
		IdempotencyKey: reservedTrigger + name + ":" + key, NonInteractive: true}, by)
	var slot *store.SlotConflictError
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
	var ended *store.TerminalError
	if errors.As(err, &ended) {
		return Flush{}, nil // the session ended: its deliveries were canceled with it
	}
	if err != nil {
		return Flush{}, err
	}
	return Flush{Delivered: c.ID, Interrupt: interrupt}, nil
}
