// Package app wires one Paddock process: the store, the Temporal engine
// (embedded or external), the worker and the HTTP API. It is the one place
// that links the embedded Temporal server.
package app

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"

	"github.com/paddock-dev/paddock/internal/access"
	"github.com/paddock-dev/paddock/internal/agency"
	"github.com/paddock-dev/paddock/internal/api"
	"github.com/paddock-dev/paddock/internal/attachdesk"
	"github.com/paddock-dev/paddock/internal/auditlog"
	"github.com/paddock-dev/paddock/internal/bound"
	"github.com/paddock-dev/paddock/internal/chatdesk"
	"github.com/paddock-dev/paddock/internal/cli"
	"github.com/paddock-dev/paddock/internal/config"
	"github.com/paddock-dev/paddock/internal/copies"
	"github.com/paddock-dev/paddock/internal/datadir"
	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/engine"
	"github.com/paddock-dev/paddock/internal/health"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/kube"
	"github.com/paddock-dev/paddock/internal/mirror"
	"github.com/paddock-dev/paddock/internal/poll"
	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/provider/anthropic"
	"github.com/paddock-dev/paddock/internal/provider/openai"
	"github.com/paddock-dev/paddock/internal/provider/replay"
	"github.com/paddock-dev/paddock/internal/pulls"
	"github.com/paddock-dev/paddock/internal/remote"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/slackbot"
	"github.com/paddock-dev/paddock/internal/store/redacted"
	"github.com/paddock-dev/paddock/internal/store/sqlstore"
	"github.com/paddock-dev/paddock/internal/telemetry"
	"github.com/paddock-dev/paddock/internal/temporalserver"
	"github.com/paddock-dev/paddock/internal/throttle"
	"github.com/paddock-dev/paddock/internal/tool"
	"github.com/paddock-dev/paddock/internal/vault"
	"github.com/paddock-dev/paddock/internal/web"
	"github.com/paddock-dev/paddock/internal/workflows"
)

// App is a running Paddock process.
type App struct {
	URL     string
	Service *engine.Service
	// Metrics are this node's; MetricsURL is where they are served ("":
	// nowhere).
	Metrics    *telemetry.Metrics
	MetricsURL string
	// Chat is the chat use cases (Slack apps, links, threads).
	Chat     *chatdesk.Service
	temporal *temporalserver.Server
	client   client.Client
	worker   *workflows.Worker
	http     *http.Server
	closers  []func() error
	// temporalAddress is the Temporal frontend in use.
	temporalAddress string
	logger          *slog.Logger
	// lost tells that this node lost its hold on the database.
	lost chan error
	// lastRequest is when the API last served a request (Unix nanoseconds).
	lastRequest atomic.Int64
	inFlight    atomic.Int64
	// stopRecovery ends the waking of sessions at start, and waits for it.
	stopRecovery func()
}

// Lost is told when this node lost its hold on its name in a shared
// database (another process may serve as it now): the node stops working
// on sessions at once, and whoever runs it should stop it.
func (a *App) Lost() <-chan error { return a.lost }

// Providers returns the model providers Paddock knows. The SDK-backed ones
// read their own variables (ANTHROPIC_API_KEY, OPENAI_BASE_URL, ...) when a
// session starts, so a missing key is reported then. Replay scripts come
// from the built-in scripts and the data directory's replay folder only.
// Every provider's calls are counted in m.
func Providers(dataDir string, m *telemetry.Metrics) *provider.Registry {
	r := provider.NewRegistry()
	r.Register("replay", m.Factory("replay", replay.Dir(filepath.Join(dataDir, "replay"))))
	r.Register("anthropic", m.Factory("anthropic", anthropic.Factory(os.Getenv)))
	r.Register("openai", m.Factory("openai", openai.Factory(os.Getenv)))
	return r
}

