package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"

	"github.com/paddock-dev/paddock/internal/config"
	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/sandbox"
	"github.com/paddock-dev/paddock/internal/volume"
)

// NewSandbox builds the one sandbox every entry point uses — sessions'
// commands and `paddock sandbox exec` alike: bubblewrap with the
// configured read-only paths and CPU budget, Paddock's data directory
// hidden. It fails when bubblewrap cannot run here, and with a
// *LimitError when the CPU budget cannot be enforced and the operator has
// not accepted that (the box is returned all the same).
func NewSandbox(ctx context.Context, cfg config.Config) (*sandbox.Bwrap, error) {
	// On a developer's own machine, as them, their toolchains and module
	// cache are lent to the commands, read-only.
	var lent sandbox.Workstation
	if cfg.Execution == config.ExecutionWorkstation && os.Getuid() != 0 {
		home, _ := os.UserHomeDir()
		lent = sandbox.Lend(os.Getenv, home)
	}
	box, err := sandbox.NewBwrap(ctx, append(slices.Clone(cfg.ReadOnlyPaths), lent.Paths...)...)
	if err != nil {
		return nil, err
	}
	box.Lent = lent
	// Commands see their own working copy, never the databases or other
	// sessions' copies.
	if abs, err := filepath.Abs(cfg.DataDir); err == nil && cfg.DataDir != "" {
		box.Hide = []string{abs}
	}
	if cfg.CommandMaxCPUs > 0 {
		box.MaxCPUs = cfg.CommandMaxCPUs
	}
	if cfg.CommandMaxMemory > 0 {
		box.MaxMemory = cfg.CommandMaxMemory
	}
	if cfg.CommandMaxProcesses > 0 {
		box.MaxProcs = cfg.CommandMaxProcesses
	}
	var limits []string
	for _, l := range box.Unenforced() {
		if !cfg.Unenforced[l] {
			limits = append(limits, l)
		}
	}
	if len(limits) == 0 {
		return box, nil
	}
	what := "this machine cannot bound commands' " + strings.Join(limits, ", ")
	if os.Getuid() == 0 {
		return box, &LimitError{Missing: []string{what + " (no writable cgroup controller for it on cgroups v1 or v2)"}}
	}
	name := "your user"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	return box, &LimitError{Missing: []string{fmt.Sprintf("%s: no cgroup is delegated to %s; %s", what, name, sandbox.Delegation(name))}}
}

// LimitError says which sandbox limits this machine cannot enforce and
// the operator has not accepted unenforced.
type LimitError struct {
	Missing []string
}

func (e *LimitError) Error() string {
	msg := ""
	for i, m := range e.Missing {
		if i > 0 {
			msg += "; "
		}
		msg += m
	}
	return msg + "; accept running without with PADDOCK_UNENFORCED_LIMITS (a comma-separated list of disk, cpu, memory, processes)"
}

// sandbox gives the activities their sandbox and the sessions' volumes.
// Without bubblewrap, sessions that run commands fail at start with what
// to install; Paddock never runs them unsandboxed. A limit this machine
// cannot enforce makes them fail too, unless the operator accepted it
// unenforced (PADDOCK_UNENFORCED_LIMITS), which is announced.
func (a *App) sandbox(ctx context.Context, acts *durable.Activities, cfg config.Config) error {
	if os.Getuid() == 0 {
		// The sandbox user must traverse the data directory to its working copies.
		if err := os.Chmod(cfg.DataDir, 0o711); err != nil {
			return err
		}
		acts.Copies.UID = sandbox.DefaultUID
	}
	box, err := NewSandbox(ctx, cfg)
	var limits *LimitError
	if errors.As(err, &limits) {
		err = nil
	}
	if err == nil {
		err = box.Reachable(filepath.Join(cfg.DataDir, "workspaces"))
	}
	if err != nil {
		if box != nil {
			box.Close()
		}
		a.logger.Warn("SANDBOX UNAVAILABLE: sessions whose agents can run commands will fail at start", "reason", err)
		acts.SandboxErr = err
		return nil
	}
	acts.Shell = box
	acts.Copies.HostWork = box
	a.closers = append(a.closers, func() error { box.Close(); return nil })
	if err := environments(acts, cfg); err != nil {
		return err
	}
	if box.Forwarder, err = forwarder(filepath.Join(cfg.DataDir, "bin")); err != nil {
		return fmt.Errorf("egress forwarder: %w", err)
	}
	if limits == nil {
		limits = &LimitError{}
	}
	for _, l := range box.Unenforced() {
		if cfg.Unenforced[l] {
			a.logger.Warn("UNENFORCED LIMIT accepted by PADDOCK_UNENFORCED_LIMITS: commands' " + l + " is not bounded")
		}
	}
	size := cfg.SessionMaxDisk
	if size == 0 {
		size = config.DefaultSessionMaxDisk
	}
	if verr := volume.Probe(); verr != nil {
		if !cfg.Unenforced["disk"] {
			limits.Missing = append(limits.Missing, fmt.Sprintf("this machine cannot bound sessions' disk (%v)", verr))
		} else {
			a.logger.Warn("UNENFORCED LIMIT accepted by PADDOCK_UNENFORCED_LIMITS: sessions' disk is not bounded", "reason", verr)
		}
	} else {
		files := cfg.SessionMaxFiles
		if files == 0 {
			files = config.DefaultSessionMaxFiles
		}
		v := &volume.Volumes{Dir: filepath.Join(cfg.DataDir, "volumes"), Size: size, Files: files, UID: acts.Copies.UID}
		acts.Copies.Volumes = v
		// No mount outlives the process; a session's volume is mounted
		// again when it is next needed.
		a.closers = append(a.closers, func() error { return v.UnmountAll(context.Background()) })
	}
	if len(limits.Missing) > 0 {
		acts.LimitErr = limits
		a.logger.Warn("LIMITS UNENFORCEABLE: sessions whose agents can run commands will fail at start", "reason", limits)
	}
	if box.MaxCPUs != sandbox.DefaultMaxCPUs || size != config.DefaultSessionMaxDisk {
		a.logger.Warn("sandbox budgets differ from the defaults", "cpusPerCommand", box.MaxCPUs, "diskBytesPerSession", size)
	}
	return nil
}
