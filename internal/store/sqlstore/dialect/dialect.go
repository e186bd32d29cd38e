// Package dialect is what differs between the store's two databases,
// SQLite and PostgreSQL: placeholders, column types, values, the
// transaction lock, JSON fields and uniqueness errors.
package dialect

import (
	"context"
	"database/sql"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
)

// Dialect is what differs between SQLite and PostgreSQL; every query is
// written once, in SQLite's spelling with ? placeholders, and rebound.
type Dialect struct {
	Name string
	// Numbered turns ? placeholders into $1, $2, … (PostgreSQL).
	Numbered bool
	// DDL rewrites a migration's column types.
	DDL func(string) string
	// TxLock is run first in every transaction: PostgreSQL's nodes and
	// connections take one lock so that transactions apply one at a time,
	// as SQLite's single writer does (every read-then-write stays atomic).
	TxLock string
	// JSONText is the text of a JSON column's top-level field.
	JSONText func(col, field string) string

	cache sync.Map // query → rebound query
}

// SQLite is the embedded default's dialect.
var SQLite = &Dialect{
	Name: "sqlite",
	DDL:  func(s string) string { return s },
	JSONText: func(col, field string) string {
		return "json_extract(" + col + ", '$." + field + "')"
	},
}

var (
	pgInteger = regexp.MustCompile(`\bINTEGER\b`)
	pgReal    = regexp.MustCompile(`\bREAL\b`)
	pgBlob    = regexp.MustCompile(`\bBLOB\b`)
)

// txLockKey is the advisory lock every PostgreSQL transaction of the store
// holds ("paddock" in ASCII).
const txLockKey = 0x7061646465636b

// Postgres is PostgreSQL's dialect.
var Postgres = &Dialect{
	Name:     "postgres",
	Numbered: true,
	DDL: func(s string) string {
		s = pgInteger.ReplaceAllString(s, "BIGINT")
		s = pgReal.ReplaceAllString(s, "DOUBLE PRECISION")
		return pgBlob.ReplaceAllString(s, "BYTEA")
	},
	TxLock: "SELECT pg_advisory_xact_lock(" + strconv.Itoa(txLockKey) + ")",
	JSONText: func(col, field string) string {
		return "(" + col + "::jsonb ->> '" + field + "')"
	},
}

// Rebind writes query in the dialect's placeholders.
func (d *Dialect) Rebind(query string) string {
	if !d.Numbered {
		return query
	}
	if q, ok := d.cache.Load(query); ok {
		return q.(string)
	}
	var b strings.Builder
	n, quoted := 0, false
	for _, r := range query {
		switch {
		case r == '\'':
			quoted = !quoted
		case r == '?' && !quoted:
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	d.cache.Store(query, b.String())
	return b.String()
}

// Values writes args as the dialect stores them: booleans are 0 and 1
// (INTEGER columns, as SQLite has no boolean).
func (d *Dialect) Values(args []any) []any {
	if !d.Numbered {
		return args
	}
	for i, a := range args {
		switch v := a.(type) {
		case bool:
			if args[i] = int64(0); v {
				args[i] = int64(1)
			}
		case string:
			// PostgreSQL's text holds valid UTF-8 without NUL; SQLite's any
			// bytes. What a model or a provider wrote is kept, marked.
			if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
				args[i] = strings.ReplaceAll(strings.ToValidUTF8(v, "\uFFFD"), "\x00", "\uFFFD")
			}
		}
	}
	return args
}

// Scanner is one row: *sql.Row or *sql.Rows.
type Scanner interface{ Scan(...any) error }

// Queryer runs queries: the database or a transaction.
type Queryer interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}

// RowQueryer reads one row: the database or a transaction.
type RowQueryer interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

// QueryAll runs a query and scans every row it returns.
func QueryAll[T any](ctx context.Context, q Queryer, scan func(Scanner) (T, error), query string, args ...any) ([]T, error) {
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

// DB is a database in its dialect's spelling: every query written once,
// with ? placeholders, rebound and its values written as the dialect
// stores them. The store's roles share one.
type DB struct {
	*sql.DB
	Dialect *Dialect
}

// ExecContext runs q in the dialect.
func (c *DB) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return c.DB.ExecContext(ctx, c.Dialect.Rebind(q), c.Dialect.Values(args)...)
}

// QueryContext runs q in the dialect.
func (c *DB) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return c.DB.QueryContext(ctx, c.Dialect.Rebind(q), c.Dialect.Values(args)...)
}

// QueryRowContext runs q in the dialect.
func (c *DB) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return c.DB.QueryRowContext(ctx, c.Dialect.Rebind(q), c.Dialect.Values(args)...)
}

// Tx is a transaction in its dialect's spelling.
type Tx struct {
	*sql.Tx
	Dialect *Dialect
}

// ExecContext runs q in the dialect.
func (t *Tx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return t.Tx.ExecContext(ctx, t.Dialect.Rebind(q), t.Dialect.Values(args)...)
}

// QueryContext runs q in the dialect.
func (t *Tx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return t.Tx.QueryContext(ctx, t.Dialect.Rebind(q), t.Dialect.Values(args)...)
}

// QueryRowContext runs q in the dialect.
func (t *Tx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return t.Tx.QueryRowContext(ctx, t.Dialect.Rebind(q), t.Dialect.Values(args)...)
}

// InTx runs fn in a transaction holding the dialect's lock, committed
// when fn returns nil.
func (c *DB) InTx(ctx context.Context, fn func(*Tx) error) error {
	raw, err := c.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	tx := &Tx{Tx: raw, Dialect: c.Dialect}
	if c.Dialect.TxLock != "" {
		if _, err := tx.ExecContext(ctx, c.Dialect.TxLock); err != nil {
			_ = raw.Rollback()
			return err
		}
	}
	if err := fn(tx); err != nil {
		_ = raw.Rollback()
		return err
	}
	return raw.Commit()
}

// Within is the condition "col is one of values" (false for none).
func Within(col string, values []string) (string, []any) {
	if len(values) == 0 {
		return "1 = 0", nil
	}
	args := make([]any, len(values))
	for i, v := range values {
		args[i] = v
	}
	return col + " IN (" + strings.TrimSuffix(strings.Repeat("?,", len(values)), ",") + ")", args
}

// IsUnique says err is a violated uniqueness constraint (SQLite's words,
// or PostgreSQL's code 23505).
func IsUnique(err error) bool {
	var pe *pgconn.PgError
	return err != nil && (strings.Contains(err.Error(), "UNIQUE constraint failed") || errors.As(err, &pe) && pe.Code == "23505")
}
