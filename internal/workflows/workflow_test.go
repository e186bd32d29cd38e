package workflows

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/paddock-dev/paddock/internal/copies"
	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/durable/durabletest"
	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/provider/replay"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/tool"
)

type fixture struct {
	policy json.RawMessage // pinned on sessions the fixture creates
	tweak  func(*spec.Agent)
	store  store.Store
	acts   *durable.Activities
	env    *testsuite.TestWorkflowEnvironment
	repo   string
}

func setup(t *testing.T) *fixture {
	t.Helper()
	st, repo := durabletest.Store(t), durabletest.Repo(t)
	reg := provider.NewRegistry()
	reg.Register("replay", replay.Dir("."))
	acts := &durable.Activities{Store: st, Providers: reg, Tools: tool.Builtin(), Now: time.Now, Copies: &copies.Set{WorkspaceDir: t.TempDir()}}
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(SessionWorkflow)
	Register(env, acts)
	allowAll, _ := json.Marshal(&policy.Policy{Default: policy.AllowedWithoutPermission, ApprovalTTL: time.Hour})
	return &fixture{store: st, acts: acts, env: env, repo: repo, policy: allowAll}
}

func (f *fixture) create(t *testing.T, id, model, message string) {
	t.Helper()
	f.createWith(t, id, model, message, true)
}

func (f *fixture) createWith(t *testing.T, id, model, message string, interactive bool) {
	t.Helper()
	// No run_command: these tests need no sandbox (internal/app covers it).
	sp := spec.Agent{Name: "tester", Model: model, Tools: []string{"read_file", "write_file", "edit_file", "list_dir", "ask_user"}}
	if f.tweak != nil {
		f.tweak(&sp)
	}
	sp.Defaults()
	kind, payload := session.KindStart, json.RawMessage(`{}`)
	if message != "" {
		kind = session.KindStartWithMessage
		payload, _ = json.Marshal(session.MessagePayload{Message: message})
	}
	_, _, err := f.store.CreateSession(context.Background(), store.NewSession{ID: id, Project: "default",
		Agent: spec.Record{Project: "default", Name: "tester", Spec: sp.JSON(), Digest: sp.Digest()}, Repo: f.repo,
		Policy: f.policy, Interactive: interactive,
		CreatedBy: session.Sender{Kind: session.SenderOperator, ID: "t"}, StartKind: kind, StartPayload: payload})
	require.NoError(t, err)
}

// send records a command and signals the workflow, as the service does.
func (f *fixture) send(t *testing.T, id string, kind session.CommandKind, payload any) {
	t.Helper()
	data, _ := json.Marshal(payload)
	c, _, err := f.store.AppendCommand(context.Background(), store.NewCommand{ID: id + "-" + string(kind) + time.Now().String(), SessionID: id,
		Kind: kind, Payload: data, Sender: session.Sender{Kind: session.SenderOperator, ID: "t"}})
	require.NoError(t, err)
	f.env.SignalWorkflow(SignalCommand, Notice{CommandID: c.ID, Kind: kind})
}

func TestSessionWorkflowFullTurn(t *testing.T) {
	f := setup(t)
	f.create(t, "s1", "replay/testdata/script.yaml", "finish the notes")
	f.env.RegisterDelayedCallback(func() {
		x, err := f.store.GetSession(context.Background(), "s1")
		require.NoError(t, err)
		require.Equal(t, session.StatusAwaiting, x.Status)
		f.send(t, "s1", session.KindAnswer, session.AnswerPayload{ToolCallID: "call_2_0", Answers: map[string]string{"ship": "yes"}})
	}, time.Minute)
	f.env.RegisterDelayedCallback(func() {
		f.send(t, "s1", session.KindMessage, session.MessagePayload{Message: "one"})
		f.send(t, "s1", session.KindMessage, session.MessagePayload{Message: "two"})
	}, 2*time.Minute)
	f.env.RegisterDelayedCallback(func() {
		f.send(t, "s1", session.KindStop, session.StopPayload{Reason: "done", Handoff: "all shipped"})
	}, 3*time.Minute)
	f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s1"})
	require.True(t, f.env.IsWorkflowCompleted())
	require.NoError(t, f.env.GetWorkflowError())

	ctx := context.Background()
	x, err := f.store.GetSession(ctx, "s1")
	require.NoError(t, err)
	require.Equal(t, session.StatusStopped, x.Status)
	require.Equal(t, "all shipped", x.Handoff)
	require.NotEmpty(t, x.Workdir)
	require.NoDirExists(t, x.Workdir, "stop discards the unaccepted edit: the working copy goes with the session")
	orig, _ := os.ReadFile(filepath.Join(f.repo, "notes.txt"))
	require.Equal(t, "a draft note\n", string(orig), "the user's repository is untouched")

	turns, err := f.store.ListTurns(ctx, "s1")
	require.NoError(t, err)
	require.Len(t, turns, 3, "start turn, answer turn, one batched message turn")
	require.Equal(t, session.TurnCompleted, turns[0].Status, "the question was answered")
	require.Equal(t, session.TurnCompleted, turns[1].Status)
	require.Len(t, turns[2].CommandIDs, 2, "two pending messages combine into one turn")

	events, err := f.store.ListEvents(ctx, "s1", 0, 0)
	require.NoError(t, err)
	states := map[string][]session.ToolCallState{}
	for i, e := range events {
		require.Equal(t, int64(i+1), e.Seq)
		if e.Kind == session.EventToolCall {
			var d session.ToolCallData
			require.NoError(t, json.Unmarshal(e.Data, &d))
			states[d.ID] = append(states[d.ID], d.State)
		}
	}
	require.Equal(t, []session.ToolCallState{"generating", "generated", "calling", "done"}, states["call_0_0"])
	require.Equal(t, []session.ToolCallState{"generating", "generated", "calling", "errored"}, states["call_0_1"], "unknown field in args → errored, returned to the model")
	require.Equal(t, []session.ToolCallState{"generating", "generated", "calling", "done"}, states["call_2_0"])
	cmds, err := f.store.ListCommands(ctx, "s1")
	require.NoError(t, err)
	for _, c := range cmds {
		require.Equal(t, session.CommandAccepted, c.State, c.Kind)
	}
}