// Start brings up everything and returns once the API answers.
func Start(ctx context.Context, cfg config.Config, logger *slog.Logger) (_ *App, err error) {
	logger = telemetry.Logger(logger) // no secret in a log line
	a := &App{logger: logger}
	defer func() {
		if err != nil {
			a.Stop() // undo what started
		}
	}()
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", cfg.DataDir, err)
	}
	lock, err := datadir.Lock(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, lock.Unlock)
	db, err := sqlstore.Open(ctx, cfg.StoreDSN(), nil)
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, db.Close)
	node, err := nodeName(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	a.lost = make(chan error, 1)
	release, err := db.HoldNode(ctx, node, func(err error) {
		logger.Error("stopping: no more work on sessions here", "err", err)
		if a.worker != nil {
			go a.worker.Stop() // no activity of this node's runs again
		}
		a.lost <- err
	})
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, release)
	contentKey, err := vault.Load(cfg.DataDir, cfg.EncryptionKey)
	if err != nil {
		return nil, err
	}
	db.Content = contentKey // audit content projects retain, sealed
	tools := tool.Builtin()
	tracer, err := telemetry.Tracing(ctx, cfg.TracesProtocol, cfg.TracesRatio, node, cli.Version)
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return tracer.Shutdown(ctx) // what is still held goes out
	})
	metrics := telemetry.New(telemetry.Options{Node: node, Version: cli.Version, Census: db, Tools: tools, Logger: logger,
		Tracer: tracer.Tracer, Turns: db})
	a.Metrics = metrics
	db.Appended = metrics.Event
	// No detected secret is written in clear text; what is written is counted.
	st := redacted.Store{Store: telemetry.Store{Store: db, M: metrics}}
	if err := a.operators(cfg); err != nil {
		return nil, err
	}

	hostPort := cfg.TemporalAddress
	var temporalTLS *tls.Config // nil: an external cluster, as configured there
	if hostPort == "" {
		var shared secrets
		if cfg.DatabaseURL != "" {
			shared = db
		}
		pki, err := temporalPKI(ctx, shared, contentKey, cmp.Or(cfg.TemporalBroadcast, "127.0.0.1"))
		if err != nil {
			return nil, fmt.Errorf("the embedded Temporal server's TLS: %w", err)
		}
		temporalTLS = pki.ClientTLS()
		// With PADDOCK_DATABASE_URL the embedded server keeps its state in
		// PostgreSQL too, and every node on that URL joins one cluster.
		workflows.BoundCache() // before the server's own workers make the SDK's cache
		a.temporal, err = temporalserver.Start(ctx, temporalserver.Options{SQLite: filepath.Join(cfg.DataDir, "temporal.db"), Postgres: cfg.DatabaseURL,
			Broadcast: cfg.TemporalBroadcast, Port: cfg.TemporalPort, PKI: pki, Logger: logger})
		if err != nil {
			return nil, err
		}
		hostPort = a.temporal.HostPort()
	}
	a.temporalAddress = hostPort
	a.client, err = dial(ctx, hostPort, temporalTLS, vault.Codec{Key: contentKey}, logger, metrics)
	if err != nil {
		return nil, err
	}
	reg := Providers(cfg.DataDir, metrics)
	acts := &durable.Activities{Meter: metrics, Tracer: tracer.Tracer, Store: st, Providers: reg, Tools: tools, Now: time.Now, ContentKey: contentKey,
		Copies: &copies.Set{Node: node, Alive: db.NodeAlive, WorkspaceDir: filepath.Join(cfg.DataDir, "workspaces"), CacheDir: filepath.Join(cfg.DataDir, "caches")}, CommandMax: cfg.CommandMax, CommandMaxOutput: cfg.CommandMaxOutput, Prices: cfg.Prices, Budget: cfg.Budget}
	if cfg.Budget.Actions == 0 {
		acts.Budget = config.DefaultBudget() // a Config not from Load
	}
	announceBudget(logger, acts.Budget)
	if cfg.Pods != nil {
		err = a.pods(ctx, acts, cfg, db, contentKey)
	} else {
		err = a.sandbox(ctx, acts, cfg)
	}
	if err == nil {
		a.checkouts(acts.Copies, cfg.DataDir)
	}
	if err != nil {
		return nil, err
	}
	var key ed25519.PrivateKey
	var uiKey []byte // nil: the web app's own key, per process
	if cfg.DatabaseURL != "" {
		if key, err = sharedAuditKey(ctx, db, contentKey, cfg.DataDir); err == nil {
			uiKey, err = webKey(ctx, db, contentKey)
		}
	} else {
		key, err = auditKey(cfg.DataDir)
	}
	if err != nil {
		return nil, err
	}
	sealer := &auditlog.Sealer{Store: st, Key: key, Now: time.Now, Dir: cfg.AuditCheckpointDir, Witnesses: cfg.AuditWitnesses}
	if sealer.Dir != "" {
		if err := os.MkdirAll(sealer.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("PADDOCK_AUDIT_CHECKPOINT_DIR: %w", err)
		}
	}
	acts.Sealer = sealer
	a.Service = &engine.Service{Store: st, Temporal: a.client, Providers: reg, Tools: tools, Copies: acts.Copies, RetainFailed: cfg.RetainFailed, Sealer: sealer, ContentKey: contentKey,
		Now: time.Now, Defaults: acts.Budget, RepositoryRoots: cfg.RepositoryRoots, DataDir: cfg.DataDir, Logger: logger,
		Access: &access.Service{Store: st, Now: time.Now, OIDC: access.NewOIDC(cfg.OIDCIssuer, cfg.OIDCClientID, cfg.OIDCUsernameClaim),
			Guesses: &throttle.Failures{}, Logger: logger}}
	a.Service.Attachments = &attachdesk.Service{Store: st, Key: contentKey, Access: a.Service.Access, Sessions: a.Service.Sessions(), Allow: cfg.AttachmentTypes, Now: time.Now}
	acts.Attachments = a.Service.Attachments
	a.Service.Health = &health.Service{Store: st, Node: node, Version: cli.Version, DataDir: cfg.DataDir, QueueLag: metrics.QueueLag}
	a.Service.Remotes = &remote.Service{Store: st, Access: a.Service.Access, Key: contentKey, Pulls: pulls.Forges{}, Bounded: acts.Copies.Bounded}
	if c, ok := acts.Mirrors.(*mirror.Cache); ok {
		a.Service.Remotes.Mirrors = c
	}
	a.Service.Remotes.FetchErr = acts.FetchErr
	agents := &agency.Service{Store: st, Access: a.Service.Access, Platform: a.Service.Platform(), Tools: tools, Defaults: acts.Budget, Now: time.Now}
	acts.Peers = agents.For
	acts.Wake, acts.Returned = a.Service.Platform().Wake, a.Service.Platform().Returned
	a.Service.Audit = &auditlog.Service{Store: st, Access: a.Service.Access, Sealer: sealer, ContentKey: contentKey, RetainFailed: cfg.RetainFailed,
		SweepEvery: durable.SweepEvery, Now: time.Now, Broken: metrics.AuditBroken}
	if created, err := a.Service.Access.Bootstrap(ctx, cfg.DataDir, cfg.AdminUser); err != nil {
		return nil, fmt.Errorf("first administrator: %w", err)
	} else if created {
		logger.Info("created the first administrator; paddock commands on this machine use its token", "user", cfg.AdminUser,
			"token", filepath.Join(cfg.DataDir, datadir.AdminToken))
	}
	if err := a.Service.Audit.UseAuditKey(ctx); err != nil {
		return nil, fmt.Errorf("audit key: %w", err)
	}
	acts.Spawner, acts.Triggers, acts.Here = a.Service.Sessions(), a.Service.Sessions(), a.Service.Here()
	a.worker = workflows.NewWorker(a.client, acts)
	if err := a.worker.Start(); err != nil {
		return nil, fmt.Errorf("start worker: %w", err)
	}

	ln, err := listen(cfg)
	if err != nil {
		return nil, err
	}
	var ready atomic.Bool
	a.Chat = &chatdesk.Service{Store: st, Access: a.Service.Access, Key: contentKey, Now: time.Now}
	a.URL = clientURL(ln.Addr(), cfg.TLSCert != "")
	bot := &slackbot.Bot{Desk: a.Chat, Engine: a.Service, Logger: logger, Web: cmp.Or(cfg.PublicURL, webURL(a.URL)), APIURL: cfg.SlackAPIURL}
	srv := &api.Server{Service: a.Service, Logger: logger, Ready: ready.Load, TriggerSecrets: cfg.TriggerSecrets, Chat: a.Chat, Slack: bot}
	ui, err := web.New(a.Service, logger, uiKey)
	if err != nil {
		return nil, err
	}
	ui.Chat = a.Chat
	a.lastRequest.Store(time.Now().UnixNano())
	a.http = &http.Server{Handler: metrics.HTTP(logger, a.touching(routes(srv.Handler(), ui.Handler()))), ReadHeaderTimeout: 10 * time.Second}
	a.background((&slackbot.Relay{Bot: bot, Node: node}).Run)
	a.background((&slackbot.Sockets{Bot: bot}).Run)
	lock.Record(a.URL, cfg.Background)
	go func() {
		serve := func() error { return a.http.Serve(ln) }
		if cfg.TLSCert != "" {
			serve = func() error { return a.http.ServeTLS(ln, cfg.TLSCert, cfg.TLSKey) }
		}
		if err := serve(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("http server stopped", "err", err)
		}
	}()
	// Sessions with unrecorded work are woken while the node serves.
	recovering, stopRecovery := context.WithCancel(context.WithoutCancel(ctx))
	woken, err := a.Service.Sessions().Recover(recovering)
	if err != nil {
		stopRecovery()
		return nil, fmt.Errorf("resume sessions: %w", err)
	}
	a.stopRecovery = func() { stopRecovery(); <-woken }
	a.collect()
	if cfg.Kubeconfig != "" {
		if err := a.controller(cfg); err != nil {
			return nil, err
		}
	}
	ready.Store(true)
	return a, nil
}

