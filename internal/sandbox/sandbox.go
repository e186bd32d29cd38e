// Package sandbox runs commands isolated from the host: on bubblewrap, with
// every namespace unshared (no network), all capabilities dropped, a
// read-only root, fresh tmpfs over /tmp, /root, /home and /run, only the
// working copy writable (its git hooks and config read-only), an
// environment rebuilt from an allowlist, process and memory limits, a time
// limit and an output cap. When a command ends, nothing it started
// survives: the sandbox's PID namespace dies with it.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Defaults of the command budget.
const (
	DefaultTimeout   = 10 * time.Minute
	DefaultMaxOutput = 10 << 20
	DefaultMaxProcs  = 512
	DefaultMaxMemory = 4 << 30
	DefaultMaxCPUs   = 1.0
	DefaultTmpSize   = 1 << 30
	// DefaultUID runs commands when Paddock itself runs as root.
	DefaultUID = 61000
)

// Command is one command to run.
type Command struct {
	// Script is run by bash --noprofile --norc -c.
	Script string
	// Workdir is the working copy: the only writable host directory, and
	// the command's current directory.
	Workdir string
	// Env adds variables to the allowlisted environment. Variables that
	// make a shell run code (BASH_ENV, ENV, BASH_FUNC_*, ...) are dropped.
	Env map[string]string
	// Cache, when set, is a host directory of the session's own, mounted
	// writable at /home/sandbox/.cache so build caches outlive one command.
	Cache     string
	Timeout   time.Duration
	MaxOutput int64
	// Stdout and Stderr receive the output (up to MaxOutput in all).
	Stdout, Stderr io.Writer
}

// Result is how a command ended.
type Result struct {
	ExitCode int
	// Discarded counts output bytes beyond MaxOutput: counted, never kept.
	Discarded int64
	TimedOut  bool
	Duration  time.Duration
}

// ErrUnavailable says the sandbox cannot run here; the message says what
// to install or enable. There is no unsandboxed fallback.
var ErrUnavailable = errors.New("sandbox unavailable")

// forbiddenEnv never reaches a sandboxed shell.
func forbiddenEnv(name string) bool {
	switch name {
	case "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "ZDOTDIR", "PROMPT_COMMAND", "PS4", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "IFS":
		return true
	}
	return strings.HasPrefix(name, "BASH_FUNC_") || strings.HasPrefix(name, "LD_")
}

// Environment is the allowlisted environment of every sandboxed command.
func Environment(extra map[string]string) map[string]string {
	env := map[string]string{
		"PATH":        "/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME":        "/home/sandbox",
		"USER":        "sandbox",
		"TMPDIR":      "/tmp",
		"LANG":        "C.UTF-8",
		"TERM":        "dumb",
		"GOCACHE":     "/home/sandbox/.cache/go-build",
		"GOPATH":      "/home/sandbox/.cache/go",
		"GOFLAGS":     "-mod=mod",
		"GOTOOLCHAIN": "local",
		"CI":          "1",
	}
	for k, v := range extra {
		if !forbiddenEnv(k) && k != "" && !strings.ContainsAny(k, "=\x00") {
			env[k] = v
		}
	}
	return env
}

// capWriter passes on the first max bytes and counts the rest.
type capWriter struct {
	mu        *sync.Mutex
	w         io.Writer
	left      *int64
	discarded *int64
}

func (c capWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := int64(len(p))
	keep := min(n, *c.left)
	*c.left -= keep
	*c.discarded += n - keep
	if keep > 0 && c.w != nil {
		if _, err := c.w.Write(p[:keep]); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func defaults(c *Command) {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxOutput <= 0 {
		c.MaxOutput = DefaultMaxOutput
	}
}

// run starts a command through spawn with capped output, kills its
// process group on timeout, and reports how it ended.
func run(ctx context.Context, c Command, spawn func(wire func(*exec.Cmd) error) (*exec.Cmd, error)) (Result, error) {
	var mu sync.Mutex
	left, discarded := c.MaxOutput, int64(0)
	start := time.Now()
	cmd, err := spawn(func(cmd *exec.Cmd) error {
		cmd.Stdout = capWriter{&mu, c.Stdout, &left, &discarded}
		cmd.Stderr = capWriter{&mu, c.Stderr, &left, &discarded}
		cmd.Stdin = nil
		return nil
	})
	if err != nil {
		return Result{}, fmt.Errorf("start sandbox: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(c.Timeout)
	defer timer.Stop()
	res := Result{}
	select {
	case err = <-done:
	case <-timer.C:
		res.TimedOut = true
		killGroup(cmd.Process.Pid)
		err = <-done
	case <-ctx.Done():
		killGroup(cmd.Process.Pid)
		<-done
		return Result{}, ctx.Err()
	}
	res.Duration = time.Since(start)
	mu.Lock()
	res.Discarded = discarded
	mu.Unlock()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		res.ExitCode = exit.ExitCode()
		if res.ExitCode < 0 {
			res.ExitCode = 128 + 9
		}
	default:
		return res, err
	}
	if res.TimedOut {
		res.ExitCode = 124
	}
	return res, nil
}

func killGroup(pid int) {
	_ = syscallKill(-pid)
}

// currentUID is the uid Paddock runs as (a variable for tests).
var currentUID = os.Getuid
