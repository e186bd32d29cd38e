// Package inflight holds the tool calls running in this process, by run,
// so that a second attempt at a call Temporal gave up on (its heartbeat
// lapsed on a busy machine) waits for the first instead of calling its
// work interrupted.
package inflight

import (
	"context"
	"errors"
	"sync"

	"go.temporal.io/api/serviceerror"
)

// Runs are the tool calls running in this process, by run (the ID
// recorded with the call's calling event). When a busy machine delays a
// call's heartbeats past HeartbeatTimeout, Temporal gives up on that
// attempt and starts another while the first still runs: the second waits
// for the first here and reports what it did, instead of calling finished
// work "interrupted by a restart". Only a run this process does not hold
// (its process died) is interrupted.
type Runs struct {
	mu   sync.Mutex
	runs map[string]*flight
}

type flight struct {
	done   chan struct{}
	cancel context.CancelCauseFunc
}

// Start registers run and returns the context the call runs under: it
// ends when the activity is canceled (an interrupt, a stop, the worker
// stopping), but not when Temporal merely gave up on the attempt (its
// Heartbeat lapsed), so the work goes on and a later attempt collects it.
// end unregisters the run once its outcome is recorded.
func (f *Runs) Start(ctx context.Context, run string) (context.Context, func()) {
	rctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	fl := &flight{done: make(chan struct{}), cancel: cancel}
	f.mu.Lock()
	if f.runs == nil {
		f.runs = map[string]*flight{}
	}
	f.runs[run] = fl
	f.mu.Unlock()
	unhook := context.AfterFunc(ctx, func() {
		if cause := context.Cause(ctx); !lapsed(cause) {
			cancel(cause)
		}
	})
	return rctx, func() {
		unhook()
		f.mu.Lock()
		delete(f.runs, run)
		f.mu.Unlock()
		close(fl.done)
		cancel(context.Canceled)
	}
}

// Await waits for run when this process holds it, and says whether it
// did. A wait canceled by an interrupt or stop cancels the run too (and
// still waits for it to end, so its outcome is recorded).
func (f *Runs) Await(ctx context.Context, run string) bool {
	f.mu.Lock()
	fl := f.runs[run]
	f.mu.Unlock()
	if fl == nil {
		return false
	}
	select {
	case <-fl.done:
	case <-ctx.Done():
		if cause := context.Cause(ctx); !lapsed(cause) {
			fl.cancel(cause)
		}
		<-fl.done
	}
	return true
}

// lapsed says an activity's context ended because the server no longer
// knows the attempt (its heartbeat or time limit lapsed): not a cancel.
func lapsed(cause error) bool {
	var nf *serviceerror.NotFound
	return errors.As(cause, &nf)
}
