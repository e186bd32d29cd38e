package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

func TestPolicyCheckExitStatuses(t *testing.T) {
	project := fmt.Sprintf("check-%d", time.Now().UnixNano()%1e9)
	f := writeFile(t, "p.yaml", "default: ask\ncommands: {allow: [ls, git status, go test]}\n")
	code, _, _ := run(t, "", "policy", "apply", "-f", f, "--project", project)
	require.Equal(t, 0, code)

	code, out, _ := run(t, "", "policy", "check", "--project", project, "--", "ls -la | git status")
	require.Equal(t, 0, code, out)
	require.True(t, strings.HasPrefix(out, "allow\n"), out)
	require.Contains(t, out, "policy: project "+project+"'s applied policy on "+serverURL)
	require.Contains(t, out, `[commands.allow "git status" of project `+project+"'s applied policy")

	code, out, _ = run(t, "", "policy", "check", "--project", project, "--", "cat x")
	require.Equal(t, 3, code, out)
	require.True(t, strings.HasPrefix(out, "ask\n"), out)

	code, out, _ = run(t, "", "policy", "check", "--project", project, "--", "ls; sudo id")
	require.Equal(t, 4, code, out)
	require.Contains(t, out, "built-in refused family")

	code, _, errOut := run(t, "", "policy", "check", "--no-such-flag", "--", "ls")
	require.Equal(t, 2, code, errOut)
	code, _, errOut = run(t, "", "policy", "check")
	require.Equal(t, 2, code, errOut)
	code, _, _ = run(t, "", "policy", "check", "--policy", "/no/such/file", "--", "ls")
	require.Equal(t, 2, code)

	code, out, _ = run(t, "", "policy", "check", "--policy", f, "--explain", "--", "go test -race ./...")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "policy: the policy file "+f)
	require.Contains(t, out, "free: go test — builds and runs the repository's tests")
	require.Contains(t, out, "options that keep it free:")
	require.Contains(t, out, "-race")

	code, out, _ = run(t, "", "--server", "", "policy", "check", "--json", "--", "go test -toolexec=/tmp/x ./...")
	require.Equal(t, 3, code, out)
	var j struct {
		Verdict      string `json:"verdict"`
		PolicySource string `json:"policySource"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	require.Equal(t, "ask", j.Verdict)
	require.NotEmpty(t, j.PolicySource)
}

// TestPolicyReplay records real sessions, then replays them under the
// policy they ran under (nothing changes) and under a tightened one
// (exactly the calls it tightens are reported).
func TestPolicyReplay(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("the recorded session runs commands, which needs bubblewrap")
	}
	project := fmt.Sprintf("replay-%d", time.Now().UnixNano()%1e9)
	ran := writeFile(t, "ran.yaml", "default: allow\ncommands: {allow: [ls, cat, go test]}\ncontinueAfterToolRejection: true\n")
	code, _, errOut := run(t, "", "policy", "apply", "-f", ran, "--project", project)
	require.Equal(t, 0, code, errOut)
	scriptName := project + ".yaml"
	require.NoError(t, os.MkdirAll(filepath.Join(dataDir, "replay"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dataDir, "replay", scriptName), []byte(`steps:
  - text: "Looking around."
    toolCalls:
      - name: run_command
        args: {command: "ls -la"}
  - toolCalls:
      - name: run_command
        args: {command: "go test ./..."}
  - toolCalls:
      - name: run_command
        args: {command: "sudo id"}
  - toolCalls:
      - name: read_file
        args: {path: README.md}
  - toolCalls:
      - name: run_command
        args: {command: "cat README.md | wc -l"}
  - text: "Done."
`), 0o644))
	agent := writeFile(t, "agent.yaml", fmt.Sprintf("name: replayer\nproject: %s\nmodel: replay/%s\n", project, scriptName))
	code, out, errOut := run(t, "", "apply", "-f", agent)
	require.Equal(t, 0, code, errOut+out)
	// paddock run has no --project: the session is created through the API.
	c := client.New(serverURL).WithToken(adminToken)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ss, err := c.Sessions().Create(ctx, wire.CreateRequest{Project: project, Agent: "replayer", Message: "look around", NonInteractive: true})
	require.NoError(t, err)
	ended := map[string]bool{}
	errDone := errors.New("every call ended")
	err = c.Sessions().Stream(ctx, ss.ID, 0, func(e session.Event) error {
		var d session.ToolCallData
		if e.Kind == session.EventToolCall && json.Unmarshal(e.Data, &d) == nil {
			switch d.State {
			case session.CallDone, session.CallErrored, session.CallRejected:
				ended[d.ID] = true
			}
		}
		if len(ended) == 5 {
			return errDone
		}
		return nil
	})
	require.ErrorIs(t, err, errDone, "the session's five calls end")

	replay := func(file string) policy.ReplayReport {
		t.Helper()
		code, out, errOut := run(t, "", "policy", "replay", "--policy", file, "--project", project, "--since", "1h", "--json")
		require.Equal(t, 0, code, errOut)
		var r policy.ReplayReport
		require.NoError(t, json.Unmarshal([]byte(out), &r), out)
		return r
	}
	same := replay(ran)
	require.Equal(t, 5, same.Calls, "every gated call is recorded")
	require.Equal(t, 1, same.Sessions)
	require.Empty(t, same.Changed, "the policy the session ran under changes nothing")

	tight := writeFile(t, "tight.yaml", "default: allow\ntools: {read_file: ask}\ncommands: {allow: [ls, cat]}\n")
	r := replay(tight)
	var changed []string
	for _, c := range r.Changed {
		what := c.Tool
		if c.Command != "" {
			what = c.Command
		}
		changed = append(changed, what+" "+policy.Transition(c.Before, c.After))
	}
	require.Equal(t, []string{"go test ./... allow→ask", "read_file allow→ask"}, changed)
	require.Equal(t, map[string]int{"allow→ask": 2}, r.Transitions)
	require.Equal(t, 3, r.Unchanged, "ls stays free, sudo stays refused, wc still asks")

	code, _, errOut = run(t, "", "policy", "replay", "--policy", tight, "--since", "a while")
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "is not a duration")

	code, out, _ = run(t, "", "policy", "replay", "--policy", tight, "--project", project)
	require.Equal(t, 0, code)
	require.Contains(t, out, "5 calls in 1 sessions, 2 would change, 3 unchanged")
	require.Contains(t, out, "allow→ask     2")
	require.Contains(t, out, "command:unknown-command")
	require.Contains(t, out, "run_command: go test ./...")
}

// TestRunPolicyOnlyTightens: without a server (the data directory opened
// in-process) as with one, run --policy tightens the project's policy for
// that run and never replaces it; policy check and policy show read the
// data directory's policy.
func TestRunPolicyOnlyTightens(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o711))
	local := map[string]string{"PADDOCK_DATA_DIR": dir}
	strict := writeFile(t, "strict.yaml", "default: ask\ntools:\n  edit_file: exclude\n  read_file: allow\n  list_dir: allow\ncommands: {allow: [ls]}\n")
	loose := writeFile(t, "loose.yaml", "default: allow\ncommands: {allow: [ls, cat, rm]}\n")
	code, out, errOut := runEnv(t, local, "", "policy", "apply", "-f", strict)
	require.Equal(t, 0, code, errOut)
	digest := strings.TrimSpace(out[strings.LastIndex(out, " "):])

	code, out, _ = runEnv(t, local, "", "run", "--empty", "--non-interactive", "--policy", loose, "--model", "replay/demo", "fix the typo")
	require.NotEqual(t, 0, code)
	require.Contains(t, out, "edit_file rejected", "the project's exclusion stands under a looser --policy:\n%s", out)

	code, out, errOut = runEnv(t, local, "", "policy", "show")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "project default's applied policy on the local server (data in "+dir+") ("+digest+")", "run --policy did not replace the project's policy")
	shown, err := policy.Parse([]byte(out))
	require.NoError(t, err)
	require.Equal(t, digest, shown.Digest(), "policy show prints YAML that reads back as the policy")

	code, out, _ = runEnv(t, local, "", "policy", "check", "--", "cat README.md")
	require.Equal(t, 3, code, "cat is not free under the local project's policy: %s", out)
	require.Contains(t, out, "policy: project default's applied policy on the local server")

	// On a server, as a member: --policy tightens her run; she may not
	// apply a project policy.
	project := fmt.Sprintf("tighten-%d", time.Now().UnixNano()%1e9)
	code, _, errOut = run(t, "", "policy", "apply", "-f", loose, "--project", project)
	require.Equal(t, 0, code, errOut)
	member := memberToken(t, project, "member")
	env := map[string]string{"PADDOCK_SERVER": serverURL, "PADDOCK_TOKEN": member, "PADDOCK_DATA_DIR": t.TempDir()}
	code, _, errOut = runEnv(t, env, "", "policy", "apply", "-f", strict, "--project", project)
	require.NotEqual(t, 0, code, "a member does not set the project's policy")
	env["PADDOCK_PROJECT"] = project // her project, without --project
	code, out, errOut = runEnv(t, env, "", "run", "--empty", "--non-interactive", "--policy", strict, "--model", "replay/demo", "fix the typo")
	require.NotEqual(t, 0, code)
	require.Contains(t, out, "edit_file rejected", "her --policy tightened her run: %s %s", out, errOut)
}

// memberToken makes a user with role in project and returns a token of theirs.
func memberToken(t *testing.T, project, role string) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", role, time.Now().UnixNano()%1e9)
	for _, args := range [][]string{{"projects", "create", project}, {"users", "create", name}, {"members", "add", project, name, "--role", role}} {
		code, _, errOut := run(t, "", args...)
		if args[0] != "projects" {
			require.Equal(t, 0, code, "%v: %s", args, errOut)
		}
	}
	code, out, errOut := run(t, "", "tokens", "create", "--user", name, "--quiet")
	require.Equal(t, 0, code, errOut)
	return strings.TrimSpace(out)
}
