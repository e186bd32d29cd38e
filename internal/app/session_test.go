package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

func applyAgent(t *testing.T, name, model string, extra string) {
	t.Helper()
	res, err := api.Projects().Apply(context.Background(), []byte(fmt.Sprintf("name: %s\nmodel: %s\n%s", name, model, extra)))
	require.NoError(t, err)
	require.Len(t, res, 1)
}

func waitStatus(t *testing.T, id string, want session.Status) session.Session {
	t.Helper()
	var x session.Session
	waitFor(t, "session "+id+" "+string(want), func() (bool, error) {
		var err error
		x, err = api.Sessions().Get(context.Background(), id)
		return x.Status == want, err
	})
	return x
}

// approveTurns approves, as a person would, every call of session id
// that asks, with note, until it has turns settled turns; a session that
// fails is an error at once.
func approveTurns(t *testing.T, id string, turns int, note string) {
	t.Helper()
	ctx := context.Background()
	waitFor(t, fmt.Sprintf("%d settled turn(s) of %s", turns, id), func() (bool, error) {
		pending, err := api.Gates().Approvals(ctx, session.ApprovalFilter{SessionID: id, Status: session.ApprovalPending})
		for _, ap := range pending {
			if _, err := api.Gates().Decide(ctx, ap.ID, true, note); err != nil {
				return false, err
			}
		}
		s, serr := api.Sessions().Get(ctx, id)
		if s.Status == session.StatusFailed {
			return false, fmt.Errorf("session failed: %s", s.Error)
		}
		all, terr := api.Sessions().Turns(ctx, id)
		return len(all) == turns && all[turns-1].Status.Settled(), errors.Join(err, serr, terr)
	})
}

func send(t *testing.T, id string, kind session.CommandKind, payload any) session.Command {
	t.Helper()
	data, _ := json.Marshal(payload)
	c, err := api.Sessions().Send(context.Background(), id, wire.SendRequest{Kind: kind, Payload: data})
	require.NoError(t, err)
	return c
}

func TestSessionLifecycleOverAPI(t *testing.T) {
	ctx := context.Background()
	applyAgent(t, "worker", script(t, "work.yaml"), "displayTitle: \"Work: {{input}}\"\nmaxPerSessionUsd: 3\n")
	repo := gitRepo(t)
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Agent: "worker", Message: "process the notes", Repo: repo})
	require.NoError(t, err)
	require.Equal(t, "Work: process the notes", x.DisplayTitle)
	require.Equal(t, 3.0, x.SpendCapUSD)

	// Follow the transcript over SSE until the question, then answer it.
	var seen []session.Event
	streamCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	errStop := errors.New("stop")
	err = api.Sessions().Stream(streamCtx, x.ID, 0, func(e session.Event) error {
		seen = append(seen, e)
		if e.Kind == session.EventQuestion {
			return errStop
		}
		return nil
	})
	require.ErrorIs(t, err, errStop)
	var q session.Question
	require.NoError(t, json.Unmarshal(seen[len(seen)-1].Data, &q))
	require.Equal(t, "Proceed?", q.Questions[0].Question)
	waitStatus(t, x.ID, session.StatusAwaiting)

	// A later apply changes only future sessions.
	applyAgent(t, "worker", "replay/demo", "")

	send(t, x.ID, session.KindAnswer, session.AnswerPayload{ToolCallID: q.ToolCallID, Answers: map[string]string{"go": "yes"}})
	waitFor(t, "the answer turn to complete", func() (bool, error) {
		turns, err := api.Sessions().Turns(ctx, x.ID)
		return len(turns) == 2 && turns[1].Status == session.TurnCompleted, err
	})
	x = waitStatus(t, x.ID, session.StatusAwaiting)
	data, err := os.ReadFile(filepath.Join(x.Workdir, "result.txt"))
	require.NoError(t, err)
	require.Equal(t, "done\n", string(data))
	require.NoFileExists(t, filepath.Join(repo, "result.txt"), "the user's repository is untouched")
	require.Contains(t, string(x.AgentSpec), "work.yaml", "the snapshot is what the session was created with")

	// Resume the SSE stream from where it stopped: no gap, no duplicate.
	last := seen[len(seen)-1].Seq
	var rest []session.Event
	waitCtx, cancel2 := context.WithCancel(ctx)
	defer cancel2()
	go func() {
		waitStatus(t, x.ID, session.StatusAwaiting)
		send(t, x.ID, session.KindStop, session.StopPayload{Reason: "finished"})
	}()
	require.NoError(t, api.Sessions().Stream(waitCtx, x.ID, last, func(e session.Event) error { rest = append(rest, e); return nil }))
	require.Equal(t, last+1, rest[0].Seq)
	for i := 1; i < len(rest); i++ {
		require.Equal(t, rest[i-1].Seq+1, rest[i].Seq)
	}
	x = waitStatus(t, x.ID, session.StatusStopped)
	require.Equal(t, "finished", x.StopReason)

	// Commands to a terminal session are rejected clearly.
	_, err = api.Sessions().Send(ctx, x.ID, wire.SendRequest{Kind: session.KindMessage, Payload: json.RawMessage(`{"message":"more"}`)})
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusConflict, apiErr.Status)
	require.Contains(t, apiErr.Body.Error, "is stopped")

	cmds, err := api.Sessions().Commands(ctx, x.ID)
	require.NoError(t, err)
	for _, c := range cmds {
		require.Equal(t, session.CommandAccepted, c.State, "%s %s", c.Kind, c.Error)
	}
	require.Equal(t, session.SenderOperator, cmds[1].Sender.Kind)
	require.Equal(t, "tester", cmds[1].Sender.ID, "the server stamps the sender")
	u, err := api.Sessions().Usage(ctx, x.ID)
	require.NoError(t, err)
	require.Positive(t, u.InputTokens, "usage is recorded per model step")
	require.Len(t, u.Turns, 2)
	recordHistory(t, x.ID)
}

