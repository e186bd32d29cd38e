// Package sqlite is the SQLite backend of the store, on the pure-Go
// modernc.org/sqlite driver, with versioned migrations.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // database/sql driver "sqlite"

	"github.com/paddock-dev/paddock/internal/store"
)

// Store is a store.Store on one SQLite file.
type Store struct {
	db  *sql.DB
	now func() time.Time
	// Content seals the audit content of projects that retain it; nil
	// retains none.
	Content Encrypter

	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

var _ store.Store = (*Store)(nil)

// Encrypter seals content bound to associated data (vault.Key).
type Encrypter interface {
	Encrypt(plain, ad []byte) []byte
}

// Open opens (creating if needed) the database at path and migrates it.
// now is the clock; nil means time.Now.
func Open(ctx context.Context, path string, now func() time.Time) (*Store, error) {
	if now == nil {
		now = time.Now
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	// One connection: SQLite has one writer, and a single connection makes
	// every transaction serial without "database is locked" retries.
	db.SetMaxOpenConns(1)
	s := &Store{db: db, now: now, subs: map[string]map[chan struct{}]struct{}{}}
	if err := s.migrate(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	// The record is Paddock's alone.
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		_ = os.Chmod(f, 0o600)
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

func (s *Store) migrate(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var have int
	if err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if have > len(migrations) {
		return fmt.Errorf("migrate: database schema version %d is newer than this binary knows (%d); upgrade paddock", have, len(migrations))
	}
	for v := have + 1; v <= len(migrations); v++ {
		err := s.tx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, migrations[v-1]); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, v, s.ts())
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate to version %d: %w", v, err)
		}
	}
	return nil
}

const timeFormat = time.RFC3339Nano

func (s *Store) ts() string { return s.now().UTC().Format(timeFormat) }

func parseTime(v string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, v)
	return t
}

// tx runs fn in a transaction, committing on nil and rolling back otherwise.
func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func notFound(what, id string, err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s %q: %w", what, id, store.ErrNotFound)
	}
	return err
}

// within is the condition "col is one of values" (false for none).
func within(col string, values []string) (string, []any) {
	if len(values) == 0 {
		return "0", nil
	}
	args := make([]any, len(values))
	for i, v := range values {
		args[i] = v
	}
	return col + " IN (" + strings.TrimSuffix(strings.Repeat("?,", len(values)), ",") + ")", args
}

func isUnique(err error) bool {
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}

// Subscribe implements store.Store.
func (s *Store) Subscribe(sessionID string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	if s.subs[sessionID] == nil {
		s.subs[sessionID] = map[chan struct{}]struct{}{}
	}
	s.subs[sessionID][ch] = struct{}{}
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		delete(s.subs[sessionID], ch)
		if len(s.subs[sessionID]) == 0 {
			delete(s.subs, sessionID)
		}
		s.mu.Unlock()
	}
}

func (s *Store) notify(sessionID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.subs[sessionID] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// scanner is one row: *sql.Row or *sql.Rows.
type scanner interface{ Scan(...any) error }

// queryer runs queries: the database or a transaction.
type queryer interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}

// queryAll runs a query and scans every row it returns.
func queryAll[T any](ctx context.Context, q queryer, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
