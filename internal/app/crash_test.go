package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// serveChild starts this test binary as `paddock serve` on dataDir, with
// env (NAME=VALUE) added to the environment.
func serveChild(t testing.TB, dataDir string, env ...string) (*exec.Cmd, *client.Client) {
	t.Helper()
	// The child listens on a port of its own choosing (one picked here
	// and closed could be taken meanwhile) and prints its address.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PADDOCK_TEST_CHILD=serve", "PADDOCK_DATA_DIR="+dataDir, "PADDOCK_LISTEN=127.0.0.1:0",
		"PADDOCK_ADMIN_USER=crash-tester", "PADDOCK_LOG_LEVEL=warn")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			fmt.Fprintln(os.Stderr, sc.Text())
			if rest, ok := strings.CutPrefix(sc.Text(), "paddock serving on "); ok {
				urls <- strings.Fields(rest)[0]
			}
		}
	}()
	t.Cleanup(func() {
		// A clean stop unmounts the sessions' volumes; SIGKILL only if it hangs.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	var url string
	select {
	case url = <-urls:
	case <-time.After(150 * time.Second):
		t.Fatal("the child server never said where it serves")
	}
	token := readToken(dataDir)
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PADDOCK_TOKEN="); ok {
			token = v // the cluster's first node made the administrator
		}
	}
	c := client.New(url).WithToken(token)
	waitFor(t, "the child server to be ready", func() (bool, error) { return c.Health(context.Background()) == nil, nil })
	return cmd, c
}

// TestCrashRecovery kills the server with SIGKILL in the middle of a turn,
// starts it again on the same data directory, and checks that nothing was
// lost: every accepted command is processed exactly once, the transcript has
// no gap or duplicate, and the session carries on.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills real servers")
	}
	ctx := context.Background()
	dir := dataDir(t)
	repo := gitRepo(t)
	child, c := serveChild(t, dir)
	_, err := c.Projects().SetPolicy(ctx, "default", []byte("default: allow\n"))
	require.NoError(t, err)

	_, err = c.Projects().Apply(ctx, []byte("name: crasher\nmodel: "+scriptIn(t, dir, "crash.yaml")+"\n"))
	require.NoError(t, err)
	create := wire.CreateRequest{Agent: "crasher", Message: "turn one", Repo: repo, IdempotencyKey: "crash-session"}
	x, err := c.Sessions().Create(ctx, create)
	require.NoError(t, err)
	sendAll := func(c *client.Client, keys ...string) {
		for _, k := range keys {
			_, err := c.Sessions().Send(ctx, x.ID, wire.SendRequest{Kind: session.KindMessage, Payload: json.RawMessage(`{"message":"` + k + `"}`), IdempotencyKey: k})
			require.NoError(t, err)
		}
	}
	sendAll(c, "m1", "m2")

	// Kill it while step one of the first turn is in flight.
	waitFor(t, "step zero's tool call to finish", func() (bool, error) {
		events, err := c.Sessions().Events(ctx, x.ID, 0)
		for _, e := range events {
			if e.Key == "call/call_0_0/done" {
				return true, err
			}
		}
		return false, err
	})
	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	_ = child.Wait()

	_, c = serveChild(t, dir)
	// In-flight work resumes within seconds of the server answering: the
	// activity the crash interrupted heartbeated, so its loss is noticed
	// after HeartbeatTimeout, not after its whole time limit.
	healthy := time.Now()
	waitFor(t, "turn one to go on after the restart", func() (bool, error) {
		turns, err := c.Sessions().Turns(ctx, x.ID)
		return len(turns) > 0 && turns[0].Status == session.TurnCompleted, err
	})
	resumed := time.Since(healthy)
	fmt.Fprintf(os.Stderr, "crash test: turn one completed %s after the restarted server answered healthy\n", resumed.Round(10*time.Millisecond))
	require.Less(t, resumed, 15*time.Second, "in-flight work resumes within 15 s of a restart")
	// Clients retry what they are unsure of: the same keys change nothing.
	again, err := c.Sessions().Create(ctx, create)
	require.NoError(t, err)
	require.Equal(t, x.ID, again.ID)
	sendAll(c, "m1", "m2")
	waitFor(t, "the first two turns to complete", func() (bool, error) {
		turns, err := c.Sessions().Turns(ctx, x.ID)
		if err != nil || len(turns) != 2 {
			return false, err
		}
		s, err := c.Sessions().Get(ctx, x.ID)
		return turns[1].Status == session.TurnCompleted && s.Status == session.StatusAwaiting, err
	})
	sendAll(c, "m3")
	waitFor(t, "all three turns to complete", func() (bool, error) {
		turns, err := c.Sessions().Turns(ctx, x.ID)
		if err != nil || len(turns) != 3 {
			return false, err
		}
		for _, tr := range turns {
			if tr.Status != session.TurnCompleted {
				return false, nil
			}
		}
		s, err := c.Sessions().Get(ctx, x.ID)
		return s.Status == session.StatusAwaiting, err
	})

	events, cmds := requireCrashScriptRan(t, c, x.ID)
	turns, err := c.Sessions().Turns(ctx, x.ID)
	require.NoError(t, err)
	require.Len(t, turns[1].CommandIDs, 2, "m1 and m2 were pending together and share a turn")
	s, err := c.Sessions().Get(ctx, x.ID)
	require.NoError(t, err)
	for _, f := range []string{"a.txt", "b.txt", "c.txt", "d.txt"} {
		require.FileExists(t, filepath.Join(s.Workdir, f))
	}
	// The SIGKILL left no gap: every event has its chained audit entry.
	reports, err := c.Audit().Verify(ctx, x.ID)
	require.NoError(t, err)
	require.True(t, reports[0].OK, "%+v", reports[0])
	require.Equal(t, len(events), reports[0].Entries)
	fmt.Fprintf(os.Stderr, "crash test: %d events, %d commands, %d turns after a SIGKILL\n", len(events), len(cmds), len(turns))
}

