package sandbox

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// cgroups places each command in cgroups of its own that bound its
// processes, memory and processor time: on the unified hierarchy (v2)
// with the pids, memory and cpu controllers, or on the v1 pids, memory and
// cpu hierarchies. Where Paddock may not write them, the process limit
// falls back to RLIMIT_NPROC and the processor is not bounded (which the
// operator must accept explicitly; see PADDOCK_UNENFORCED_LIMITS).
type cgroups struct {
	v2      string // the unified hierarchy's paddock directory, if usable
	v2CPU   bool   // the cpu controller is enabled below v2
	v2Mem   bool   // the memory controller is enabled below v2
	v2Pids  bool   // the pids controller is enabled below v2
	v1Pids  string
	v1Mem   string
	v1CPU   string
	pending sync.WaitGroup
	// spare is one group made ahead, in the background, for the next
	// command with the same limits: making it is off the critical path.
	mu    sync.Mutex
	spare *group
	// taken counts the groups taken.
	taken atomic.Int64
}

// groupSeq numbers the groups this process makes: one sequence for every
// sandbox in it (two servers in one test process must not make one
// name twice).
var groupSeq atomic.Int64

// incarnation tells this process's groups from those of an earlier one
// with the same PID (a server killed and started again as a container's
// PID 1 on a hierarchy the host shares): the sweep leaves groups named
// with this process's PID alone, so without it a leftover name would
// be taken again, and the command refused.
var incarnation = strconv.FormatUint(rand.Uint64(), 36)

// limits are what a group was made with.
type limits struct {
	procs  int
	memory int64
	cpus   float64
}

// take returns a group with the given limits: the spare one when it
// matches, else a new one; from the second on, another spare is then
// made in the background.
func (c *cgroups) take(maxProcs int, maxMemory int64, maxCPUs float64) *group {
	if c == nil {
		return &group{}
	}
	want := limits{maxProcs, maxMemory, maxCPUs}
	c.mu.Lock()
	g := c.spare
	c.spare = nil
	c.mu.Unlock()
	if g != nil && (g.limits != want || g.err != nil) {
		c.release(g)
		g = nil
	}
	if g == nil {
		g = c.create(maxProcs, maxMemory, maxCPUs)
	}
	if c.taken.Add(1) == 1 {
		// The first command of a process makes no spare: a process that
		// runs one (sandbox exec) would make it only to remove it.
		return g
	}
	c.pending.Add(1)
	go func() {
		defer c.pending.Done()
		next := c.create(maxProcs, maxMemory, maxCPUs)
		c.mu.Lock()
		if c.spare == nil {
			c.spare, next = next, nil
		}
		c.mu.Unlock()
		if next != nil {
			next.remove()
		}
	}()
	return g
}

// release removes a finished command's groups in the background.
func (c *cgroups) release(g *group) {
	if c == nil || len(g.dirs) == 0 {
		return
	}
	c.pending.Add(1)
	go func() {
		defer c.pending.Done()
		g.remove()
	}()
}

// wait returns once every released group is gone, the spare too.
func (c *cgroups) wait() {
	if c == nil {
		return
	}
	c.pending.Wait()
	c.mu.Lock()
	g := c.spare
	c.spare = nil
	c.mu.Unlock()
	if g != nil {
		g.remove()
	}
}

// cfsPeriod is the CFS period, in microseconds, that cpu quotas refer to.
const cfsPeriod = 100000

func newCgroups() *cgroups {
	c := newHierarchies()
	// Off the path of the first command: Close waits for it.
	c.pending.Add(1)
	go func() {
		defer c.pending.Done()
		c.sweep()
	}()
	return c
}

// parents are the directories Paddock's groups go in, one per usable
// hierarchy.
func (c *cgroups) parents() []string {
	if c == nil {
		return nil
	}
	return slices.DeleteFunc([]string{c.v2, c.v1Pids, c.v1Mem, c.v1CPU}, func(p string) bool { return p == "" })
}

