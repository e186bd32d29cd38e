package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/paddock-dev/paddock/internal/egress"
)

// Bwrap is the local sandbox on bubblewrap.
type Bwrap struct {
	// Path is the bwrap binary.
	Path string
	// UID and GID run the commands when Paddock runs as root (it then owns
	// the working copy); as an ordinary user, commands run as that user.
	UID, GID int
	// MaxProcs, MaxMemory and MaxCPUs bound each command (cgroups where
	// writable; RLIMIT_NPROC for the processes otherwise).
	MaxProcs  int
	MaxMemory int64
	MaxCPUs   float64
	// TmpSize bounds each in-sandbox tmpfs (/tmp, /home).
	TmpSize int64
	// Hide are host directories commands must not see (Paddock's data)
	// where the view would otherwise show them.
	Hide []string
	// Lent is what a developer's machine lends its sandboxes (see Lend):
	// its paths are among readOnly.
	Lent Workstation
	// readOnly are host paths besides the system trees that commands see
	// read-only (toolchains outside /usr); masks what the view hides in
	// them and in /etc.
	readOnly []string
	trees    []*tree
	// MasksDir is where what the view hides in the read-only trees is
	// kept between processes (empty: in this process only).
	MasksDir string
	// Forwarder is the host path of the program that, inside a sandbox
	// with egress, listens on its loopback and relays to the proxy's
	// socket (the paddock binary, see egress.ForwarderName).
	Forwarder string
	// placeTrees are the masks of places' own read-only paths (path →
	// *tree).
	placeTrees *sync.Map
	cgroups    *cgroups
	// seccomp is the filter program every sandbox loads (--seccomp).
	seccomp []byte
}

// NewBwrap finds bubblewrap and prepares the sandbox: its seccomp
// filter, cgroups and read-only trees (Probe checks that bubblewrap can
// create its namespaces here). readOnly are extra host paths commands
// may read, besides the system trees.
func NewBwrap(readOnly ...string) (*Bwrap, error) {
	path, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("%w: bubblewrap is not installed; install it (Debian/Ubuntu: apt-get install bubblewrap)", ErrUnavailable)
	}
	b := &Bwrap{Path: path, UID: DefaultUID, GID: DefaultUID, MaxProcs: DefaultMaxProcs, MaxMemory: DefaultMaxMemory,
		MaxCPUs: DefaultMaxCPUs, TmpSize: DefaultTmpSize}
	b.cgroups = newCgroups()
	b.placeTrees = &sync.Map{}
	closeInherited()
	if b.seccomp, err = seccompProgram(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	for _, p := range readOnly {
		if !filepath.IsAbs(p) || filepath.Clean(p) == "/" {
			return nil, fmt.Errorf("sandbox read-only path %q: want an absolute path other than /", p)
		}
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("sandbox read-only path: %w", err)
		}
		b.readOnly = append(b.readOnly, filepath.Clean(p))
	}
	for _, root := range append([]string{"/etc"}, b.readOnly...) {
		b.trees = append(b.trees, &tree{root: root})
	}
	return b, nil
}

// Probe runs true in a sandbox: an error says why bubblewrap cannot
// sandbox commands here, and what to change. A server probes once at
// start; a single command needs no probe first (bubblewrap never runs
// a command it could not sandbox), only after a failure, to say why.
func (b *Bwrap) Probe(ctx context.Context) error {
	probe := os.TempDir()
	if currentUID() == 0 {
		var err error
		probe, err = os.MkdirTemp("/tmp", "paddock-sandbox-probe-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(probe)
		if err := os.Chown(probe, b.UID, b.GID); err != nil {
			return err
		}
	}
	var out bytes.Buffer
	res, err := b.Run(ctx, Command{Place: Place{Workdir: probe}, Script: "true", Stdout: &out, Stderr: &out, Timeout: 30 * 1e9})
	if errors.Is(err, errNoGroup) {
		return fmt.Errorf("%w: %v; Paddock may write the cgroup hierarchies (%s) but not make a command's group with its limits there", ErrUnavailable, err, strings.Join(b.cgroups.parents(), ", "))
	}
	if err != nil || res.ExitCode != 0 {
		return fmt.Errorf("%w: bubblewrap cannot create its namespaces here (%v %s); enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 or user.max_user_namespaces > 0)",
			ErrUnavailable, err, out.String())
	}
	return nil
}

// Close waits until the cgroups of finished commands are gone: call it
// before the process exits, so that none outlives it.
func (b *Bwrap) Close() {
	b.cgroups.wait()
}

// closeInherited marks every descriptor this process inherited
// close-on-exec: Go passes on any that lacks the flag, and bwrap would
// hand it to the command (a socket or file a supervisor leaked).
func closeInherited() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}

