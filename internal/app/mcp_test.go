package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// calcServer is an MCP server (the official SDK) with one tool, add.
func calcServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1"}, nil)
	type addArgs struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers."}, func(_ context.Context, _ *mcp.CallToolRequest, in addArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil, nil
	})
	return s
}

func finalCalls(t *testing.T, c *client.Client, id string) map[string]session.ToolCallData {
	t.Helper()
	events, err := c.Sessions().Events(context.Background(), id, 0)
	require.NoError(t, err)
	final := map[string]session.ToolCallData{}
	for _, e := range events {
		var d session.ToolCallData
		if e.Kind == session.EventToolCall && json.Unmarshal(e.Data, &d) == nil && d.State.Final() {
			final[d.ID] = d
		}
	}
	return final
}

// TestStdioMCPServerRunsInTheSandbox: a stdio MCP server starts inside the
// session's sandbox (here this test binary, re-executed as the server).
func TestStdioMCPServerRunsInTheSandbox(t *testing.T) {
	ctx := context.Background()
	bin := filepath.Join(toolsDir, "calc-server") // a read-only path of the sandbox's view
	data, err := os.ReadFile(os.Args[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bin, data, 0o755))
	_, err = api.Projects().SetPolicy(ctx, "mcp-stdio", []byte("default: ask\ntools:\n  mcp__calc__add: allow\n"))
	require.NoError(t, err)
	applyAgent(t, "local-calculator", script(t, "mcp.yaml"), "project: mcp-stdio\ntools: [read_file]\nmcpServers:\n  - name: calc\n    command: ["+bin+"]\n    env: {PADDOCK_TEST_CHILD: mcp}\n")
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Project: "mcp-stdio", Agent: "local-calculator", Message: "add", NonInteractive: true, Repo: gitRepo(t)})
	require.NoError(t, err)
	waitFor(t, "the turn", func() (bool, error) {
		turns, err := api.Sessions().Turns(ctx, x.ID)
		return len(turns) == 1 && turns[0].Status.Settled(), err
	})
	final := finalCalls(t, api, x.ID)
	require.Equal(t, session.CallDone, final["call_0_0"].State, final["call_0_0"].Error)
	require.Equal(t, "42", final["call_0_0"].Result)
}

// TestMCPToolsThroughTheGate: an agent's MCP server contributes tools that
// the model calls like any other, through the same gate and state machine.
func TestMCPToolsThroughTheGate(t *testing.T) {
	ctx := context.Background()
	s := calcServer()
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer srv.Close()
	_, err := api.Projects().SetPolicy(ctx, "mcp", []byte("default: ask\ntools:\n  mcp__calc__add: allow\n"))
	require.NoError(t, err)
	applyAgent(t, "calculator", script(t, "mcp.yaml"), "project: mcp\ntools: [read_file]\nmcpServers:\n  - name: calc\n    url: "+srv.URL+"\n")
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Project: "mcp", Agent: "calculator", Message: "add 2 and 40", NonInteractive: true})
	require.NoError(t, err)
	waitFor(t, "the turn", func() (bool, error) {
		turns, err := api.Sessions().Turns(ctx, x.ID)
		return len(turns) == 1 && turns[0].Status.Settled(), err
	})
	final := finalCalls(t, api, x.ID)
	require.Equal(t, session.CallDone, final["call_0_0"].State, final["call_0_0"].Error)
	require.Equal(t, "42", final["call_0_0"].Result)
	require.Equal(t, "tools.mcp__calc__add=allow", final["call_0_0"].By.Rule)
	require.NotEqual(t, session.CallDone, final["call_0_1"].State, "a tool the server does not have never runs")
}
