package engine

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/durable/durabletest"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/store/sqlstore"
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
	st := durabletest.Store(t)
	// Replay scripts are the session workflow's test scripts.
	return &fixture{st: st, acts: durabletest.Activities(t, st, filepath.Join("..", "workflows")), repo: durabletest.Repo(t)}
}

// session records a session of project (no workflow runs it).
func (f *fixture) session(t *testing.T, id, project string) {
	t.Helper()
	_, _, err := f.st.CreateSession(context.Background(), store.NewSession{ID: id, Project: project,
		Agent: spec.Record{Project: project, Name: "a", Spec: []byte(`{}`), Digest: "d"}, Repo: f.repo,
		CreatedBy: session.Sender{Kind: session.SenderOperator, ID: "root"}, StartKind: session.KindStart})
	require.NoError(t, err)
}
