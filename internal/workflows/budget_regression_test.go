package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/bound"
	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
)

// burst is a model that makes n tool calls in its first step, then stops.
type burst struct{ n int }

func (b burst) Stream(_ context.Context, req provider.Request, sink func(provider.Delta)) (provider.Response, error) {
	for _, m := range req.Messages {
		if m.Role == provider.RoleAssistant {
			sink(provider.Delta{Kind: provider.DeltaText, Text: "done"})
			return provider.Response{Text: "done", StopReason: "end_turn"}, nil
		}
	}
	resp := provider.Response{StopReason: "tool_use"}
	for i := range b.n {
		resp.ToolCalls = append(resp.ToolCalls, provider.ToolCall{ID: fmt.Sprintf("b%d", i), Name: "list_dir", Args: json.RawMessage(`{"path":"."}`)})
	}
	sink(provider.Delta{Kind: provider.DeltaText, Text: "x"})
	return resp, nil
}

// TestRegressionActionBudgetOvershotInOneStep: the actions budget is checked
// only before each model call, so one step's calls all run whatever the
// budget: with 3 actions, a step of 40 calls runs 40.
func TestRegressionActionBudgetOvershotInOneStep(t *testing.T) {
	f := setup(t)
	f.acts.Budget = bound.Limits{Actions: 3, Active: time.Hour, Extensions: 0, Grant: bound.DefaultGrant}
	f.acts.Providers.Register("burst", func(string) (provider.Provider, error) { return burst{40}, nil })
	f.createWith(t, "s1", "burst/model", "go", false)
	f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s1"})
	require.NoError(t, f.env.GetWorkflowError())
	calls, err := durable.TurnCalls(context.Background(), f.store, "s1", "turn-s1-start")
	require.NoError(t, err)
	ran := 0
	for _, c := range calls {
		if c.State == session.CallDone {
			ran++
		}
	}
	c := f.consumed(t, "s1")
	t.Logf("budget 3 actions: consumed %d, calls run %d", c.Actions, ran)
	require.LessOrEqual(t, ran, 3, "calls past the actions budget still ran")
}

// fixedIDs is a model (like some OpenAI-compatible servers) that names
// every tool call "call_1"; its steps talk at length so the conversation
// needs compacting. It records every request it gets.
type fixedIDs struct {
	mu    sync.Mutex
	steps int
	reqs  [][]provider.Message
	until int
}

func (p *fixedIDs) Stream(_ context.Context, req provider.Request, sink func(provider.Delta)) (provider.Response, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	last := req.Messages[len(req.Messages)-1]
	if last.Role == provider.RoleUser && strings.Contains(last.Text, "summarize everything above") {
		sink(provider.Delta{Kind: provider.DeltaText, Text: "summary"})
		return provider.Response{Text: "a short summary", StopReason: "end_turn"}, nil
	}
	p.reqs = append(p.reqs, append([]provider.Message(nil), req.Messages...))
	p.steps++
	text := fmt.Sprintf("step %d: ", p.steps) + strings.Repeat("thinking out loud ", 50)
	sink(provider.Delta{Kind: provider.DeltaText, Text: text})
	if p.steps > p.until {
		return provider.Response{Text: "finished", StopReason: "end_turn"}, nil
	}
	return provider.Response{Text: text, StopReason: "tool_use",
		ToolCalls: []provider.ToolCall{{ID: "call_1", Name: "read_file", Args: json.RawMessage(`{"path":"notes.txt"}`)}}}, nil
}

// TestRegressionCompactionLetsARepeatedCallIDThrough: Normalize renames a call
// whose ID repeats an earlier one, but it only looks at the messages the
// step was shown; once compaction summarized the first "call_1" away, a
// later "call_1" keeps its ID: the gate finds the old call settled, so the
// call neither runs nor counts as an action, and the conversation then
// holds a tool call with no result (a provider refuses that with a 400).
func TestRegressionCompactionLetsARepeatedCallIDThrough(t *testing.T) {
	f := setup(t)
	p := &fixedIDs{until: 12}
	f.acts.Providers.Register("fixed", func(string) (provider.Provider, error) { return p, nil })
	f.tweak = func(a *spec.Agent) { a.ContextWindow = 1000 }
	f.create(t, "s1", "fixed/model", "read the notes")
	f.env.RegisterDelayedCallback(func() {
		f.send(t, "s1", session.KindStop, session.StopPayload{Reason: "done"})
	}, time.Hour)
	f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s1"})
	require.NoError(t, f.env.GetWorkflowError())

	// Every tool call a request shows must be answered by a tool message.
	var orphans []string
	for i, msgs := range p.reqs {
		for j, m := range msgs {
			for _, c := range m.ToolCalls {
				answered := false
				for _, r := range msgs[j+1:] {
					if r.Role == provider.RoleTool && r.ToolCallID == c.ID {
						answered = true
					}
				}
				if !answered {
					orphans = append(orphans, fmt.Sprintf("request %d: call %s", i, c.ID))
				}
			}
		}
	}
	c := f.consumed(t, "s1")
	events, err := f.store.ListEvents(context.Background(), "s1", 0, 0)
	require.NoError(t, err)
	compactions, done := 0, 0
	for _, e := range events {
		if e.Kind == session.EventCompaction {
			compactions++
		}
		if e.Kind == session.EventToolCall && strings.HasSuffix(e.Key, "/done") {
			done++
		}
	}
	t.Logf("model steps with a call %d, calls run %d, compactions %d, actions consumed %d, orphans %v", p.until, done, compactions, c.Actions, orphans)
	require.Empty(t, orphans, "a request showed a tool call without its result")
}

