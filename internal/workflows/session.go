// Package workflows is the durable session's Temporal workflows: the
// SessionWorkflow drains a session's command queue in order and runs its
// turns; ScheduleWorkflow fires a trigger on its cron schedule;
// SweepWorkflow runs the sweeper; HandoverWorkflow hands copy work to the
// node holding the copy. Workflow code is deterministic (workflowcheck
// holds it so in CI): it reads and writes the world only through the
// activities of package durable. The worker registers both.
package workflows

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/paddock-dev/paddock/internal/bound"
	"github.com/paddock-dev/paddock/internal/copies"
	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/shellcheck"
)

// TaskQueue is the task queue session workflows and activities run on.
const TaskQueue = "paddock-sessions"

// SignalCommand wakes the workflow: a command row was recorded.
const SignalCommand = "command"

// SignalApproval wakes a call waiting for approval: its approval was decided.
const SignalApproval = "approval"

// SignalChild wakes a delegate call waiting for the session it
// delegated (the payload: that session's ID), whose turn settled or which
// ended.
const SignalChild = "child"

// childRecheck is how long a delegate call waits for its session's
// signal before it looks anyway (a signal lost to a crash).
const childRecheck = 2 * time.Minute

// heldRecheck is how often a held session's workflow claims again: its
// release is recorded, then signaled, and a crash between the two would
// otherwise leave it frozen until its next command (a hold is rare, so
// the timer costs next to nothing).
const heldRecheck = time.Hour

// heldRecheckChange versions the recheck (histories before it await the
// signal alone).
const heldRecheckChange = "held-recheck"

// Notice is the payload of SignalCommand. The command itself is read from
// the store; the notice only says which, so an interrupt or stop can abort
// the turn in flight at once.
type Notice struct {
	CommandID string              `json:"commandId"`
	Kind      session.CommandKind `json:"kind"`
}

// Input starts a SessionWorkflow.
type Input struct {
	SessionID   string `json:"sessionId"`
	Provisioned bool   `json:"provisioned"`
	Reaped      bool   `json:"reaped,omitempty"`
}

// The activities as the workflow names them (Temporal knows each by its
// method's name).
var (
	life    durable.Lifecycle
	turns   durable.Turns
	budgets durable.Budgets
)

// SessionWorkflow is one session's durable dispatch loop.
func SessionWorkflow(ctx workflow.Context, in Input) error {
	w := &run{in: in, decided: map[string]bool{}, returned: map[string]bool{}, cut: map[string]bool{}, reaped: in.Reaped}
	sig := workflow.GetSignalChannel(ctx, SignalCommand)
	approvals := workflow.GetSignalChannel(ctx, SignalApproval)
	children := workflow.GetSignalChannel(ctx, SignalChild)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var id string
			approvals.Receive(ctx, &id)
			w.decided[id] = true
		}
	})
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var id string
			children.Receive(ctx, &id)
			w.returned[id] = true
		}
	})
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var n Notice
			sig.Receive(ctx, &n)
			if n.Kind == durable.NoticeDelivery {
				w.hold(ctx, 1)
				continue
			}
			w.wake = true
			if n.Kind == session.KindStop && w.stop == "" {
				w.stop = n.CommandID
			}
			if (n.Kind == session.KindInterrupt || n.Kind == session.KindStop) && w.cancelTurn != nil {
				w.cancelTurn()
				w.cut[n.CommandID] = true
			}
		}
	})
	workflow.Go(ctx, w.lane)
	if !in.Provisioned {
		if err := w.provision(ctx); err != nil {
			return w.fail(ctx, "provisioning failed: "+reason(err))
		}
	}
	for {
		w.wake = false
		var claim durable.Claim
		if err := w.store(ctx, life.Claim, in.SessionID).Get(ctx, &claim); err != nil {
			return err
		}
		w.home = claim.Home
		if claim.Terminal {
			return nil
		}
		if claim.Frozen {
			// (A release signaled while Claim ran has set wake already.)
			// A release whose signal a crash lost is found by claiming
			// again after heldRecheck.
			released := func() bool { return w.wake }
			var err error
			if workflow.GetVersion(ctx, heldRecheckChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
				err = workflow.Await(ctx, released) // a history from before the recheck
			} else {
				_, err = workflow.AwaitWithTimeout(ctx, heldRecheck, released)
			}
			if err != nil {
				return err
			}
			continue
		}
		if claim.Held > 0 && w.held == 0 {
			w.hold(ctx, claim.Held) // deliveries a restart or continue-as-new left held
		}
		if len(claim.Commands) == 0 {
			if workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
				return workflow.NewContinueAsNewError(ctx, SessionWorkflow, Input{SessionID: in.SessionID, Provisioned: true, Reaped: w.reaped})
			}
			done, err := w.sleep(ctx, claim)
			if err != nil || done {
				return err
			}
			continue
		}
		if w.reaped {
			if err := w.onCopy(short(ctx, 0), life.Rehydrate, in.SessionID).Get(ctx, nil); err != nil {
				return w.fail(ctx, "rehydration failed: "+reason(err))
			}
			w.reaped = false
		}
		done, err := w.dispatch(ctx, claim.Commands)
		if err != nil || done {
			return err
		}
	}
}

