package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/workflows"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

// wakeAtOnce bounds the sessions Recover wakes at a time.
const wakeAtOnce = 4

// Recover picks up, after a start, what the engine may not know of,
// without holding the start up: it claims copies recorded before nodes
// were named and starts the sweeper and the schedules; then, while the
// node serves (woken is closed once done, or once ctx ended), wakeAtOnce
// at a time, it wakes the live sessions holding a command pending,
// dispatching or held (a crash between recording it and waking the
// session), and starts the workflow of any other live session whose
// workflow is not running (an external cluster that lost it), which it
// asks Temporal without waking the others: an idle session's workflow,
// its timers and its retries are durable there.
func (s Sessions) Recover(ctx context.Context) (woken <-chan struct{}, err error) {
	list, err := sessionsIn(ctx, s.Store, true, session.StatusQueued, session.StatusRunning, session.StatusAwaiting)
	if err != nil {
		return nil, err
	}
	for _, x := range list {
		// A copy recorded before nodes were named, in this node's
		// directories: this node's from now on, so work is routed here.
		if x.Node == "" && x.Workdir != "" && s.Copies != nil && s.Copies.Node != "" && s.Copies.Mine(x) {
			if err := s.Store.SetWorkspace(ctx, x.ID, s.Copies.Node, x.Workdir, x.BaseCommit); err != nil {
				return nil, err
			}
		}
	}
	unfinished, err := s.Store.Unfinished(ctx)
	if err != nil {
		return nil, err
	}
	// The sweeper runs (one per cluster).
	_, err = s.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.SweepWorkflowID, TaskQueue: workflows.TaskQueue}, workflows.SweepWorkflow)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) {
		return nil, fmt.Errorf("start the sweeper: %w", err)
	}
	// Every declared schedule runs (one a lost cluster forgot restarts).
	recs, err := s.Store.ListAgents(ctx, "")
	if err != nil {
		return nil, err
	}
	var all []spec.Agent
	for _, a := range recs {
		var sp spec.Agent
		if json.Unmarshal(a.Spec, &sp) == nil {
			all = append(all, sp)
		}
	}
	if err := s.reconcileSchedules(ctx, nil, all); err != nil {
		return nil, err
	}
	first := map[string]bool{}
	for _, id := range unfinished {
		first[id] = true
	}
	var rest []string
	for _, x := range list {
		if !first[x.ID] {
			rest = append(rest, x.ID)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.wake(ctx, unfinished, true)
		s.wake(ctx, rest, false)
	}()
	return done, nil
}

// wake wakes the sessions ids (always, or only those whose workflow is
// not running), wakeAtOnce at a time, until ctx ends; one that cannot be
// woken now is woken by its next command.
func (s Sessions) wake(ctx context.Context, ids []string, always bool) {
	next := make(chan string)
	var wg sync.WaitGroup
	for range wakeAtOnce {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range next {
				if !always && s.running(ctx, id) {
					continue
				}
				if waiting, err := s.awaitingStart(ctx, id); err != nil || waiting {
					continue // not started: its workflow starts when the start is approved
				}
				if err := s.notify(ctx, id, workflows.Notice{}); err != nil && ctx.Err() == nil && s.Logger != nil {
					s.Logger.Warn("recovery: session not woken; its next command wakes it", "session", id, "err", err)
				}
			}
		}()
	}
send:
	for _, id := range ids {
		select {
		case next <- id:
		case <-ctx.Done():
			break send
		}
	}
	close(next)
	wg.Wait()
}

// running says session id's workflow runs, as Temporal says (an error
// other than its absence counts as running: nothing is started twice).
func (s Sessions) running(ctx context.Context, id string) bool {
	d, err := s.Temporal.DescribeWorkflowExecution(ctx, session.WorkflowID(id), "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return false
	}
	return err != nil || d.GetWorkflowExecutionInfo().GetStatus() == enums.WORKFLOW_EXECUTION_STATUS_RUNNING
}