// Unenforced names the per-command limits this machine cannot enforce:
// "cpu", "memory" (no writable controller), "processes" (no pids
// controller, and not root, so no RLIMIT_NPROC of a dedicated uid).
func (b *Bwrap) Unenforced() []string {
	var out []string
	if !b.cgroups.cpuUsable() {
		out = append(out, "cpu")
	}
	if !b.cgroups.memUsable() {
		out = append(out, "memory")
	}
	if !b.cgroups.pidsUsable() && currentUID() != 0 {
		out = append(out, "processes")
	}
	return out
}

// system are the host trees every command sees, read-only: programs,
// libraries and configuration. Everything else of the host is absent —
// /run, /var, /tmp, /home, /root, /srv, /mnt, /media, /opt and /sys but
// for the CPU topology — so no host Unix socket, no other user's files and
// no host state are reachable.
var system = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys/devices/system/cpu"}

// protected are paths of the working copy bound read-only: the whole git
// directory (its hooks and config would run outside the sandbox later, and
// a replaced .git could carry both), which also pins .git in place.
var protected = []string{".git"}

// In-sandbox paths of the egress forwarder and the proxy's socket.
const (
	forwarderMount = "/run/paddock/" + egress.ForwarderName
	egressMount    = "/run/paddock/egress.sock"
	forwarderAddr  = "127.0.0.1:3128"
)

// Args are bwrap's arguments for a command at place p: the working copy
// appears at the same path, the cache (if any) at CacheMount, the
// dependency caches (if any) at DepsMount. The view is an allowlist: the
// system trees and the read-only paths (Paddock's and the place's) with
// secrets masked, a fresh /dev and /proc, size-bounded tmpfs on /tmp and
// /home, and the working copy read-write with its .git read-only. The
// root itself is read-only.
func (b *Bwrap) Args(p Place) ([]string, error) {
	size := strconv.FormatInt(b.TmpSize, 10)
	args := []string{"--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
		// /dev is bwrap's own tmpfs, read-only but for a bounded /dev/shm.
		"--dev", "/dev", "--remount-ro", "/dev", "--size", size, "--tmpfs", "/dev/shm", "--proc", "/proc",
		// tmpfs first: read-only paths and a working copy under them are bound over them.
		"--size", size, "--tmpfs", "/tmp", "--size", size, "--tmpfs", "/home", "--dir", Home, "--dir", "/var/tmp"}
	extra, links, err := b.placeReadOnly(p.ReadOnly)
	if err != nil {
		return nil, err
	}
	view := b.view(extra)
	for _, v := range view {
		fi, err := os.Lstat(v)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(v); err == nil {
				args = append(args, "--symlink", target, v)
			}
		default:
			args = append(args, "--ro-bind", v, v)
		}
	}
	for _, from := range slices.Sorted(maps.Keys(links)) {
		if !inView(view, from) {
			args = append(args, "--symlink", links[from], from)
		}
	}
	for _, m := range b.masksOf(extra) {
		if strings.HasPrefix(m, "d:") {
			args = append(args, "--size", "4096", "--tmpfs", m[2:], "--remount-ro", m[2:])
		} else {
			args = append(args, "--ro-bind", "/dev/null", m[2:])
		}
	}
	// A hidden directory is covered even when it holds the working copy:
	// the copy (and its cache) are bound back over the cover below.
	for _, h := range b.Hide {
		if h != "" && h != p.Workdir && inView(view, h) {
			args = append(args, "--size", "4096", "--tmpfs", h)
		}
	}
	args = append(args, "--bind", p.Workdir, p.Workdir)
	for _, pr := range protected {
		full := filepath.Join(p.Workdir, pr)
		fi, err := os.Lstat(full)
		switch {
		case err == nil && fi.IsDir():
			args = append(args, "--ro-bind", full, full)
		case p.Repository:
			return nil, fmt.Errorf("sandbox: the working copy's %s is missing or not a directory: no command runs in it", pr)
		case err == nil && fi.Mode()&os.ModeSymlink == 0:
			args = append(args, "--ro-bind", full, full)
		}
	}
	if p.Cache != "" {
		args = append(args, "--bind", p.Cache, CacheMount)
	}
	if p.Deps != "" {
		bind := "--ro-bind"
		if p.DepsWritable {
			bind = "--bind"
		}
		args = append(args, bind, p.Deps, DepsMount)
	}
	if p.Egress != "" {
		if b.Forwarder == "" {
			return nil, fmt.Errorf("sandbox: this command may reach the network, but no egress forwarder is configured")
		}
		args = append(args, "--ro-bind", b.Forwarder, forwarderMount, "--ro-bind", p.Egress, egressMount)
	}
	return append(args, "--remount-ro", "/", "--chdir", p.Workdir, "--clearenv"), nil
}