// controller runs the Kubernetes controller of Agent and Session
// resources until Stop, one node at a time (a Lease in the namespace of
// the pod, or of the kubeconfig's context).
func (a *App) controller(cfg config.Config) error {
	rc, namespace, err := kubernetes(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.closers = append(a.closers, func() error { cancel(); return nil })
	return kube.Start(ctx, rc, a.Service, kube.Options{Admin: cfg.AdminUser, UserPrefix: cfg.KubeUserPrefix, Users: cfg.KubeUsers, LeaderNamespace: namespace, Logger: a.logger})
}

// background runs run until Stop: the Slack relay, its Socket Mode
// connections.
func (a *App) background(run func(context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	a.closers = append(a.closers, func() error { cancel(); <-done; return nil })
	go func() { defer close(done); run(ctx) }()
}

// webURL is the server's address as a browser opens it ("" for a Unix
// socket).
func webURL(u string) string {
	if strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
		return u
	}
	return ""
}

// collector is the server collecting copies on its own schedule.
var collector = identity.Principal{User: "paddock", Admin: true, Via: "collector"}

// collect removes working copies no longer needed (Service.Review().GC), now and
// then hourly, until Stop.
func (a *App) collect() {
	done, exited := make(chan struct{}), make(chan struct{})
	a.closers = append(a.closers, func() error { close(done); <-exited; return nil })
	go func() {
		defer close(exited)
		t := time.NewTicker(time.Hour)
		defer t.Stop()
		for {
			if out, err := a.Service.Review().GC(context.Background(), collector, time.Now()); err != nil {
				a.logger.Warn("collecting working copies", "err", err)
			} else if len(out) > 0 {
				a.logger.Info("collected working copies", "count", len(out))
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
}

// dial connects to Temporal, waiting for a just-started server to answer.
func dial(ctx context.Context, hostPort string, tlsConfig *tls.Config, codec vault.Codec, logger *slog.Logger, metrics *telemetry.Metrics) (client.Client, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := client.DialContext(ctx, client.Options{
			HostPort:          hostPort,
			Namespace:         temporalserver.Namespace,
			ConnectionOptions: client.ConnectionOptions{TLS: tlsConfig},
			Logger:            tlog.NewStructuredLogger(quiet(logger)),
			MetricsHandler:    metrics.Temporal(),
			// Payloads and failure messages are encrypted before they reach
			// workflow history.
			DataConverter:    codec.DataConverter(),
			FailureConverter: temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{DataConverter: codec.DataConverter(), EncodeCommonAttributes: true}),
		})
		if err == nil {
			return c, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("connect to Temporal at %s: %w", hostPort, err)
		}
		if err := poll.Sleep(ctx, 200*time.Millisecond); err != nil {
			return nil, fmt.Errorf("connect to Temporal at %s: %w", hostPort, err)
		}
	}
}

// quiet passes the SDK's warnings and errors only.
func quiet(l *slog.Logger) *slog.Logger {
	return slog.New(levelFilter{l.Handler(), slog.LevelWarn})
}

type levelFilter struct {
	slog.Handler
	min slog.Level
}

func (f levelFilter) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= f.min && f.Handler.Enabled(ctx, l)
}

func (f levelFilter) WithAttrs(attrs []slog.Attr) slog.Handler {
	return levelFilter{f.Handler.WithAttrs(attrs), f.min}
}

func (f levelFilter) WithGroup(name string) slog.Handler {
	return levelFilter{f.Handler.WithGroup(name), f.min}
}

// TemporalAddress is the Temporal frontend in use (host:port).
func (a *App) TemporalAddress() string { return a.temporalAddress }

// Stop shuts everything down in reverse order.
func (a *App) Stop() {
	if a.stopRecovery != nil {
		a.stopRecovery()
	}
	if a.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = a.http.Shutdown(ctx)
		cancel()
	}
	if a.worker != nil {
		a.worker.Stop()
	}
	if a.client != nil {
		a.client.Close()
	}
	if a.temporal != nil {
		if err := a.temporal.Stop(); err != nil {
			a.logger.Warn("temporal server stop", "err", err)
		}
	}
	for i := len(a.closers) - 1; i >= 0; i-- {
		_ = a.closers[i]()
	}
}

