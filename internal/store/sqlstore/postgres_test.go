package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/store/pgtest"
	"github.com/paddock-dev/paddock/internal/store/sqlstore"
)

func atk3Session(t *testing.T, s *sqlstore.Store, id string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, s.EnsureProject(ctx, "p"))
	_, _, err := s.CreateSession(ctx, store.NewSession{ID: id, Project: "p", Agent: spec.Record{Project: "p", Name: "a", Spec: []byte(`{}`), Digest: "d"},
		CreatedBy: session.Sender{Kind: session.SenderOperator, ID: "u"}, StartKind: session.KindStart})
	require.NoError(t, err)
}

// TestPGConcurrentOpen: nodes (or `paddock migrate` beside a
// starting server) opening one fresh database at once all get a migrated
// store. The migrations run under the advisory lock, but the CREATE TABLE
// IF NOT EXISTS schema_migrations before them does not, and PostgreSQL's
// IF NOT EXISTS is not safe under concurrency (pg_type unique violation).
func TestPGConcurrentOpen(t *testing.T) {
	for round := 0; round < 3; round++ {
		url := pgtest.URL(t)
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := sqlstore.Open(context.Background(), url, nil)
				if err == nil {
					_ = s.Close()
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "round %d, opener %d", round, i)
		}
	}
}

// TestPGConcurrentSequences: two stores on one database writing the
// same session's checkpoints and events at once get distinct, gapless
// steps and sequence numbers, and every blob is stored once. (The
// transaction-wide advisory lock serialises them.)
func TestPGConcurrentSequences(t *testing.T) {
	ctx := context.Background()
	_, a, b := twoStores(t)
	atk3Session(t, a, "s1")
	const n = 25
	var wg sync.WaitGroup
	errc := make(chan error, 4*n)
	for _, st := range []*sqlstore.Store{a, b} {
		for i := 0; i < n; i++ {
			wg.Add(2)
			go func() {
				defer wg.Done()
				tree := fmt.Sprintf("%p-%d", st, i)
				_, _, err := st.SaveStep(ctx, session.Step{SessionID: "s1", Base: "b", Tree: tree, CallID: tree,
					Files: []session.StepFile{{Path: "f", Mode: "100644", Blob: "shared"}}}, map[string][]byte{"shared": []byte("x\x00y")})
				errc <- err
			}()
			go func() {
				defer wg.Done()
				_, err := st.AppendEvent(ctx, session.Event{SessionID: "s1", Kind: session.EventAssistantText, Data: []byte(`{"text":"hi"}`)})
				errc <- err
			}()
		}
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		require.NoError(t, err)
	}
	cps, err := b.Steps(ctx, "s1")
	require.NoError(t, err)
	require.Len(t, cps, 2*n)
	for i, c := range cps {
		require.Equal(t, int64(i+1), int64(c.Number))
	}
	blob, err := a.Blob(ctx, "shared")
	require.NoError(t, err)
	require.Equal(t, []byte("x\x00y"), blob)
	evs, err := a.ListEvents(ctx, "s1", 0, 10000)
	require.NoError(t, err)
	for i := 1; i < len(evs); i++ {
		require.Equal(t, evs[i-1].Seq+1, evs[i].Seq)
	}
}

// TestPGInjectionShapedValues: values shaped like SQL (quotes,
// placeholders, comments, JSON operators) are data on both dialects.
func TestPGInjectionShapedValues(t *testing.T) {
	ctx := context.Background()
	for name, dsn := range map[string]string{"sqlite": filepath.Join(t.TempDir(), "p.db"), "postgres": pgtest.URL(t)} {
		s, err := sqlstore.Open(ctx, dsn, nil)
		require.NoError(t, err)
		id := `s'?$1--?/*?*/"?`
		atk3Session(t, s, id)
		weird := []session.StepFile{{Path: `a'?b $1 -- ?| ?& ->> '`, Mode: "100644", Blob: `'; DROP TABLE blobs; --`}}
		_, _, err = s.SaveStep(ctx, session.Step{SessionID: id, Base: "?", Tree: "'?'", CallID: "$2", Files: weird}, map[string][]byte{`'; DROP TABLE blobs; --`: []byte("?")})
		require.NoError(t, err, name)
		cps, err := s.Steps(ctx, id)
		require.NoError(t, err, name)
		require.Equal(t, weird, cps[0].Files, name)
		require.Equal(t, "?", cps[0].Base, name)
		_, err = s.Steps(ctx, "s1' OR '1'='1")
		require.NoError(t, err, name)
		_, err = s.Blob(ctx, "' OR 1=1 --")
		require.ErrorIs(t, err, errdefs.ErrNotFound, name)
		_ = s.Close()
	}
}

