// Package sqlstore is the store on SQL: SQLite (the embedded default, on
// the pure-Go modernc.org/sqlite driver) or PostgreSQL (pgx, for several
// nodes), one implementation in two dialects, with versioned migrations.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "modernc.org/sqlite"             // database/sql driver "sqlite"

	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/store/sqlstore/attachments"
	"github.com/paddock-dev/paddock/internal/store/sqlstore/chats"
	"github.com/paddock-dev/paddock/internal/store/sqlstore/dialect"
	"github.com/paddock-dev/paddock/internal/store/sqlstore/forgelinks"
	"github.com/paddock-dev/paddock/internal/store/sqlstore/migrations"
)

// Store is a store.Store on a SQLite file or a PostgreSQL database.
type Store struct {
	*base
	Agents
	Approvals
	Sessions
	Commands
	Turns
	Parks
	Connections
	chats.Chats
	forgelinks.ForgeLinks
	attachments.Attachments
	Identity
	Audit
	History
	Events
}

// base is what every role of the store shares: the connection, its
// dialect, the clock, the subscriptions.
type base struct {
	db  *conn
	d   *dialect.Dialect
	now func() time.Time
	// Content seals the audit content of projects that retain it; nil
	// retains none.
	Content Encrypter
	// Appended, when set, is told of every event written, once its
	// transaction committed (an event found by its key is not written).
	Appended func(session.Event)

	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
	// outbox holds the sessions to announce to other nodes; stopListening
	// ends the listener and the announcer (both nil on SQLite).
	outbox        chan string
	stopListening func()
}

var _ store.Store = (*Store)(nil)

// newStore is the store whose roles all share b.
func newStore(b *base) *Store {
	return &Store{base: b, Agents: Agents{b}, Approvals: Approvals{b}, Sessions: Sessions{b}, Commands: Commands{b}, Turns: Turns{b}, Parks: Parks{b}, Connections: Connections{b}, Chats: chats.Chats{DB: b.db, Now: b.now}, ForgeLinks: forgelinks.ForgeLinks{DB: b.db, Now: b.now}, Attachments: attachments.Attachments{DB: b.db, Now: b.now}, Identity: Identity{b}, Audit: Audit{b}, History: History{b}, Events: Events{b}}
}

// The store's roles (package store), each over the one base.
type (
	Agents      struct{ *base }
	Approvals   struct{ *base }
	Sessions    struct{ *base }
	Commands    struct{ *base }
	Turns       struct{ *base }
	Parks       struct{ *base }
	Connections struct{ *base }
	Identity    struct{ *base }
	Audit       struct{ *base }
	History     struct{ *base }
	Events      struct{ *base }
)

// Encrypter seals content bound to associated data (vault.Key).
type Encrypter interface {
	Encrypt(plain, ad []byte) []byte
}

// Open opens the store at dsn and migrates it: a postgres:// (or
// postgresql://) URL, else the path of a SQLite file (created if needed).
// now is the clock; nil means time.Now.
func Open(ctx context.Context, dsn string, now func() time.Time) (*Store, error) {
	if now == nil {
		now = time.Now
	}
	if IsPostgres(dsn) {
		return openPostgres(ctx, dsn, now)
	}
	return openSQLite(ctx, dsn, now)
}

// IsPostgres says dsn names a PostgreSQL database.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

func openPostgres(ctx context.Context, dsn string, now func() time.Time) (*Store, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", redactURL(err, dsn))
	}
	db.SetMaxOpenConns(16)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("the PostgreSQL database cannot be reached (PADDOCK_DATABASE_URL): %w", redactURL(err, dsn))
	}
	s := newStore(&base{db: &conn{DB: db, Dialect: dialect.Postgres}, d: dialect.Postgres, now: now, subs: map[string]map[chan struct{}]struct{}{}})
	if err := s.migrate(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	lctx, stop := context.WithCancel(context.Background())
	s.outbox = make(chan string, 1024)
	var wg sync.WaitGroup
	wg.Go(func() { s.listen(lctx, dsn) })
	wg.Go(func() { s.announce(lctx) })
	s.stopListening = func() { stop(); wg.Wait() }
	return s, nil
}

// redactURL keeps a database password out of an error.
func redactURL(err error, dsn string) error {
	u, perr := url.Parse(dsn)
	if perr != nil || u.User == nil {
		return err
	}
	if p, ok := u.User.Password(); ok && p != "" {
		return errors.New(strings.ReplaceAll(err.Error(), p, "xxxxx"))
	}
	return err
}

