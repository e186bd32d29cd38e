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
	"github.com/paddock-dev/paddock/internal/store/sqlstore/dialect"
)

const sessionCols = `id, project, agent, agent_spec, agent_version, spend_cap_usd, status, runtime_phase, archived_at,
	error, failure_reason, display_title, ambient_status, input, repo, workdir, base_commit, retry_of, handoff,
	stop_reason, respawn, policy, policy_digest, interactive, approver, delivery, hold, created_by, created_at, updated_at, node, remote`

func scanSession(row scanner) (session.Session, error) {
	var x session.Session
	var spec, policy, hold, createdBy, created, updated, remote string
	var archived sql.NullString
	err := row.Scan(&x.ID, &x.Project, &x.Agent, &spec, &x.AgentVersion, &x.SpendCapUSD, &x.Status, &x.RuntimePhase, &archived,
		&x.Error, &x.FailureReason, &x.DisplayTitle, &x.AmbientStatus, &x.Input, &x.Repo, &x.Workdir, &x.BaseCommit, &x.RetryOf, &x.Handoff,
		&x.StopReason, &x.RespawnRequest, &policy, &x.PolicyDigest, &x.Interactive, &x.Approver, &x.Delivery, &hold, &createdBy, &created, &updated, &x.Node, &remote)
	if err != nil {
		return x, err
	}
	x.AgentSpec = json.RawMessage(spec)
	if policy != "" {
		x.Policy = json.RawMessage(policy)
	}
	_ = json.Unmarshal([]byte(createdBy), &x.CreatedBy)
	if hold != "" {
		var h session.Hold
		if json.Unmarshal([]byte(hold), &h) == nil {
			x.Hold = &h
		}
	}
	if remote != "" {
		var r session.Remote
		if json.Unmarshal([]byte(remote), &r) == nil {
			x.Remote = &r
		}
	}
	x.CreatedAt, x.UpdatedAt = parseTime(created), parseTime(updated)
	if archived.Valid {
		t := parseTime(archived.String)
		x.ArchivedAt = &t
	}
	return x, nil
}

func (s *base) getSession(ctx context.Context, q dialect.RowQueryer, id string) (session.Session, error) {
	x, err := scanSession(q.QueryRowContext(ctx, `SELECT `+sessionCols+` FROM sessions WHERE id = ?`, id))
	if err != nil {
		return x, notFound("session", id, err)
	}
	return x, nil
}

// GetSession implements store.Store.
func (s Sessions) GetSession(ctx context.Context, id string) (session.Session, error) {
	return s.getSession(ctx, s.db, id)
}

