// Package durable is the durable session's activities: every side effect
// a session workflow asks for (provisioning its copy and environment, a
// model step, a tool call in the sandbox, budgets and parks, the
// sweeper's work, copy work handed over from another node), each
// idempotent, so a retried activity never duplicates a row or an event.
package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/paddock-dev/paddock/internal/agent"
	"github.com/paddock-dev/paddock/internal/attachdesk"
	"github.com/paddock-dev/paddock/internal/auditlog"
	"github.com/paddock-dev/paddock/internal/bound"
	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/paddock-dev/paddock/internal/config"
	"github.com/paddock-dev/paddock/internal/copies"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/inflight"
	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spans"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/tool"
	"github.com/paddock-dev/paddock/internal/transcript"
	"github.com/paddock-dev/paddock/internal/workspace"
)

// Spawner creates the successor of an ended session of a replace: auto agent.
type Spawner interface {
	SpawnSuccessor(ctx context.Context, predecessor session.Session) (session.Session, error)
}

// Activities are the side effects of a session workflow. Every write is
// idempotent, so a retried activity never duplicates a row or an event.
type Activities struct {
	Store     store.Store
	Providers *provider.Registry
	Tools     tool.Set
	// Peers is what a session's agent sees of its project's sessions
	// (the sessions_* tools; nil: they are not available).
	Peers func(from session.Session) tool.Sessions
	// Wake wakes session id's workflow for a command the platform
	// recorded (the stop of a delegated session); Returned tells session
	// id's workflow that child, a session it delegated, settled a turn or
	// ended. Nil: the workflows find out at their next look.
	Wake     func(ctx context.Context, id, commandID string, kind session.CommandKind) error
	Returned func(ctx context.Context, id, child string) error
	Now      func() time.Time
	// ContentKey opens sessions' credentials.
	ContentKey Cipher
	// Attachments give messages' files to the model and the copy.
	Attachments *attachdesk.Service
	// Mirrors fetch remote repositories (nil: sessions on them fail);
	// ForgeWait is how long a session's provisioning waits for a forge
	// that does not answer (DefaultForgeWait when zero).
	Mirrors   Mirrors
	ForgeWait time.Duration
	// FetchErr says why there are no Mirrors, where it is known.
	FetchErr error
	// Copies is where sessions' working copies and caches live.
	Copies *copies.Set
	// Spawner replaces ended sessions of replace: auto agents; nil disables it.
	Spawner Spawner
	// Triggers delivers scheduled ticks through their triggers.
	Triggers Triggerer
	// Here does on this node's copies the work other nodes hand over
	// (a diff, an acceptance, a rejection).
	Here CopyWork
	// Sealer seals a session's audit log before its copy is reaped.
	Sealer *auditlog.Sealer
	// Shell runs commands in the sandbox. When the sandbox is unavailable,
	// SandboxErr says why, and sessions whose agent can run commands fail
	// at start with that message: there is no unsandboxed fallback.
	Shell      tool.Shell
	SandboxErr error
	// Meter, when set, runs and watches every command of agents' calls;
	// Tracer traces turns' model steps and tool calls (spans).
	Meter  tool.Meter
	Tracer trace.Tracer
	// LimitErr, when set, says which limit (disk, CPU) this machine cannot
	// enforce and the operator has not accepted unenforced: sessions that
	// run commands then fail at start with it.
	LimitErr error
	// Prices turn token usage into cost, by PROVIDER/MODEL.
	Prices config.Prices
	// Egress serves the network agents' environments allow; nil refuses
	// agents that declare any.
	Egress *Egress
	// Budget is the server's default session budget (agents override it).
	Budget bound.Limits
	// CommandMax and CommandMaxOutput bound each command.
	CommandMax       time.Duration
	CommandMaxOutput int64

	// flights are the tool calls running in this process; transcripts
	// the sessions' events read here, so a step reads only what is new.
	flights     inflight.Runs
	transcripts transcript.Cache
}

// nonRetryable wraps an error the workflow must see at once; an attempt
// its context cut short stays retryable.
func nonRetryable(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// The attempt was cut short (its heartbeat lapsed on a busy
		// machine, the worker stopped): another attempt may succeed.
		return err
	}
	return temporal.NewNonRetryableApplicationError(err.Error(), "paddock", nil)
}

func (a *Activities) agentSpec(ctx context.Context, sessionID string) (session.Session, spec.Agent, error) {
	s, err := a.Store.GetSession(ctx, sessionID)
	if err != nil {
		return s, spec.Agent{}, err
	}
	var sp spec.Agent
	if err := json.Unmarshal(s.AgentSpec, &sp); err != nil {
		return s, sp, nonRetryable(fmt.Errorf("session %s has an unreadable agent snapshot: %w", sessionID, err))
	}
	sp.Defaults()
	return s, sp, nil
}

