package app_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// scriptText installs a script written by the test (one that names
// sessions only known at run time) and names its model.
func scriptText(t *testing.T, name, text string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(sharedDir, "replay"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(sharedDir, "replay", name), []byte(text), 0o600))
	return "replay/" + name
}

// settledTurns waits until session id has n turns, all settled.
func settledTurns(t *testing.T, c *client.Client, id string, n int) {
	t.Helper()
	waitFor(t, "turns of "+id, func() (bool, error) {
		turns, err := c.Sessions().Turns(context.Background(), id)
		if err != nil || len(turns) < n {
			return false, err
		}
		for _, tu := range turns {
			if tu.Status != session.TurnCompleted && tu.Status != session.TurnFailed {
				return false, nil
			}
		}
		return true, nil
	})
}

// TestSupervisorSteersAStuckSession: an agent finds a session that
// stopped short (sessions_search), reads what it is at
// (sessions_summary, sessions_conversation) and steers it
// (sessions_send); the stuck session reads the message as one from an
// agent acting for the same person, and goes on.
func TestSupervisorSteersAStuckSession(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sessions")
	}
	ctx := context.Background()
	worker := unique("stuck-worker")
	applyAgent(t, worker, scriptText(t, worker+".yaml", `steps:
  - text: "I am blocked: I do not know which file holds the bug."
  - text: "Thanks: fixing notes.txt now."
`), "")
	stuck, err := api.Sessions().Create(ctx, wire.CreateRequest{Agent: worker, Message: "fix the bug"})
	require.NoError(t, err)
	settledTurns(t, api, stuck.ID, 1)

	sup := scriptText(t, unique("supervisor")+".yaml", `steps:
  - toolCalls:
      - name: sessions_search
        args: {agent: `+worker+`, status: awaiting}
  - toolCalls:
      - name: sessions_summary
        args: {session: `+stuck.ID+`}
      - name: sessions_conversation
        args: {session: `+stuck.ID+`, limit: 200}
      - name: sessions_commands
        args: {session: `+stuck.ID+`}
  - toolCalls:
      - name: sessions_send
        args: {session: `+stuck.ID+`, message: "The bug is in notes.txt."}
  - text: "Steered it."
`)
	boss, err := api.Sessions().Create(ctx, wire.CreateRequest{Model: sup, Message: "find stuck sessions and unblock them"})
	require.NoError(t, err)
	settledTurns(t, api, boss.ID, 1)

	calls := finalCalls(t, api, boss.ID)
	for _, id := range []string{"call_0_0", "call_1_0", "call_1_1", "call_1_2", "call_2_0"} {
		require.Equal(t, session.CallDone, calls[id].State, "%s: %s", id, calls[id].Error)
	}
	var found []map[string]any
	require.NoError(t, json.Unmarshal([]byte(calls["call_0_0"].Result), &found))
	require.Len(t, found, 1)
	require.Equal(t, stuck.ID, found[0]["id"])
	var summary map[string]any
	require.NoError(t, json.Unmarshal([]byte(calls["call_1_0"].Result), &summary))
	require.Equal(t, "awaiting", summary["status"])
	require.Equal(t, "operator:tester", summary["createdBy"])
	require.Contains(t, summary["budget"], "actions")
	require.Contains(t, calls["call_1_1"].Result, "I am blocked")
	require.Contains(t, calls["call_1_1"].Result, `"sender": "operator:tester"`)
	require.Contains(t, calls["call_1_2"].Result, `"startWithMessage"`)

	// The stuck session goes on, the message typed as an agent's.
	settledTurns(t, api, stuck.ID, 2)
	cmds, err := api.Sessions().Commands(ctx, stuck.ID)
	require.NoError(t, err)
	last := cmds[len(cmds)-1]
	require.Equal(t, session.KindMessage, last.Kind)
	require.Equal(t, session.SenderAgent, last.Sender.Kind)
	require.Equal(t, boss.ID, last.Sender.ID)
	require.NotNil(t, last.Sender.OnBehalfOf)
	require.Equal(t, "operator:tester", last.Sender.OnBehalfOf.String())
	events, err := api.Sessions().Events(ctx, stuck.ID, 0)
	require.NoError(t, err)
	var steered, answered bool
	for _, e := range events {
		var d session.TextData
		_ = json.Unmarshal(e.Data, &d)
		steered = steered || e.Kind == session.EventUserMessage && d.Sender != nil && d.Sender.Kind == session.SenderAgent && strings.Contains(d.Text, "notes.txt")
		answered = answered || e.Kind == session.EventAssistantText && strings.Contains(d.Text, "fixing notes.txt")
	}
	require.True(t, steered, "the transcript shows the agent's message and its sender")
	require.True(t, answered)

	// The audit log names the agent and whom it acted for.
	entries, err := api.Audit().Log(ctx, stuck.ID, false)
	require.NoError(t, err)
	var named bool
	for _, en := range entries {
		named = named || en.Identity == "agent:"+boss.ID+" for operator:tester"
	}
	require.True(t, named, "the command's audit entry names the sending agent and its requester")
}

