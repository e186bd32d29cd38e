package sandbox

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"

	"github.com/paddock-dev/paddock/internal/config"
)

// Configured builds the one sandbox every entry point uses — sessions'
// commands and `paddock sandbox exec` alike: bubblewrap with the
// configured read-only paths and CPU budget, Paddock's data directory
// hidden. It fails when bubblewrap cannot run here, and with a
// *LimitError when the CPU budget cannot be enforced and the operator has
// not accepted that (the box is returned all the same).
func Configured(cfg config.Config) (*Bwrap, error) {
	// On a developer's own machine, as them, their toolchains and module
	// cache are lent to the commands, read-only.
	var lent Workstation
	if cfg.Execution == config.ExecutionWorkstation && os.Getuid() != 0 {
		home, _ := os.UserHomeDir()
		lent = Lend(os.Getenv, home)
	}
	box, err := NewBwrap(append(slices.Clone(cfg.ReadOnlyPaths), lent.Paths...)...)
	if err != nil {
		return nil, err
	}
	box.Lent = lent
	// Commands see their own working copy, never the databases or other
	// sessions' copies.
	if abs, err := filepath.Abs(cfg.DataDir); err == nil && cfg.DataDir != "" {
		box.Hide = []string{abs}
		box.MasksDir = filepath.Join(abs, "sandbox")
		// Read through by name, a lent cache there would reach Paddock's files.
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			for _, cache := range []*string{&box.Lent.GoCache, &box.Lent.NpmCache} {
				if overlaps(real, *cache) {
					*cache = ""
				}
			}
		}
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
	return box, &LimitError{Missing: []string{fmt.Sprintf("%s: no cgroup is delegated to %s; %s", what, name, Delegation(name))}}
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

// overlaps says whether directories a and b are one another or one holds the other.
func overlaps(a, b string) bool {
	return a != "" && b != "" && (a == b || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/"))
}
