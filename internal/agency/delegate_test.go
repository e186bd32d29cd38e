package agency

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/tool"
)

// TestNarrowed: a delegated session's tools are a subset of its
// delegating session's, never one its policy excludes, never delegate at
// the last depth; a tool asked for that the delegating session lacks is
// refused, naming what it has.
func TestNarrowed(t *testing.T) {
	all := tool.Builtin()
	floor := &policy.Policy{Default: policy.AllowedWithPermission, Tools: map[string]policy.Value{"write_file": policy.Disabled}}
	parent := spec.Agent{Name: "dev", Model: "replay/demo", Tools: []string{"read_file", "write_file", "edit_file", "delegate"},
		MCPServers: []spec.MCPServerSpec{{Name: "calc", URL: "http://x"}, {Name: "db", URL: "http://y"}}, Concurrency: 1,
		Triggers: []spec.TriggerSpec{{Name: "push"}}}
	cases := []struct {
		name        string
		d           tool.Delegation
		mayDelegate bool
		tools       []string
		servers     []string
		err         string
	}{
		{name: "all it has, less what policy excludes", mayDelegate: true, tools: []string{"delegate", "edit_file", "read_file"}, servers: []string{"calc", "db"}},
		{name: "no delegate at the last depth", tools: []string{"edit_file", "read_file"}, servers: []string{"calc", "db"}},
		{name: "a subset", d: tool.Delegation{Tools: []string{"read_file", "mcp__calc__add"}}, tools: []string{"read_file"}, servers: []string{"calc"}},
		{name: "an excluded tool is refused", d: tool.Delegation{Tools: []string{"write_file"}}, err: `"write_file" is not one of yours`},
		{name: "a tool it lacks is refused", d: tool.Delegation{Tools: []string{"run_command"}}, err: `"run_command" is not one of yours`},
		{name: "delegate at the last depth is refused", d: tool.Delegation{Tools: []string{"delegate"}}, err: `"delegate" is not one of yours`},
		{name: "an MCP server it lacks is refused", d: tool.Delegation{Tools: []string{"mcp__web__get"}}, err: `no MCP server "web"`},
		{name: "only MCP tools is refused", d: tool.Delegation{Tools: []string{"mcp__db__q"}}, err: "name at least one built-in tool"},
		{name: "a model of another provider is refused", d: tool.Delegation{Model: "anthropic/claude"}, err: "a model of your provider"},
		{name: "a model of its provider", d: tool.Delegation{Model: "replay/other"}, mayDelegate: true, tools: []string{"delegate", "edit_file", "read_file"}, servers: []string{"calc", "db"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := narrowed(parent, floor, all, c.d, c.mayDelegate)
			if c.err != "" {
				if err == nil || !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tools := slices.Clone(got.Tools)
			slices.Sort(tools)
			if !slices.Equal(tools, c.tools) {
				t.Fatalf("tools %v, want %v", tools, c.tools)
			}
			var servers []string
			for _, m := range got.MCPServers {
				servers = append(servers, m.Name)
			}
			if !slices.Equal(servers, c.servers) {
				t.Fatalf("servers %v, want %v", servers, c.servers)
			}
			if got.Concurrency != 0 || got.Triggers != nil || got.Replace != "manual" {
				t.Fatalf("a delegated session is no singleton, no trigger's target, no pool member: %+v", got)
			}
		})
	}
}
