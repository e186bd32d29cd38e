package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/paddock-dev/paddock/internal/audit"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/store/sqlstore/dialect"
)

// appendAudit chains the audit entry of event e, in e's transaction: an
// event is never recorded without its entry, nor an entry without its
// event, so a crash leaves no gap that verifies as good.
func (s *base) appendAudit(ctx context.Context, tx *txn, e session.Event) error {
	x, err := s.getSession(ctx, tx, e.SessionID)
	if err != nil {
		return err
	}
	if sealed, err := s.sealed(ctx, tx, e.SessionID); err != nil {
		return err
	} else if sealed {
		return fmt.Errorf("session %s's audit log is sealed: it gains no entries: %w", e.SessionID, errdefs.ErrConflict)
	}
	var prev *audit.Entry
	if e.Seq > 1 {
		var raw string
		err := tx.QueryRowContext(ctx, `SELECT entry FROM audit WHERE session_id = ? AND seq = ?`, e.SessionID, e.Seq-1).Scan(&raw)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			// A session older than its audit log: the log starts here, and
			// verification says it does not start at its beginning.
		case err != nil:
			return fmt.Errorf("audit: the entry before %d: %w", e.Seq, err)
		default:
			var p audit.Entry
			if err := json.Unmarshal([]byte(raw), &p); err != nil {
				return fmt.Errorf("audit: the entry before %d is unreadable: %w", e.Seq, err)
			}
			prev = &p
		}
	}
	entry := audit.Link(prev, audit.FromEvent(x, e))
	if entry.Seq != e.Seq {
		entry.Seq = e.Seq
		entry.Hash = entry.Sum()
	}
	if err := s.insertEntry(ctx, tx, entry); err != nil {
		return err
	}
	return s.retainContent(ctx, tx, x, e, entry)
}

// treeReader reads the audit tree's stored hashes (in a transaction, or
// from the database).
type treeReader struct {
	q dialect.RowQueryer
}

// ReadHashes implements tlog.HashReader.
func (r treeReader) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, idx := range indexes {
		var b []byte
		if err := r.q.QueryRowContext(context.Background(), `SELECT hash FROM audit_tree WHERE idx = ?`, idx).Scan(&b); err != nil {
			return nil, fmt.Errorf("audit tree hash %d: %w", idx, err)
		}
		copy(out[i][:], b)
	}
	return out, nil
}

// AuditTree implements store.Store.
func (s Audit) AuditTree(ctx context.Context) (int64, tlog.HashReader, error) {
	var size int64
	if err := s.db.QueryRowContext(ctx, `SELECT n FROM audit_leaves`).Scan(&size); err != nil {
		return 0, nil, fmt.Errorf("audit tree: %w", err)
	}
	return size, treeReader{s.db}, nil
}

// AuditLeaf implements store.Store.
func (s Audit) AuditLeaf(ctx context.Context, sessionID string, seq int64) (int64, string, error) {
	var leaf sql.NullInt64
	var data string
	err := s.db.QueryRowContext(ctx, `SELECT leaf, entry FROM audit WHERE session_id = ? AND seq = ?`, sessionID, seq).Scan(&leaf, &data)
	if err != nil {
		return 0, "", notFound("audit entry", sessionID, err)
	}
	if !leaf.Valid {
		return 0, "", fmt.Errorf("audit entry %d of session %s predates the tree: %w", seq, sessionID, errdefs.ErrNotFound)
	}
	return leaf.Int64, data, nil
}

