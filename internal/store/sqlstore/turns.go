package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spans"
)

const turnCols = `id, session_id, seq, status, failure_scope, error, command_ids, created_at, updated_at`

func scanTurn(row scanner) (session.Turn, error) {
	var t session.Turn
	var ids, created, updated string
	if err := row.Scan(&t.ID, &t.SessionID, &t.Seq, &t.Status, &t.FailureScope, &t.Error, &ids, &created, &updated); err != nil {
		return t, err
	}
	_ = json.Unmarshal([]byte(ids), &t.CommandIDs)
	t.CreatedAt, t.UpdatedAt = parseTime(created), parseTime(updated)
	return t, nil
}

func (s *base) turnEvent(ctx context.Context, tx *txn, t session.Turn) error {
	return s.appendJSON(ctx, tx, t.SessionID, t.ID, session.EventTurn, "turn/"+t.ID+"/"+string(t.Status), session.TurnData{Status: t.Status, FailureScope: t.FailureScope, Error: t.Error, TraceID: spans.TraceID(t.ID)})
}

// OpenTurn implements store.Store.
func (s Turns) OpenTurn(ctx context.Context, turnID, sessionID string, commandIDs []string) (session.Turn, error) {
	var t session.Turn
	err := s.tx(ctx, func(tx *txn) error {
		var err error
		t, err = scanTurn(tx.QueryRowContext(ctx, `SELECT `+turnCols+` FROM turns WHERE id = ?`, turnID))
		if err == nil {
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		cur, err := s.getSession(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		var seq int64
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) + 1 FROM turns WHERE session_id = ?`, sessionID).Scan(&seq); err != nil {
			return err
		}
		ids, _ := json.Marshal(commandIDs)
		now := s.ts()
		if _, err := tx.ExecContext(ctx, `INSERT INTO turns (id, session_id, seq, status, command_ids, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			turnID, sessionID, seq, session.TurnAccepted, string(ids), now, now); err != nil {
			return err
		}
		t, err = scanTurn(tx.QueryRowContext(ctx, `SELECT `+turnCols+` FROM turns WHERE id = ?`, turnID))
		if err != nil {
			return err
		}
		for _, id := range commandIDs {
			c, err := scanCommand(tx.QueryRowContext(ctx, `SELECT `+commandCols+` FROM commands WHERE id = ?`, id))
			if err != nil {
				return notFound("command", id, err)
			}
			c.State, c.TurnID = session.CommandAccepted, turnID
			if err := s.setCommand(ctx, tx, c); err != nil {
				return err
			}
		}
		if err := s.turnEvent(ctx, tx, t); err != nil {
			return err
		}
		return s.setStatus(ctx, tx, sessionID, session.StatusAfterTurn(cur.Status, t.Status, ""), "", "")
	})
	if err != nil {
		return t, fmt.Errorf("open turn: %w", err)
	}
	s.notify(sessionID)
	return t, nil
}

// SetTurnStatus implements store.Store.
func (s Turns) SetTurnStatus(ctx context.Context, turnID string, status session.TurnStatus, scope session.FailureScope, errMsg string) error {
	var sessionID string
	err := s.tx(ctx, func(tx *txn) (err error) {
		sessionID, err = s.settleTurn(ctx, tx, turnID, status, scope, errMsg)
		return err
	})
	if err != nil {
		return fmt.Errorf("set turn status: %w", err)
	}
	s.notify(sessionID)
	return nil
}

// settleTurn sets turn turnID's status, and its session's as the turn
// leaves it; it says whose turn it is.
func (s *base) settleTurn(ctx context.Context, tx *txn, turnID string, status session.TurnStatus, scope session.FailureScope, errMsg string) (string, error) {
	t, err := scanTurn(tx.QueryRowContext(ctx, `SELECT `+turnCols+` FROM turns WHERE id = ?`, turnID))
	if err != nil {
		return "", notFound("turn", turnID, err)
	}
	if t.Status == status {
		return t.SessionID, nil
	}
	t.Status, t.FailureScope, t.Error = status, scope, errMsg
	if _, err := tx.ExecContext(ctx, `UPDATE turns SET status = ?, failure_scope = ?, error = ?, updated_at = ? WHERE id = ?`,
		status, scope, errMsg, s.ts(), turnID); err != nil {
		return "", err
	}
	if err := s.turnEvent(ctx, tx, t); err != nil {
		return "", err
	}
	cur, err := s.getSession(ctx, tx, t.SessionID)
	if err != nil {
		return "", err
	}
	return t.SessionID, s.setStatus(ctx, tx, t.SessionID, session.StatusAfterTurn(cur.Status, status, scope), "", errMsg)
}

// GetTurn implements store.Store.
func (s Turns) GetTurn(ctx context.Context, id string) (session.Turn, error) {
	t, err := scanTurn(s.db.QueryRowContext(ctx, `SELECT `+turnCols+` FROM turns WHERE id = ?`, id))
	if err != nil {
		return t, notFound("turn", id, err)
	}
	return t, nil
}

// ListTurns implements store.Store.
func (s Turns) ListTurns(ctx context.Context, sessionID string) ([]session.Turn, error) {
	out, err := queryAll(ctx, s.db, scanTurn, `SELECT `+turnCols+` FROM turns WHERE session_id = ? ORDER BY seq`, sessionID)
	return out, wrap(err, "list turns")
}

// RecordUsage implements store.Store.
func (s Turns) RecordUsage(ctx context.Context, sessionID, turnID string, step int, model string, u session.Usage) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO usage (session_id, turn_id, step, model, input_tokens, output_tokens, thinking_tokens, cost_usd, reasoning_effort, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, sessionID, turnID, step, model, u.InputTokens, u.OutputTokens, u.ThinkingTokens, u.CostUSD, u.ReasoningEffort, s.ts())
	return wrap(err, "record usage")
}

// SessionUsage implements store.Store.
func (s Turns) SessionUsage(ctx context.Context, sessionID string) (session.SessionUsage, error) {
	out := session.SessionUsage{Turns: map[string]session.Usage{}}
	// Step by step, in order: a turn's effort is its last step's.
	rows, err := s.db.QueryContext(ctx, `SELECT turn_id, input_tokens, output_tokens, thinking_tokens, cost_usd, reasoning_effort FROM usage
		WHERE session_id = ? ORDER BY created_at, step`, sessionID)
	if err != nil {
		return out, fmt.Errorf("session usage: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var turn string
		var u session.Usage
		if err := rows.Scan(&turn, &u.InputTokens, &u.OutputTokens, &u.ThinkingTokens, &u.CostUSD, &u.ReasoningEffort); err != nil {
			return out, fmt.Errorf("session usage: %w", err)
		}
		out.Turns[turn] = out.Turns[turn].Add(u)
		out.Usage = out.Usage.Add(u)
	}
	return out, rows.Err()
}