func TestSessionWorkflowBareStartAndBadAnswer(t *testing.T) {
	f := setup(t)
	f.create(t, "s2", "replay/testdata/script.yaml", "")
	f.env.RegisterDelayedCallback(func() {
		x, _ := f.store.GetSession(context.Background(), "s2")
		require.Equal(t, session.StatusAwaiting, x.Status, "a bare start boots the runtime and awaits")
		f.send(t, "s2", session.KindAnswer, session.AnswerPayload{ToolCallID: "nope", Response: "hi"})
		f.send(t, "s2", session.KindInterrupt, session.InterruptPayload{})
	}, time.Minute)
	f.env.RegisterDelayedCallback(func() {
		f.send(t, "s2", session.KindStop, session.StopPayload{}) // a stop sent with them would cancel them
	}, 2*time.Minute)
	f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s2"})
	require.NoError(t, f.env.GetWorkflowError())
	cmds, err := f.store.ListCommands(context.Background(), "s2")
	require.NoError(t, err)
	require.Equal(t, session.CommandFailed, cmds[1].State)
	require.Contains(t, cmds[1].Error, "no question with toolCallId nope")
	require.Equal(t, session.CommandAccepted, cmds[2].State)
}

func TestSessionWorkflowProvisionFailure(t *testing.T) {
	f := setup(t)
	f.create(t, "s4", "replay/testdata/script.yaml", "go")
	f.acts.Providers = provider.NewRegistry() // the model can no longer be resolved
	f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s4"})
	require.NoError(t, f.env.GetWorkflowError())
	x, err := f.store.GetSession(context.Background(), "s4")
	require.NoError(t, err)
	require.Equal(t, session.StatusFailed, x.Status)
	require.Contains(t, x.Error, "provisioning failed")
	require.Contains(t, x.Error, "no provider \"replay\"")
	require.Contains(t, x.FailureReason, "provisioning failed")
}

// TestApprovalLapses: a call waiting for approval past the policy's TTL is
// expired by a durable timer (time-skipped here) and the turn stops.
func TestApprovalLapses(t *testing.T) {
	f := setup(t)
	f.policy, _ = json.Marshal(&policy.Policy{Default: policy.AllowedWithPermission, ApprovalTTL: 2 * time.Hour,
		Tools: map[string]policy.Value{"read_file": policy.AllowedWithoutPermission}})
	f.create(t, "s5", "replay/testdata/script.yaml", "go")
	f.env.RegisterDelayedCallback(func() {
		pending, err := f.store.ListApprovals(context.Background(), session.ApprovalFilter{SessionID: "s5", Status: session.ApprovalPending})
		require.NoError(t, err)
		require.Len(t, pending, 1, "the edit waits for approval")
	}, time.Hour)
	f.env.RegisterDelayedCallback(func() {
		f.send(t, "s5", session.KindStop, session.StopPayload{})
	}, 3*time.Hour)
	f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s5"})
	require.NoError(t, f.env.GetWorkflowError())
	all, err := f.store.ListApprovals(context.Background(), session.ApprovalFilter{SessionID: "s5"})
	require.NoError(t, err)
	require.Len(t, all, 1)
	require.Equal(t, session.ApprovalExpired, all[0].Status)
	turns, err := f.store.ListTurns(context.Background(), "s5")
	require.NoError(t, err)
	require.Equal(t, session.TurnFailed, turns[0].Status)
	require.Contains(t, turns[0].Error, "rejected: expired")
}

