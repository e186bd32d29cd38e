package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store"
)

const parkCols = `id, session_id, reason, detail, needs, recovery_command_id, created_at, expires_at, resolved_at, resolution, resolved_by, note`

func scanPark(row scanner) (session.Park, error) {
	var p session.Park
	var created, by string
	var expires, resolved sql.NullString
	if err := row.Scan(&p.ID, &p.SessionID, &p.Reason, &p.Detail, &p.Needs, &p.RecoveryCommand, &created, &expires, &resolved,
		&p.Resolution, &by, &p.Note); err != nil {
		return p, err
	}
	p.CreatedAt = parseTime(created)
	if expires.Valid {
		t := parseTime(expires.String)
		p.ExpiresAt = &t
	}
	if resolved.Valid {
		t := parseTime(resolved.String)
		p.ResolvedAt = &t
	}
	if by != "" {
		var sender session.Sender
		if json.Unmarshal([]byte(by), &sender) == nil {
			p.ResolvedBy = &sender
		}
	}
	return p, nil
}

// OpenPark implements store.Store.
func (s Parks) OpenPark(ctx context.Context, p session.Park, recovery store.NewCommand) (session.Park, bool, error) {
	var out session.Park
	created := false
	err := s.tx(ctx, func(tx *txn) error {
		cur, err := s.getSession(ctx, tx, p.SessionID)
		if err != nil {
			return err
		}
		existing, err := scanPark(tx.QueryRowContext(ctx, `SELECT `+parkCols+` FROM parks WHERE (id = ?) OR (session_id = ? AND reason = ? AND resolved_at IS NULL)
			ORDER BY created_at LIMIT 1`, p.ID, p.SessionID, p.Reason))
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
		if recovery.IdempotencyKey == "" {
			recovery.IdempotencyKey = recovery.ID
		}
		if _, err := s.insertCommand(ctx, tx, recovery, session.CommandHeld); err != nil {
			return err
		}
		out, err = s.insertPark(ctx, tx, p, recovery.ID)
		created = err == nil
		return err
	})
	if err != nil {
		return out, false, fmt.Errorf("open park: %w", err)
	}
	s.notify(p.SessionID)
	return out, created, nil
}

// ResolvePark implements store.Store.
func (s Parks) ResolvePark(ctx context.Context, id, resolution string, by *session.Sender, note string) (session.Park, error) {
	var out session.Park
	err := s.tx(ctx, func(tx *txn) error {
		p, err := s.markResolved(ctx, tx, id, resolution, by, note)
		if err != nil {
			return err
		}
		next := session.CommandCanceled
		if resolution == session.ParkGranted || resolution == session.ParkCleared {
			next = session.CommandPending
		}
		res, err := tx.ExecContext(ctx, `UPDATE commands SET state = ?, updated_at = ? WHERE id = ? AND state = ?`, next, s.ts(), p.RecoveryCommand, session.CommandHeld)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 && next == session.CommandPending {
			// Work resumes: an archived session is revived, as by a command.
			if _, err := tx.ExecContext(ctx, `UPDATE sessions SET archived_at = NULL, updated_at = ? WHERE id = ?`, s.ts(), p.SessionID); err != nil {
				return err
			}
		}
		if n, _ := res.RowsAffected(); n == 1 {
			c, err := scanCommand(tx.QueryRowContext(ctx, `SELECT `+commandCols+` FROM commands WHERE id = ?`, p.RecoveryCommand))
			if err != nil {
				return err
			}
			if err := s.commandEvent(ctx, tx, c); err != nil {
				return err
			}
		}
		out, err = scanPark(tx.QueryRowContext(ctx, `SELECT `+parkCols+` FROM parks WHERE id = ?`, id))
		if err != nil {
			return err
		}
		return s.appendJSON(ctx, tx, p.SessionID, "", session.EventPark, "park/"+id+"/"+resolution, session.ParkData{Park: out})
	})
	if err != nil {
		return out, fmt.Errorf("resolve park: %w", err)
	}
	s.notify(out.SessionID)
	return out, nil
}

// GetPark implements store.Store.
func (s Parks) GetPark(ctx context.Context, id string) (session.Park, error) {
	p, err := scanPark(s.db.QueryRowContext(ctx, `SELECT `+parkCols+` FROM parks WHERE id = ?`, id))
	if err != nil {
		return p, notFound("park", id, err)
	}
	return p, nil
}

// ListParks implements store.Store.
func (s Parks) ListParks(ctx context.Context, sessionID string, open bool) ([]session.Park, error) {
	where, args := `1 = 1`, []any{}
	if sessionID != "" {
		where, args = `session_id = ?`, append(args, sessionID)
	}
	if open {
		where += ` AND resolved_at IS NULL`
	}
	out, err := queryAll(ctx, s.db, scanPark, `SELECT `+parkCols+` FROM parks WHERE `+where+` ORDER BY created_at, id`, args...)
	return out, wrap(err, "list parks")
}

