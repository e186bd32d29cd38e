package app_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/paddock-dev/paddock/internal/app"
	"github.com/paddock-dev/paddock/internal/cli"
	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/config"
	"github.com/paddock-dev/paddock/internal/datadir"
	"github.com/paddock-dev/paddock/internal/egress"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/provider/providertest"
	"github.com/paddock-dev/paddock/internal/store/pgtest"
	"github.com/paddock-dev/paddock/internal/store/sqlstore"
	"github.com/paddock-dev/paddock/internal/wire"
)

// One embedded server for the whole package: starting one takes about a second.
var (
	shared    *app.App
	api       *client.Client
	sharedDir string
	// adminToken is the shared server's first administrator's.
	adminToken string
	// ws is the Slack workspace the shared server's Slack apps post to.
	ws *slackWorkspace
	// toolsDir is a read-only path of the sandbox's view (see TestMain).
	toolsDir string
)

func TestMain(m *testing.M) {
	// Inside a sandbox allowed the network, this binary is the forwarder.
	egress.Reexec()
	// The crash test re-executes this binary as a `paddock serve` child.
	switch os.Getenv("PADDOCK_TEST_CHILD") {
	case "serve":
		os.Exit(cli.Run(context.Background(), []string{"serve"}, cli.IO{Server: app.CLI, In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
	case "cli":
		// The simulated sandbox pods run this binary as `paddock`.
		os.Exit(cli.Run(context.Background(), os.Args[1:], cli.IO{Server: app.CLI, In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
	case "mcp":
		// The stdio MCP test re-executes this binary, in the sandbox, as its server.
		if err := calcServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "paddock-app-test-")
	if err != nil {
		panic(err)
	}
	sharedDir = dir
	// Tools outside the system trees (a stdio MCP server's binary) live
	// here, shown to commands read-only, as PADDOCK_SANDBOX_READ_ONLY_PATHS does.
	toolsDir, err = os.MkdirTemp("/var/tmp", "paddock-app-test-tools-")
	if err != nil {
		panic(err)
	}
	_ = os.Chmod(toolsDir, 0o755)
	ws = newSlackWorkspace()
	cfg := config.Config{DataDir: dir, SlackAPIURL: ws.GetAPIURL(), Listen: "127.0.0.1:0", AdminUser: "tester", LogLevel: slog.LevelWarn, ReadOnlyPaths: []string{toolsDir},
		TriggerSecrets: map[string]string{"default/gh-push": triggerSecret, "default/steer": triggerSecret, "default/unowned": triggerSecret, "ghflow/gh-pr": triggerSecret, "ghflow/gh-closed": triggerSecret, "ghflow/gh-review": triggerSecret},
		EgressPermit:   labRegistries(), TestingForgeLoopback: true}
	// PADDOCK_TEST_STORE=postgres runs the suite on a private PostgreSQL.
	if os.Getenv("PADDOCK_TEST_STORE") == "postgres" {
		if cfg.DatabaseURL, err = pgtest.NewDatabase(); err != nil {
			fmt.Fprintln(os.Stderr, "PostgreSQL:", err)
			os.Exit(1)
		}
	}
	liveDSN = cfg.StoreDSN()
	// With an OTLP endpoint named (a benchmark with tracing on), the
	// shared server sends its spans there.
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" {
		cfg.TracesProtocol = "http/protobuf"
	}
	shared, err = app.Start(context.Background(), cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		fmt.Fprintln(os.Stderr, "start embedded server:", err)
		os.Exit(1)
	}
	adminToken = readToken(dir)
	api = client.New(shared.URL).WithToken(adminToken)
	// Tests in this package run tools freely unless they set another project;
	// gate_test.go covers the default and stricter policies.
	if _, err := api.Projects().SetPolicy(context.Background(), "default", []byte("default: allow\ncommands:\n  allow: [ls, cat, echo]\n")); err != nil {
		fmt.Fprintln(os.Stderr, "set policy:", err)
		os.Exit(1)
	}
	code := m.Run()
	shared.Stop()
	pgtest.Stop()
	_ = os.RemoveAll(dir)
	_ = os.RemoveAll(toolsDir)
	os.Exit(code)
}

// gitRepo makes a repository with one committed file.
func gitRepo(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("some notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return dir
}

// labRegistries permits the addresses the package registries resolve to
// where they are documentation or benchmarking addresses, as an operator
// of such a network would (PADDOCK_EGRESS_PERMIT): the machines these tests
// run on reach the Go module proxy and npm through one.
func labRegistries() []netip.Prefix {
	var out []netip.Prefix
	for _, host := range []string{"proxy.golang.org", "registry.npmjs.org"} {
		addrs, _ := net.LookupIP(host)
		for _, ip := range addrs {
			if a, ok := netip.AddrFromSlice(ip); ok {
				switch egress.Forbidden(a.Unmap()) {
				case egress.ClassDocumentation, egress.ClassBenchmarking:
					out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
				}
			}
		}
	}
	return out
}

// script installs testdata/NAME in the shared server's replay folder and
// names its model; scriptIn does so for another data directory.
func script(t testing.TB, name string) string {
	t.Helper()
	return scriptIn(t, sharedDir, name)
}

func scriptIn(t testing.TB, dataDir, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dataDir, "replay"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dataDir, "replay", name), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return "replay/" + name
}

// openAIServer serves replies on the OpenAI wire (the official SDK's
// peer) and points the shared server's OpenAI models at it for the test.
func openAIServer(t *testing.T, replies ...providertest.Reply) *providertest.Server {
	t.Helper()
	srv := providertest.NewServer(t, "", replies...)
	t.Setenv("OPENAI_API_KEY", "test-key")
	t.Setenv("OPENAI_BASE_URL", srv.URL)
	return srv
}

// waitFor polls cond until it holds; the deadline is generous because the
// machine may be busy. It never sleeps a fixed time to let work happen.
func waitFor(t testing.TB, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(150 * time.Second)
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// dataDir is a data directory the sandbox user can reach (t.TempDir's
// parent is private).
func dataDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
		t.Fatal(err)
	}
	return dir
}

var uniqueN atomic.Int64

// unique names a resource afresh on every run, so -count=N reruns against
// the package's one server stay independent.
func unique(name string) string {
	return fmt.Sprintf("%s-%d-%d", name, os.Getpid()%10000, uniqueN.Add(1))
}

// readToken is the first administrator's token of a data directory.
func readToken(dataDir string) string {
	data, err := os.ReadFile(filepath.Join(dataDir, datadir.AdminToken))
	if err != nil {
		panic(err)
	}
	return strings.TrimSpace(string(data))
}

// authed is an HTTP request as the shared server's first administrator.
func authed(method, url, contentType string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	return http.DefaultClient.Do(req)
}

// member makes user (created when new) role in project (created when new).
func member(t *testing.T, project, user string, role identity.Role) {
	t.Helper()
	ctx := context.Background()
	if err := api.Access().CreateProject(ctx, project); err != nil && apiStatus(t, err) != http.StatusConflict {
		t.Fatal(err)
	}
	if _, err := api.Access().CreateUser(ctx, user, false); err != nil && apiStatus(t, err) != http.StatusConflict {
		t.Fatal(err)
	}
	if err := api.Access().SetMember(ctx, project, user, role); err != nil {
		t.Fatal(err)
	}
}

// tokenOf is a new token of user, and a client sending it.
func tokenOf(t *testing.T, user string) (string, *client.Client) {
	t.Helper()
	res, err := api.Access().CreateToken(context.Background(), wire.NewToken{User: user})
	if err != nil {
		t.Fatal(err)
	}
	return res.Secret, client.New(shared.URL).WithToken(res.Secret)
}

// liveDSN is where the shared server's store is.
var liveDSN string

// liveDB is the shared server's live database, opened behind its back (as
// someone with access to the database would); queries are written in
// SQLite's spelling and rebound for PostgreSQL.
type liveDB struct {
	*sql.DB
	pg bool
}

func openLive(t *testing.T) *liveDB {
	t.Helper()
	driver, dsn := "sqlite", liveDSN+"?_pragma=busy_timeout(10000)"
	if sqlstore.IsPostgres(liveDSN) {
		driver, dsn = "pgx", liveDSN
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	return &liveDB{DB: db, pg: driver == "pgx"}
}

func (d *liveDB) q(query string) string {
	if !d.pg {
		return query
	}
	for n := 1; strings.Contains(query, "?"); n++ {
		query = strings.Replace(query, "?", fmt.Sprintf("$%d", n), 1)
	}
	return query
}

func (d *liveDB) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return d.DB.ExecContext(ctx, d.q(query), args...)
}

func (d *liveDB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return d.DB.QueryRowContext(ctx, d.q(query), args...)
}

// ownCluster skips, in the suite's PostgreSQL run, a test that makes
// servers of its own (nodes on a PostgreSQL of their own, a Kubernetes
// API server): the default run ran it the same way.
func ownCluster(t *testing.T) {
	t.Helper()
	if os.Getenv("PADDOCK_TEST_STORE") == "postgres" {
		t.Skip("makes servers of its own: the default run ran it already")
	}
}