// TestIdleSessionIsReaped: an idle session's sandbox is released after the
// agent's idle interval (time-skipped); the next message rehydrates it.
func TestIdleSessionIsReaped(t *testing.T) {
	f := setup(t)
	f.create(t, "s6", "replay/testdata/script.yaml", "")
	f.env.RegisterDelayedCallback(func() {
		x, err := f.store.GetSession(context.Background(), "s6")
		require.NoError(t, err)
		require.Equal(t, session.StatusAwaiting, x.Status)
		require.Equal(t, "idle (sandbox released)", x.AmbientStatus)
		f.send(t, "s6", session.KindMessage, session.MessagePayload{Message: "wake up"})
	}, 20*time.Minute) // the default idle interval is 15 minutes
	f.env.RegisterDelayedCallback(func() {
		f.send(t, "s6", session.KindStop, session.StopPayload{})
	}, 21*time.Minute)
	f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s6"})
	require.NoError(t, f.env.GetWorkflowError())
	events, err := f.store.ListEvents(context.Background(), "s6", 0, 0)
	require.NoError(t, err)
	var notices []string
	for _, e := range events {
		if e.Kind == session.EventNotice {
			var d session.TextData
			require.NoError(t, json.Unmarshal(e.Data, &d))
			notices = append(notices, d.Text)
		}
	}
	require.Contains(t, notices[0], "sandbox released")
	require.Equal(t, "sandbox ready again", notices[1])
	turns, err := f.store.ListTurns(context.Background(), "s6")
	require.NoError(t, err)
	require.Len(t, turns, 1, "the message after the reap ran a turn")
}

// TestSilentStepMakesTheTurnStale: a model step that times out on every
// attempt (its worker went silent) concludes the turn stale, and the session
// awaits the next command.
func TestSilentStepMakesTheTurnStale(t *testing.T) {
	f := setup(t)
	f.create(t, "s7", "replay/testdata/script.yaml", "go")
	f.env.OnActivity(f.acts.Turns().ModelStep, mock.Anything, mock.Anything, mock.Anything, mock.Anything).
		Return(provider.Response{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil))
	f.env.RegisterDelayedCallback(func() {
		f.send(t, "s7", session.KindStop, session.StopPayload{})
	}, time.Hour)
	f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s7"})
	require.NoError(t, f.env.GetWorkflowError())
	turns, err := f.store.ListTurns(context.Background(), "s7")
	require.NoError(t, err)
	require.Equal(t, session.TurnStale, turns[0].Status)
	require.Contains(t, turns[0].Error, "made no progress")
}

// TestStopWinsOverQueuedMessages: a stop sent while a turn waits for an
// approval, with a message queued behind it, ends the turn, cancels the
// queued message (recorded as canceled, never run as a turn) and stops
// the session; the unapproved edit is never made.
func TestStopWinsOverQueuedMessages(t *testing.T) {
	f := setup(t)
	f.policy, _ = json.Marshal(&policy.Policy{Default: policy.AllowedWithPermission, ApprovalTTL: 2 * time.Hour,
		Tools: map[string]policy.Value{"read_file": policy.AllowedWithoutPermission}})
	f.create(t, "s9", "replay/testdata/script.yaml", "go")
	f.env.RegisterDelayedCallback(func() {
		pending, err := f.store.ListApprovals(context.Background(), session.ApprovalFilter{SessionID: "s9", Status: session.ApprovalPending})
		require.NoError(t, err)
		require.Len(t, pending, 1, "the edit waits for approval")
		f.send(t, "s9", session.KindMessage, session.MessagePayload{Message: "queued behind the approval"})
		f.send(t, "s9", session.KindStop, session.StopPayload{Reason: "enough"})
	}, time.Minute)
	f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s9"})
	require.NoError(t, f.env.GetWorkflowError())
	ctx := context.Background()
	x, err := f.store.GetSession(ctx, "s9")
	require.NoError(t, err)
	require.Equal(t, session.StatusStopped, x.Status)
	turns, err := f.store.ListTurns(ctx, "s9")
	require.NoError(t, err)
	require.Len(t, turns, 1, "the queued message never ran as a turn")
	cmds, err := f.store.ListCommands(ctx, "s9")
	require.NoError(t, err)
	states := map[session.CommandKind]session.CommandState{}
	for _, c := range cmds {
		states[c.Kind] = c.State
		if c.Kind == session.KindMessage {
			require.Contains(t, c.Error, "stopped")
		}
	}
	require.Equal(t, session.CommandCanceled, states[session.KindMessage])
	require.Equal(t, session.CommandAccepted, states[session.KindStop])
	all, err := f.store.ListApprovals(ctx, session.ApprovalFilter{SessionID: "s9"})
	require.NoError(t, err)
	require.Len(t, all, 1)
	require.NotEqual(t, session.ApprovalApproved, all[0].Status)
	data, err := os.ReadFile(filepath.Join(x.Workdir, "notes.txt"))
	if err == nil {
		require.Equal(t, "a draft note\n", string(data), "the unapproved edit was not made")
	}
}

