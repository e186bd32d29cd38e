package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/agent"
	"github.com/paddock-dev/paddock/internal/bound"
	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
)

// grant does what Service.Gates().Extend does, without a Temporal client: the
// extension recorded and attributed, the park resolved, the session woken.
func (f *fixture) grant(t *testing.T, id string) {
	t.Helper()
	ctx := context.Background()
	open, err := f.store.ListParks(ctx, id, true)
	require.NoError(t, err)
	require.Len(t, open, 1)
	require.Equal(t, string(bound.AwaitingExtension), open[0].Reason)
	ana := session.Sender{Kind: session.SenderOperator, ID: "ana"}
	data, _ := json.Marshal(session.BudgetData{Extension: true, By: &ana})
	_, err = f.store.AppendEvent(ctx, session.Event{SessionID: id, Kind: session.EventBudget, Key: durable.BudgetPrefix + "extension/" + open[0].ID, Data: data})
	require.NoError(t, err)
	p, err := f.store.ResolvePark(ctx, open[0].ID, session.ParkGranted, &ana, "")
	require.NoError(t, err)
	f.env.SignalWorkflow(SignalCommand, Notice{CommandID: p.RecoveryCommand, Kind: session.KindMessage})
}

func (f *fixture) consumed(t *testing.T, id string) bound.Consumption {
	t.Helper()
	x, err := f.store.GetSession(context.Background(), id)
	require.NoError(t, err)
	c, err := durable.ConsumptionOf(context.Background(), f.store, x, time.Now())
	require.NoError(t, err)
	return c
}

// TestRunawayParksForAnExtensionThenStops: a runaway agent spends its
// actions; the interactive session parks asking for an extension (saying
// what was consumed and what the next grants), a named person grants it,
// the work goes on where it stopped; when the budget runs out again with
// no extension left, the model writes a final summary without tools and
// the session stops cleanly, its work kept.
func TestRunawayParksForAnExtensionThenStops(t *testing.T) {
	f := setup(t)
	f.acts.Budget = bound.Limits{Actions: 3, Active: time.Hour, Extensions: 1, Grant: bound.Grant{Actions: 2, Active: time.Minute}}
	f.create(t, "s1", "replay/testdata/runaway.yaml", "look around")
	f.env.RegisterDelayedCallback(func() {
		x, err := f.store.GetSession(context.Background(), "s1")
		require.NoError(t, err)
		require.Equal(t, session.StatusAwaiting, x.Status, "parked, not failed")
		require.Contains(t, x.AmbientStatus, "paddock sessions extend s1")
		require.Equal(t, 3, f.consumed(t, "s1").Actions)
		f.grant(t, "s1")
	}, time.Hour)
	f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s1"})
	require.True(t, f.env.IsWorkflowCompleted())
	require.NoError(t, f.env.GetWorkflowError())

	ctx := context.Background()
	x, err := f.store.GetSession(ctx, "s1")
	require.NoError(t, err)
	require.True(t, x.BudgetStopped(), "%s: %s", x.Status, x.StopReason)
	require.Contains(t, x.StopReason, "used 5 of 5 actions")
	require.NotEmpty(t, x.Handoff, "the final summary")
	require.DirExists(t, x.Workdir, "its work is kept for review")
	c := f.consumed(t, "s1")
	require.Equal(t, 5, c.Actions)
	require.Equal(t, 1, c.Extensions)
	parks, err := f.store.ListParks(ctx, "s1", false)
	require.NoError(t, err)
	require.Len(t, parks, 1)
	require.Equal(t, session.ParkGranted, parks[0].Resolution)
	require.Equal(t, "ana", parks[0].ResolvedBy.ID)
	require.Contains(t, parks[0].Detail, "used 3 of 3 actions")
	require.Contains(t, parks[0].Detail, "the next extension grants 2 more actions")
	turns, err := f.store.ListTurns(ctx, "s1")
	require.NoError(t, err)
	require.Len(t, turns, 2)
	require.Equal(t, session.TurnFailed, turns[0].Status)
	require.Equal(t, session.ScopeTurn, turns[0].FailureScope)
	require.Equal(t, session.TurnCompleted, turns[1].Status)
}

// TestNonInteractiveBudgetStopsAtOnce: nobody can grant an extension, so
// the session stops with its summary at once.
func TestNonInteractiveBudgetStopsAtOnce(t *testing.T) {
	f := setup(t)
	f.acts.Budget = bound.Limits{Actions: 2, Active: time.Hour, Extensions: 5, Grant: bound.DefaultGrant}
	f.createWith(t, "s1", "replay/testdata/runaway.yaml", "look around", false)
	f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s1"})
	require.NoError(t, f.env.GetWorkflowError())
	x, err := f.store.GetSession(context.Background(), "s1")
	require.NoError(t, err)
	require.True(t, x.BudgetStopped(), "%s: %s", x.Status, x.StopReason)
	parks, err := f.store.ListParks(context.Background(), "s1", false)
	require.NoError(t, err)
	require.Empty(t, parks)
}