func TestBadInputGets4xx(t *testing.T) {
	ctx := context.Background()
	post := func(path, body string) (int, string) {
		resp, err := authed(http.MethodPost, shared.URL+path, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		var e struct{ Error string }
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return resp.StatusCode, e.Error
	}
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Model: script(t, "work.yaml")})
	require.NoError(t, err)
	cases := []struct {
		path, body string
		code       int
		msg        string
	}{
		{"/v1/sessions", `{"agent":"x","bogus":1}`, 400, "unknown field"},
		{"/v1/sessions", `{"message":42}`, 400, "cannot unmarshal"},
		{"/v1/sessions", `{"message":"x"} {}`, 400, "trailing data"},
		{"/v1/sessions", `{"model":"nope/x"}`, 400, "unknown provider \"nope\""},
		{"/v1/sessions", `{"model":"replay/does-not-exist.yaml"}`, 400, "no such file"},
		{"/v1/sessions", `{"agent":"never-applied"}`, 404, "paddock apply"},
		{"/v1/sessions", `{"message":"` + strings.Repeat("x", 2<<20) + `"}`, 413, "too large"},
		{"/v1/sessions/" + x.ID + "/commands", `{"kind":"explode"}`, 400, "unknown command kind"},
		{"/v1/sessions/" + x.ID + "/commands", `{"kind":"start"}`, 400, "created by the platform"},
		{"/v1/sessions/" + x.ID + "/commands", `{"kind":"message","payload":{}}`, 400, "payload.message: required"},
		{"/v1/sessions/" + x.ID + "/commands", `{"kind":"message","payload":{"message":"x","sender":"admin"}}`, 400, "unknown field"},
		{"/v1/sessions/" + x.ID + "/commands", `{"kind":"answer","payload":{"answers":{"a":"b"}}}`, 400, "toolCallId: required"},
		{"/v1/sessions/" + x.ID + "/commands", `{"kind":"stop","payload":{"handoff":"` + strings.Repeat("h", 20001) + `"}}`, 400, "at most 20000"},
		{"/v1/sessions/nope/commands", `{"kind":"message","payload":{"message":"x"}}`, 404, "not found"},
		{"/v1/agents", "name: a\nmodel: replay/x\nconcurency: 1\n", 400, "concurency: unknown field"},
		{"/v1/agents", "name: ok-one\nmodel: replay/x\n---\nname: bad\nmodel: nope\n", 400, "model"},
		{"/v1/nothing", `{}`, 404, "no route"},
	}
	for _, c := range cases {
		code, msg := post(c.path, c.body)
		require.Equal(t, c.code, code, "%s %.80s: %s", c.path, c.body, msg)
		require.Contains(t, strings.ToLower(msg), strings.ToLower(c.msg), c.path)
	}
	_, err = api.Projects().Agent(ctx, "ok-one")
	require.Error(t, err, "nothing of a rejected file is applied")
	resp, err := authed(http.MethodGet, shared.URL+"/v1/sessions?status=sleepy", "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 400, resp.StatusCode)
}

