package temporalserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	"github.com/paddock-dev/paddock/internal/poll"
	"go.temporal.io/server/common/config"
	tlog "go.temporal.io/server/common/log"
	pgplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	"go.temporal.io/server/tools/common/schema"
	toolsql "go.temporal.io/server/tools/sql"
)

// setupLock is the advisory lock (on Paddock's database) nodes starting
// together take in turn while they create and migrate Temporal's databases.
const setupLock = 0x74656d706f72616c // "temporal"

// preparePostgres creates (when missing) and migrates Temporal's two
// databases beside Paddock's, with Temporal's own schema tools, one node
// at a time, and returns their configurations.
func preparePostgres(ctx context.Context, rawURL string) (store, visibility *config.SQL, err error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, nil, fmt.Errorf("PADDOCK_DATABASE_URL: %w", err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	if name == "" {
		return nil, nil, fmt.Errorf("PADDOCK_DATABASE_URL names no database: want postgres://USER:PASSWORD@HOST:PORT/NAME")
	}
	// PostgreSQL cuts names at 63 bytes: NAME_temporal_visibility must fit.
	if len(name)+len("_temporal_visibility") > 63 {
		return nil, nil, fmt.Errorf("PADDOCK_DATABASE_URL: database name %q is too long: Temporal's databases beside it are named NAME_temporal and NAME_temporal_visibility, which PostgreSQL would cut; use a name of at most 43 bytes", name)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "5432"
	}
	password, _ := u.User.Password()
	attrs := map[string]string{}
	for k, v := range u.Query() {
		if len(v) > 0 {
			attrs[k] = v[0]
		}
	}
	cfg := func(db string) *config.SQL {
		return &config.SQL{PluginName: pgplugin.PluginNamePGX, DatabaseName: db, ConnectAddr: net.JoinHostPort(host, port), ConnectProtocol: "tcp",
			User: u.User.Username(), Password: password, ConnectAttributes: attrs, MaxConns: 20, MaxIdleConns: 20}
	}
	store, visibility = cfg(name+"_temporal"), cfg(name+"_temporal_visibility")

	db, err := sql.Open("pgx", rawURL)
	if err != nil {
		return nil, nil, err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("the PostgreSQL database cannot be reached (PADDOCK_DATABASE_URL): %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", int64(setupLock)); err != nil {
		return nil, nil, fmt.Errorf("temporal setup lock: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(setupLock)) //nolint:errcheck
	for _, c := range []struct {
		cfg    *config.SQL
		schema string
	}{{store, "postgresql/v12/temporal"}, {visibility, "postgresql/v12/visibility"}} {
		var exists bool
		if err := conn.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", c.cfg.DatabaseName).Scan(&exists); err != nil {
			return nil, nil, err
		}
		if !exists {
			// Names come from Paddock's own database name, quoted.
			if _, err := conn.ExecContext(ctx, `CREATE DATABASE "`+strings.ReplaceAll(c.cfg.DatabaseName, `"`, `""`)+`"`); err != nil {
				return nil, nil, fmt.Errorf("create Temporal's database %s (the user of PADDOCK_DATABASE_URL needs CREATEDB, or create it beforehand): %w", c.cfg.DatabaseName, err)
			}
		}
		if err := migrate(c.cfg, c.schema); err != nil {
			return nil, nil, fmt.Errorf("temporal schema %s: %w", c.cfg.DatabaseName, err)
		}
	}
	// The ring's members a node that died left behind keep their rows
	// until they expire; joining them would hold this start-up for the
	// whole join timeout. Members that do not answer are forgotten; live
	// nodes (other members of this cluster) are joined.
	tu := *u
	tu.Path = "/" + store.DatabaseName
	tdb, err := sql.Open("pgx", tu.String())
	if err != nil {
		return nil, nil, err
	}
	defer tdb.Close()
	if err := forgetUnreachable(ctx, tdb); err != nil {
		return nil, nil, fmt.Errorf("temporal database: clear stale cluster membership: %w", err)
	}
	return store, visibility, nil
}

// migrate sets the schema up on a new database and applies the versions
// it lacks, as temporal-sql-tool setup-schema and update-schema do.
func migrate(cfg *config.SQL, name string) error {
	logger := tlog.NewNoopLogger()
	conn, err := toolsql.NewConnection(cfg, logger)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ReadSchemaVersion(); err != nil {
		if err := schema.NewSetupSchemaTask(conn, &schema.SetupConfig{InitialVersion: "0.0"}, logger).Run(); err != nil {
			return err
		}
	}
	return schema.NewUpdateSchemaTask(conn, &schema.UpdateConfig{DBName: cfg.DatabaseName, SchemaName: name}, logger).Run()
}

// forgetUnreachable deletes the cluster membership rows of members whose
// ring port accepts no connection in three tries: their node is gone. A
// live member slow to answer once is kept: forgetting it would start this
// node as a ring of its own.
func forgetUnreachable(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `SELECT DISTINCT host_id, rpc_address, rpc_port FROM cluster_membership`)
	if err != nil {
		return err
	}
	type member struct {
		id   []byte
		addr string
	}
	var members []member
	for rows.Next() {
		var m member
		var host string
		var port int
		if err := rows.Scan(&m.id, &host, &port); err != nil {
			_ = rows.Close()
			return err
		}
		m.addr = net.JoinHostPort(host, strconv.Itoa(port))
		members = append(members, m)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	for _, m := range members {
		if answers(ctx, m.addr) {
			continue
		}
		if _, err := db.ExecContext(ctx, `DELETE FROM cluster_membership WHERE host_id = $1`, m.id); err != nil {
			return err
		}
	}
	return nil
}

// answers says whether addr accepts a TCP connection in one of three
// tries, a second each.
func answers(ctx context.Context, addr string) bool {
	for range 3 {
		d := net.Dialer{Timeout: time.Second}
		if c, err := d.DialContext(ctx, "tcp", addr); err == nil {
			_ = c.Close()
			return true
		}
		if poll.Sleep(ctx, 100*time.Millisecond) != nil {
			return false
		}
	}
	return false
}