// sweep removes the groups of processes that are gone (a Paddock killed
// with SIGKILL could not remove its own).
func (c *cgroups) sweep() {
	for _, parent := range c.parents() {
		entries, _ := os.ReadDir(parent)
		for _, e := range entries {
			// cmd-PID-… (read without fmt.Sscanf: a hierarchy's directory
			// holds dozens of control files, and this runs at every start)
			rest, ok := strings.CutPrefix(e.Name(), "cmd-")
			p, _, ok2 := strings.Cut(rest, "-")
			pid, err := strconv.Atoi(p)
			if !ok || !ok2 || err != nil || pid <= 0 || pid == os.Getpid() {
				continue
			}
			if syscall.Kill(pid, 0) == syscall.ESRCH {
				(&group{dirs: []string{filepath.Join(parent, e.Name())}}).remove()
			}
		}
	}
}

// parentName is the name of the directory Paddock's groups go under in each
// hierarchy: paddock for root, paddock-USER for any other user (made and
// handed to them once by root: see Delegation).
func parentName() string {
	if currentUID() == 0 {
		return "paddock"
	}
	return "paddock-" + userName()
}

// userName is this process's user's name (its uid when it has none).
func userName() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return strconv.Itoa(currentUID())
}

func newHierarchies() *cgroups {
	c := &cgroups{}
	// A hierarchy is usable when its directory for Paddock's groups is
	// there (made if need be) and this process may make groups in it.
	// Where it may and still cannot, a command's group fails and the
	// command is refused (group.err): its limits are never dropped.
	// (No group is made and removed to try, as that costs every
	// process that starts one command 0.2-1.6 ms on v1.)
	try := func(dir string) string {
		if err := os.MkdirAll(dir, 0o755); err != nil || syscall.Access(dir, 2) != nil {
			return ""
		}
		return dir
	}
	parent := parentName()
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		if currentUID() == 0 {
			// Controllers must be enabled in every parent's subtree_control
			// for the per-command groups to have them.
			_ = os.WriteFile("/sys/fs/cgroup/cgroup.subtree_control", []byte("+pids +memory +cpu"), 0o644)
		}
		c.v2 = try(filepath.Join("/sys/fs/cgroup", parent))
		if currentUID() != 0 && (c.v2 == "" || !strings.HasPrefix(ownV2()+"/", c.v2+"/")) {
			// A user other than root moves a process only between cgroups
			// whose common ancestor is theirs: the commands' parent must
			// hold this process too.
			c.v2 = delegatedV2()
		}
		if c.v2 != "" {
			for _, ctl := range []string{"+pids", "+memory", "+cpu"} {
				_ = os.WriteFile(filepath.Join(c.v2, "cgroup.subtree_control"), []byte(ctl), 0o644)
			}
			enabled, _ := os.ReadFile(filepath.Join(c.v2, "cgroup.subtree_control"))
			ctl := strings.Fields(string(enabled))
			c.v2CPU, c.v2Mem, c.v2Pids = slices.Contains(ctl, "cpu"), slices.Contains(ctl, "memory"), slices.Contains(ctl, "pids")
		}
		return c
	}
	c.v1Pids = try(filepath.Join("/sys/fs/cgroup/pids", parent))
	c.v1Mem = try(filepath.Join("/sys/fs/cgroup/memory", parent))
	c.v1CPU = try(filepath.Join("/sys/fs/cgroup/cpu", parent))
	if c.v1CPU == "" {
		c.v1CPU = try(filepath.Join("/sys/fs/cgroup/cpu,cpuacct", parent))
	}
	return c
}

// delegatedV2 is, on the unified hierarchy, the cgroup this process
// already runs in when it is delegated to this user (systemd's user
// manager, `systemd-run --user --scope -p Delegate=yes`, or a container
// runtime): the process moves into a leaf of it (server), so that the
// controllers can be enabled for the command groups beside it. "" when
// it is not this user's.
func delegatedV2() string {
	own := ownV2()
	var st syscall.Stat_t
	if own == "" || syscall.Stat(own, &st) != nil || int(st.Uid) != currentUID() || syscall.Access(filepath.Join(own, "cgroup.subtree_control"), 2) != nil {
		return ""
	}
	leaf := filepath.Join(own, "server")
	if err := os.Mkdir(leaf, 0o755); err != nil && !os.IsExist(err) {
		return ""
	}
	if os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644) != nil {
		return ""
	}
	return own
}

// ownV2 is the directory of this process's cgroup on the unified
// hierarchy ("" when there is none).
func ownV2() string {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok && rest != "/" {
			return filepath.Join("/sys/fs/cgroup", rest)
		}
	}
	return ""
}