// ListSessions implements store.Store.
func (s Sessions) ListSessions(ctx context.Context, f session.Filter) ([]session.Session, error) {
	var where []string
	var args []any
	if f.Project != "" {
		where, args = append(where, "project = ?"), append(args, f.Project)
	}
	if f.Agent != "" {
		where, args = append(where, "agent = ?"), append(args, f.Agent)
	}
	if f.Status != "" {
		where, args = append(where, "status = ?"), append(args, f.Status)
	}
	if len(f.Statuses) > 0 {
		statuses := make([]string, len(f.Statuses))
		for i, x := range f.Statuses {
			statuses[i] = string(x)
		}
		w, a := dialect.Within("status", statuses)
		where, args = append(where, w), append(args, a...)
	}
	if f.Before != "" {
		// Keyset paging: strictly after the cursor in (created_at, id)
		// descending order; an unknown cursor matches nothing, and so does
		// one the caller may not read (it tells nothing of the session).
		cursor := "c.id = ?"
		args = append(args, f.Before)
		if f.Scoped {
			w, a := dialect.Within("c.project", f.Within)
			cursor, args = cursor+" AND "+w, append(args, a...)
		}
		where = append(where, "EXISTS (SELECT 1 FROM sessions c WHERE "+cursor+" AND (sessions.created_at < c.created_at OR (sessions.created_at = c.created_at AND sessions.id < c.id)))")
	}
	if !f.IncludeArchived {
		where = append(where, "archived_at IS NULL")
	}
	if f.Scoped {
		w, a := dialect.Within("project", f.Within)
		where, args = append(where, w), append(args, a...)
	}
	q := `SELECT ` + sessionCols + ` FROM sessions`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	limit := f.Limit
	if limit <= 0 || limit > session.MaxPage {
		limit = session.MaxPage
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	args = append(args, limit)
	out, err := queryAll(ctx, s.db, scanSession, q, args...)
	return out, wrap(err, "list sessions")
}

// CreateSession implements store.Store.
func (s Sessions) CreateSession(ctx context.Context, in store.NewSession) (session.Session, bool, error) {
	var out session.Session
	created := false
	err := s.tx(ctx, func(tx *txn) error {
		if in.IdempotencyKey != "" {
			var id string
			err := tx.QueryRowContext(ctx, `SELECT id FROM sessions WHERE idempotency_key = ?`, in.IdempotencyKey).Scan(&id)
			if err == nil {
				out, err = s.getSession(ctx, tx, id)
				return err
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		now := s.ts()
		if _, err := tx.ExecContext(ctx, `INSERT INTO projects (name, created_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`, in.Project, now); err != nil {
			return err
		}
		if in.Agent.Concurrency == 1 {
			var holder string
			err := tx.QueryRowContext(ctx, `SELECT session_id FROM agent_slots WHERE project = ? AND agent = ?`, in.Project, in.Agent.Name).Scan(&holder)
			if err == nil {
				return &errdefs.SlotConflictError{Agent: in.Agent.Name, SessionID: holder}
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		createdBy, _ := json.Marshal(in.CreatedBy)
		var key any
		if in.IdempotencyKey != "" {
			key = in.IdempotencyKey
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO sessions (id, project, agent, agent_spec, agent_version, spend_cap_usd, status, display_title,
			input, repo, retry_of, policy, policy_digest, interactive, approver, created_by, idempotency_key, created_at, updated_at, remote)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			in.ID, in.Project, in.Agent.Name, string(in.Agent.Spec), in.Agent.Digest, in.SpendCapUSD, session.StatusQueued,
			session.TrimRunes(in.DisplayTitle, session.MaxDisplayTitle), in.Input, in.Repo, in.RetryOf, string(in.Policy), in.PolicyDigest,
			in.Interactive, in.Approver, string(createdBy), key, now, now, remoteJSON(in.Remote))
		if err != nil {
			return err
		}
		if in.Agent.Concurrency == 1 {
			if _, err := tx.ExecContext(ctx, `INSERT INTO agent_slots (project, agent, session_id) VALUES (?, ?, ?)`, in.Project, in.Agent.Name, in.ID); err != nil {
				return err
			}
		}
		if err := s.appendJSON(ctx, tx, in.ID, "", session.EventStatus, "status/created", session.StatusData{Status: session.StatusQueued}); err != nil {
			return err
		}
		state := session.CommandPending
		if in.AwaitStart != nil {
			state = session.CommandHeld
		}
		_, err = s.insertCommand(ctx, tx, store.NewCommand{
			ID: in.ID + "-start", SessionID: in.ID, Kind: in.StartKind, Payload: in.StartPayload,
			Sender: session.Sender{Kind: session.SenderSystem, ID: "paddock"}, IdempotencyKey: "start",
		}, state)
		if err != nil {
			return err
		}
		if p := in.AwaitStart; p != nil {
			p.SessionID = in.ID
			if _, err := s.insertPark(ctx, tx, *p, in.ID+"-start"); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `UPDATE sessions SET ambient_status = ? WHERE id = ?`, "parked ("+p.Reason+"): needs "+p.Needs, in.ID); err != nil {
				return err
			}
		}
		out, err = s.getSession(ctx, tx, in.ID)
		created = true
		return err
	})
	if err != nil {
		return out, false, fmt.Errorf("create session: %w", err)
	}
	s.notify(out.ID)
	return out, created, nil
}

// setStatus moves a session to status (unless it is terminal: a stop or a
// failure always wins) and records a status event when anything changed.
func (s *base) setStatus(ctx context.Context, tx *txn, id string, status session.Status, phase session.RuntimePhase, errMsg string) error {
	cur, err := s.getSession(ctx, tx, id)
	if err != nil {
		return err
	}
	if cur.Status.Terminal() || (cur.Status == status && cur.RuntimePhase == phase) {
		return nil
	}
	failureReason := ""
	if status == session.StatusFailed {
		failureReason = session.TrimRunes(firstLine(errMsg), 120)
	}
	_, err = tx.ExecContext(ctx, `UPDATE sessions SET status = ?, runtime_phase = ?, error = CASE WHEN ? = '' THEN error ELSE ? END,
		failure_reason = CASE WHEN ? = '' THEN failure_reason ELSE ? END, updated_at = ? WHERE id = ? AND status NOT IN ('failed', 'stopped')`,
		status, phase, errMsg, errMsg, failureReason, failureReason, s.ts(), id)
	if err != nil {
		return err
	}
	if status.Terminal() {
		// Credentials never outlive their session.
		if _, err := tx.ExecContext(ctx, `DELETE FROM session_credentials WHERE session_id = ?`, id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM agent_slots WHERE session_id = ?`, id); err != nil {
			return err
		}
		// Commands that will never be dispatched now settle as canceled,
		// held ones (a park's recovery, a trigger delivery) with them, and
		// open parks resolve canceled: nothing waits on an ended session.
		if _, err := tx.ExecContext(ctx, `UPDATE commands SET state = 'canceled', error = ?, updated_at = ? WHERE session_id = ? AND state IN ('pending', 'dispatching', 'held') AND kind != 'stop'`, "the session ended ("+string(status)+") before it ran", s.ts(), id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE parks SET resolved_at = ?, resolution = ?, note = 'the session ended' WHERE session_id = ? AND resolved_at IS NULL`, s.ts(), session.ParkCanceled, id); err != nil {
			return err
		}
	}
	return s.appendJSON(ctx, tx, id, "", session.EventStatus, "", session.StatusData{Status: status, RuntimePhase: phase, Error: errMsg})
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func (s *base) update(ctx context.Context, id string, fn func(tx *txn) error) error {
	err := s.tx(ctx, func(tx *txn) error {
		if _, err := s.getSession(ctx, tx, id); err != nil {
			return err
		}
		return fn(tx)
	})
	if err == nil {
		s.notify(id)
	}
	return err
}

// SetRuntimePhase implements store.Store.
func (s Sessions) SetRuntimePhase(ctx context.Context, id string, phase session.RuntimePhase) error {
	return s.update(ctx, id, func(tx *txn) error {
		cur, err := s.getSession(ctx, tx, id)
		if err != nil {
			return err
		}
		return s.setStatus(ctx, tx, id, cur.Status, phase, "")
	})
}

// SetWorkspace implements store.Store.
func (s Sessions) SetWorkspace(ctx context.Context, id, node, workdir, baseCommit string) error {
	return s.update(ctx, id, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `UPDATE sessions SET node = ?, workdir = ?, base_commit = ?, updated_at = ? WHERE id = ?`, node, workdir, baseCommit, s.ts(), id)
		return err
	})
}

// SetDisplay implements store.Store.
func (s Sessions) SetDisplay(ctx context.Context, id, title, ambient string) error {
	return s.update(ctx, id, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `UPDATE sessions SET display_title = CASE WHEN ? = '' THEN display_title ELSE ? END, ambient_status = ?, updated_at = ? WHERE id = ?`,
			title, session.TrimRunes(title, session.MaxDisplayTitle), session.TrimRunes(firstLine(ambient), 200), s.ts(), id)
		return err
	})
}

// MarkStarted implements store.Store.
func (s Sessions) MarkStarted(ctx context.Context, id string) error {
	return s.update(ctx, id, func(tx *txn) error {
		cur, err := s.getSession(ctx, tx, id)
		if err != nil || cur.Status != session.StatusQueued {
			return err
		}
		return s.setStatus(ctx, tx, id, session.StatusAwaiting, "", "")
	})
}

// SetHold implements store.Store.
func (s Sessions) SetHold(ctx context.Context, id string, h *session.Hold) error {
	v := ""
	if h != nil {
		b, _ := json.Marshal(h)
		v = string(b)
	}
	err := s.update(ctx, id, func(tx *txn) error {
		cur, err := s.getSession(ctx, tx, id)
		if err != nil {
			return err
		}
		if (h != nil) == cur.Held() {
			if h != nil {
				return fmt.Errorf("session %s is already held by %s: %w", id, cur.Hold.By, errdefs.ErrConflict)
			}
			return fmt.Errorf("session %s is not held: %w", id, errdefs.ErrConflict)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET hold = ?, updated_at = ? WHERE id = ?`, v, s.ts(), id); err != nil {
			return err
		}
		text := "released"
		if h != nil {
			text = "held by " + h.By.String() + ": " + h.Reason
		}
		return s.appendJSON(ctx, tx, id, "", session.EventNotice, "hold/"+s.ts(), session.TextData{Text: text})
	})
	return wrap(err, "hold")
}

// Repair implements store.Store.
func (s Sessions) Repair(ctx context.Context, id string) (bool, error) {
	repaired := false
	err := s.update(ctx, id, func(tx *txn) error {
		cur, err := s.getSession(ctx, tx, id)
		if err != nil || (cur.Status != session.StatusQueued && cur.Status != session.StatusRunning) {
			return err
		}
		var active int
		if err := tx.QueryRowContext(ctx, `SELECT
			(SELECT COUNT(*) FROM commands WHERE session_id = ? AND state IN ('pending', 'dispatching')) +
			(SELECT COUNT(*) FROM turns WHERE session_id = ? AND status IN ('accepted', 'in_progress'))`, id, id).Scan(&active); err != nil {
			return err
		}
		if active > 0 {
			return nil
		}
		repaired = true
		return s.setStatus(ctx, tx, id, session.StatusAwaiting, "", "")
	})
	return repaired, err
}

// FailSession implements store.Store.
func (s Sessions) FailSession(ctx context.Context, id, errMsg string) error {
	return s.update(ctx, id, func(tx *txn) error {
		return s.setStatus(ctx, tx, id, session.StatusFailed, "", errMsg)
	})
}

// StopSession implements store.Store.
func (s Sessions) StopSession(ctx context.Context, id string, p session.StopPayload) error {
	return s.update(ctx, id, func(tx *txn) error {
		cur, err := s.getSession(ctx, tx, id)
		if err != nil || cur.Status.Terminal() {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE sessions SET stop_reason = ?, respawn = ?, handoff = ?, updated_at = ? WHERE id = ?`,
			p.Reason, p.Respawn, session.TrimRunes(p.Handoff, session.MaxHandoff), s.ts(), id)
		if err != nil {
			return err
		}
		return s.setStatus(ctx, tx, id, session.StatusStopped, "", "")
	})
}

// Archive implements store.Store.
func (s Sessions) Archive(ctx context.Context, id string, by session.Sender, handoff string) error {
	return s.update(ctx, id, func(tx *txn) error {
		if handoff != "" {
			if _, err := tx.ExecContext(ctx, `UPDATE sessions SET handoff = ? WHERE id = ?`, session.TrimRunes(handoff, session.MaxHandoff), id); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `UPDATE sessions SET archived_at = ?, updated_at = ? WHERE id = ? AND archived_at IS NULL`, s.ts(), s.ts(), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		var url string
		switch err := tx.QueryRowContext(ctx, `SELECT url FROM bindings WHERE session_id = ? AND held <> 0 AND released_at IS NULL`, id).Scan(&url); {
		case err == nil && by.Kind != session.SenderOperator:
			return &session.HeldError{URL: url}
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return err
		}
		// Archiving releases the session's bindings, in the same transaction.
		if _, err := tx.ExecContext(ctx, `UPDATE bindings SET released_at = ?, released_by = ? WHERE session_id = ? AND released_at IS NULL`, s.ts(), by.String(), id); err != nil {
			return err
		}
		if sealed, err := s.sealed(ctx, tx, id); err != nil || sealed {
			return err // filing away an ended session adds nothing to its sealed log
		}
		return s.appendJSON(ctx, tx, id, "", session.EventNotice, "", session.TextData{Text: "archived by " + by.String(), Sender: &by})
	})
}

// Deliver implements store.Store.
func (s Sessions) Deliver(ctx context.Context, id, base, next, delivery string, by session.Sender, note string) error {
	return s.update(ctx, id, func(tx *txn) error {
		cur, err := s.getSession(ctx, tx, id)
		if err != nil {
			return err
		}
		if cur.BaseCommit != base {
			return fmt.Errorf("session %s's diff against %.12s was already delivered (%s); its changes since are a new diff: %w", id, base, cur.Delivery, errdefs.ErrConflict)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET delivery = ?, base_commit = ?, updated_at = ? WHERE id = ?`, delivery, next, s.ts(), id); err != nil {
			return err
		}
		text := "diff " + delivery + " by " + by.String()
		if note != "" {
			text += ": " + note
		}
		return s.appendJSON(ctx, tx, id, "", session.EventNotice, "delivery/"+base+"/"+delivery, session.TextData{Text: text, Sender: &by})
	})
}

// remoteJSON is a session's remote repository as stored ("" for none).
func remoteJSON(r *session.Remote) string {
	if r == nil {
		return ""
	}
	b, _ := json.Marshal(r)
	return string(b)
}
