package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/paddock-dev/paddock/internal/agent"
	"github.com/paddock-dev/paddock/internal/bound"
	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
)

// Budget events are keyed so that each step, call, compaction or
// extension is counted once, whatever the retries.
const BudgetPrefix = "budget/"

// consume records what one step, call or compaction used (idempotent by
// key).
func (a *Activities) consume(ctx context.Context, sessionID, turnID, key string, d session.BudgetData) error {
	data, _ := json.Marshal(d)
	_, err := a.Store.AppendEvent(ctx, session.Event{SessionID: sessionID, TurnID: turnID, Kind: session.EventBudget, Key: BudgetPrefix + key, Data: data})
	return err
}

// limits are session s's budget.
func (a *Activities) limits(s session.Session, sp spec.Agent) bound.Limits {
	return sp.Session.Limits(a.Budget, s.SpendCapUSD)
}

// consumption is what session s used, as recorded.
func (a *Activities) consumption(ctx context.Context, s session.Session) (bound.Consumption, error) {
	return ConsumptionOf(ctx, a.Store, s, a.Now())
}

// ConsumptionOf sums session s's consumption from what it recorded.
func ConsumptionOf(ctx context.Context, st store.Store, s session.Session, now time.Time) (bound.Consumption, error) {
	var c bound.Consumption
	events, err := st.EventsByKey(ctx, s.ID, BudgetPrefix)
	if err != nil {
		return c, err
	}
	for _, e := range events {
		var d session.BudgetData
		if json.Unmarshal(e.Data, &d) != nil {
			continue
		}
		c.Actions += d.Actions
		c.Active += time.Duration(d.ActiveMs) * time.Millisecond
		c.Tokens += d.Tokens
		c.SpendUSD += d.SpendUSD
		if d.Extension {
			c.Extensions++
		}
	}
	u, err := st.SessionUsage(ctx, s.ID)
	if err != nil {
		return c, err
	}
	c.Tokens += int64(u.InputTokens + u.OutputTokens)
	c.SpendUSD += u.CostUSD
	turns, err := st.ListTurns(ctx, s.ID)
	if err != nil {
		return c, err
	}
	c.Turns = len(turns)
	c.Age = now.Sub(s.CreatedAt)
	return c, nil
}

// BudgetCheck is what the workflow learns before a model call.
type BudgetCheck struct {
	Overrun *bound.Overrun `json:"overrun,omitempty"`
	// Summary says what was consumed and what an extension grants.
	Summary string `json:"summary,omitempty"`
}

// CheckBudget evaluates the session's budget before a model call.
func (a Budgets) CheckBudget(ctx context.Context, sessionID string) (BudgetCheck, error) {
	s, sp, err := a.agentSpec(ctx, sessionID)
	if err != nil {
		return BudgetCheck{}, err
	}
	c, err := a.consumption(ctx, s)
	if err != nil {
		return BudgetCheck{}, err
	}
	l := a.limits(s, sp)
	// Someone can grant an extension in an interactive session, or where a
	// named approver decides for a non-interactive one.
	return BudgetCheck{Overrun: bound.Check(l, c, s.Interactive || s.Approver != ""), Summary: bound.Summary(l, c)}, nil
}

// ParkResult says where a park stands.
type ParkResult struct {
	Park session.Park `json:"park"`
}

// Park parks the session for reason: the park (with its TTL), a held
// recovery command that continues the work once it resolves, a notice
// saying what it needs. An open park of the same reason is kept.
func (a Budgets) Park(ctx context.Context, sessionID, turnID string, reason bound.Reason, detail string) (ParkResult, error) {
	id := uuid.NewString()
	p := session.Park{ID: id, SessionID: sessionID, Reason: string(reason), Detail: detail, Needs: bound.Needs(reason, sessionID)}
	if ttl := bound.TTL(reason); ttl > 0 {
		exp := a.Now().Add(ttl).UTC()
		p.ExpiresAt = &exp
	}
	msg, _ := json.Marshal(session.MessagePayload{Message: "The session resumes after it was parked (" + string(reason) + "): " + detail +
		". Continue the task where you left off."})
	park, created, err := a.Store.OpenPark(ctx, p, store.NewCommand{ID: "recover-" + id, SessionID: sessionID, Kind: session.KindMessage,
		Payload: msg, Sender: session.Sender{Kind: session.SenderSystem, ID: "park"}})
	if err != nil {
		return ParkResult{}, err
	}
	if created {
		_ = a.Store.SetDisplay(ctx, sessionID, "", "parked ("+string(reason)+"): needs "+park.Needs)
	}
	return ParkResult{Park: park}, nil
}

// ExpirePark resolves a park whose TTL ran out and ends the session as
// failed, saying so. A park already resolved is left as it is.
func (a Budgets) ExpirePark(ctx context.Context, parkID string) (bool, error) {
	p, err := a.Store.GetPark(ctx, parkID)
	if err != nil || p.ResolvedAt != nil || a.held(ctx, p.SessionID) {
		return false, err
	}
	if _, err := a.Store.ResolvePark(ctx, parkID, session.ParkExpired, nil, "its TTL ran out"); err != nil {
		return false, err
	}
	return true, a.Lifecycle().Fail(ctx, p.SessionID, fmt.Sprintf("parked (%s) until its TTL ran out: %s", p.Reason, p.Detail))
}

