package workflows

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/shellcheck"
	"github.com/paddock-dev/paddock/internal/store"
)

// TestCallInterruptedByACrashRunsAtMostOnce: a call with side effects
// whose execution began (it reached calling) before a crash is not started
// again when its activity is retried; it ends errored saying why. An
// idempotent read runs again.
func TestCallInterruptedByACrashRunsAtMostOnce(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	f.create(t, "s1", "replay/demo", "")
	require.NoError(t, f.acts.Lifecycle().Provision(ctx, "s1"))
	allow := policy.Decision{Verdict: shellcheck.Allow, Rule: "test"}
	by := session.Attribution{Kind: session.ByAutomation, Rule: "test"}
	began := func(id, name string, args string) provider.ToolCall {
		call := provider.ToolCall{ID: id, Name: name, Args: json.RawMessage(args)}
		require.NoError(t, durable.RecordCall(ctx, f.store, "s1", "turn-1", session.ToolCallData{ID: id, Name: name, State: session.CallCalling, By: &by}))
		return call
	}
	call := began("c1", "edit_file", `{"path":"notes.txt","old":"draft","new":"final"}`)
	out, err := f.acts.Turns().RunTool(ctx, "s1", "turn-1", call, allow, by)
	require.NoError(t, err)
	require.Equal(t, session.CallErrored, out.State)
	events, err := durable.CallEvents(ctx, f.store, "s1", "c1")
	require.NoError(t, err)
	var last session.ToolCallData
	require.NoError(t, json.Unmarshal(events[len(events)-1].Data, &last))
	require.Contains(t, last.Error, "interrupted by a restart of the server; its effects may be partial")

	// Retried once more: the recorded end stands, still not run.
	out, err = f.acts.Turns().RunTool(ctx, "s1", "turn-1", call, allow, by)
	require.NoError(t, err)
	require.Equal(t, session.CallErrored, out.State)

	read := began("c2", "read_file", `{"path":"notes.txt"}`)
	out, err = f.acts.Turns().RunTool(ctx, "s1", "turn-1", read, allow, by)
	require.NoError(t, err)
	require.Equal(t, session.CallDone, out.State, "an idempotent read runs again")
	x, err := f.store.GetSession(ctx, "s1")
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(x.Workdir, "notes.txt"))
	require.NoError(t, err)
	require.Equal(t, "a draft note\n", string(data), "the interrupted edit did not run again")
}

// TestProvisionAfterAnAttemptCutShort: an attempt cut short (its
// heartbeat lapsed on a busy machine) may leave a working copy half made
// and unrecorded; the next attempt makes it again, while a copy an
// attempt made and recorded is kept.
func TestProvisionAfterAnAttemptCutShort(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	f.create(t, "s1", "replay/demo", "")
	half := filepath.Join(f.acts.Copies.WorkspaceDir, "s1")
	require.NoError(t, os.MkdirAll(filepath.Join(half, ".git"), 0o700)) // git init's directory, no commit yet
	require.NoError(t, f.acts.Lifecycle().Provision(ctx, "s1"))
	x, err := f.store.GetSession(ctx, "s1")
	require.NoError(t, err)
	require.Equal(t, half, x.Workdir)
	require.NotEmpty(t, x.BaseCommit)
	require.NoError(t, os.WriteFile(filepath.Join(half, "kept.txt"), []byte("x"), 0o644))
	require.NoError(t, f.acts.Lifecycle().Provision(ctx, "s1"), "a retried provision")
	require.FileExists(t, filepath.Join(half, "kept.txt"), "the recorded copy is kept")
}

// lostTurn is a fixture whose session s1 is left as a workflow task
// leaves it that claimed the start and opened its turn (local
// activities, recorded only when the task completes), then died with its
// worker: the command accepted, the turn open, nothing recorded.
func lostTurn(t *testing.T) *fixture {
	t.Helper()
	f := setup(t)
	ctx := context.Background()
	f.create(t, "s1", "replay/testdata/runaway.yaml", "look around")
	require.NoError(t, f.acts.Lifecycle().Provision(ctx, "s1"))
	claimed, err := f.store.ClaimBatch(ctx, "s1")
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.NoError(t, f.acts.Turns().OpenTurn(ctx, "turn-"+claimed[0].ID, claimed))
	return f
}

// TestTurnOpenedByALostWorkflowTaskResumes: a workflow task that claimed
// the start and opened its turn (local activities, recorded only when the
// task completes) and then died with its worker leaves the command
// accepted and the turn in progress, while the workflow, run again from
// its history, claims again. That claim resumes the turn: it used to find
// nothing pending, and the session slept with its turn open forever (a
// delegated session so never returned to the one waiting on it).
func TestTurnOpenedByALostWorkflowTaskResumes(t *testing.T) {
	f := lostTurn(t)
	ctx := context.Background()

	f.env.RegisterDelayedCallback(func() {
		f.send(t, "s1", session.KindStop, session.StopPayload{})
	}, time.Hour)
	f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s1", Provisioned: true})
	require.NoError(t, f.env.GetWorkflowError())
	turns, err := f.store.ListTurns(ctx, "s1")
	require.NoError(t, err)
	require.Len(t, turns, 1, "the open turn resumed, not another")
	require.Equal(t, session.TurnCompleted, turns[0].Status, turns[0].Error)
	events, err := f.store.ListEvents(ctx, "s1", 0, 0)
	require.NoError(t, err)
	require.True(t, slices.ContainsFunc(events, func(e session.Event) bool {
		return e.Kind == session.EventAssistantText && strings.Contains(string(e.Data), "Summary: I listed the directory")
	}), "the model was asked and answered to the end")
}

// TestStopWaitingEndsATurnALostWorkflowTaskOpened: a stop recorded while
// such a turn was open, its signal lost, is not queued behind it: the
// turn ends interrupted, the model is not asked again, the session stops.
func TestStopWaitingEndsATurnALostWorkflowTaskOpened(t *testing.T) {
	f := lostTurn(t)
	ctx := context.Background()
	_, _, err := f.store.AppendCommand(ctx, store.NewCommand{ID: "stop", SessionID: "s1", Kind: session.KindStop, Sender: session.Sender{Kind: session.SenderOperator, ID: "t"}})
	require.NoError(t, err)

	f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s1", Provisioned: true})
	require.NoError(t, f.env.GetWorkflowError())
	x, err := f.store.GetSession(ctx, "s1")
	require.NoError(t, err)
	require.Equal(t, session.StatusStopped, x.Status)
	turns, err := f.store.ListTurns(ctx, "s1")
	require.NoError(t, err)
	require.Len(t, turns, 1)
	require.Equal(t, session.TurnFailed, turns[0].Status)
	require.Contains(t, turns[0].Error, "interrupted (command stop)")
	events, err := f.store.ListEvents(ctx, "s1", 0, 0)
	require.NoError(t, err)
	require.False(t, slices.ContainsFunc(events, func(e session.Event) bool { return e.Kind == session.EventAssistantText }), "the model was not asked")
}