// Provision prepares the session's runtime, entering only the phases
// that happen, each recorded with its duration: the working copy, then
// the environment (its setup run and saved as a layer, or a saved layer
// restored), then the model's provider. A failure fails the session with
// the reason (a failing setup, with the tail of its output).
func (a Lifecycle) Provision(ctx context.Context, sessionID string) error {
	s, sp, err := a.agentSpec(ctx, sessionID)
	if err != nil {
		return err
	}
	if _, _, err := a.Providers.Resolve(sp.Model); err != nil {
		return nonRetryable(err)
	}
	if a.runsCommands(sp) {
		why := ""
		switch {
		case a.SandboxErr != nil:
			why = a.SandboxErr.Error()
		case a.Shell == nil:
			why = "no sandbox is configured"
		case a.LimitErr != nil:
			why = a.LimitErr.Error()
		}
		if why != "" {
			return nonRetryable(fmt.Errorf("agent %s can run commands, but %s", sp.Name, why))
		}
	}
	stop := Heartbeat(ctx)
	defer stop()
	if err := a.provisionEnvironment(ctx, s, sp); err != nil {
		return err
	}
	err = a.phase(ctx, sessionID, session.PhaseStartingRuntime, func() (string, error) {
		if _, _, err := a.Providers.Resolve(sp.Model); err != nil {
			return "", nonRetryable(err)
		}
		return "model " + sp.Model, nil
	})
	if err != nil {
		return err
	}
	return a.Store.SetRuntimePhase(ctx, sessionID, "")
}

// phase enters a provisioning phase, runs it and records it with its
// duration and what it did (or why it failed).
func (a *Activities) phase(ctx context.Context, sessionID string, p session.RuntimePhase, run func() (string, error)) error {
	return a.phaseSince(ctx, sessionID, p, a.Now(), run)
}

// phaseSince is phase for a phase whose work began at start, before it
// was known which phase the work belonged to.
func (a *Activities) phaseSince(ctx context.Context, sessionID string, p session.RuntimePhase, start time.Time, run func() (string, error)) error {
	if err := a.Store.SetRuntimePhase(ctx, sessionID, p); err != nil {
		return err
	}
	detail, err := run()
	d := session.PhaseData{Phase: p, DurationMs: a.Now().Sub(start).Milliseconds(), Detail: detail}
	if err != nil {
		d.Error = err.Error()
	}
	data, _ := json.Marshal(d)
	if _, aerr := a.Store.AppendEvent(ctx, session.Event{SessionID: sessionID, Kind: session.EventPhase, Key: "phase/" + string(p), Data: data}); aerr != nil && err == nil {
		return aerr
	}
	return err
}

// runsCommands says whether an agent's session runs programs in a
// sandbox (run_command, or stdio MCP servers): those sessions need the
// sandbox and its disk and CPU budgets.
func (a *Activities) runsCommands(sp spec.Agent) bool {
	if sp.Environment.Setup != "" {
		return true
	}
	if _, ok := a.Tools.Only(sp.Tools)[tool.RunCommand]; ok {
		return true
	}
	for _, m := range sp.MCPServers {
		if len(m.Command) > 0 {
			return true
		}
	}
	return false
}

// prepareWorkspace makes session s's working copy: of its repository as
// it is (uncommitted and untracked files included, as the base
// snapshot), or empty. detail says what it started from.
func (a *Activities) prepareWorkspace(ctx context.Context, s session.Session, sp spec.Agent) (dir, base, detail string, err error) {
	dir, err = a.Copies.Dir(ctx, s, a.runsCommands(sp))
	if err != nil {
		return "", "", "", err
	}
	if s.Workdir == dir && s.BaseCommit != "" {
		// A retried provision keeps the copy it made and recorded.
		if err := a.Copies.Mount(ctx, dir); err != nil {
			return "", "", "", err
		}
		if fi, err := os.Lstat(filepath.Join(dir, ".git")); err == nil && fi.IsDir() {
			base, err := workspace.Head(ctx, dir)
			return dir, base, "working copy at " + clip.ID(base), err
		}
	}
	if err := a.Copies.Clear(dir); err != nil { // what an attempt cut short left half made, if anything
		return "", "", "", err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o711); err != nil {
		return "", "", "", err
	}
	detail = "an empty working copy"
	if parent, _ := s.Delegated(); parent != "" {
		if detail, err = a.fork(ctx, parent, dir); err != nil {
			return "", "", "", err
		}
	} else if s.Remote != nil {
		if detail, err = a.cloneRemote(ctx, s, dir); err != nil {
			return "", "", "", err
		}
	} else if s.Repo != "" {
		o, err := workspace.AsIs(ctx, s.Repo, dir, sp.Environment.IgnoredFiles, a.Copies.Start(s))
		if err != nil {
			return "", "", "", err
		}
		detail = o.Summary(s.Repo)
	} else {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", "", "", err
		}
		if err := workspace.Init(ctx, dir); err != nil {
			return "", "", "", err
		}
	}
	if err := a.Copies.Hand(dir); err != nil {
		return "", "", "", err
	}
	base, err = workspace.Head(ctx, dir)
	return dir, base, detail, err
}