// listen opens the API's listener: a Unix socket for unix:PATH (made
// for this user alone: the directory holding it must be theirs), else
// TCP, refused beyond loopback without TLS.
func listen(cfg config.Config) (net.Listener, error) {
	if path, ok := strings.CutPrefix(cfg.Listen, "unix:"); ok {
		if fi, err := os.Stat(filepath.Dir(path)); err != nil || fi.Mode().Perm()&0o077 != 0 {
			return nil, fmt.Errorf("listen on %s: its directory must exist and be this user's alone (mode 0700), so no other user reaches the API", cfg.Listen)
		}
		_ = os.Remove(path) // what a server that was killed left: the data directory's lock says none runs now
		ln, err := net.Listen("unix", path)
		if err != nil {
			return nil, fmt.Errorf("listen on %s: %w", cfg.Listen, err)
		}
		// The directory (this user's alone) guards it meanwhile; no umask
		// is changed, which other goroutines' files would get too.
		if err := os.Chmod(path, 0o600); err != nil {
			ln.Close()
			return nil, fmt.Errorf("listen on %s: %w", cfg.Listen, err)
		}
		return ln, nil
	}
	if err := listenSafely(cfg); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (set --listen or PADDOCK_LISTEN to another address): %w", cfg.Listen, err)
	}
	return ln, nil
}