// TestPGRawTextLikeSQLite: text SQLite keeps (a NUL byte, invalid
// UTF-8 — what a failing tool, a provider's error body or a file name may
// put in an error or status line) must not make the same write fail on
// PostgreSQL: there a turn that cannot be settled, or a session that cannot
// be failed, is stuck (the activity retries the same write forever). The
// PostgreSQL dialect keeps such text with the bad bytes marked (U+FFFD).
func TestPGRawTextLikeSQLite(t *testing.T) {
	ctx := context.Background()
	for name, dsn := range map[string]string{"sqlite": filepath.Join(t.TempDir(), "p.db"), "postgres": pgtest.URL(t)} {
		s, err := sqlstore.Open(ctx, dsn, nil)
		require.NoError(t, err)
		for i, text := range []string{"bad\x00byte", "bad \xff\xfe utf-8"} {
			id := fmt.Sprintf("s%d", i)
			atk3Session(t, s, id)
			require.NoError(t, s.SetDisplay(ctx, id, "", "turn failed: "+text), "%s: SetDisplay %q", name, text)
			require.NoError(t, s.FailSession(ctx, id, "tool failed: "+text), "%s: FailSession %q", name, text)
		}
		_ = s.Close()
	}
}

// TestPGNodeLockSurvivesLostConnection: the node lock is a session
// lock on one pooled connection; when that connection is dropped (a
// partition with the keepalives set, a PostgreSQL restart or failover,
// pg_terminate_backend) the lock is gone and another node may take it. The
// first node must learn it at once and stop serving: its HoldNode's lost
// is told within a few seconds. Nodes of other names serve beside it.
func TestPGNodeLockSurvivesLostConnection(t *testing.T) {
	ctx := context.Background()
	url, a, b := twoStores(t)
	lost := make(chan error, 1)
	releaseA, err := a.HoldNode(ctx, "node-a", func(err error) { lost <- err })
	require.NoError(t, err)
	defer releaseA()
	_, err = b.HoldNode(ctx, "node-a", func(error) {})
	require.ErrorContains(t, err, `as node "node-a"`, "a second process of the same name is refused while the first holds it")
	releaseOther, err := b.HoldNode(ctx, "node-b", func(error) {})
	require.NoError(t, err, "another node serves beside it")
	for name, want := range map[string]bool{"node-a": true, "node-b": true, "node-c": false} {
		alive, err := a.NodeAlive(ctx, name)
		require.NoError(t, err)
		require.Equal(t, want, alive, name)
	}
	require.NoError(t, releaseOther())
	alive, err := b.NodeAlive(ctx, "node-b")
	require.NoError(t, err)
	require.False(t, alive, "a node that let its name go is not alive")

	// Drop node A's lock connection, as a network partition would.
	db, err := sql.Open("pgx", url)
	require.NoError(t, err)
	defer db.Close()
	res, err := db.ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND classid = $1 AND granted`, int64(0x6e6f6465))
	require.NoError(t, err)
	n, _ := res.RowsAffected()
	require.Equal(t, int64(1), n)
	select {
	case err := <-lost:
		require.ErrorContains(t, err, `lost its hold on its name "node-a"`)
	case <-time.After(30 * time.Second):
		t.Fatal("node A was never told its lock was gone")
	}
	// Now node B may serve.
	releaseB, err := b.HoldNode(ctx, "node-a", func(error) {})
	require.NoError(t, err)
	require.NoError(t, releaseB())
}

// twoStores opens two stores on one fresh PostgreSQL database, as two
// nodes would, closed with the test.
func twoStores(t *testing.T) (url string, a, b *sqlstore.Store) {
	url = pgtest.URL(t)
	for _, s := range []**sqlstore.Store{&a, &b} {
		var err error
		*s, err = sqlstore.Open(context.Background(), url, nil)
		require.NoError(t, err)
		t.Cleanup(func() { (*s).Close() })
	}
	return url, a, b
}
