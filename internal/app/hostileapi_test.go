package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/wire"
)

// TestConcurrentAnswersOneWins: answers to one question sent at once under
// different keys record one answer; the others are 409s.
func TestConcurrentAnswersOneWins(t *testing.T) {
	ctx := context.Background()
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Model: script(t, "work.yaml"), Message: "go", Repo: gitRepo(t)})
	require.NoError(t, err)
	q := waitQuestion(t, x.ID)
	const n = 60
	var wg sync.WaitGroup
	start := make(chan struct{})
	codes := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data, _ := json.Marshal(session.AnswerPayload{ToolCallID: q.ToolCallID, Answers: map[string]string{"go": []string{"yes", "no"}[i%2]}})
			// Each on its own warm connection, so they arrive together.
			c := client.New(shared.URL).WithToken(adminToken)
			_, _ = c.Sessions().Get(ctx, x.ID)
			<-start
			_, err := c.Sessions().Send(ctx, x.ID, wire.SendRequest{Kind: session.KindAnswer, Payload: data, IdempotencyKey: fmt.Sprintf("race-%d", i)})
			if err == nil {
				codes[i] = http.StatusAccepted
			} else {
				codes[i] = apiStatus(t, err)
			}
		}()
	}
	time.Sleep(500 * time.Millisecond) // every connection warm
	close(start)
	wg.Wait()
	accepted := 0
	for _, c := range codes {
		if c == http.StatusAccepted {
			accepted++
		} else {
			require.Equal(t, http.StatusConflict, c)
		}
	}
	require.Equal(t, 1, accepted, "one answer is recorded")
	cmds, err := api.Sessions().Commands(ctx, x.ID)
	require.NoError(t, err)
	answers := 0
	for _, c := range cmds {
		if c.Kind == session.KindAnswer {
			answers++
		}
	}
	require.Equal(t, 1, answers)
	send(t, x.ID, session.KindStop, session.StopPayload{})
}

// TestAcceptOnlyWhatWasDiffed: an acceptance names a snapshot GET …/diff
// gave; any other tree the working copy's object store happens to hold
// (the empty tree, the base's own) is refused, and the base stays.
func TestAcceptOnlyWhatWasDiffed(t *testing.T) {
	ctx := context.Background()
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Model: script(t, "empty.yaml"), Message: "hello", Repo: gitRepo(t)})
	require.NoError(t, err)
	waitFor(t, "the turn", func() (bool, error) {
		turns, err := api.Sessions().Turns(ctx, x.ID)
		return len(turns) == 1 && turns[0].Status.Settled(), err
	})
	s, err := api.Sessions().Get(ctx, x.ID)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(s.Workdir, "new.txt"), []byte("new\n"), 0o644))
	baseTree, err := exec.Command("git", "-C", s.Workdir, "-c", "safe.directory=*", "rev-parse", s.BaseCommit+"^{tree}").Output()
	require.NoError(t, err)
	for _, tree := range []string{"4b825dc642cb6eb9a060e54bf8d69288fbee4904", strings.TrimSpace(string(baseTree))} {
		_, err = api.Review().Accept(ctx, x.ID, wire.AcceptRequest{Mode: "commit", Base: s.BaseCommit, Tree: tree})
		require.Equal(t, http.StatusBadRequest, apiStatus(t, err), tree)
		require.ErrorContains(t, err, "is not a diff of session")
	}
	d, err := api.Review().Diff(ctx, x.ID)
	require.NoError(t, err)
	require.Len(t, d.Files, 1, "nothing was accepted")
	_, err = api.Review().Accept(ctx, x.ID, wire.AcceptRequest{Mode: "commit", Base: d.Base, Tree: d.Tree})
	require.NoError(t, err)
	d, err = api.Review().Diff(ctx, x.ID)
	require.NoError(t, err)
	require.Empty(t, d.Files)

	// Once a stop took the working copy, a reject is a 409, not a 500.
	send(t, x.ID, session.KindStop, session.StopPayload{})
	waitStatus(t, x.ID, session.StatusStopped)
	waitFor(t, "the copy to go", func() (bool, error) {
		_, err := api.Review().Diff(ctx, x.ID)
		return err != nil && apiStatus(t, err) == http.StatusConflict && strings.Contains(err.Error(), "gone"), nil
	})
	_, err = api.Review().Reject(ctx, x.ID)
	require.Equal(t, http.StatusConflict, apiStatus(t, err))
	require.ErrorContains(t, err, "working copy is gone")
}

