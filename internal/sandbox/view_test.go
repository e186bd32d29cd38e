package sandbox

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// probe copies this test binary into the working copy so a command can
// run it as a real program of its own (a Unix-socket client here).
func probe(t *testing.T, dir string) string {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	data, err := os.ReadFile(self)
	require.NoError(t, err)
	p := filepath.Join(dir, "probe")
	require.NoError(t, os.WriteFile(p, data, 0o755))
	return p
}

// TestProbeConnect is the probe's body when run with PADDOCK_PROBE_SOCKETS
// set: it dials each socket path and prints what happened.
func TestProbeConnect(t *testing.T) {
	list := os.Getenv("PADDOCK_PROBE_SOCKETS")
	if list == "" {
		t.Skip("only run as the probe inside a sandbox")
	}
	for _, p := range strings.Split(list, ":") {
		c, err := net.DialTimeout("unix", p, 2*time.Second)
		if err == nil {
			fmt.Printf("CONNECTED %s\n", p)
			c.Close()
		} else {
			fmt.Printf("refused %s: %v\n", p, err)
		}
	}
}

// TestHostUnixSocketsAreUnreachable listens on pathname sockets where
// host daemons keep theirs (/run, /var/tmp, /tmp, the data directory's
// neighbourhood) and checks that a real client in the sandbox reaches none.
func TestHostUnixSocketsAreUnreachable(t *testing.T) {
	dir := workdir(t)
	bin := probe(t, dir)
	var paths []string
	accepted := make(chan string, 8)
	for _, d := range []string{"/run", "/var/tmp", "/tmp", filepath.Dir(dir)} {
		p := filepath.Join(d, fmt.Sprintf("paddock-probe-%d.sock", time.Now().UnixNano()))
		l, err := net.Listen("unix", p)
		require.NoError(t, err)
		require.NoError(t, os.Chmod(p, 0o777))
		t.Cleanup(func() { l.Close(); os.Remove(p) })
		go func() {
			if c, err := l.Accept(); err == nil {
				accepted <- p
				c.Close()
			}
		}()
		paths = append(paths, p)
	}
	res, out := runIn(t, dir, bin+" -test.run=TestProbeConnect -test.v", func(c *Command) {
		c.Env = map[string]string{"PADDOCK_PROBE_SOCKETS": strings.Join(paths, ":")}
	})
	require.Equal(t, 0, res.ExitCode, out)
	require.Contains(t, out, "refused "+paths[0], "the probe ran")
	require.NotContains(t, out, "CONNECTED")
	select {
	case p := <-accepted:
		t.Fatalf("a host socket at %s accepted a connection from the sandbox", p)
	default:
	}
}

// TestViewIsAnAllowlist: only the system trees show; host state, other
// users' homes, network interfaces and secrets do not.
func TestViewIsAnAllowlist(t *testing.T) {
	res, out := runIn(t, workdir(t), `
		for p in /run /var/lib /var/run /srv /mnt /media /opt /root/.bashrc /sys/class/net /sys/fs/cgroup /home/sandbox/x /etc/shadow; do
			if [ -d "$p" ] && [ -n "$(ls -A "$p" 2>/dev/null)" ]; then echo "VISIBLE $p"; fi
			if [ -f "$p" ] && [ -n "$(cat "$p" 2>/dev/null)" ]; then echo "VISIBLE $p"; fi
		done
		ls /sys/class/net 2>/dev/null; cat /sys/class/net/*/address 2>/dev/null
		touch /newfile 2>/dev/null && echo "ROOT-WRITABLE"
		test -x /usr/bin/env && echo usr-ok; test -r /etc/passwd && echo etc-ok; nproc >/dev/null && echo nproc-ok`)
	require.Equal(t, 0, res.ExitCode, out)
	require.NotContains(t, out, "VISIBLE")
	require.NotContains(t, out, "ROOT-WRITABLE")
	require.NotRegexp(t, `([0-9a-f]{2}:){5}[0-9a-f]{2}`, out, "no MAC address")
	for _, ok := range []string{"usr-ok", "etc-ok", "nproc-ok"} {
		require.Contains(t, out, ok)
	}
}

