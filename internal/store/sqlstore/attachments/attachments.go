// Package attachments is the store's attachment role (store.Attachments)
// over the database the store's other roles share: files given with
// messages, staged then bound to a session, their content kept once by
// digest.
package attachments

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/paddock-dev/paddock/internal/attachment"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store/sqlstore/dialect"
)

// Attachments implements store.Attachments.
type Attachments struct {
	DB  *dialect.DB
	Now func() time.Time
}

// timeFormat is the store's: fixed width, so that text sorts as time.
const timeFormat = "2006-01-02T15:04:05.000000000Z07:00"

const cols = `id, project, COALESCE(session_id, ''), name, kind, media_type, size, digest, redacted, created_by, created_at`

func scan(r dialect.Scanner) (session.Attachment, error) {
	var a session.Attachment
	var created string
	err := r.Scan(&a.ID, &a.Project, &a.SessionID, &a.Name, &a.Kind, &a.Type, &a.Size, &a.Digest, &a.Redacted, &a.CreatedBy, &created)
	a.CreatedAt, _ = time.Parse(time.RFC3339Nano, created)
	return a, err
}

// AddAttachment implements store.Attachments.
func (s Attachments) AddAttachment(ctx context.Context, a session.Attachment, sealed []byte, maxStaged int64) error {
	return s.DB.InTx(ctx, func(tx *dialect.Tx) error {
		var staged int64
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(size), 0) FROM attachments WHERE project = ? AND created_by = ? AND session_id IS NULL`,
			a.Project, a.CreatedBy).Scan(&staged); err != nil {
			return err
		}
		if staged+a.Size > maxStaged {
			return fmt.Errorf("%d bytes of attachments not yet sent, at most %d: %w", staged, maxStaged, errdefs.ErrTooLarge)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO attachment_content (digest, sealed) VALUES (?, ?) ON CONFLICT (digest) DO NOTHING`, a.Digest, sealed); err != nil {
			return fmt.Errorf("save attachment: %w", err)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO attachments (id, project, session_id, name, kind, media_type, size, digest, redacted, created_by, created_at)
			VALUES (?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?)`, a.ID, a.Project, a.Name, a.Kind, a.Type, a.Size, a.Digest, a.Redacted, a.CreatedBy, a.CreatedAt.UTC().Format(timeFormat))
		if err != nil {
			return fmt.Errorf("save attachment: %w", err)
		}
		return nil
	})
}

// Attachment implements store.Attachments.
func (s Attachments) Attachment(ctx context.Context, id string) (session.Attachment, error) {
	a, err := scan(s.DB.QueryRowContext(ctx, `SELECT `+cols+` FROM attachments WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("attachment %q: %w", id, errdefs.ErrNotFound)
	}
	return a, err
}

// AttachmentContent implements store.Attachments.
func (s Attachments) AttachmentContent(ctx context.Context, digest string) ([]byte, error) {
	var sealed []byte
	err := s.DB.QueryRowContext(ctx, `SELECT sealed FROM attachment_content WHERE digest = ?`, digest).Scan(&sealed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("attachment content %s: %w", digest, errdefs.ErrNotFound)
	}
	return sealed, err
}

// SessionAttachments implements store.Attachments.
func (s Attachments) SessionAttachments(ctx context.Context, sessionID string) ([]session.Attachment, error) {
	return dialect.QueryAll(ctx, s.DB, scan, `SELECT `+cols+` FROM attachments WHERE session_id = ? ORDER BY created_at, id`, sessionID)
}

// BindAttachments implements store.Attachments.
func (s Attachments) BindAttachments(ctx context.Context, sessionID string, ids []string, maxTotal int64) ([]session.Attachment, error) {
	var out []session.Attachment
	err := s.DB.InTx(ctx, func(tx *dialect.Tx) error {
		out = nil
		taken, total := map[string]bool{}, int64(0)
		have, err := dialect.QueryAll(ctx, tx, scan, `SELECT `+cols+` FROM attachments WHERE session_id = ?`, sessionID)
		if err != nil {
			return err
		}
		for _, a := range have {
			taken[a.Name], total = true, total+a.Size
		}
		for _, id := range ids {
			a, err := scan(tx.QueryRowContext(ctx, `SELECT `+cols+` FROM attachments WHERE id = ?`, id))
			switch {
			case errors.Is(err, sql.ErrNoRows):
				return fmt.Errorf("attachment %q: %w", id, errdefs.ErrNotFound)
			case err != nil:
				return err
			case a.SessionID == sessionID:
			case a.SessionID != "":
				return fmt.Errorf("attachment %s was sent with another session's message meanwhile: %w", id, errdefs.ErrConflict)
			default:
				a.SessionID, a.Name, total = sessionID, attachment.Unique(a.Name, taken), total+a.Size
				if _, err := tx.ExecContext(ctx, `UPDATE attachments SET session_id = ?, name = ? WHERE id = ? AND session_id IS NULL`, sessionID, a.Name, id); err != nil {
					return err
				}
			}
			out = append(out, a)
		}
		if total > maxTotal {
			return fmt.Errorf("the session's attachments would hold %d bytes, at most %d: %w", total, maxTotal, errdefs.ErrTooLarge)
		}
		return nil
	})
	return out, err
}

// DeleteAttachments implements store.Attachments.
func (s Attachments) DeleteAttachments(ctx context.Context, sessionID string) (int64, error) {
	return s.remove(ctx, `DELETE FROM attachments WHERE session_id = ?`, sessionID)
}

// ExpireAttachments implements store.Attachments.
func (s Attachments) ExpireAttachments(ctx context.Context, before time.Time) (int64, error) {
	return s.remove(ctx, `DELETE FROM attachments WHERE session_id IS NULL AND created_at < ?`, before.UTC().Format(timeFormat))
}

// remove deletes attachments, then the content no attachment names.
func (s Attachments) remove(ctx context.Context, q string, arg any) (int64, error) {
	var n int64
	err := s.DB.InTx(ctx, func(tx *dialect.Tx) error {
		res, err := tx.ExecContext(ctx, q, arg)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		if n == 0 {
			return nil
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM attachment_content WHERE NOT EXISTS (SELECT 1 FROM attachments WHERE attachments.digest = attachment_content.digest)`)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete attachments: %w", err)
	}
	return n, nil
}
