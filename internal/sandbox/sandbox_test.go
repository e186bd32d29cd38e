package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/egress"
)

var box *Bwrap

func TestMain(m *testing.M) {
	egress.Reexec() // this binary is also the forwarder (egress_test.go)
	if os.Getenv("PADDOCK_PROBE_SOCKETS") != "" || os.Getenv("PADDOCK_PROBE_SYSCALLS") != "" {
		os.Exit(m.Run()) // this binary is the probe, inside a sandbox
	}
	var err error
	box, err = NewBwrap()
	if err == nil {
		err = box.Probe(context.Background())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox tests need bubblewrap:", err)
		os.Exit(1)
	}
	code := m.Run()
	box.Close()
	os.Exit(code)
}

// workdir makes a working copy the sandbox user may write.
func workdir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".git", "hooks"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".git", "config"), []byte("[core]\n"), 0o644))
	if os.Getuid() == 0 {
		require.NoError(t, os.Chown(dir, box.UID, box.GID))
		require.NoError(t, os.Chmod(filepath.Dir(dir), 0o711)) // t.TempDir's parent is private
	}
	return dir
}

func runIn(t *testing.T, dir, script string, mod ...func(*Command)) (Result, string) {
	t.Helper()
	var out bytes.Buffer
	c := Command{Place: Place{Workdir: dir}, Script: script, Stdout: &out, Stderr: &out, Timeout: 20 * time.Second}
	for _, m := range mod {
		m(&c)
	}
	res, err := box.Run(context.Background(), c)
	require.NoError(t, err)
	return res, out.String()
}

func TestWorkingCopyIsWritable(t *testing.T) {
	dir := workdir(t)
	res, out := runIn(t, dir, "echo hello > f.txt && cat f.txt && pwd")
	require.Equal(t, 0, res.ExitCode, out)
	require.Contains(t, out, "hello")
	require.Contains(t, out, dir)
	data, err := os.ReadFile(filepath.Join(dir, "f.txt"))
	require.NoError(t, err)
	require.Equal(t, "hello\n", string(data))
}

func TestWritesOutsideTheWorkingCopyFail(t *testing.T) {
	dir := workdir(t)
	marker := fmt.Sprintf("paddock-escape-%d", time.Now().UnixNano())
	hostTmp := filepath.Join(os.TempDir(), marker)
	res, out := runIn(t, dir, fmt.Sprintf(`
		echo x > /etc/%[1]s; echo etc=$?
		echo x > /root/%[1]s; echo root=$?
		echo x > %[2]s; echo tmp=$?
		echo x > /var/tmp/%[1]s; echo vartmp=$?
		echo x > .git/hooks/pre-commit; echo hook=$?
		echo x >> .git/config; echo config=$?
		mount -o remount,rw / ; echo remount=$?
		echo x > /etc/%[1]s; echo etc-after-remount=$?`, marker, hostTmp))
	require.Equal(t, 0, res.ExitCode, out)
	for _, p := range []string{"/etc/" + marker, "/root/" + marker, hostTmp, "/var/tmp/" + marker, filepath.Join(dir, ".git/hooks/pre-commit")} {
		require.NoFileExists(t, p)
	}
	// /root and /tmp are the sandbox's own tmpfs: writes land there, never on the host.
	for _, k := range []string{"etc", "vartmp", "hook", "config", "remount", "etc-after-remount"} {
		require.NotContains(t, out, k+"=0\n", out)
	}
	cfg, _ := os.ReadFile(filepath.Join(dir, ".git/config"))
	require.Equal(t, "[core]\n", string(cfg), "git config is not writable from inside")
}

func TestRootOnlyFilesAreUnreadable(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("as an ordinary user, commands run as that user and read what it reads")
	}
	secret := filepath.Join("/var/tmp", fmt.Sprintf("paddock-secret-%d", time.Now().UnixNano()))
	require.NoError(t, os.WriteFile(secret, []byte("s3cret"), 0o600))
	defer os.Remove(secret)
	res, out := runIn(t, workdir(t), "cat "+secret+"; cat /etc/shadow; id -u")
	require.NotContains(t, out, "s3cret")
	require.NotContains(t, out, "root:")
	require.Contains(t, out, fmt.Sprint(box.UID))
	require.NotEqual(t, 0, res.ExitCode+1) // ran
}

