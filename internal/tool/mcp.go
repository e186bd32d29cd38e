package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/sandbox"
)

// MCPPrefix starts the name of every tool an MCP server contributes:
// mcp__SERVER__TOOL. Policies name them the same way.
const MCPPrefix = "mcp__"

// MCPServer is an MCP server an agent lists: reached over streamable HTTP
// (URL), or started over stdio (Command) inside the session's sandbox, on
// its working copy, with no network. Its tools join the agent's tool set and
// pass the same gate as the built-in tools.
type MCPServer struct {
	Name    string
	URL     string
	Command []string
	Env     map[string]string
}

// Launcher starts a process in the sandbox (stdio MCP servers).
type Launcher interface {
	Start(place sandbox.Place, argv []string) (*sandbox.Process, error)
}

// MCPEnv is where stdio MCP servers run.
type MCPEnv struct {
	// Place is where the session's sandboxes run; a server's own
	// variables are added to its Env.
	Place    sandbox.Place
	Launcher Launcher
}

// MCPName is the tool name a server's tool goes by.
func MCPName(server, tool string) string { return MCPPrefix + server + "__" + tool }

// SplitMCPName splits mcp__SERVER__TOOL.
func SplitMCPName(name string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(name, MCPPrefix)
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, "__")
}

func connectMCP(ctx context.Context, s MCPServer, env MCPEnv) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "paddock", Version: "1"}, nil)
	var t mcp.Transport
	if len(s.Command) > 0 {
		if env.Launcher == nil {
			return nil, fmt.Errorf("MCP server %s runs over stdio, which needs the sandbox, and none is available: %w", s.Name, ErrNoSandbox)
		}
		place := env.Place
		place.Env = maps.Clone(place.Env)
		if place.Env == nil {
			place.Env = map[string]string{}
		}
		maps.Copy(place.Env, s.Env)
		proc, err := env.Launcher.Start(place, s.Command)
		if err != nil {
			return nil, fmt.Errorf("MCP server %s: %w", s.Name, err)
		}
		// Closing the session closes the server's input, which ends its sandbox.
		t = &mcp.IOTransport{Reader: proc.Stdout, Writer: proc.Stdin}
	} else {
		t = &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: &http.Client{Timeout: 5 * time.Minute}, MaxRetries: 2, DisableStandaloneSSE: true}
	}
	cs, err := c.Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("MCP server %s: %w", s.Name, err)
	}
	return cs, nil
}

// Bounds of what an MCP server may hand Paddock.
const (
	maxMCPTools   = 256
	maxMCPListing = 4 << 20
	maxMCPOutput  = 10 << 20
)

// MCPTools lists the tools of the servers, named mcp__SERVER__TOOL.
func MCPTools(ctx context.Context, servers []MCPServer, env MCPEnv) ([]provider.ToolSpec, error) {
	var out []provider.ToolSpec
	for _, s := range servers {
		cs, err := connectMCP(ctx, s, env)
		if err != nil {
			return nil, err
		}
		n, size := 0, 0
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				_ = cs.Close()
				return nil, fmt.Errorf("MCP server %s: list tools: %w", s.Name, err)
			}
			schema, _ := json.Marshal(t.InputSchema)
			// A server cannot make Paddock hold without bound what it lists.
			if n++; n > maxMCPTools {
				_ = cs.Close()
				return nil, fmt.Errorf("MCP server %s lists more than %d tools; Paddock offers at most %d per server", s.Name, maxMCPTools, maxMCPTools)
			}
			if size += len(schema) + len(t.Description) + len(t.Name); size > maxMCPListing {
				_ = cs.Close()
				return nil, fmt.Errorf("MCP server %s describes its tools in more than %d bytes; Paddock accepts at most that", s.Name, maxMCPListing)
			}
			out = append(out, provider.ToolSpec{Name: MCPName(s.Name, t.Name), Description: t.Description, Schema: schema})
		}
		_ = cs.Close()
	}
	return out, nil
}

// CallMCP calls a server's tool with the model's arguments, which must be
// one JSON object (the server validates them against its schema).
func CallMCP(ctx context.Context, s MCPServer, env MCPEnv, tool string, args json.RawMessage) (Result, error) {
	var obj map[string]any
	if err := decode(args, &obj); err != nil {
		return Result{}, err
	}
	cs, err := connectMCP(ctx, s, env)
	if err != nil {
		return Result{}, err
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: obj})
	if err != nil {
		return Result{}, fmt.Errorf("MCP server %s: %s: %w", s.Name, tool, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		} else {
			data, _ := json.Marshal(c)
			b.Write(data)
		}
		if b.Len() > maxMCPOutput {
			break
		}
	}
	if b.Len() > maxMCPOutput {
		out := b.String()[:maxMCPOutput]
		b.Reset()
		b.WriteString(out + fmt.Sprintf("\n[output truncated: the result is longer than %d bytes]", maxMCPOutput))
	}
	if res.IsError {
		return Result{}, errors.New(b.String())
	}
	return Result{Output: b.String()}, nil
}
