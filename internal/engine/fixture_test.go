package engine

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
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/store/sqlstore"
	"github.com/paddock-dev/paddock/internal/tool"
	"github.com/paddock-dev/paddock/internal/vault"
)

// fixture is a real SQLite store, a git repository and the durable
// session's activities, for the use cases to act on.
type fixture struct {
	st   *sqlstore.Store
	acts *durable.Activities
	repo string
}

func setup(t *testing.T) *fixture {
	t.Helper()
	st, err := sqlstore.Open(context.Background(), filepath.Join(t.TempDir(), "paddock.db"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	repo := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(repo, "notes.txt"), []byte("a draft note\n"), 0o644))
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"}} {
		out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	key, err := vault.NewKey(raw)
	require.NoError(t, err)
	// Replay scripts are the session workflow's test scripts.
	reg := provider.NewRegistry()
	reg.Register("replay", replay.Dir(filepath.Join("..", "workflows")))
	acts := &durable.Activities{Store: st, Providers: reg, Tools: tool.Builtin(), Now: time.Now, Copies: &copies.Set{WorkspaceDir: t.TempDir()}, ContentKey: key}
	return &fixture{st: st, acts: acts, repo: repo}
}

// session records a session of project (no workflow runs it).
func (f *fixture) session(t *testing.T, id, project string) {
	t.Helper()
	_, _, err := f.st.CreateSession(context.Background(), store.NewSession{ID: id, Project: project,
		Agent: spec.Record{Project: project, Name: "a", Spec: []byte(`{}`), Digest: "d"}, Repo: f.repo,
		CreatedBy: session.Sender{Kind: session.SenderOperator, ID: "root"}, StartKind: session.KindStart})
	require.NoError(t, err)
}
