package spec

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var known = Known{
	Tool:     func(n string) bool { return n == "read_file" || n == "write_file" },
	Provider: func(n string) bool { return n == "replay" || n == "anthropic" },
}

func TestParseValid(t *testing.T) {
	agents, err := Parse(strings.NewReader(`
name: fixer
model: replay/demo.yaml
tools: [read_file]
concurrency: 1
replace: auto
maxPerSessionUsd: 2.5
session:
  idleTimeout: 5m
policy:
  default: ask
  tools: {read_file: allow}
  commands: {allow: [ls]}
---
name: helper
model: anthropic/claude-sonnet-4-5
`), known)
	require.NoError(t, err)
	require.Len(t, agents, 2)
	require.Equal(t, "default", agents[0].Project)
	require.Equal(t, DefaultIdleTimeout, agents[1].Session.IdleTimeout)
	require.Equal(t, 150, agents[1].Session.MaxActions)
	require.NotEqual(t, agents[0].Digest(), agents[1].Digest())
	p, err := agents[0].PolicyValue()
	require.NoError(t, err)
	require.Equal(t, []string{"ls"}, p.Commands)
	none, err := agents[1].PolicyValue()
	require.NoError(t, err)
	require.Nil(t, none)
}

func TestParseErrors(t *testing.T) {
	cases := []struct{ doc, want string }{
		{"name: a\nmodel: replay/x\nmodle: y\n", "modle: unknown field"},
		{"name: a\nmodel: replay/x\nconcurrency: two\n", "concurrency: want a whole number"},
		{"name: a\nmodel: replay/x\nconcurrency: 3\n", "concurrency: 3: want 1"},
		{"name: a\nmodel: gpt4\n", "model: \"gpt4\": want PROVIDER/MODEL"},
		{"name: a\nmodel: nope/x\n", "model: unknown provider"},
		{"name: a\nmodel: replay/x\ntools: [read_file, rm_rf]\n", "tools[1]: unknown tool"},
		{"name: Bad_Name\nmodel: replay/x\n", "name: \"Bad_Name\""},
		{"name: a\nmodel: replay/x\nsession:\n  idleTimeout: soon\n", "session.idleTimeout: \"soon\" is not a duration"},
		{"name: a\nmodel: replay/x\nsession:\n  bogus: 1\n", "session.bogus: unknown field"},
		{"name: a\nmodel: replay/x\nreplace: auto\n", "replace: auto replacement needs concurrency: 1"},
		{"name: [\n", "not valid YAML"},
		{"", "no agent spec found"},
		{"name: a\nmodel: replay/x\n---\nname: a\nmodel: replay/y\n", "appears twice"},
		{"- a\n- b\n", "want a mapping"},
		{"name: a\nmodel: replay/x\npolicy:\n  tools:\n    run_command: sometimes\n", "policy: tools.run_command"},
		{"name: a\nmodel: replay/x\npolicy:\n  commands:\n    deny: [rm]\n", "policy.commands.deny: unknown field"},
		{"name: a\nmodel: replay/x\nmcpServers:\n  - name: fs\n    command: [mcp-fs]\n    url: http://x\n", "mcpServers[0]: give either url"},
		{"name: a\nmodel: replay/x\nmcpServers:\n  - name: a__b\n    url: http://x\n", "mcpServers[0].name"},
		{"name: a\nmodel: replay/x\nmcpServers:\n  - name: fs\n    url: ftp://x\n", "mcpServers[0].url"},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			_, err := Parse(strings.NewReader(c.doc), known)
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
		})
	}
}

func TestTitle(t *testing.T) {
	a := Agent{Name: "fixer", DisplayTitle: "Fix: {{input}}"}
	require.Equal(t, "Fix: the bug", a.Title("the \n bug"))
	require.Equal(t, "fixer", (&Agent{Name: "fixer"}).Title(""))
}