// ProbePark checks whether a park's condition cleared on its own (the
// provider answers again) and resolves it cleared if so.
func (a Budgets) ProbePark(ctx context.Context, parkID string) (bool, error) {
	p, err := a.Store.GetPark(ctx, parkID)
	if err != nil || p.ResolvedAt != nil {
		return false, err
	}
	if bound.Reason(p.Reason) != bound.ProviderOutage {
		return false, nil
	}
	_, sp, err := a.agentSpec(ctx, p.SessionID)
	if err != nil {
		return false, err
	}
	prov, model, err := a.Providers.Resolve(sp.Model)
	if err != nil {
		return false, nil
	}
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := prov.Stream(pctx, provider.Request{Model: model,
		Messages: []provider.Message{{Role: provider.RoleUser, Text: "Reply with OK."}}}, func(provider.Delta) {}); err != nil {
		return false, nil
	}
	_, err = a.Store.ResolvePark(ctx, parkID, session.ParkCleared, &session.Sender{Kind: session.SenderSystem, ID: "probe"}, "the provider answers again")
	return err == nil, err
}

// OpenParks are the timers of a session's open parks, for the workflow.
type OpenParks struct {
	Parks []ParkTimer `json:"parks,omitempty"`
}

// ParkTimer is when an open park expires and how often it re-probes.
type ParkTimer struct {
	ID        string        `json:"id"`
	ExpiresAt *time.Time    `json:"expiresAt,omitempty"`
	Reprobe   time.Duration `json:"reprobe,omitempty"`
}

func (a *Activities) parkTimers(ctx context.Context, sessionID string) ([]ParkTimer, error) {
	open, err := a.Store.ListParks(ctx, sessionID, true)
	if err != nil {
		return nil, err
	}
	var out []ParkTimer
	for _, p := range open {
		t := ParkTimer{ID: p.ID, ExpiresAt: p.ExpiresAt, Reprobe: bound.Reprobe(bound.Reason(p.Reason))}
		if t.ExpiresAt != nil || t.Reprobe > 0 {
			out = append(out, t)
		}
	}
	return out, nil
}

// FinalSummary asks the model, without tools, for a final summary of the
// session whose budget ran out, and records it.
func (a Budgets) FinalSummary(ctx context.Context, sessionID, turnID, why string) (string, error) {
	events, err := a.transcripts.Events(ctx, a.Store, sessionID)
	if err != nil {
		return "", err
	}
	_, sp, err := a.agentSpec(ctx, sessionID)
	if err != nil {
		return "", err
	}
	key := turnID + "/final-summary"
	for _, e := range events {
		if e.Key == key {
			var d session.TextData
			_ = json.Unmarshal(e.Data, &d)
			return d.Text, nil
		}
	}
	stop := Heartbeat(ctx)
	defer stop()
	text := "(no summary: the model could not be reached)"
	if prov, model, err := a.Providers.Resolve(sp.Model); err == nil {
		messages := append(agent.Conversation(events), provider.Message{Role: provider.RoleUser,
			Text: "The session's budget is exhausted (" + why + "). Without calling any tool, write a short final summary for the person who started it: what was done, what remains, and where things stand."})
		resp, err := prov.Stream(ctx, provider.Request{Model: model, System: sp.Instructions, Messages: messages}, func(provider.Delta) {})
		if err == nil {
			u := session.Usage{InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens,
				CostUSD: a.Prices.Of(sp.Model).Cost(resp.Usage.InputTokens, resp.Usage.OutputTokens)}
			_ = a.Store.RecordUsage(ctx, sessionID, turnID, finalSummaryStep, sp.Model, u)
		}
		switch {
		case err == nil && resp.Text != "":
			text = resp.Text
		case err == nil:
			text = "(the model wrote no summary)"
		}
	}
	data, _ := json.Marshal(session.TextData{Text: text})
	_, err = a.Store.AppendEvent(ctx, session.Event{SessionID: sessionID, TurnID: turnID, Kind: session.EventAssistantText, Key: key, Data: data})
	return text, err
}

// finalSummaryStep keys the usage row of a final summary.
const finalSummaryStep = 2_000_000

// EndForBudget stops a session whose budget ran out and cannot be
// extended: cleanly, with the reason and the final summary as its
// handoff. Its working copy is kept (like a failed session's) so the work
// can still be reviewed and accepted.
func (a Budgets) EndForBudget(ctx context.Context, sessionID, why, summary string) error {
	data, _ := json.Marshal(session.TextData{Text: "stopped: " + session.StopBudget + ": " + why})
	if _, err := a.Store.AppendEvent(ctx, session.Event{SessionID: sessionID, Kind: session.EventNotice, Key: "stop/budget", Data: data}); err != nil {
		return err
	}
	if err := a.Store.StopSession(ctx, sessionID, session.StopPayload{Reason: session.StopBudget + ": " + why, Handoff: session.TrimRunes(summary, session.MaxHandoff)}); err != nil {
		return err
	}
	return a.Store.SetDisplay(ctx, sessionID, "", "stopped: "+session.StopBudget)
}
