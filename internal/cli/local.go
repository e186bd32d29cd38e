package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/internal/app"
	"github.com/paddock-dev/paddock/internal/client"
)

// LocalIdle is how long a background server waits, with no request and
// no session queued or running, before it ends.
const LocalIdle = 10 * time.Minute

// localStart bounds the wait for a background server to serve (its first
// start makes the databases).
const localStart = 2 * time.Minute

// background returns a client of the server holding the data directory,
// starting one in the background first when none does: paddock serve on
// a Unix socket in $XDG_RUNTIME_DIR, this user's alone, which ends once
// unused for LocalIdle. Every later command talks to it.
func (g *globals) background(ctx context.Context, announce bool) (*client.Client, error) {
	dir, err := filepath.Abs(g.cfg.DataDir)
	if err != nil {
		return nil, err
	}
	if h, ok := app.Holder(dir); ok && h.URL != "" {
		if announce {
			fmt.Fprintf(g.io.Err, "using the paddock server at %s (it holds %s)\n", h.URL, dir)
		}
		return client.New(h.URL).WithToken(g.token(h.URL)), nil
	}
	sock, err := socketPath(g.io.Getenv, dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, LocalLog)
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := exec.Command(g.io.Executable, "serve", "--listen", "unix:"+sock, "--idle-exit", LocalIdle.String())
	cmd.Env = append(os.Environ(), "PADDOCK_DATA_DIR="+dir, "PADDOCK_SERVER=")
	cmd.Stdout, cmd.Stderr = log, log
	// Its own session: the terminal's ^C and hang-up are this command's.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start a background paddock server: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(localStart)
	for {
		if h, ok := app.Holder(dir); ok && h.URL != "" {
			// Said whatever the command: a process now runs beyond it.
			fmt.Fprintf(g.io.Err, "started a background paddock server on %s (it ends after %s unused; paddock server stop ends it now; log: %s)\n",
				dir, LocalIdle, logPath)
			return client.New(h.URL).WithToken(g.token(h.URL)), nil
		}
		select {
		case err := <-exited:
			return nil, fmt.Errorf("the background paddock server ended at start (%v): %s", err, lastLines(logPath, 5))
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the background paddock server did not start serving within %s: see %s", localStart, logPath)
		}
	}
}

// socketPath is where the background server of data directory dir
// listens: $XDG_RUNTIME_DIR/paddock/, else /tmp/paddock-UID/ (made this
// user's alone), one socket per data directory.
func socketPath(getenv func(string) string, dir string) (string, error) {
	sum := sha256.Sum256([]byte(dir))
	name := hex.EncodeToString(sum[:6]) + ".sock"
	base := getenv("XDG_RUNTIME_DIR")
	if base == "" {
		base = filepath.Join(os.TempDir(), "paddock-"+strconv.Itoa(os.Getuid()))
	} else {
		base = filepath.Join(base, "paddock")
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", err
	}
	fi, err := os.Lstat(base)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s must be a directory of yours alone (mode 0700) to hold the background server's socket", base)
	}
	return filepath.Join(base, name), nil
}

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

// stopHolder ends the server holding data directory dir (SIGTERM) and
// waits for it to let the directory go.
func stopHolder(h *app.InUseError) error {
	if h.PID <= 1 {
		return fmt.Errorf("the process holding %s did not record its ID", h.Dir)
	}
	if err := syscall.Kill(h.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop the paddock server (process %d): %w", h.PID, err)
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if _, held := app.Holder(h.Dir); !held {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("the paddock server (process %d) still holds %s after a minute", h.PID, h.Dir)
}

func newServer(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "server", Short: "The server holding the data directory: its status, or stop it"}
	cmd.AddCommand(&cobra.Command{
		Use:   "status",
		Short: "Say which server holds the data directory",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, held := app.Holder(g.cfg.DataDir)
			switch {
			case !held:
				fmt.Fprintf(g.io.Out, "no paddock server holds %s; the next command starts one in the background\n", g.cfg.DataDir)
			case h.Background:
				fmt.Fprintf(g.io.Out, "a background paddock server (process %d) holds %s at %s; it ends after %s unused\n", h.PID, g.cfg.DataDir, h.URL, LocalIdle)
			default:
				fmt.Fprintf(g.io.Out, "the paddock server (process %d) holds %s at %s\n", h.PID, g.cfg.DataDir, h.URL)
			}
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "stop",
		Short: "Stop the server holding the data directory (sessions resume when one starts again)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, held := app.Holder(g.cfg.DataDir)
			if !held {
				fmt.Fprintf(g.io.Out, "no paddock server holds %s\n", g.cfg.DataDir)
				return nil
			}
			if err := stopHolder(h); err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "stopped the paddock server (process %d) on %s\n", h.PID, g.cfg.DataDir)
			return nil
		},
	})
	return cmd
}
