package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store/sqlstore/dialect"
)

const checkpointCols = `session_id, step, base, tree, call_id, files, skipped, bundle, created_at`

func scanCheckpoint(r scanner) (session.Step, error) {
	var c session.Step
	var files, skipped, at string
	if err := r.Scan(&c.SessionID, &c.Number, &c.Base, &c.Tree, &c.CallID, &files, &skipped, &c.Bundle, &at); err != nil {
		return c, err
	}
	c.CreatedAt = parseTime(at)
	if err := json.Unmarshal([]byte(files), &c.Files); err != nil {
		return c, err
	}
	return c, json.Unmarshal([]byte(skipped), &c.Skipped)
}

func lastCheckpoint(ctx context.Context, q dialect.RowQueryer, sessionID string) (session.Step, error) {
	c, err := scanCheckpoint(q.QueryRowContext(ctx, `SELECT `+checkpointCols+` FROM checkpoints WHERE session_id = ? ORDER BY step DESC LIMIT 1`, sessionID))
	return c, notFound("checkpoint of session", sessionID, err)
}

// SaveStep implements store.Store.
func (s History) SaveStep(ctx context.Context, c session.Step, blobs map[string][]byte) (session.Step, bool, error) {
	created := false
	err := s.tx(ctx, func(tx *txn) error {
		last, err := lastCheckpoint(ctx, tx, c.SessionID)
		switch {
		case errors.Is(err, errdefs.ErrNotFound):
		case err != nil:
			return err
		case last.Tree == c.Tree && last.Base == c.Base && c.Bundle == "":
			c = last
			return nil
		}
		for id, sealed := range blobs {
			if _, err := tx.ExecContext(ctx, `INSERT INTO blobs (id, sealed) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`, id, sealed); err != nil {
				return err
			}
		}
		if c.Files == nil {
			c.Files = []session.StepFile{}
		}
		if c.Skipped == nil {
			c.Skipped = []string{}
		}
		files, _ := json.Marshal(c.Files)
		skipped, _ := json.Marshal(c.Skipped)
		c.Number, c.CreatedAt, created = last.Number+1, s.now().UTC(), true
		_, err = tx.ExecContext(ctx, `INSERT INTO checkpoints (`+checkpointCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.SessionID, c.Number, c.Base, c.Tree, c.CallID, string(files), string(skipped), c.Bundle, c.CreatedAt.Format(timeFormat))
		return err
	})
	if err != nil {
		return c, false, fmt.Errorf("save checkpoint: %w", err)
	}
	return c, created, nil
}

// Checkpoints implements store.Store.
func (s History) Steps(ctx context.Context, sessionID string) ([]session.Step, error) {
	out, err := queryAll(ctx, s.db, scanCheckpoint, `SELECT `+checkpointCols+` FROM checkpoints WHERE session_id = ? ORDER BY step`, sessionID)
	return out, wrap(err, "checkpoints")
}

// LastStep implements store.Store.
func (s History) LastStep(ctx context.Context, sessionID string) (session.Step, error) {
	return lastCheckpoint(ctx, s.db, sessionID)
}

// Blob implements store.Store.
func (s History) Blob(ctx context.Context, id string) ([]byte, error) {
	var sealed []byte
	err := s.db.QueryRowContext(ctx, `SELECT sealed FROM blobs WHERE id = ?`, id).Scan(&sealed)
	return sealed, notFound("blob", id, err)
}

// DeleteSteps implements store.Store.
func (s History) DeleteSteps(ctx context.Context, sessionID string) (int64, error) {
	var gone int64
	err := s.tx(ctx, func(tx *txn) error {
		all, err := queryAll(ctx, tx, scanCheckpoint, `SELECT `+checkpointCols+` FROM checkpoints WHERE session_id = ?`, sessionID)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM checkpoints WHERE session_id = ?`, sessionID); err != nil {
			return err
		}
		blobs := map[string]bool{}
		for _, c := range all {
			if c.Bundle != "" {
				blobs[c.Bundle] = true
			}
			for _, f := range c.Files {
				if f.Blob != "" {
					blobs[f.Blob] = true
				}
			}
		}
		for id := range blobs {
			// IDs are hex: nothing in them means anything to LIKE.
			res, err := tx.ExecContext(ctx, `DELETE FROM blobs WHERE id = ? AND NOT EXISTS (SELECT 1 FROM checkpoints WHERE bundle = ? OR files LIKE ?)`,
				id, id, `%"blob":"`+id+`"%`)
			if err != nil {
				return err
			}
			n, _ := res.RowsAffected()
			gone += n
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("delete checkpoints: %w", err)
	}
	return gone, nil
}