func openSQLite(ctx context.Context, path string, now func() time.Time) (*Store, error) {
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
	s := newStore(&base{db: &conn{DB: db, Dialect: dialect.SQLite}, d: dialect.SQLite, now: now, subs: map[string]map[chan struct{}]struct{}{}})
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
func (s *Store) Close() error {
	if s.stopListening != nil {
		s.stopListening()
	}
	return s.db.Close()
}

// migrate applies the migrations this database has not had, each in its
// own transaction (under the store's lock on PostgreSQL: nodes starting
// together migrate one after the other).
func (s *base) migrate(ctx context.Context) error {
	if s.d == dialect.Postgres {
		// Stores opening a new database together create its first table
		// one after the other too.
		c, err := s.db.Conn(ctx)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		defer c.Close()
		if _, err := c.ExecContext(ctx, "SELECT pg_advisory_lock($1)", int64(migrateLock)); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		defer c.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(migrateLock)) //nolint:errcheck
	}
	if _, err := s.db.ExecContext(ctx, s.d.DDL(`CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)`)); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for v := 1; v <= len(migrations.All); v++ {
		err := s.tx(ctx, func(tx *txn) error {
			var have int
			if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
				return err
			}
			if have > len(migrations.All) {
				return fmt.Errorf("database schema version %d is newer than this binary knows (%d); upgrade paddock", have, len(migrations.All))
			}
			if have >= v {
				return nil
			}
			if _, err := tx.ExecContext(ctx, s.d.DDL(migrations.All[v-1])); err != nil {
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

// timeFormat writes times with a fixed width (every fraction digit, UTC's
// Z), so that their text sorts as the times do: rows are ordered and
// compared by it.
const timeFormat = "2006-01-02T15:04:05.000000000Z07:00"

func (s *base) ts() string { return s.now().UTC().Format(timeFormat) }

func parseTime(v string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, v)
	return t
}

// tx runs fn in a transaction, committing on nil and rolling back otherwise.
func (s *base) tx(ctx context.Context, fn func(*txn) error) error {
	raw, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	tx := &txn{Tx: raw, d: s.d}
	if s.d.TxLock != "" {
		if _, err := tx.ExecContext(ctx, s.d.TxLock); err != nil {
			_ = tx.Rollback()
			return err
		}
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	err = tx.Commit()
	for _, e := range tx.appended {
		if err == nil && s.Appended != nil {
			s.Appended(e)
		}
	}
	return err
}

func notFound(what, id string, err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s %q: %w", what, id, errdefs.ErrNotFound)
	}
	return err
}

// Subscribe implements store.Store.
func (s Events) Subscribe(sessionID string) (<-chan struct{}, func()) {
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

// notify wakes the subscribers of a session: this process's at once, and
// on PostgreSQL every other node's too (a NOTIFY each node's listener
// turns into its own wake-up; the subscribers' poll is the backstop).
func (s *base) notify(sessionID string) {
	s.wake(sessionID)
	if s.outbox != nil {
		select {
		case s.outbox <- sessionID:
		default: // a burst beyond the outbox: the subscribers' poll catches up
		}
	}
}

// announce sends other nodes the sessions that changed, off the writer's
// path, each once per burst.
func (s *base) announce(ctx context.Context) {
	for {
		var first string
		select {
		case <-ctx.Done():
			return
		case first = <-s.outbox:
		}
		ids := map[string]bool{first: true}
		for more := true; more; {
			select {
			case id := <-s.outbox:
				ids[id] = true
			default:
				more = false
			}
		}
		for id := range ids {
			nctx, cancel := context.WithTimeout(ctx, time.Second)
			_, _ = s.db.ExecContext(nctx, `SELECT pg_notify('`+notifyChannel+`', ?)`, id)
			cancel()
		}
	}
}

// notifyChannel is the PostgreSQL channel of changed sessions.
const notifyChannel = "paddock_sessions"

// listen turns the other nodes' notifications into wake-ups until ctx
// ends, reconnecting after a lost connection (a wake-up missed meanwhile
// is caught by the subscribers' poll).
func (s *base) listen(ctx context.Context, dsn string) {
	wait := time.Second
	for ctx.Err() == nil {
		conn, err := pgx.Connect(ctx, dsn)
		if err == nil {
			if _, err = conn.Exec(ctx, "LISTEN "+notifyChannel); err == nil {
				wait = time.Second
				for {
					n, werr := conn.WaitForNotification(ctx)
					if werr != nil {
						break
					}
					s.wake(n.Payload)
				}
			}
			_ = conn.Close(context.Background())
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, 30*time.Second)
	}
}

func (s *base) wake(sessionID string) {
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
type (
	scanner = dialect.Scanner
	queryer = dialect.Queryer
)

// wrap says what err was doing; nil stays nil.
func wrap(err error, what string) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func queryAll[T any](ctx context.Context, q queryer, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	return dialect.QueryAll(ctx, q, scan, query, args...)
}

// SchemaVersion is the last migration applied.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}

// Dialect names the database: sqlite or postgres.
func (s *Store) Dialect() string { return s.d.Name }

// migrateLock is the advisory lock migrations run under ("migr").
const migrateLock = 0x6d696772

// nodeLock is the advisory lock class ("node" in ASCII) of the locks
// nodes hold on a PostgreSQL store, one per node name.
const nodeLock = 0x6e6f6465

// HoldNode makes this process the one serving the store as node: on
// PostgreSQL a session-level lock on the name, held until release (a node
// that dies releases it with its connection); on SQLite nothing (the data
// directory's lock does it). Any number of nodes serve one database, each
// under its own name: work on a session's working copy is routed by it,
// so two processes must never share one (a copied data directory).
// The lock's connection is checked every few seconds; should it be lost
// (the database restarted, a partition, an administrator's
// pg_terminate_backend), another process may take the name, so lost is
// told and this node must stop serving.
func (s *Store) HoldNode(ctx context.Context, node string, lost func(error)) (release func() error, err error) {
	if s.d != dialect.Postgres {
		return func() error { return nil }, nil
	}
	key := nodeKey(node)
	c, err := s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	// A node whose machine vanished (no FIN, no RST) must not hold the
	// lock for the kernel's two hours of silence: the server probes this
	// connection after 10 s idle and drops it after three missed probes.
	if _, err := c.ExecContext(ctx, "SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 3"); err != nil {
		_ = c.Close()
		return nil, err
	}
	var got bool
	if err := c.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1::int4, $2::int4)", int32(nodeLock), key).Scan(&got); err != nil {
		_ = c.Close()
		return nil, err
	}
	if !got {
		_ = c.Close()
		return nil, fmt.Errorf("another paddock serve runs on this database (PADDOCK_DATABASE_URL) as node %q: every node needs a name of its own (a data directory copied from another node carries its name in the file node; remove that file to get a new one)", node)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(nodeCheck)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			pctx, cancel := context.WithTimeout(context.Background(), nodeCheck)
			var held bool
			err := c.QueryRowContext(pctx, "SELECT count(*) > 0 FROM pg_locks WHERE locktype = 'advisory' AND classid = $1 AND objid = $2 AND objsubid = 2 AND pid = pg_backend_pid() AND granted",
				int64(nodeLock), int64(uint32(key))).Scan(&held)
			cancel()
			if err == nil && !held {
				err = errors.New("the lock is no longer held")
			}
			if err != nil {
				lost(fmt.Errorf("this node lost its hold on its name %q in the database (%w): another process may serve as it now", node, err))
				return
			}
		}
	}()
	return func() error {
		close(stop)
		<-done
		_, err := c.ExecContext(context.Background(), "SELECT pg_advisory_unlock($1::int4, $2::int4)", int32(nodeLock), key)
		return errors.Join(err, c.Close())
	}, nil
}

// NodeAlive says whether a process serves the store as node now: it
// holds the name's lock. On SQLite, false: one process serves a SQLite
// store, and it is the caller.
func (s *Store) NodeAlive(ctx context.Context, node string) (bool, error) {
	if s.d != dialect.Postgres {
		return false, nil
	}
	var alive bool
	err := s.db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = $1 AND objid = $2 AND objsubid = 2 AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))",
		int64(nodeLock), int64(uint32(nodeKey(node)))).Scan(&alive)
	return alive, err
}

