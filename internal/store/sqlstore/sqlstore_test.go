package sqlstore_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

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
	_, err = s.ApplyAgents(context.Background(), []store.Agent{{Project: "p", Name: "a", Spec: []byte(`{}`), Digest: "x"}})
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