// TestRegressionBillingParkOutlivesItsRecovery: a session parks on credits;
// credits are added and the person simply writes to it (no `unpark`):
// its turns complete, yet the park stays open, the session keeps showing
// as parked, and 7 days later the stale park fails the working session.
func TestRegressionBillingParkOutlivesItsRecovery(t *testing.T) {
	f := setup(t)
	ok := false
	f.acts.Providers.Register("credits", func(string) (provider.Provider, error) { return failing{noCredits, &ok}, nil })
	f.create(t, "s1", "credits/model", "hello")
	ctx := context.Background()
	f.env.RegisterDelayedCallback(func() {
		ok = true
		f.send(t, "s1", session.KindMessage, session.MessagePayload{Message: "credits added, go on"})
	}, time.Hour)
	f.env.RegisterDelayedCallback(func() {
		turns, err := f.store.ListTurns(ctx, "s1")
		require.NoError(t, err)
		require.Equal(t, session.TurnCompleted, turns[len(turns)-1].Status, "the session works again")
		for i := range 3 { // and keeps working, every day
			f.env.RegisterDelayedCallback(func() {
				f.send(t, "s1", session.KindMessage, session.MessagePayload{Message: fmt.Sprintf("day %d", i)})
			}, time.Duration(i+1)*24*time.Hour)
		}
	}, 2*time.Hour)
	f.env.RegisterDelayedCallback(func() {
		f.send(t, "s1", session.KindStop, session.StopPayload{Reason: "done"})
	}, 10*24*time.Hour)
	f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s1"})
	require.NoError(t, f.env.GetWorkflowError())
	x, err := f.store.GetSession(ctx, "s1")
	require.NoError(t, err)
	turns, err := f.store.ListTurns(ctx, "s1")
	require.NoError(t, err)
	t.Logf("status %s (%s); turns %d; ambient %q", x.Status, x.Error, len(turns), x.AmbientStatus)
	require.NotEqual(t, session.StatusFailed, x.Status, "a session that works again was failed by its stale billing park")
}

// slow is a provider whose first attempts stream for a while and fail
// (a cut connection), then succeed.
type slow struct {
	mu    sync.Mutex
	calls int
}

func (s *slow) Stream(_ context.Context, _ provider.Request, sink func(provider.Delta)) (provider.Response, error) {
	s.mu.Lock()
	s.calls++
	n := s.calls
	s.mu.Unlock()
	for range 4 {
		time.Sleep(100 * time.Millisecond)
		sink(provider.Delta{Kind: provider.DeltaText, Text: "."})
	}
	if n < 4 {
		return provider.Response{}, fmt.Errorf("stream cut")
	}
	return provider.Response{Text: "ok", StopReason: "end_turn"}, nil
}

// TestRegressionRetriedStepTimeIsNotActiveTime: a model step's active time is
// keyed by the step, so only its first attempt's time counts: three more
// attempts of the same step are not active time.
func TestRegressionRetriedStepTimeIsNotActiveTime(t *testing.T) {
	f := setup(t)
	p := &slow{}
	f.acts.Providers.Register("slow", func(string) (provider.Provider, error) { return p, nil })
	f.create(t, "s1", "slow/model", "hello")
	f.env.RegisterDelayedCallback(func() {
		f.send(t, "s1", session.KindStop, session.StopPayload{Reason: "done"})
	}, time.Hour)
	f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s1"})
	require.NoError(t, f.env.GetWorkflowError())
	c := f.consumed(t, "s1")
	t.Logf("model calls %d (each ~400ms); active time recorded %s", p.calls, c.Active)
	require.GreaterOrEqual(t, c.Active, time.Duration(p.calls)*350*time.Millisecond, "retried attempts' time is not counted")
}