// RaiseSpendCap implements store.Store.
func (s Sessions) RaiseSpendCap(ctx context.Context, id string, usd float64) error {
	res, err := s.db.ExecContext(ctx, `UPDATE sessions SET spend_cap_usd = ?, updated_at = ? WHERE id = ?`, usd, s.ts(), id)
	if err != nil {
		return fmt.Errorf("raise spend cap: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("session %s: %w", id, errdefs.ErrNotFound)
	}
	return nil
}

// insertPark records park p, its recovery the held command recoveryID,
// and its event.
func (s *base) insertPark(ctx context.Context, tx *txn, p session.Park, recoveryID string) (session.Park, error) {
	var expires any
	if p.ExpiresAt != nil {
		expires = p.ExpiresAt.UTC().Format(timeFormat)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO parks (id, session_id, reason, detail, needs, recovery_command_id, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, p.ID, p.SessionID, p.Reason, p.Detail, p.Needs, recoveryID, s.ts(), expires); err != nil {
		return session.Park{}, err
	}
	out, err := scanPark(tx.QueryRowContext(ctx, `SELECT `+parkCols+` FROM parks WHERE id = ?`, p.ID))
	if err != nil {
		return out, err
	}
	return out, s.appendJSON(ctx, tx, p.SessionID, "", session.EventPark, "park/"+p.ID+"/open", session.ParkData{Park: out})
}

// SetCredentials implements store.Store.
func (s Parks) SetCredentials(ctx context.Context, sessionID string, sealed map[string][]byte) error {
	return s.tx(ctx, func(tx *txn) error {
		cur, err := s.getSession(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		if cur.Status.Terminal() {
			return &errdefs.TerminalError{SessionID: cur.ID, Status: string(cur.Status)}
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM session_credentials WHERE session_id = ?`, sessionID); err != nil {
			return err
		}
		for name, v := range sealed {
			if _, err := tx.ExecContext(ctx, `INSERT INTO session_credentials (session_id, name, sealed) VALUES (?, ?, ?)`, sessionID, name, v); err != nil {
				return err
			}
		}
		return nil
	})
}

// Credentials implements store.Store.
func (s Parks) Credentials(ctx context.Context, sessionID string) (map[string][]byte, error) {
	return s.sealedByName(ctx, `SELECT name, sealed FROM session_credentials WHERE session_id = ?`, sessionID)
}

// sealedByName reads (name, sealed) rows into a map.
func (s *base) sealedByName(ctx context.Context, query string, arg string) (map[string][]byte, error) {
	type row struct {
		name   string
		sealed []byte
	}
	rows, err := queryAll(ctx, s.db, func(r scanner) (row, error) {
		var x row
		return x, r.Scan(&x.name, &x.sealed)
	}, query, arg)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(rows))
	for _, r := range rows {
		out[r.name] = r.sealed
	}
	return out, nil
}

// PassPark implements store.Store.
func (s Parks) PassPark(ctx context.Context, id string, by *session.Sender, note string, next session.Park) (session.Park, error) {
	var out session.Park
	err := s.tx(ctx, func(tx *txn) error {
		p, err := s.markResolved(ctx, tx, id, session.ParkGranted, by, note)
		if err != nil {
			return err
		}
		resolved, err := scanPark(tx.QueryRowContext(ctx, `SELECT `+parkCols+` FROM parks WHERE id = ?`, id))
		if err != nil {
			return err
		}
		if err := s.appendJSON(ctx, tx, p.SessionID, "", session.EventPark, "park/"+id+"/"+session.ParkGranted, session.ParkData{Park: resolved}); err != nil {
			return err
		}
		next.SessionID = p.SessionID
		out, err = s.insertPark(ctx, tx, next, p.RecoveryCommand)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE sessions SET ambient_status = ?, updated_at = ? WHERE id = ?`, "parked ("+next.Reason+"): needs "+next.Needs, s.ts(), p.SessionID)
		return err
	})
	if err == nil {
		s.notify(out.SessionID)
	}
	return out, err
}

// SetProjectCredentials implements store.Store.
func (s Parks) SetProjectCredentials(ctx context.Context, project string, sealed map[string][]byte) error {
	return s.tx(ctx, func(tx *txn) error {
		for name, v := range sealed {
			if _, err := tx.ExecContext(ctx, `INSERT INTO project_credentials (project, name, sealed) VALUES (?, ?, ?)
				ON CONFLICT (project, name) DO UPDATE SET sealed = excluded.sealed`, project, name, v); err != nil {
				if strings.Contains(err.Error(), "FOREIGN KEY") {
					return fmt.Errorf("project %q: %w", project, errdefs.ErrNotFound)
				}
				return err
			}
		}
		return nil
	})
}

// ProjectCredentials implements store.Store.
func (s Parks) ProjectCredentials(ctx context.Context, project string) (map[string][]byte, error) {
	return s.sealedByName(ctx, `SELECT name, sealed FROM project_credentials WHERE project = ?`, project)
}

// markResolved records park id resolved (once: a resolved park is a
// conflict) and returns it as it was.
func (s *base) markResolved(ctx context.Context, tx *txn, id, resolution string, by *session.Sender, note string) (session.Park, error) {
	p, err := scanPark(tx.QueryRowContext(ctx, `SELECT `+parkCols+` FROM parks WHERE id = ?`, id))
	if err != nil {
		return p, notFound("park", id, err)
	}
	if p.ResolvedAt != nil {
		return p, fmt.Errorf("park %s is already %s: %w", id, p.Resolution, errdefs.ErrConflict)
	}
	byJSON := ""
	if by != nil {
		b, _ := json.Marshal(by)
		byJSON = string(b)
	}
	_, err = tx.ExecContext(ctx, `UPDATE parks SET resolved_at = ?, resolution = ?, resolved_by = ?, note = ? WHERE id = ?`,
		s.ts(), resolution, byJSON, note, id)
	return p, err
}
