package app_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/app"
	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/config"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store/pgtest"
	"github.com/paddock-dev/paddock/internal/wire"
)

// TestEverythingInPostgres: with PADDOCK_DATABASE_URL both the store and
// the embedded Temporal server keep their state in PostgreSQL (Temporal's
// databases created and migrated beside Paddock's): after a node is lost
// with its disk, a node started afresh, with an empty data directory,
// finds the sessions, carries on their workflows, makes the working copy
// again from the repository and the last checkpoint, signing its audit
// logs with the same key. A second process under a running node's name is
// refused.
func TestEverythingInPostgres(t *testing.T) {
	ownCluster(t)
	ctx := context.Background()
	url := pgtest.URL(t)
	key := "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // the same content key on every node
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	node := func(dir string) (*app.App, error) {
		scriptIn(t, dir, "restore.yaml") // the model, on this node
		return app.Start(ctx, config.Config{DataDir: dir, Listen: "127.0.0.1:0", AdminUser: "pg", LogLevel: slog.LevelWarn, DatabaseURL: url, EncryptionKey: key}, logger)
	}
	first := dataDir(t)
	a, err := node(first)
	require.NoError(t, err)
	stopA := sync.OnceFunc(a.Stop)
	defer stopA()
	token := readToken(first)
	c := client.New(a.URL).WithToken(token)
	_, err = c.Projects().SetPolicy(ctx, "default", []byte("default: allow\n"))
	require.NoError(t, err)
	x, err := c.Sessions().Create(ctx, wire.CreateRequest{Model: "replay/restore.yaml", Repo: gitRepo(t), Message: "hello"})
	require.NoError(t, err)
	waitFor(t, "the first turn", func() (bool, error) {
		s, err := c.Sessions().Get(ctx, x.ID)
		return s.Status == session.StatusAwaiting, err
	})
	steps, err := c.Review().History(ctx, x.ID)
	require.NoError(t, err)
	require.Len(t, steps, 1, "one call changed a file")
	require.Equal(t, "kept.txt", steps[0].Files[0].Path)

	// A second process under the first's name (its data directory
	// copied) is refused: work is routed to a node by its name.
	twin := dataDir(t)
	name, err := os.ReadFile(filepath.Join(first, "node"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(twin, "node"), name, 0o600))
	_, err = node(twin)
	require.ErrorContains(t, err, "every node needs a name of its own")
	keyA, err := c.Audit().Key(ctx)
	require.NoError(t, err)

	stopA()
	_, err = os.Stat(filepath.Join(first, "temporal.db"))
	require.ErrorIs(t, err, os.ErrNotExist, "no workflow state on the node's disk")
	// The node's disk is lost, working copy and all.
	require.NoError(t, os.RemoveAll(first))
	b, err := node(dataDir(t))
	require.NoError(t, err)
	defer b.Stop()
	c = client.New(b.URL).WithToken(token)
	_, err = c.Sessions().Send(ctx, x.ID, wire.SendRequest{Kind: session.KindMessage, Payload: []byte(`{"message":"again"}`)})
	require.NoError(t, err)
	var evs []session.Event
	waitFor(t, "the second turn, on the new node", func() (bool, error) {
		s, err := c.Sessions().Get(ctx, x.ID)
		if err != nil {
			return false, err
		}
		evs, err = c.Sessions().Events(ctx, x.ID, 0)
		return s.Status == session.StatusAwaiting && len(evs) > 0 && evs[len(evs)-1].Kind == session.EventStatus && strings.Contains(string(evs[len(evs)-1].Data), `"awaiting"`) &&
			slices.ContainsFunc(evs, func(e session.Event) bool {
				var d session.ToolCallData
				return e.Kind == session.EventToolCall && json.Unmarshal(e.Data, &d) == nil && d.Name == "read_file" && d.State == session.CallDone
			}), err
	})
	// The file written on the lost node was read back on the new one.
	var read, restored bool
	for _, e := range evs {
		var d session.ToolCallData
		if e.Kind == session.EventToolCall && json.Unmarshal(e.Data, &d) == nil && d.Name == "read_file" && d.State == session.CallDone {
			read = strings.Contains(d.Result, "written before the node was lost")
		}
		restored = restored || e.Kind == session.EventNotice && strings.Contains(string(e.Data), "made again from the repository and step 1")
	}
	if !restored {
		for _, e := range evs {
			t.Logf("%s %s %s", e.Kind, e.Key, e.Data)
		}
	}
	require.True(t, restored, "the transcript says the copy was made again")
	require.True(t, read, "the restored copy has the file written before the node was lost")
	// The history, as a person reads it.
	env := map[string]string{"PADDOCK_SERVER": b.URL, "PADDOCK_TOKEN": token}
	code, out := paddockEnv(t, env, "sessions", "history", x.ID)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "step 1 ")
	require.Contains(t, out, "1 file(s) differ from the base")
	code, out = paddockEnv(t, env, "sessions", "history", x.ID, "0", "1")
	require.Equal(t, 0, code, out)
	require.Equal(t, "changed   kept.txt\n", out)
	code, out = paddockEnv(t, env, "sessions", "history", x.ID, "0", "7")
	require.Equal(t, 2, code, out)
	require.Contains(t, out, "no step \"7\"")

	// The same audit key: the log sealed on the new node verifies, and so
	// would one sealed on the old.
	keyB, err := c.Audit().Key(ctx)
	require.NoError(t, err)
	require.Equal(t, keyA, keyB, "one audit signing key for every node of the database")
	_, err = c.Sessions().Send(ctx, x.ID, wire.SendRequest{Kind: session.KindStop, Payload: []byte(`{}`)})
	require.NoError(t, err)
	waitFor(t, "the seal", func() (bool, error) {
		reports, err := c.Audit().Verify(ctx, x.ID)
		return err == nil && len(reports) == 1 && reports[0].OK && reports[0].Sealed, err
	})
}

