// Package forgelinks is the store's role for people's own forge
// credentials (store.ForgeLinks) over the database the store's other
// roles share.
package forgelinks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/forge"
	"github.com/paddock-dev/paddock/internal/store/sqlstore/dialect"
)

// ForgeLinks implements store.ForgeLinks.
type ForgeLinks struct {
	DB  *dialect.DB
	Now func() time.Time
}

// timeFormat is the store's: fixed width, so that text sorts as time.
const timeFormat = "2006-01-02T15:04:05.000000000Z07:00"

// LinkForge implements store.ForgeLinks.
func (s ForgeLinks) LinkForge(ctx context.Context, l forge.Link, sealed []byte) (forge.Link, error) {
	l.CreatedAt = s.Now().UTC()
	err := s.DB.InTx(ctx, func(tx *dialect.Tx) error {
		var url string
		var revoked sql.NullString
		err := tx.QueryRowContext(ctx, `SELECT url, revoked_at FROM connections WHERE project = ? AND name = ?`, l.Project, l.Connection).Scan(&url, &revoked)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("project %s has no connection %s: %w", l.Project, l.Connection, errdefs.ErrNotFound)
		case err != nil:
			return err
		case revoked.Valid:
			return fmt.Errorf("connection %s of project %s is revoked: nothing is linked to it: %w", l.Connection, l.Project, errdefs.ErrConflict)
		case url != l.URL:
			return fmt.Errorf("connection %s of project %s is now at %s: %w", l.Connection, l.Project, url, errdefs.ErrConflict)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO forge_links (project, connection, user_name, url, login, sealed, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (project, connection, user_name) DO UPDATE SET url = excluded.url, login = excluded.login, sealed = excluded.sealed,
			created_at = excluded.created_at`,
			l.Project, l.Connection, l.User, l.URL, l.Login, sealed, l.CreatedAt.Format(timeFormat))
		return err
	})
	return l, err
}

// ForgeLink implements store.ForgeLinks.
func (s ForgeLinks) ForgeLink(ctx context.Context, project, connection, user string) (forge.Link, []byte, error) {
	l := forge.Link{Project: project, Connection: connection, User: user}
	var sealed []byte
	var created string
	err := s.DB.QueryRowContext(ctx, `SELECT url, login, sealed, created_at FROM forge_links WHERE project = ? AND connection = ? AND user_name = ?`,
		project, connection, user).Scan(&l.URL, &l.Login, &sealed, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return l, nil, fmt.Errorf("%s has no link to connection %s of project %s: %w", user, connection, project, errdefs.ErrNotFound)
	}
	l.CreatedAt, _ = time.Parse(time.RFC3339Nano, created)
	return l, sealed, err
}

// UnlinkForge implements store.ForgeLinks.
func (s ForgeLinks) UnlinkForge(ctx context.Context, project, connection, user string) error {
	res, err := s.DB.ExecContext(ctx, `DELETE FROM forge_links WHERE project = ? AND connection = ? AND user_name = ?`, project, connection, user)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%s has no link to connection %s of project %s: %w", user, connection, project, errdefs.ErrNotFound)
	}
	return nil
}

// ForgetForgeLinks implements store.ForgeLinks.
func (s ForgeLinks) ForgetForgeLinks(ctx context.Context, project, user string) error {
	_, err := s.DB.ExecContext(ctx, `DELETE FROM forge_links WHERE user_name = ? AND (? = '' OR project = ?)`, user, project, project)
	return err
}
