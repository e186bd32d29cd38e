package policy

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/shellcheck"
)

func TestParse(t *testing.T) {
	p, err := Parse([]byte(`
default: ask          # for tools not listed
tools:
  run_command: ask
  read_file: allow
  write_file: allowedWithPermission
  ask_user: allowedWithoutPermission
  edit_file: exclude
commands:
  allow: ["ls", "cat", "git  status", "go test"]
continueAfterToolRejection: true
approvalTtl: 30m
`))
	require.NoError(t, err)
	require.Equal(t, AllowedWithPermission, p.Default)
	require.Equal(t, Disabled, p.Tools["edit_file"])
	require.Equal(t, []string{"ls", "cat", "git status", "go test"}, p.Commands)
	require.Equal(t, 30*time.Minute, p.ApprovalTTL)
	require.True(t, p.ContinueAfterToolRejection)

	empty, err := Parse(nil)
	require.NoError(t, err)
	require.Equal(t, AllowedWithPermission, empty.Default, "the default is ask")
	require.Equal(t, DefaultCommands, empty.Commands)
	require.Empty(t, empty.Tools, "a written policy lists its own tools")
}

func TestParseErrors(t *testing.T) {
	for doc, want := range map[string]string{
		"default: maybe\n":                      "default",
		"tools:\n  run_command: sometimes\n":    "tools.run_command",
		"tool:\n  x: ask\n":                     "field tool not found",
		"commands:\n  allow: [\"\"]\n":          "commands.allow[0]",
		"commands:\n  deny: [rm]\n":             "field deny not found",
		"approvalTtl: forever\n":                "approvalTtl",
		"tools: [a, b]\n":                       "cannot unmarshal",
		"continueAfterToolRejection: perhaps\n": "cannot unmarshal",
	} {
		_, err := Parse([]byte(doc))
		require.ErrorContains(t, err, want, doc)
	}
}

func args(cmd string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"command": cmd})
	return b
}

func TestEvaluate(t *testing.T) {
	p, err := Parse([]byte("tools:\n  read_file: allow\n  edit_file: exclude\ncommands:\n  allow: [ls, git status]\n"))
	require.NoError(t, err)
	cases := []struct {
		tool string
		args json.RawMessage
		want shellcheck.Verdict
		rule string
	}{
		{"read_file", json.RawMessage(`{}`), shellcheck.Allow, "tools.read_file=allow"},
		{"write_file", json.RawMessage(`{}`), shellcheck.Ask, "default=ask"},
		{"edit_file", json.RawMessage(`{}`), shellcheck.Refuse, "tools.edit_file=exclude"},
		{"run_command", args("ls -la"), shellcheck.Allow, "commands.allow"},
		{"run_command", args("git status && ls"), shellcheck.Allow, "commands.allow"},
		{"run_command", args("cargo build"), shellcheck.Ask, "command:unknown-command"},
		{"run_command", args("ls && sudo id"), shellcheck.Refuse, "command:privilege-escalation"},
		{"run_command", json.RawMessage(`{"command":`), shellcheck.Refuse, "evaluation-failed"},
	}
	for _, c := range cases {
		d := p.Evaluate(c.tool, c.args)
		require.Equal(t, c.want, d.Verdict, "%s %s", c.tool, c.args)
		require.Equal(t, c.rule, d.Rule, "%s %s", c.tool, c.args)
		require.Equal(t, p.Digest(), d.PolicyDigest)
	}
	// An allowed shell tool is still hardened by the analysis.
	open, _ := Parse([]byte("tools:\n  run_command: allow\ncommands:\n  allow: [ls]\n"))
	require.Equal(t, shellcheck.Ask, open.Evaluate("run_command", args("make")).Verdict)
	require.Equal(t, shellcheck.Refuse, open.Evaluate("run_command", args("rm -rf /")).Verdict)
	disabled, _ := Parse([]byte("tools:\n  run_command: disabled\n"))
	require.Equal(t, shellcheck.Refuse, disabled.Evaluate("run_command", args("ls")).Verdict, "disabled never reopens")
}

func TestStricter(t *testing.T) {
	project, _ := Parse([]byte("default: allow\ntools:\n  run_command: ask\n  edit_file: exclude\ncommands:\n  allow: [ls, cat, go test]\napprovalTtl: 1h\ncontinueAfterToolRejection: true\n"))
	agent, _ := Parse([]byte("default: ask\ntools:\n  edit_file: allow\n  read_file: allow\ncommands:\n  allow: [ls, rm]\napprovalTtl: 2h\n"))
	s := Stricter(project, agent)
	require.Equal(t, AllowedWithPermission, s.Default)
	require.Equal(t, Disabled, s.Tools["edit_file"], "an agent cannot reopen a disabled tool")
	require.Equal(t, AllowedWithoutPermission, s.Tools["read_file"])
	require.Equal(t, []string{"ls"}, s.Commands, "only commands free in both")
	require.Equal(t, time.Hour, s.ApprovalTTL)
	require.False(t, s.ContinueAfterToolRejection)
	require.Same(t, project, Stricter(project, nil))
}

func TestHarden(t *testing.T) {
	allow := Decision{Verdict: shellcheck.Allow, Rule: "a"}
	refuse := Decision{Verdict: shellcheck.Refuse, Rule: "r"}
	require.Equal(t, refuse, Harden(allow, refuse))
	require.Equal(t, refuse, Harden(refuse, allow), "never softened")
}

func TestApprovalTTLInHumanFormAndDigestStable(t *testing.T) {
	p := Default()
	data, err := json.Marshal(p)
	require.NoError(t, err)
	require.Contains(t, string(data), `"approvalTtl":"24h0m0s"`)
	var back Policy
	require.NoError(t, json.Unmarshal(data, &back))
	require.Equal(t, p.ApprovalTTL, back.ApprovalTTL)
	require.Equal(t, p.Digest(), back.Digest())
	var legacy Policy
	require.NoError(t, json.Unmarshal([]byte(`{"default":"allowedWithPermission","approvalTtl":3600000000000}`), &legacy))
	require.Equal(t, time.Hour, legacy.ApprovalTTL, "policies pinned in nanoseconds still read")
	require.Error(t, json.Unmarshal([]byte(`{"approvalTtl":"soon"}`), &legacy))
}

// TestYAMLRoundTrips: a policy written as YAML reads back as itself.
func TestYAMLRoundTrips(t *testing.T) {
	for _, p := range []*Policy{Default(), {Default: Disabled, Tools: map[string]Value{"read_file": AllowedWithoutPermission, "run_command": AllowedWithPermission},
		Commands: []string{"ls", "git status"}, ContinueAfterToolRejection: true, ApprovalTTL: 90 * time.Minute}, {Default: AllowedWithPermission, Commands: []string{}, ApprovalTTL: time.Hour}} {
		back, err := Parse(p.YAML())
		if err != nil {
			t.Fatalf("%s: %v", p.YAML(), err)
		}
		if back.Digest() != p.Digest() {
			t.Errorf("round trip changed the policy:\n%s\n%+v\n%+v", p.YAML(), p, back)
		}
	}
}