// Fail ends the session as failed; a replace: auto agent gets a successor.
func (a Lifecycle) Fail(ctx context.Context, sessionID, reason string) error {
	if err := a.Store.FailSession(ctx, sessionID, reason); err != nil {
		return err
	}
	a.tellParent(ctx, sessionID)
	if err := a.stopChildren(ctx, sessionID, session.Sender{Kind: session.SenderSystem, ID: "paddock"}, "session "+sessionID+", which delegated the task, failed"); err != nil {
		return err
	}
	// Only a session that got work done is replaced: one that fails before
	// completing any turn would fail again, and replacing it would loop.
	turns, err := a.Store.ListTurns(ctx, sessionID)
	if err != nil {
		return err
	}
	for _, t := range turns {
		if t.Status == session.TurnCompleted {
			return a.replace(ctx, sessionID)
		}
	}
	return nil
}

// replace spawns the successor of an ended session whose agent declares
// replace: auto.
func (a *Activities) replace(ctx context.Context, sessionID string) error {
	s, sp, err := a.agentSpec(ctx, sessionID)
	if err != nil || sp.Replace != "auto" || a.Spawner == nil {
		return err
	}
	next, err := a.Spawner.SpawnSuccessor(ctx, s)
	if err != nil {
		return err
	}
	data, _ := json.Marshal(session.TextData{Text: "replaced by session " + next.ID})
	_, err = a.Store.AppendEvent(ctx, session.Event{SessionID: sessionID, Kind: session.EventNotice, Key: "successor", Data: data})
	return err
}

// Claim is the result of claiming commands.
type Claim struct {
	Commands []session.Command
	Terminal bool
	// Idle is how long the session may idle before its sandbox is released.
	Idle time.Duration
	// Parks are the timers of its open parks (expiry, re-probe).
	Parks []ParkTimer `json:"parks,omitempty"`
	// ExpiresAt is the session's hard wall-clock expiry (zero: none).
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	// Held counts the trigger deliveries waiting in the held lane.
	Held int `json:"held,omitempty"`
	// Frozen says the session is held: nothing is claimed, no timer runs.
	Frozen bool `json:"frozen,omitempty"`
	// Home is the node holding the session's working copy.
	Home string `json:"home,omitempty"`
}

// Claim claims the next batch of commands.
func (a Lifecycle) Claim(ctx context.Context, sessionID string) (Claim, error) {
	// A held session's claim holds only a stop (checked in the claim's
	// own transaction, so a hold can never let a turn slip through).
	cmds, err := a.Store.ClaimBatch(ctx, sessionID)
	if err != nil {
		return Claim{}, err
	}
	s, sp, err := a.agentSpec(ctx, sessionID)
	if err != nil {
		return Claim{}, err
	}
	if len(cmds) == 0 && s.Held() && !s.Status.Terminal() {
		return Claim{Frozen: true}, nil // nothing runs until it is released
	}
	c := Claim{Commands: cmds, Terminal: s.Status.Terminal() && len(cmds) == 0, Idle: time.Duration(sp.Session.IdleTimeout), Home: s.Node}
	if !c.Terminal {
		held, err := a.Store.HeldDeliveries(ctx, sessionID)
		if err != nil {
			return Claim{}, err
		}
		c.Held = len(held)
	}
	if len(cmds) == 0 && !c.Terminal {
		if c.Parks, err = a.parkTimers(ctx, sessionID); err != nil {
			return Claim{}, err
		}
		if l := a.limits(s, sp); l.Lifetime > 0 {
			c.ExpiresAt = s.CreatedAt.Add(l.Lifetime)
		}
	}
	return c, nil
}

// Expire ends a session that reached its hard wall-clock expiry while it
// slept.
func (a Lifecycle) Expire(ctx context.Context, sessionID string) error {
	s, sp, err := a.agentSpec(ctx, sessionID)
	if err != nil || s.Status.Terminal() || s.Held() {
		return err // a held session's end waits for its release
	}
	return a.Budgets().EndForBudget(ctx, sessionID, fmt.Sprintf("the session reached its lifetime of %s", a.limits(s, sp).Lifetime), "")
}

// Reap releases an idle session's sandbox: no process of it is left (each
// command's sandbox already died with it); the workspace is kept and the
// session stays awaiting.
func (a Lifecycle) Reap(ctx context.Context, sessionID string) error {
	if a.held(ctx, sessionID) {
		return nil
	}
	// Its volume is let go too, on the node holding it (kept mounted
	// when it cannot be, until the next idle period).
	if s, err := a.Store.GetSession(ctx, sessionID); err == nil && a.Copies != nil {
		if err := a.Copies.Idle(ctx, s); err != nil && activity.IsActivity(ctx) {
			activity.GetLogger(ctx).Warn("idle session's volume kept mounted", "session", sessionID, "err", err)
		}
	}
	data, _ := json.Marshal(session.TextData{Text: "idle: sandbox released, working copy kept; the next message picks up where it left off"})
	if _, err := a.Store.AppendEvent(ctx, session.Event{SessionID: sessionID, Kind: session.EventNotice, Key: "reap/" + a.Now().UTC().Format(time.RFC3339Nano), Data: data}); err != nil {
		return err
	}
	if _, ok := a.parked(ctx, sessionID); ok {
		return nil // what it waits on stays on display
	}
	return a.Store.SetDisplay(ctx, sessionID, "", "idle (sandbox released)")
}

