// Package temporalserver runs an embedded Temporal server persisted in SQLite,
// the way the Temporal CLI's dev server does: one history shard, static hosts on
// free loopback ports, the pure-Go SQLite persistence plugin.
//
// It is the only package that imports go.temporal.io/server; everything else
// talks to Temporal through the SDK client, so ordinary unit tests never link it.
package temporalserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	tlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
	"go.temporal.io/server/common/membership/static"
	"go.temporal.io/server/common/metrics"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

// Namespace is the namespace the embedded server creates and Paddock uses.
const Namespace = "default"

const loopback = "127.0.0.1"

// Server is a running embedded Temporal server.
type Server struct {
	srv      temporal.Server
	hostPort string
	log      *slogLogger
}

// HostPort is the frontend address for SDK clients.
func (s *Server) HostPort() string { return s.hostPort }

// Options say where the server keeps its state.
type Options struct {
	// SQLite is the database file of a single embedded server.
	SQLite string
	// Postgres is the URL of Paddock's PostgreSQL database: the server
	// keeps its state in two databases beside it (NAME_temporal and
	// NAME_temporal_visibility, created and migrated here with Temporal's
	// own schema tools), and every server started on the same URL joins
	// one cluster (membership through the database).
	Postgres string
	// Broadcast is the address other nodes reach this one at (default
	// 127.0.0.1: a cluster on one machine); the services listen on it.
	Broadcast string
	// Port is the first of nine consecutive ports the services listen on
	// (0: free ports, chosen afresh).
	Port int
	// PKI is this node's TLS material: the services accept only clients
	// and peers with a certificate of its authority. Paddock always gives
	// one; nil (plain) serves as an external cluster in tests.
	PKI    *PKI
	Logger *slog.Logger
}

