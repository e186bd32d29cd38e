package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// TestRecoverStartsOnlyWhatIsLost: what a start does for the live
// sessions. One whose workflow Temporal lost (an external cluster's
// state gone) is started again and answers; one whose workflow runs is
// left alone, its history untouched: no idle session is woken.
func TestRecoverStartsOnlyWhatIsLost(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sessions")
	}
	ctx := context.Background()
	var ids []string
	for range 2 {
		x, err := api.Sessions().Create(ctx, wire.CreateRequest{Model: script(t, "empty.yaml"), Message: "hello"})
		require.NoError(t, err)
		waitStatus(t, x.ID, session.StatusAwaiting)
		ids = append(ids, x.ID)
	}
	lost, kept := ids[0], ids[1]
	tc := shared.Service.Temporal
	require.NoError(t, tc.TerminateWorkflow(ctx, session.WorkflowID(lost), "", "as a cluster that lost its state"))
	// The session's status is written by a local activity within a
	// workflow task; its history grows when that task completes. Wait
	// for the workflow to be at rest before counting.
	var before *workflowservice.DescribeWorkflowExecutionResponse
	waitFor(t, "the kept session's workflow at rest", func() (bool, error) {
		var err error
		before, err = tc.DescribeWorkflowExecution(ctx, session.WorkflowID(kept), "")
		return err == nil && before.GetPendingWorkflowTask() == nil && len(before.GetPendingActivities()) == 0, err
	})

	woken, err := shared.Service.Sessions().Recover(ctx)
	require.NoError(t, err)
	select {
	case <-woken:
	case <-time.After(2 * time.Minute):
		t.Fatal("recovery never finished")
	}
	waitFor(t, "the lost session's workflow started again", func() (bool, error) {
		d, err := tc.DescribeWorkflowExecution(ctx, session.WorkflowID(lost), "")
		return err == nil && d.GetWorkflowExecutionInfo().GetStatus() == enums.WORKFLOW_EXECUTION_STATUS_RUNNING, nil
	})
	after, err := tc.DescribeWorkflowExecution(ctx, session.WorkflowID(kept), "")
	require.NoError(t, err)
	require.Equal(t, before.GetWorkflowExecutionInfo().GetHistoryLength(), after.GetWorkflowExecutionInfo().GetHistoryLength(),
		"a running session's workflow is not woken")

	send(t, lost, session.KindMessage, session.MessagePayload{Message: "still there?"})
	waitFor(t, "the restarted session's answer", func() (bool, error) {
		turns, err := api.Sessions().Turns(ctx, lost)
		return len(turns) == 2 && turns[1].Status == session.TurnCompleted, err
	})
}
