package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/paddock-dev/paddock/internal/session"
)

// AppendEvent implements store.Store.
func (s Events) AppendEvent(ctx context.Context, e session.Event) (session.Event, error) {
	var out session.Event
	err := s.tx(ctx, func(tx *txn) error {
		var err error
		out, err = s.appendEvent(ctx, tx, e)
		return err
	})
	if err != nil {
		return session.Event{}, fmt.Errorf("append event: %w", err)
	}
	s.notify(e.SessionID)
	return out, nil
}

// appendEvent adds e unless an event with its key exists, in which case the
// existing one is returned. An empty key gets a fresh unique one.
func (s *base) appendEvent(ctx context.Context, tx *txn, e session.Event) (session.Event, error) {
	if e.Key == "" {
		e.Key = string(e.Kind) + "/" + uuid.NewString()
	}
	if len(e.Data) == 0 {
		e.Data = json.RawMessage("{}")
	}
	existing, err := scanEvent(tx.QueryRowContext(ctx, `SELECT `+eventCols+` FROM events WHERE session_id = ? AND key = ?`, e.SessionID, e.Key))
	if err == nil {
		return existing, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return e, err
	}
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE session_id = ?`, e.SessionID).Scan(&e.Seq); err != nil {
		return e, err
	}
	now := s.ts()
	e.CreatedAt = parseTime(now)
	if _, err = tx.ExecContext(ctx, `INSERT INTO events (session_id, seq, turn_id, kind, key, data, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		e.SessionID, e.Seq, e.TurnID, e.Kind, e.Key, string(e.Data), now); err != nil {
		return e, err
	}
	tx.appended = append(tx.appended, e)
	return e, s.appendAudit(ctx, tx, e)
}

func (s *base) appendJSON(ctx context.Context, tx *txn, sessionID, turnID string, kind session.EventKind, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = s.appendEvent(ctx, tx, session.Event{SessionID: sessionID, TurnID: turnID, Kind: kind, Key: key, Data: data})
	return err
}

// ListEvents implements store.Store.
func (s Events) ListEvents(ctx context.Context, sessionID string, after int64, limit int) ([]session.Event, error) {
	if limit <= 0 || limit > 10000 {
		limit = 10000
	}
	out, err := queryAll(ctx, s.db, scanEvent, `SELECT `+eventCols+` FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?`, sessionID, after, limit)
	return out, wrap(err, "list events")
}

// EventsByKey implements store.Store: a range on the (session, key) index.
func (s Events) EventsByKey(ctx context.Context, sessionID, prefix string) ([]session.Event, error) {
	out, err := queryAll(ctx, s.db, scanEvent, `SELECT `+eventCols+` FROM events WHERE session_id = ? AND substr(key, 1, ?) = ? ORDER BY seq`,
		sessionID, utf8.RuneCountInString(prefix), prefix)
	return out, wrap(err, "events by key")
}

const eventCols = `session_id, seq, turn_id, kind, key, data, created_at`

func scanEvent(row scanner) (session.Event, error) {
	var e session.Event
	var data, created string
	if err := row.Scan(&e.SessionID, &e.Seq, &e.TurnID, &e.Kind, &e.Key, &data, &created); err != nil {
		return e, err
	}
	e.Data, e.CreatedAt = json.RawMessage(data), parseTime(created)
	return e, nil
}
