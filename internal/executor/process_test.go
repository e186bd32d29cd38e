package executor

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/sandbox"
)

// A long-lived process talks over the request for as long as the worker
// keeps it open: what the worker writes is its input, what it prints
// comes back at once, it works in the executor's copy, and closing its
// input ends it, so the executor serves the next request.
func TestLongLivedProcess(t *testing.T) {
	c, dir := pod(t)
	ctx := context.Background()
	p, err := c.Start(ctx, StartRequest{Argv: []string{"/bin/bash", "-c", `while read -r l; do echo "$l" > got.txt; echo "ok $l $HOME"; done`}})
	require.NoError(t, err)
	out := bufio.NewReader(p.Out)
	for _, msg := range []string{"one", "two"} {
		_, err = io.WriteString(p.In, msg+"\n")
		require.NoError(t, err)
		line, err := out.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "ok "+msg+" "+sandbox.Home+"\n", line, "each answer as it is printed")
	}
	b, err := os.ReadFile(filepath.Join(dir, "work", "got.txt"))
	require.NoError(t, err)
	require.Equal(t, "two\n", string(b), "the process works in the executor's copy")
	require.NoError(t, p.In.Close())

	var o strings.Builder
	res, err := c.Run(ctx, sandbox.Command{ID: "after", Script: "echo next", Stdout: &o, Timeout: time.Minute}, nil)
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	require.Equal(t, "next\n", o.String(), "the executor serves the next request")
}

// A process that ignores the end of its input, or leaves a child holding
// its output, does not hold the executor: it is killed after its grace.
func TestLongLivedProcessEnds(t *testing.T) {
	c, _ := pod(t)
	ctx := context.Background()
	p, err := c.Start(ctx, StartRequest{Argv: []string{"/bin/bash", "-c", `trap '' TERM; sleep 1000 & while :; do sleep 1; done`}})
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, p.In.Close())
	var o strings.Builder
	_, err = c.Run(ctx, sandbox.Command{ID: "after", Script: "echo next", Stdout: &o, Timeout: time.Minute}, nil)
	require.NoError(t, err)
	require.Equal(t, "next\n", o.String())
	require.Less(t, time.Since(start), time.Minute, "served once the process was killed")

	// A worker that goes away ends its process too.
	ctx2, cancel := context.WithCancel(ctx)
	p, err = c.Start(ctx2, StartRequest{Argv: []string{"/bin/cat"}})
	require.NoError(t, err)
	cancel()
	_, err = io.ReadAll(p.Out)
	require.Error(t, err)
	o.Reset()
	_, err = c.Run(ctx, sandbox.Command{ID: "after2", Script: "echo again", Stdout: &o, Timeout: time.Minute}, nil)
	require.NoError(t, err)
	require.Equal(t, "again\n", o.String())

	// What cannot start is refused, saying why.
	_, err = c.Start(ctx, StartRequest{Argv: []string{"/no/such/server"}})
	var refused *StatusError
	require.ErrorAs(t, err, &refused)
	require.Equal(t, 400, refused.Code)
	require.Contains(t, refused.Message, "/no/such/server")
	_, err = c.Start(ctx, StartRequest{})
	require.ErrorAs(t, err, &refused)
	require.Contains(t, refused.Message, "names no program")
}

// TestMain lets this binary be a stdio MCP server (PADDOCK_TEST_CHILD=mcp)
// for the executor to run.
func TestMain(m *testing.M) {
	if os.Getenv("PADDOCK_TEST_CHILD") == "mcp" {
		s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
		type args struct {
			Text string `json:"text"`
		}
		mcp.AddTool(s, &mcp.Tool{Name: "shout", Description: "Say it louder."}, func(_ context.Context, _ *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.ToUpper(in.Text)}}}, nil, nil
		})
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A stdio MCP server (the official SDK's, on both sides) runs through the
// executor: listed and called over the one request.
func TestMCPServerThroughTheExecutor(t *testing.T) {
	c, _ := pod(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	self, err := os.Executable()
	require.NoError(t, err)
	p, err := c.Start(ctx, StartRequest{Argv: []string{self}, Env: map[string]string{"PADDOCK_TEST_CHILD": "mcp"}})
	require.NoError(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: p.Out, Writer: p.In}, nil)
	require.NoError(t, err)
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shout", Arguments: map[string]any{"text": "hello"}})
	require.NoError(t, err)
	require.Equal(t, "HELLO", res.Content[0].(*mcp.TextContent).Text)
}
