package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store"
)

const commandCols = `id, session_id, seq, kind, payload, state, sender, idempotency_key, turn_id, error, created_at, updated_at`

func scanCommand(row scanner) (session.Command, error) {
	var c session.Command
	var payload, sender, created, updated string
	if err := row.Scan(&c.ID, &c.SessionID, &c.Seq, &c.Kind, &payload, &c.State, &sender, &c.IdempotencyKey, &c.TurnID, &c.Error, &created, &updated); err != nil {
		return c, err
	}
	c.Payload = json.RawMessage(payload)
	_ = json.Unmarshal([]byte(sender), &c.Sender)
	c.CreatedAt, c.UpdatedAt = parseTime(created), parseTime(updated)
	return c, nil
}

func (s *base) insertCommand(ctx context.Context, tx *txn, in store.NewCommand, state session.CommandState) (session.Command, error) {
	if len(in.Payload) == 0 {
		in.Payload = json.RawMessage("{}")
	}
	var seq int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) + 1 FROM commands WHERE session_id = ?`, in.SessionID).Scan(&seq); err != nil {
		return session.Command{}, err
	}
	sender, _ := json.Marshal(in.Sender)
	now := s.ts()
	_, err := tx.ExecContext(ctx, `INSERT INTO commands (id, session_id, seq, kind, payload, state, sender, idempotency_key, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, in.ID, in.SessionID, seq, in.Kind, string(in.Payload), state, string(sender), in.IdempotencyKey, now, now)
	if err != nil {
		return session.Command{}, err
	}
	c, err := scanCommand(tx.QueryRowContext(ctx, `SELECT `+commandCols+` FROM commands WHERE id = ?`, in.ID))
	if err != nil {
		return c, err
	}
	return c, s.commandEvent(ctx, tx, c)
}

func (s *base) commandEvent(ctx context.Context, tx *txn, c session.Command) error {
	return s.appendJSON(ctx, tx, c.SessionID, c.TurnID, session.EventCommand, "command/"+c.ID+"/"+string(c.State),
		session.CommandData{ID: c.ID, Kind: c.Kind, State: c.State, Sender: c.Sender, Error: c.Error})
}