// Delegation is what root runs, once per boot, so that user name's
// commands get cgroups of their own on this machine's hierarchy.
func Delegation(name string) string {
	dir := "paddock-" + name
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		// On v2 the process that starts commands must live in the subtree
		// too: systemd's user manager gives each user such a subtree.
		return "start paddock under systemd-run --user --scope -p Delegate=yes (the cgroup systemd delegates to you), " +
			fmt.Sprintf(`or have root make one and start paddock inside it: sudo sh -c 'echo "+pids +memory +cpu" > /sys/fs/cgroup/cgroup.subtree_control && `+
				`mkdir -p /sys/fs/cgroup/%s/server && chown -R %s /sys/fs/cgroup/%s'`, dir, name, dir)
	}
	return fmt.Sprintf(`as root, once per boot: sudo sh -c 'for c in pids memory cpu; do mkdir -p /sys/fs/cgroup/$c/%s && chown -R %s /sys/fs/cgroup/$c/%s; done'`, dir, name, dir)
}

// cpuUsable, memUsable and pidsUsable say which limits cgroups enforce.
func (c *cgroups) cpuUsable() bool  { return c != nil && (c.v2CPU || c.v1CPU != "") }
func (c *cgroups) memUsable() bool  { return c != nil && (c.v2Mem || c.v1Mem != "") }
func (c *cgroups) pidsUsable() bool { return c != nil && (c.v2Pids || c.v1Pids != "") }

// errNoGroup is a command's refusal when its cgroups could not be made
// where this machine's cgroups bound commands.
var errNoGroup = errors.New("sandbox: the command's cgroups could not be made")

// group is one command's cgroups; pids and cpu say which limits hold.
// err says why a limit this machine's cgroups enforce could not be set
// for it: such a group has no directories, and no command runs in it.
type group struct {
	dirs      []string
	pids, cpu bool
	limits    limits
	err       error
}

func (c *cgroups) create(maxProcs int, maxMemory int64, maxCPUs float64) *group {
	g := &group{limits: limits{maxProcs, maxMemory, maxCPUs}}
	if c == nil {
		return g
	}
	name := fmt.Sprintf("cmd-%d-%s-%d", os.Getpid(), incarnation, groupSeq.Add(1))
	quota := strconv.Itoa(max(1000, int(maxCPUs*cfsPeriod)))
	// mk makes the group under parent, a usable hierarchy ("": none),
	// and writes its limits.
	var errs []error
	mk := func(parent string, limits ...[2]string) bool {
		if parent == "" {
			return false
		}
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			errs = append(errs, err)
			return false
		}
		g.dirs = append(g.dirs, dir)
		for _, l := range limits {
			if err := os.WriteFile(filepath.Join(dir, l[0]), []byte(l[1]), 0o644); err != nil {
				errs = append(errs, err)
				return false
			}
		}
		return true
	}
	if c.v2 != "" {
		// The limits of the controllers enabled below Paddock's directory:
		// one that is not is a limit Unenforced names, for the operator.
		var limits [][2]string
		if c.v2Pids {
			limits = append(limits, [2]string{"pids.max", strconv.Itoa(maxProcs)})
		}
		if c.v2Mem {
			limits = append(limits, [2]string{"memory.max", strconv.FormatInt(maxMemory, 10)})
		}
		if c.v2CPU && maxCPUs > 0 {
			limits = append(limits, [2]string{"cpu.max", quota + " " + strconv.Itoa(cfsPeriod)})
		}
		made := mk(c.v2, limits...)
		g.pids = made && c.v2Pids
		g.cpu = made && c.v2CPU && maxCPUs > 0
	} else {
		g.pids = mk(c.v1Pids, [2]string{"pids.max", strconv.Itoa(maxProcs)})
		mk(c.v1Mem, [2]string{"memory.limit_in_bytes", strconv.FormatInt(maxMemory, 10)})
		if maxCPUs > 0 {
			g.cpu = mk(c.v1CPU, [2]string{"cpu.cfs_period_us", strconv.Itoa(cfsPeriod)}, [2]string{"cpu.cfs_quota_us", quota})
		}
	}
	if len(errs) > 0 {
		// All or nothing: a command never runs with fewer limits than
		// this machine's cgroups enforce.
		g.remove()
		return &group{limits: g.limits, err: fmt.Errorf("%w: %w", errNoGroup, errors.Join(errs...))}
	}
	return g
}