// copyHome names the change that provisions a session on the node its
// copy is to be made on (CopyHome: a delegated session's is its
// delegating session's, whose copy it forks). Histories recorded before
// the change provisioned on any node, and replay so.
const copyHome = "provision-on-copy-home"

// provision makes the session's copy and environment (Provision), on
// the node the copy is to be made on when it has one.
func (w *run) provision(ctx workflow.Context) error {
	if workflow.GetVersion(ctx, copyHome, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return workflow.ExecuteActivity(provisioning(ctx), life.Provision, w.in.SessionID).Get(ctx, nil)
	}
	if err := w.store(ctx, life.CopyHome, w.in.SessionID).Get(ctx, &w.home); err != nil {
		return err
	}
	return w.onCopy(provisioning(ctx), life.Provision, w.in.SessionID).Get(ctx, nil)
}

// sleep waits, holding no process, until a command arrives or the first
// of the session's timers fires: its sandbox's idle release, its hard
// expiry, a park's expiry or re-probe. done says the session ended.
func (w *run) sleep(ctx workflow.Context, claim durable.Claim) (bool, error) {
	now := workflow.Now(ctx)
	type timer struct {
		at   time.Time
		fire func() (bool, error)
	}
	var timers []timer
	if !w.reaped && claim.Idle > 0 {
		timers = append(timers, timer{now.Add(claim.Idle), func() (bool, error) {
			// Idle: release the sandbox's resources, keep the workspace.
			w.reaped = true
			return false, workflow.ExecuteActivity(short(ctx, 0), life.Reap, w.in.SessionID).Get(ctx, nil)
		}})
	}
	if !claim.ExpiresAt.IsZero() {
		timers = append(timers, timer{claim.ExpiresAt, func() (bool, error) {
			return true, workflow.ExecuteActivity(short(ctx, 0), life.Expire, w.in.SessionID).Get(ctx, nil)
		}})
	}
	for _, p := range claim.Parks {
		if p.ExpiresAt != nil {
			timers = append(timers, timer{*p.ExpiresAt, func() (bool, error) {
				var ended bool
				return ended, workflow.ExecuteActivity(short(ctx, 0), budgets.ExpirePark, p.ID).Get(ctx, &ended)
			}})
		}
		if p.Reprobe > 0 {
			timers = append(timers, timer{now.Add(p.Reprobe), func() (bool, error) {
				return false, workflow.ExecuteActivity(short(ctx, 0), budgets.ProbePark, p.ID).Get(ctx, nil)
			}})
		}
	}
	if len(timers) == 0 {
		return false, workflow.Await(ctx, func() bool { return w.wake })
	}
	first := timers[0]
	for _, t := range timers[1:] {
		if t.at.Before(first.at) {
			first = t
		}
	}
	woke, err := workflow.AwaitWithTimeout(ctx, max(first.at.Sub(now), 0), func() bool { return w.wake })
	if err != nil || woke {
		return false, err
	}
	return first.fire()
}

