package durable

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/paddock-dev/paddock/internal/agent"
	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
)

// contextWindow is the agent's model's context window, in tokens.
func contextWindow(sp spec.Agent) int {
	if sp.ContextWindow > 0 {
		return sp.ContextWindow
	}
	return provider.ContextWindow(sp.Model)
}

// compacted is the conversation a model step is shown: when it nears the
// model's context window, its middle is first summarized by the model
// (without tools), the summary recorded in the transcript, and one action
// of the budget consumed. Should summarizing fail, the step goes on with
// the conversation as it is (and the failure is noted).
func (a *Activities) compacted(ctx context.Context, sessionID, turnID string, step int, sp spec.Agent, events []session.Event) []provider.Message {
	full, prev := agent.Full(events), agent.LatestCompaction(events)
	shown := agent.Conversation(events)
	cut, ok := agent.PlanCompaction(full, prev, contextWindow(sp))
	if !ok {
		return shown
	}
	c, err := a.compact(ctx, sessionID, turnID, step, sp, full, prev, cut)
	if err != nil {
		data, _ := json.Marshal(session.TextData{Text: "the conversation could not be compacted (" + err.Error() + "); going on without"})
		_, _ = a.Store.AppendEvent(ctx, session.Event{SessionID: sessionID, TurnID: turnID, Kind: session.EventNotice,
			Key: fmt.Sprintf("%s/step%d/compaction-failed", turnID, step), Data: data})
		return shown
	}
	return agent.Compacted(c, full)
}

func (a *Activities) compact(ctx context.Context, sessionID, turnID string, step int, sp spec.Agent, full []provider.Message, prev *session.Compaction, cut int) (session.Compaction, error) {
	p, model, err := a.Providers.Resolve(sp.Model)
	if err != nil {
		return session.Compaction{}, err
	}
	resp, err := p.Stream(ctx, provider.Request{Model: model, System: sp.Instructions, Messages: agent.SummaryRequest(full, prev, cut)}, func(provider.Delta) {})
	if err != nil {
		return session.Compaction{}, err
	}
	if resp.Text == "" {
		return session.Compaction{}, fmt.Errorf("the model wrote no summary")
	}
	before := agent.Tokens(full)
	if prev != nil {
		before = agent.Tokens(agent.Compacted(*prev, full))
	}
	c := session.Compaction{Summary: resp.Text, Messages: cut, Assistant: agent.Assistants(full[:cut]), TokensBefore: before}
	c.TokensAfter = agent.Tokens(agent.Compacted(c, full))
	u := session.Usage{InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens,
		CostUSD: a.Prices.Of(sp.Model).Cost(resp.Usage.InputTokens, resp.Usage.OutputTokens)}
	// Usage rows are keyed by step; a compaction's sits beside its step's.
	if err := a.Store.RecordUsage(ctx, sessionID, turnID, compactionStep+step, sp.Model, u); err != nil {
		return c, err
	}
	data, _ := json.Marshal(c)
	if _, err := a.Store.AppendEvent(ctx, session.Event{SessionID: sessionID, TurnID: turnID, Kind: session.EventCompaction,
		Key: fmt.Sprintf("%s/step%d/compaction", turnID, step), Data: data}); err != nil {
		return c, err
	}
	// A compaction is one action of the session's budget.
	return c, a.consume(ctx, sessionID, turnID, fmt.Sprintf("compaction/%s/%d", turnID, step), session.BudgetData{Actions: 1})
}

// compactionStep offsets the usage row of a step's compaction.
const compactionStep = 1_000_000