// TestIdempotencyKeyCoversPolicy: a create reusing a key with another
// session policy is a 409, not the original session under a policy the
// caller did not ask for.
func TestIdempotencyKeyCoversPolicy(t *testing.T) {
	ctx := context.Background()
	create := wire.CreateRequest{Model: script(t, "empty.yaml"), Message: "hello", IdempotencyKey: unique("policy"), Policy: "default: ask\n"}
	x, err := api.Sessions().Create(ctx, create)
	require.NoError(t, err)
	again, err := api.Sessions().Create(ctx, create)
	require.NoError(t, err)
	require.Equal(t, x.ID, again.ID)
	other := create
	other.Policy = ""
	_, err = api.Sessions().Create(ctx, other)
	require.Equal(t, http.StatusConflict, apiStatus(t, err))
	require.ErrorContains(t, err, "different policy")
}

// TestUsageErrorsExit2: bad flags and a wrong number of arguments are
// usage errors on every command (exit 2), like unknown subcommands.
func TestUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{
		{"--bogus"},
		{"sessions", "ls", "--limit", "abc"},
		{"sessions", "get"},
		{"sessions", "answer"},
		{"approvals", "ls", "--status", "x"},
		{"gc", "--bogus"},
		{"policy", "check", "--bogus"},
		{"sessions", "bogus"},
	} {
		code, out := paddock(t, args...)
		require.Equal(t, 2, code, "%v: %s", args, out)
	}
	code, out := paddock(t, "sessions", "get", "no-such-session")
	require.Equal(t, 1, code, "a failure, not a usage error: %s", out)
}

// TestAcceptBeforeAWorkingCopy: a session not provisioned yet has nothing
// to accept (409 saying so, not "already delivered").
func TestAcceptBeforeAWorkingCopy(t *testing.T) {
	ctx := context.Background()
	// Recorded but never woken: it stays queued without a working copy.
	x, _, err := shared.Service.Store.CreateSession(ctx, store.NewSession{
		ID: unique("unprovisioned"), Project: "default", Agent: spec.Record{Project: "default", Name: "adhoc", Spec: json.RawMessage(`{}`)},
		CreatedBy: session.Sender{Kind: session.SenderOperator, ID: "tester"}, StartKind: session.KindStart, StartPayload: json.RawMessage(`{}`),
	})
	require.NoError(t, err)
	_, err = api.Review().Accept(ctx, x.ID, wire.AcceptRequest{Mode: "commit", Base: "a", Tree: "b"})
	require.Equal(t, http.StatusConflict, apiStatus(t, err))
	require.ErrorContains(t, err, "no working copy yet")
}

// TestSpendCapIsFinite: a NaN or infinite spend cap is refused; stored, it
// could not be encoded, and every agent listing and session of the agent
// would fail.
func TestSpendCapIsFinite(t *testing.T) {
	for _, v := range []string{".nan", ".inf", "-.inf", ".NaN"} {
		body := "kind: Agent\nname: capped\nmodel: replay/demo\nmaxPerSessionUsd: " + v + "\n"
		resp, err := authed(http.MethodPost, shared.URL+"/v1/agents", "application/yaml", strings.NewReader(body))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, v)
	}
	// Text that is not UTF-8 (a !!binary scalar) is refused, not replaced.
	resp, err := authed(http.MethodPost, shared.URL+"/v1/agents", "application/yaml", strings.NewReader("kind: Agent\nname: binary\nmodel: replay/demo\ninstructions: !!binary /w==\n"))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	_, err = api.Projects().Agents(context.Background())
	require.NoError(t, err, "the agents still list")
}

// TestPrintedAnswerCommandRuns: the command a non-interactive run prints
// at a question works as typed.
func TestPrintedAnswerCommandRuns(t *testing.T) {
	code, out := paddock(t, "run", "--empty", "--non-interactive", "--model", "replay/demo", "fix the typo")
	require.Equal(t, 2, code, out)
	_, hint, ok := strings.Cut(out, "answer it: ")
	require.True(t, ok, out)
	hint, _, _ = strings.Cut(hint, "\n")
	cmd, options, _ := strings.Cut(hint, "   (")
	require.Contains(t, options, "changelog: yes, no", "the options are listed")
	args := strings.Fields(cmd)
	require.Equal(t, "paddock", args[0])
	code, out = paddock(t, args[1:]...)
	require.Equal(t, 0, code, "%s: %s", cmd, out)
	require.Contains(t, out, "answer command")
}
