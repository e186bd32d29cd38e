// Package durabletest makes what the tests of the durable session stand
// on: a real SQLite store, a git repository with one commit, and the
// activities over them with a content key (the steps of a copy are then
// recorded) and the workflows' replay scripts.
package durabletest

import (
	"context"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/copies"
	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/provider/replay"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/store/sqlstore"
	"github.com/paddock-dev/paddock/internal/tool"
	"github.com/paddock-dev/paddock/internal/vault"
)

// Store is a fresh SQLite store, closed when the test ends.
func Store(t *testing.T) *sqlstore.Store {
	t.Helper()
	st, err := sqlstore.Open(context.Background(), filepath.Join(t.TempDir(), "paddock.db"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// Repo is a git repository whose one commit holds notes.txt.
func Repo(t *testing.T) string {
	t.Helper()
	repo := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(repo, "notes.txt"), []byte("a draft note\n"), 0o644))
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"}} {
		out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	return repo
}

// Activities are the activities over st, with a fresh content key and the
// replay scripts under scripts (replay/testdata/NAME.yaml).
func Activities(t *testing.T, st store.Store, scripts string) *durable.Activities {
	t.Helper()
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	key, err := vault.NewKey(raw)
	require.NoError(t, err)
	reg := provider.NewRegistry()
	reg.Register("replay", replay.Dir(scripts))
	return &durable.Activities{Store: st, Providers: reg, Tools: tool.Builtin(), Now: time.Now, Copies: &copies.Set{WorkspaceDir: t.TempDir()}, ContentKey: key}
}
