package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/paddock-dev/paddock/internal/audit"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store"
)

// appendAudit chains the audit entry of event e, in e's transaction: an
// event is never recorded without its entry, nor an entry without its
// event, so a crash leaves no gap that verifies as good.
func (s *Store) appendAudit(ctx context.Context, tx *sql.Tx, e session.Event) error {
	x, err := s.getSession(ctx, tx, e.SessionID)
	if err != nil {
		return err
	}
	if sealed, err := s.sealed(ctx, tx, e.SessionID); err != nil {
		return err
	} else if sealed {
		return fmt.Errorf("session %s's audit log is sealed: it gains no entries: %w", e.SessionID, store.ErrConflict)
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
	_, err = tx.ExecContext(ctx, `INSERT INTO audit (session_id, seq, entry, hash, leaf) VALUES (?, ?, ?, ?, ?)`, e.SessionID, entry.Seq, string(data), entry.Hash, leaf)
	return err
}

// treeReader reads the audit tree's stored hashes (in a transaction, or
// from the database).
type treeReader struct {
	q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}
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
func (s *Store) AuditTree(ctx context.Context) (int64, tlog.HashReader, error) {
	var size int64
	if err := s.db.QueryRowContext(ctx, `SELECT n FROM audit_leaves`).Scan(&size); err != nil {
		return 0, nil, fmt.Errorf("audit tree: %w", err)
	}
	return size, treeReader{s.db}, nil
}

// AuditLeaf implements store.Store.
func (s *Store) AuditLeaf(ctx context.Context, sessionID string, seq int64) (int64, string, error) {
	var leaf sql.NullInt64
	var data string
	err := s.db.QueryRowContext(ctx, `SELECT leaf, entry FROM audit WHERE session_id = ? AND seq = ?`, sessionID, seq).Scan(&leaf, &data)
	if err != nil {
		return 0, "", notFound("audit entry", sessionID, err)
	}
	if !leaf.Valid {
		return 0, "", fmt.Errorf("audit entry %d of session %s predates the tree: %w", seq, sessionID, store.ErrNotFound)
	}
	return leaf.Int64, data, nil
}

// AuditLog implements store.Store.
func (s *Store) AuditLog(ctx context.Context, sessionID string) ([]audit.Entry, error) {
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

// AuditSince implements store.Store.
func (s *Store) AuditSince(ctx context.Context, since time.Time, limit int) ([]audit.Entry, error) {
	all, err := queryAll(ctx, s.db, scanEntry, `SELECT entry FROM audit ORDER BY rowid`)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	out := all[:0]
	for _, e := range all {
		if e.Kind != "unreadable" && !e.Time.Before(since) && (limit <= 0 || len(out) < limit) {
			out = append(out, e)
		}
	}
	return out, nil
}

// SealAudit implements store.Store.
func (s *Store) SealAudit(ctx context.Context, seal audit.Seal) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
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
			return fmt.Errorf("seal of session %s: the log moved on (%d entries): %w", seal.Session, count, store.ErrConflict)
		}
		data, _ := json.Marshal(seal)
		_, err := tx.ExecContext(ctx, `INSERT INTO audit_seals (session_id, seal) VALUES (?, ?)`, seal.Session, string(data))
		return err
	})
}

// AuditSeal implements store.Store.
func (s *Store) AuditSeal(ctx context.Context, sessionID string) (*audit.Seal, error) {
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
func (s *Store) sealed(ctx context.Context, tx *sql.Tx, id string) (bool, error) {
	var n int
	err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM audit_seals WHERE session_id = ?`, id).Scan(&n)
	return n > 0, err
}
