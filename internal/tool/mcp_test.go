package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// mcpServer is a real MCP server (the official SDK) over streamable HTTP.
func mcpServer(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	type addArgs struct {
		A int `json:"a" jsonschema:"first number"`
		B int `json:"b" jsonschema:"second number"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers."}, func(_ context.Context, _ *mcp.CallToolRequest, in addArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestMCPTools(t *testing.T) {
	ctx := context.Background()
	servers := []MCPServer{{Name: "calc", URL: mcpServer(t)}}
	specs, err := MCPTools(ctx, servers, MCPEnv{})
	require.NoError(t, err)
	require.Len(t, specs, 1)
	require.Equal(t, "mcp__calc__add", specs[0].Name)
	require.Contains(t, string(specs[0].Schema), `"a"`)
	server, tool, ok := SplitMCPName(specs[0].Name)
	require.True(t, ok)
	require.Equal(t, "calc", server)
	res, err := CallMCP(ctx, servers[0], MCPEnv{}, tool, json.RawMessage(`{"a":2,"b":40}`))
	require.NoError(t, err)
	require.Equal(t, "42", res.Output)
	_, err = CallMCP(ctx, servers[0], MCPEnv{}, tool, json.RawMessage(`{"a":"two"}`))
	require.Error(t, err, "the server validates against its schema")
	_, err = CallMCP(ctx, servers[0], MCPEnv{}, tool, json.RawMessage(`not json`))
	require.ErrorIs(t, err, ErrArgs)
	_, err = MCPTools(ctx, []MCPServer{{Name: "dead", URL: "http://127.0.0.1:1/mcp"}}, MCPEnv{})
	require.ErrorContains(t, err, "MCP server dead")
}

func TestStdioMCPNeedsTheSandbox(t *testing.T) {
	_, err := MCPTools(context.Background(), []MCPServer{{Name: "local", Command: []string{"mcp-server"}}}, MCPEnv{})
	require.ErrorIs(t, err, ErrNoSandbox)
}

// TestMCPServerCannotFloodPaddock: a server listing endless tools, or
// answering with a huge result, is bounded.
func TestMCPServerCannotFloodPaddock(t *testing.T) {
	ctx := context.Background()
	s := mcp.NewServer(&mcp.Implementation{Name: "flood", Version: "1"}, &mcp.ServerOptions{PageSize: 50})
	type noArgs struct{}
	for i := range maxMCPTools + 10 {
		mcp.AddTool(s, &mcp.Tool{Name: fmt.Sprintf("t%d", i)}, func(_ context.Context, _ *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", maxMCPOutput+100)}}}, nil, nil
		})
	}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	server := MCPServer{Name: "flood", URL: srv.URL}
	_, err := MCPTools(ctx, []MCPServer{server}, MCPEnv{})
	require.ErrorContains(t, err, fmt.Sprintf("more than %d tools", maxMCPTools))
	res, err := CallMCP(ctx, server, MCPEnv{}, "t0", json.RawMessage(`{}`))
	require.NoError(t, err)
	require.Less(t, len(res.Output), maxMCPOutput+200)
	require.Contains(t, res.Output, "[output truncated")
}
