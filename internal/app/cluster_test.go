package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store/pgtest"
	"github.com/paddock-dev/paddock/internal/volume"
	"github.com/paddock-dev/paddock/internal/wire"
)

// TestTwoNodes runs two `paddock serve` processes on one PostgreSQL
// database: one Temporal cluster, one API served by both. A session's
// diff is asked of the node that does not hold its working copy (the
// delivery is handed to the one that does); then the node holding it is
// killed with SIGKILL in the middle of a turn, and the other finishes the
// turn and the ones queued behind it: every command accepted once, the
// transcript gapless, and the diff holds the files written on the dead
// node and those written after it died.
func TestTwoNodes(t *testing.T) {
	ownCluster(t)
	if testing.Short() {
		t.Skip("starts and kills real servers")
	}
	ctx := context.Background()
	nodes := twoNodes(t, func(d string) { scriptIn(t, d, "crash.yaml") }) // the model, on either node
	a, b := nodes[0].client, nodes[1].client
	children := map[string]*os.Process{nodes[0].name: nodes[0].proc, nodes[1].name: nodes[1].proc}
	clients := map[string]*client.Client{nodes[0].name: a, nodes[1].name: b}

	_, err := a.Projects().SetPolicy(ctx, "default", []byte("default: allow\n"))
	require.NoError(t, err)
	_, err = b.Projects().Apply(ctx, []byte("name: crasher\nmodel: replay/crash.yaml\n"))
	require.NoError(t, err)
	x, err := a.Sessions().Create(ctx, wire.CreateRequest{Agent: "crasher", Message: "turn one", Repo: gitRepo(t)})
	require.NoError(t, err)
	send := func(c *client.Client, keys ...string) {
		for _, k := range keys {
			_, err := c.Sessions().Send(ctx, x.ID, wire.SendRequest{Kind: session.KindMessage, Payload: json.RawMessage(`{"message":"` + k + `"}`), IdempotencyKey: k})
			require.NoError(t, err)
		}
	}
	send(b, "m1", "m2")
	waitFor(t, "step zero's tool call to finish", func() (bool, error) {
		events, err := b.Sessions().Events(ctx, x.ID, 0)
		for _, e := range events {
			if e.Key == "call/call_0_0/done" {
				return true, err
			}
		}
		return false, err
	})
	s, err := a.Sessions().Get(ctx, x.ID)
	require.NoError(t, err)
	home := s.Node
	require.Contains(t, children, home, "the session's copy is on one of the two nodes")
	var other string
	for n := range children {
		if n != home {
			other = n
		}
	}
	// The node without the copy answers the diff by handing it over.
	d, err := clients[other].Review().Diff(ctx, x.ID)
	require.NoError(t, err)
	require.Contains(t, d.Patch, "a.txt")

	require.NoError(t, children[home].Signal(syscall.SIGKILL))
	killed := time.Now()
	c := clients[other]
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		s, _ := c.Sessions().Get(ctx, x.ID)
		t.Logf("session: status %s node %s display %q", s.Status, s.Node, s.AmbientStatus)
		turns, _ := c.Sessions().Turns(ctx, x.ID)
		for _, tr := range turns {
			t.Logf("turn %d %s %v %s", tr.Seq, tr.Status, tr.CommandIDs, tr.Error)
		}
		cmds, _ := c.Sessions().Commands(ctx, x.ID)
		for _, cmd := range cmds {
			t.Logf("command %s %s %s", cmd.Kind, cmd.State, cmd.IdempotencyKey)
		}
		events, _ := c.Sessions().Events(ctx, x.ID, 0)
		for _, e := range events {
			t.Logf("event %d %s %s %.200s", e.Seq, e.Kind, e.Key, e.Data)
		}
	})
	waitFor(t, "turn one to go on, on the other node", func() (bool, error) {
		turns, err := c.Sessions().Turns(ctx, x.ID)
		return len(turns) > 0 && turns[0].Status == session.TurnCompleted, err
	})
	fmt.Fprintf(os.Stderr, "two nodes: turn one completed %s after its node was killed\n", time.Since(killed).Round(10*time.Millisecond))
	send(c, "m1", "m2") // again: retried by a client unsure of them, they change nothing
	// m3 is a turn of its own: sent once m1 and m2's turn has begun (sent
	// before, on a busy machine, it would join their batch).
	waitFor(t, "m1 and m2's turn to begin", func() (bool, error) {
		turns, err := c.Sessions().Turns(ctx, x.ID)
		return len(turns) >= 2, err
	})
	send(c, "m3")
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
	events, _ := requireCrashScriptRan(t, c, x.ID)
	restored := slices.ContainsFunc(events, func(e session.Event) bool {
		return e.Kind == session.EventNotice && strings.Contains(string(e.Data), "made again from the repository")
	})
	require.True(t, restored, "the transcript says the copy was made again on the surviving node")
	s, err = c.Sessions().Get(ctx, x.ID)
	require.NoError(t, err)
	require.Equal(t, other, s.Node, "the surviving node holds the copy now")
	d, err = c.Review().Diff(ctx, x.ID)
	require.NoError(t, err)
	for _, f := range []string{"a.txt", "b.txt", "c.txt", "d.txt"} {
		require.Contains(t, d.Patch, "b/"+f, "the diff has %s", f)
	}
	reports, err := c.Audit().Verify(ctx, x.ID)
	require.NoError(t, err)
	require.True(t, reports[0].OK, "%+v", reports[0])
	require.Equal(t, len(events), reports[0].Entries)
}