// Rehydrate readies a reaped session for work again: its working copy is
// made again when it is not on this node, and a sandbox must be available.
func (a Lifecycle) Rehydrate(ctx context.Context, sessionID string) error {
	s, sp, err := a.agentSpec(ctx, sessionID)
	if err != nil {
		return err
	}
	if err := a.ensureCopy(ctx, &s, sp); err != nil {
		if _, ok := copies.IsElsewhere(err); ok {
			return err
		}
		return nonRetryable(err)
	}
	if _, runs := a.Tools.Only(sp.Tools)[tool.RunCommand]; runs && a.SandboxErr != nil {
		return nonRetryable(a.SandboxErr)
	}
	data, _ := json.Marshal(session.TextData{Text: "sandbox ready again"})
	_, err = a.Store.AppendEvent(ctx, session.Event{SessionID: sessionID, Kind: session.EventNotice, Key: "rehydrate/" + a.Now().UTC().Format(time.RFC3339Nano), Data: data})
	return err
}

// Settle moves commands to a final state.
func (a Lifecycle) Settle(ctx context.Context, ids []string, state session.CommandState, reason string) error {
	return a.Store.SettleCommands(ctx, ids, state, reason)
}

// MarkStarted records that a bare start booted the runtime.
func (a Lifecycle) MarkStarted(ctx context.Context, sessionID string, commandID string) error {
	if err := a.Store.MarkStarted(ctx, sessionID); err != nil {
		return err
	}
	return a.Store.SettleCommands(ctx, []string{commandID}, session.CommandAccepted, "")
}

// OpenTurn records a turn for the commands, delivers their messages into
// the transcript and moves the turn in_progress.
func (a Turns) OpenTurn(ctx context.Context, turnID string, cmds []session.Command) error {
	if len(cmds) == 0 {
		return nonRetryable(errors.New("a turn needs at least one command"))
	}
	sessionID := cmds[0].SessionID
	s, _, err := a.agentSpec(ctx, sessionID)
	if err != nil {
		return err
	}
	ids := make([]string, len(cmds))
	for i, c := range cmds {
		ids[i] = c.ID
	}
	if _, err := a.Store.OpenTurn(ctx, turnID, sessionID, ids); err != nil {
		return err
	}
	for _, c := range cmds {
		if c.Kind != session.KindMessage && c.Kind != session.KindStartWithMessage {
			continue
		}
		var p session.MessagePayload
		_ = json.Unmarshal(c.Payload, &p)
		text := p.Message
		if p.Handoff != "" {
			text = "Handoff from the previous session:\n" + p.Handoff + "\n\n" + text
		}
		sender := c.Sender
		if c.Kind == session.KindStartWithMessage {
			sender = s.CreatedBy // the platform creates the start; its message is the creator's
		}
		data, _ := json.Marshal(session.TextData{Text: text, Sender: &sender, Model: p.Model, ReasoningEffort: p.ReasoningEffort, Attachments: p.Attachments})
		if _, err := a.Store.AppendEvent(ctx, session.Event{SessionID: sessionID, TurnID: turnID, Kind: session.EventUserMessage, Key: "message/" + c.ID, Data: data}); err != nil {
			return err
		}
	}
	if err := a.Store.SetTurnStatus(ctx, turnID, session.TurnInProgress, "", ""); err != nil {
		return err
	}
	return nil
}

// SettleTurn moves a turn to a settled status; the session status follows.
func (a Turns) SettleTurn(ctx context.Context, turnID string, status session.TurnStatus, scope session.FailureScope, reason string) error {
	t, err := a.Store.GetTurn(ctx, turnID)
	if err != nil {
		return err
	}
	// A turn never ends with a call in an intermediate state.
	if err := a.closeOpenCalls(ctx, t.SessionID, turnID, status); err != nil {
		return err
	}
	if err := a.Store.SetTurnStatus(ctx, turnID, status, scope, reason); err != nil {
		return err
	}
	ambient := "idle"
	if status == session.TurnWaitingForInput {
		ambient = "waiting for your answer"
	} else if status == session.TurnFailed {
		ambient = "turn failed: " + reason
	}
	if parked, ok := a.parked(ctx, t.SessionID); ok {
		ambient = parked
	}
	if err := a.Store.SetDisplay(ctx, t.SessionID, "", ambient); err != nil {
		return err
	}
	a.tellParent(ctx, t.SessionID)
	return nil
}

// held says whether a session is held (nothing reaped or ended meanwhile).
func (a *Activities) held(ctx context.Context, sessionID string) bool {
	x, err := a.Store.GetSession(ctx, sessionID)
	return err == nil && x.Held()
}

// parked is the display of a session's open park, if it has one.
func (a *Activities) parked(ctx context.Context, sessionID string) (string, bool) {
	open, err := a.Store.ListParks(ctx, sessionID, true)
	if err != nil || len(open) == 0 {
		return "", false
	}
	return "parked (" + open[0].Reason + "): needs " + open[0].Needs, true
}

