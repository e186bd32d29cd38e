package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/store/sqlstore/dialect"
)

func optTime(v sql.NullString) *time.Time {
	if !v.Valid || v.String == "" {
		return nil
	}
	t := parseTime(v.String)
	return &t
}

func optTS(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UTC().Format(timeFormat)
}

// conflict maps a uniqueness violation to errdefs.ErrConflict.
func conflict(err error, what string) error {
	if dialect.IsUnique(err) {
		return fmt.Errorf("%s already exists: %w", what, errdefs.ErrConflict)
	}
	return err
}

func scanUser(r scanner) (identity.User, error) {
	var u identity.User
	var created string
	var revoked sql.NullString
	err := r.Scan(&u.Name, &created, &u.Admin, &u.Issuer, &u.Subject, &revoked)
	u.CreatedAt, u.RevokedAt = parseTime(created), optTime(revoked)
	return u, err
}

const userCols = `name, created_at, admin, oidc_issuer, oidc_subject, revoked_at`

// CreateUser implements store.Store.
func (s Identity) CreateUser(ctx context.Context, u identity.User) (identity.User, error) {
	u.CreatedAt = parseTime(s.ts())
	_, err := s.db.ExecContext(ctx, `INSERT INTO users (`+userCols+`) VALUES (?, ?, ?, ?, ?, NULL)`, u.Name, s.ts(), u.Admin, u.Issuer, u.Subject)
	return u, conflict(err, fmt.Sprintf("user %q", u.Name))
}

// GetUser implements store.Store.
func (s Identity) GetUser(ctx context.Context, name string) (identity.User, error) {
	u, err := scanUser(s.db.QueryRowContext(ctx, `SELECT `+userCols+` FROM users WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return u, fmt.Errorf("user %q: %w", name, errdefs.ErrNotFound)
	}
	return u, err
}

// UserBySubject implements store.Store.
func (s Identity) UserBySubject(ctx context.Context, issuer, subject string) (identity.User, error) {
	u, err := scanUser(s.db.QueryRowContext(ctx, `SELECT `+userCols+` FROM users WHERE oidc_issuer = ? AND oidc_subject = ? AND oidc_subject != ''`, issuer, subject))
	if errors.Is(err, sql.ErrNoRows) {
		return u, fmt.Errorf("no user for %s's subject: %w", issuer, errdefs.ErrNotFound)
	}
	return u, err
}

// ListUsers implements store.Store.
func (s Identity) ListUsers(ctx context.Context) ([]identity.User, error) {
	return queryAll(ctx, s.db, scanUser, `SELECT `+userCols+` FROM users ORDER BY name`)
}

// RevokeUser implements store.Store.
func (s Identity) RevokeUser(ctx context.Context, name string) error {
	return s.tx(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `UPDATE users SET revoked_at = COALESCE(revoked_at, ?) WHERE name = ?`, s.ts(), name)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("user %q: %w", name, errdefs.ErrNotFound)
		}
		_, err = tx.ExecContext(ctx, `UPDATE tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE user_name = ?`, s.ts(), name)
		return err
	})
}

func scanToken(r scanner) (identity.Token, error) {
	var t identity.Token
	var created string
	var expires, used, revoked sql.NullString
	err := r.Scan(&t.ID, &t.User, &t.Label, &t.Hash, &created, &expires, &used, &revoked, &t.Parent)
	t.CreatedAt, t.ExpiresAt, t.LastUsed, t.RevokedAt = parseTime(created), optTime(expires), optTime(used), optTime(revoked)
	return t, err
}

const tokenCols = `id, user_name, label, hash, created_at, expires_at, last_used_at, revoked_at, parent`

// CreateToken implements store.Store.
func (s Identity) CreateToken(ctx context.Context, t identity.Token) (identity.Token, error) {
	t.CreatedAt = parseTime(s.ts())
	_, err := s.db.ExecContext(ctx, `INSERT INTO tokens (`+tokenCols+`) VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, ?)`, t.ID, t.User, t.Label, t.Hash, s.ts(), optTS(t.ExpiresAt), t.Parent)
	if err != nil && strings.Contains(err.Error(), "FOREIGN KEY") {
		return t, fmt.Errorf("user %q: %w", t.User, errdefs.ErrNotFound)
	}
	return t, conflict(err, "token "+t.ID)
}

// GetToken implements store.Store.
func (s Identity) GetToken(ctx context.Context, id string) (identity.Token, error) {
	t, err := scanToken(s.db.QueryRowContext(ctx, `SELECT `+tokenCols+` FROM tokens WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return t, fmt.Errorf("token %q: %w", id, errdefs.ErrNotFound)
	}
	return t, err
}

