package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/access"
	"github.com/paddock-dev/paddock/internal/copies"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/store/sqlstore"
)

// TestGC: stopped sessions' copies go, failed ones' after the retention,
// leftovers no session owns go, live sessions keep theirs.
func TestGC(t *testing.T) {
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, filepath.Join(t.TempDir(), "paddock.db"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	root := t.TempDir()
	c := &copies.Set{WorkspaceDir: filepath.Join(root, "workspaces"), CacheDir: filepath.Join(root, "caches")}
	svc := &Service{Store: st, Access: &access.Service{Store: st}, Copies: c, RetainFailed: time.Hour}
	mk := func(id string) string {
		_, _, err := st.CreateSession(ctx, store.NewSession{ID: id, Project: "default",
			Agent:     spec.Record{Project: "default", Name: "a-" + id, Spec: json.RawMessage(`{"name":"a"}`), Digest: "d"},
			CreatedBy: session.Sender{Kind: session.SenderOperator, ID: "ana"}, StartKind: session.KindStart, StartPayload: json.RawMessage(`{}`)})
		require.NoError(t, err)
		dir := filepath.Join(c.WorkspaceDir, id)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("12345"), 0o644))
		require.NoError(t, os.MkdirAll(filepath.Join(c.CacheDir, id), 0o755))
		require.NoError(t, st.SetWorkspace(ctx, id, "", dir, "base"))
		return dir
	}
	live, stopped, failed := mk("live"), mk("stopped"), mk("failed")
	require.NoError(t, st.StopSession(ctx, "stopped", session.StopPayload{}))
	require.NoError(t, st.FailSession(ctx, "failed", "boom"))
	orphan := filepath.Join(c.WorkspaceDir, "orphan")
	require.NoError(t, os.MkdirAll(orphan, 0o755))

	out, err := svc.Review().GC(ctx, identity.Principal{User: "root", Admin: true}, time.Now())
	require.NoError(t, err)
	got := map[string]string{}
	for _, x := range out {
		got[x.SessionID] = x.Reason
	}
	require.Equal(t, map[string]string{"stopped": "stopped", "orphan": "no such session (a leftover)"}, got)
	require.NoDirExists(t, stopped)
	require.NoDirExists(t, filepath.Join(c.CacheDir, "stopped"))
	require.NoDirExists(t, orphan)
	require.DirExists(t, failed, "a failed session's copy is kept for the retention")
	require.DirExists(t, live)

	out, err = svc.Review().GC(ctx, identity.Principal{User: "root", Admin: true}, time.Now().Add(2*time.Hour))
	require.NoError(t, err)
	require.Len(t, out, 1)
	require.Equal(t, "failed", out[0].SessionID)
	require.Equal(t, int64(5), out[0].Bytes)
	require.NoDirExists(t, failed)
	require.DirExists(t, live, "live sessions keep their copies")
}