// ModelStep runs one model step of a turn. A step already recorded (the
// activity retried after a crash) is returned as recorded.
func (a Turns) ModelStep(ctx context.Context, sessionID, turnID string, step int) (_ provider.Response, err error) {
	ctx = spans.InTurn(ctx, turnID) // the model call's span is the turn's
	events, err := a.transcripts.Events(ctx, a.Store, sessionID)
	if err != nil {
		return provider.Response{}, err
	}
	key := fmt.Sprintf("%s/step%d/message", turnID, step)
	for _, e := range events {
		if e.Key == key {
			var m agent.AssistantMessage
			if err := json.Unmarshal(e.Data, &m); err != nil {
				return provider.Response{}, nonRetryable(err)
			}
			return m.Response, nil
		}
	}
	s, sp, err := a.agentSpec(ctx, sessionID)
	if err != nil {
		return provider.Response{}, err
	}
	// The session's work is where its copy is: a step given to this node
	// (the copy's node is gone) brings the copy here, so the rest of the
	// turn is routed here too, and stdio MCP servers find it.
	if err := a.ensureCopy(ctx, &s, sp); err != nil {
		if _, ok := copies.IsElsewhere(err); ok {
			return provider.Response{}, err
		}
		data, _ := json.Marshal(session.TextData{Text: "the working copy could not be made on this node: " + err.Error()})
		_, _ = a.Store.AppendEvent(ctx, session.Event{SessionID: s.ID, TurnID: turnID, Kind: session.EventNotice, Key: fmt.Sprintf("%s/step%d/copy", turnID, step), Data: data})
	}
	// The step's time is active time of the session's budget.
	start := a.Now()
	defer func() {
		_ = a.consume(context.WithoutCancel(ctx), sessionID, turnID, fmt.Sprintf("step/%s/%d/%d", turnID, step, attempt(ctx)),
			session.BudgetData{ActiveMs: a.Now().Sub(start).Milliseconds()})
	}()
	_ = a.Store.SetDisplay(ctx, sessionID, "", "thinking")
	// The conversation and the tools on offer are the same for every model
	// tried (listing MCP tools is I/O: once per step).
	messages, tools := a.compacted(ctx, sessionID, turnID, step, sp, events), a.offered(ctx, s, sp, turnID, step)
	given, err := a.Attachments.Give(ctx, s, messages) // placed in the copy, given as each model takes them
	if err != nil {
		return provider.Response{}, err
	}
	stop := Heartbeat(ctx)
	defer stop()
	// The watchdog: a step whose model streams nothing for the agent's
	// interval is abandoned and its turn concluded stale.
	ctx, progress, stale := watchdog(ctx, time.Duration(sp.Session.Watchdog), a.Now)
	defer func() {
		if stale() {
			err = temporal.NewNonRetryableApplicationError(fmt.Sprintf("the model made no progress for %s (the agent's watchdog)", time.Duration(sp.Session.Watchdog)), StaleErrorType, nil)
		}
	}()
	// The agent's model, then its fallbacks in order when a model fails
	// after its own retries (429s and 5xx are retried inside the SDKs).
	var lastErr error
	for i, name := range append([]string{agent.Model(events, turnID, sp.Model)}, sp.FallbackModels...) {
		p, model, err := a.Providers.Resolve(name)
		if err != nil {
			lastErr = err
			continue
		}
		req := provider.Request{Model: model, System: sp.Instructions, Messages: given(name), Tools: tools, ReasoningEffort: agent.Effort(events, turnID, sp.ReasoningEffort, name)}
		variant := ""
		if i > 0 {
			variant = fmt.Sprintf("/fallback%d", i)
			data, _ := json.Marshal(session.TextData{Text: fmt.Sprintf("model %s failed (%v); falling back to %s", sp.Model, lastErr, name)})
			_, _ = a.Store.AppendEvent(ctx, session.Event{SessionID: sessionID, TurnID: turnID, Kind: session.EventNotice, Key: fmt.Sprintf("%s/step%d/fallback%d", turnID, step, i), Data: data})
		}
		resp, err := agent.Step(ctx, progressed{p, progress}, a.Store, agent.StepInput{SessionID: sessionID, TurnID: turnID, Step: step, Request: req, Variant: variant,
			History: agent.Full(events)}, a.Now)
		if err == nil {
			a.clearProviderParks(ctx, sessionID)
			u := session.Usage{InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens, ThinkingTokens: resp.Usage.ThinkingTokens,
				ReasoningEffort: req.ReasoningEffort, CostUSD: a.Prices.Of(name).Cost(resp.Usage.InputTokens, resp.Usage.OutputTokens)}
			resp.Thinking = nil // in the transcript: the workflow's history does without it
			return resp, a.Store.RecordUsage(ctx, sessionID, turnID, step, name, u)
		}
		if ctx.Err() != nil {
			return resp, err
		}
		lastErr = err
	}
	// A provider that is down or out of credits parks the session rather
	// than failing it: the condition is waited out (or resolved by a
	// person) and the work resumes.
	if reason := parkFor(provider.Classify(lastErr)); reason != "" {
		return provider.Response{}, temporal.NewNonRetryableApplicationError(lastErr.Error(), ParkErrorType+string(reason), nil)
	}
	return provider.Response{}, lastErr
}

