package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/forge"
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
			// connection replaces it.
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
		// The credential goes with the revocation: nothing can use it again.
		if _, err := tx.ExecContext(ctx, `UPDATE connections SET revoked_at = ?, revoked_by = ?, sealed = ? WHERE project = ? AND name = ?`,
			now.Format(timeFormat), by, []byte{}, project, name); err != nil {
			return err
		}
		c.RevokedAt, c.RevokedBy = &now, by
		out = c
		return nil
	})
	return out, err
}