// Start creates (if needed) the database, its schema and the default
// namespace, and starts all Temporal services on free ports. Server logs
// at warning level and up go to the logger.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.Broadcast == "" {
		o.Broadcast = loopback
	}
	ports, err := freePorts(o.Broadcast, 9)
	if o.Port != 0 {
		ports, err = fixedPorts(o.Broadcast, o.Port, 9)
	}
	if err != nil {
		return nil, err
	}
	var store, visibility *config.SQL
	shards := int32(1)
	if o.Postgres != "" {
		// Fixed for the life of a cluster: history is sharded across nodes.
		shards = 4
		if store, visibility, err = preparePostgres(ctx, o.Postgres); err != nil {
			return nil, err
		}
	} else {
		if store, err = prepareSQLite(ctx, o.SQLite); err != nil {
			return nil, err
		}
		visibility = store
	}
	ns, err := sqlite.NewNamespaceConfig("active", Namespace, false, nil)
	if err != nil {
		return nil, fmt.Errorf("temporal namespace: %w", err)
	}
	// Written straight into the database (the plugin's generic SQL), before
	// any service starts, so the namespace is there from the first call.
	if err := sqlite.CreateNamespaces(store, ns); err != nil && !strings.Contains(err.Error(), "duplicate key") {
		return nil, fmt.Errorf("temporal namespace: %w", err)
	}
	host := o.Broadcast
	hostPort := fmt.Sprintf("%s:%d", host, ports[0])
	svc := func(grpc, membership int) config.Service {
		return config.Service{RPC: config.RPC{GRPCPort: grpc, MembershipPort: membership, BindOnIP: host}}
	}
	cfg := &config.Config{
		Global: config.Global{
			Membership: config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: host},
			TLS:        o.PKI.rootTLS(), // nil: plain
			Metrics: &metrics.Config{Prometheus: &metrics.PrometheusConfig{
				// On this host only: the metrics have no TLS.
				ListenAddress: fmt.Sprintf("%s:%d", loopback, ports[8]), HandlerPath: "/metrics",
			}},
		},
		Persistence: config.Persistence{
			DefaultStore:     "default",
			VisibilityStore:  "visibility",
			NumHistoryShards: shards,
			DataStores:       map[string]config.DataStore{"default": {SQL: store}, "visibility": {SQL: visibility}},
		},
		ClusterMetadata: &cluster.Config{
			EnableGlobalNamespace:    false,
			FailoverVersionIncrement: 10,
			MasterClusterName:        "active",
			CurrentClusterName:       "active",
			ClusterInformation: map[string]cluster.ClusterInformation{
				"active": {Enabled: true, InitialFailoverVersion: 1, RPCAddress: hostPort, ClusterID: uuid.NewString()},
			},
		},
		DCRedirectionPolicy: config.DCRedirectionPolicy{Policy: "noop"},
		Services: map[string]config.Service{
			"frontend": svc(ports[0], ports[1]),
			"history":  svc(ports[2], ports[3]),
			"matching": svc(ports[4], ports[5]),
			"worker":   svc(ports[6], ports[7]),
		},
		Archival: config.Archival{
			History:    config.HistoryArchival{State: "disabled"},
			Visibility: config.VisibilityArchival{State: "disabled"},
		},
		PublicClient: config.PublicClient{HostPort: hostPort},
		NamespaceDefaults: config.NamespaceDefaults{Archival: config.ArchivalNamespaceDefaults{
			History:    config.HistoryArchivalNamespaceDefaults{State: "disabled"},
			Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"},
		}},
	}
	dc := dynamicconfig.StaticClient{
		dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): true,
		// The ring (membership) ports speak the internode mutual TLS too:
		// plain, anyone reaching them could read the membership or order
		// a member out of the ring.
		dynamicconfig.EnableRingpopTLS.Key(): o.PKI != nil,
		// One host: task-queue partitions only add forwarding hops between
		// them (measured: ~100 ms from signal to activity with 4 partitions).
		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():  1,
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): 1,
		// The queue readers default to 20 polls a second, which puts 50 ms
		// between back-to-back activities of a session; one shard can poll
		// far more often than that.
		dynamicconfig.TransferProcessorMaxPollRPS.Key(): 1000,
		dynamicconfig.TimerProcessorMaxPollRPS.Key():    1000,
		// The history service keeps every workflow it touched within the
		// hour in memory (up to 128,000, about 22 KiB each): idle sessions'
		// memory grew with their count. A bounded cache costs an idle
		// session's wake one read of its state. It must exceed the
		// workflows in use at once (pinned entries cannot be evicted).
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key(): HistoryCacheSize,
		// Each service reads every namespace again every 2 s by default;
		// Paddock's one namespace is written before any service starts
		// and never changes, and a name not yet known is read through.
		dynamicconfig.NamespaceCacheRefreshInterval.Key(): time.Minute,
	}
	tl := &slogLogger{l: o.Logger, stopping: new(atomic.Bool)}
	opts := []temporal.ServerOption{
		temporal.WithConfig(cfg),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithLogger(tl),
		temporal.WithDynamicConfigClient(dc),
	}
	if o.Postgres == "" {
		// One node: its four services know one another's addresses, so
		// no ring gossips between them (ringpop's pings over TLS were a
		// third of an idle node's processor time).
		opts = append(opts, temporal.WithStaticHosts(map[primitives.ServiceName]static.Hosts{
			primitives.FrontendService: static.SingleLocalHost(hostPort),
			primitives.HistoryService:  static.SingleLocalHost(fmt.Sprintf("%s:%d", host, ports[2])),
			primitives.MatchingService: static.SingleLocalHost(fmt.Sprintf("%s:%d", host, ports[4])),
			primitives.WorkerService:   static.SingleLocalHost(fmt.Sprintf("%s:%d", host, ports[6])),
		}))
	}
	srv, err := temporal.NewServer(opts...)
	if err != nil {
		return nil, fmt.Errorf("temporal server: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("start temporal server: %w", err)
	}
	return &Server{srv: srv, hostPort: hostPort, log: tl}, nil
}

// HistoryCacheSize bounds the workflows the history service keeps in
// memory.
const HistoryCacheSize = 2048

// Stop shuts the server down. The services complain about each other while
// they stop; those messages are dropped.
func (s *Server) Stop() error {
	s.log.stopping.Store(true)
	return s.srv.Stop()
}

// prepareSQLite creates the database at dbPath and its schema when new.
func prepareSQLite(ctx context.Context, dbPath string) (*config.SQL, error) {
	if err := os.MkdirAll(filepath.Dir(dbPath), 0o700); err != nil {
		return nil, fmt.Errorf("temporal data directory: %w", err)
	}
	sqlCfg := &config.SQL{
		PluginName:   sqliteplugin.PluginName,
		DatabaseName: dbPath,
		ConnectAttributes: map[string]string{
			"mode":         "rwc",
			"journal_mode": "wal",
			"synchronous":  "normal",
			"busy_timeout": "10000",
		},
		// One connection: more gave "database is locked" and half the throughput.
		MaxConns:     1,
		MaxIdleConns: 1,
	}
	if _, err := os.Stat(dbPath); errors.Is(err, os.ErrNotExist) {
		if err := sqlite.SetupSchema(sqlCfg); err != nil {
			return nil, fmt.Errorf("temporal schema: %w", err)
		}
	}
	return sqlCfg, forgetMembers(ctx, dbPath)
}