// hold notes n more deliveries waiting in the held lane.
func (w *run) hold(ctx workflow.Context, n int) {
	now := workflow.Now(ctx)
	if w.held == 0 {
		w.oldest = now
	}
	w.newest = now
	w.held += n
}

// lane flushes the held trigger deliveries as one command once
// bound.DebounceOldest has passed since the oldest, or
// bound.DebounceNewest since the newest, whichever comes first; unless
// every one of them is a CI verdict, the turn in flight is interrupted so
// the steering lands at once (a CI verdict waits until the session is idle).
func (w *run) lane(ctx workflow.Context) {
	for {
		if err := workflow.Await(ctx, func() bool { return w.held > 0 }); err != nil {
			return
		}
		for {
			n := w.held
			wait := bound.FlushAt(w.oldest, w.newest).Sub(workflow.Now(ctx))
			moved, err := workflow.AwaitWithTimeout(ctx, max(wait, 0), func() bool { return w.held != n })
			if err != nil {
				return
			}
			if !moved {
				break
			}
		}
		w.held = 0
		var f durable.Flush
		if err := workflow.ExecuteActivity(short(ctx, 0), life.FlushDeliveries, w.in.SessionID).Get(ctx, &f); err != nil {
			return
		}
		if f.Delivered == "" {
			continue
		}
		if f.Interrupt && w.cancelTurn != nil {
			w.cancelTurn()
		}
		w.wake = true
	}
}

type run struct {
	in Input
	// held counts the deliveries waiting in the held lane, the oldest and
	// newest arrived at those times.
	held           int
	oldest, newest time.Time
	// ended is set when the turn ended the session (its budget ran out
	// and could not be extended): why, and the final summary.
	ended, summary string
	wake           bool
	cancelTurn     workflow.CancelFunc
	// stop is the first stop command signaled: a turn it interrupts (or
	// that opens after it) ends the session at once, so nobody sees it
	// idle in between and nothing claimed with it runs.
	stop string
	// cut are the interrupts and stops that canceled a turn in flight.
	cut      map[string]bool
	decided  map[string]bool // approvals whose decision was signaled
	returned map[string]bool // delegated sessions that signaled
	reaped   bool            // the idle sandbox was released
	// home is the node holding the working copy, as last heard.
	home string
	// local says the store's steps of a turn run as local activities
	// (storeSteps); asked once per run.
	local *bool
}

// storeSteps names the change that made a turn's store-only steps
// (claim, open, budget check, settle) local activities: run by the worker
// running the workflow, within its task, recorded as markers, where each
// was an activity of its own, a round trip through the task queue and a
// workflow task more. Histories recorded before replay as they ran.
const storeSteps = "store-steps-local"

// storeStepsFor is how long a store step is retried before the workflow
// gives up on it: a store down for longer than a day ends the run.
const storeStepsFor = 24 * time.Hour

// store runs a store-only, idempotent activity: locally once the run
// records the change, else as recorded histories did.
func (w *run) store(ctx workflow.Context, activity any, args ...any) workflow.Future {
	if w.local == nil {
		local := workflow.GetVersion(ctx, storeSteps, workflow.DefaultVersion, 1) == 1
		w.local = &local
	}
	if !*w.local {
		return workflow.ExecuteActivity(short(ctx, 0), activity, args...)
	}
	// By its registered name: the SDK would call a value receiver's
	// method as given, on the zero value the workflow names it by.
	// Each attempt has a minute; attempts go on as the activities'
	// did (without the whole's bound the SDK would take the attempt's).
	return workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    time.Minute,
		ScheduleToCloseTimeout: storeStepsFor,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, MaximumInterval: 10 * time.Second},
	}), activityName(activity), args...)
}

// activityName is the name Temporal registered method activity under
// (its method's name).
func activityName(activity any) string {
	name := runtime.FuncForPC(reflect.ValueOf(activity).Pointer()).Name()
	return strings.TrimSuffix(name[strings.LastIndex(name, ".")+1:], "-fm")
}

