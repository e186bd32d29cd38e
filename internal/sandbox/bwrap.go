package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Bwrap is the local sandbox on bubblewrap.
type Bwrap struct {
	// Path is the bwrap binary.
	Path string
	// UID and GID run the commands when Paddock runs as root (it then owns
	// the working copy); as an ordinary user, commands run as that user.
	UID, GID int
	// MaxProcs and MaxMemory bound each command (cgroups where writable,
	// RLIMIT_NPROC otherwise).
	MaxProcs  int
	MaxMemory int64
	// Hide are host directories commands must not see (Paddock's data).
	Hide    []string
	cgroups *cgroups
}

// NewBwrap finds bubblewrap and checks that it can create its namespaces,
// so a machine that cannot sandbox says so at start, with what to do.
func NewBwrap(ctx context.Context) (*Bwrap, error) {
	path, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("%w: bubblewrap is not installed; install it (Debian/Ubuntu: apt-get install bubblewrap)", ErrUnavailable)
	}
	b := &Bwrap{Path: path, UID: DefaultUID, GID: DefaultUID, MaxProcs: DefaultMaxProcs, MaxMemory: DefaultMaxMemory}
	b.cgroups = newCgroups()
	probe := os.TempDir()
	if currentUID() == 0 {
		probe, err = os.MkdirTemp("/tmp", "paddock-sandbox-probe-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(probe)
		if err := os.Chown(probe, b.UID, b.GID); err != nil {
			return nil, err
		}
	}
	var out bytes.Buffer
	res, err := b.Run(ctx, Command{Script: "true", Workdir: probe, Stdout: &out, Stderr: &out, Timeout: 30 * 1e9})
	if err != nil || res.ExitCode != 0 {
		return nil, fmt.Errorf("%w: bubblewrap cannot create its namespaces here (%v %s); enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 or user.max_user_namespaces > 0)",
			ErrUnavailable, err, out.String())
	}
	return b, nil
}

// protected are paths of the working copy bound read-only: the whole git
// directory (its hooks and config would run outside the sandbox later, and
// a replaced .git could carry both), which also pins .git in place.
var protected = []string{".git"}

// Args are bwrap's arguments for a command in workdir, which appears in
// the sandbox at the same path. hide are host directories replaced by an
// empty tmpfs (Paddock's data directory: other sessions' working copies,
// the databases), bound before the working copy so it stays visible.
func Args(workdir string, hide ...string) []string {
	args := []string{
		"--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--ro-bind", "/", "/",
		"--dev", "/dev", "--proc", "/proc",
		// tmpfs first: a working copy under /tmp is bound over it afterwards.
		"--tmpfs", "/tmp", "--tmpfs", "/root", "--tmpfs", "/home", "--tmpfs", "/run",
		"--dir", "/home/sandbox",
	}
	for _, h := range hide {
		args = append(args, "--tmpfs", h)
	}
	args = append(args, "--bind", workdir, workdir)
	for _, p := range protected {
		full := filepath.Join(workdir, p)
		if fi, err := os.Lstat(full); err == nil && fi.Mode()&os.ModeSymlink == 0 {
			args = append(args, "--ro-bind", full, full)
		}
	}
	return append(args, "--chdir", workdir, "--clearenv")
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

// Start prepares a long-lived process in a fresh sandbox, talking over its
// standard input and output (an MCP server over stdio): same isolation as
// Run, the process limit by RLIMIT_NPROC, no time limit; it dies with its
// caller. The caller starts and ends the returned command.
func (b *Bwrap) Start(workdir string, argv []string, env map[string]string) (*exec.Cmd, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("sandbox: no command")
	}
	return b.command(workdir, "", env, argv, b.nproc(), false)
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

// command builds the launcher that runs argv in a fresh sandbox on workdir.
// The launcher, a small bash script, sets RLIMIT_NPROC (the processes) and
// RLIMIT_FSIZE (any one file, 2 GiB); with waitFD it then waits on fd 3
// until the parent has put it in the cgroups. Then it becomes bwrap, so
// nothing escapes the limits.
func (b *Bwrap) command(workdir, cache string, env map[string]string, argv []string, nproc int, waitFD bool) (*exec.Cmd, error) {
	workdir, err := filepath.Abs(workdir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(workdir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("sandbox working directory %s: not a directory", workdir)
	}
	if err := b.Reachable(workdir); err != nil {
		return nil, err
	}
	var hide []string
	for _, h := range b.Hide {
		if h != "" && h != workdir && !strings.HasPrefix(h, workdir+"/") {
			hide = append(hide, h)
		}
	}
	args := Args(workdir, hide...)
	if cache != "" {
		args = append(args, "--bind", cache, "/home/sandbox/.cache")
	}
	vars := Environment(env)
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		args = append(args, "--setenv", k, vars[k])
	}
	args = append(append(args, "--"), argv...)
	launcher := `{ [ "$1" = 0 ] || ulimit -u "$1"; } && ulimit -f 2097152 || exit 125; `
	if waitFD {
		launcher += `read -r _ <&3; exec 3<&-; `
	}
	launcher += `shift; exec "$@"`
	cmd := exec.Command("/bin/bash", append([]string{"--noprofile", "--norc", "-c", launcher, "paddock-sandbox", strconv.Itoa(nproc), b.Path}, args...)...)
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
	group := b.cgroups.create(b.MaxProcs, b.MaxMemory)
	// The PID namespace already took every process down with the command;
	// the cgroups go away in the background.
	defer func() { go group.remove() }()
	nproc := b.nproc()
	if group.pids {
		nproc = 0
	}
	cmd, err := b.command(c.Workdir, c.Cache, c.Env, []string{"/bin/bash", "--noprofile", "--norc", "-c", c.Script}, nproc, true)
	if err != nil {
		return Result{}, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return Result{}, err
	}
	defer r.Close()
	cmd.ExtraFiles = []*os.File{r}
	return run(ctx, cmd, c, func(pid int) error {
		defer w.Close()
		group.add(pid)
		_, err := w.Write([]byte("go\n"))
		return err
	})
}
