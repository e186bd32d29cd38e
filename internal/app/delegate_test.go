package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	apiserver "github.com/paddock-dev/paddock/internal/api"
	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/tool"
	"github.com/paddock-dev/paddock/internal/wire"
)

// children are the sessions session id delegated.
func children(t *testing.T, project, id string) []session.Session {
	t.Helper()
	all, err := api.Sessions().List(context.Background(), session.Filter{Project: project, IncludeArchived: true})
	require.NoError(t, err)
	var out []session.Session
	for _, x := range all {
		if parent, _ := x.Delegated(); parent == id {
			out = append(out, x)
		}
	}
	return out
}

// TestDelegationNeverWidensRights, end to end: a parent whose policy asks
// for write_file delegates two tasks in one step. One child is handed a
// policy that would allow write_file and still asks (a person approves
// it through the API, the chain named); the other is narrowed to
// read_file and edit_file, sees the parent's work in progress, and edits
// it. Both report back; their changes land in the parent's copy, their
// consumption in its budget; they are stopped; the person accepts one
// diff holding all three sessions' work.
func TestDelegationNeverWidensRights(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sessions")
	}
	ctx := context.Background()
	project := unique("deleg")
	require.NoError(t, api.Access().CreateProject(ctx, project))
	_, err := api.Projects().SetPolicy(ctx, project, []byte("default: allow\ntools:\n  write_file: ask\n  run_command: exclude\n"))
	require.NoError(t, err)
	repo := gitRepo(t)

	a := scriptText(t, unique("child-a")+".yaml", `steps:
  - toolCalls:
      - name: write_file
        args: {path: a.txt, content: "from child a\n"}
  - text: "A wrote a.txt."
`)
	b := scriptText(t, unique("child-b")+".yaml", `steps:
  - toolCalls:
      - name: read_file
        args: {path: parent.txt}
  - toolCalls:
      - name: edit_file
        args: {path: parent.txt, old: "draft", new: "final"}
  - text: "B finished parent.txt."
`)
	parent := scriptText(t, unique("parent")+".yaml", `steps:
  - toolCalls:
      - name: write_file
        args: {path: parent.txt, content: "the parent's draft\n"}
  - toolCalls:
      - name: delegate
        args:
          task: "write a.txt"
          model: `+a+`
          policy: "default: allow\ntools:\n  write_file: allow\n"
          budget: {actions: 5}
      - name: delegate
        args:
          task: "finish parent.txt"
          model: `+b+`
          tools: [read_file, edit_file]
      - name: delegate
        args:
          task: "run things"
          tools: [run_command]
  - text: "Both parts are in."
`)
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Project: project, Model: parent, Message: "split the work", Repo: repo})
	require.NoError(t, err)

	// A person approves what asks: the parent's write, and the child's.
	var childAsked session.Approval
	waitFor(t, "the parent's turn", func() (bool, error) {
		pending, err := api.Gates().Approvals(ctx, session.ApprovalFilter{Status: session.ApprovalPending})
		if err != nil {
			return false, err
		}
		for _, ap := range pending {
			owner, err := api.Sessions().Get(ctx, ap.SessionID)
			if err != nil {
				return false, err
			}
			if p, _ := owner.Delegated(); owner.ID != x.ID && p != x.ID {
				continue
			}
			if owner.ID != x.ID {
				childAsked = ap
				// The person's inbox names the chain and the task.
				inbox := page(t, "/inbox")
				require.Contains(t, inbox, "Started by: <a href=\"/sessions/"+x.ID+"\">")
				require.Contains(t, inbox, ", to write a.txt")
			}
			if _, err := api.Gates().Decide(ctx, ap.ID, true, "fine"); err != nil {
				return false, err
			}
		}
		turns, err := api.Sessions().Turns(ctx, x.ID)
		return len(turns) == 1 && turns[0].Status.Settled(), err
	})
	turns, err := api.Sessions().Turns(ctx, x.ID)
	require.NoError(t, err)
	require.Equal(t, session.TurnCompleted, turns[0].Status, turns[0].Error)
	require.Equal(t, "write_file", childAsked.Tool, "the child's write asked, whatever policy its delegation asked for")
	require.Equal(t, "tools.write_file=ask", childAsked.Rule)

	calls := finalCalls(t, api, x.ID)
	var reports []tool.Report
	for _, id := range []string{"call_1_0", "call_1_1"} {
		require.Equal(t, session.CallDone, calls[id].State, "%s: %s", id, calls[id].Error)
		require.NotEmpty(t, calls[id].Child)
		var r tool.Report
		require.NoError(t, json.Unmarshal([]byte(calls[id].Result), &r))
		reports = append(reports, r)
	}
	require.Contains(t, reports[0].Report, "A wrote a.txt.")
	require.Equal(t, []string{"a.txt"}, reports[0].Applied)
	require.Contains(t, reports[1].Report, "B finished parent.txt.")
	require.Equal(t, []string{"parent.txt"}, reports[1].Applied)
	require.Empty(t, reports[0].Conflicts)
	// A delegation asking for a tool the parent does not have is refused.
	require.Equal(t, session.CallErrored, calls["call_1_2"].State)
	require.Contains(t, calls["call_1_2"].Error, `"run_command" is not one of yours`)

	kids := children(t, project, x.ID)
	require.Len(t, kids, 2)
	for _, k := range kids {
		// The stop is a command the child's workflow takes in its own time.
		k = waitStatus(t, k.ID, session.StatusStopped)
		require.Contains(t, k.StopReason, "went back to session "+x.ID)
		require.Equal(t, "agent:"+x.ID+" for operator:tester", k.CreatedBy.String())
		var sp spec.Agent
		require.NoError(t, json.Unmarshal(k.AgentSpec, &sp))
		require.Zero(t, *sp.Session.MaxExtensions, "a child is never extended")
		pinned, err := policy.Pinned(k.Policy)
		require.NoError(t, err)
		v, _ := pinned.Tool("write_file")
		require.NotEqual(t, policy.AllowedWithoutPermission, v, "the child's policy is never looser than its parent's")
		v, _ = pinned.Tool("run_command")
		require.Equal(t, policy.Disabled, v)
		if slices.Equal(sp.Tools, []string{"read_file", "edit_file"}) {
			require.Empty(t, slices.DeleteFunc(slices.Clone(sp.Tools), func(n string) bool { return n == "read_file" || n == "edit_file" }))
			bCalls := finalCalls(t, api, k.ID)
			require.Contains(t, bCalls["call_0_0"].Result, "the parent's draft", "the child started from the parent's copy as it was")
		} else {
			require.Equal(t, 5, sp.Session.MaxActions, "the asked budget, within what the parent had left")
			require.NotContains(t, sp.Tools, "run_command")
		}
	}

	// The web app and the CLI show the tree.
	require.Contains(t, page(t, "/sessions/"+kids[0].ID), "Delegated by</dt><dd><a href=\"/sessions/"+x.ID+"\">")
	parentPage := page(t, "/sessions/"+x.ID)
	require.Contains(t, parentPage, "Sessions it started")
	require.Contains(t, parentPage, "/sessions/"+kids[1].ID)
	code, listing := paddock(t, "sessions", "ls", "--tree", "--archived", "--limit", "1000")
	require.Equal(t, 0, code, listing)
	lines := strings.Split(listing, "\n")
	at := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, x.ID) })
	require.GreaterOrEqual(t, at, 0, listing)
	for _, l := range lines[at+1 : at+3] {
		require.True(t, strings.HasPrefix(l, "└ "+kids[0].ID) || strings.HasPrefix(l, "└ "+kids[1].ID), "a child under its parent: %q", l)
	}

	// The children's consumption is the parent's.
	events, err := api.Sessions().Events(ctx, x.ID, 0)
	require.NoError(t, err)
	charged := 0
	for _, e := range events {
		var d session.BudgetData
		if e.Kind == session.EventBudget && strings.Contains(e.Key, "delegate/") && json.Unmarshal(e.Data, &d) == nil {
			charged += d.Actions
		}
	}
	require.Equal(t, 3, charged, "child a's one call, child b's two")

	// One deliverable: the parent's diff holds all three sessions' work.
	d, err := api.Review().Diff(ctx, x.ID)
	require.NoError(t, err)
	var paths []string
	for _, f := range d.Files {
		paths = append(paths, f.Path)
	}
	require.ElementsMatch(t, []string{"a.txt", "parent.txt"}, paths)
	code, out := paddock(t, "sessions", "accept", x.ID)
	require.Equal(t, 0, code, out)
	got, err := os.ReadFile(filepath.Join(repo, "parent.txt"))
	require.NoError(t, err)
	require.Equal(t, "the parent's final\n", string(got))
	got, err = os.ReadFile(filepath.Join(repo, "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "from child a\n", string(got))
	status, err := exec.Command("git", "-C", repo, "status", "--porcelain").CombinedOutput()
	require.NoError(t, err)
	require.Empty(t, strings.TrimSpace(string(status)), "accepted as one commit")

	// Both logs verify, and link the chain.
	for _, id := range []string{x.ID, kids[0].ID, kids[1].ID} {
		reports, err := api.Audit().Verify(ctx, id)
		require.NoError(t, err)
		require.Len(t, reports, 1)
		require.True(t, reports[0].OK, "%s: %+v", id, reports[0])
	}
	entries, err := api.Audit().Log(ctx, kids[0].ID, false)
	require.NoError(t, err)
	require.Equal(t, x.ID, entries[0].Meta["parent"], "the child's frame names its parent")
	entries, err = api.Audit().Log(ctx, x.ID, false)
	require.NoError(t, err)
	var named []string
	for _, en := range entries {
		if c := en.Meta["child"]; c != "" && !slices.Contains(named, c) {
			named = append(named, c)
		}
	}
	require.ElementsMatch(t, []string{kids[0].ID, kids[1].ID}, named, "the parent's log names its children")
}

// page is a page of the web app as the administrator sees it.
func page(t *testing.T, path string) string {
	t.Helper()
	req, err := http.NewRequest("GET", shared.URL+path, nil)
	require.NoError(t, err)
	req.AddCookie(&http.Cookie{Name: apiserver.TokenCookie, Value: adminToken})
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, string(body))
	return string(body)
}