// TestStopWhileATurnOpens: a stop sent while the answer that opens the
// next turn is delivered stops the session before that turn runs
// anything; a second stop sent with the first is settled too (also when
// both interrupt a model step).
func TestStopWhileATurnOpens(t *testing.T) {
	for _, during := range []string{"Answer", "ModelStep"} {
		t.Run(during, func(t *testing.T) {
			f := setup(t)
			f.create(t, "s1", "replay/testdata/script.yaml", "go")
			sent := false
			f.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
				if info.ActivityType.Name == during && !sent {
					sent = true
					f.send(t, "s1", session.KindStop, session.StopPayload{Reason: "one"})
					f.send(t, "s1", session.KindStop, session.StopPayload{Reason: "two"})
				}
			})
			// The script's first turn ends at its question; the answer opens the next.
			f.env.RegisterDelayedCallback(func() {
				f.send(t, "s1", session.KindAnswer, session.AnswerPayload{ToolCallID: "call_2_0", Answers: map[string]string{"ship": "yes"}})
			}, time.Minute)
			f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s1"})
			require.NoError(t, f.env.GetWorkflowError())
			ctx := context.Background()
			x, err := f.store.GetSession(ctx, "s1")
			require.NoError(t, err)
			require.Equal(t, session.StatusStopped, x.Status)
			cmds, err := f.store.ListCommands(ctx, "s1")
			require.NoError(t, err)
			stops := 0
			for _, c := range cmds {
				require.NotContains(t, []session.CommandState{session.CommandPending, session.CommandDispatching}, c.State, "%s %s", c.Kind, c.ID)
				if c.Kind == session.KindStop {
					stops++
					require.Equal(t, session.CommandAccepted, c.State)
				}
			}
			require.Equal(t, 2, stops)
			events, err := f.store.ListEvents(ctx, "s1", 0, 0)
			require.NoError(t, err)
			var text strings.Builder
			for _, e := range events {
				var d session.TextData
				if e.Kind == session.EventAssistantText && json.Unmarshal(e.Data, &d) == nil {
					text.WriteString(d.Text)
				}
			}
			require.NotContains(t, text.String(), "Shipped.", "the turn the answer opens never ran")
		})
	}
}

// TestReleaseLostToACrashIsFound: a hold released in the store whose
// signal never came (a crash between the two) is found at the next
// recheck; the session then idles as any other.
func TestReleaseLostToACrashIsFound(t *testing.T) {
	f := setup(t)
	f.create(t, "s-held", "replay/testdata/script.yaml", "")
	ctx := context.Background()
	f.env.RegisterDelayedCallback(func() {
		require.NoError(t, f.store.SetHold(ctx, "s-held", &session.Hold{By: session.Sender{Kind: session.SenderOperator, ID: "t"}, Reason: "look", At: time.Now()}))
		f.env.SignalWorkflow(SignalCommand, Notice{}) // as Hold does
	}, time.Minute)
	f.env.RegisterDelayedCallback(func() {
		require.NoError(t, f.store.SetHold(ctx, "s-held", nil)) // released; the signal lost
	}, 2*time.Minute)
	f.env.RegisterDelayedCallback(func() {
		x, err := f.store.GetSession(ctx, "s-held")
		require.NoError(t, err)
		require.NotEqual(t, "idle (sandbox released)", x.AmbientStatus, "held, no timer runs")
	}, 30*time.Minute)
	f.env.RegisterDelayedCallback(func() {
		x, err := f.store.GetSession(ctx, "s-held")
		require.NoError(t, err)
		require.Equal(t, "idle (sandbox released)", x.AmbientStatus, "claimed again after the recheck, then idle after 15 minutes")
		f.send(t, "s-held", session.KindStop, session.StopPayload{})
	}, heldRecheck+time.Minute+20*time.Minute)
	f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s-held"})
	require.NoError(t, f.env.GetWorkflowError())
}
