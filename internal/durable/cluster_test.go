package durable_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/access"
	"github.com/paddock-dev/paddock/internal/copies"
	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/engine"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store/sqlstore"
	"github.com/paddock-dev/paddock/internal/tool"
	"github.com/paddock-dev/paddock/internal/wire"
)

// hooked runs a hook (once) just before SetWorkspace or Deliver: another
// node's work landing at that moment.
type hooked struct {
	*sqlstore.Store
	beforeSetWorkspace, beforeDeliver func()
}

func (h *hooked) SetWorkspace(ctx context.Context, id, node, workdir, base string) error {
	if f := h.beforeSetWorkspace; f != nil {
		h.beforeSetWorkspace = nil
		f()
	}
	return h.Store.SetWorkspace(ctx, id, node, workdir, base)
}

func (h *hooked) Deliver(ctx context.Context, id, base, next, state string, by session.Sender, note string) error {
	if f := h.beforeDeliver; f != nil {
		h.beforeDeliver = nil
		f()
	}
	return h.Store.Deliver(ctx, id, base, next, state, by, note)
}

type atk4 struct {
	*atk3
	actsB      *durable.Activities
	svcA, svcB *engine.Service
	hook       *hooked
	alive      map[string]bool
	s          session.Session
	d          session.Diff
}

// atk4Setup: session s homed on node a (alive), a.txt written and
// checkpointed, its diff handed out by node a.
func atk4Setup(t *testing.T) *atk4 {
	ctx := context.Background()
	e := &atk4{atk3: atk3Setup(t), alive: map[string]bool{"a": true}}
	e.acts.Copies.Node = "a"
	e.hook = &hooked{Store: e.st}
	e.actsB = &durable.Activities{Store: e.hook, Tools: tool.Builtin(), Now: e.acts.Now, ContentKey: e.acts.ContentKey,
		Copies: &copies.Set{Node: "b", WorkspaceDir: t.TempDir(), Alive: func(_ context.Context, node string) (bool, error) { return e.alive[node], nil }}}
	e.svcA = &engine.Service{Store: e.hook, Access: &access.Service{Store: e.hook}, Copies: e.acts.Copies, ContentKey: e.acts.ContentKey}
	e.svcB = &engine.Service{Store: e.st, Access: &access.Service{Store: e.st}, Copies: e.actsB.Copies, ContentKey: e.acts.ContentKey}
	s := e.session(t, "s-fork", "default")
	require.NoError(t, e.st.SetWorkspace(ctx, s.ID, "a", s.Workdir, s.BaseCommit))
	s.Node = "a"
	require.NoError(t, os.WriteFile(filepath.Join(s.Workdir, "a.txt"), []byte("reviewed\n"), 0o644))
	copies.RecordStep(ctx, e.st, e.acts.ContentKey, s, "call-1", "")
	d, _, err := e.svcA.Review().Diff(ctx, reviewerP, s.ID)
	require.NoError(t, err)
	require.Len(t, d.Files, 1)
	e.s, e.d = s, d
	return e
}

var reviewer = session.Sender{Kind: session.SenderOperator, ID: "root"}

// reviewerP is reviewer as the caller of a use case.
var reviewerP = identity.Principal{User: "root", Admin: true}

