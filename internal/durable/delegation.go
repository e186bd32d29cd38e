package durable

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/google/uuid"

	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/paddock-dev/paddock/internal/copies"
	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/tool"
)

// A delegated session (the delegate tool) works for the session that
// delegated it: its copy is a fork of that session's copy (fork), it
// tells that session's workflow when its turn settles or it ends
// (tellParent), and that session's call collects it (Collect): its
// changes written into the delegating copy, its consumption charged to
// the delegating budget, its report returned as the call's result, and
// the delegated session stopped. A stopped or interrupted delegating
// session stops the sessions it delegated (stopChildren).

// DelegatedKey begins the key of a delegated session's consumption charged
// to its delegating session (budget/delegate/TURN/CALL): a delegation
// whose charge is there is collected.
const DelegatedKey = "delegate/"

// The keys of the stops the platform sends a delegated session: its
// work collected (then its ID), its delegating session ended (then that
// session's ID). Reserved: no caller's command may take them first.
const (
	CollectedKey = "delegated/"
	StoppedKey   = "stopped/"
)

// fork makes dir, the copy of a session delegated by parentID, a fork
// of that session's copy as it is now (copies.Set.Fork).
func (a *Activities) fork(ctx context.Context, parentID, dir string) (string, error) {
	p, err := a.Store.GetSession(ctx, parentID)
	if err != nil {
		return "", err
	}
	detail, err := a.Copies.Fork(ctx, p, dir)
	if errors.Is(err, copies.ErrNotHere) {
		if alive, aerr := a.nodeAlive(ctx, p.Node); aerr == nil && alive {
			return "", copies.Elsewhere(p.Node) // the work goes there
		}
		return "", nonRetryable(err)
	}
	return detail, err
}

// nodeAlive says whether node serves now.
func (a *Activities) nodeAlive(ctx context.Context, node string) (bool, error) {
	if node == "" || node == a.Copies.Node || a.Copies.Alive == nil {
		return false, nil
	}
	return a.Copies.Alive(ctx, node)
}

// CopyHome is the node session id's copy is to be made on: a delegated
// session's is its delegating session's node (its copy is forked from
// that one's), "" (any node) for every other.
func (a Lifecycle) CopyHome(ctx context.Context, id string) (string, error) {
	s, err := a.Store.GetSession(ctx, id)
	if err != nil {
		return "", err
	}
	parent, _ := s.Delegated()
	if parent == "" {
		return "", nil
	}
	p, err := a.Store.GetSession(ctx, parent)
	return p.Node, err
}

// tellParent tells the session that delegated session id, if any, that
// id's turn settled or it ended: its call may collect it. Best effort:
// the delegating session also looks on its own.
func (a *Activities) tellParent(ctx context.Context, id string) {
	if a.Returned == nil {
		return
	}
	s, err := a.Store.GetSession(ctx, id)
	if err != nil {
		return
	}
	if parent, _ := s.Delegated(); parent != "" {
		_ = a.Returned(context.WithoutCancel(ctx), parent, id)
	}
}

// stopChildren stops the live sessions session id delegated: their work
// goes nowhere now. by is who ended id's work.
func (a *Activities) stopChildren(ctx context.Context, id string, by session.Sender, why string) error {
	x, err := a.Store.GetSession(ctx, id)
	if err != nil {
		return err
	}
	started, err := store.Started(ctx, a.Store, x)
	for _, c := range started {
		if parent, _ := c.Delegated(); parent == id && err == nil {
			err = a.endChild(ctx, c, by, StoppedKey+id, why)
		}
	}
	return err
}

// endChild sends delegated session c a stop (once per key) and wakes it.
func (a *Activities) endChild(ctx context.Context, c session.Session, by session.Sender, key, why string) error {
	if c.Status.Terminal() {
		return nil
	}
	payload, _ := json.Marshal(session.StopPayload{Reason: why})
	cmd, created, err := a.Store.AppendCommand(ctx, store.NewCommand{ID: uuid.NewString(), SessionID: c.ID, Kind: session.KindStop,
		Payload: payload, Sender: by, IdempotencyKey: key})
	if err != nil || !created && cmd.State != session.CommandPending || a.Wake == nil {
		return err
	}
	return a.Wake(context.WithoutCancel(ctx), c.ID, cmd.ID, session.KindStop)
}