// TestExtraReadOnlyPaths: a toolchain outside the default view shows
// read-only when configured, with its secrets masked.
func TestExtraReadOnlyPaths(t *testing.T) {
	sdk := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(sdk), 0o755))
	require.NoError(t, os.Chmod(sdk, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(sdk, "tool"), []byte("TOOL\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(sdk, "server.key"), []byte("KEY\n"), 0o644))
	b, err := NewBwrap(sdk)
	require.NoError(t, err)
	t.Cleanup(b.Close)
	var out strings.Builder
	res, err := b.Run(context.Background(), Command{Place: Place{Workdir: workdir(t)}, Stdout: &out, Stderr: &out, Timeout: 20 * time.Second, Script: fmt.Sprintf(`cat %[1]s/tool; cat %[1]s/server.key; echo x > %[1]s/new && echo WRITABLE; true`, sdk)})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, out.String())
	require.Contains(t, out.String(), "TOOL")
	require.NotContains(t, out.String(), "KEY")
	require.NotContains(t, out.String(), "WRITABLE")
	_, err = NewBwrap("relative/path")
	require.ErrorContains(t, err, "absolute")
}

// TestPlaceReadOnlyPaths: an agent's environment shows its own toolchain
// read-only (secrets masked) to its commands only, and can never name a
// path inside Paddock's hidden data directory.
func TestPlaceReadOnlyPaths(t *testing.T) {
	sdk := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(sdk), 0o755))
	require.NoError(t, os.Chmod(sdk, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(sdk, "tool"), []byte("TOOL\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(sdk, "id_ed25519_key"), []byte("KEY\n"), 0o644))
	script := fmt.Sprintf(`cat %[1]s/tool; cat %[1]s/id_ed25519_key; echo x > %[1]s/new && echo WRITABLE; true`, sdk)
	var out strings.Builder
	res, err := box.Run(context.Background(), Command{Place: Place{Workdir: workdir(t), ReadOnly: []string{sdk}}, Stdout: &out, Stderr: &out, Timeout: 20 * time.Second, Script: script})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, out.String())
	require.Contains(t, out.String(), "TOOL")
	require.NotContains(t, out.String(), "KEY")
	require.NotContains(t, out.String(), "WRITABLE")
	out.Reset()
	_, err = box.Run(context.Background(), Command{Place: Place{Workdir: workdir(t)}, Stdout: &out, Stderr: &out, Timeout: 20 * time.Second, Script: script})
	require.NoError(t, err)
	require.NotContains(t, out.String(), "TOOL", "another place does not see it")

	hiding := *box
	hiding.Hide = []string{filepath.Dir(sdk)}
	_, err = hiding.Run(context.Background(), Command{Place: Place{Workdir: workdir(t), ReadOnly: []string{sdk}}, Script: "true"})
	require.ErrorContains(t, err, "Paddock's data directory")
	_, err = box.Run(context.Background(), Command{Place: Place{Workdir: workdir(t), ReadOnly: []string{"/nonexistent/sdk"}}, Script: "true"})
	require.ErrorContains(t, err, "no such file")
}

// TestCPUIsBounded: four busy loops for 4 s get at most the command's CPU
// budget (here half a CPU), not every core of the host.
func TestCPUIsBounded(t *testing.T) {
	if slices.Contains(box.Unenforced(), "cpu") {
		t.Skip("no writable cpu cgroup controller here")
	}
	b := *box
	b.MaxCPUs = 0.5
	var out strings.Builder
	start := time.Now()
	res, err := b.Run(context.Background(), Command{Place: Place{Workdir: workdir(t)}, Stdout: &out, Stderr: &out, Timeout: time.Minute, Script: `
		for i in 1 2 3 4; do ( while :; do :; done ) & done
		sleep 4; kill $(jobs -p); wait 2>/dev/null
		times`})
	require.NoError(t, err)
	wall := time.Since(start).Seconds()
	require.Equal(t, 0, res.ExitCode, out.String())
	// times: the shell's, then its children's "XmY.YYYs XmY.YYYs".
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	cpu := 0.0
	for _, f := range strings.Fields(lines[len(lines)-1]) {
		m, s, _ := strings.Cut(strings.TrimSuffix(f, "s"), "m")
		mv, _ := strconv.ParseFloat(m, 64)
		sv, _ := strconv.ParseFloat(s, 64)
		cpu += mv*60 + sv
	}
	t.Logf("children used %.2f s of CPU in %.2f s of wall time (budget 0.5 CPU)", cpu, wall)
	require.LessOrEqual(t, cpu, 0.5*wall*1.1, "the CPU budget did not hold")
	require.Greater(t, cpu, 0.5*4*0.3, "the loops did run")
}

// TestNoCgroupOutlivesTheCommand: every per-command cgroup is gone when
// Run returns, so one-shot callers (paddock sandbox exec) leave nothing.
func TestNoCgroupOutlivesTheCommand(t *testing.T) {
	count := func() int {
		n := 0
		for _, d := range box.cgroups.parents() {
			entries, _ := os.ReadDir(d)
			for _, e := range entries {
				if e.IsDir() && strings.HasPrefix(e.Name(), fmt.Sprintf("cmd-%d-", os.Getpid())) {
					n++
				}
			}
		}
		return n
	}
	box.Close()
	require.Zero(t, count(), "earlier commands' groups are gone once Close returns")
	for range 3 {
		res, out := runIn(t, workdir(t), "sleep 100 & echo ok")
		require.Equal(t, 0, res.ExitCode, out)
	}
	_, _ = runIn(t, workdir(t), "sleep 100", func(c *Command) { c.Timeout = 500 * time.Millisecond; c.Stdout = io.Discard })
	box.Close()
	require.Zero(t, count(), "cgroups left behind")
}

// TestCgroupsThatCannotBeMadeRefuseTheCommand: where this machine's
// cgroups bound commands, a group whose limits the kernel will not take
// (here a negative process count) refuses the command, saying why,
// rather than run it with fewer limits; nothing of the group is left.
func TestCgroupsThatCannotBeMadeRefuseTheCommand(t *testing.T) {
	if !box.cgroups.pidsUsable() {
		t.Skip("no writable pids controller here")
	}
	groups := func() []string {
		var out []string
		for _, parent := range box.cgroups.parents() {
			if entries, err := os.ReadDir(parent); err == nil {
				for _, e := range entries {
					if e.IsDir() && strings.HasPrefix(e.Name(), "cmd-") {
						out = append(out, filepath.Join(parent, e.Name()))
					}
				}
			}
		}
		return out
	}
	box.Close()
	before := groups()
	b, err := NewBwrap()
	require.NoError(t, err)
	b.MaxProcs = -3
	dir := workdir(t)
	_, err = b.Run(context.Background(), Command{Place: Place{Workdir: dir}, Script: "touch ran", Stdout: io.Discard, Stderr: io.Discard, Timeout: 20 * time.Second})
	require.ErrorContains(t, err, "the command's cgroups could not be made")
	require.NoFileExists(t, filepath.Join(dir, "ran"), "the command did not run")
	p, err := b.Start(Place{Workdir: dir}, []string{"/bin/true"})
	require.ErrorContains(t, err, "the command's cgroups could not be made")
	require.Nil(t, p)
	// A server's probe at start says so, naming where.
	err = b.Probe(context.Background())
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorContains(t, err, "not make a command's group with its limits there")
	require.ErrorContains(t, err, b.cgroups.parents()[0])
	b.Close()
	require.ElementsMatch(t, before, groups(), "no group is left behind")
}

// groupParent is where the shared sandbox makes its commands' groups:
// the unified hierarchy's directory, else the v1 pids one.
func groupParent(t *testing.T) string {
	t.Helper()
	parents := box.cgroups.parents()
	if len(parents) == 0 {
		t.Skip("no writable cgroup hierarchy here")
	}
	return parents[0]
}

// TestGroupsOfAnEarlierProcessWithThisPID: a server killed and started
// again with the same PID (a container's PID 1 on a hierarchy the host
// shares) finds the groups its earlier self left, which no sweep removes
// (they carry a live PID); its commands still run, in groups of their own.
func TestGroupsOfAnEarlierProcessWithThisPID(t *testing.T) {
	parent := groupParent(t)
	next := groupSeq.Load() + 1
	var left []string
	for _, name := range []string{fmt.Sprintf("cmd-%d-%d", os.Getpid(), next), fmt.Sprintf("cmd-%d-earlier-%d", os.Getpid(), next)} {
		d := filepath.Join(parent, name)
		require.NoError(t, os.Mkdir(d, 0o755))
		left = append(left, d)
	}
	t.Cleanup(func() {
		for _, d := range left {
			_ = os.Remove(d)
		}
	})
	for range 2 { // the spare made ahead, then the group named next
		res, out := runIn(t, workdir(t), "echo ran")
		require.Equal(t, 0, res.ExitCode, out)
		require.Equal(t, "ran\n", out)
	}
}

// TestStaleCgroupsAreSwept: groups left by a Paddock that was killed are
// removed by the next one.
func TestStaleCgroupsAreSwept(t *testing.T) {
	parent := groupParent(t)
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	stale := filepath.Join(parent, fmt.Sprintf("cmd-%d-1", dead.Process.Pid))
	require.NoError(t, os.Mkdir(stale, 0o755))
	newCgroups().wait() // the sweep runs beside the first command
	require.NoDirExists(t, stale)
}

// TestLongLivedProcessIsBoundedAndEnds: a process started for a stdio MCP
// server gets the same cgroups as a command, echoes over its pipes, and
// ends — sandbox and cgroups — when its input is closed.
func TestLongLivedProcessIsBoundedAndEnds(t *testing.T) {
	p, err := box.Start(Place{Workdir: workdir(t)}, []string{"/bin/sh", "-c", "read line; echo got:$line; cat"})
	require.NoError(t, err)
	if box.cgroups.v1Pids != "" || box.cgroups.v2 != "" {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", p.cmd.Process.Pid))
		require.NoError(t, err)
		require.Contains(t, string(data), "/paddock/cmd-", "the process is in its own cgroups")
	}
	_, err = p.Stdin.Write([]byte("hello\n"))
	require.NoError(t, err)
	buf := make([]byte, 64)
	n, err := p.Stdout.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "got:hello\n", string(buf[:n]))
	require.NoError(t, p.Stdin.Close())
	require.NotNil(t, p.cmd.ProcessState, "closing its input ended it")
	box.Close()
	for _, d := range p.group.dirs {
		require.NoDirExists(t, d)
	}
}

