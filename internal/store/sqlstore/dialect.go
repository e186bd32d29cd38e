package sqlstore

import (
	"context"
	"database/sql"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store/sqlstore/dialect"
)

// conn is the database in the dialect's spelling.
type conn = dialect.DB

// txn is a transaction in the dialect's spelling.
type txn struct {
	*sql.Tx
	d *dialect.Dialect
	// appended are the events written in it.
	appended []session.Event
}

func (t *txn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return t.Tx.ExecContext(ctx, t.d.Rebind(q), t.d.Values(args)...)
}

func (t *txn) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return t.Tx.QueryContext(ctx, t.d.Rebind(q), t.d.Values(args)...)
}

func (t *txn) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return t.Tx.QueryRowContext(ctx, t.d.Rebind(q), t.d.Values(args)...)
}