// touching notes the time of every request and counts those in flight
// (a follower's stream lasts as long as it watches), for Idle.
func (a *App) touching(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.inFlight.Add(1)
		defer func() {
			a.lastRequest.Store(time.Now().UnixNano())
			a.inFlight.Add(-1)
		}()
		a.lastRequest.Store(time.Now().UnixNano())
		h.ServeHTTP(w, r)
	})
}

// Idle is closed once no request has come or been in flight for d (a
// person following a session keeps it), and no session is
// queued or running (checked every few seconds): a local server that
// started itself then ends.
func (a *App) Idle(ctx context.Context, d time.Duration) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(min(d/4+time.Millisecond, 5*time.Second))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if a.inFlight.Load() > 0 || time.Since(time.Unix(0, a.lastRequest.Load())) < d {
				continue
			}
			busy, err := a.Service.Store.ListSessions(ctx, session.Filter{Statuses: []session.Status{session.StatusQueued, session.StatusRunning}, Limit: 1})
			if err == nil && len(busy) == 0 {
				close(done)
				return
			}
		}
	}()
	return done
}

// clientURL is the URL a client on this host reaches a listener at.
func clientURL(addr net.Addr, tls bool) string {
	if addr.Network() == "unix" {
		return "unix:" + addr.String()
	}
	scheme := "http://"
	if tls {
		scheme = "https://"
	}
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return scheme + addr.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return scheme + net.JoinHostPort(host, port)
}

