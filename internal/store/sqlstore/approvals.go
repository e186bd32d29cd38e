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
	"github.com/paddock-dev/paddock/internal/store/sqlstore/dialect"
)

// SetProjectPolicy implements store.Store.
func (s Agents) SetProjectPolicy(ctx context.Context, project string, policy json.RawMessage) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO projects (name, created_at, policy) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET policy = excluded.policy`, project, s.ts(), string(policy))
	return wrap(err, "set project policy")
}

// GetProjectPolicy implements store.Store.
func (s Agents) GetProjectPolicy(ctx context.Context, project string) (json.RawMessage, error) {
	var p string
	err := s.db.QueryRowContext(ctx, `SELECT policy FROM projects WHERE name = ?`, project).Scan(&p)
	if errors.Is(err, sql.ErrNoRows) || p == "" {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get project policy: %w", err)
	}
	return json.RawMessage(p), nil
}

const approvalCols = `id, session_id, turn_id, tool_call_id, tool, args, digest, verdict_rule, reason, status, decided_by, decision_note,
	expires_at, created_at, decided_at`

func scanApproval(row scanner) (session.Approval, error) {
	var a session.Approval
	var args, by, expires, created string
	var decided sql.NullString
	if err := row.Scan(&a.ID, &a.SessionID, &a.TurnID, &a.ToolCallID, &a.Tool, &args, &a.Digest, &a.Rule, &a.Reason, &a.Status, &by,
		&a.Note, &expires, &created, &decided); err != nil {
		return a, err
	}
	a.Args = json.RawMessage(args)
	if by != "" {
		var sender session.Sender
		if json.Unmarshal([]byte(by), &sender) == nil {
			a.DecidedBy = &sender
		}
	}
	a.ExpiresAt, a.CreatedAt = parseTime(expires), parseTime(created)
	if decided.Valid {
		t := parseTime(decided.String)
		a.DecidedAt = &t
	}
	return a, nil
}

// CreateApproval implements store.Store.
func (s Approvals) CreateApproval(ctx context.Context, a session.Approval) (session.Approval, error) {
	var out session.Approval
	err := s.tx(ctx, func(tx *txn) error {
		existing, err := scanApproval(tx.QueryRowContext(ctx, `SELECT `+approvalCols+` FROM approvals WHERE id = ?`, a.ID))
		if err == nil {
			out = existing
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO approvals (id, session_id, turn_id, tool_call_id, tool, args, digest, verdict_rule, reason,
			status, expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			a.ID, a.SessionID, a.TurnID, a.ToolCallID, a.Tool, string(a.Args), a.Digest, a.Rule, a.Reason, session.ApprovalPending,
			a.ExpiresAt.UTC().Format(timeFormat), s.ts())
		if err != nil {
			return err
		}
		out, err = scanApproval(tx.QueryRowContext(ctx, `SELECT `+approvalCols+` FROM approvals WHERE id = ?`, a.ID))
		return err
	})
	return out, wrap(err, "create approval")
}

// GetApproval implements store.Store.
func (s Approvals) GetApproval(ctx context.Context, id string) (session.Approval, error) {
	a, err := scanApproval(s.db.QueryRowContext(ctx, `SELECT `+approvalCols+` FROM approvals WHERE id = ?`, id))
	if err != nil {
		return a, notFound("approval", id, err)
	}
	return a, nil
}

// ListApprovals implements store.Store.
func (s Approvals) ListApprovals(ctx context.Context, f session.ApprovalFilter) ([]session.Approval, error) {
	var where []string
	var args []any
	if f.SessionID != "" {
		where, args = append(where, "session_id = ?"), append(args, f.SessionID)
	}
	if f.Status != "" {
		where, args = append(where, "status = ?"), append(args, f.Status)
	}
	if f.Scoped {
		w, a := dialect.Within("(SELECT project FROM sessions WHERE sessions.id = approvals.session_id)", f.Within)
		where, args = append(where, w), append(args, a...)
	}
	q := `SELECT ` + approvalCols + ` FROM approvals`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY created_at`
	if f.SessionID == "" && f.Status != session.ApprovalPending {
		// The pending ones (every one of which someone must see) and a
		// session's are all listed; a history of every session's, the
		// oldest thousand.
		q += ` LIMIT 1000`
	}
	out, err := queryAll(ctx, s.db, scanApproval, q, args...)
	return out, wrap(err, "list approvals")
}

// DecideApproval implements store.Store.
func (s Approvals) DecideApproval(ctx context.Context, id string, status session.ApprovalStatus, by *session.Sender, note string) (session.Approval, error) {
	var out session.Approval
	err := s.tx(ctx, func(tx *txn) error {
		a, err := scanApproval(tx.QueryRowContext(ctx, `SELECT `+approvalCols+` FROM approvals WHERE id = ?`, id))
		if err != nil {
			return notFound("approval", id, err)
		}
		if a.Status != session.ApprovalPending {
			return fmt.Errorf("approval %s is already %s: %w", id, a.Status, errdefs.ErrConflict)
		}
		if status != session.ApprovalExpired && !s.now().Before(a.ExpiresAt) {
			return fmt.Errorf("approval %s lapsed at %s: %w", id, a.ExpiresAt.Format("2006-01-02 15:04:05Z07:00"), errdefs.ErrConflict)
		}
		byJSON := ""
		if by != nil {
			b, _ := json.Marshal(by)
			byJSON = string(b)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE approvals SET status = ?, decided_by = ?, decision_note = ?, decided_at = ? WHERE id = ?`,
			status, byJSON, note, s.ts(), id); err != nil {
			return err
		}
		out, err = scanApproval(tx.QueryRowContext(ctx, `SELECT `+approvalCols+` FROM approvals WHERE id = ?`, id))
		return err
	})
	return out, wrap(err, "decide approval")
}