func TestSingletonRetryArchive(t *testing.T) {
	ctx := context.Background()
	single := unique("single")
	applyAgent(t, single, script(t, "work.yaml"), "concurrency: 1\n")
	first, err := api.Sessions().Create(ctx, wire.CreateRequest{Agent: single})
	require.NoError(t, err)
	_, err = api.Sessions().Create(ctx, wire.CreateRequest{Agent: single, Message: "another"})
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusConflict, apiErr.Status)
	require.Equal(t, first.ID, apiErr.Body.SessionID, "the 409 names the live session")
	waitStatus(t, first.ID, session.StatusAwaiting)

	// Archive, then a message revives it.
	_, err = api.Sessions().Archive(ctx, first.ID)
	require.NoError(t, err)
	list, err := api.Sessions().List(ctx, session.Filter{Agent: single})
	require.NoError(t, err)
	require.Empty(t, list)
	send(t, first.ID, session.KindMessage, session.MessagePayload{Message: "wake up"})
	x, err := api.Sessions().Get(ctx, first.ID)
	require.NoError(t, err)
	require.Nil(t, x.ArchivedAt)
	send(t, first.ID, session.KindStop, session.StopPayload{})
	waitStatus(t, first.ID, session.StatusStopped)

	// A stopped session cannot be retried; a failed one can, idempotently.
	_, err = api.Sessions().Retry(ctx, first.ID)
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusConflict, apiErr.Status)
	// A missing repository or one that is not git is refused at creation.
	for _, repo := range []string{"/nonexistent/repo", t.TempDir()} {
		_, err = api.Sessions().Create(ctx, wire.CreateRequest{Model: script(t, "work.yaml"), Repo: repo, Message: "hi"})
		require.ErrorAs(t, err, &apiErr)
		require.Equal(t, http.StatusBadRequest, apiErr.Status, repo)
	}
	// A .git that is a file git would follow elsewhere is refused too.
	elsewhere := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(elsewhere, ".git"), []byte("gitdir: /nonexistent\n"), 0o644))
	_, err = api.Sessions().Create(ctx, wire.CreateRequest{Model: script(t, "work.yaml"), Repo: elsewhere, Message: "hi"})
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusBadRequest, apiErr.Status)
	// One whose copy fails (its objects gone) fails at provisioning.
	broken := gitRepo(t)
	require.NoError(t, os.RemoveAll(filepath.Join(broken, ".git", "objects")))
	require.NoError(t, os.MkdirAll(filepath.Join(broken, ".git", "objects"), 0o755))
	failed, err := api.Sessions().Create(ctx, wire.CreateRequest{Model: script(t, "work.yaml"), Repo: broken, Message: "hi"})
	require.NoError(t, err)
	failed = waitStatus(t, failed.ID, session.StatusFailed)
	require.Contains(t, failed.FailureReason, "provisioning failed")
	r1, err := api.Sessions().Retry(ctx, failed.ID)
	require.NoError(t, err)
	r2, err := api.Sessions().Retry(ctx, failed.ID)
	require.NoError(t, err)
	require.Equal(t, r1.ID, r2.ID, "retry is idempotent")
	require.Equal(t, failed.ID, r1.RetryOf)
}