// TestTakeoverRestoresTheEnvironment: a session whose agent declares an
// environment setup loses its node with its disk; the node that takes it
// over makes the copy again from its checkpoint and runs setup again (it
// has no layer of those inputs), so the agent's next command finds both
// its own file and what setup made, which no checkpoint holds (ignored by
// git).
func TestTakeoverRestoresTheEnvironment(t *testing.T) {
	ownCluster(t)
	ctx := context.Background()
	url := pgtest.URL(t)
	key := "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	node := func(dir string) (*app.App, error) {
		scriptIn(t, dir, "envrestore.yaml")
		return app.Start(ctx, config.Config{DataDir: dir, Listen: "127.0.0.1:0", AdminUser: "pg", LogLevel: slog.LevelWarn, DatabaseURL: url, EncryptionKey: key,
			ReadOnlyPaths: []string{toolsDir}, Unenforced: map[string]bool{"disk": true, "cpu": true}}, logger)
	}
	repo := gitRepo(t)
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".gitignore"), []byte("node_modules/\n"), 0o644))
	for _, args := range [][]string{{"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "ignore"}} {
		out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	first := dataDir(t)
	a, err := node(first)
	require.NoError(t, err)
	stopA := sync.OnceFunc(a.Stop)
	defer stopA()
	c := client.New(a.URL).WithToken(readToken(first))
	_, err = c.Projects().SetPolicy(ctx, "default", []byte("default: allow\n"))
	require.NoError(t, err)
	_, err = c.Projects().Apply(ctx, []byte("name: envy\nmodel: replay/envrestore.yaml\ntools: [write_file, run_command]\n"+
		"environment:\n  setup: mkdir -p node_modules && echo made-by-setup > node_modules/dep.txt\n"))
	require.NoError(t, err)
	x, err := c.Sessions().Create(ctx, wire.CreateRequest{Agent: "envy", Repo: repo, Message: "hello"})
	require.NoError(t, err)
	waitFor(t, "the first turn", func() (bool, error) {
		s, err := c.Sessions().Get(ctx, x.ID)
		return s.Status == session.StatusAwaiting, err
	})
	token := readToken(first)
	stopA()
	require.NoError(t, os.RemoveAll(first)) // the node's disk is lost, layer and all

	b, err := node(dataDir(t))
	require.NoError(t, err)
	defer b.Stop()
	c = client.New(b.URL).WithToken(token)
	_, err = c.Sessions().Send(ctx, x.ID, wire.SendRequest{Kind: session.KindMessage, Payload: []byte(`{"message":"again"}`)})
	require.NoError(t, err)
	var result string
	waitFor(t, "the command on the new node", func() (bool, error) {
		evs, err := c.Sessions().Events(ctx, x.ID, 0)
		for _, e := range evs {
			var d session.ToolCallData
			if e.Kind == session.EventToolCall && json.Unmarshal(e.Data, &d) == nil && d.Name == "run_command" && (d.State == session.CallDone || d.State == session.CallErrored) {
				result = d.Result + d.Error
				return true, err
			}
		}
		return false, err
	})
	require.Contains(t, result, "made-by-setup", "setup ran again on the new node")
	require.Contains(t, result, "written before the node was lost", "the agent's file came back from the checkpoint")
}
