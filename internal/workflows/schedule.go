package workflows

import (
	"fmt"
	"time"

	"github.com/robfig/cron"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// ScheduleWorkflow fires a trigger (PROJECT/NAME) on its cron schedule: it sleeps on a
// durable timer until each next tick and delivers it, so a tick falls due
// whether or not a server was up meanwhile (a tick missed while no worker
// ran is delivered once one does); it continues as new every 100 ticks.
func ScheduleWorkflow(ctx workflow.Context, trigger, expr string) error {
	sched, err := cron.ParseStandard(expr)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("trigger %s: schedule %q: %v", trigger, expr, err), "paddock", nil)
	}
	for range 100 {
		now := workflow.Now(ctx)
		next := sched.Next(now)
		if err := workflow.Sleep(ctx, next.Sub(now)); err != nil {
			return err
		}
		key := next.UTC().Format(time.RFC3339)
		if err := workflow.ExecuteActivity(short(ctx, 5), life.Fire, trigger, key, next).Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Warn("scheduled tick not delivered", "trigger", trigger, "tick", key, "err", err)
		}
	}
	return workflow.NewContinueAsNewError(ctx, ScheduleWorkflow, trigger, expr)
}
