package app_test

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/session"
)

// TestCommandsFinishUnderLoad runs commands of 20 to 30 seconds while busy
// loops (three per core) load the machine: every command is reported as it
// ended, none "interrupted by a restart", since no server restarted.
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
				model := replayCommand(t, name, fmt.Sprintf("sleep %d; echo finished after %d seconds", 20+5*i, 20+5*i))
				applyAgent(t, name, model, "tools: [run_command]\n")
				x, _, _ := envSession(t, name, gitRepo(t))
				ids[i] = x.ID
			})
		}
	})
	for i, id := range ids {
		calls := finalCalls(t, api, id)
		require.Len(t, calls, 1, "session %d ran one command", i)
		for _, c := range calls {
			require.Equal(t, session.CallDone, c.State, "%s: %s", c.Error, c.Result)
			require.Contains(t, c.Result, fmt.Sprintf("finished after %d seconds", 20+5*i), "the command's own output")
		}
	}
}