// TestProbeSyscalls is the probe's body with PADDOCK_PROBE_SYSCALLS set:
// it tries system calls the filter denies and prints each errno.
func TestProbeSyscalls(t *testing.T) {
	if os.Getenv("PADDOCK_PROBE_SYSCALLS") == "" {
		t.Skip("only run as the probe inside a sandbox")
	}
	for name, nr := range map[string]uintptr{"keyctl": unix.SYS_KEYCTL, "bpf": unix.SYS_BPF, "perf_event_open": unix.SYS_PERF_EVENT_OPEN,
		"ptrace": unix.SYS_PTRACE, "unshare": unix.SYS_UNSHARE, "userfaultfd": unix.SYS_USERFAULTFD, "add_key": unix.SYS_ADD_KEY,
		"io_uring_setup": unix.SYS_IO_URING_SETUP} {
		_, _, errno := unix.Syscall6(nr, 0, 0, 0, 0, 0, 0)
		fmt.Printf("%s=%d\n", name, errno)
	}
	_, _, errno := unix.Syscall(unix.SYS_GETPID, 0, 0, 0)
	fmt.Printf("getpid=%d\n", errno)
	for name, family := range map[string]int{"vsock": unix.AF_VSOCK, "alg": unix.AF_ALG, "inet": unix.AF_INET, "unix": unix.AF_UNIX} {
		fd, err := unix.Socket(family, unix.SOCK_STREAM, 0)
		if name == "alg" {
			fd, err = unix.Socket(family, unix.SOCK_SEQPACKET, 0)
		}
		if err == nil {
			unix.Close(fd)
		}
		fmt.Printf("socket-%s=%v\n", name, err)
	}
}

