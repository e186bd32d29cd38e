package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/workflows"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

// reconcileSchedules makes the running schedules those the agents
// declare: a trigger's schedule runs as one cron workflow, restarted when
// its cron changes; schedules of triggers no longer declared (in before)
// are stopped.
func (s *Service) reconcileSchedules(ctx context.Context, before, after []spec.Agent) error {
	want := map[string]string{}
	for _, a := range after {
		for _, t := range a.Triggers {
			if t.Schedule != "" {
				want[durable.TriggerRef(a.Project, t.Name)] = t.Schedule
			}
		}
	}
	var errs []error
	for _, a := range before {
		for _, t := range a.Triggers {
			if ref := durable.TriggerRef(a.Project, t.Name); t.Schedule != "" && want[ref] == "" {
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

func (s *Service) startSchedule(ctx context.Context, name, expr string) error {
	id := durable.ScheduleID(name)
	if d, err := s.Temporal.DescribeWorkflowExecution(ctx, id, ""); err == nil && d.WorkflowExecutionInfo.GetStatus() == 1 /* running */ {
		if f := d.WorkflowExecutionInfo.GetMemo().GetFields()["cron"]; f != nil {
			var have string
			if json.Unmarshal(f.GetData(), &have) == nil && have == durable.CronMemo(expr) {
				return nil
			}
		}
		if err := s.stopSchedule(ctx, name); err != nil {
			return err
		}
	}
	_, err := s.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: workflows.TaskQueue,
		Memo: map[string]any{"cron": durable.CronMemo(expr)}}, workflows.ScheduleWorkflow, name, expr)
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
	err := s.Temporal.TerminateWorkflow(ctx, durable.ScheduleID(name), "", "the trigger's schedule changed or was removed")
	var nf *serviceerror.NotFound
	if err != nil && !errors.As(err, &nf) {
		return fmt.Errorf("stop the schedule of trigger %s: %w", name, err)
	}
	return nil
}
