// Package redacted is a store that never writes a detected secret.
package redacted

import (
	"context"
	"encoding/json"

	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/secret"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store"
)

// Store is a store that never writes a detected secret: every free text it
// is handed (messages and other command payloads, transcript events, tool
// calls awaiting approval, titles, reasons, notes, handoffs, park details)
// and the labels and keys operators choose (hold reasons, token labels,
// idempotency keys) is redacted before the inner store sees it. Everything read back (the
// transcript, the SSE stream, the audit log built from events) is therefore
// redacted too, and so is the conversation rebuilt from the transcript: a
// credential that appeared in a tool's output is not sent back to the model.
type Store struct {
	store.Store
}

func text(s string) string { out, _ := secret.Redact(s); return out }

func doc(raw json.RawMessage) json.RawMessage { out, _ := secret.RedactJSON(raw); return out }

func command(c store.NewCommand) store.NewCommand {
	c.Payload, c.IdempotencyKey = doc(c.Payload), text(c.IdempotencyKey)
	return c
}

func (s Store) CreateSession(ctx context.Context, in store.NewSession) (session.Session, bool, error) {
	in.DisplayTitle, in.Input, in.StartPayload, in.IdempotencyKey = text(in.DisplayTitle), text(in.Input), doc(in.StartPayload), text(in.IdempotencyKey)
	if in.AwaitStart != nil {
		p := *in.AwaitStart
		p.Detail = text(p.Detail)
		in.AwaitStart = &p
	}
	return s.Store.CreateSession(ctx, in)
}

func (s Store) AppendCommand(ctx context.Context, c store.NewCommand) (session.Command, bool, error) {
	return s.Store.AppendCommand(ctx, command(c))
}

func (s Store) AbsorbDeliveries(ctx context.Context, ids []string, into store.NewCommand) (session.Command, error) {
	return s.Store.AbsorbDeliveries(ctx, ids, command(into))
}

func (s Store) AppendEvent(ctx context.Context, e session.Event) (session.Event, error) {
	e.Data, e.Key = doc(e.Data), text(e.Key)
	return s.Store.AppendEvent(ctx, e)
}

func (s Store) CreateApproval(ctx context.Context, a session.Approval) (session.Approval, error) {
	a.Args, a.Reason, a.Tool, a.ToolCallID = doc(a.Args), text(a.Reason), text(a.Tool), text(a.ToolCallID)
	return s.Store.CreateApproval(ctx, a)
}

func (s Store) DecideApproval(ctx context.Context, id string, st session.ApprovalStatus, by *session.Sender, note string) (session.Approval, error) {
	return s.Store.DecideApproval(ctx, id, st, by, text(note))
}

func (s Store) SetDisplay(ctx context.Context, id, title, ambient string) error {
	return s.Store.SetDisplay(ctx, id, text(title), text(ambient))
}

func (s Store) FailSession(ctx context.Context, id, errMsg string) error {
	return s.Store.FailSession(ctx, id, text(errMsg))
}

func (s Store) StopSession(ctx context.Context, id string, p session.StopPayload) error {
	p.Reason, p.Handoff = text(p.Reason), text(p.Handoff)
	return s.Store.StopSession(ctx, id, p)
}

func (s Store) Deliver(ctx context.Context, id, base, next, delivery string, by session.Sender, note string) error {
	return s.Store.Deliver(ctx, id, base, next, delivery, by, text(note))
}

func (s Store) Archive(ctx context.Context, id string, by session.Sender, handoff string) error {
	return s.Store.Archive(ctx, id, by, text(handoff))
}

func (s Store) SettleCommands(ctx context.Context, ids []string, st session.CommandState, errMsg string) error {
	return s.Store.SettleCommands(ctx, ids, st, text(errMsg))
}

func (s Store) SetTurnStatus(ctx context.Context, turnID string, st session.TurnStatus, scope session.FailureScope, errMsg string) error {
	return s.Store.SetTurnStatus(ctx, turnID, st, scope, text(errMsg))
}

func (s Store) OpenPark(ctx context.Context, p session.Park, recovery store.NewCommand) (session.Park, bool, error) {
	p.Detail = text(p.Detail)
	return s.Store.OpenPark(ctx, p, command(recovery))
}

func (s Store) ResolvePark(ctx context.Context, id, resolution string, by *session.Sender, note string) (session.Park, error) {
	return s.Store.ResolvePark(ctx, id, resolution, by, text(note))
}

func (s Store) SetHold(ctx context.Context, id string, h *session.Hold) error {
	if h != nil {
		held := *h
		held.Reason = text(held.Reason)
		h = &held
	}
	return s.Store.SetHold(ctx, id, h)
}

func (s Store) CreateToken(ctx context.Context, t identity.Token) (identity.Token, error) {
	t.Label = text(t.Label)
	return s.Store.CreateToken(ctx, t)
}

// AddAttachment redacts the file's name (its text content arrives
// redacted, and sealed).
func (s Store) AddAttachment(ctx context.Context, a session.Attachment, sealed []byte, maxStaged int64) error {
	a.Name = text(a.Name)
	return s.Store.AddAttachment(ctx, a, sealed, maxStaged)
}
