package spec

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/bound"
	"github.com/paddock-dev/paddock/internal/secret"
)

var known = Known{
	Tool:     func(n string) bool { return n == "read_file" || n == "write_file" },
	Provider: func(n string) bool { return n == "replay" || n == "anthropic" },
	Secret:   secret.Rule,
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
environment:
  setup: |
    go mod download
  network:
    setup: ["proxy.golang.org:443", "*.npmjs.org:443"]
  env: {GOFLAGS: -mod=mod, MY_SETTING: "1"}
  readOnlyPaths: [/opt/sdk]
  ignoredFiles: [.env.local, "fixtures/**"]
`), known)
	require.NoError(t, err)
	require.Len(t, agents, 2)
	require.Equal(t, "default", agents[0].Project)
	require.Equal(t, DefaultIdleTimeout, agents[1].Session.IdleTimeout)
	require.Zero(t, agents[1].Session.MaxActions, "unset: the server's default applies")
	require.Equal(t, 150, agents[1].Session.Limits(bound.Limits{Actions: 150}, 0).Actions)
	require.NotEqual(t, agents[0].Digest(), agents[1].Digest())
	env := agents[1].Environment
	require.Equal(t, "go mod download\n", env.Setup)
	require.Equal(t, []string{"proxy.golang.org:443", "*.npmjs.org:443"}, env.Network.Setup)
	require.Empty(t, env.Network.Commands)
	require.Equal(t, DefaultSetupTimeout, env.SetupTimeout)
	require.Equal(t, "-mod=mod", env.Env["GOFLAGS"])
	require.NotContains(t, string(agents[0].JSON()), "environment", "an agent without one keeps its digest")
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
		{"name: a\nmodel: replay/x\nenvironment:\n  env:\n    GH_TOKEN: ghp_" + "R5tP9zKq2LmX8vN3bW7cY1dF6gH4jS0aQeUi\n", "environment.env.GH_TOKEN: holds a secret (github-pat)"},
		{"name: a\nmodel: replay/x\nenvironment:\n  setup: git clone https://bob:s3cr3tPa55@git.example.com/x.git\n", "environment.setup: holds a secret (url-password)"},
		{"name: a\nmodel: replay/x\ntriggers:\n  - name: closed\n    release: true\n    message: hi\n    repo: team/app\n", "triggers[0].release: a releasing trigger releases bindings and routes nothing"},
		{"name: a\nmodel: replay/x\ntriggers:\n  - name: closed\n    release: true\n", "triggers[0].repo: required with release"},
		{"name: a\nmodel: replay/x\ntriggers:\n  - name: closed\n    release: true\n    repo: team/app\n", "triggers[0].events: required with release"},
		{"name: a\nmodel: replay/x\ntriggers:\n  - name: review\n    routing: bound\n    message: hi\n", "triggers[0].routing: bound routing reaches the sessions bound"},
		{"name: a\nmodel: replay/x\ntriggers:\n  - name: review\n    routing: bound\n    message: hi\n    repo: team/app\n    ref: main\n", "no schedule or ref (it spawns nothing)"},
		{"name: a\nmodel: replay/x\ntriggers:\n  - name: review\n    routing: elsewhere\n    message: hi\n", "want spawn, session or bound"},
		{"name: a\nmodel: replay/x\ntriggers:\n  - name: pr\n    message: hi\n    ref: \"{{.payload.x\"\n", "triggers[0].ref: not a valid template"},
		{"name: [\n", "not valid YAML"},
		{"", "no agent spec found"},
		{"name: a\nmodel: replay/x\n---\nname: a\nmodel: replay/y\n", "appears twice"},
		{"- a\n- b\n", "want a mapping"},
		{"name: a\nmodel: replay/x\npolicy:\n  tools:\n    run_command: sometimes\n", "policy: tools.run_command"},
		{"name: a\nmodel: replay/x\npolicy:\n  commands:\n    deny: [rm]\n", "policy.commands.deny: unknown field"},
		{"name: a\nmodel: replay/x\nmcpServers:\n  - name: fs\n    command: [mcp-fs]\n    url: http://x\n", "mcpServers[0]: give either url"},
		{"name: a\nmodel: replay/x\nmcpServers:\n  - name: a__b\n    url: http://x\n", "mcpServers[0].name"},
		{"name: a\nmodel: replay/x\nmcpServers:\n  - name: fs\n    url: ftp://x\n", "mcpServers[0].url"},
		{"name: a\nmodel: replay/x\nenvironment:\n  setup: x\n  netwrk: {}\n", "environment.netwrk: unknown field"},
		{"name: a\nmodel: replay/x\nenvironment:\n  setup: x\n  network:\n    setup: [proxy.golang.org]\n", "environment.network.setup[0]: \"proxy.golang.org\": want HOST:PORT"},
		{"name: a\nmodel: replay/x\nenvironment:\n  network:\n    commands: [\"x:443\", \"*:443\"]\n", "environment.network.commands[1]"},
		{"name: a\nmodel: replay/x\nenvironment:\n  network:\n    setup: [\"x:443\"]\n", "environment.network.setup: egress for setup, but no setup script"},
		{"name: a\nmodel: replay/x\nenvironment:\n  env: {BASH_ENV: /tmp/x}\n", "environment.env.BASH_ENV: refused"},
		{"name: a\nmodel: replay/x\nenvironment:\n  env: {LD_PRELOAD: /x.so}\n", "environment.env.LD_PRELOAD: refused"},
		{"name: a\nmodel: replay/x\nenvironment:\n  env: {NODE_OPTIONS: --require=/x}\n", "environment.env.NODE_OPTIONS: refused"},
		{"name: a\nmodel: replay/x\nenvironment:\n  env: {GIT_SSH_COMMAND: x}\n", "environment.env.GIT_SSH_COMMAND: refused"},
		{"name: a\nmodel: replay/x\nenvironment:\n  env: {GOFLAGS: -toolexec=/tmp/x}\n", "environment.env.GOFLAGS: refused: its flag -toolexec=/tmp/x"},
		{"name: a\nmodel: replay/x\nenvironment:\n  env: {PATH: /x}\n", "environment.env.PATH: refused: Paddock sets it"},
		{"name: a\nmodel: replay/x\nenvironment:\n  env: {https_proxy: http://x}\n", "environment.env.https_proxy: refused: Paddock sets it"},
		{"name: a\nmodel: replay/x\nenvironment:\n  env: {1X: y}\n", "environment.env.1X: want a variable name"},
		{"name: a\nmodel: replay/x\nenvironment:\n  readOnlyPaths: [opt/sdk]\n", "environment.readOnlyPaths[0]: \"opt/sdk\": want an absolute"},
		{"name: a\nmodel: replay/x\nenvironment:\n  ignoredFiles: [.env.local, ../secrets]\n", "environment.ignoredFiles[1]: \"../secrets\": want a pattern of paths inside the repository"},
		{"name: a\nmodel: replay/x\nenvironment:\n  ignoredFiles: [\":(top)x\"]\n", "environment.ignoredFiles[0]"},
		{"name: a\nmodel: replay/x\nenvironment:\n  ignoredFiles: [/etc/passwd]\n", "environment.ignoredFiles[0]"},
		{"name: a\nmodel: replay/x\nenvironment:\n  readOnlyPaths: [/opt/x, /run/docker.sock]\n", "environment.readOnlyPaths[1]: \"/run/docker.sock\": kernel and runtime state"},
		{"name: a\nmodel: replay/x\nenvironment:\n  setup: x\n  setupTimeout: 12h\n", "environment.setupTimeout: want 1s to 6h"},
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