// TestApprovalWaitIsNotActiveTime: a call waits an hour (skipped time)
// for a person's decision: the session's active time does not grow.
func TestApprovalWaitIsNotActiveTime(t *testing.T) {
	f := setup(t)
	ask, _ := json.Marshal(map[string]any{"default": "ask", "approvalTtl": "2h"})
	f.policy = ask
	f.create(t, "s1", "replay/testdata/script.yaml", "finish the notes")
	f.env.RegisterDelayedCallback(func() {
		pending, err := f.store.ListApprovals(context.Background(), session.ApprovalFilter{SessionID: "s1", Status: session.ApprovalPending})
		require.NoError(t, err)
		require.NotEmpty(t, pending)
		require.Less(t, f.consumed(t, "s1").Active, time.Minute, "an hour waiting on a person is not active time")
		f.send(t, "s1", session.KindStop, session.StopPayload{Reason: "enough"})
	}, time.Hour)
	f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s1"})
	require.NoError(t, f.env.GetWorkflowError())
	c := f.consumed(t, "s1")
	require.Less(t, c.Active, time.Minute)
	require.Positive(t, c.Actions)
}

// failing is a provider that answers err until ok is set (never when ok
// is nil), then "back".
type failing struct {
	err error
	ok  *bool
}

func (f failing) Stream(_ context.Context, _ provider.Request, sink func(provider.Delta)) (provider.Response, error) {
	if f.ok == nil || !*f.ok {
		return provider.Response{}, f.err
	}
	sink(provider.Delta{Kind: provider.DeltaText, Text: "back"})
	return provider.Response{Text: "back", StopReason: "end_turn"}, nil
}

var (
	overloaded = &provider.StatusError{Status: 529, Message: "overloaded", Err: errors.New("provider: 529 overloaded")}
	noCredits  = &provider.StatusError{Status: 400, Message: "Your credit balance is too low to access the API", Err: errors.New("provider: 400 credit balance")}
)

// TestProviderOutageParksReprobesAndResumes: a provider outage parks the
// session; it is probed every 5 minutes and resumes when the provider
// answers again.
func TestProviderOutageParksReprobesAndResumes(t *testing.T) {
	f := setup(t)
	up := false
	f.acts.Providers.Register("flaky", func(string) (provider.Provider, error) { return failing{overloaded, &up}, nil })
	f.create(t, "s1", "flaky/model", "hello")
	f.env.RegisterDelayedCallback(func() {
		open, err := f.store.ListParks(context.Background(), "s1", true)
		require.NoError(t, err)
		require.Len(t, open, 1)
		require.Equal(t, string(bound.ProviderOutage), open[0].Reason)
		require.NotNil(t, open[0].ExpiresAt)
		up = true // the next probe finds it back
	}, 12*time.Minute)
	f.env.RegisterDelayedCallback(func() {
		f.send(t, "s1", session.KindStop, session.StopPayload{Reason: "done"})
	}, time.Hour)
	f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s1"})
	require.NoError(t, f.env.GetWorkflowError())
	parks, err := f.store.ListParks(context.Background(), "s1", false)
	require.NoError(t, err)
	require.Len(t, parks, 1)
	require.Equal(t, session.ParkCleared, parks[0].Resolution)
	turns, err := f.store.ListTurns(context.Background(), "s1")
	require.NoError(t, err)
	require.Len(t, turns, 2, "the failed turn, then the recovery")
	require.Equal(t, session.TurnCompleted, turns[1].Status)
}

// TestProviderOutageExpiresAfterSixHours: a provider that never comes
// back: the park expires after its 6-hour TTL and the session fails.
func TestProviderOutageExpiresAfterSixHours(t *testing.T) {
	f := setup(t)
	up := false
	f.acts.Providers.Register("flaky", func(string) (provider.Provider, error) { return failing{overloaded, &up}, nil })
	f.create(t, "s1", "flaky/model", "hello")
	start := f.env.Now()
	f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s1"})
	require.NoError(t, f.env.GetWorkflowError())
	require.GreaterOrEqual(t, f.env.Now().Sub(start), 6*time.Hour)
	x, err := f.store.GetSession(context.Background(), "s1")
	require.NoError(t, err)
	require.Equal(t, session.StatusFailed, x.Status)
	require.Contains(t, x.Error, "provider_outage")
	parks, err := f.store.ListParks(context.Background(), "s1", false)
	require.NoError(t, err)
	require.Equal(t, session.ParkExpired, parks[0].Resolution)
}