// TestSeccompDeniesKernelAttackSurface: keyrings, eBPF, perf, ptrace,
// namespaces and userfaultfd fail with EPERM in the sandbox, through the
// direct start and the launcher alike; ordinary calls work.
func TestSeccompDeniesKernelAttackSurface(t *testing.T) {
	noCgroups := *box
	noCgroups.cgroups = nil // forces the launcher
	for name, b := range map[string]*Bwrap{"direct": box, "launcher": &noCgroups} {
		t.Run(name, func(t *testing.T) {
			dir := workdir(t)
			bin := probe(t, dir)
			var out strings.Builder
			res, err := b.Run(context.Background(), Command{Place: Place{Workdir: dir, Env: map[string]string{"PADDOCK_PROBE_SYSCALLS": "1"}}, Stdout: &out, Stderr: &out, Timeout: 30 * time.Second, Script: bin + " -test.run=TestProbeSyscalls"})
			require.NoError(t, err)
			require.Equal(t, 0, res.ExitCode, out.String())
			for _, sc := range []string{"keyctl", "bpf", "perf_event_open", "ptrace", "unshare", "userfaultfd", "add_key", "io_uring_setup"} {
				require.Contains(t, out.String(), fmt.Sprintf("%s=%d\n", sc, unix.EPERM), out.String())
			}
			require.Contains(t, out.String(), "getpid=0\n")
			require.Contains(t, out.String(), "socket-vsock=operation not permitted\n")
			require.Contains(t, out.String(), "socket-alg=operation not permitted\n")
			require.Contains(t, out.String(), "socket-inet=<nil>\n", "ordinary families still work (loopback only)")
			require.Contains(t, out.String(), "socket-unix=<nil>\n")
		})
	}
}