// forgetMembers clears the ring membership a previous run left behind: its
// hosts are gone (ports are chosen afresh each start), and joining them would
// hold the start-up for the whole join timeout. The data directory lock
// guarantees no other embedded server uses this database.
func forgetMembers(ctx context.Context, dbPath string) error {
	db, err := sql.Open("sqlite", "file:"+dbPath+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return fmt.Errorf("temporal database: %w", err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `DELETE FROM cluster_membership`); err != nil {
		return fmt.Errorf("temporal database: clear stale cluster membership: %w", err)
	}
	return nil
}

// freePorts reserves n distinct free ports on host. The frontend cannot be
// given port 0 because the server's internal client dials the configured
// port. They are taken below 32768, out of the kernel's ephemeral range
// (no outgoing connection takes one while the server starts) and within
// what Temporal's PostgreSQL schema stores a membership port in (SMALLINT).
func freePorts(host string, n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for try := 0; len(ports) < n; try++ {
		if try > 2000 {
			return nil, fmt.Errorf("find free port: no %d free ports on %s between 10000 and 32767", n, host)
		}
		port := 10000 + rand.IntN(32768-10000)
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			continue
		}
		ls = append(ls, l)
		ports = append(ports, port)
	}
	return ports, nil
}

// fixedPorts checks that the n ports from first are free on host.
func fixedPorts(host string, first, n int) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		ports[i] = first + i
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(ports[i])))
		if err != nil {
			return nil, fmt.Errorf("the embedded Temporal server needs ports %d-%d on %s (PADDOCK_TEMPORAL_PORT), and %d is not free: %w", first, first+n-1, host, ports[i], err)
		}
		_ = l.Close()
	}
	return ports, nil
}

// slogLogger adapts slog to the server's logger, passing warnings and up.
type slogLogger struct {
	l        *slog.Logger
	tags     []tag.Tag
	stopping *atomic.Bool
}

// noise are messages that say nothing to a Paddock operator.
var noise = []string{"HTTP API port has not been set", "error creating sdk client"}

var _ tlog.Logger = (*slogLogger)(nil)

func (s *slogLogger) log(level slog.Level, msg string, tags []tag.Tag) {
	if level < slog.LevelWarn || s.stopping.Load() || !s.l.Enabled(context.Background(), level) {
		return
	}
	for _, n := range noise {
		if strings.HasPrefix(msg, n) {
			return
		}
	}
	for _, t := range tags {
		// The services poll each other while they come up, and a poll its
		// caller (the worker, stopping) canceled says nothing either.
		if t.Key() == "error" {
			if v := fmt.Sprint(t.Value()); strings.Contains(v, "not healthy yet") || strings.Contains(v, "context canceled") {
				return
			}
		}
	}
	attrs := make([]slog.Attr, 0, len(s.tags)+len(tags)+1)
	attrs = append(attrs, slog.String("component", "temporal"))
	for _, t := range append(s.tags, tags...) {
		attrs = append(attrs, slog.Any(t.Key(), t.Value()))
	}
	s.l.LogAttrs(context.Background(), level, msg, attrs...)
}

func (s *slogLogger) Debug(msg string, tags ...tag.Tag)  { s.log(slog.LevelDebug, msg, tags) }
func (s *slogLogger) Info(msg string, tags ...tag.Tag)   { s.log(slog.LevelInfo, msg, tags) }
func (s *slogLogger) Warn(msg string, tags ...tag.Tag)   { s.log(slog.LevelWarn, msg, tags) }
func (s *slogLogger) Error(msg string, tags ...tag.Tag)  { s.log(slog.LevelError, msg, tags) }
func (s *slogLogger) DPanic(msg string, tags ...tag.Tag) { s.log(slog.LevelError, msg, tags) }
func (s *slogLogger) Panic(msg string, tags ...tag.Tag) {
	s.log(slog.LevelError, msg, tags)
	panic(msg)
}
func (s *slogLogger) Fatal(msg string, tags ...tag.Tag) {
	s.log(slog.LevelError, msg, tags)
	os.Exit(1)
}

// With returns a logger with tags prepended.
func (s *slogLogger) With(tags ...tag.Tag) tlog.Logger {
	return &slogLogger{l: s.l, tags: append(append([]tag.Tag(nil), s.tags...), tags...), stopping: s.stopping}
}
