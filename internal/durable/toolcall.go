package durable

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/paddock-dev/paddock/internal/copies"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/liveoutput"
	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/secret"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/shellcheck"
	"github.com/paddock-dev/paddock/internal/spans"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/tool"
)

// credentials opens session id's credentials.
func (a *Activities) credentials(ctx context.Context, id string) (map[string]string, error) {
	sealed, err := a.Store.Credentials(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(sealed))
	for name, v := range sealed {
		plain, err := a.ContentKey.Decrypt(v, CredentialAD(id, name))
		if err != nil {
			return nil, fmt.Errorf("credential %s cannot be opened (%v): the requester gives it again once the session is stopped and retried", name, err)
		}
		out[name] = string(plain)
	}
	return out, nil
}

// CallDigest binds an approval to one exact call: the tool's name and its
// arguments in canonical JSON.
func CallDigest(name string, args json.RawMessage) string {
	canon := []byte(args)
	var v any
	if json.Unmarshal(args, &v) == nil {
		canon, _ = json.Marshal(v)
	}
	sum := sha256.Sum256(append([]byte(name+"\x00"), canon...))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// GateResult is the gate's decision on a call, or the call's recorded end
// when it already has one (an activity retried after a crash).
type GateResult struct {
	Decision policy.Decision
	// Settled is the call's final state when the gate ended it (unknown
	// tool, refused) or it ended before.
	Settled  session.ToolCallState
	Question bool
	// ContinueAfterRejection is the pinned policy's setting.
	ContinueAfterRejection bool
}

// CallEvents are the transcript of one call: its state changes and the
// question it asked, if any.
func CallEvents(ctx context.Context, st store.Store, sessionID, callID string) ([]session.Event, error) {
	events, err := st.EventsByKey(ctx, sessionID, "call/"+callID+"/")
	if err != nil {
		return nil, err
	}
	q, err := st.EventsByKey(ctx, sessionID, "question/"+callID)
	for _, e := range q {
		if e.Key == "question/"+callID {
			events = append(events, e)
		}
	}
	return events, err
}

// SettledCall returns the call's final state if the transcript has one.
func SettledCall(ctx context.Context, rec store.Store, sessionID, callID string) (st session.ToolCallState, question, ok bool, err error) {
	events, err := CallEvents(ctx, rec, sessionID, callID)
	for _, e := range events {
		if e.Kind == session.EventQuestion {
			return session.CallCalling, true, true, err
		}
		var d session.ToolCallData
		if json.Unmarshal(e.Data, &d) == nil && d.State.Final() {
			return d.State, false, true, err
		}
	}
	return "", false, false, err
}

// Gate evaluates a generated call against the session's pinned policy. An
// unknown tool errors (the model is told which exist); a refusal is
// recorded as rejected with the deciding rule.
func (a Turns) Gate(ctx context.Context, sessionID, turnID string, call provider.ToolCall) (GateResult, error) {
	// Names as operators see them: a name the model made up may carry anything.
	ctx, span := spans.Start(ctx, a.Tracer, turnID, "gate "+a.Tools.Label(call.Name), trace.WithAttributes(attribute.String("gen_ai.tool.call.id", call.ID)))
	out, err := a.gate(ctx, sessionID, turnID, call)
	if out.Decision.Rule != "" { // the policy judged it
		span.SetAttributes(attribute.String("paddock.gate.verdict", out.Decision.Verdict.String()), attribute.String("paddock.gate.rule", out.Decision.Rule))
	}
	span.SetAttributes(attribute.String("paddock.tool_call.state", string(out.Settled)))
	spans.End(span, err)
	return out, err
}

func (a Turns) gate(ctx context.Context, sessionID, turnID string, call provider.ToolCall) (GateResult, error) {
	s, sp, err := a.agentSpec(ctx, sessionID)
	if err != nil {
		return GateResult{}, err
	}
	p, err := policy.Pinned(s.Policy)
	if err != nil {
		return GateResult{}, nonRetryable(err)
	}
	out := GateResult{ContinueAfterRejection: p.ContinueAfterToolRejection}
	st, q, settled, err := SettledCall(ctx, a.Store, sessionID, call.ID)
	if err != nil {
		return GateResult{}, err
	}
	if settled {
		out.Settled, out.Question = st, q
		return out, nil
	}
	// Each tool call the model makes is one action of the session's budget;
	// one past the budget does not run (a step may ask for many calls at
	// once), and the next budget check parks or ends the session.
	if err := a.consume(ctx, sessionID, turnID, "call/"+call.ID, session.BudgetData{Actions: 1}); err != nil {
		return GateResult{}, err
	}
	base := session.ToolCallData{ID: call.ID, Name: call.Name}
	if c, err := a.consumption(ctx, s); err != nil {
		return GateResult{}, err
	} else if l := a.limits(s, sp).Effective(c.Extensions); l.Actions > 0 && c.Actions > l.Actions {
		d := base
		d.State, d.Error = session.CallErrored, fmt.Sprintf("not run: the session's action budget (%d) is spent", l.Actions)
		out.Settled = d.State
		return out, RecordCall(ctx, a.Store, sessionID, turnID, d)
	}
	_, builtin := a.Tools.Only(sp.Tools)[call.Name]
	if _, _, isMCP := mcpServer(sp, call.Name); !builtin && !isMCP {
		d := base
		d.State, d.Error = session.CallErrored, fmt.Sprintf("unknown tool %q; available: %s", clip.String(call.Name, 100), strings.Join(a.Tools.Only(sp.Tools).Names(), ", "))
		out.Settled = d.State
		return out, RecordCall(ctx, a.Store, sessionID, turnID, d)
	}
	if problem := call.ArgsProblem(); problem != "" {
		d := base
		d.State, d.Error = session.CallErrored, "invalid arguments: "+problem
		out.Settled = d.State
		return out, RecordCall(ctx, a.Store, sessionID, turnID, d)
	}
	out.Decision = p.Evaluate(call.Name, call.Args)
	if out.Decision.Verdict == shellcheck.Refuse {
		d := base
		d.State, d.Verdict, d.Rule = session.CallRejected, "refuse", out.Decision.Rule
		d.Error = "refused by policy (" + out.Decision.Rule + "): " + out.Decision.Reason
		out.Settled = d.State
		return out, RecordCall(ctx, a.Store, sessionID, turnID, d)
	}
	return out, nil
}

// ApprovalRequest is a parked call's approval, or its immediate rejection.
type ApprovalRequest struct {
	ID       string
	Rejected bool
	Reason   string
	// Wait is how long the request may wait, from now.
	WaitSeconds float64
}

// RequestApproval parks an "ask" call: a durable approval bound to the
// call's digest, with the policy's TTL. A non-interactive session without a
// named approver rejects at once instead, so nothing hangs.
func (a Turns) RequestApproval(ctx context.Context, sessionID, turnID string, call provider.ToolCall, d policy.Decision) (ApprovalRequest, error) {
	s, err := a.Store.GetSession(ctx, sessionID)
	if err != nil {
		return ApprovalRequest{}, err
	}
	p, err := policy.Pinned(s.Policy)
	if err != nil {
		return ApprovalRequest{}, nonRetryable(err)
	}
	if !s.Interactive && s.Approver == "" {
		reason := "this session is non-interactive and names no approver, so a call that needs permission (" + d.Rule + ") is rejected"
		ev := session.ToolCallData{ID: call.ID, Name: call.Name, State: session.CallRejected, Verdict: "ask", Rule: d.Rule, Error: reason}
		return ApprovalRequest{Rejected: true, Reason: reason}, RecordCall(ctx, a.Store, sessionID, turnID, ev)
	}
	// Said before the approval can be seen: whoever finds it in the inbox
	// finds the session's line saying what it waits for.
	_ = a.Store.SetDisplay(ctx, sessionID, "", "waiting for approval of "+call.Name)
	ap, err := a.Store.CreateApproval(ctx, session.Approval{
		ID: "approval-" + call.ID + "-" + sessionID[:min(8, len(sessionID))], SessionID: sessionID, TurnID: turnID, ToolCallID: call.ID,
		Tool: call.Name, Args: call.Args, Digest: CallDigest(call.Name, call.Args), Rule: d.Rule, Reason: d.Reason,
		ExpiresAt: a.Now().Add(p.ApprovalTTL),
	})
	if err != nil {
		return ApprovalRequest{}, err
	}
	ev := session.ToolCallData{ID: call.ID, Name: call.Name, State: session.CallAwaitingApproval, Args: call.Args, Verdict: "ask", Rule: d.Rule, Approval: ap.ID}
	if err := RecordCall(ctx, a.Store, sessionID, turnID, ev); err != nil {
		return ApprovalRequest{}, err
	}
	if err := a.askUpTheChain(ctx, s, ev); err != nil {
		return ApprovalRequest{}, err
	}
	return ApprovalRequest{ID: ap.ID, WaitSeconds: ap.ExpiresAt.Sub(a.Now()).Seconds()}, nil
}

// ApprovalState reads an approval; a pending one past its TTL is expired.
func (a Turns) ApprovalState(ctx context.Context, id string, expire bool) (session.Approval, error) {
	ap, err := a.Store.GetApproval(ctx, id)
	if err != nil || ap.Status != session.ApprovalPending || !expire {
		return ap, err
	}
	ap, err = a.Store.DecideApproval(ctx, id, session.ApprovalExpired, nil, "no decision before the approval lapsed")
	if errors.Is(err, errdefs.ErrConflict) {
		return a.Store.GetApproval(ctx, id) // decided just now: honor the decision
	}
	return ap, err
}

// Reject records a call as rejected.
func (a Turns) Reject(ctx context.Context, sessionID, turnID string, call provider.ToolCall, reason string) error {
	return RecordCall(ctx, a.Store, sessionID, turnID, session.ToolCallData{ID: call.ID, Name: call.Name, State: session.CallRejected, Error: reason})
}

// RunTool runs an allowed or approved call. The policy is evaluated once
// more, at execution: it can harden the verdict, never soften it, and an
// approval only counts for the exact call it was given for. Errors go back
// to the model as an errored call; they never stop the session.
func (a Turns) RunTool(ctx context.Context, sessionID, turnID string, call provider.ToolCall, first policy.Decision, by session.Attribution) (ToolOutcome, error) {
	ctx, span := spans.Start(ctx, a.Tracer, turnID, "execute_tool "+a.Tools.Label(call.Name), trace.WithAttributes(attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.call.id", call.ID), attribute.String("paddock.approved_by", by.Kind)))
	out, err := a.runTool(ctx, sessionID, turnID, call, first, by)
	span.SetAttributes(attribute.String("paddock.tool_call.state", string(out.State)))
	spans.End(span, err)
	return out, err
}

func (a Turns) runTool(ctx context.Context, sessionID, turnID string, call provider.ToolCall, first policy.Decision, by session.Attribution) (ToolOutcome, error) {
	st, q, settled, err := SettledCall(ctx, a.Store, sessionID, call.ID)
	if err != nil {
		return ToolOutcome{}, err
	}
	if settled {
		return ToolOutcome{State: st, Question: q}, nil
	}
	s, sp, err := a.agentSpec(ctx, sessionID)
	if err != nil {
		return ToolOutcome{}, err
	}
	base := session.ToolCallData{ID: call.ID, Name: call.Name}
	finish := func(state session.ToolCallState, result, msg string) (ToolOutcome, error) {
		d := base
		d.State, d.Result, d.Error = state, result, msg
		if state == session.CallDone {
			d.By = &by
		}
		return ToolOutcome{State: state, Node: s.Node}, RecordCall(ctx, a.Store, sessionID, turnID, d)
	}
	p, err := policy.Pinned(s.Policy)
	if err != nil {
		return finish(session.CallRejected, "", "the policy could not be evaluated, so the call is refused: "+err.Error())
	}
	now := policy.Harden(first, p.Evaluate(call.Name, call.Args))
	switch {
	case now.Verdict == shellcheck.Refuse:
		return finish(session.CallRejected, "", "refused at execution ("+now.Rule+"): "+now.Reason)
	case by.Kind == session.ByHuman:
		ap, err := a.Store.GetApproval(ctx, by.Approval)
		if err != nil || ap.Status != session.ApprovalApproved || ap.Digest != CallDigest(call.Name, call.Args) {
			return finish(session.CallRejected, "", "the approval does not cover this exact call")
		}
		by.Note = ap.Note
	case by.Kind == session.ByAutomation && now.Verdict != shellcheck.Allow:
		return finish(session.CallRejected, "", "the call needs permission at execution ("+now.Rule+") and has none")
	case by.Kind != session.ByAutomation:
		return finish(session.CallRejected, "", "the call has no attribution (human or automation); nothing runs unattributed")
	}
	// The copy first, here and current: a call given to a node that does
	// not hold it, while its holder runs, goes back before anything of
	// it is recorded.
	if err := a.ensureCopy(ctx, &s, sp); err != nil {
		if _, ok := copies.IsElsewhere(err); ok {
			return ToolOutcome{}, err
		}
		return finish(session.CallErrored, "", err.Error())
	}
	// At most once: recording calling is the compare-and-set. An attempt
	// that finds another's run recorded (a crash interrupted it, or it
	// still runs) does not start a call with side effects again; the model
	// is told and decides. Idempotent tools simply run again.
	calling := base
	calling.State, calling.Verdict, calling.Rule, calling.By, calling.Run = session.CallCalling, now.Verdict.String(), now.Rule, &by, uuid.NewString()
	data, _ := json.Marshal(calling)
	recorded, err := a.Store.AppendEvent(ctx, session.Event{SessionID: sessionID, TurnID: turnID, Kind: session.EventToolCall, Key: "call/" + call.ID + "/" + string(session.CallCalling), Data: data})
	if err != nil {
		return ToolOutcome{}, err
	}
	var owner session.ToolCallData
	if json.Unmarshal(recorded.Data, &owner) != nil || owner.Run != calling.Run {
		// An earlier attempt still running here (Temporal gave up on it
		// on a busy machine) is waited for; its outcome stands.
		if a.flights.Await(ctx, owner.Run) {
			if st, q, settled, err := SettledCall(ctx, a.Store, sessionID, call.ID); err != nil || settled {
				return ToolOutcome{State: st, Question: q, Node: s.Node}, err
			}
		}
		if !tool.Idempotent(call.Name) {
			return finish(session.CallErrored, "", "interrupted by a restart of the server; its effects may be partial: check the working copy before going on")
		}
	}
	_ = a.Store.SetDisplay(ctx, sessionID, "", "running "+call.Name)
	stop := Heartbeat(ctx)
	defer stop()
	// The call runs to its end unless it is canceled: an attempt Temporal
	// gave up on still records its outcome, for the next attempt.
	ctx, landed := a.flights.Start(ctx, calling.Run)
	defer landed()
	start := a.Now()
	defer func() {
		_ = a.consume(context.WithoutCancel(ctx), sessionID, turnID, "run/"+call.ID, session.BudgetData{ActiveMs: a.Now().Sub(start).Milliseconds()})
	}()
	var res tool.Result
	var runErr error
	server, name, isMCP := mcpServer(sp, call.Name)
	if call.Name == tool.RunCommand || isMCP && len(server.Command) > 0 {
		// The host reads the copy only when no sandboxed process runs.
		release, err := a.Copies.Sandboxed(ctx, sessionID)
		if err != nil {
			return ToolOutcome{}, err
		}
		defer release()
	}
	if isMCP {
		res, runErr = tool.CallMCP(ctx, server, a.mcpEnv(s, sp), name, call.Args)
	} else {
		env := tool.Env{Root: s.Workdir, Shell: tool.Metered(a.Shell, a.Meter), Place: a.place(s, sp), Run: turnID + "/" + call.ID, DiskBudget: a.Copies.Budget(s.Workdir), Owner: a.Copies.UID, MaxDuration: a.CommandMax, MaxOutput: a.CommandMaxOutput}
		if a.Peers != nil {
			env.Sessions = a.Peers(s)
		}
		var creds map[string]string
		if call.Name == tool.RunCommand && len(sp.Environment.Credentials) > 0 {
			// The requester's credentials, read here (never carried through
			// workflow history) for this command's environment only.
			if creds, err = a.credentials(ctx, sessionID); err != nil {
				return finish(session.CallErrored, "", err.Error())
			}
			env.Place.Env = maps.Clone(env.Place.Env)
			if env.Place.Env == nil {
				env.Place.Env = map[string]string{}
			}
			maps.Copy(env.Place.Env, creds)
		}

		// The network the environment allows commands, through a proxy of
		// this command's own; none when it allows none.
		var ep *egressRun
		if call.Name == tool.RunCommand {
			if ep, err = a.openEgress(ctx, sessionID, turnID, "command", call.ID, sp.Environment.Network.Commands); err != nil {
				return finish(session.CallErrored, "", err.Error())
			}
			if ep != nil {
				env.Place.Egress = ep.Socket()
			}
		}
		var live *liveoutput.Live
		if call.Name == tool.RunCommand {
			live = a.startLive(ctx, sessionID, turnID, call.ID, calling.Run, creds)
			env.Live = live
		}
		// The tool's own git on the copy (search) is bounded as a command is.
		res, runErr = a.Tools.Only(sp.Tools)[call.Name].Run(a.Copies.Bounded(ctx), env, call.Args)
		if live != nil {
			live.Close()
		}
		res.Output = secret.NewValues(creds).Mask(res.Output)
		if ep != nil {
			// Every connection is recorded before the call's result, and
			// the refused ones are named in it.
			if refused := ep.close(); refused != "" {
				res.Output = strings.TrimRight(res.Output, "\n") + "\n" + refused
			}
		}
	}
	if runErr != nil {
		return finish(session.CallErrored, "", runErr.Error())
	}
	if res.Delegated != "" {
		// The call ends when the delegated session's work comes back
		// (Collect); until then it is calling, naming that session.
		d := calling
		d.Child = res.Delegated
		data, _ := json.Marshal(d)
		if _, err := a.Store.AppendEvent(ctx, session.Event{SessionID: sessionID, TurnID: turnID, Kind: session.EventToolCall, Key: "call/" + call.ID + "/delegated", Data: data}); err != nil {
			return ToolOutcome{}, err
		}
		return ToolOutcome{State: session.CallCalling, Child: res.Delegated, By: &by, Node: s.Node}, nil
	}
	if res.Archive != nil {
		// A session that owes its work cannot declare itself done.
		if sp.Delivery.Require == spec.RequireAccepted && s.Delivery != session.DeliveryAccepted && s.Delivery != session.DeliveryWaived {
			return finish(session.CallErrored, "", "this session cannot complete until its work is accepted: the person who started it reviews it "+
				"(paddock sessions diff "+sessionID+", then accept) or waives the requirement (paddock sessions waive "+sessionID+"); say so and wait")
		}
		var held *session.HeldError
		if err := a.Store.Archive(ctx, sessionID, session.Sender{Kind: session.SenderAgent, ID: sessionID}, res.Archive.Handoff); errors.As(err, &held) {
			return finish(session.CallErrored, "", "this session is bound to "+held.URL+" (held) and cannot archive itself while it is open: the forge's closing delivery (a trigger with release: true) frees it, or a person archives the session; say so and wait")
		} else if err != nil {
			return ToolOutcome{}, err
		}
	}
	if res.Question != nil {
		q := *res.Question
		q.ToolCallID = call.ID
		data, _ := json.Marshal(q)
		if _, err := a.Store.AppendEvent(ctx, session.Event{SessionID: sessionID, TurnID: turnID, Kind: session.EventQuestion, Key: "question/" + call.ID, Data: data}); err != nil {
			return ToolOutcome{}, err
		}
		return ToolOutcome{State: session.CallCalling, Question: true, Node: s.Node}, nil
	}
	if !tool.ReadOnly(call.Name) {
		_, span := spans.Start(ctx, a.Tracer, turnID, "checkpoint")
		copies.RecordStep(a.Copies.Bounded(ctx), a.Store, a.ContentKey, s, call.ID, "")
		span.End()
	}
	return finish(session.CallDone, res.Output, "")
}

// TurnCalls are the calls of a turn in the order they appeared, each in
// its latest recorded state.
func TurnCalls(ctx context.Context, st store.Store, sessionID, turnID string) ([]session.ToolCallData, error) {
	events, err := st.EventsByKey(ctx, sessionID, "call/")
	if err != nil {
		return nil, err
	}
	index := map[string]int{}
	var out []session.ToolCallData
	for _, e := range events {
		if e.TurnID != turnID || e.Kind != session.EventToolCall {
			continue
		}
		var d session.ToolCallData
		if json.Unmarshal(e.Data, &d) != nil {
			continue
		}
		if i, ok := index[d.ID]; ok {
			out[i] = d
			continue
		}
		index[d.ID] = len(out)
		out = append(out, d)
	}
	return out, nil
}

// closeOpenCalls ends the turn's calls still in an intermediate state, so a
// turn never settles with a call generating, generated, awaiting approval
// or calling: each becomes errored (canceled when awaiting approval) with
// the reason, which the model sees as the call's result. A question's call
// stays open when the turn waits for its answer.
func (a *Activities) closeOpenCalls(ctx context.Context, sessionID, turnID string, status session.TurnStatus) error {
	calls, err := TurnCalls(ctx, a.Store, sessionID, turnID)
	if err != nil {
		return err
	}
	for _, d := range calls {
		id := d.ID
		if d.State.Final() {
			continue
		}
		if status == session.TurnWaitingForInput && d.State == session.CallCalling {
			if _, q, _, err := SettledCall(ctx, a.Store, sessionID, id); err != nil || q {
				if err != nil {
					return err
				}
				continue
			}
		}
		to := session.CallErrored
		if d.State.Transition(to) != nil {
			to = session.CallCanceled
		}
		d.State, d.Result, d.Args = to, "", nil
		d.Error = fmt.Sprintf("the turn ended (%s) before this call finished", status)
		if err := RecordCall(ctx, a.Store, sessionID, turnID, d); err != nil {
			return err
		}
	}
	return nil
}

// startLive begins recording the output of call (run names this attempt,
// so two attempts never share keys).
func (a *Activities) startLive(ctx context.Context, sessionID, turnID, callID, run string, creds map[string]string) *liveoutput.Live {
	return liveoutput.New(callID, creds, func(seq int, d session.OutputData) {
		data, _ := json.Marshal(d)
		_, _ = a.Store.AppendEvent(ctx, session.Event{SessionID: sessionID, TurnID: turnID, Kind: session.EventOutput,
			Key: "output/" + callID + "/" + run + "/" + strconv.Itoa(seq), Data: data})
	})
}