// TestLifetimeHoldsWhileAsleep: a session idle past its lifetime is
// ended by a durable timer, not on its next wake.
func TestLifetimeHoldsWhileAsleep(t *testing.T) {
	f := setup(t)
	f.acts.Budget = bound.Limits{Actions: 100, Active: time.Hour, Lifetime: 3 * time.Hour}
	f.create(t, "s1", "replay/testdata/script.yaml", "")
	f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s1"})
	require.NoError(t, f.env.GetWorkflowError())
	x, err := f.store.GetSession(context.Background(), "s1")
	require.NoError(t, err)
	require.True(t, x.BudgetStopped())
	require.Contains(t, x.StopReason, "lifetime of 3h0m0s")
}

// hung is a provider that streams nothing until its call is abandoned.
type hung struct{}

func (hung) Stream(ctx context.Context, _ provider.Request, _ func(provider.Delta)) (provider.Response, error) {
	<-ctx.Done()
	return provider.Response{}, ctx.Err()
}

// TestWatchdogConcludesASilentTurnStale: a model step that streams
// nothing for the agent's watchdog interval is abandoned; the turn is
// stale and the session awaiting (not failed).
func TestWatchdogConcludesASilentTurnStale(t *testing.T) {
	f := setup(t)
	f.acts.Providers.Register("hung", func(string) (provider.Provider, error) { return hung{}, nil })
	f.tweak = func(a *spec.Agent) { a.Session.Watchdog = spec.Duration(300 * time.Millisecond) }
	f.create(t, "s1", "hung/model", "hello")
	f.env.RegisterDelayedCallback(func() {
		f.send(t, "s1", session.KindStop, session.StopPayload{Reason: "done"})
	}, time.Hour)
	f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s1"})
	require.NoError(t, f.env.GetWorkflowError())
	turns, err := f.store.ListTurns(context.Background(), "s1")
	require.NoError(t, err)
	require.Equal(t, session.TurnStale, turns[0].Status)
	require.Contains(t, turns[0].Error, "no progress for 300ms")
}

// TestLongConversationIsCompacted: a conversation that outgrows the
// model's context window is compacted (its middle summarized by the
// model, recorded, one action consumed) and the work goes on to the end.
func TestLongConversationIsCompacted(t *testing.T) {
	f := setup(t)
	f.tweak = func(a *spec.Agent) { a.ContextWindow = 2000 }
	f.create(t, "s1", "replay/testdata/long.yaml", "work through the notes")
	f.env.RegisterDelayedCallback(func() {
		f.send(t, "s1", session.KindStop, session.StopPayload{Reason: "done"})
	}, time.Hour)
	f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s1"})
	require.NoError(t, f.env.GetWorkflowError())
	ctx := context.Background()
	events, err := f.store.ListEvents(ctx, "s1", 0, 0)
	require.NoError(t, err)
	var compactions []session.Compaction
	done := false
	for _, e := range events {
		switch e.Kind {
		case session.EventCompaction:
			var c session.Compaction
			require.NoError(t, json.Unmarshal(e.Data, &c))
			compactions = append(compactions, c)
		case session.EventAssistantText:
			var d session.TextData
			require.NoError(t, json.Unmarshal(e.Data, &d))
			done = done || strings.Contains(d.Text, "All done after the long conversation")
		}
	}
	require.NotEmpty(t, compactions)
	for _, c := range compactions {
		require.Less(t, c.TokensAfter, c.TokensBefore)
		require.NotEmpty(t, c.Summary)
	}
	require.True(t, done, "the conversation went on to its end")
	turns, err := f.store.ListTurns(ctx, "s1")
	require.NoError(t, err)
	require.Equal(t, session.TurnCompleted, turns[0].Status)
	c := f.consumed(t, "s1")
	require.Equal(t, 14+len(compactions), c.Actions, "each call and each compaction is an action")
	// What the model is shown now fits its window.
	require.Less(t, agent.Tokens(agent.Conversation(events)), 2000)
}

// TestDeliveryRequirementHoldsCompletion: an agent that must have its
// work accepted cannot archive itself until then; a person's waiver lets
// it complete.
func TestDeliveryRequirementHoldsCompletion(t *testing.T) {
	f := setup(t)
	f.tweak = func(a *spec.Agent) {
		a.Delivery.Require = spec.RequireAccepted
		a.Tools = append(a.Tools, "archive_session")
	}
	f.create(t, "s1", "replay/testdata/deliver.yaml", "finish")
	ctx := context.Background()
	f.env.RegisterDelayedCallback(func() {
		x, err := f.store.GetSession(ctx, "s1")
		require.NoError(t, err)
		require.Nil(t, x.ArchivedAt, "it may not complete yet")
		require.NoError(t, f.store.Deliver(ctx, "s1", x.BaseCommit, x.BaseCommit, session.DeliveryWaived, session.Sender{Kind: session.SenderOperator, ID: "ana"}, "nothing to ship"))
		f.send(t, "s1", session.KindMessage, session.MessagePayload{Message: "waived: go ahead"})
	}, time.Minute)
	f.env.RegisterDelayedCallback(func() {
		f.send(t, "s1", session.KindStop, session.StopPayload{Reason: "done"})
	}, time.Hour)
	f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s1"})
	require.NoError(t, f.env.GetWorkflowError())
	refused, archived := archiveCalls(t, f, "s1", "cannot complete until its work is accepted")
	require.True(t, refused, "the first archive is refused")
	require.True(t, archived, "after the waiver it completes")
}

