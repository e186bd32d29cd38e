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
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
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

// Place is where a sandbox runs and what it sees besides the system view:
// the working copy, the session's caches, its extra read-only paths and
// variables, and its way out (if any).
type Place struct {
	// Session is the session the command runs for: a sandbox elsewhere
	// (a pod) is the session's own.
	Session string
	// Workdir is the working copy: the only writable host directory, and
	// the command's current directory.
	Workdir string
	// Repository says Workdir is a session's working copy, a git
	// repository: no command runs there without its .git, bound
	// read-only (one gone, say hidden by an overlay's whiteout, would let
	// a command make another, whose config the host's git would read).
	Repository bool
	// Env adds variables to the allowlisted environment; code-carrying and
	// Paddock-owned names are dropped (see CodeCarrying).
	Env map[string]string
	// Cache, when set, is a host directory of the session's own, mounted
	// writable at CacheMount so build caches outlive one command.
	Cache string
	// ReadOnly are host paths (toolchains outside the system trees) shown
	// read-only at the same path, secrets and sockets in them masked.
	ReadOnly []string
	// Deps, when set, is the host directory of the dependency caches
	// (Go modules, npm, pip), mounted at DepsMount: read-only unless
	// DepsWritable (while setup fills them).
	Deps         string
	DepsWritable bool
	// Egress, when set, is the host Unix socket of the command's egress
	// proxy: a forwarder on the sandbox's loopback relays to it and the
	// proxy variables point there. Without it the command has no network.
	Egress string
}

// Command is one command to run.
type Command struct {
	Place
	// ID names this run: a sandbox elsewhere starts a run of one ID once
	// at most, however often it is asked (empty: a fresh run).
	ID string
	// Script is run by bash --noprofile --norc -c.
	Script    string
	Timeout   time.Duration
	MaxOutput int64
	// Stdout and Stderr receive the output (up to MaxOutput in all).
	Stdout, Stderr io.Writer
	// Stdin, when set, is the command's standard input (else none): how a
	// secret reaches one command without a command line or a file.
	Stdin io.Reader
}

// Result is how a command ended.
type Result struct {
	ExitCode int
	// Discarded counts output bytes beyond MaxOutput: counted, never kept.
	Discarded int64
	TimedOut  bool
	Duration  time.Duration
	// Use is what the command's processes used, as the kernel counted
	// them when they were reaped (zero where it could not say).
	Use Use
}

// Use is the resources a command's processes used.
type Use struct {
	// CPU is user and system time of every process together.
	CPU time.Duration
	// PeakMemory is the largest resident set of any one of them, in bytes.
	PeakMemory int64
	// Written is what they wrote to block devices, in bytes.
	Written int64
}

// use reads what the waited process and every descendant it reaped used
// (wait4 reports both).
func use(ps *os.ProcessState) Use {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return Use{}
	}
	return Use{CPU: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), PeakMemory: ru.Maxrss << 10, Written: ru.Oublock * 512}
}

// ErrUnavailable says the sandbox cannot run here; the message says what
// to install or enable. There is no unsandboxed fallback.
var ErrUnavailable = errors.New("sandbox unavailable")

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
		cmd.Stdin = c.Stdin
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
	if cmd.ProcessState != nil {
		res.Use = use(cmd.ProcessState)
	}
	mu.Lock()
	res.Discarded = discarded
	mu.Unlock()
	var exit *exec.ExitError
	switch {
	case err == nil, errors.Is(err, exec.ErrWaitDelay): // it succeeded; a process it left held its output
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

// Supervise runs cmd (built, not started) with c's output cap and time
// limit in a process group of its own, and kills whatever of that group
// is left when it ends. It isolates nothing: the executor uses it inside
// a pod, where the pod is the sandbox.
func Supervise(ctx context.Context, c Command, cmd *exec.Cmd) (Result, error) {
	defaults(&c)
	res, err := run(ctx, c, func(wire func(*exec.Cmd) error) (*exec.Cmd, error) {
		if err := wire(cmd); err != nil {
			return nil, err
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		// A process that left the group holding the output open does not
		// hold the command's end: its pipes close a second after.
		cmd.WaitDelay = time.Second
		return cmd, cmd.Start()
	})
	if cmd.Process != nil {
		killGroup(cmd.Process.Pid)
	}
	return res, err
}

func killGroup(pid int) {
	_ = syscallKill(-pid)
}

// currentUID is the uid Paddock runs as (a variable for tests).
var currentUID = os.Getuid

// Writable checks that the sandbox user may write workdir: as root,
// commands run as the sandbox uid, never as root.
func (box *Bwrap) Writable(workdir string) error {
	fi, err := os.Stat(workdir)
	if err != nil || !fi.IsDir() {
		return fmt.Errorf("--workdir %s is not a directory", workdir)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if os.Getuid() == 0 && ok && int(st.Uid) != box.UID && fi.Mode().Perm()&0o002 == 0 {
		return fmt.Errorf("--workdir %s is owned by uid %d, and sandboxed commands run as the sandbox user (uid %d), never as root: "+
			"chown -R %d:%d %s, or use a directory of the sandbox user's", workdir, st.Uid, box.UID, box.UID, box.GID, workdir)
	}
	return box.Reachable(workdir)
}

// Quote quotes argv words for bash, so "sandbox exec -- ls -la 'a b'"
// runs them as given.
func Quote(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}

// CacheFor is the build cache (GOCACHE and the like, at CacheMount) of
// the commands run on workdir, under dir: one per directory, kept from
// one command to the next so a second build costs what it costs outside
// the sandbox; the sandbox user's when Paddock is root.
func (box *Bwrap) CacheFor(dir, workdir string) (string, error) {
	sum := sha256.Sum256([]byte(workdir))
	cache := filepath.Join(dir, "dir-"+hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(cache, 0o700); err != nil {
		return "", fmt.Errorf("the build cache of %s: %w", workdir, err)
	}
	if currentUID() == 0 {
		// The sandbox user traverses the data directory to it, as to the
		// sessions' copies (the server opens it so too).
		for _, d := range []string{filepath.Dir(dir), dir} {
			if err := os.Chmod(d, 0o711); err != nil {
				return "", err
			}
		}
		if err := os.Lchown(cache, box.UID, box.GID); err != nil {
			return "", err
		}
	}
	return cache, box.Reachable(cache)
}