// StaleErrorType is the type of a model step's error when the watchdog
// abandoned it.
const StaleErrorType = "stale"

// errStale cancels a step the watchdog abandoned.
var errStale = errors.New("no progress")

// watchdog gives a context that is canceled when progress (to be called
// on every streamed delta) has not been reported for wd, and reports
// whether that happened.
func watchdog(ctx context.Context, wd time.Duration, now func() time.Time) (context.Context, func(), func() bool) {
	if wd <= 0 {
		return ctx, func() {}, func() bool { return false }
	}
	ctx, cancel := context.WithCancelCause(ctx)
	var last atomic.Int64
	last.Store(now().UnixNano())
	go func() {
		t := time.NewTicker(min(wd/10, time.Second))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if now().Sub(time.Unix(0, last.Load())) >= wd {
					cancel(errStale)
					return
				}
			}
		}
	}()
	return ctx, func() { last.Store(now().UnixNano()) }, func() bool { return errors.Is(context.Cause(ctx), errStale) }
}

// progressed reports each streamed delta of a provider as progress.
type progressed struct {
	provider.Provider
	progress func()
}

func (p progressed) Stream(ctx context.Context, req provider.Request, sink func(provider.Delta)) (provider.Response, error) {
	return p.Provider.Stream(ctx, req, func(d provider.Delta) {
		p.progress()
		sink(d)
	})
}

// attempt is the activity's attempt (1 outside one).
func attempt(ctx context.Context) int32 {
	if activity.IsActivity(ctx) {
		return activity.GetInfo(ctx).Attempt
	}
	return 1
}

// clearProviderParks resolves open parks on the provider or billing once
// a model answered again (someone sent a message instead of unparking):
// their recovery commands are canceled, the work having resumed already.
func (a *Activities) clearProviderParks(ctx context.Context, sessionID string) {
	open, err := a.Store.ListParks(ctx, sessionID, true)
	if err != nil {
		return
	}
	for _, p := range open {
		switch bound.Reason(p.Reason) {
		case bound.ProviderOutage, bound.BillingInsufficientCredits, bound.BillingSpendingLimitExceeded:
			_, _ = a.Store.ResolvePark(ctx, p.ID, session.ParkCanceled, &session.Sender{Kind: session.SenderSystem, ID: "model"}, "the model answered again")
		}
	}
}

// ParkErrorType prefixes the type of an activity error that asks the
// workflow to park the session for the reason that follows.
const ParkErrorType = "park:"

// parkFor is the park reason of a provider failure, "" for none.
func parkFor(f provider.Failure) bound.Reason {
	switch f {
	case provider.Outage:
		return bound.ProviderOutage
	case provider.NoCredits:
		return bound.BillingInsufficientCredits
	case provider.SpendingLimit:
		return bound.BillingSpendingLimitExceeded
	}
	return ""
}

// mcpEnv is where the session's stdio MCP servers run: its sandbox.
func (a *Activities) mcpEnv(s session.Session, sp spec.Agent) tool.MCPEnv {
	env := tool.MCPEnv{Place: a.place(s, sp)}
	if l, ok := a.Shell.(tool.Launcher); ok && a.SandboxErr == nil {
		env.Launcher = l
	}
	return env
}

// mcpServers are the agent's MCP servers.
func mcpServers(sp spec.Agent) []tool.MCPServer {
	var out []tool.MCPServer
	for _, m := range sp.MCPServers {
		out = append(out, tool.MCPServer{Name: m.Name, URL: m.URL, Command: m.Command, Env: m.Env})
	}
	return out
}

// mcpServer finds the server a tool name belongs to.
func mcpServer(sp spec.Agent, name string) (tool.MCPServer, string, bool) {
	server, t, ok := tool.SplitMCPName(name)
	if !ok {
		return tool.MCPServer{}, "", false
	}
	for _, m := range mcpServers(sp) {
		if m.Name == server {
			return m, t, true
		}
	}
	return tool.MCPServer{}, "", false
}

// offered lists the tools the model is told about: the agent's built-ins
// and its MCP servers' tools, without those its pinned policy disables (a
// call to one would only be refused). An unreachable MCP server is noted
// in the transcript and its tools left out.
func (a *Activities) offered(ctx context.Context, s session.Session, sp spec.Agent, turnID string, step int) []provider.ToolSpec {
	p, err := policy.Pinned(s.Policy)
	all := a.Tools.Only(sp.Tools).Specs()
	if servers := mcpServers(sp); len(servers) > 0 {
		if a.runsCommands(sp) {
			if release, err := a.Copies.Sandboxed(ctx, s.ID); err == nil {
				defer release()
			}
		}
		extra, mcpErr := tool.MCPTools(ctx, servers, a.mcpEnv(s, sp))
		if mcpErr != nil {
			data, _ := json.Marshal(session.TextData{Text: "MCP tools unavailable this step: " + mcpErr.Error()})
			_, _ = a.Store.AppendEvent(ctx, session.Event{SessionID: s.ID, TurnID: turnID, Kind: session.EventNotice, Key: fmt.Sprintf("%s/step%d/mcp", turnID, step), Data: data})
		}
		all = append(all, extra...)
	}
	var out []provider.ToolSpec
	for _, t := range all {
		if err == nil {
			if v, _ := p.Tool(t.Name); v == policy.Disabled {
				continue
			}
		}
		out = append(out, t)
	}
	return out
}