// nodeKey is the lock key of a node's name.
func nodeKey(node string) int32 {
	h := fnv.New32a()
	h.Write([]byte(node))
	return int32(h.Sum32())
}

// nodeCheck is how often a node checks it still holds the database.
const nodeCheck = 3 * time.Second

// Census implements store.Store: four counting queries, no row read.
func (s *Store) Census(ctx context.Context) (store.Census, error) {
	c := store.Census{Sessions: map[session.Status]int{}, Parked: map[string]int{}, Nodes: 1}
	type count struct {
		key string
		n   int
	}
	scan := func(r scanner) (c count, err error) { err = r.Scan(&c.key, &c.n); return c, err }
	statuses, err := queryAll(ctx, s.db, scan, `SELECT status, count(*) FROM sessions WHERE archived_at IS NULL GROUP BY status`)
	var parked []count
	var oldest string
	if err == nil {
		parked, err = queryAll(ctx, s.db, scan, `SELECT reason, count(*) FROM parks WHERE resolved_at IS NULL GROUP BY reason`)
	}
	if err == nil {
		err = s.db.QueryRowContext(ctx, `SELECT count(*), COALESCE(min(created_at), '') FROM approvals WHERE status = ?`, session.ApprovalPending).Scan(&c.Approvals, &oldest)
	}
	if err == nil && s.d == dialect.Postgres {
		err = s.db.QueryRowContext(ctx, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = $1 AND objsubid = 2 AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())", int64(nodeLock)).Scan(&c.Nodes)
	}
	if err != nil {
		return c, fmt.Errorf("census: %w", err)
	}
	for _, x := range statuses {
		c.Sessions[session.Status(x.key)] = x.n
	}
	for _, x := range parked {
		c.Parked[x.key] = x.n
	}
	c.OldestApproval = parseTime(oldest)
	return c, nil
}
