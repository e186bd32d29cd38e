package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/engine"
	"github.com/paddock-dev/paddock/internal/session"
)

// TestMCPToolsThroughTheGate: an agent's MCP server contributes tools that
// the model calls like any other, through the same gate and state machine.
func TestMCPToolsThroughTheGate(t *testing.T) {
	ctx := context.Background()
	s := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1"}, nil)
	type addArgs struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers."}, func(_ context.Context, _ *mcp.CallToolRequest, in addArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer srv.Close()
	_, err := api.SetPolicy(ctx, "mcp", []byte("default: ask\ntools:\n  mcp__calc__add: allow\n"))
	require.NoError(t, err)
	applyAgent(t, "calculator", script(t, "mcp.yaml"), "project: mcp\ntools: [read_file]\nmcpServers:\n  - name: calc\n    url: "+srv.URL+"\n")
	x, err := api.CreateSession(ctx, engine.CreateRequest{Project: "mcp", Agent: "calculator", Message: "add 2 and 40", NonInteractive: true})
	require.NoError(t, err)
	waitFor(t, "the turn", func() (bool, error) {
		turns, err := api.Turns(ctx, x.ID)
		return len(turns) == 1 && turns[0].Status.Settled(), err
	})
	events, err := api.Events(ctx, x.ID, 0)
	require.NoError(t, err)
	final := map[string]session.ToolCallData{}
	for _, e := range events {
		var d session.ToolCallData
		if e.Kind == session.EventToolCall && json.Unmarshal(e.Data, &d) == nil && d.State.Final() {
			final[d.ID] = d
		}
	}
	require.Equal(t, session.CallDone, final["call_0_0"].State, final["call_0_0"].Error)
	require.Equal(t, "42", final["call_0_0"].Result)
	require.Equal(t, "tools.mcp__calc__add=allow", final["call_0_0"].By.Rule)
	require.NotEqual(t, session.CallDone, final["call_0_1"].State, "a tool the server does not have never runs")
}
