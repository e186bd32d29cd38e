package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// cgroups places commands in per-command cgroups (v2, or the v1 pids and
// memory hierarchies) when Paddock may write them; otherwise the process
// limit falls back to RLIMIT_NPROC alone.
type cgroups struct {
	v2      string // the unified hierarchy's paddock directory, if usable
	v1Pids  string
	v1Mem   string
	counter atomic.Int64
}

func newCgroups() *cgroups {
	c := &cgroups{}
	try := func(dir string) string {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return ""
		}
		probe := filepath.Join(dir, "probe")
		if err := os.Mkdir(probe, 0o755); err != nil && !os.IsExist(err) {
			return ""
		}
		_ = os.Remove(probe)
		return dir
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		c.v2 = try("/sys/fs/cgroup/paddock")
		return c
	}
	c.v1Pids = try("/sys/fs/cgroup/pids/paddock")
	c.v1Mem = try("/sys/fs/cgroup/memory/paddock")
	return c
}

// group is one command's cgroups; pids says a cgroup bounds its processes.
type group struct {
	dirs []string
	pids bool
}

func (c *cgroups) create(maxProcs int, maxMemory int64) *group {
	g := &group{}
	if c == nil {
		return g
	}
	name := fmt.Sprintf("cmd-%d-%d", os.Getpid(), c.counter.Add(1))
	mk := func(parent, file, value string) {
		if parent == "" {
			return
		}
		dir := filepath.Join(parent, name)
		if os.Mkdir(dir, 0o755) != nil {
			return
		}
		if os.WriteFile(filepath.Join(dir, file), []byte(value), 0o644) != nil {
			_ = os.Remove(dir)
			return
		}
		g.dirs = append(g.dirs, dir)
	}
	if c.v2 != "" {
		mk(c.v2, "pids.max", strconv.Itoa(maxProcs))
		g.pids = len(g.dirs) == 1
		if g.pids {
			_ = os.WriteFile(filepath.Join(g.dirs[0], "memory.max"), []byte(strconv.FormatInt(maxMemory, 10)), 0o644)
		}
		return g
	}
	mk(c.v1Pids, "pids.max", strconv.Itoa(maxProcs))
	g.pids = len(g.dirs) == 1
	mk(c.v1Mem, "memory.limit_in_bytes", strconv.FormatInt(maxMemory, 10))
	return g
}

func (g *group) add(pid int) {
	for _, d := range g.dirs {
		_ = os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
	}
}

// remove kills whatever is left in the cgroups and deletes them.
func (g *group) remove() {
	for _, d := range g.dirs {
		for range 50 {
			data, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
			pids := strings.Fields(string(data))
			for _, p := range pids {
				if n, err := strconv.Atoi(p); err == nil {
					_ = syscall.Kill(n, syscall.SIGKILL)
				}
			}
			if os.Remove(d) == nil || len(pids) == 0 && !exists(d) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
