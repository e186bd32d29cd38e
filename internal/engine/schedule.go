package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/paddock-dev/paddock/internal/spec"
)

// Triggerer delivers an event through a trigger (the Service).
type Triggerer interface {
	Trigger(ctx context.Context, project, name, event, key string, payload any) (TriggerResult, error)
}

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
		if err := workflow.ExecuteActivity(short(ctx, 5), act.Fire, trigger, key, next).Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Warn("scheduled tick not delivered", "trigger", trigger, "tick", key, "err", err)
		}
	}
	return workflow.NewContinueAsNewError(ctx, ScheduleWorkflow, trigger, expr)
}

// Fire delivers one scheduled tick through its trigger (event
// "schedule"); the tick's time keys it, so a retried tick lands once.
func (a *Activities) Fire(ctx context.Context, trigger, tick string, at time.Time) error {
	if a.Triggers == nil {
		return nonRetryable(errors.New("this worker delivers no triggers"))
	}
	project, name, ok := strings.Cut(trigger, "/")
	if !ok {
		// A schedule started before triggers belonged to projects: the
		// server restarts it under its project's name at startup.
		return nonRetryable(fmt.Errorf("trigger %q: a schedule without its project; it is replaced at the next server start", trigger))
	}
	_, err := a.Triggers.Trigger(ctx, project, name, "schedule", "tick-"+tick, map[string]any{"scheduledAt": at.UTC().Format(time.RFC3339)})
	return err
}

// scheduleID is the workflow ID of a trigger's (PROJECT/NAME) schedule.
func scheduleID(trigger string) string { return "schedule/" + trigger }

// reconcileSchedules makes the running schedules those the agents
// declare: a trigger's schedule runs as one cron workflow, restarted when
// its cron changes; schedules of triggers no longer declared (in before)
// are stopped.
func (s *Service) reconcileSchedules(ctx context.Context, before, after []spec.Agent) error {
	want := map[string]string{}
	for _, a := range after {
		for _, t := range a.Triggers {
			if t.Schedule != "" {
				want[TriggerRef(a.Project, t.Name)] = t.Schedule
			}
		}
	}
	var errs []error
	for _, a := range before {
		for _, t := range a.Triggers {
			if ref := TriggerRef(a.Project, t.Name); t.Schedule != "" && want[ref] == "" {
				errs = append(errs, s.stopSchedule(ctx, ref))
			}
		}
	}
	if before == nil {
		// At startup: schedules named before triggers belonged to a
		// project (schedule/NAME) give way to schedule/PROJECT/NAME.
		for _, a := range after {
			for _, t := range a.Triggers {
				if t.Schedule != "" {
					errs = append(errs, s.stopSchedule(ctx, t.Name))
				}
			}
		}
	}
	for name, expr := range want {
		errs = append(errs, s.startSchedule(ctx, name, expr))
	}
	return errors.Join(errs...)
}

func cronMemo(expr string) string {
	sum := sha256.Sum256([]byte(expr))
	return hex.EncodeToString(sum[:8])
}

func (s *Service) startSchedule(ctx context.Context, name, expr string) error {
	id := scheduleID(name)
	if d, err := s.Temporal.DescribeWorkflowExecution(ctx, id, ""); err == nil && d.WorkflowExecutionInfo.GetStatus() == 1 /* running */ {
		if f := d.WorkflowExecutionInfo.GetMemo().GetFields()["cron"]; f != nil {
			var have string
			if json.Unmarshal(f.GetData(), &have) == nil && have == cronMemo(expr) {
				return nil
			}
		}
		if err := s.stopSchedule(ctx, name); err != nil {
			return err
		}
	}
	_, err := s.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: TaskQueue,
		Memo: map[string]any{"cron": cronMemo(expr)}}, ScheduleWorkflow, name, expr)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("start the schedule of trigger %s: %w", name, err)
	}
	return nil
}

func (s *Service) stopSchedule(ctx context.Context, name string) error {
	err := s.Temporal.TerminateWorkflow(ctx, scheduleID(name), "", "the trigger's schedule changed or was removed")
	var nf *serviceerror.NotFound
	if err != nil && !errors.As(err, &nf) {
		return fmt.Errorf("stop the schedule of trigger %s: %w", name, err)
	}
	return nil
}