// TestSessionsToolsSeeOnlyTheRequestersProject: a session's agent sees
// nothing its requester may not read: another project's session is not
// found by any tool, a search finds only the requester's project, and a
// requester whose role is taken away makes the tools see nothing at all.
func TestSessionsToolsSeeOnlyTheRequestersProject(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sessions")
	}
	ctx := context.Background()
	hidden, err := api.Sessions().Create(ctx, wire.CreateRequest{Model: script(t, "empty.yaml"), Message: "a secret plan"})
	require.NoError(t, err)

	project, user := unique("side"), unique("bob")
	member(t, project, user, identity.Member)
	_, asBob := tokenOf(t, user)
	_, err = api.Projects().SetPolicy(ctx, project, []byte("default: allow\n"))
	require.NoError(t, err)
	prying := scriptText(t, unique("prying")+".yaml", `steps:
  - toolCalls:
      - name: sessions_summary
        args: {session: `+hidden.ID+`}
      - name: sessions_conversation
        args: {session: `+hidden.ID+`}
      - name: sessions_send
        args: {session: `+hidden.ID+`, message: "do something else"}
      - name: sessions_search
        args: {}
      - name: sessions_bindings
        args: {session: `+hidden.ID+`}
  - text: "looked"
  - toolCalls:
      - name: sessions_search
        args: {}
      - name: sessions_summary
        args: {}
  - text: "looked again"
`)
	x, err := asBob.Sessions().Create(ctx, wire.CreateRequest{Project: project, Model: prying, Message: "look around"})
	require.NoError(t, err)
	settledTurns(t, asBob, x.ID, 1)
	calls := finalCalls(t, asBob, x.ID)
	for _, id := range []string{"call_0_0", "call_0_1", "call_0_2", "call_0_4"} {
		require.Equal(t, session.CallErrored, calls[id].State, id)
		require.Contains(t, calls[id].Error, "not found", id)
		require.NotContains(t, calls[id].Error, "secret plan")
	}
	var found []map[string]any
	require.NoError(t, json.Unmarshal([]byte(calls["call_0_3"].Result), &found))
	require.Len(t, found, 1, "only the requester's project: this session")
	require.Equal(t, x.ID, found[0]["id"])
	cmds, err := api.Sessions().Commands(ctx, hidden.ID)
	require.NoError(t, err)
	require.Len(t, cmds, 1, "nothing was sent to the other project's session")

	// Bob loses his role: his session's agent sees nothing any more.
	require.NoError(t, api.Access().RemoveMember(ctx, project, user))
	send(t, x.ID, session.KindMessage, session.MessagePayload{Message: "look again"})
	settledTurns(t, api, x.ID, 2)
	calls = finalCalls(t, api, x.ID)
	require.Equal(t, session.CallDone, calls["call_2_0"].State, calls["call_2_0"].Error)
	require.Equal(t, "[]", strings.TrimSpace(calls["call_2_0"].Result))
	require.Equal(t, session.CallErrored, calls["call_2_1"].State)
	require.Contains(t, calls["call_2_1"].Error, "not found")
}