func (g *group) add(pid int) error {
	for _, d := range g.dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("sandbox: place the command in %s: %w", d, err)
		}
	}
	return nil
}

// remove kills whatever is left in the cgroups and deletes them. It
// returns once they are gone (or after about a second of trying), so no
// group outlives the command that made it.
func (g *group) remove() {
	for _, d := range g.dirs {
		for i := range 100 {
			data, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
			pids := strings.Fields(string(data))
			for _, p := range pids {
				// Never Paddock itself: on v1 a group lists the process of
				// any member thread.
				// 0 is a process outside this PID namespace: kill(0) would
				// signal Paddock's own process group.
				if n, err := strconv.Atoi(p); err == nil && n > 0 && n != os.Getpid() {
					_ = syscall.Kill(n, syscall.SIGKILL)
				}
			}
			if err := os.Remove(d); err == nil || os.IsNotExist(err) {
				break
			}
			time.Sleep(time.Duration(i+1) * time.Millisecond)
		}
	}
}

func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

// startIn starts cmd with its first process already in the group's
// cgroups, so that nothing it forks escapes them, without a launcher:
// on v2 the kernel clones it into the group (CLONE_INTO_CGROUP); on v1,
// where membership is per thread, the starting thread joins the groups for
// the fork and leaves again. It reports false (cmd not started) when
// neither applies, and the caller falls back to the launcher.
func (g *group) startIn(cmd *exec.Cmd, v2 bool) (bool, error) {
	if len(g.dirs) == 0 {
		return false, nil
	}
	if v2 {
		dir, err := os.Open(g.dirs[0])
		if err != nil {
			return false, nil
		}
		defer dir.Close()
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(dir.Fd())
		if err := cmd.Start(); err != nil {
			cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = false, 0
			if errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.EPERM) {
				return false, nil // an older kernel: the launcher does it
			}
			return true, err
		}
		return true, nil
	}
	runtime.LockOSThread()
	// "0" names the writing thread itself: the kernel moves it without
	// the lock that keeps every thread group still (a tid would take it,
	// and its first taking after a quiet while waits for an RCU grace
	// period, 8-13 ms on the machine of 2026-12-05; this takes 40 µs).
	const self = "0"
	cgs, err := threadCgroups()
	if err != nil {
		runtime.UnlockOSThread()
		return false, nil
	}
	// Where this thread goes home to in each hierarchy, found before it
	// leaves: a hierarchy that cannot be matched (a symlinked mount such
	// as cpu → cpu,cpuacct is resolved first) means no direct start.
	var homes []string
	for _, d := range g.dirs {
		root, err := filepath.EvalSymlinks(filepath.Dir(filepath.Dir(d))) // HIERARCHY/PARENT/cmd-… → HIERARCHY
		path, ok := cgs[filepath.Base(root)]
		if err != nil || !ok {
			runtime.UnlockOSThread()
			return false, nil
		}
		home := filepath.Join(root, path, "tasks")
		if syscall.Access(home, 2) != nil {
			// A user other than root cannot go home to a cgroup of root's:
			// the launcher joins the groups instead.
			runtime.UnlockOSThread()
			return false, nil
		}
		homes = append(homes, home)
	}
	back := func() error {
		var errs []error
		for _, h := range homes {
			errs = append(errs, os.WriteFile(h, []byte(self), 0o644))
		}
		return errors.Join(errs...)
	}
	for _, d := range g.dirs {
		if err := os.WriteFile(filepath.Join(d, "tasks"), []byte(self), 0o644); err != nil {
			if back() == nil {
				runtime.UnlockOSThread()
			}
			return false, nil
		}
	}
	startErr := cmd.Start()
	// A thread that cannot go home stays locked: Go ends it with this
	// goroutine rather than let it run Paddock's work under the limits.
	if back() == nil {
		runtime.UnlockOSThread()
	}
	return true, startErr
}

// threadCgroups maps each v1 hierarchy's directory name under
// /sys/fs/cgroup (pids, memory, cpu, …) to the calling thread's cgroup in it.
func threadCgroups() (map[string]string, error) {
	data, err := os.ReadFile("/proc/thread-self/cgroup")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || parts[1] == "" {
			continue
		}
		out[parts[1]] = parts[2]
	}
	return out, nil
}
