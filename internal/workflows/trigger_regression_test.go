package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/bound"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
)

// TestRegressionHeldDeliveryLostOnStop: a delivery routed into the live
// session (answered 202, routed "session") waits in the held lane; the
// session is stopped a second later, before the lane flushes. The
// delivery is never delivered, never canceled: it stays "held" forever.
func TestRegressionHeldDeliveryLostOnStop(t *testing.T) {
	f := setup(t)
	f.create(t, "s1", "replay/testdata/script.yaml", "")
	f.env.RegisterDelayedCallback(func() { f.deliver(t, "s1", "github.issue_comment.created", "d0") }, time.Minute)
	f.env.RegisterDelayedCallback(func() {
		f.send(t, "s1", session.KindStop, session.StopPayload{Reason: "done"})
	}, time.Minute+time.Second)
	f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s1"})
	require.NoError(t, f.env.GetWorkflowError())
	x, err := f.store.GetSession(context.Background(), "s1")
	require.NoError(t, err)
	require.Equal(t, session.StatusStopped, x.Status)
	cmds, err := f.store.ListCommands(context.Background(), "s1")
	require.NoError(t, err)
	for _, c := range cmds {
		require.NotEqual(t, session.CommandHeld, c.State, "command %s (sender %s) is left held in a stopped session", c.ID, c.Sender)
	}
}

// TestRegressionSweeperArchivesAParkedSession: a session parked on its budget
// (waiting for a person's extension) is archived by the sweeper as
// inactive; when the extension is granted, it works on while archived.
func TestRegressionSweeperArchivesAParkedSession(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	f.tweak = func(a *spec.Agent) { a.Session.ArchiveAfterInactive = spec.Duration(25 * time.Minute) }
	f.create(t, "s1", "replay/testdata/script.yaml", "")
	c, err := f.store.ClaimBatch(ctx, "s1")
	require.NoError(t, err)
	require.NoError(t, f.store.MarkStarted(ctx, "s1"))
	require.NoError(t, f.store.SettleCommands(ctx, ids(c), session.CommandAccepted, ""))
	_, err = f.acts.Budgets().Park(ctx, "s1", "", bound.AwaitingExtension, "budget: used 150 of 150 actions")
	require.NoError(t, err)
	f.acts.Now = func() time.Time { return time.Now().Add(time.Hour) }
	swept, err := f.acts.Lifecycle().Sweep(ctx)
	require.NoError(t, err)
	x, err := f.store.GetSession(ctx, "s1")
	require.NoError(t, err)
	t.Logf("swept %+v; archived %v", swept, x.ArchivedAt != nil)
	require.Nil(t, x.ArchivedAt, "a session parked waiting on a person is archived as inactive")
}

// TestRegressionHoldDoesNotDisarmTimers: Hold records the hold but does not
// wake the workflow, so the timer armed while it slept still fires: held
// before its idle release, the session is reaped; held once reaped, its
// lifetime (or a park's TTL) ends it while held.
func TestRegressionHoldDoesNotDisarmTimers(t *testing.T) {
	for _, c := range []struct {
		name   string
		holdAt time.Duration
	}{{"before the idle release", time.Minute}, {"after the idle release", 30 * time.Minute}} {
		t.Run(c.name, func(t *testing.T) {
			f := setup(t)
			ctx := context.Background()
			f.acts.Budget = bound.Limits{Actions: 100, Active: time.Hour, Lifetime: 2 * time.Hour}
			f.create(t, "s1", "replay/testdata/script.yaml", "")
			ana := session.Sender{Kind: session.SenderOperator, ID: "ana"}
			f.env.RegisterDelayedCallback(func() {
				// What Service.Sessions().Hold does: the row, no signal.
				require.NoError(t, f.store.SetHold(ctx, "s1", &session.Hold{By: ana, Reason: "inspect", At: time.Now()}))
			}, c.holdAt)
			var reapedWhileHeld bool
			var status session.Status
			f.env.RegisterDelayedCallback(func() {
				events, err := f.store.EventsByKey(ctx, "s1", "reap/")
				require.NoError(t, err)
				reapedWhileHeld = len(events) > 0 && c.holdAt < 15*time.Minute
				x, err := f.store.GetSession(ctx, "s1")
				require.NoError(t, err)
				status = x.Status
				if !x.Status.Terminal() {
					require.NoError(t, f.store.SetHold(ctx, "s1", nil))
					f.send(t, "s1", session.KindStop, session.StopPayload{Reason: "done"})
				}
			}, 150*time.Minute) // past the 2h lifetime, still held
			f.env.RegisterDelayedCallback(func() {}, 5*time.Hour)
			f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s1"})
			require.NoError(t, f.env.GetWorkflowError())
			x, err := f.store.GetSession(ctx, "s1")
			require.NoError(t, err)
			t.Logf("reaped while held %v; status at release %q; final %s (%s), still held %v", reapedWhileHeld, status, x.Status, x.StopReason, x.Held())
			require.False(t, reapedWhileHeld, "a held session was reaped")
			require.False(t, x.Held() && x.Status.Terminal(), "a held session was ended by a timer armed before the hold")
		})
	}
}