// AppendCommand implements store.Store.
func (s Commands) AppendCommand(ctx context.Context, in store.NewCommand) (session.Command, bool, error) {
	if in.IdempotencyKey == "" {
		in.IdempotencyKey = in.ID
	}
	var out session.Command
	created := false
	err := s.tx(ctx, func(tx *txn) error {
		cur, err := s.getSession(ctx, tx, in.SessionID)
		if err != nil {
			return err
		}
		existing, err := scanCommand(tx.QueryRowContext(ctx, `SELECT `+commandCols+` FROM commands WHERE session_id = ? AND idempotency_key = ?`, in.SessionID, in.IdempotencyKey))
		if err == nil {
			out = existing
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if cur.Status.Terminal() {
			return &errdefs.TerminalError{SessionID: cur.ID, Status: string(cur.Status)}
		}
		if in.Kind.BringsWork() && cur.ArchivedAt != nil {
			if _, err := tx.ExecContext(ctx, `UPDATE sessions SET archived_at = NULL, updated_at = ? WHERE id = ?`, s.ts(), cur.ID); err != nil {
				return err
			}
		}
		state := session.CommandPending
		if in.Held {
			state = session.CommandHeld
		}
		out, err = s.insertCommand(ctx, tx, in, state)
		created = err == nil
		return err
	})
	if err != nil {
		return out, false, fmt.Errorf("append command: %w", err)
	}
	s.notify(in.SessionID)
	return out, created, nil
}

// GetCommand implements store.Store.
func (s Commands) GetCommand(ctx context.Context, id string) (session.Command, error) {
	c, err := scanCommand(s.db.QueryRowContext(ctx, `SELECT `+commandCols+` FROM commands WHERE id = ?`, id))
	if err != nil {
		return c, notFound("command", id, err)
	}
	return c, nil
}

func (s *base) queryCommands(ctx context.Context, q queryer, where string, args ...any) ([]session.Command, error) {
	return queryAll(ctx, q, scanCommand, `SELECT `+commandCols+` FROM commands WHERE `+where+` ORDER BY seq`, args...)
}

// ListCommands implements store.Store.
func (s Commands) ListCommands(ctx context.Context, sessionID string) ([]session.Command, error) {
	out, err := s.queryCommands(ctx, s.db, `session_id = ?`, sessionID)
	return out, wrap(err, "list commands")
}

// Unfinished implements store.Store.
func (s Commands) Unfinished(ctx context.Context) ([]string, error) {
	out, err := queryAll(ctx, s.db, func(r scanner) (id string, err error) { return id, r.Scan(&id) },
		`SELECT DISTINCT c.session_id FROM commands c JOIN sessions x ON x.id = c.session_id
		WHERE c.state IN ('pending', 'dispatching', 'held') AND x.status IN ('queued', 'running', 'awaiting') ORDER BY c.session_id`)
	return out, wrap(err, "sessions with unfinished commands")
}

// ClaimBatch implements store.Store.
func (s Commands) ClaimBatch(ctx context.Context, sessionID string) ([]session.Command, error) {
	var batch []session.Command
	err := s.tx(ctx, func(tx *txn) error {
		cur, err := s.getSession(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		inFlight, err := s.queryCommands(ctx, tx, `session_id = ? AND state = 'dispatching'`, sessionID)
		if err != nil || len(inFlight) > 0 {
			batch = inFlight
			return err
		}
		if cur.Status.Terminal() {
			return nil
		}
		pending, err := s.queryCommands(ctx, tx, `session_id = ? AND state = 'pending' AND kind NOT IN ('pause', 'resume', 'cancel')`, sessionID)
		if err != nil {
			return err
		}
		if cur.Held() {
			// A held session runs nothing but a stop, which always goes through.
			pending = slices.DeleteFunc(pending, func(c session.Command) bool { return c.Kind != session.KindStop })
		}
		// The session's last turn, still open: a claim whose workflow task a
		// crash lost opened it, and its workflow claims again. It resumes,
		// unless a hold freezes it, or a stop or an interrupt waits: that
		// ends it, as it would have ended it running.
		open, err := s.queryCommands(ctx, tx, `session_id = ? AND state = 'accepted' AND turn_id IN (SELECT id FROM turns t WHERE t.session_id = ?
			AND t.status IN ('accepted', 'in_progress') AND t.seq = (SELECT MAX(seq) FROM turns WHERE session_id = t.session_id))`, sessionID, sessionID)
		if err != nil {
			return err
		}
		end := slices.IndexFunc(pending, func(c session.Command) bool { return c.Kind == session.KindStop || c.Kind == session.KindInterrupt })
		switch {
		case len(open) > 0 && end < 0 && !cur.Held():
			batch = open
			return nil
		case len(open) > 0 && end >= 0:
			if _, err := s.settleTurn(ctx, tx, open[0].TurnID, session.TurnFailed, session.ScopeTurn, "interrupted (command "+pending[end].ID+")"); err != nil {
				return err
			}
			if c := pending[end]; c.Kind == session.KindInterrupt {
				c.State = session.CommandAccepted // what it interrupted is done
				pending = slices.Delete(pending, end, end+1)
				if err := s.setCommand(ctx, tx, c); err != nil {
					return err
				}
			}
		}
		if i := slices.IndexFunc(pending, func(c session.Command) bool { return c.Kind == session.KindStop }); i >= 0 {
			// A stop wins: nothing queued before or after it runs.
			stop := pending[i]
			for _, c := range pending {
				if c.ID == stop.ID {
					continue
				}
				c.State, c.Error = session.CommandCanceled, "the session was stopped (command "+stop.ID+")"
				if err := s.setCommand(ctx, tx, c); err != nil {
					return err
				}
			}
			pending = []session.Command{stop}
		}
		batch = session.NextBatch(pending)
		for i := range batch {
			batch[i].State = session.CommandDispatching
			if err := s.setCommand(ctx, tx, batch[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim commands: %w", err)
	}
	if len(batch) > 0 {
		s.notify(sessionID)
	}
	return batch, nil
}

// setCommand writes command c's state, error and turn, and records the
// change in its session's transcript.
func (s *base) setCommand(ctx context.Context, tx *txn, c session.Command) error {
	if _, err := tx.ExecContext(ctx, `UPDATE commands SET state = ?, error = ?, turn_id = ?, updated_at = ? WHERE id = ?`, c.State, c.Error, c.TurnID, s.ts(), c.ID); err != nil {
		return err
	}
	return s.commandEvent(ctx, tx, c)
}

// SettleCommands implements store.Store.
func (s Commands) SettleCommands(ctx context.Context, ids []string, state session.CommandState, errMsg string) error {
	if len(ids) == 0 {
		return nil
	}
	var sessionID string
	err := s.tx(ctx, func(tx *txn) error {
		ph := strings.Repeat(",?", len(ids))[1:]
		args := make([]any, len(ids))
		for i, id := range ids {
			args[i] = id
		}
		cmds, err := s.queryCommands(ctx, tx, `id IN (`+ph+`)`, args...)
		if err != nil {
			return err
		}
		for _, c := range cmds {
			sessionID = c.SessionID
			if c.State == state || c.State == session.CommandAccepted || c.State == session.CommandFailed || c.State == session.CommandCanceled {
				continue
			}
			c.State, c.Error = state, errMsg
			if err := s.setCommand(ctx, tx, c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("settle commands: %w", err)
	}
	s.notify(sessionID)
	return nil
}

// HeldDeliveries implements store.Store.
func (s Commands) HeldDeliveries(ctx context.Context, sessionID string) ([]session.Command, error) {
	out, err := s.queryCommands(ctx, s.db, `session_id = ? AND state = 'held' AND `+s.d.JSONText("sender", "kind")+` = 'trigger'`, sessionID)
	return out, wrap(err, "held deliveries")
}

// AbsorbDeliveries implements store.Store.
func (s Commands) AbsorbDeliveries(ctx context.Context, ids []string, into store.NewCommand) (session.Command, error) {
	if into.IdempotencyKey == "" {
		into.IdempotencyKey = into.ID
	}
	var out session.Command
	err := s.tx(ctx, func(tx *txn) error {
		existing, err := scanCommand(tx.QueryRowContext(ctx, `SELECT `+commandCols+` FROM commands WHERE session_id = ? AND idempotency_key = ?`, into.SessionID, into.IdempotencyKey))
		if err == nil {
			out = existing
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		cur, err := s.getSession(ctx, tx, into.SessionID)
		if err != nil {
			return err
		}
		if cur.Status.Terminal() {
			return &errdefs.TerminalError{SessionID: cur.ID, Status: string(cur.Status)}
		}
		if out, err = s.insertCommand(ctx, tx, into, session.CommandPending); err != nil {
			return err
		}
		for _, id := range ids {
			res, err := tx.ExecContext(ctx, `UPDATE commands SET state = ?, error = ?, updated_at = ? WHERE id = ? AND session_id = ? AND state = 'held'`,
				session.CommandAccepted, "absorbed into "+out.ID, s.ts(), id, into.SessionID)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n != 1 {
				return fmt.Errorf("delivery %s is no longer held: %w", id, errdefs.ErrConflict)
			}
			c, err := scanCommand(tx.QueryRowContext(ctx, `SELECT `+commandCols+` FROM commands WHERE id = ?`, id))
			if err != nil {
				return err
			}
			if err := s.commandEvent(ctx, tx, c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("absorb deliveries: %w", err)
	}
	s.notify(into.SessionID)
	return out, nil
}

// RecordDelivery implements store.Store.
func (s Commands) RecordDelivery(ctx context.Context, trigger, key string, result json.RawMessage) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO deliveries (trigger_ref, key, result, seen_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (trigger_ref, key) DO NOTHING`, trigger, key, string(result), s.ts())
	if err != nil {
		return fmt.Errorf("record delivery %s of trigger %s: %w", key, trigger, err)
	}
	return nil
}

// Delivery implements store.Store.
func (s Commands) Delivery(ctx context.Context, trigger, key string) (json.RawMessage, error) {
	var result string
	err := s.db.QueryRowContext(ctx, `SELECT result FROM deliveries WHERE trigger_ref = ? AND key = ?`, trigger, key).Scan(&result)
	if err != nil {
		return nil, notFound("delivery", trigger+" "+key, err)
	}
	return json.RawMessage(result), nil
}