// nodeOf is the name of the node serving dataDir.
// node is one `paddock serve` process of a test's cluster.
type node struct {
	name   string
	proc   *os.Process
	client *client.Client
}

// twoNodes starts two `paddock serve` nodes on a new PostgreSQL database
// (one Temporal cluster), env added to both's; prepare readies each data
// directory first (its replay scripts). A node killed leaves its
// sessions' volumes mounted: they are unmounted when the test ends.
func twoNodes(t *testing.T, prepare func(dataDir string), env ...string) [2]node {
	env = append([]string{"PADDOCK_DATABASE_URL=" + pgtest.URL(t), "PADDOCK_ENCRYPTION_KEY=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}, env...)
	var out [2]node
	first := ""
	for i := range out {
		d := dataDir(t)
		prepare(d)
		t.Cleanup(func() { _ = (&volume.Volumes{Dir: filepath.Join(d, "volumes")}).UnmountAll(context.Background()) })
		e := env
		if i == 0 {
			first = d
		} else {
			e = append(slices.Clone(env), "PADDOCK_TOKEN="+readToken(first)) // the first node's administrator
		}
		cmd, c := serveChild(t, d, e...)
		out[i] = node{name: nodeOf(t, d), proc: cmd.Process, client: c}
	}
	return out
}

func nodeOf(t testing.TB, dataDir string) string {
	data, err := os.ReadFile(filepath.Join(dataDir, "node"))
	require.NoError(t, err)
	return strings.TrimSpace(string(data))
}

// TestDelegationOnTwoNodes: a delegated session's copy is a fork of its
// parent's, so it is made on the node holding the parent's copy, whichever
// node's worker picks its workflow up; three delegations (each with about
// even odds of landing elsewhere) all fork there and all come back.
func TestDelegationOnTwoNodes(t *testing.T) {
	ownCluster(t)
	if testing.Short() {
		t.Skip("starts real servers")
	}
	ctx := context.Background()
	const child = "steps:\n  - toolCalls:\n      - name: write_file\n        args: {path: %s.txt, content: \"%s\\n\"}\n  - text: \"%s is written.\"\n"
	const parent = "steps:\n  - toolCalls:\n" +
		"      - {name: delegate, args: {task: one, model: replay/one.yaml}}\n" +
		"      - {name: delegate, args: {task: two, model: replay/two.yaml}}\n" +
		"      - {name: delegate, args: {task: three, model: replay/three.yaml}}\n" +
		"  - text: \"All three are back.\"\n"
	a := twoNodes(t, func(d string) {
		require.NoError(t, os.MkdirAll(filepath.Join(d, "replay"), 0o700))
		for _, n := range []string{"one", "two", "three"} {
			require.NoError(t, os.WriteFile(filepath.Join(d, "replay", n+".yaml"), []byte(fmt.Sprintf(child, n, n, n)), 0o600))
		}
		require.NoError(t, os.WriteFile(filepath.Join(d, "replay", "parent.yaml"), []byte(parent), 0o600))
	})[0].client
	_, err := a.Projects().SetPolicy(ctx, "default", []byte("default: allow\n"))
	require.NoError(t, err)
	x, err := a.Sessions().Create(ctx, wire.CreateRequest{Model: "replay/parent.yaml", Message: "split it", Repo: gitRepo(t)})
	require.NoError(t, err)
	waitFor(t, "the parent's turn", func() (bool, error) {
		turns, err := a.Sessions().Turns(ctx, x.ID)
		return len(turns) == 1 && turns[0].Status.Settled(), err
	})
	calls := finalCalls(t, a, x.ID)
	for _, id := range []string{"call_0_0", "call_0_1", "call_0_2"} {
		require.Equal(t, session.CallDone, calls[id].State, "%s: %s", id, calls[id].Error)
		require.Contains(t, calls[id].Result, "is written.")
		require.NotContains(t, calls[id].Result, "problem")
	}
	x, err = a.Sessions().Get(ctx, x.ID)
	require.NoError(t, err)
	all, err := a.Sessions().List(ctx, session.Filter{IncludeArchived: true})
	require.NoError(t, err)
	for _, k := range all {
		if p, _ := k.Delegated(); p == x.ID {
			require.Equal(t, x.Node, k.Node, "a delegated session's copy is made on its parent's node")
		}
	}
	d, err := a.Review().Diff(ctx, x.ID)
	require.NoError(t, err)
	require.Len(t, d.Files, 3)
}
