package terminal

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/paddock-dev/paddock/internal/session"
)

// Attach takes a session back at the terminal: its transcript so far,
// then what it waits on now (approvals, an open question, the next
// message), then its transcript live, Ctrl-C handled as in Follow.
func (f *Follower) Attach(ctx context.Context) error {
	c, id := f.Client, f.ID
	x, err := c.Sessions().Get(ctx, id)
	if err != nil {
		return err
	}
	events, err := c.Sessions().Events(ctx, id, 0)
	if err != nil {
		return err
	}
	r := NewRenderer(f.Out, false, false)
	f.Interactive, f.Converse = true, true
	waiting := map[string]session.ToolCallData{} // by approval
	open := map[string]session.Question{}        // by call
	var children []session.ChildApproval         // the calls its delegated sessions asked
	for _, e := range events {
		r.Event(e)
		f.After = e.Seq
		switch e.Kind {
		case session.EventToolCall:
			var d session.ToolCallData
			if json.Unmarshal(e.Data, &d) == nil && d.State == session.CallAwaitingApproval {
				waiting[d.Approval] = d
			}
		case session.EventChildApproval:
			var d session.ChildApproval
			if json.Unmarshal(e.Data, &d) == nil {
				children = append(children, d)
			}
		case session.EventQuestion:
			var q session.Question
			if json.Unmarshal(e.Data, &q) == nil {
				open[q.ToolCallID] = q
			}
		case session.EventAnswer:
			var a session.AnswerPayload
			if json.Unmarshal(e.Data, &a) == nil {
				delete(open, a.ToolCallID)
			}
		}
	}
	r.Line("")
	if x.Status.Terminal() {
		return &ExitError{Code: 1, Msg: fmt.Sprintf("session %s is %s: there is nothing to attach to", id, x.Status)}
	}
	fmt.Fprintf(f.Out, "attached to session %s (%s); Ctrl-C interrupts the turn, twice detaches\n", id, x.Status)
	pending, err := c.Gates().Approvals(ctx, session.ApprovalFilter{SessionID: id, Status: session.ApprovalPending})
	if err != nil {
		return err
	}
	delegated, err := stillPending(ctx, f, children)
	if err != nil {
		return err
	}
	// What the session waits on now is asked first, Ctrl-C already
	// handled as everywhere in attach.
	return f.Follow(ctx, func(ctx context.Context) error {
		asked := false
		for _, ap := range pending {
			if d, ok := waiting[ap.ID]; ok {
				asked = true
				if err := f.approve(ctx, r, id, d); err != nil {
					return err
				}
			}
		}
		for _, d := range delegated {
			asked = true
			if err := f.approve(ctx, r, d.Session, d.Call); err != nil {
				return err
			}
		}
		for _, q := range open {
			if x.Status == session.StatusAwaiting {
				asked = true
				if err := f.answer(ctx, r, q); err != nil {
					return err
				}
			}
		}
		if !asked && x.Status == session.StatusAwaiting {
			return f.next(ctx, r)
		}
		return nil
	})
}

// stillPending keeps, of the calls the session's delegated sessions
// asked (in the order they asked), those still waiting for a decision.
func stillPending(ctx context.Context, f *Follower, asked []session.ChildApproval) ([]session.ChildApproval, error) {
	pending := map[string]bool{} // approval IDs
	seen := map[string]bool{}    // sessions asked about
	for _, d := range asked {
		if seen[d.Session] {
			continue
		}
		seen[d.Session] = true
		list, err := f.Client.Gates().Approvals(ctx, session.ApprovalFilter{SessionID: d.Session, Status: session.ApprovalPending})
		if err != nil {
			return nil, err
		}
		for _, a := range list {
			pending[a.ID] = true
		}
	}
	var out []session.ChildApproval
	for _, d := range asked {
		if pending[d.Call.Approval] {
			out = append(out, d)
			delete(pending, d.Call.Approval)
		}
	}
	return out, nil
}