// AuditLog implements store.Store.
func (s Audit) AuditLog(ctx context.Context, sessionID string) ([]audit.Entry, error) {
	out, err := queryAll(ctx, s.db, scanEntry, `SELECT entry FROM audit WHERE session_id = ? ORDER BY seq`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	for i := range out {
		if out[i].Session == "" {
			out[i].Session = sessionID
		}
	}
	return out, nil
}

// scanEntry reads a stored entry; an unreadable one is kept as a broken
// entry, which verification names.
func scanEntry(row scanner) (audit.Entry, error) {
	var raw string
	if err := row.Scan(&raw); err != nil {
		return audit.Entry{}, err
	}
	var e audit.Entry
	if err := json.Unmarshal([]byte(raw), &e); err != nil {
		return audit.Entry{Kind: "unreadable"}, nil
	}
	return e, nil
}

// AuditAfter implements store.Store.
func (s Audit) AuditAfter(ctx context.Context, leaf int64, limit int) ([]audit.Entry, int64, error) {
	if limit <= 0 {
		limit = -1
	}
	type row struct {
		e    audit.Entry
		leaf int64
	}
	rows, err := queryAll(ctx, s.db, func(r scanner) (row, error) {
		var raw string
		var x row
		if err := r.Scan(&raw, &x.leaf); err != nil {
			return x, err
		}
		if err := json.Unmarshal([]byte(raw), &x.e); err != nil {
			x.e = audit.Entry{Kind: "unreadable"}
		}
		return x, nil
	}, `SELECT entry, leaf FROM audit WHERE leaf > ? ORDER BY leaf LIMIT ?`, leaf, limit)
	if err != nil {
		return nil, leaf, fmt.Errorf("audit: %w", err)
	}
	out := make([]audit.Entry, len(rows))
	for i, r := range rows {
		out[i], leaf = r.e, r.leaf
	}
	return out, leaf, nil
}

// retainContent keeps e's content, sealed, when its project retains
// content (in e's transaction).
func (s *base) retainContent(ctx context.Context, tx *txn, x session.Session, e session.Event, entry audit.Entry) error {
	if s.Content == nil || len(e.Data) == 0 {
		return nil
	}
	var ns int64
	err := tx.QueryRowContext(ctx, `SELECT content_retention_ns FROM projects WHERE name = ?`, x.Project).Scan(&ns)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && ns <= 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("content retention: %w", err)
	}
	expires := s.now().Add(time.Duration(ns)).UTC().Format(timeFormat)
	_, err = tx.ExecContext(ctx, `INSERT INTO audit_content (session_id, seq, expires_at, sealed) VALUES (?, ?, ?, ?)`,
		e.SessionID, e.Seq, expires, s.Content.Encrypt(e.Data, audit.ContentAD(entry)))
	return err
}

// AuditContent implements store.Store.
func (s Audit) AuditContent(ctx context.Context, sessionID string) (map[int64][]byte, error) {
	type row struct {
		seq    int64
		sealed []byte
	}
	rows, err := queryAll(ctx, s.db, func(r scanner) (row, error) {
		var x row
		return x, r.Scan(&x.seq, &x.sealed)
	}, `SELECT seq, sealed FROM audit_content WHERE session_id = ? AND expires_at > ?`, sessionID, s.ts())
	if err != nil {
		return nil, fmt.Errorf("audit content: %w", err)
	}
	out := make(map[int64][]byte, len(rows))
	for _, r := range rows {
		out[r.seq] = r.sealed
	}
	return out, nil
}

// ExpireAuditContent implements store.Store.
func (s Audit) ExpireAuditContent(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM audit_content WHERE expires_at <= ?`, now.UTC().Format(timeFormat))
	if err != nil {
		return 0, fmt.Errorf("expire audit content: %w", err)
	}
	return res.RowsAffected()
}

// SetContentRetention implements store.Store.
func (s Audit) SetContentRetention(ctx context.Context, project string, d time.Duration) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO projects (name, created_at, content_retention_ns) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET content_retention_ns = excluded.content_retention_ns`, project, s.ts(), int64(d))
	return wrap(err, "set content retention")
}

// ContentRetention implements store.Store.
func (s Audit) ContentRetention(ctx context.Context, project string) (time.Duration, error) {
	var ns int64
	err := s.db.QueryRowContext(ctx, `SELECT content_retention_ns FROM projects WHERE name = ?`, project).Scan(&ns)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return time.Duration(ns), err
}

// SealAudit implements store.Store.
func (s Audit) SealAudit(ctx context.Context, seal audit.Seal) error {
	return s.tx(ctx, func(tx *txn) error {
		if sealed, err := s.sealed(ctx, tx, seal.Session); err != nil || sealed {
			return err // sealed once
		}
		var head sql.NullString
		var count int64
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*), (SELECT hash FROM audit WHERE session_id = ? ORDER BY seq DESC LIMIT 1) FROM audit WHERE session_id = ?`,
			seal.Session, seal.Session).Scan(&count, &head); err != nil {
			return err
		}
		if count != seal.Count || head.String != seal.Head {
			return fmt.Errorf("seal of session %s: the log moved on (%d entries): %w", seal.Session, count, errdefs.ErrConflict)
		}
		data, _ := json.Marshal(seal)
		_, err := tx.ExecContext(ctx, `INSERT INTO audit_seals (session_id, seal) VALUES (?, ?)`, seal.Session, string(data))
		return err
	})
}

// AuditSeal implements store.Store.
func (s Audit) AuditSeal(ctx context.Context, sessionID string) (*audit.Seal, error) {
	var raw string
	err := s.db.QueryRowContext(ctx, `SELECT seal FROM audit_seals WHERE session_id = ?`, sessionID).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit seal: %w", err)
	}
	var seal audit.Seal
	if err := json.Unmarshal([]byte(raw), &seal); err != nil {
		return &audit.Seal{Session: sessionID}, nil // unreadable: verification says so
	}
	return &seal, nil
}

// sealed says whether a session's audit log is sealed.
func (s *base) sealed(ctx context.Context, tx *txn, id string) (bool, error) {
	var n int
	err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM audit_seals WHERE session_id = ?`, id).Scan(&n)
	return n > 0, err
}

