// Package local is the paddock server a person's own commands start for
// themselves: found through the data directory's lock, started in the
// background on a Unix socket of theirs, ended once unused or when asked.
package local

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/paddock-dev/paddock/internal/config"
	"github.com/paddock-dev/paddock/internal/datadir"
)

// Idle is how long a background server waits, with no request and
// no session queued or running, before it ends.
const Idle = 10 * time.Minute

// startWait bounds the wait for a background server to serve (its first
// start makes the databases).
const startWait = 2 * time.Minute

// Log is the file, in the data directory, where a background server's
// log goes.
const Log = "local.log"

// Connect returns the address of the server holding data directory dir,
// starting one in the background first when none does: exe (the server
// program, paddock-server) serving on a Unix socket in $XDG_RUNTIME_DIR, this user's
// alone, which ends once unused for Idle. Every later command talks to
// it. started says this call started it.
func Connect(ctx context.Context, exe, dir string, getenv func(string) string) (url string, started bool, err error) {
	dir, err = filepath.Abs(dir)
	if err != nil {
		return "", false, err
	}
	if h, ok := datadir.Holder(dir); ok && h.URL != "" {
		return h.URL, false, nil
	}
	if err := matches(exe); err != nil {
		return "", false, err
	}
	sock, err := SocketPath(getenv, dir)
	if err != nil {
		return "", false, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", false, err
	}
	logPath := filepath.Join(dir, Log)
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return "", false, err
	}
	defer log.Close()
	cmd := exec.Command(exe, "serve", "--listen", "unix:"+sock, "--idle-exit", Idle.String())
	cmd.Env = append(os.Environ(), "PADDOCK_DATA_DIR="+dir, "PADDOCK_SERVER=")
	cmd.Stdout, cmd.Stderr = log, log
	// Its own session: the terminal's ^C and hang-up are the command's.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return "", false, fmt.Errorf("start a background paddock server: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(startWait)
	for {
		h, held := datadir.Holder(dir)
		if held && h.URL != "" {
			// Two commands at once: the server whose lock won serves both.
			return h.URL, h.PID == cmd.Process.Pid, nil
		}
		select {
		case err := <-exited:
			// Looked at again: the other command's server may have taken
			// the lock since the look above (ours then ended on it).
			if _, held = datadir.Holder(dir); !held {
				return "", false, fmt.Errorf("the background paddock server ended at start (%v): %s", err, lastLines(logPath, 5))
			}
			exited = nil // another command's server holds the lock: wait for its address
		case <-ctx.Done():
			return "", false, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return "", false, fmt.Errorf("the background paddock server did not start serving within %s: see %s", startWait, logPath)
		}
	}
}

// SocketPath is where the background server of data directory dir
// listens: in $XDG_RUNTIME_DIR/paddock/ (one socket per data directory),
// else in the data directory itself (a directory of the user's), else,
// where that path is too long for a socket, in /tmp/paddock-UID/.
func SocketPath(getenv func(string) string, dir string) (string, error) {
	sum := sha256.Sum256([]byte(dir))
	name := hex.EncodeToString(sum[:6]) + ".sock"
	var base string
	switch {
	case getenv("XDG_RUNTIME_DIR") != "":
		base = filepath.Join(getenv("XDG_RUNTIME_DIR"), "paddock")
	case len(filepath.Join(dir, "run", name)) < maxSocketPath:
		base = filepath.Join(dir, "run")
	default:
		base = filepath.Join(os.TempDir(), "paddock-"+strconv.Itoa(os.Getuid()))
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", fmt.Errorf("the background server's socket: %w (set XDG_RUNTIME_DIR to a directory of yours)", err)
	}
	fi, err := os.Lstat(base)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s must be a directory of yours alone (mode 0700) to hold the background server's socket; "+
			"set XDG_RUNTIME_DIR to a directory of yours, or use a shorter --data-dir", base)
	}
	return filepath.Join(base, name), nil
}

// maxSocketPath is the longest path a Unix socket may have (sun_path).
const maxSocketPath = 108

// lastLines is the end of a log, for a message.
func lastLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// Stop ends the server holding data directory dir (SIGTERM) and
// waits for it to let the directory go.
func Stop(h *datadir.InUseError) error {
	if h.PID <= 1 {
		return fmt.Errorf("the process holding %s did not record its ID", h.Dir)
	}
	if err := syscall.Kill(h.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop the paddock server (process %d): %w", h.PID, err)
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if _, held := datadir.Holder(h.Dir); !held {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("the paddock server (process %d) still holds %s after a minute", h.PID, h.Dir)
}

// ServerName is the server program's name.
const ServerName = "paddock-server"

// ServerProgram is the server program this client starts: paddock-server
// beside the running paddock, else on PATH; empty when there is none.
func ServerProgram() string {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), ServerName)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p
		}
	}
	if p, err := exec.LookPath(ServerName); err == nil {
		return p
	}
	return ""
}

