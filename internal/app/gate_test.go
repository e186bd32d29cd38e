package app_test

import (
	"context"
	"encoding/json"
	"net/http"
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

// gatedSession starts gated.yaml in a project whose policy asks for all but
// ls, non-interactive with the named approver, and returns the one approval
// it comes to wait for.
func gatedSession(t *testing.T, project, approver string) (session.Session, session.Approval) {
	t.Helper()
	ctx := context.Background()
	_, err := api.Projects().SetPolicy(ctx, project, []byte("default: ask\ncommands:\n  allow: [ls]\ncontinueAfterToolRejection: true\n"))
	require.NoError(t, err)
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Project: project, Model: script(t, "gated.yaml"), Message: "go",
		Repo: gitRepo(t), NonInteractive: true, Approver: approver})
	require.NoError(t, err)
	var pending []session.Approval
	waitFor(t, "the approval request", func() (bool, error) {
		var err error
		pending, err = api.Gates().Approvals(ctx, session.ApprovalFilter{SessionID: x.ID, Status: session.ApprovalPending})
		return len(pending) == 1, err
	})
	return x, pending[0]
}

// TestGatedSession: refused commands never run, a free one runs on the
// automation's word, and one that needs permission waits for a named
// person's approval, runs in the sandbox, and records who approved it.
func TestGatedSession(t *testing.T) {
	ctx := context.Background()
	x, ap := gatedSession(t, "gated", "tester")
	require.Equal(t, "run_command", ap.Tool)
	require.Contains(t, string(ap.Args), "made.txt")
	require.True(t, strings.HasPrefix(ap.Digest, "sha256:"))
	s, err := api.Sessions().Get(ctx, x.ID)
	require.NoError(t, err)
	require.Equal(t, session.StatusRunning, s.Status, "the turn waits, parked on the approval")
	require.Contains(t, s.AmbientStatus, "waiting for approval")

	ap, err = api.Gates().Decide(ctx, ap.ID, true, "fine by me")
	require.NoError(t, err)
	require.Equal(t, session.ApprovalApproved, ap.Status)
	require.Equal(t, "tester", ap.DecidedBy.ID)
	_, err = api.Gates().Decide(ctx, ap.ID, false, "")
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusConflict, apiErr.Status, "decided once")

	waitFor(t, "the turn to complete", func() (bool, error) {
		turns, err := api.Sessions().Turns(ctx, x.ID)
		return len(turns) == 1 && turns[0].Status == session.TurnCompleted, err
	})
	events, err := api.Sessions().Events(ctx, x.ID, 0)
	require.NoError(t, err)
	final := map[string]session.ToolCallData{}
	for _, e := range events {
		if e.Kind == session.EventToolCall {
			var d session.ToolCallData
			require.NoError(t, json.Unmarshal(e.Data, &d))
			if d.State.Final() {
				final[d.ID] = d
			}
		}
	}
	require.Equal(t, session.CallRejected, final["call_0_0"].State)
	require.Contains(t, final["call_0_0"].Error, "privilege-escalation")
	require.Equal(t, session.CallRejected, final["call_0_1"].State)
	require.Contains(t, final["call_0_1"].Error, "system-destruction")
	require.Equal(t, session.CallDone, final["call_0_2"].State)
	require.Equal(t, &session.Attribution{Kind: session.ByAutomation, Rule: "commands.allow"}, final["call_0_2"].By)
	require.Equal(t, session.CallDone, final["call_0_3"].State)
	require.Equal(t, session.ByHuman, final["call_0_3"].By.Kind)
	require.Equal(t, "tester", final["call_0_3"].By.By)
	require.Equal(t, ap.ID, final["call_0_3"].By.Approval)
	require.Contains(t, final["call_0_3"].Result, "made")
	s, err = api.Sessions().Get(ctx, x.ID)
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(s.Workdir, "made.txt"))
	require.NoError(t, err)
	require.Equal(t, "made\n", string(data))
	if os.Getuid() == 0 {
		require.Contains(t, final["call_0_3"].Result, "61000", "the command ran as the sandbox user")
	}
}

