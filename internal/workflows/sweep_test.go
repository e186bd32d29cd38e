package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
)

// TestSweeperArchivesAndRepairs: every 10 minutes (durable timers,
// skipped time), the sweeper archives awaiting sessions inactive past
// their agent's archiveAfterInactive, unless they have work in flight,
// are held, or are bound to an open pull request (a held binding: they
// wait on the forge, and archiving would release the binding); storetest
// covers the repair of stale rows.
func TestSweeperArchivesAndRepairs(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	f.tweak = func(a *spec.Agent) { a.Session.ArchiveAfterInactive = spec.Duration(25 * time.Minute) }
	for _, id := range []string{"idle", "busy", "held", "bound"} {
		f.create(t, id, "replay/testdata/script.yaml", "")
		c, err := f.store.ClaimBatch(ctx, id)
		require.NoError(t, err)
		require.NoError(t, f.store.MarkStarted(ctx, id))
		require.NoError(t, f.store.SettleCommands(ctx, ids(c), session.CommandAccepted, ""))
	}
	_, _, err := f.store.AppendCommand(ctx, store.NewCommand{ID: "busy-m", SessionID: "busy", Kind: session.KindMessage, Sender: session.Sender{Kind: session.SenderOperator, ID: "t"}})
	require.NoError(t, err)
	require.NoError(t, f.store.SetHold(ctx, "held", &session.Hold{By: session.Sender{Kind: session.SenderOperator, ID: "ana"}, Reason: "look"}))
	_, err = f.store.Bind(ctx, session.Binding{SessionID: "bound", Project: "default", Kind: session.BindPullRequest, Connection: "forge", Repo: "team/app", Number: 7, URL: "https://git.example.com/team/app/pulls/7", Held: true})
	require.NoError(t, err)

	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(SweepWorkflow)
	Register(env, f.acts)
	f.acts.Now = env.Now // the sweeper's clock is the workflow's, skipped
	env.RegisterDelayedCallback(func() {
		s, err := f.store.GetSession(ctx, "idle")
		require.NoError(t, err)
		require.Nil(t, s.ArchivedAt, "inactive 20 minutes: kept")
	}, 21*time.Minute)
	env.RegisterDelayedCallback(env.CancelWorkflow, 41*time.Minute)
	env.ExecuteWorkflow(SweepWorkflow)
	for id, archived := range map[string]bool{"idle": true, "busy": false, "held": false, "bound": false} {
		s, err := f.store.GetSession(ctx, id)
		require.NoError(t, err)
		require.Equal(t, archived, s.ArchivedAt != nil, id)
	}
}