// homeWait is how long an activity on the working copy waits for the
// node holding it to take it. A node that does not (it is gone, or
// swamped) is given up on: the activity goes to any node, which makes the
// copy again from its last checkpoint. Temporal never starts a task whose
// wait lapsed, so nothing runs twice.
const homeWait = 5 * time.Second

// onCopy runs an activity that uses the session's working copy on the
// node holding it (NodeQueue(home)), so the copy stays where it is. A
// node that does not take it within homeWait is given up on, and any node
// runs it; that node makes the copy again, unless the holder still runs
// (it was only slow, or home was out of date): then the activity goes to
// the node it names, for up to homeTries rounds.
func (w *run) onCopy(ctx workflow.Context, activity any, args ...any) workflow.Future {
	if w.home == "" {
		return workflow.ExecuteActivity(ctx, activity, args...)
	}
	f, set := workflow.NewFuture(ctx)
	workflow.Go(ctx, func(gctx workflow.Context) {
		home := w.home
		for try := 1; ; try++ {
			opts := workflow.GetActivityOptions(ctx)
			opts.TaskQueue, opts.ScheduleToStartTimeout = NodeQueue(home), homeWait
			there := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), activity, args...)
			var te *temporal.TimeoutError
			if err := there.Get(gctx, nil); !errors.As(err, &te) || te.TimeoutType() != enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START {
				w.home = home
				set.Chain(there)
				return
			}
			anywhere := workflow.ExecuteActivity(ctx, activity, args...)
			node, moved := copies.IsElsewhere(anywhere.Get(gctx, nil))
			if !moved || try == homeTries {
				w.home = ""
				set.Chain(anywhere)
				return
			}
			home = node
		}
	})
	return f
}

// homeTries bounds the rounds onCopy waits on a holder that runs but
// does not take the work (about five minutes).
const homeTries = 30

// short gives activity options for quick store work; attempts 0 retries
// until it succeeds (the store being briefly unavailable must not lose a
// session), otherwise at most that many attempts. Like every activity it
// heartbeats, so one lost with a crashed worker is retried in seconds.
func short(ctx workflow.Context, attempts int32) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    HeartbeatTimeout, // the worker heartbeats every activity
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, MaximumInterval: 10 * time.Second, MaximumAttempts: attempts},
	})
}

// provisioning gives the options of Provision, which runs an
// environment's setup script (up to its 6-hour maximum) and heartbeats.
func provisioning(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 7 * time.Hour,
		HeartbeatTimeout:    HeartbeatTimeout,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, MaximumInterval: 10 * time.Second, MaximumAttempts: 5},
	})
}

// long gives activity options for model steps and tools: they heartbeat,
// so a dead worker is noticed in seconds and an interrupt reaches them.
func long(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 15 * time.Minute,
		HeartbeatTimeout:    HeartbeatTimeout,
		WaitForCancellation: true,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second, MaximumAttempts: 5},
	})
}

// silent reports an activity that stopped reporting progress (its
// Heartbeat or time limit lapsed on every attempt): the turn is stale.
func silent(err error) bool {
	var te *temporal.TimeoutError
	return errors.As(err, &te)
}

func reason(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message()
	}
	return err.Error()
}

func (w *run) fail(ctx workflow.Context, why string) error {
	return workflow.ExecuteActivity(short(ctx, 0), life.Fail, w.in.SessionID, why).Get(ctx, nil)
}

func ids(cmds []session.Command) []string {
	out := make([]string, len(cmds))
	for i, c := range cmds {
		out[i] = c.ID
	}
	return out
}