// TestDataDirHiddenEvenAroundTheWorkingCopy: with Paddock's data directory
// inside the view (under a read-only path), a session whose copy lives in
// it sees its own copy and nothing else of it: not the databases, not
// another session's copy.
func TestDataDirHiddenEvenAroundTheWorkingCopy(t *testing.T) {
	ro := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(ro), 0o755))
	require.NoError(t, os.Chmod(ro, 0o755))
	data := filepath.Join(ro, "data")
	mine, other := filepath.Join(data, "workspaces", "a"), filepath.Join(data, "workspaces", "b")
	for _, d := range []string{mine, other} {
		require.NoError(t, os.MkdirAll(d, 0o755))
		if os.Getuid() == 0 {
			require.NoError(t, os.Chown(d, box.UID, box.GID))
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(data, "paddock.db"), []byte("SECRET-DB"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(other, "code.go"), []byte("OTHER-CODE"), 0o644))
	b, err := NewBwrap(ro)
	require.NoError(t, err)
	t.Cleanup(b.Close)
	b.Hide = []string{data}
	var out strings.Builder
	res, err := b.Run(context.Background(), Command{Place: Place{Workdir: mine}, Stdout: &out, Stderr: &out, Timeout: 20 * time.Second, Script: fmt.Sprintf("cat %s/paddock.db %s/code.go; echo mine > mine.txt && cat mine.txt", data, other)})
	require.NoError(t, err)
	require.NotContains(t, out.String(), "SECRET-DB")
	require.NotContains(t, out.String(), "OTHER-CODE")
	require.Contains(t, out.String(), "mine")
	_ = res
}

// TestInheritedDescriptorsDoNotReachTheSandbox: a descriptor the process
// inherited without close-on-exec (a supervisor's leak) is not handed to
// commands.
func TestInheritedDescriptorsDoNotReachTheSandbox(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secret, []byte("INHERITED-SECRET"), 0o600))
	fd, err := syscall.Open(secret, syscall.O_RDONLY, 0) // no O_CLOEXEC, as if inherited
	require.NoError(t, err)
	defer syscall.Close(fd)
	b, err := NewBwrap()
	require.NoError(t, err)
	t.Cleanup(b.Close)
	var out strings.Builder
	_, err = b.Run(context.Background(), Command{Place: Place{Workdir: workdir(t)}, Stdout: &out, Stderr: &out, Timeout: 20 * time.Second, Script: fmt.Sprintf("cat <&%d; ls /proc/self/fd", fd)})
	require.NoError(t, err)
	require.NotContains(t, out.String(), "INHERITED-SECRET")
}
