package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// TestCrashMidCommandDoesNotRunItTwice kills the server with SIGKILL while
// a sandboxed command runs; after the restart the command is not started
// again: its call ends errored saying its effects may be partial, and the
// model goes on.
func TestCrashMidCommandDoesNotRunItTwice(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills real servers")
	}
	if os.Getuid() != 0 {
		t.Skip("runs sandboxed commands as the sandbox user")
	}
	ctx := context.Background()
	dir := dataDir(t)
	repo := gitRepo(t)
	child, c := serveChild(t, dir)
	name := "midcommand.yaml"
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "replay"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "replay", name), []byte(`steps:
  - text: "Counting, slowly."
    toolCalls:
      - name: run_command
        args: {command: "echo ran >> runs.txt; touch started; sleep 600"}
  - text: "I see the command was interrupted; checking."
`), 0o600))
	_, err := c.Projects().Apply(ctx, []byte("name: slowcounter\nmodel: replay/"+name+"\ntools: [run_command, read_file]\n"))
	require.NoError(t, err)
	x, err := c.Sessions().Create(ctx, wire.CreateRequest{Agent: "slowcounter", Message: "count", Repo: repo})
	require.NoError(t, err)
	var workdir string
	waitFor(t, "the command to be running", func() (bool, error) {
		pending, err := c.Gates().Approvals(ctx, session.ApprovalFilter{SessionID: x.ID, Status: session.ApprovalPending})
		for _, ap := range pending {
			if _, err := c.Gates().Decide(ctx, ap.ID, true, "go ahead"); err != nil {
				return false, err
			}
		}
		s, serr := c.Sessions().Get(ctx, x.ID)
		workdir = s.Workdir
		if workdir == "" {
			return false, errors.Join(err, serr)
		}
		_, statErr := os.Stat(filepath.Join(workdir, "started"))
		return statErr == nil, errors.Join(err, serr)
	})
	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	_ = child.Wait()

	_, c = serveChild(t, dir)
	var final session.ToolCallData
	waitFor(t, "the interrupted call to settle and the turn to end", func() (bool, error) {
		events, err := c.Sessions().Events(ctx, x.ID, 0)
		for _, e := range events {
			var d session.ToolCallData
			if e.Kind == session.EventToolCall && json.Unmarshal(e.Data, &d) == nil && d.State.Final() {
				final = d
			}
		}
		turns, terr := c.Sessions().Turns(ctx, x.ID)
		return final.State != "" && len(turns) == 1 && turns[0].Status.Settled(), errors.Join(err, terr)
	})
	require.Equal(t, session.CallErrored, final.State, final.Result)
	require.Contains(t, final.Error, "interrupted by a restart of the server; its effects may be partial")
	s, err := c.Sessions().Get(ctx, x.ID)
	require.NoError(t, err)
	runs, err := os.ReadFile(filepath.Join(s.Workdir, "runs.txt"))
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(runs), "ran"), fmt.Sprintf("the command ran %q", runs))
}