// archiveCalls says whether session id's transcript has an archive_session
// call refused with an error containing refusal (or another call with
// such an error), and one that archived.
func archiveCalls(t *testing.T, f *fixture, id, refusal string) (refused, archived bool) {
	t.Helper()
	events, err := f.store.ListEvents(context.Background(), id, 0, 0)
	require.NoError(t, err)
	for _, e := range events {
		if e.Kind != session.EventToolCall {
			continue
		}
		var d session.ToolCallData
		require.NoError(t, json.Unmarshal(e.Data, &d))
		refused = refused || d.State == session.CallErrored && strings.Contains(d.Error, refusal)
		archived = archived || d.State == session.CallDone && d.Name == "archive_session"
	}
	return refused, archived
}

// TestHeldBindingKeepsTheSessionFromArchivingItself: an agent bound to
// an open pull request (a held binding) cannot declare itself done; once
// the forge's closing delivery releases the binding, it can.
func TestHeldBindingKeepsTheSessionFromArchivingItself(t *testing.T) {
	f := setup(t)
	f.tweak = func(a *spec.Agent) { a.Tools = append(a.Tools, "archive_session") }
	f.create(t, "s1", "replay/testdata/deliver.yaml", "finish")
	ctx := context.Background()
	const pr = "https://git.example.com/team/app/pulls/7"
	_, err := f.store.Bind(ctx, session.Binding{SessionID: "s1", Project: "default", Kind: session.BindPullRequest, Connection: "forge", Repo: "team/app", Number: 7, URL: pr, Held: true})
	require.NoError(t, err)
	f.env.RegisterDelayedCallback(func() {
		x, err := f.store.GetSession(ctx, "s1")
		require.NoError(t, err)
		require.Nil(t, x.ArchivedAt, "bound to an open pull request, it may not archive itself")
		bs, err := f.store.Bindings(ctx, "s1")
		require.NoError(t, err)
		require.Len(t, bs, 1)
		require.Nil(t, bs[0].ReleasedAt, "the refused archive released nothing")
		n, err := f.store.ReleaseBindings(ctx, "default", "forge", "team/app", 7, "trigger:closed")
		require.NoError(t, err)
		require.Equal(t, 1, n)
		f.send(t, "s1", session.KindMessage, session.MessagePayload{Message: "the pull request is merged"})
	}, time.Minute)
	f.env.RegisterDelayedCallback(func() {
		f.send(t, "s1", session.KindStop, session.StopPayload{Reason: "done"})
	}, time.Hour)
	f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s1"})
	require.NoError(t, f.env.GetWorkflowError())
	refused, archived := archiveCalls(t, f, "s1", "bound to "+pr+" (held)")
	require.True(t, refused, "the first archive is refused, naming the pull request")
	require.True(t, archived, "after the release it archives itself")
	x, err := f.store.GetSession(ctx, "s1")
	require.NoError(t, err)
	require.NotNil(t, x.ArchivedAt)
}

// TestBillingParkExpiresAfterSevenDays: a session parked on credits is
// not re-probed (a person says when credits were added); unresolved, its
// park expires after 7 days and the session fails.
func TestBillingParkExpiresAfterSevenDays(t *testing.T) {
	f := setup(t)
	f.acts.Providers.Register("broke", func(string) (provider.Provider, error) { return failing{noCredits, nil}, nil })
	f.create(t, "s1", "broke/model", "hello")
	start := f.env.Now()
	f.env.RegisterDelayedCallback(func() {
		x, err := f.store.GetSession(context.Background(), "s1")
		require.NoError(t, err)
		require.Equal(t, session.StatusAwaiting, x.Status, "six days in, still parked")
		require.Contains(t, x.AmbientStatus, "billing_insufficient_credits")
	}, 6*24*time.Hour)
	f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s1"})
	require.NoError(t, f.env.GetWorkflowError())
	require.GreaterOrEqual(t, f.env.Now().Sub(start), 7*24*time.Hour)
	x, err := f.store.GetSession(context.Background(), "s1")
	require.NoError(t, err)
	require.Equal(t, session.StatusFailed, x.Status)
	require.Contains(t, x.Error, "billing_insufficient_credits")
}