// dispatch delivers one claimed batch; done means the session ended.
func (w *run) dispatch(ctx workflow.Context, batch []session.Command) (bool, error) {
	first := batch[0]
	settle := func(state session.CommandState, why string) error {
		return workflow.ExecuteActivity(short(ctx, 0), life.Settle, ids(batch), state, why).Get(ctx, nil)
	}
	switch first.Kind {
	case session.KindStart:
		return false, workflow.ExecuteActivity(short(ctx, 0), life.MarkStarted, w.in.SessionID, first.ID).Get(ctx, nil)
	case session.KindStartWithMessage, session.KindMessage:
		return w.turn(ctx, batch)
	case session.KindAnswer:
		var problem string
		if err := workflow.ExecuteActivity(short(ctx, 0), turns.Answer, first).Get(ctx, &problem); err != nil {
			return false, err
		}
		if problem != "" {
			return false, settle(session.CommandFailed, problem)
		}
		return w.turn(ctx, batch)
	case session.KindInterrupt:
		if w.cut[first.ID] {
			return false, settle(session.CommandAccepted, "")
		}
		return false, settle(session.CommandAccepted, "no turn was in flight")
	case session.KindStop:
		return true, w.onCopy(short(ctx, 0), life.Stop, first).Get(ctx, nil)
	}
	return false, settle(session.CommandFailed, fmt.Sprintf("command kind %s is not dispatched", first.Kind))
}

// turn runs one turn for the batch: model steps and tool calls until the
// model stops calling tools, asks a question, fails, or is interrupted.
func (w *run) turn(ctx workflow.Context, batch []session.Command) (bool, error) {
	turnID := "turn-" + batch[0].ID
	// The turn is cancelable from the moment it opens: an interrupt that
	// lands while the turn is being recorded still aborts it.
	tctx, cancel := workflow.WithCancel(ctx)
	w.cancelTurn = cancel
	if w.stop != "" {
		cancel() // stopped while the turn was being claimed: it never runs
	}
	if err := w.store(ctx, turns.OpenTurn, turnID, batch).Get(ctx, nil); err != nil {
		w.cancelTurn = nil
		return false, err
	}
	status, scope, why := w.steps(tctx, turnID)
	w.cancelTurn = nil
	interrupted := tctx.Err() != nil
	cancel()
	if interrupted {
		status, scope, why = session.TurnFailed, session.ScopeTurn, "interrupted"
		if err := workflow.ExecuteActivity(short(ctx, 0), life.Interrupted, w.in.SessionID, turnID, "the turn was interrupted").Get(ctx, nil); err != nil {
			return false, err
		}
	}
	if interrupted && w.stop != "" {
		// Stopped first, so that nobody sees the session idle in between
		// (and nothing queued behind the turn runs).
		var cmd session.Command
		if err := workflow.ExecuteActivity(short(ctx, 0), life.GetCommand, w.stop).Get(ctx, &cmd); err != nil {
			return false, err
		}
		return true, w.onCopy(short(ctx, 0), turns.StopTurn, cmd, turnID, status, scope, why).Get(ctx, nil)
	}
	if w.ended != "" {
		// Stopped first, so that nobody sees the session idle in between.
		if err := workflow.ExecuteActivity(short(ctx, 0), budgets.EndForBudget, w.in.SessionID, w.ended, w.summary).Get(ctx, nil); err != nil {
			return false, err
		}
	}
	return w.ended != "", w.store(ctx, turns.SettleTurn, turnID, status, scope, why).Get(ctx, nil)
}