func TestInterruptMidTurn(t *testing.T) {
	ctx := context.Background()
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Model: script(t, "slow.yaml"), Message: "go slowly"})
	require.NoError(t, err)
	waitStatus(t, x.ID, session.StatusRunning)
	waitFor(t, "the model step to be in flight", func() (bool, error) {
		x, err := api.Sessions().Get(ctx, x.ID)
		return x.AmbientStatus == "thinking", err
	})
	send(t, x.ID, session.KindInterrupt, session.InterruptPayload{Reason: "changed my mind"})
	waitFor(t, "the turn to be interrupted", func() (bool, error) {
		turns, err := api.Sessions().Turns(ctx, x.ID)
		return len(turns) == 1 && turns[0].Status == session.TurnFailed, err
	})
	turns, err := api.Sessions().Turns(ctx, x.ID)
	require.NoError(t, err)
	require.Equal(t, session.ScopeTurn, turns[0].FailureScope)
	require.Equal(t, "interrupted", turns[0].Error)
	x = waitStatus(t, x.ID, session.StatusAwaiting)
	require.NoFileExists(t, filepath.Join(x.Workdir, "never.txt"))

	// The session survives and takes the next message.
	send(t, x.ID, session.KindMessage, session.MessagePayload{Message: "continue"})
	waitFor(t, "the next turn to complete", func() (bool, error) {
		turns, err := api.Sessions().Turns(ctx, x.ID)
		return len(turns) == 2 && turns[1].Status == session.TurnCompleted, err
	})
	events, err := api.Sessions().Events(ctx, x.ID, 0)
	require.NoError(t, err)
	var texts bytes.Buffer
	for _, e := range events {
		if e.Kind == session.EventAssistantText {
			var d session.TextData
			require.NoError(t, json.Unmarshal(e.Data, &d))
			texts.WriteString(d.Text)
		}
	}
	require.NotContains(t, texts.String(), "Working slowly.", "the interrupted step never streamed")
	require.Contains(t, texts.String(), "Back after the interrupt.")
	cmds, err := api.Sessions().Commands(ctx, x.ID)
	require.NoError(t, err)
	for _, c := range cmds {
		require.Equal(t, session.CommandAccepted, c.State, c.Kind)
	}
}

// waitQuestion waits for the session's first question and returns it.
func waitQuestion(t *testing.T, id string) session.Question {
	t.Helper()
	var q session.Question
	waitFor(t, "the question", func() (bool, error) {
		events, err := api.Sessions().Events(context.Background(), id, 0)
		for _, e := range events {
			if e.Kind == session.EventQuestion {
				return true, json.Unmarshal(e.Data, &q)
			}
		}
		return false, err
	})
	return q
}

// TestSessionOnAWorktree: a checkout `git worktree add` made is copied at
// its own branch, with its work in progress, like any checkout.
func TestSessionOnAWorktree(t *testing.T) {
	ctx := context.Background()
	main := gitRepo(t)
	wt := filepath.Join(t.TempDir(), "feature")
	git := func(dir string, args ...string) {
		out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	git(main, "worktree", "add", "-q", "-b", "feature", wt)
	require.NoError(t, os.WriteFile(filepath.Join(wt, "feature.txt"), []byte("only in the worktree\n"), 0o644))
	git(wt, "add", "feature.txt")
	git(wt, "commit", "-qm", "feature")
	require.NoError(t, os.WriteFile(filepath.Join(wt, "notes.txt"), []byte("edited in the worktree\n"), 0o644))

	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Model: script(t, "empty.yaml"), Repo: wt, Message: "hi"})
	require.NoError(t, err)
	x = waitStatus(t, x.ID, session.StatusAwaiting)
	for name, want := range map[string]string{"feature.txt": "only in the worktree\n", "notes.txt": "edited in the worktree\n"} {
		got, err := os.ReadFile(filepath.Join(x.Workdir, name))
		require.NoError(t, err)
		require.Equal(t, want, string(got), name)
	}
	send(t, x.ID, session.KindStop, session.StopPayload{})
	waitStatus(t, x.ID, session.StatusStopped)
}
