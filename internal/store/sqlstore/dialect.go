package sqlstore

import (
	"context"
	"database/sql"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/paddock-dev/paddock/internal/session"
)

// dialect is what differs between SQLite and PostgreSQL; every query is
// written once, in SQLite's spelling with ? placeholders, and rebound.
type dialect struct {
	name string
	// numbered turns ? placeholders into $1, $2, … (PostgreSQL).
	numbered bool
	// ddl rewrites a migration's column types.
	ddl func(string) string
	// txLock is run first in every transaction: PostgreSQL's nodes and
	// connections take one lock so that transactions apply one at a time,
	// as SQLite's single writer does (every read-then-write stays atomic).
	txLock string
	// jsonText is the text of a JSON column's top-level field.
	jsonText func(col, field string) string

	cache sync.Map // query → rebound query
}

var sqliteDialect = &dialect{
	name: "sqlite",
	ddl:  func(s string) string { return s },
	jsonText: func(col, field string) string {
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

var postgresDialect = &dialect{
	name:     "postgres",
	numbered: true,
	ddl: func(s string) string {
		s = pgInteger.ReplaceAllString(s, "BIGINT")
		s = pgReal.ReplaceAllString(s, "DOUBLE PRECISION")
		return pgBlob.ReplaceAllString(s, "BYTEA")
	},
	txLock: "SELECT pg_advisory_xact_lock(" + strconv.Itoa(txLockKey) + ")",
	jsonText: func(col, field string) string {
		return "(" + col + "::jsonb ->> '" + field + "')"
	},
}

// rebind writes query in the dialect's placeholders.
func (d *dialect) rebind(query string) string {
	if !d.numbered {
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

// values writes args as the dialect stores them: booleans are 0 and 1
// (INTEGER columns, as SQLite has no boolean).
func (d *dialect) values(args []any) []any {
	if !d.numbered {
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

// conn is the database in the dialect's spelling.
type conn struct {
	*sql.DB
	d *dialect
}

func (c *conn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return c.DB.ExecContext(ctx, c.d.rebind(q), c.d.values(args)...)
}

func (c *conn) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return c.DB.QueryContext(ctx, c.d.rebind(q), c.d.values(args)...)
}

func (c *conn) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return c.DB.QueryRowContext(ctx, c.d.rebind(q), c.d.values(args)...)
}

// txn is a transaction in the dialect's spelling.
type txn struct {
	*sql.Tx
	d *dialect
	// appended are the events written in it.
	appended []session.Event
}

func (t *txn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return t.Tx.ExecContext(ctx, t.d.rebind(q), t.d.values(args)...)
}

func (t *txn) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return t.Tx.QueryContext(ctx, t.d.rebind(q), t.d.values(args)...)
}

func (t *txn) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return t.Tx.QueryRowContext(ctx, t.d.rebind(q), t.d.values(args)...)
}