// view is every host tree a command sees read-only.
func (b *Bwrap) view(extra []string) []string {
	return append(append(append([]string{}, system...), b.readOnly...), extra...)
}

// placeReadOnly checks a place's read-only paths and resolves their
// links: each must be absolute, exist, not be the root, and neither it
// nor what it resolves to may lie inside a hidden directory. It returns
// the resolved paths (to bind) and, for a path that is itself a link or
// lies under one (/opt/sdk -> sdk-1.2), the link to make to it.
func (b *Bwrap) placeReadOnly(paths []string) (real []string, links map[string]string, err error) {
	links = map[string]string{}
	for _, p := range paths {
		c := filepath.Clean(p)
		if !filepath.IsAbs(p) || c == "/" {
			return nil, nil, fmt.Errorf("sandbox read-only path %q: want an absolute path other than /", p)
		}
		r, err := filepath.EvalSymlinks(c)
		if err != nil {
			return nil, nil, fmt.Errorf("sandbox read-only path: %w", err)
		}
		if r == "/" {
			return nil, nil, fmt.Errorf("sandbox read-only path %q resolves to /", p)
		}
		for _, h := range b.Hide {
			if h == "" {
				continue
			}
			hidden := []string{h}
			if rh, err := filepath.EvalSymlinks(h); err == nil {
				hidden = append(hidden, rh)
			}
			for _, hh := range hidden {
				for _, x := range []string{c, r} {
					if x == hh || strings.HasPrefix(x, hh+"/") || strings.HasPrefix(hh, x+"/") {
						return nil, nil, fmt.Errorf("sandbox read-only path %s: holds or lies in Paddock's data directory, which commands never see", p)
					}
				}
			}
		}
		real = append(real, r)
		if r != c {
			links[c] = r
		}
	}
	return real, links, nil
}

// masksOf are the masks of /etc, the server's read-only paths and a
// place's own (extra), as they are now.
func (b *Bwrap) masksOf(extra []string) []string {
	trees := slices.Clone(b.trees)
	for _, p := range extra {
		t, _ := b.placeTrees.LoadOrStore(p, &tree{root: p})
		trees = append(trees, t.(*tree))
	}
	var out []string
	for _, t := range trees {
		out = append(out, t.current(b.MasksDir)...)
	}
	return out
}

// inView says whether host path p lies in one of the trees of view.
func inView(view []string, p string) bool {
	for _, root := range view {
		if p == root || strings.HasPrefix(p, root+"/") {
			return true
		}
	}
	return false
}

// Reachable reports whether the sandbox user can reach dir: when Paddock
// runs as root, commands run as an unprivileged uid, which must be able to
// traverse every directory above the working copies.
func (b *Bwrap) Reachable(dir string) error {
	if currentUID() != 0 {
		return nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for p := filepath.Dir(abs); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("%w: the sandbox user (uid %d) cannot reach %s because %s is not traversable by others; "+
				"use a data directory such as /var/lib/paddock (the default for root) or chmod o+x %s", ErrUnavailable, b.UID, abs, p, p)
		}
		if p == "/" {
			return nil
		}
	}
}