// ListTokens implements store.Store.
func (s Identity) ListTokens(ctx context.Context, user string) ([]identity.Token, error) {
	return queryAll(ctx, s.db, scanToken, `SELECT `+tokenCols+` FROM tokens WHERE user_name = ? OR ? = '' ORDER BY created_at, id`, user, user)
}

// RevokeToken implements store.Store: the tokens it minted, and theirs,
// go with it.
func (s Identity) RevokeToken(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, `WITH RECURSIVE family(id) AS (SELECT id FROM tokens WHERE id = ?
		UNION SELECT tokens.id FROM tokens JOIN family ON tokens.parent = family.id)
		UPDATE tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE id IN (SELECT id FROM family)`, id, s.ts())
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("token %q: %w", id, errdefs.ErrNotFound)
	}
	return nil
}

// TouchToken implements store.Store: the last use is kept to the minute,
// so a busy client does not write on every call.
func (s Identity) TouchToken(ctx context.Context, id string) error {
	now := s.now().UTC()
	_, err := s.db.ExecContext(ctx, `UPDATE tokens SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)`,
		now.Format(timeFormat), id, now.Add(-time.Minute).Format(timeFormat))
	return err
}

// CreateProject implements store.Store.
func (s Identity) CreateProject(ctx context.Context, name string) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO projects (name, created_at) VALUES (?, ?)`, name, s.ts())
	return conflict(err, fmt.Sprintf("project %q", name))
}

// ListProjects implements store.Store.
func (s Identity) ListProjects(ctx context.Context) ([]string, error) {
	return queryAll(ctx, s.db, func(r scanner) (string, error) {
		var n string
		return n, r.Scan(&n)
	}, `SELECT name FROM projects ORDER BY name`)
}

// SetMember implements store.Store.
func (s Identity) SetMember(ctx context.Context, m identity.Membership) error {
	return s.tx(ctx, func(tx *txn) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM projects WHERE name = ?`, m.Project).Scan(&n); err != nil || n == 0 {
			if err == nil {
				err = fmt.Errorf("project %q: %w", m.Project, errdefs.ErrNotFound)
			}
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO members (project, user_name, role) VALUES (?, ?, ?)
			ON CONFLICT (project, user_name) DO UPDATE SET role = excluded.role`, m.Project, m.User, string(m.Role))
		return err
	})
}

// RemoveMember implements store.Store.
func (s Identity) RemoveMember(ctx context.Context, project, user string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM members WHERE project = ? AND user_name = ?`, project, user)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%s is not a member of %s: %w", user, project, errdefs.ErrNotFound)
	}
	return nil
}

func scanMember(r scanner) (identity.Membership, error) {
	var m identity.Membership
	var role string
	err := r.Scan(&m.Project, &m.User, &role)
	m.Role = identity.Role(role)
	return m, err
}

// Members implements store.Store: a project's members, or a user's
// memberships (either may be empty, not both).
func (s Identity) Members(ctx context.Context, project, user string) ([]identity.Membership, error) {
	return queryAll(ctx, s.db, scanMember, `SELECT project, user_name, role FROM members
		WHERE (project = ? OR ? = '') AND (user_name = ? OR ? = '') ORDER BY project, user_name`, project, project, user, user)
}

// ServerSecret implements store.Store.
func (s Audit) ServerSecret(ctx context.Context, name string, fresh []byte) ([]byte, error) {
	var out []byte
	err := s.tx(ctx, func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO server_secrets (name, sealed, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING`, name, fresh, s.ts()); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT sealed FROM server_secrets WHERE name = ?`, name).Scan(&out)
	})
	if err != nil {
		return nil, fmt.Errorf("server secret %s: %w", name, err)
	}
	return out, nil
}