func (w *run) steps(ctx workflow.Context, turnID string) (session.TurnStatus, session.FailureScope, string) {
	for step := 0; ; step++ {
		// The budget is evaluated before each model call.
		var b durable.BudgetCheck
		if err := w.store(ctx, budgets.CheckBudget, w.in.SessionID).Get(ctx, &b); err != nil {
			return session.TurnFailed, session.ScopeTurn, "budget check failed: " + reason(err)
		}
		if o := b.Overrun; o != nil {
			return w.overrun(ctx, turnID, *o, b.Summary)
		}
		var resp provider.Response
		if err := w.onCopy(long(ctx), turns.ModelStep, w.in.SessionID, turnID, step).Get(ctx, &resp); err != nil {
			if r := parkReason(err); r != "" {
				return w.park(ctx, turnID, r, "model call failed: "+reason(err))
			}
			var app *temporal.ApplicationError
			if errors.As(err, &app) && app.Type() == durable.StaleErrorType {
				return session.TurnStale, "", reason(err)
			}
			if silent(err) {
				return session.TurnStale, "", "the model step made no progress: its heartbeats and retries ran out"
			}
			return session.TurnFailed, session.ScopeTurn, "model call failed: " + reason(err)
		}
		if len(resp.ToolCalls) == 0 {
			return session.TurnCompleted, "", ""
		}
		asked := false
		var delegated []pending
		for _, call := range resp.ToolCalls {
			out, stop, err := w.toolCall(ctx, turnID, call)
			if err != nil {
				if silent(err) {
					return session.TurnStale, "", "the tool call " + call.Name + " made no progress: its heartbeats and retries ran out"
				}
				return session.TurnFailed, session.ScopeTurn, "tool call failed: " + reason(err)
			}
			if stop != "" {
				return session.TurnFailed, session.ScopeTurn, stop
			}
			asked = asked || out.Question
			if out.Child != "" {
				delegated = append(delegated, pending{call, out})
			}
		}
		// The step's delegations run at once; the turn goes on when each
		// has come back.
		for _, d := range delegated {
			if err := w.collect(ctx, turnID, d); err != nil {
				if silent(err) {
					return session.TurnStale, "", "collecting delegated session " + d.out.Child + " made no progress: its heartbeats and retries ran out"
				}
				return session.TurnFailed, session.ScopeTurn, "delegation failed: " + reason(err)
			}
		}
		if asked {
			return session.TurnWaitingForInput, "", ""
		}
	}
}

// pending is a delegate call whose session works.
type pending struct {
	call provider.ToolCall
	out  durable.ToolOutcome
}

// collect waits until the session a delegate call started is done, and
// collects it (Collect): its signal wakes the wait, and the wait looks
// anyway every childRecheck. An interrupt ends the wait.
func (w *run) collect(ctx workflow.Context, turnID string, d pending) error {
	by := session.Attribution{}
	if d.out.By != nil {
		by = *d.out.By
	}
	for {
		delete(w.returned, d.out.Child)
		var done bool
		if err := w.onCopy(long(ctx), turns.Collect, w.in.SessionID, turnID, d.call, d.out.Child, by).Get(ctx, &done); err != nil || done {
			return err
		}
		if _, err := workflow.AwaitWithTimeout(ctx, childRecheck, func() bool { return w.returned[d.out.Child] }); err != nil {
			return err
		}
	}
}

// park ends the turn turn-scoped and parks the session for r: a held
// command resumes the work when the park resolves.
func (w *run) park(ctx workflow.Context, turnID string, r bound.Reason, why string) (session.TurnStatus, session.FailureScope, string) {
	var p durable.ParkResult
	if err := workflow.ExecuteActivity(short(ctx, 0), budgets.Park, w.in.SessionID, turnID, r, why).Get(ctx, &p); err != nil {
		return session.TurnFailed, session.ScopeTurn, "park failed: " + reason(err)
	}
	return session.TurnFailed, session.ScopeTurn, why + "; parked " + string(r) + ", needs " + p.Park.Needs
}

// parkReason is the park an activity's error asks for, "" for none.
func parkReason(err error) bound.Reason {
	var app *temporal.ApplicationError
	if errors.As(err, &app) && strings.HasPrefix(app.Type(), durable.ParkErrorType) {
		return bound.Reason(strings.TrimPrefix(app.Type(), durable.ParkErrorType))
	}
	return ""
}

// overrun ends a turn whose session spent a budget: where a person can
// lift it, the session parks (the turn fails turn-scoped, a held command
// resumes the work once they do); otherwise the model writes a final
// summary without tools and the session stops cleanly.
func (w *run) overrun(ctx workflow.Context, turnID string, o bound.Overrun, summary string) (session.TurnStatus, session.FailureScope, string) {
	why := "budget: the session " + o.Message + " (" + summary + ")"
	if o.Park != "" {
		return w.park(ctx, turnID, o.Park, why)
	}
	var text string
	if err := workflow.ExecuteActivity(long(ctx), budgets.FinalSummary, w.in.SessionID, turnID, o.Message).Get(ctx, &text); err != nil {
		text = ""
	}
	w.ended, w.summary = o.Message, text
	return session.TurnCompleted, "", ""
}