// Process is a long-lived process in a sandbox of its own (a stdio MCP
// server), talking over its standard input and output.
type Process struct {
	Stdin  io.WriteCloser
	Stdout io.ReadCloser
	cmd    *exec.Cmd
	group  *group
	b      *Bwrap
	once   sync.Once
}

// Start starts a long-lived process in a fresh sandbox: the same view,
// namespaces and cgroups (processes, memory, CPU) as Run, no time limit;
// it dies with its caller. Closing its Stdin ends it: it gets two seconds
// to exit, then its whole sandbox is killed and its cgroups removed.
func (b *Bwrap) Start(place Place, argv []string) (*Process, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("sandbox: no command")
	}
	group := b.cgroups.take(b.MaxProcs, b.MaxMemory, b.MaxCPUs)
	p := &Process{group: group, b: b}
	cmd, err := b.spawn(place, argv, group, p.wire)
	if err != nil {
		b.cgroups.release(group)
		return nil, err
	}
	p.cmd = cmd
	return p, nil
}

// wire gives the process's command its pipes (again, for the launcher,
// when a direct start could not be placed).
func (p *Process) wire(cmd *exec.Cmd) error {
	if p.Stdin != nil {
		p.Stdin.(stdinCloser).WriteCloser.Close()
		p.Stdout.Close()
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	p.Stdin, p.Stdout = stdinCloser{in, p}, out
	return nil
}

// stdinCloser ends the process when its standard input is closed.
type stdinCloser struct {
	io.WriteCloser
	p *Process
}

func (s stdinCloser) Close() error {
	err := s.WriteCloser.Close()
	s.p.end(2 * time.Second)
	return err
}

// end waits up to grace for the process to exit, then kills its sandbox;
// its cgroups are released either way.
func (p *Process) end(grace time.Duration) {
	p.once.Do(func() {
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(grace):
			killGroup(p.cmd.Process.Pid)
			<-done
		}
		p.b.cgroups.release(p.group)
	})
}

// nproc is the RLIMIT_NPROC to set where no cgroup bounds the processes:
// the process limit when commands run as the dedicated sandbox uid; 0 as an
// ordinary user, whose own processes would count against it too. The limit
// counts every process of the uid, across sessions, so a cgroup (per
// command) is preferred whenever there is one.
func (b *Bwrap) nproc() int {
	if currentUID() == 0 {
		return b.MaxProcs
	}
	return 0
}

// closeExtra closes the parent's ends of the files a command inherits
// (once it has started, or will not).
func closeExtra(cmd *exec.Cmd) {
	for _, f := range cmd.ExtraFiles {
		_ = f.Close()
	}
}

// launch says how a sandbox's first process starts.
type launch int

const (
	// direct: bwrap itself, placed in its cgroups as it is cloned.
	direct launch = iota
	// launcher: a small bash script sets RLIMIT_NPROC (where no cgroup
	// bounds the processes) and RLIMIT_FSIZE (any one file, 2 GiB),
	// waits on fd 4 until the parent has put it in its cgroups (when it
	// has any), then becomes bwrap, so nothing escapes the limits.
	launcher
)

// command builds what runs argv in a fresh sandbox on workdir.
func (b *Bwrap) command(p Place, argv []string, how launch, nproc int, waitFD bool) (*exec.Cmd, error) {
	workdir, err := filepath.Abs(p.Workdir)
	if err != nil {
		return nil, err
	}
	p.Workdir = workdir
	if fi, err := os.Stat(workdir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("sandbox working directory %s: not a directory", workdir)
	}
	if err := b.Reachable(workdir); err != nil {
		return nil, err
	}
	args, err := b.Args(p)
	if err != nil {
		return nil, err
	}
	vars := Environment(p.Env)
	if p.Deps != "" {
		maps.Copy(vars, DepsEnv(DepsMount))
	}
	b.Lent.env(vars, p.Deps != "")
	if p.Egress != "" {
		for _, kv := range egress.Env(forwarderAddr) {
			k, v, _ := strings.Cut(kv, "=")
			vars[k] = v
		}
		argv = append([]string{forwarderMount, "-listen", forwarderAddr, "-socket", egressMount, "--"}, argv...)
	}
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		args = append(args, "--setenv", k, vars[k])
	}
	// The filter arrives on fd 3; the launcher's handshake (if any) on fd 4.
	filter, err := b.seccompFile()
	if err != nil {
		return nil, err
	}
	args = append(append(args, "--seccomp", "3", "--"), argv...)
	var cmd *exec.Cmd
	if how == direct {
		cmd = exec.Command(b.Path, args...)
	} else {
		script := `{ [ "$1" = 0 ] || ulimit -u "$1"; } && ulimit -f 2097152 || exit 125; `
		if waitFD {
			script += `read -r _ <&4; exec 4<&-; `
		}
		script += `shift; exec "$@"`
		cmd = exec.Command("/bin/bash", append([]string{"--noprofile", "--norc", "-c", script, "paddock-sandbox", strconv.Itoa(nproc), b.Path}, args...)...)
	}
	cmd.ExtraFiles = []*os.File{filter}
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if currentUID() == 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(b.UID), Gid: uint32(b.GID), Groups: []uint32{}}
	}
	return cmd, nil
}

