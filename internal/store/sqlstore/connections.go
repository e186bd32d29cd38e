package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/forge"
	"github.com/paddock-dev/paddock/internal/session"
)

const connectionCols = `project, name, kind, url, repositories, username, created_by, created_at, revoked_at, revoked_by`

func scanConnection(r scanner, sealed *[]byte) (forge.Connection, error) {
	var c forge.Connection
	var repos, created string
	var revoked sql.NullString
	dest := []any{&c.Project, &c.Name, &c.Kind, &c.URL, &repos, &c.Username, &c.CreatedBy, &created, &revoked, &c.RevokedBy}
	if sealed != nil {
		dest = append(dest, sealed)
	}
	if err := r.Scan(dest...); err != nil {
		return c, err
	}
	_ = json.Unmarshal([]byte(repos), &c.Repositories)
	c.CreatedAt = parseTime(created)
	if revoked.Valid {
		t := parseTime(revoked.String)
		c.RevokedAt = &t
	}
	return c, nil
}

// AddConnection implements store.Store.
func (s Connections) AddConnection(ctx context.Context, c forge.Connection, sealed []byte) (forge.Connection, error) {
	repos, _ := json.Marshal(c.Repositories)
	c.CreatedAt = s.now().UTC()
	c.RevokedAt, c.RevokedBy = nil, ""
	err := s.tx(ctx, func(tx *txn) error {
		var revoked sql.NullString
		err := tx.QueryRowContext(ctx, `SELECT revoked_at FROM connections WHERE project = ? AND name = ?`, c.Project, c.Name).Scan(&revoked)
		switch {
		case err == nil && !revoked.Valid:
			return fmt.Errorf("project %s already has a connection %s: revoke it first (paddock connections revoke %s --project %s): %w", c.Project, c.Name, c.Name, c.Project, errdefs.ErrConflict)
		case err == nil:
			// A revoked connection's name is given again: the new
			// connection replaces it (its links went with the revocation).
			_, err = tx.ExecContext(ctx, `DELETE FROM connections WHERE project = ? AND name = ?`, c.Project, c.Name)
		case err == sql.ErrNoRows:
			err = nil
		}
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO connections (project, name, kind, url, repositories, username, sealed, created_by, created_at, revoked_by)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, '')`, c.Project, c.Name, c.Kind, c.URL, string(repos), c.Username, sealed, c.CreatedBy, c.CreatedAt.Format(timeFormat))
		if err != nil && strings.Contains(strings.ToLower(err.Error()), "foreign key") {
			return fmt.Errorf("project %q: %w", c.Project, errdefs.ErrNotFound)
		}
		return err
	})
	return c, err
}

// ListConnections implements store.Store.
func (s Connections) ListConnections(ctx context.Context, project string) ([]forge.Connection, error) {
	return queryAll(ctx, s.db, func(r scanner) (forge.Connection, error) { return scanConnection(r, nil) },
		`SELECT `+connectionCols+` FROM connections WHERE project = ? ORDER BY name`, project)
}

// Connection implements store.Store.
func (s Connections) Connection(ctx context.Context, project, name string) (forge.Connection, []byte, error) {
	var sealed []byte
	c, err := scanConnection(s.db.QueryRowContext(ctx, `SELECT `+connectionCols+`, sealed FROM connections WHERE project = ? AND name = ?`, project, name), &sealed)
	if err != nil {
		return c, nil, notFound("connection", project+"/"+name, err)
	}
	return c, sealed, nil
}

// RevokeConnection implements store.Store.
func (s Connections) RevokeConnection(ctx context.Context, project, name, by string) (forge.Connection, error) {
	var out forge.Connection
	err := s.tx(ctx, func(tx *txn) error {
		c, err := scanConnection(tx.QueryRowContext(ctx, `SELECT `+connectionCols+` FROM connections WHERE project = ? AND name = ?`, project, name), nil)
		if err != nil {
			return notFound("connection", project+"/"+name, err)
		}
		if c.RevokedAt != nil {
			return fmt.Errorf("connection %s of project %s was revoked already: %w", name, project, errdefs.ErrConflict)
		}
		now := s.now().UTC()
		// The credential goes with the revocation, and people's own
		// credentials on it: nothing can use them again.
		if _, err := tx.ExecContext(ctx, `UPDATE connections SET revoked_at = ?, revoked_by = ?, sealed = ? WHERE project = ? AND name = ?`,
			now.Format(timeFormat), by, []byte{}, project, name); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM forge_links WHERE project = ? AND connection = ?`, project, name); err != nil {
			return err
		}
		c.RevokedAt, c.RevokedBy = &now, by
		out = c
		return nil
	})
	return out, err
}

