package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/app"
	"github.com/paddock-dev/paddock/internal/cli"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/volume"
	"github.com/paddock-dev/paddock/internal/wire"
)

func goRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module calc\n\ngo 1.26\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "doc.go"), []byte("// Package calc adds.\npackage calc\n"), 0o644))
	for _, args := range [][]string{{"init", "-q"}, {"config", "user.name", "Repo Owner"}, {"config", "user.email", "owner@example.com"},
		{"add", "."}, {"commit", "-qm", "init"}} {
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	return dir
}

func paddock(t *testing.T, args ...string) (int, string) {
	t.Helper()
	return paddockEnv(t, map[string]string{"PADDOCK_SERVER": shared.URL, "PADDOCK_TOKEN": adminToken}, args...)
}

// paddockEnv runs the CLI in-process with env as its environment.
func paddockEnv(t *testing.T, env map[string]string, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := cli.Run(context.Background(), args, cli.IO{Server: app.CLI, In: strings.NewReader(""), Out: &out, Err: &out, Getenv: func(k string) string { return env[k] }})
	return code, out.String()
}

func head(t *testing.T, repo string) string {
	out, err := exec.Command("git", "-C", repo, "log", "-1", "--format=%H %an <%ae>").Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}

// TestDiffAcceptReject: a session edits files and runs the tests in the
// sandbox; its diff flags go.mod; accepting applies it to the original
// repository under the owner's identity. A second session is rejected and
// leaves the repository untouched. An idle session is reaped and answers.
func TestDiffAcceptReject(t *testing.T) {
	ctx := context.Background()
	repo := goRepo(t)
	_, err := api.Projects().SetPolicy(ctx, "deliver", []byte("default: allow\ncommands:\n  allow: [go test, echo]\n"))
	require.NoError(t, err)
	applyAgent(t, "builder", script(t, "deliver.yaml"), "project: deliver\nsession:\n  idleTimeout: 2s\n")
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Project: "deliver", Agent: "builder", Repo: repo, Message: "add Add with a test"})
	require.NoError(t, err)
	waitFor(t, "the turn to complete", func() (bool, error) {
		turns, err := api.Sessions().Turns(ctx, x.ID)
		return len(turns) == 1 && turns[0].Status.Settled(), err
	})
	events, err := api.Sessions().Events(ctx, x.ID, 0)
	require.NoError(t, err)
	testOutput := ""
	for _, e := range events {
		var d session.ToolCallData
		if e.Kind == session.EventToolCall && json.Unmarshal(e.Data, &d) == nil && d.Name == "run_command" && d.State == session.CallDone {
			testOutput = d.Result
		}
	}
	require.Contains(t, testOutput, "ok  \tcalc", "go test ran in the sandbox")
	require.Contains(t, testOutput, "tests-exit=0")

	d, err := api.Review().Diff(ctx, x.ID)
	require.NoError(t, err)
	byPath := map[string]bool{}
	for _, f := range d.Files {
		byPath[f.Path] = f.Flagged
	}
	require.Equal(t, map[string]bool{"add.go": false, "add_test.go": false, "go.mod": true}, byPath)
	code, out := paddock(t, "sessions", "diff", x.ID, "--stat")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "go.mod  ⚑ dependency manifest")

	before := head(t, repo)
	require.NoFileExists(t, filepath.Join(repo, "add.go"), "nothing reaches the repository before acceptance")
	code, out = paddock(t, "sessions", "accept", x.ID, "--tree", "0000000000000000000000000000000000000000")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "changed since the review")
	require.Equal(t, before, head(t, repo), "a stale review applies nothing")
	code, out = paddock(t, "sessions", "accept", x.ID, "-m", "Add Add", "--tree", d.Tree)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "applied 3 file(s)")
	after := head(t, repo)
	require.NotEqual(t, before, after)
	require.Contains(t, after, "Repo Owner <owner@example.com>", "committed under the user's identity")
	require.FileExists(t, filepath.Join(repo, "add_test.go"))
	msg, _ := exec.Command("git", "-C", repo, "log", "-1", "--format=%B").Output()
	require.Contains(t, string(msg), "Paddock-Session: "+x.ID, "the commit names the session")
	code, out = paddock(t, "sessions", "accept", x.ID)
	require.Equal(t, 1, code)
	require.Contains(t, out, "changed nothing since its last diff was accepted")

	// The agent goes on after an acceptance: what it writes next is a new
	// diff against the accepted snapshot, and deliverable in turn.
	s, err := api.Sessions().Get(ctx, x.ID)
	require.NoError(t, err)
	// The session idles out in 2 s, and its volume is unmounted then: a
	// diff mounts it again, so the file is written right after one, and
	// again should the reap have come in between.
	waitFor(t, "later.txt in the diff", func() (bool, error) {
		if _, err := api.Review().Diff(ctx, x.ID); err != nil {
			return false, err
		}
		if err := os.WriteFile(filepath.Join(s.Workdir, "later.txt"), []byte("later\n"), 0o644); err != nil {
			return false, err
		}
		d, err = api.Review().Diff(ctx, x.ID)
		return err == nil && len(d.Files) == 1, err
	})
	require.Equal(t, "later.txt", d.Files[0].Path)
	code, out = paddock(t, "sessions", "accept", x.ID)
	require.Equal(t, 0, code, out)
	require.FileExists(t, filepath.Join(repo, "later.txt"))
	after = head(t, repo)
	// A stale acceptance (of the diff already delivered) is refused.
	_, err = api.Review().Accept(ctx, x.ID, wire.AcceptRequest{Mode: "commit", Base: d.Base, Tree: d.Tree})
	require.ErrorContains(t, err, "already delivered")

	// Idle past the agent's 2s interval: reaped, then it answers.
	waitFor(t, "the idle reap", func() (bool, error) {
		s, err := api.Sessions().Get(ctx, x.ID)
		return s.AmbientStatus == "idle (sandbox released)", err
	})
	// An idle session holds no mount; its copy is read and written
	// again once it is used.
	if mnt := filepath.Dir(s.Workdir); filepath.Base(filepath.Dir(mnt)) == "volumes" {
		waitFor(t, "the idle session's volume unmounted", func() (bool, error) { return !volume.Mounted(mnt), nil })
	}
	d, err = api.Review().Diff(ctx, x.ID)
	require.NoError(t, err, "a diff mounts the volume again")
	require.Empty(t, d.Files)
	send(t, x.ID, session.KindMessage, session.MessagePayload{Message: "still there?"})
	waitFor(t, "the answer after the reap", func() (bool, error) {
		turns, err := api.Sessions().Turns(ctx, x.ID)
		return len(turns) == 2 && turns[1].Status == session.TurnCompleted, err
	})
	send(t, x.ID, session.KindStop, session.StopPayload{})
	waitStatus(t, x.ID, session.StatusStopped)

	// A second session's work is rejected: the repository stays as it is.
	y, err := api.Sessions().Create(ctx, wire.CreateRequest{Project: "deliver", Agent: "builder", Repo: repo, Message: "again"})
	require.NoError(t, err)
	waitFor(t, "the second turn", func() (bool, error) {
		turns, err := api.Sessions().Turns(ctx, y.ID)
		return len(turns) == 1 && turns[0].Status.Settled(), err
	})
	code, out = paddock(t, "sessions", "reject", y.ID)
	require.Equal(t, 0, code, out)
	require.Equal(t, after, head(t, repo))
	status, _ := exec.Command("git", "-C", repo, "status", "--porcelain").Output()
	require.Empty(t, string(status), "the repository is untouched")
	d, err = api.Review().Diff(ctx, y.ID)
	require.NoError(t, err)
	require.Empty(t, d.Files, "the rejected changes are gone from the working copy")
	require.Equal(t, "rejected", d.Delivery)
	send(t, y.ID, session.KindStop, session.StopPayload{})
}