// TestTakeoverWaitsForALiveHolder: node a holds the copy and runs; an
// activity given to node b (a's queue was not polled within homeWait)
// does not take the copy over: it says where the copy is and leaves the
// store as it was, so an acceptance on node a meanwhile stands. Once a is
// gone, b makes the copy again with the accepted base, and nothing is
// offered twice.
func TestTakeoverWaitsForALiveHolder(t *testing.T) {
	ctx := context.Background()
	e := atk4Setup(t)
	sB, err := e.st.GetSession(ctx, e.s.ID)
	require.NoError(t, err)
	err = e.actsB.Lifecycle().EnsureCopy(ctx, &sB, spec.Agent{})
	node, moved := copies.IsElsewhere(err)
	require.True(t, moved, "%v", err)
	require.Equal(t, "a", node, "the work goes to the holder")
	x, err := e.st.GetSession(ctx, e.s.ID)
	require.NoError(t, err)
	require.Equal(t, "a", x.Node, "nothing moved")

	accepted, err := e.svcA.Review().Accept(ctx, reviewerP, e.s.ID, wire.AcceptRequest{Mode: session.AsUncommitted, Base: e.d.Base, Tree: e.d.Tree})
	require.NoError(t, err)
	require.NotEqual(t, e.d.Base, accepted.BaseCommit)

	e.alive["a"] = false // node a is gone
	x, err = e.st.GetSession(ctx, e.s.ID)
	require.NoError(t, err)
	require.NoError(t, e.actsB.Lifecycle().EnsureCopy(ctx, &x, spec.Agent{}))
	require.Equal(t, "b", x.Node)
	require.Equal(t, accepted.BaseCommit, x.BaseCommit, "the acceptance stands")
	d, _, err := e.svcB.Review().Diff(ctx, reviewerP, x.ID)
	require.NoError(t, err)
	require.Empty(t, d.Files, "the accepted change is not offered again")
}

// TestCheckpointOnlyFromTheHolder: a node that was thought gone, and
// whose copy another node took over, does not checkpoint its own copy
// over the new holder's history.
func TestCheckpointOnlyFromTheHolder(t *testing.T) {
	ctx := context.Background()
	e := atk4Setup(t)
	e.alive["a"] = false
	x, err := e.st.GetSession(ctx, e.s.ID)
	require.NoError(t, err)
	require.NoError(t, e.actsB.Lifecycle().EnsureCopy(ctx, &x, spec.Agent{}))
	before, err := e.st.Steps(ctx, x.ID)
	require.NoError(t, err)
	// Node a writes on in its stale copy and checkpoints.
	require.NoError(t, os.WriteFile(filepath.Join(e.s.Workdir, "late.txt"), []byte("late\n"), 0o644))
	copies.RecordStep(ctx, e.st, e.acts.ContentKey, e.s, "call-late", "")
	after, err := e.st.Steps(ctx, x.ID)
	require.NoError(t, err)
	require.Len(t, after, len(before), "no checkpoint from the node that no longer holds the copy")
}

// TestLegacySessionStaysOffAnotherNodesDirectory: a session recorded
// before nodes were named is this node's only when its directory is one
// of this node's. Another node on the same machine neither diffs nor runs
// in it: its diff finds no copy here, and its takeover makes a copy of
// its own and records itself.
func TestLegacySessionStaysOffAnotherNodesDirectory(t *testing.T) {
	ctx := context.Background()
	e := atk3Setup(t)
	e.acts.Copies.Node = "a"
	s := e.session(t, "s-legacy", "default") // node ''
	require.NoError(t, os.WriteFile(filepath.Join(s.Workdir, "a.txt"), []byte("x\n"), 0o644))
	actsB := &durable.Activities{Store: e.st, Tools: tool.Builtin(), Now: e.acts.Now, Copies: &copies.Set{Node: "b", WorkspaceDir: t.TempDir()}, ContentKey: e.acts.ContentKey}
	svcB := &engine.Service{Store: e.st, Access: &access.Service{Store: e.st}, Copies: actsB.Copies, ContentKey: e.acts.ContentKey}
	_, _, err := svcB.Review().Diff(ctx, reviewerP, s.ID)
	require.ErrorContains(t, err, "working copy is gone", "node b does not read node a's directory")
	x, err := e.st.GetSession(ctx, s.ID)
	require.NoError(t, err)
	require.NoError(t, actsB.Lifecycle().EnsureCopy(ctx, &x, spec.Agent{}))
	require.NotEqual(t, s.Workdir, x.Workdir, "node b works in a directory of its own")
	require.Equal(t, "b", x.Node)
}
