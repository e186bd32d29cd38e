package workflows

import (
	"github.com/paddock-dev/paddock/internal/durable"
	"go.temporal.io/sdk/workflow"
)

// SweepWorkflowID is the one sweeper's workflow ID.
const SweepWorkflowID = "sweeper"

// SweepWorkflow runs the sweeper every SweepEvery on a durable timer,
// continuing as new every 100 sweeps.
func SweepWorkflow(ctx workflow.Context) error {
	for range 100 {
		if err := workflow.Sleep(ctx, durable.SweepEvery); err != nil {
			return err
		}
		var res durable.Swept
		if err := workflow.ExecuteActivity(short(ctx, 3), life.Sweep).Get(ctx, &res); err != nil {
			workflow.GetLogger(ctx).Warn("sweep failed", "err", err)
		} else if res.Unpublished != "" {
			workflow.GetLogger(ctx).Warn("audit checkpoint not published everywhere", "err", res.Unpublished)
		}
	}
	return workflow.NewContinueAsNewError(ctx, SweepWorkflow)
}