// requireCrashScriptRan checks a session that ran testdata/crash.yaml's
// three turns (started with "turn one", then m1, m2 and m3): every
// command accepted once, the transcript gapless, every step's text once
// in order, each call's states once. It returns the events and commands.
func requireCrashScriptRan(t *testing.T, c *client.Client, id string) ([]session.Event, []session.Command) {
	t.Helper()
	ctx := context.Background()
	cmds, err := c.Sessions().Commands(ctx, id)
	require.NoError(t, err)
	require.Len(t, cmds, 4, "start, m1, m2, m3: each once")
	for _, cmd := range cmds {
		require.Equal(t, session.CommandAccepted, cmd.State, "%s %s", cmd.Kind, cmd.IdempotencyKey)
	}
	events, err := c.Sessions().Events(ctx, id, 0)
	require.NoError(t, err)
	var text strings.Builder
	var users []string
	calls := map[string][]string{}
	for i, e := range events {
		require.Equal(t, int64(i+1), e.Seq, "no gap")
		switch e.Kind {
		case session.EventAssistantText:
			var d session.TextData
			require.NoError(t, json.Unmarshal(e.Data, &d))
			text.WriteString(d.Text)
		case session.EventUserMessage:
			var d session.TextData
			require.NoError(t, json.Unmarshal(e.Data, &d))
			users = append(users, d.Text)
		case session.EventToolCall:
			var d session.ToolCallData
			require.NoError(t, json.Unmarshal(e.Data, &d))
			calls[d.ID] = append(calls[d.ID], string(d.State))
		}
	}
	require.Equal(t, []string{"turn one", "m1", "m2", "m3"}, users)
	want := []string{"step zero writes a", "step one writes b", "step two ends turn one", "step three writes c",
		"step four ends turn two", "step five writes d", "step six ends turn three"}
	require.Equal(t, strings.Join(want, ""), text.String(), "every step's text exactly once, in order")
	for _, id := range []string{"call_0_0", "call_1_0", "call_3_0", "call_5_0"} {
		require.Equal(t, []string{"generating", "generated", "calling", "done"}, calls[id], id)
	}
	return events, cmds
}