// Heartbeat reports liveness every second until stopped, so a dead worker
// is noticed quickly and a cancellation (an interrupt) reaches the activity.
func Heartbeat(ctx context.Context) func() {
	if !activity.IsActivity(ctx) || activity.GetInfo(ctx).IsLocalActivity {
		return func() {} // a local activity has no heartbeat: its workflow task is its liveness
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}

// ToolOutcome is the result of one tool call.
type ToolOutcome struct {
	State    session.ToolCallState
	Question bool
	// Child is the session a delegate call started: the call ends when
	// Collect collects it. By is the call's attribution, for then.
	Child string               `json:"child,omitempty"`
	By    *session.Attribution `json:"by,omitempty"`
	// Node is where the call ran: the node holding the copy now.
	Node string `json:"node,omitempty"`
}

// RecordCall appends a state of a tool call to its session's transcript.
func RecordCall(ctx context.Context, st store.Store, sessionID, turnID string, d session.ToolCallData) error {
	data, _ := json.Marshal(d)
	_, err := st.AppendEvent(ctx, session.Event{SessionID: sessionID, TurnID: turnID, Kind: session.EventToolCall, Key: "call/" + d.ID + "/" + string(d.State), Data: data})
	return err
}

// Answer delivers an answer command to the question it names: the question's
// call becomes done with the answer as its result, and the waiting turn
// completes. It returns an error message (and no error) when the answer
// matches no open question.
func (a Turns) Answer(ctx context.Context, cmd session.Command) (string, error) {
	var p session.AnswerPayload
	if err := json.Unmarshal(cmd.Payload, &p); err != nil {
		return "unreadable answer payload: " + err.Error(), nil
	}
	events, err := CallEvents(ctx, a.Store, cmd.SessionID, p.ToolCallID)
	if err != nil {
		return "", err
	}
	var question *session.Event
	for i, e := range events {
		if e.Kind == session.EventQuestion {
			question = &events[i]
			continue
		}
		var d session.ToolCallData
		if json.Unmarshal(e.Data, &d) == nil && d.State.Final() && e.Key != "call/"+p.ToolCallID+"/done" {
			return fmt.Sprintf("question %s is no longer open", p.ToolCallID), nil
		}
	}
	if question == nil {
		return fmt.Sprintf("no question with toolCallId %s in this session", p.ToolCallID), nil
	}
	answer, _ := json.Marshal(p)
	if _, err := a.Store.AppendEvent(ctx, session.Event{SessionID: cmd.SessionID, TurnID: question.TurnID, Kind: session.EventAnswer, Key: "answer/" + p.ToolCallID, Data: answer}); err != nil {
		return "", err
	}
	if err := RecordCall(ctx, a.Store, cmd.SessionID, question.TurnID, session.ToolCallData{ID: p.ToolCallID, Name: tool.AskUser, State: session.CallDone, Result: string(answer)}); err != nil {
		return "", err
	}
	t, err := a.Store.GetTurn(ctx, question.TurnID)
	if err == nil && t.Status == session.TurnWaitingForInput {
		err = a.Store.SetTurnStatus(ctx, t.ID, session.TurnCompleted, "", "")
	}
	return "", err
}

// Interrupted settles an interrupted turn's transcript: calls still
// generating, generated or calling become canceled, and the conversation
// records that the assistant was cut off (unless the model step recorded
// that itself while it streamed).
func (a Lifecycle) Interrupted(ctx context.Context, sessionID, turnID, reason string) error {
	// The interrupted turn's delegations go nowhere now.
	if err := a.stopChildren(ctx, sessionID, session.Sender{Kind: session.SenderSystem, ID: "paddock"}, "the turn of session "+sessionID+" that delegated the task was interrupted"); err != nil {
		return err
	}
	steps, err := a.Store.EventsByKey(ctx, sessionID, turnID+"/")
	if err != nil {
		return err
	}
	recorded := false
	for _, e := range steps {
		if e.Kind == session.EventAssistantMessage {
			var m agent.AssistantMessage
			recorded = recorded || (json.Unmarshal(e.Data, &m) == nil && m.Response.StopReason == agent.StopInterrupted)
		}
	}
	calls, err := TurnCalls(ctx, a.Store, sessionID, turnID)
	if err != nil {
		return err
	}
	for _, d := range calls {
		if d.State.Final() || d.State.Transition(session.CallCanceled) != nil {
			continue
		}
		d.State, d.Error, d.Result, d.Args = session.CallCanceled, reason, "", nil
		if err := RecordCall(ctx, a.Store, sessionID, turnID, d); err != nil {
			return err
		}
	}
	pending, err := a.Store.ListApprovals(ctx, session.ApprovalFilter{SessionID: sessionID, Status: session.ApprovalPending})
	if err != nil {
		return err
	}
	for _, ap := range pending {
		if ap.TurnID == turnID {
			if _, err := a.Store.DecideApproval(ctx, ap.ID, session.ApprovalExpired, nil, "the turn was interrupted"); err != nil && !errors.Is(err, errdefs.ErrConflict) {
				return err
			}
		}
	}
	if recorded {
		return nil
	}
	data, _ := json.Marshal(agent.AssistantMessage{Step: -1, Response: provider.Response{Text: agent.InterruptedText, StopReason: agent.StopInterrupted}})
	_, err = a.Store.AppendEvent(ctx, session.Event{SessionID: sessionID, TurnID: turnID, Kind: session.EventAssistantMessage, Key: turnID + "/interrupted", Data: data})
	return err
}

// GetCommand reads a command.
func (a Lifecycle) GetCommand(ctx context.Context, id string) (session.Command, error) {
	return a.Store.GetCommand(ctx, id)
}

// Stop ends the session: the stop command is accepted and the session is
// stopped with its reason, respawn request and handoff.
func (a Lifecycle) Stop(ctx context.Context, cmd session.Command) error {
	if err := a.stopSession(ctx, cmd); err != nil {
		return err
	}
	return a.release(ctx, cmd)
}

// StopTurn is Stop for a stop that interrupted a turn: the session is
// stopped first, then the turn settles (the session never shows idle in
// between), then its copy goes.
func (a Turns) StopTurn(ctx context.Context, cmd session.Command, turnID string, status session.TurnStatus, scope session.FailureScope, why string) error {
	if err := a.stopSession(ctx, cmd); err != nil {
		return err
	}
	if err := a.Turns().SettleTurn(ctx, turnID, status, scope, why); err != nil {
		return err
	}
	return a.release(ctx, cmd)
}

// stopSession records the stop: the command accepted, the reason noted,
// the session stopped (what was queued canceled), a replacement asked for.
func (a *Activities) stopSession(ctx context.Context, cmd session.Command) error {
	var p session.StopPayload
	_ = json.Unmarshal(cmd.Payload, &p)
	if err := a.Store.SettleCommands(ctx, []string{cmd.ID}, session.CommandAccepted, ""); err != nil {
		return err
	}
	if p.Reason != "" {
		data, _ := json.Marshal(session.TextData{Text: "stopped: " + p.Reason, Sender: &cmd.Sender})
		if _, err := a.Store.AppendEvent(ctx, session.Event{SessionID: cmd.SessionID, Kind: session.EventNotice, Key: "stop/" + cmd.ID, Data: data}); err != nil {
			return err
		}
	}
	if err := a.Store.StopSession(ctx, cmd.SessionID, p); err != nil {
		return err
	}
	// Another stop sent meanwhile is done too.
	cmds, err := a.Store.ListCommands(ctx, cmd.SessionID)
	if err != nil {
		return err
	}
	var others []string
	for _, c := range cmds {
		if c.Kind == session.KindStop && c.ID != cmd.ID && (c.State == session.CommandPending || c.State == session.CommandDispatching) {
			others = append(others, c.ID)
		}
	}
	if err := a.Store.SettleCommands(ctx, others, session.CommandAccepted, "the session was stopped by command "+cmd.ID); err != nil {
		return err
	}
	a.tellParent(ctx, cmd.SessionID)
	if err := a.stopChildren(ctx, cmd.SessionID, cmd.Sender, "session "+cmd.SessionID+", which delegated the task, was stopped"); err != nil {
		return err
	}
	if p.Respawn {
		return a.replace(ctx, cmd.SessionID)
	}
	return nil
}

// release lets a stopped session's working copy go.
func (a *Activities) release(ctx context.Context, cmd session.Command) error {
	// Unapproved writes go with the session: only an accepted diff
	// survives (in the user's repository), so the copy, its caches and
	// its volume go now, its audit log sealed first (unless the session is
	// held for inspection: then when the collector finds it released).
	// The node holding the copy removes it; a stop that ran elsewhere
	// (that node gone) leaves it to that node's collector.
	if s, err := a.Store.GetSession(ctx, cmd.SessionID); err == nil && !s.Held() {
		if err := a.Sealer.Seal(ctx, s.ID); err != nil {
			return fmt.Errorf("seal the stopped session's audit log: %w", err)
		}
		if err := a.Copies.Release(ctx, s.ID); err != nil {
			return err
		}
		if !a.Copies.Mine(s) {
			return a.Store.SetDisplay(ctx, cmd.SessionID, "", "stopped")
		}
		if err := a.Copies.Remove(ctx, s); err != nil {
			return fmt.Errorf("remove the stopped session's working copy: %w", err)
		}
	}
	return a.Store.SetDisplay(ctx, cmd.SessionID, "", "stopped")
}

// Cipher seals and opens content at rest (vault.Key): retained audit
// content, a session's credentials.
type Cipher interface {
	Encrypt(plain, ad []byte) []byte
	Decrypt(sealed, ad []byte) ([]byte, error)
}
