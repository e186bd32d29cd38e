package app_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/app"
	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/config"
	"github.com/paddock-dev/paddock/internal/engine"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store/pgtest"
)

// TestEverythingInPostgres: with PADDOCK_DATABASE_URL both the store and
// the embedded Temporal server keep their state in PostgreSQL (Temporal's
// databases created and migrated beside Paddock's): a node started afresh,
// with an empty data directory, finds the sessions and carries on their
// workflows, signing its audit logs with the same key. A second node on
// the same database is refused while the first runs.
func TestEverythingInPostgres(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	key := "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // the same content key on every node
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	node := func(dir string) (*app.App, error) {
		scriptIn(t, dir, "empty.yaml") // the model, on this node
		return app.Start(ctx, config.Config{DataDir: dir, Listen: "127.0.0.1:0", AdminUser: "pg", LogLevel: slog.LevelWarn, DatabaseURL: url, EncryptionKey: key}, logger)
	}
	first := dataDir(t)
	a, err := node(first)
	require.NoError(t, err)
	token := readToken(first)
	c := client.New(a.URL).WithToken(token)
	x, err := c.CreateSession(ctx, engine.CreateRequest{Model: "replay/empty.yaml", Message: "hello"})
	require.NoError(t, err)
	waitFor(t, "the first turn", func() (bool, error) {
		s, err := c.Session(ctx, x.ID)
		return s.Status == session.StatusAwaiting, err
	})

	_, err = node(dataDir(t))
	require.ErrorContains(t, err, "another paddock serve already runs on this database")
	keyA, err := c.AuditKey(ctx)
	require.NoError(t, err)

	a.Stop()
	_, err = os.Stat(filepath.Join(first, "temporal.db"))
	require.ErrorIs(t, err, os.ErrNotExist, "no workflow state on the node's disk")
	b, err := node(dataDir(t))
	require.NoError(t, err)
	defer b.Stop()
	c = client.New(b.URL).WithToken(token)
	_, err = c.Send(ctx, x.ID, engine.SendRequest{Kind: session.KindMessage, Payload: []byte(`{"message":"again"}`)})
	require.NoError(t, err)
	waitFor(t, "the second turn, on the new node", func() (bool, error) {
		evs, err := c.Events(ctx, x.ID, 0)
		if err != nil {
			return false, err
		}
		n := 0
		for _, e := range evs {
			if e.Kind == session.EventAssistantText {
				n++
			}
		}
		s, err := c.Session(ctx, x.ID)
		return n >= 2 && s.Status == session.StatusAwaiting, err
	})
	// The same audit key: the log sealed on the new node verifies, and so
	// would one sealed on the old.
	keyB, err := c.AuditKey(ctx)
	require.NoError(t, err)
	require.Equal(t, keyA, keyB, "one audit signing key for every node of the database")
	_, err = c.Send(ctx, x.ID, engine.SendRequest{Kind: session.KindStop, Payload: []byte(`{}`)})
	require.NoError(t, err)
	waitFor(t, "the seal", func() (bool, error) {
		reports, err := c.VerifyAudit(ctx, x.ID)
		return err == nil && len(reports) == 1 && reports[0].OK && reports[0].Sealed, err
	})
}