// Collect collects the session a delegate call of session sessionID
// started, once its work is done: done is false while it still works.
func (a Turns) Collect(ctx context.Context, sessionID, turnID string, call provider.ToolCall, child string, by session.Attribution) (done bool, err error) {
	if _, _, settled, err := SettledCall(ctx, a.Store, sessionID, call.ID); err != nil || settled {
		return settled, err
	}
	c, err := a.Store.GetSession(ctx, child)
	if err != nil {
		return false, err
	}
	ended, text, err := a.returned(ctx, c)
	if err != nil || !ended {
		return false, err
	}
	s, sp, err := a.agentSpec(ctx, sessionID)
	if err != nil {
		return false, err
	}
	if err := a.ensureCopy(ctx, &s, sp); err != nil {
		return false, err
	}
	rep := tool.Report{Session: c.ID, Status: string(c.Status), Report: text}
	if s.Workdir != "" && c.Workdir != "" && c.BaseCommit != "" {
		if err := a.deliver(ctx, s, c, &rep); err != nil {
			return false, err
		}
		copies.RecordStep(a.Copies.Bounded(ctx), a.Store, a.ContentKey, s, call.ID, "")
	}
	used, err := ConsumptionOf(ctx, a.Store, c, a.Now())
	if err != nil {
		return false, err
	}
	if err := a.consume(ctx, sessionID, turnID, DelegatedKey+turnID+"/"+call.ID, session.BudgetData{Actions: used.Actions, ActiveMs: used.Active.Milliseconds(),
		Tokens: used.Tokens, SpendUSD: used.SpendUSD}); err != nil {
		return false, err
	}
	r := s.CreatedBy.Requester()
	agent := session.Sender{Kind: session.SenderAgent, ID: s.ID, Via: session.ViaDelegate + turnID + "/" + call.ID, OnBehalfOf: &r}
	if err := a.endChild(ctx, c, agent, CollectedKey+c.ID, "its work went back to session "+s.ID); err != nil {
		return false, err
	}
	d := session.ToolCallData{ID: call.ID, Name: call.Name, State: session.CallDone, Result: rep.Text(), Child: c.ID, By: &by}
	return true, RecordCall(ctx, a.Store, sessionID, turnID, d)
}

// deliver writes delegated session c's work into s's copy
// (copies.Set.Deliver), saying in rep what it applied and what not.
func (a *Activities) deliver(ctx context.Context, s, c session.Session, rep *tool.Report) error {
	applied, conflicts, skipped, err := a.Copies.Deliver(ctx, c, s)
	rep.Applied, rep.Conflicts = applied, conflicts
	switch {
	case errors.Is(err, copies.ErrNotHere):
		rep.Problem = err.Error() + ": none of its work was applied"
	case err != nil:
		rep.Problem = "its work could not all be applied: " + err.Error()
	case len(skipped) > 0:
		rep.Problem = "not carried: " + strings.Join(skipped, "; ")
	}
	return nil
}

// returned says whether delegated session c is done with its task, and
// what it says (session.Returned).
func (a *Activities) returned(ctx context.Context, c session.Session) (bool, string, error) {
	if c.Status == session.StatusQueued || c.Status == session.StatusRunning {
		return false, "", nil
	}
	turns, err1 := a.Store.ListTurns(ctx, c.ID)
	open, err2 := a.Store.ListParks(ctx, c.ID, true)
	cmds, err3 := a.Store.ListCommands(ctx, c.ID)
	events, err4 := a.transcripts.Events(ctx, a.Store, c.ID)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return false, "", err
	}
	done, text := session.Returned(c, turns, len(open), cmds, events, tool.MaxReport)
	return done, text, nil
}

// askUpTheChain tells every session that delegated s, up to the first,
// that s's call waits for a person's approval: whoever follows one of
// them is asked for it too. Once per approval.
func (a *Activities) askUpTheChain(ctx context.Context, s session.Session, call session.ToolCallData) error {
	var chain []session.Session
	for up, n := s, 0; n < 4; n++ {
		parent, _ := up.Delegated()
		if parent == "" {
			break
		}
		p, err := a.Store.GetSession(ctx, parent)
		if err != nil {
			return err
		}
		chain = append([]session.Session{p}, chain...)
		up = p
	}
	ids := make([]string, len(chain))
	for i, p := range chain {
		ids[i] = p.ID
	}
	data, _ := json.Marshal(session.ChildApproval{Session: s.ID, Chain: ids, Task: clip.String(s.Input, 300), Call: call})
	for _, p := range chain {
		if _, err := a.Store.AppendEvent(ctx, session.Event{SessionID: p.ID, Kind: session.EventChildApproval, Key: "child-approval/" + call.Approval, Data: data}); err != nil {
			return err
		}
	}
	return nil
}