const bindingCols = `id, session_id, project, kind, connection, repo, number, url, held, created_at, released_at, released_by`

func scanBinding(r scanner) (session.Binding, error) {
	var b session.Binding
	var created string
	var released sql.NullString
	if err := r.Scan(&b.ID, &b.SessionID, &b.Project, &b.Kind, &b.Connection, &b.Repo, &b.Number, &b.URL, &b.Held, &created, &released, &b.ReleasedBy); err != nil {
		return b, err
	}
	b.CreatedAt = parseTime(created)
	if released.Valid {
		t := parseTime(released.String)
		b.ReleasedAt = &t
	}
	return b, nil
}

// Bind implements store.Store.
func (s Connections) Bind(ctx context.Context, b session.Binding) (session.Binding, error) {
	var out session.Binding
	err := s.tx(ctx, func(tx *txn) error {
		var err error
		out, err = scanBinding(tx.QueryRowContext(ctx, `SELECT `+bindingCols+` FROM bindings WHERE session_id = ? AND kind = ? AND connection = ? AND repo = ? AND number = ?`,
			b.SessionID, b.Kind, b.Connection, b.Repo, b.Number))
		if err == nil {
			return nil
		}
		if err != sql.ErrNoRows {
			return err
		}
		b.ID, b.CreatedAt, b.ReleasedAt, b.ReleasedBy = uuid.NewString(), s.now().UTC(), nil, ""
		if _, err := tx.ExecContext(ctx, `INSERT INTO bindings (id, session_id, project, kind, connection, repo, number, url, held, created_at, released_by)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '')`, b.ID, b.SessionID, b.Project, b.Kind, b.Connection, b.Repo, b.Number, b.URL, b.Held, b.CreatedAt.Format(timeFormat)); err != nil {
			return err
		}
		out = b
		return s.appendJSON(ctx, tx, b.SessionID, "", session.EventNotice, "", session.TextData{Text: fmt.Sprintf("bound to pull request #%d of %s (%s)", b.Number, b.Repo, b.URL)})
	})
	if err == nil {
		s.notify(out.SessionID)
	}
	return out, err
}

// Bindings implements store.Store.
func (s Connections) Bindings(ctx context.Context, sessionID string) ([]session.Binding, error) {
	return queryAll(ctx, s.db, scanBinding, `SELECT `+bindingCols+` FROM bindings WHERE session_id = ? ORDER BY created_at, id`, sessionID)
}

// BoundTo implements store.Store.
func (s Connections) BoundTo(ctx context.Context, project, connection, repo string, number int64) ([]session.Binding, error) {
	return queryAll(ctx, s.db, scanBinding, `SELECT `+bindingCols+` FROM bindings WHERE project = ? AND connection = ? AND repo = ? AND number = ?
		AND released_at IS NULL ORDER BY created_at, id`, project, connection, repo, number)
}

// ReleaseBindings implements store.Store.
func (s Connections) ReleaseBindings(ctx context.Context, project, connection, repo string, number int64, by string) (int, error) {
	n := 0
	var sessions []string
	err := s.tx(ctx, func(tx *txn) error {
		rows, err := queryAll(ctx, tx, scanBinding, `SELECT `+bindingCols+` FROM bindings WHERE project = ? AND connection = ? AND repo = ? AND number = ? AND released_at IS NULL`,
			project, connection, repo, number)
		if err != nil {
			return err
		}
		for _, b := range rows {
			if _, err := tx.ExecContext(ctx, `UPDATE bindings SET released_at = ?, released_by = ? WHERE id = ?`, s.ts(), by, b.ID); err != nil {
				return err
			}
			if err := s.appendJSON(ctx, tx, b.SessionID, "", session.EventNotice, "", session.TextData{Text: fmt.Sprintf("pull request #%d of %s is closed: its binding is released by %s", b.Number, b.Repo, by)}); err != nil {
				return err
			}
			sessions = append(sessions, b.SessionID)
			n++
		}
		return nil
	})
	if err == nil {
		for _, id := range sessions {
			s.notify(id)
		}
	}
	return n, err
}
