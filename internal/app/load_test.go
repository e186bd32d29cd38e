package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/session"
)

// TestCommandsFinishUnderLoad runs commands of 20 to 30 seconds while busy
// loops (three per core) load the machine: every command is reported as it
// ended, none "interrupted by a restart", since no server restarted; and
// each command's output is recorded as it happens.
func TestCommandsFinishUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the machine for half a minute")
	}
	if os.Getuid() != 0 {
		t.Skip("runs sandboxed commands as the sandbox user")
	}
	var busy []*exec.Cmd
	for range 3 * runtime.NumCPU() {
		c := exec.Command("sh", "-c", "while :; do :; done")
		require.NoError(t, c.Start())
		busy = append(busy, c)
	}
	t.Cleanup(func() {
		for _, c := range busy {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	})
	ids := make([]string, 3)
	t.Run("sessions", func(t *testing.T) {
		for i := range ids {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				name := unique(fmt.Sprintf("loaded%d", i))
				model := replayCommand(t, name, fmt.Sprintf("echo started; sleep %d; echo finished after %d seconds", 20+5*i, 20+5*i))
				applyAgent(t, name, model, "tools: [run_command]\n")
				x, _, _ := envSession(t, name, gitRepo(t))
				ids[i] = x.ID
			})
		}
	})
	for i, id := range ids {
		// The output came as it happened: "started" was recorded while the
		// command still slept.
		events, err := api.Sessions().Events(context.Background(), id, 0)
		require.NoError(t, err)
		var live string
		var first, done time.Time
		for _, e := range events {
			var d session.ToolCallData
			switch {
			case e.Kind == session.EventOutput:
				var o session.OutputData
				require.NoError(t, json.Unmarshal(e.Data, &o))
				live += o.Text
				if first.IsZero() {
					first = e.CreatedAt
				}
			case e.Kind == session.EventToolCall && json.Unmarshal(e.Data, &d) == nil && d.State == session.CallDone:
				done = e.CreatedAt
			}
		}
		require.Equal(t, fmt.Sprintf("started\nfinished after %d seconds\n", 20+5*i), live)
		require.Greater(t, done.Sub(first), 15*time.Second, "the first line was shown while the command ran")
		calls := finalCalls(t, api, id)
		require.Len(t, calls, 1, "session %d ran one command", i)
		for _, c := range calls {
			require.Equal(t, session.CallDone, c.State, "%s: %s", c.Error, c.Result)
			require.Contains(t, c.Result, fmt.Sprintf("finished after %d seconds", 20+5*i), "the command's own output")
		}
	}
}