// toolCall takes one call through the gate: refused calls are rejected;
// "ask" waits for a human decision (or the TTL); allowed and approved calls
// run with their attribution. stop is set when a rejection ends the turn.
func (w *run) toolCall(ctx workflow.Context, turnID string, call provider.ToolCall) (out durable.ToolOutcome, stop string, err error) {
	var g durable.GateResult
	if err := workflow.ExecuteActivity(short(ctx, 0), turns.Gate, w.in.SessionID, turnID, call).Get(ctx, &g); err != nil {
		return out, "", err
	}
	rejected := func(why string) (durable.ToolOutcome, string, error) {
		if g.ContinueAfterRejection {
			return durable.ToolOutcome{State: session.CallRejected}, "", nil
		}
		return durable.ToolOutcome{State: session.CallRejected}, "the tool call " + call.Name + " was rejected: " + why, nil
	}
	switch {
	case g.Settled == session.CallRejected:
		return rejected(g.Decision.Reason)
	case g.Settled != "":
		return durable.ToolOutcome{State: g.Settled, Question: g.Question}, "", nil
	}
	by := session.Attribution{Kind: session.ByAutomation, Rule: g.Decision.Rule}
	if g.Decision.Verdict == shellcheck.Ask {
		var req durable.ApprovalRequest
		if err := workflow.ExecuteActivity(short(ctx, 0), turns.RequestApproval, w.in.SessionID, turnID, call, g.Decision).Get(ctx, &req); err != nil {
			return out, "", err
		}
		if req.Rejected {
			return rejected(req.Reason)
		}
		ap, err := w.awaitApproval(ctx, req)
		if err != nil {
			return out, "", err
		}
		if ap.Status != session.ApprovalApproved {
			why := string(ap.Status)
			if ap.DecidedBy != nil {
				why += " by " + ap.DecidedBy.String()
			}
			if ap.Note != "" {
				why += ": " + ap.Note
			}
			if err := workflow.ExecuteActivity(short(ctx, 0), turns.Reject, w.in.SessionID, turnID, call, why).Get(ctx, nil); err != nil {
				return out, "", err
			}
			return rejected(why)
		}
		by = session.Attribution{Kind: session.ByHuman, By: ap.DecidedBy.ID, Via: ap.DecidedBy.Via, Approval: ap.ID}
	}
	err = w.onCopy(long(ctx), turns.RunTool, w.in.SessionID, turnID, call, g.Decision, by).Get(ctx, &out)
	if out.Node != "" {
		w.home = out.Node
	}
	if err == nil && out.State == session.CallRejected {
		return rejected("refused at execution")
	}
	return out, "", err
}

// awaitApproval waits for the approval's decision, a durable timer bounding
// the wait; a lapsed approval is expired. An interrupt ends the wait.
func (w *run) awaitApproval(ctx workflow.Context, req durable.ApprovalRequest) (session.Approval, error) {
	deadline := workflow.Now(ctx).Add(time.Duration(req.WaitSeconds * float64(time.Second)))
	for {
		remaining := deadline.Sub(workflow.Now(ctx))
		woke := true
		if remaining > 0 {
			var err error
			woke, err = workflow.AwaitWithTimeout(ctx, remaining, func() bool { return w.decided[req.ID] })
			if err != nil {
				return session.Approval{}, err
			}
		}
		delete(w.decided, req.ID)
		var ap session.Approval
		if err := workflow.ExecuteActivity(short(ctx, 0), turns.ApprovalState, req.ID, !woke).Get(ctx, &ap); err != nil {
			return ap, err
		}
		if ap.Status != session.ApprovalPending {
			return ap, nil
		}
	}
}