// insertEntry stores a linked entry as the next leaf of the Merkle tree of
// every entry (the leaf count is kept apart: no change to the entries
// moves it).
func (s *base) insertEntry(ctx context.Context, tx *txn, entry audit.Entry) error {
	data, _ := json.Marshal(entry)
	// The entry is also the next leaf of the Merkle tree of every entry.
	// The leaf count is kept apart: no change to the entries moves it.
	var leaf int64
	if err := tx.QueryRowContext(ctx, `SELECT n FROM audit_leaves`).Scan(&leaf); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE audit_leaves SET n = n + 1`); err != nil {
		return err
	}
	hashes, err := tlog.StoredHashes(leaf, data, treeReader{tx})
	if err != nil {
		return fmt.Errorf("audit tree: %w", err)
	}
	first := tlog.StoredHashIndex(0, leaf)
	for i, h := range hashes {
		if _, err := tx.ExecContext(ctx, `INSERT INTO audit_tree (idx, hash) VALUES (?, ?)`, first+int64(i), h[:]); err != nil {
			return err
		}
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO audit (session_id, seq, entry, hash, leaf) VALUES (?, ?, ?, ?, ?)`, entry.Session, entry.Seq, string(data), entry.Hash, leaf)
	return err
}

// AppendAccess implements store.Store.
func (s Audit) AppendAccess(ctx context.Context, e audit.Entry) (audit.Entry, error) {
	var out audit.Entry
	err := s.tx(ctx, func(tx *txn) error {
		var prev *audit.Entry
		var raw string
		err := tx.QueryRowContext(ctx, `SELECT entry FROM audit WHERE session_id = ? ORDER BY seq DESC LIMIT 1`, audit.AccessLog).Scan(&raw)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		default:
			var p audit.Entry
			if err := json.Unmarshal([]byte(raw), &p); err != nil {
				return fmt.Errorf("access log: the last entry is unreadable: %w", err)
			}
			prev = &p
		}
		e.Session = audit.AccessLog
		if e.Time.IsZero() {
			e.Time = parseTime(s.ts())
		}
		out = audit.Link(prev, e)
		return s.insertEntry(ctx, tx, out)
	})
	return out, err
}

// AuditLeaves implements store.Store.
func (s Audit) AuditLeaves(ctx context.Context, after int64, limit int) ([]store.AuditLeaf, error) {
	out, err := queryAll(ctx, s.db, func(r scanner) (store.AuditLeaf, error) {
		var l store.AuditLeaf
		return l, r.Scan(&l.Leaf, &l.Session, &l.Seq, &l.Data)
	}, `SELECT leaf, session_id, seq, entry FROM audit WHERE leaf > ? ORDER BY leaf LIMIT ?`, after, limit)
	return out, wrap(err, "audit leaves")
}

// SaveAuditCheckpoint implements store.Store.
func (s Audit) SaveAuditCheckpoint(ctx context.Context, size int64, note string) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO audit_checkpoints (size, note, published_at) VALUES (?, ?, ?) ON CONFLICT (size) DO NOTHING`, size, note, s.ts())
	return wrap(err, "keep audit checkpoint")
}

// AuditCheckpoints implements store.Store.
func (s Audit) AuditCheckpoints(ctx context.Context) ([]string, error) {
	return queryAll(ctx, s.db, func(r scanner) (string, error) {
		var n string
		return n, r.Scan(&n)
	}, `SELECT note FROM audit_checkpoints ORDER BY size`)
}

// UseAuditKey implements store.Store.
func (s Audit) UseAuditKey(ctx context.Context, public string) ([]string, error) {
	var before []string
	err := s.tx(ctx, func(tx *txn) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM audit_keys WHERE public = ?`, public).Scan(&n); err != nil || n > 0 {
			return err
		}
		var err error
		if before, err = queryAll(ctx, tx, func(r scanner) (string, error) {
			var k string
			return k, r.Scan(&k)
		}, `SELECT public FROM audit_keys ORDER BY first_used, public`); err != nil {
			return err
		}
		if before == nil {
			before = []string{}
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO audit_keys (public, first_used) VALUES (?, ?)`, public, s.ts())
		return err
	})
	return before, err
}

// AuditKeys implements store.Store.
func (s Audit) AuditKeys(ctx context.Context) ([]string, error) {
	return queryAll(ctx, s.db, func(r scanner) (string, error) {
		var k string
		return k, r.Scan(&k)
	}, `SELECT public FROM audit_keys ORDER BY first_used, public`)
}
