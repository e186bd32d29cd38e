package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/durable/durabletest"
	"github.com/paddock-dev/paddock/internal/forge"
	"github.com/paddock-dev/paddock/internal/mirror"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/workspace"
)

// downFor is a mirror cache whose forge does not answer for its first
// down fetches, then serves the repository at from (a git repository
// holding the commit); or refuses, when refused.
type downFor struct {
	down, calls int
	from        string
	refused     bool
}

func (d *downFor) Mirror(ctx context.Context, src mirror.Source, ref, commit string) (string, error) {
	d.calls++
	switch {
	case d.refused:
		return "", fmt.Errorf("%w: 403", mirror.ErrRefused)
	case d.calls <= d.down:
		return "", fmt.Errorf("%w: connection refused", mirror.ErrUnreachable)
	}
	return d.from, nil
}

// TestProvisioningWaitsForAForge: a forge that does not answer when a
// session's copy is made is waited for, the transcript saying so once,
// and tried again until it answers; one that does not answer within
// ForgeWait fails the session with the reason, as does a refusal, at
// once; a stop (the activity's end) ends the wait.
func TestProvisioningWaitsForAForge(t *testing.T) {
	ctx := context.Background()
	st := durabletest.Store(t)
	acts := durabletest.Activities(t, st, t.TempDir())
	repo := durabletest.Repo(t)
	head, err := workspace.Head(ctx, repo)
	require.NoError(t, err)
	require.NoError(t, st.EnsureProject(ctx, "p"))
	c := forge.Connection{Project: "p", Name: "forge", Kind: forge.Git, URL: "https://git.example.com", Repositories: []string{"team/*"}}
	_, err = st.AddConnection(ctx, c, acts.ContentKey.Encrypt([]byte("token"), mirror.ConnectionAD("p", "forge")))
	require.NoError(t, err)
	remote := &session.Remote{Connection: "forge", URL: "https://git.example.com/team/app", Path: "team/app", Commit: head}
	newSession := func(id string) session.Session {
		x, _, err := st.CreateSession(ctx, store.NewSession{ID: id, Project: "p", Agent: spec.Record{Project: "p", Name: "a", Spec: json.RawMessage(`{"name":"a"}`), Digest: "d"},
			CreatedBy: session.Sender{Kind: session.SenderOperator, ID: "ana"}, StartKind: session.KindStart, Repo: remote.URL, Remote: remote})
		require.NoError(t, err)
		return x
	}
	notices := func(id string) int {
		events, err := st.ListEvents(ctx, id, 0, 0)
		require.NoError(t, err)
		n := 0
		for _, e := range events {
			if e.Kind == session.EventNotice && strings.Contains(string(e.Data), "does not answer") {
				n++
			}
		}
		return n
	}

	forge := &downFor{down: 2, from: repo}
	acts.Mirrors = forge
	x := newSession("waits")
	detail, err := acts.CloneRemote(ctx, x, filepath.Join(t.TempDir(), "copy"))
	require.NoError(t, err)
	require.Contains(t, detail, "https://git.example.com/team/app")
	require.Equal(t, 3, forge.calls, "tried again until it answered")
	require.Equal(t, 1, notices(x.ID), "the transcript says so, once")

	acts.Mirrors, acts.ForgeWait = &downFor{down: 1 << 30}, 2*time.Second
	y := newSession("gives-up")
	_, err = acts.CloneRemote(ctx, y, filepath.Join(t.TempDir(), "copy"))
	require.ErrorContains(t, err, "the forge did not answer: connection refused; it did not answer for 2s")

	acts.Mirrors, acts.ForgeWait = &downFor{refused: true}, time.Hour
	_, err = acts.CloneRemote(ctx, newSession("refused"), filepath.Join(t.TempDir(), "copy"))
	require.ErrorContains(t, err, "403", "a refusal is not waited for")

	acts.Mirrors, acts.ForgeWait = &downFor{down: 1 << 30}, durable.DefaultForgeWait
	stopped, cancel := context.WithCancel(ctx)
	go func() {
		for notices("stopped") == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	_, err = acts.CloneRemote(stopped, newSession("stopped"), filepath.Join(t.TempDir(), "copy"))
	require.True(t, errors.Is(err, context.Canceled), "the wait ends with the activity: %v", err)
}