// Run runs one command in a fresh sandbox.
func (b *Bwrap) Run(ctx context.Context, c Command) (Result, error) {
	defaults(&c)
	group := b.cgroups.take(b.MaxProcs, b.MaxMemory, b.MaxCPUs)
	// The PID namespace already took every process down with the command;
	// its cgroups go in the background, and Close waits for them.
	defer b.cgroups.release(group)
	argv := []string{"/bin/bash", "--noprofile", "--norc", "-c", c.Script}
	return run(ctx, c, func(wire func(*exec.Cmd) error) (*exec.Cmd, error) {
		return b.spawn(c.Place, argv, group, wire)
	})
}

// StartBounded starts cmd, a program Paddock itself runs on a session's
// copy (git recording it after a call), in cgroups of its own with a
// command's limits: processor, memory and processes. The copy is the
// session's to fill, and the work of reading it must not take more of
// the machine than the session's commands may. Where the kernel cannot
// start it inside them, it joins them right after it starts. release
// removes the cgroups once cmd has ended.
func (b *Bwrap) StartBounded(cmd *exec.Cmd) (release func(), err error) {
	group := b.cgroups.take(b.MaxProcs, b.MaxMemory, b.MaxCPUs)
	if group.err != nil {
		// This machine bounds commands, but no group could be made now:
		// the work waits for a later call rather than run unbounded.
		return nil, fmt.Errorf("bound the host's work on the copy: %w", group.err)
	}
	release = func() { b.cgroups.release(group) }
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	started, err := group.startIn(cmd, b.cgroups.v2 != "")
	if !started {
		if err = cmd.Start(); err == nil {
			err = group.add(cmd.Process.Pid)
			if err != nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
		}
	}
	if err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// spawn starts argv in a fresh sandbox on workdir inside group: where
// cgroups bound its processes, bwrap starts directly inside them;
// otherwise (or where the kernel cannot place it so) through the
// launcher, placed in the group before it goes on. wire sets up the
// command's standard streams before it starts.
func (b *Bwrap) spawn(p Place, argv []string, group *group, wire func(*exec.Cmd) error) (*exec.Cmd, error) {
	if group.err != nil {
		return nil, group.err
	}
	if group.pids {
		cmd, err := b.command(p, argv, direct, 0, false)
		if err != nil {
			return nil, err
		}
		defer closeExtra(cmd)
		if err := wire(cmd); err != nil {
			return nil, err
		}
		if started, err := group.startIn(cmd, b.cgroups.v2 != ""); started {
			if err != nil {
				return nil, err
			}
			return cmd, nil
		}
	}
	nproc := b.nproc()
	if group.pids {
		nproc = 0
	}
	cmd, err := b.command(p, argv, launcher, nproc, true)
	if err != nil {
		return nil, err
	}
	defer closeExtra(cmd)
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer w.Close()
	cmd.ExtraFiles = append(cmd.ExtraFiles, r)
	if err := wire(cmd); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	if err := group.add(cmd.Process.Pid); err != nil {
		killGroup(cmd.Process.Pid)
		_ = cmd.Wait()
		return nil, err
	}
	if _, err := w.Write([]byte("go\n")); err != nil {
		killGroup(cmd.Process.Pid)
		_ = cmd.Wait()
		return nil, err
	}
	return cmd, nil
}
