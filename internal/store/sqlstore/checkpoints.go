package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/paddock-dev/paddock/internal/store"
)

// SaveCheckpoint implements store.Store.
func (s *Store) SaveCheckpoint(ctx context.Context, c store.Checkpoint, blobs map[string][]byte) (store.Checkpoint, bool, error) {
	created := false
	err := s.tx(ctx, func(tx *txn) error {
		var last store.Checkpoint
		var files, at string
		err := tx.QueryRowContext(ctx, `SELECT step, base, tree, call_id, files, created_at FROM checkpoints WHERE session_id = ? ORDER BY step DESC LIMIT 1`, c.SessionID).
			Scan(&last.Step, &last.Base, &last.Tree, &last.CallID, &files, &at)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		case last.Tree == c.Tree && last.Base == c.Base:
			last.SessionID, last.CreatedAt = c.SessionID, parseTime(at)
			_ = json.Unmarshal([]byte(files), &last.Files)
			c = last
			return nil
		}
		for id, sealed := range blobs {
			if _, err := tx.ExecContext(ctx, `INSERT INTO blobs (id, sealed) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`, id, sealed); err != nil {
				return err
			}
		}
		if c.Files == nil {
			c.Files = []store.CheckpointFile{}
		}
		raw, _ := json.Marshal(c.Files)
		c.Step, c.CreatedAt, created = last.Step+1, s.now().UTC(), true
		_, err = tx.ExecContext(ctx, `INSERT INTO checkpoints (session_id, step, base, tree, call_id, files, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			c.SessionID, c.Step, c.Base, c.Tree, c.CallID, string(raw), c.CreatedAt.Format(timeFormat))
		return err
	})
	if err != nil {
		return c, false, fmt.Errorf("save checkpoint: %w", err)
	}
	return c, created, nil
}

// Checkpoints implements store.Store.
func (s *Store) Checkpoints(ctx context.Context, sessionID string) ([]store.Checkpoint, error) {
	out, err := queryAll(ctx, s.db, func(r scanner) (store.Checkpoint, error) {
		var c store.Checkpoint
		var files, at string
		if err := r.Scan(&c.SessionID, &c.Step, &c.Base, &c.Tree, &c.CallID, &files, &at); err != nil {
			return c, err
		}
		c.CreatedAt = parseTime(at)
		return c, json.Unmarshal([]byte(files), &c.Files)
	}, `SELECT session_id, step, base, tree, call_id, files, created_at FROM checkpoints WHERE session_id = ? ORDER BY step`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("checkpoints: %w", err)
	}
	return out, nil
}

// Blob implements store.Store.
func (s *Store) Blob(ctx context.Context, id string) ([]byte, error) {
	var sealed []byte
	err := s.db.QueryRowContext(ctx, `SELECT sealed FROM blobs WHERE id = ?`, id).Scan(&sealed)
	return sealed, notFound("blob", id, err)
}
