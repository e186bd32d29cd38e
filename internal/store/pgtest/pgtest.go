// Package pgtest starts a private PostgreSQL cluster for tests: Debian's
// postgresql binaries, a data directory of its own, a free port on
// loopback, no fsync. One cluster serves a test binary (started on first
// use, stopped by Main); each caller gets a database of its own.
package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)

// cluster is the running cluster of this test binary.
type cluster struct {
	bin, dir string
	port     int
	as       *syscall.Credential
	server   *exec.Cmd
}

var (
	once    sync.Once
	running *cluster
	failed  error
	next    atomic.Int64
)

// Main runs the tests and stops the cluster, if one was started:
// func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }.
func Main(m *testing.M) int {
	code := m.Run()
	Stop()
	return code
}

// Stop stops the cluster, if one was started.
func Stop() {
	if running != nil {
		running.stop()
	}
}

// URL is the URL of a new, empty database; the test is skipped when
// PostgreSQL is not installed (apt-get install postgresql: .ci/run does).
func URL(t testing.TB) string {
	t.Helper()
	u, err := NewDatabase()
	if os.IsNotExist(err) {
		t.Skipf("PostgreSQL is not installed (apt-get install postgresql): %v", err)
	}
	if err != nil {
		t.Fatalf("PostgreSQL test cluster: %v", err)
	}
	return u
}

// NewDatabase is URL outside a test (in TestMain).
func NewDatabase() (string, error) {
	once.Do(func() { running, failed = start() })
	if failed != nil {
		return "", failed
	}
	name := fmt.Sprintf("t%d_%d", os.Getpid(), next.Add(1))
	db, err := sql.Open("pgx", running.url("postgres"))
	if err != nil {
		return "", err
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		return "", fmt.Errorf("create test database: %w", err)
	}
	return running.url(name), nil
}

func (c *cluster) url(db string) string {
	return fmt.Sprintf("postgres://paddock@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

func start() (*cluster, error) {
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		return nil, &os.PathError{Op: "find", Path: "/usr/lib/postgresql/*/bin/initdb", Err: os.ErrNotExist}
	}
	sort.Strings(bins)
	c := &cluster{bin: filepath.Dir(bins[len(bins)-1])}
	dir, err := os.MkdirTemp("", "paddock-pg-")
	if err != nil {
		return nil, err
	}
	c.dir = dir
	// PostgreSQL refuses to run as root: as root, run it as postgres.
	if os.Getuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root needs the postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.as = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	if err := c.run("initdb", "-D", filepath.Join(dir, "data"), "-U", "paddock", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c.port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	// The server is this process's child, told to quit when it dies: a
	// test binary killed (a timeout, SIGKILL) leaves no cluster running.
	log, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	c.server = exec.Command(filepath.Join(c.bin, "postgres"), "-D", filepath.Join(dir, "data"), "-p", strconv.Itoa(c.port), "-k", dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=200")
	c.server.Dir, c.server.Env, c.server.Stdout, c.server.Stderr = dir, []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "LC_ALL=C.UTF-8"}, log, log
	c.server.SysProcAttr = &syscall.SysProcAttr{Credential: c.as, Pdeathsig: syscall.SIGQUIT}
	if err := c.server.Start(); err != nil {
		return nil, err
	}
	// Ready for connections.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := sql.Open("pgx", c.url("postgres"))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	for {
		if err = db.PingContext(ctx); err == nil {
			return c, nil
		}
		if ctx.Err() != nil {
			c.stop()
			out, _ := os.ReadFile(filepath.Join(dir, "log"))
			return nil, fmt.Errorf("the test cluster did not come up: %w\n%s", err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *cluster) run(name string, args ...string) error {
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "LC_ALL=C.UTF-8"}
	if c.as != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.as}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, out)
	}
	return nil
}

func (c *cluster) stop() {
	if c.server != nil && c.server.Process != nil {
		_ = c.server.Process.Signal(syscall.SIGQUIT) // immediate shutdown
		_ = c.server.Wait()
	}
	_ = os.RemoveAll(c.dir)
}