func TestNoNetwork(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	_, out := runIn(t, workdir(t), fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d && echo connected; getent hosts example.com; echo done`, port))
	require.NotContains(t, out, "connected")
	select {
	case <-accepted:
		t.Fatal("the host's listener accepted a connection from the sandbox")
	default:
	}
}

func TestEnvironmentIsRebuilt(t *testing.T) {
	dir := workdir(t)
	script := filepath.Join(dir, "evil.sh")
	require.NoError(t, os.WriteFile(script, []byte("echo BASH_ENV-RAN\n"), 0o755))
	t.Setenv("PADDOCK_HOST_SECRET", "host-s3cret")
	t.Setenv("BASH_ENV", script)
	t.Setenv("BASH_FUNC_ls%%", "() { echo FUNC-IMPORTED; }")
	_, out := runIn(t, dir, "env; ls >/dev/null; ls; echo end", func(c *Command) {
		c.Env = map[string]string{"BASH_ENV": script, "ENV": script, "BASH_FUNC_ls%%": "() { echo FUNC-IMPORTED; }", "SHELLOPTS": "xtrace", "MY_VAR": "ok"}
	})
	require.NotContains(t, out, "host-s3cret")
	require.NotContains(t, out, "BASH_ENV-RAN")
	require.NotContains(t, out, "FUNC-IMPORTED")
	require.NotContains(t, out, "BASH_ENV=")
	require.Contains(t, out, "MY_VAR=ok", "allowed variables pass")
}

func leftovers(t *testing.T, tag string) string {
	out, _ := exec.Command("pgrep", "-af", tag).CombinedOutput()
	return strings.TrimSpace(string(out))
}

func TestNothingSurvivesTheCommand(t *testing.T) {
	tag := fmt.Sprint(300000 + time.Now().UnixNano()%100000)
	res, out := runIn(t, workdir(t), fmt.Sprintf(`(sleep %[1]s &); nohup sleep %[1]s >/dev/null 2>&1 & setsid sleep %[1]s & disown; echo started`, tag))
	require.Equal(t, 0, res.ExitCode, out)
	deadline := time.Now().Add(10 * time.Second)
	for leftovers(t, "sleep "+tag) != "" {
		if time.Now().After(deadline) {
			t.Fatalf("processes survived the command: %s", leftovers(t, "sleep "+tag))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestForkBombIsBounded(t *testing.T) {
	start := time.Now()
	res, _ := runIn(t, workdir(t), `bomb() { bomb | bomb & }; bomb; sleep 2; echo survived`, func(c *Command) { c.Timeout = 5 * time.Second })
	require.Less(t, time.Since(start), 60*time.Second)
	_ = res
	deadline := time.Now().Add(15 * time.Second)
	for leftovers(t, "bomb") != "" {
		if time.Now().After(deadline) {
			t.Fatalf("fork bomb left processes: %.200s", leftovers(t, "bomb"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The host still runs commands.
	require.NoError(t, exec.Command("true").Run())
}

func TestOutputIsCappedAndCounted(t *testing.T) {
	var out bytes.Buffer
	res, err := box.Run(context.Background(), Command{Place: Place{Workdir: workdir(t)}, Script: "head -c 52428800 /dev/zero; echo err >&2", Stdout: &out, Stderr: &out, MaxOutput: 10 << 20, Timeout: time.Minute})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	require.Equal(t, 10<<20, out.Len())
	require.Equal(t, int64(40<<20+4), res.Discarded)
}

func TestTimeoutKillsTheTree(t *testing.T) {
	tag := fmt.Sprint(400000 + time.Now().UnixNano()%100000)
	start := time.Now()
	res, _ := runIn(t, workdir(t), "sleep "+tag+" & sleep "+tag, func(c *Command) { c.Timeout = time.Second })
	require.True(t, res.TimedOut)
	require.Equal(t, 124, res.ExitCode)
	require.Less(t, time.Since(start), 15*time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for leftovers(t, "sleep "+tag) != "" {
		if time.Now().After(deadline) {
			t.Fatal("timed-out processes survived")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestMissingWorkdir(t *testing.T) {
	_, err := box.Run(context.Background(), Command{Place: Place{Workdir: "/nonexistent/dir"}, Script: "true"})
	require.ErrorContains(t, err, "not a directory")
}

// TestRepositoryWithoutItsGitDirectory: a session's copy runs no command
// once its .git is gone or replaced by a link (a command could make
// another, whose config the host's git would read); with one, .git is
// read-only to the command.
func TestRepositoryWithoutItsGitDirectory(t *testing.T) {
	dir := workdir(t)
	res, out := runIn(t, dir, "echo x >> .git/config", func(c *Command) { c.Repository = true })
	require.NotEqual(t, 0, res.ExitCode, out)
	data, err := os.ReadFile(filepath.Join(dir, ".git", "config"))
	require.NoError(t, err)
	require.Equal(t, "[core]\n", string(data))
	require.NoError(t, os.RemoveAll(filepath.Join(dir, ".git")))
	for _, plant := range []func() error{
		func() error { return nil },
		func() error { return os.Symlink("/tmp", filepath.Join(dir, ".git")) },
		func() error { return os.WriteFile(filepath.Join(dir, ".git"), []byte("gitdir: /tmp\n"), 0o644) },
	} {
		require.NoError(t, plant())
		_, err := box.Run(context.Background(), Command{Place: Place{Workdir: dir, Repository: true}, Script: "mkdir .git", Timeout: 20 * time.Second})
		require.ErrorContains(t, err, "the working copy's .git is missing or not a directory")
		_ = os.Remove(filepath.Join(dir, ".git"))
	}
	require.NoDirExists(t, filepath.Join(dir, ".git"))
}

func TestUnreachableWorkdirIsAClearError(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("only root runs commands as another user")
	}
	dir := t.TempDir() // its parent is 0700
	_, err := box.Run(context.Background(), Command{Place: Place{Workdir: dir}, Script: "true"})
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorContains(t, err, "not traversable")
}

func TestHiddenDirectoriesAndOtherWorkingCopies(t *testing.T) {
	data := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(data), 0o711))
	require.NoError(t, os.Chmod(data, 0o711))
	require.NoError(t, os.WriteFile(filepath.Join(data, "paddock.db"), []byte("SECRET-TRANSCRIPTS"), 0o644))
	mine, other := filepath.Join(data, "ws", "mine"), filepath.Join(data, "ws", "other")
	for _, d := range []string{mine, other} {
		require.NoError(t, os.MkdirAll(filepath.Join(d, ".git"), 0o755))
		if os.Getuid() == 0 {
			require.NoError(t, os.Chown(d, box.UID, box.GID))
		}
	}
	require.NoError(t, os.Chmod(filepath.Join(data, "ws"), 0o711))
	require.NoError(t, os.WriteFile(filepath.Join(other, "code.go"), []byte("OTHER-SESSION-CODE"), 0o644))
	hiding := *box
	hiding.Hide = []string{data}
	var out bytes.Buffer
	res, err := hiding.Run(context.Background(), Command{Place: Place{Workdir: mine}, Stdout: &out, Stderr: &out, Timeout: 20 * time.Second, Script: fmt.Sprintf(`cat %s/paddock.db; cat %s/code.go; echo ok > mine.txt; mv .git git-moved; echo mv=$?; ls -a`, data, other)})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, out.String())
	require.NotContains(t, out.String(), "SECRET-TRANSCRIPTS")
	require.NotContains(t, out.String(), "OTHER-SESSION-CODE")
	require.NotContains(t, out.String(), "mv=0", ".git is pinned in place")
	require.FileExists(t, filepath.Join(mine, "mine.txt"))
}
