package sqlstore_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/store/pgtest"
	"github.com/paddock-dev/paddock/internal/store/sqlstore"
	"github.com/paddock-dev/paddock/internal/store/storetest"
)

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := sqlstore.Open(context.Background(), filepath.Join(t.TempDir(), "paddock.db"), nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "paddock.db")
	s, err := sqlstore.Open(context.Background(), path, nil)
	require.NoError(t, err)
	require.NoError(t, s.EnsureProject(context.Background(), "p"))
	require.NoError(t, s.Close())
	s, err = sqlstore.Open(context.Background(), path, nil)
	require.NoError(t, err)
	defer s.Close()
	_, err = s.ApplyAgents(context.Background(), []spec.Record{{Project: "p", Name: "a", Spec: []byte(`{}`), Digest: "x"}})
	require.NoError(t, err)
}

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestPostgres: the same store contract on a real PostgreSQL.
func TestPostgres(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := sqlstore.Open(context.Background(), pgtest.URL(t), nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// TestPostgresWakesOtherNodes: an event written through one node's store
// wakes the subscribers of another node's (PostgreSQL LISTEN/NOTIFY), as
// an SSE stream on node B follows a session that runs on node A.
func TestPostgresWakesOtherNodes(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	a, err := sqlstore.Open(ctx, url, nil)
	require.NoError(t, err)
	defer a.Close()
	b, err := sqlstore.Open(ctx, url, nil)
	require.NoError(t, err)
	defer b.Close()
	require.NoError(t, a.EnsureProject(ctx, "p"))
	_, _, err = a.CreateSession(ctx, store.NewSession{ID: "s1", Project: "p", Agent: spec.Record{Project: "p", Name: "a", Spec: []byte(`{}`), Digest: "d"},
		CreatedBy: session.Sender{Kind: session.SenderOperator, ID: "u"}, StartKind: session.KindStart})
	require.NoError(t, err)
	woken, cancel := b.Subscribe("s1")
	defer cancel()
	// The listener may still be connecting: write until a wake-up comes.
	deadline := time.After(30 * time.Second)
	for i := 0; ; i++ {
		_, err := a.AppendEvent(ctx, session.Event{SessionID: "s1", Kind: session.EventAssistantText, Data: []byte(`{"text":"hi"}`)})
		require.NoError(t, err)
		select {
		case <-woken:
			return
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
			t.Fatal("node B was never woken by node A's event")
		}
	}
}
