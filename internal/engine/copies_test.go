package engine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
)

// TestHostReadsWaitForTheSandbox: while a session's sandboxed process
// runs, the host does not read its copy (a diff waits, then is a 409);
// other sessions are not held up; once it ends, the read goes ahead.
func TestHostReadsWaitForTheSandbox(t *testing.T) {
	ctx := context.Background()
	c := &Copies{}
	release, err := c.Sandboxed(ctx, "s1")
	require.NoError(t, err)
	_, err = c.Quiet(ctx, "s1", 50*time.Millisecond)
	require.ErrorIs(t, err, ErrBusy)
	require.ErrorIs(t, err, store.ErrConflict)
	other, err := c.Quiet(ctx, "s2", 50*time.Millisecond)
	require.NoError(t, err)
	other()
	done := make(chan error, 1)
	go func() {
		r, err := c.Quiet(ctx, "s1", time.Minute)
		if err == nil {
			r()
		}
		done <- err
	}()
	release()
	require.NoError(t, <-done)
}

func TestRemoteLacks(t *testing.T) {
	for _, tc := range []struct {
		agent spec.Agent
		want  string
	}{
		{spec.Agent{Name: "plain", Tools: []string{"run_command"}}, ""},
		{spec.Agent{Tools: []string{"run_command"}, Environment: spec.EnvironmentSpec{Network: spec.NetworkSpec{Commands: []string{"proxy.golang.org:443"}}}}, ""},
		{spec.Agent{Environment: spec.EnvironmentSpec{Setup: "go mod download", Network: spec.NetworkSpec{Setup: []string{"proxy.golang.org:443"}}}}, ""},
		{spec.Agent{MCPServers: []spec.MCPServerSpec{{Name: "web", URL: "https://x"}}}, ""},
		{spec.Agent{MCPServers: []spec.MCPServerSpec{{Name: "calc", Command: []string{"calc"}}, {Name: "web", URL: "https://x"}}}, "a stdio MCP server (calc),"},
	} {
		got := remoteLacks(tc.agent)
		if tc.want == "" {
			require.Empty(t, got)
			continue
		}
		require.Contains(t, got, "it declares "+tc.want+" which sandbox pods do not run yet")
	}
}