// routes sends the API's paths to the API and the rest to the web app.
func routes(apiHandler, webHandler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" || strings.HasPrefix(r.URL.Path, "/v1/") || r.URL.Path == "/v1" {
			apiHandler.ServeHTTP(w, r)
			return
		}
		webHandler.ServeHTTP(w, r)
	})
}

// listenSafely refuses plain HTTP on an address other machines reach:
// tokens would cross the network in clear. TLS (PADDOCK_TLS_CERT/KEY) or an
// explicit PADDOCK_INSECURE_LISTEN=true (a proxy terminates TLS) allows it.
func listenSafely(cfg config.Config) error {
	if cfg.TLSCert != "" || cfg.InsecureListen {
		return nil
	}
	host, _, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", cfg.Listen, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("listen on %s: plain HTTP beyond loopback would send tokens in clear; set PADDOCK_TLS_CERT and PADDOCK_TLS_KEY, or PADDOCK_INSECURE_LISTEN=true behind a proxy that terminates TLS", cfg.Listen)
}

// announceBudget says at startup when the session budget differs from
// the defaults, tighter or looser.
func announceBudget(logger *slog.Logger, b bound.Limits) {
	for _, d := range []struct {
		name      string
		got, want int64
	}{
		{"actions", int64(b.Actions), bound.DefaultActions},
		{"active minutes", int64(b.Active / time.Minute), int64(bound.DefaultActive / time.Minute)},
		{"extensions", int64(b.Extensions), bound.DefaultExtensions},
		{"lifetime hours", int64(b.Lifetime / time.Hour), int64(bound.DefaultLifetime / time.Hour)},
	} {
		switch {
		case d.got > d.want:
			logger.Warn("session budget LOOSENED from the default", "budget", d.name, "value", d.got, "default", d.want)
		case d.got < d.want:
			logger.Warn("session budget tightened from the default", "budget", d.name, "value", d.got, "default", d.want)
		}
	}
}

// Migrate applies the store's schema migrations (making the data
// directory of a SQLite store first) and returns the schema version and
// the database's dialect.
func Migrate(ctx context.Context, cfg config.Config) (version int, dialect string, err error) {
	if cfg.DatabaseURL == "" {
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			return 0, "", fmt.Errorf("data directory %s: %w", cfg.DataDir, err)
		}
	}
	s, err := sqlstore.Open(ctx, cfg.StoreDSN(), nil)
	if err != nil {
		return 0, "", err
	}
	defer s.Close()
	v, err := s.SchemaVersion(ctx)
	return v, s.Dialect(), err
}

// nodeName is this node's name among the nodes of one database, kept in
// the data directory's file node: the host's name and a random suffix,
// made on the first start.
func nodeName(dataDir string) (string, error) {
	path := filepath.Join(dataDir, "node")
	if data, err := os.ReadFile(path); err == nil {
		if name := strings.TrimSpace(string(data)); name != "" {
			return name, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("node name: %w", err)
	}
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return -1
	}, host)
	if len(host) > 40 {
		host = host[:40]
	}
	name := strings.TrimPrefix(host+"-"+uuid.NewString()[:8], "-")
	if err := os.WriteFile(path, []byte(name+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("node name: %w", err)
	}
	return name, nil
}

// operators serves the metrics and profiles on their own listener
// (PADDOCK_METRICS_LISTEN), until Stop. Where the default address is
// taken (another server on this machine), the node says so and serves
// without; an address the operator chose must be served.
func (a *App) operators(cfg config.Config) error {
	addr := cfg.MetricsListen
	if addr == "" || addr == "off" || cfg.Background && !cfg.MetricsExplicit {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil && !cfg.MetricsExplicit {
		a.logger.Warn("metrics not served: the default address is taken (set PADDOCK_METRICS_LISTEN)", "address", addr, "err", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("PADDOCK_METRICS_LISTEN=%s: %w", addr, err)
	}
	srv := &http.Server{Handler: a.Metrics.Handler(cfg.MetricsToken), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	a.closers = append(a.closers, srv.Close)
	a.MetricsURL = "http://" + ln.Addr().String()
	a.logger.Info("metrics and profiles served", "url", a.MetricsURL+"/metrics")
	return nil
}