// Server is the part of the command line that runs a server: linked
// into paddock-server (app.CLI), so the client, which only talks to servers,
// starts without initialising the embedded Temporal server, the
// Kubernetes client or the store.
type Server struct {
	// Start starts a server on cfg: serve's, or one in-process for a
	// command's length.
	Start func(context.Context, config.Config, *slog.Logger) (Running, error)
	// Migrate applies the store's schema migrations.
	Migrate func(context.Context, config.Config) (version int, dialect string, err error)
}

// Running is a server this process started.
type Running interface {
	Address() string
	// Idle is closed once the server has had no request for d and no
	// session queued or running.
	Idle(ctx context.Context, d time.Duration) <-chan struct{}
	// Lost reports a failure that ends the server.
	Lost() <-chan error
	Stop()
}

// beside says program is installed beside this one.
func beside(program string) bool {
	self, err := os.Executable()
	return err == nil && filepath.Dir(self) == filepath.Dir(program)
}

// matches refuses a server program found on PATH (not installed beside
// this client) of another build than the client's: the two speak one
// API only when built together. Installed side by side they are taken
// as they are, and a build that recorded no version is not judged.
func matches(program string) error {
	if program == "" || beside(program) {
		return nil
	}
	return mismatch(program, datadir.Build(), datadir.BuildOf(program))
}

// mismatch is matches' judgment of the builds of this client (mine) and
// of the server program (theirs).
func mismatch(program, mine, theirs string) error {
	if mine == "" || theirs == "" || mine == theirs {
		return nil
	}
	return fmt.Errorf("%s on PATH (%s) is build %s and this paddock is build %s: they speak one API only when built together; "+
		"install both again (go build -o DIR ./cmd/paddock ./cmd/paddock-server), or talk to a running server with --server URL", ServerName, program, theirs, mine)
}

// Outdated says, when the background server holding data directory dir
// is another build than program (the server program a client command
// would start now: after an upgrade or a rebuild), what to do; else "".
func Outdated(program, dir string) string {
	h, held := datadir.Holder(dir)
	if program == "" || !held || !h.Background || h.Build == "" {
		return ""
	}
	b := datadir.BuildOf(program)
	if b == "" || b == h.Build {
		return ""
	}
	return fmt.Sprintf("the background paddock server holding %s runs build %s, not the build of %s (%s): "+
		"paddock server stop, then this command again, runs the new one (sessions resume)", dir, h.Build, program, b)
}

// Status says which server holds data directory dir: its process,
// build and address.
func Status(dir string) string {
	h, held := datadir.Holder(dir)
	if !held {
		return fmt.Sprintf("no paddock server holds %s; the next command starts one in the background", dir)
	}
	build := ""
	if h.Build != "" {
		build = ", build " + h.Build
	}
	if h.Background {
		return fmt.Sprintf("a background paddock server (process %d%s) holds %s at %s; it ends after %s unused", h.PID, build, dir, h.URL, Idle)
	}
	return fmt.Sprintf("the paddock server (process %d%s) holds %s at %s", h.PID, build, dir, h.URL)
}

// ErrNoServerProgram says the client found no server program to start.
var ErrNoServerProgram = errors.New(ServerName + ", the program that runs Paddock's server, is neither next to paddock nor on PATH: " +
	"install both (go install ./cmd/paddock ./cmd/paddock-server, or go build -o DIR ./cmd/paddock ./cmd/paddock-server), " +
	"or talk to a running server with --server URL (PADDOCK_SERVER)")

// Exec runs the server program in this process's place with args: the
// client runs it for the commands only the server links (serve,
// migrate).
func Exec(program string, args []string) error {
	if program == "" {
		return ErrNoServerProgram
	}
	if err := matches(program); err != nil {
		return err
	}
	return syscall.Exec(program, append([]string{program}, args...), os.Environ())
}

// Logger is the logger of a server in-process for a command's length:
// warnings and up (unless the person asked for more), appended to Log in
// data directory dir (else written to w): the person's terminal shows
// the session, not the server's retries. done closes the file.
func Logger(dir string, w io.Writer, lvl slog.Level) (logger *slog.Logger, done func()) {
	done = func() {}
	if err := os.MkdirAll(dir, 0o700); err == nil {
		if f, err := os.OpenFile(filepath.Join(dir, Log), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err == nil {
			w, done = f, func() { _ = f.Close() }
		}
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: max(lvl, slog.LevelWarn)})), done
}