// TestApprovalsBelongToTheNamedApprover: a non-interactive run that names
// someone else cannot be approved by this operator; one that names nobody
// rejects at once with a clear reason.
func TestApprovalsBelongToTheNamedApprover(t *testing.T) {
	ctx := context.Background()
	member(t, "gated2", "alice", identity.Member)
	member(t, "gated2", "vic", identity.Viewer)
	_, err := api.Sessions().Create(ctx, wire.CreateRequest{Project: "gated2", Model: "replay/demo", Message: "go", NonInteractive: true, Approver: "vic"})
	require.Equal(t, http.StatusBadRequest, apiStatus(t, err), "a viewer may not be named approver: %v", err)
	_, err = api.Sessions().Create(ctx, wire.CreateRequest{Project: "gated2", Model: "replay/demo", Message: "go", NonInteractive: true, Approver: "nobody-here"})
	require.Equal(t, http.StatusBadRequest, apiStatus(t, err), "nor someone who is not a user: %v", err)
	x, ap := gatedSession(t, "gated2", "alice")
	_, err = api.Gates().Decide(ctx, ap.ID, true, "")
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusForbidden, apiErr.Status)
	require.Contains(t, apiErr.Body.Error, "names alice as its approver")
	_, asVic := tokenOf(t, "vic")
	_, err = asVic.Gates().Decide(ctx, ap.ID, true, "")
	require.Equal(t, http.StatusForbidden, apiStatus(t, err), "a viewer cannot decide: %v", err)
	_, asAlice := tokenOf(t, "alice")
	decided, err := asAlice.Gates().Decide(ctx, ap.ID, true, "looks fine")
	require.NoError(t, err, "the named approver decides with her own token")
	require.Equal(t, "alice", decided.DecidedBy.ID)
	send(t, x.ID, session.KindStop, session.StopPayload{})
	waitStatus(t, x.ID, session.StatusStopped)

	y, err := api.Sessions().Create(ctx, wire.CreateRequest{Project: "gated2", Model: script(t, "gated.yaml"), Message: "go",
		Repo: gitRepo(t), NonInteractive: true})
	require.NoError(t, err)
	waitFor(t, "the turn to complete", func() (bool, error) {
		turns, err := api.Sessions().Turns(ctx, y.ID)
		return len(turns) == 1 && turns[0].Status == session.TurnCompleted, err
	})
	events, err := api.Sessions().Events(ctx, y.ID, 0)
	require.NoError(t, err)
	found := false
	for _, e := range events {
		found = found || strings.Contains(string(e.Data), "non-interactive and names no approver")
	}
	require.True(t, found)
}

// TestAgentPolicyOnlyTightens: an agent's policy disables run_command; the
// project allows everything, yet the call is refused, and the agent cannot
// reopen what the project disables.
func TestAgentPolicyOnlyTightens(t *testing.T) {
	ctx := context.Background()
	_, err := api.Projects().SetPolicy(ctx, "tight", []byte("default: allow\ntools:\n  write_file: disabled\n"))
	require.NoError(t, err)
	applyAgent(t, "careful", script(t, "gated.yaml"), "project: tight\npolicy:\n  default: allow\n  tools:\n    run_command: exclude\n    write_file: allow\n")
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Project: "tight", Agent: "careful", Message: "go", Repo: gitRepo(t)})
	require.NoError(t, err)
	require.Contains(t, string(x.Policy), `"run_command":"disabled"`)
	require.Contains(t, string(x.Policy), `"write_file":"disabled"`, "the project's disabled tool stays disabled")
	waitFor(t, "the turn to end", func() (bool, error) {
		turns, err := api.Sessions().Turns(ctx, x.ID)
		return len(turns) == 1 && turns[0].Status.Settled(), err
	})
	turns, err := api.Sessions().Turns(ctx, x.ID)
	require.NoError(t, err)
	require.Contains(t, turns[0].Error, "run_command is disabled by policy")
}