// TestRunAsksForADelegatedSessionsCall: the person following a session
// at the terminal (paddock run) is asked for the calls of the sessions it
// delegated, named as such, and their answer decides them.
func TestRunAsksForADelegatedSessionsCall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sessions")
	}
	child := scriptText(t, unique("asking-child")+".yaml", `steps:
  - toolCalls:
      - name: write_file
        args: {path: child.txt, content: "written by the child\n"}
  - text: "Wrote child.txt."
`)
	name := unique("delegator")
	applyAgent(t, name, scriptText(t, name+".yaml", `steps:
  - toolCalls:
      - name: delegate
        args: {task: "write child.txt", model: `+child+`}
  - text: "The child reported."
`), "policy:\n  default: allow\n  tools:\n    write_file: ask\n")
	code, out := paddockIn(t, "y\n", "run", "--agent", name, "--repo", gitRepo(t), "get it written")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "⇢ delegated session")
	require.Contains(t, out, "(to write child.txt) waits for approval of write_file")
	require.Contains(t, out, "allow this write_file call (tools.write_file=ask)? [y/N]")
	require.Contains(t, out, "The child reported.")
	require.Contains(t, out, "child.txt")
}

// TestAttachAsksADelegatedSessionsPendingCall: a person who attaches to
// a session after one of its delegated sessions asked is asked that call
// at once (nothing else would ask it again), and their answer decides it.
func TestAttachAsksADelegatedSessionsPendingCall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sessions")
	}
	ctx := context.Background()
	child := scriptText(t, unique("attach-child")+".yaml", `steps:
  - toolCalls:
      - name: write_file
        args: {path: late.txt, content: "approved late\n"}
  - text: "Wrote late.txt."
`)
	name := unique("attach-delegator")
	applyAgent(t, name, scriptText(t, name+".yaml", `steps:
  - toolCalls:
      - name: delegate
        args: {task: "write late.txt", model: `+child+`}
  - text: "The late child reported."
`), "policy:\n  default: allow\n  tools:\n    write_file: ask\n")
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Agent: name, Message: "get it written", Repo: gitRepo(t)})
	require.NoError(t, err)
	var childID string
	waitFor(t, "the delegated session's call waiting", func() (bool, error) {
		all, err := api.Sessions().List(ctx, session.Filter{IncludeArchived: true})
		for _, k := range all {
			if p, _ := k.Delegated(); p == x.ID {
				childID = k.ID
			}
		}
		if childID == "" || err != nil {
			return false, err
		}
		pending, err := api.Gates().Approvals(ctx, session.ApprovalFilter{SessionID: childID, Status: session.ApprovalPending})
		return len(pending) == 1, err
	})
	code, out := paddockIn(t, "y\n", "attach", x.ID)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "allow this write_file call (tools.write_file=ask)? [y/N]")
	waitFor(t, "the parent's turn", func() (bool, error) {
		turns, err := api.Sessions().Turns(ctx, x.ID)
		return len(turns) == 1 && turns[0].Status == session.TurnCompleted, err
	})
	d, err := api.Review().Diff(ctx, x.ID)
	require.NoError(t, err)
	require.Len(t, d.Files, 1)
	require.Equal(t, "late.txt", d.Files[0].Path)
}

