package app_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/app"
	"github.com/paddock-dev/paddock/internal/cli"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// paddockIn is paddock with standard input.
func paddockIn(t *testing.T, in string, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	env := map[string]string{"PADDOCK_SERVER": shared.URL, "PADDOCK_TOKEN": adminToken}
	code := cli.Run(context.Background(), args, cli.IO{Server: app.CLI, In: strings.NewReader(in), Out: &out, Err: &out, Getenv: func(k string) string { return env[k] }})
	return code, out.String()
}

// TestRunawayNonInteractiveExits3: a runaway agent spends its actions in
// a non-interactive run: the session stops cleanly with a final summary
// written without tools, and `paddock run` exits 3 saying so.
func TestRunawayNonInteractiveExits3(t *testing.T) {
	name := unique("runaway")
	applyAgent(t, name, script(t, "runaway.yaml"), "tools: [list_dir]\nsession:\n  maxActions: 3\n")
	code, out := paddock(t, "run", "--agent", name, "--repo", gitRepo(t), "--non-interactive", "look around")
	require.Equal(t, 3, code, out)
	require.Contains(t, out, "budget exhausted: used 3 of 3 actions")
	require.Contains(t, out, "paddock sessions diff")
	list, err := api.Sessions().List(context.Background(), session.Filter{Agent: name})
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.True(t, list[0].BudgetStopped())
	require.NotEmpty(t, list[0].Handoff, "the final summary")
}

// TestRunawayInteractiveExtension: interactively, the session parks
// asking for an extension, saying what it consumed and what the next one
// grants; the person at the terminal grants it (recorded as them) and the
// work goes on; with no extension left, the run exits 3.
func TestRunawayInteractiveExtension(t *testing.T) {
	name := unique("runaway")
	applyAgent(t, name, script(t, "runaway.yaml"), "tools: [list_dir]\nsession:\n  maxActions: 3\n  maxExtensions: 1\n")
	code, out := paddockIn(t, "y\n", "run", "--agent", name, "--repo", gitRepo(t), "look around")
	require.Equal(t, 3, code, out)
	require.Contains(t, out, "parked (awaiting_extension)")
	require.Contains(t, out, "the next extension grants 50 more actions")
	require.Contains(t, out, "grant an extension? [y/N]")
	require.Contains(t, out, "park awaiting_extension: granted by operator:tester")
	require.Contains(t, out, "used 53 of 53 actions")
}

// TestExtensionBelongsToTheNamedApprover: a session that names who
// decides for it is extended by them only (403 for anyone else), and a
// session not parked has nothing to extend (409).
func TestExtensionBelongsToTheNamedApprover(t *testing.T) {
	ctx := context.Background()
	name := unique("runaway")
	applyAgent(t, name, script(t, "runaway.yaml"), "tools: [list_dir]\nsession:\n  maxActions: 2\n")
	member(t, "default", "ana", identity.Member)
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Agent: name, Repo: gitRepo(t), Message: "go", NonInteractive: true, Approver: "ana"})
	require.NoError(t, err)
	waitFor(t, "the park", func() (bool, error) {
		parks, err := api.Gates().Parks(ctx, x.ID)
		return len(parks) == 1, err
	})
	parked, err := api.Gates().Parked(ctx, "", name)
	require.NoError(t, err)
	require.Len(t, parked, 1)
	require.Equal(t, "awaiting_extension", parked[0].Reason)
	code, out := paddock(t, "sessions", "ls", "--parked", "--agent", name)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "paddock sessions extend "+x.ID)
	_, err = api.Gates().Extend(ctx, x.ID, wire.ExtendRequest{})
	require.Equal(t, 403, apiStatus(t, err), "%v", err)
	_, err = api.Gates().Unpark(ctx, x.ID, "")
	require.Equal(t, 403, apiStatus(t, err))
	s := waitStatus(t, x.ID, session.StatusAwaiting)
	require.Contains(t, s.AmbientStatus, "awaiting_extension")
}

// TestHoldFreezesASession: a held session runs no turn (the message
// waits), discards nothing (reject is 409), and picks up on release.
func TestHoldFreezesASession(t *testing.T) {
	ctx := context.Background()
	name := unique("held")
	applyAgent(t, name, script(t, "work.yaml"), "")
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Agent: name, Repo: gitRepo(t), Message: "start"})
	require.NoError(t, err)
	waitStatus(t, x.ID, session.StatusAwaiting)
	code, out := paddock(t, "sessions", "hold", x.ID, "--reason", "looking at it")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "paddock sessions release "+x.ID)
	send(t, x.ID, session.KindMessage, session.MessagePayload{Message: "more"})
	code, out = paddock(t, "sessions", "reject", x.ID)
	require.NotEqual(t, 0, code)
	require.Contains(t, out, "held by operator:tester")
	turns, err := api.Sessions().Turns(ctx, x.ID)
	require.NoError(t, err)
	require.Len(t, turns, 1, "no turn runs while held")
	code, out = paddock(t, "sessions", "release", x.ID)
	require.Equal(t, 0, code, out)
	waitFor(t, "the waiting message's turn", func() (bool, error) {
		turns, err := api.Sessions().Turns(ctx, x.ID)
		return len(turns) == 2 && turns[1].Status.Settled(), err
	})
}

// TestHeldSessionStillStops: a hold freezes turns, never the one-gesture
// stop.
func TestHeldSessionStillStops(t *testing.T) {
	ctx := context.Background()
	name := unique("heldstop")
	applyAgent(t, name, script(t, "work.yaml"), "")
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Agent: name, Repo: gitRepo(t), Message: "start"})
	require.NoError(t, err)
	waitStatus(t, x.ID, session.StatusAwaiting)
	_, err = api.Sessions().Hold(ctx, x.ID, "inspect")
	require.NoError(t, err)
	send(t, x.ID, session.KindStop, session.StopPayload{Reason: "enough"})
	s := waitStatus(t, x.ID, session.StatusStopped)
	require.True(t, s.Held(), "still held: its copy is kept for the inspection")
	require.DirExists(t, s.Workdir)
}