// TestDelegationSurvivesSIGKILL: the server is killed with SIGKILL while
// a parent waits on two delegated sessions, one of them in the middle of
// its work; started again, both come back, each once, and the parent's
// one diff holds their work.
func TestDelegationSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills real servers")
	}
	ctx := context.Background()
	dir := dataDir(t)
	repo := gitRepo(t)
	server, c := serveChild(t, dir)
	_, err := c.Projects().SetPolicy(ctx, "default", []byte("default: allow\n"))
	require.NoError(t, err)
	write := func(name, text string) string {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "replay"), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "replay", name), []byte(text), 0o600))
		return "replay/" + name
	}
	slow := write("slow-child.yaml", `steps:
  - toolCalls:
      - name: write_file
        args: {path: slow.txt, content: "slow\n"}
  - delay: 5s
    text: "Slow is done."
`)
	quick := write("quick-child.yaml", `steps:
  - toolCalls:
      - name: write_file
        args: {path: quick.txt, content: "quick\n"}
  - text: "Quick is done."
`)
	parent := write("crash-parent.yaml", `steps:
  - toolCalls:
      - name: delegate
        args: {task: "the slow part", model: `+slow+`}
      - name: delegate
        args: {task: "the quick part", model: `+quick+`}
  - text: "Both parts are back."
`)
	x, err := c.Sessions().Create(ctx, wire.CreateRequest{Model: parent, Message: "split it", Repo: repo})
	require.NoError(t, err)
	var slowID string
	waitFor(t, "the slow child's write", func() (bool, error) {
		all, err := c.Sessions().List(ctx, session.Filter{IncludeArchived: true})
		for _, k := range all {
			if p, _ := k.Delegated(); p == x.ID && strings.Contains(k.Input, "slow") {
				slowID = k.ID
			}
		}
		if slowID == "" || err != nil {
			return false, err
		}
		events, err := c.Sessions().Events(ctx, slowID, 0)
		return slices.ContainsFunc(events, func(e session.Event) bool { return e.Key == "call/call_0_0/done" }), err
	})
	require.NoError(t, server.Process.Signal(syscall.SIGKILL))
	_ = server.Wait()

	_, c = serveChild(t, dir)
	deadline := time.Now().Add(6 * time.Minute) // a lost signal is made up for within childRecheck
	for {
		turns, err := c.Sessions().Turns(ctx, x.ID)
		require.NoError(t, err)
		if len(turns) == 1 && turns[0].Status.Settled() {
			require.Equal(t, session.TurnCompleted, turns[0].Status, turns[0].Error)
			break
		}
		require.True(t, time.Now().Before(deadline), "the parent's turn never settled after the restart")
		time.Sleep(100 * time.Millisecond)
	}
	calls := finalCalls(t, c, x.ID)
	for id, want := range map[string]string{"call_0_0": "Slow is done.", "call_0_1": "Quick is done."} {
		require.Equal(t, session.CallDone, calls[id].State, "%s: %s", id, calls[id].Error)
		require.Contains(t, calls[id].Result, want)
	}
	all, err := c.Sessions().List(ctx, session.Filter{IncludeArchived: true})
	require.NoError(t, err)
	kids := 0
	for _, k := range all {
		if p, _ := k.Delegated(); p == x.ID {
			kids++
			waitFor(t, "child "+k.ID+" stopped", func() (bool, error) { // the stop is the child's command, taken in its own time
				k, err = c.Sessions().Get(ctx, k.ID)
				return k.Status == session.StatusStopped, err
			})
			turns, err := c.Sessions().Turns(ctx, k.ID)
			require.NoError(t, err)
			require.Len(t, turns, 1, "its task ran once")
		}
	}
	require.Equal(t, 2, kids, "each delegation made once")
	d, err := c.Review().Diff(ctx, x.ID)
	require.NoError(t, err)
	var paths []string
	for _, f := range d.Files {
		paths = append(paths, f.Path)
	}
	require.ElementsMatch(t, []string{"slow.txt", "quick.txt"}, paths)
	reports, err := c.Audit().Verify(ctx, x.ID)
	require.NoError(t, err)
	require.True(t, reports[0].OK, "%+v", reports[0])
}
