package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/cli"
	"github.com/paddock-dev/paddock/internal/sandbox"
)

// sandboxDir is a working directory the sandbox user may write.
func sandboxDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if os.Getuid() == 0 {
		require.NoError(t, os.Chmod(filepath.Dir(dir), 0o711))
		require.NoError(t, os.Chown(dir, sandbox.DefaultUID, sandbox.DefaultUID))
	}
	return dir
}

// cgroupsLeft counts per-command cgroups this process made that remain.
func cgroupsLeft() int {
	n := 0
	for _, parent := range []string{"/sys/fs/cgroup/paddock", "/sys/fs/cgroup/pids/paddock", "/sys/fs/cgroup/memory/paddock", "/sys/fs/cgroup/cpu/paddock"} {
		entries, _ := os.ReadDir(parent)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), fmt.Sprintf("cmd-%d-", os.Getpid())) {
				n++
			}
		}
	}
	return n
}

func TestSandboxExecWritesTheWorkdirAndLeavesNothing(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("needs bubblewrap")
	}
	before := cgroupsLeft()
	dir := sandboxDir(t)
	code, out, errOut := run(t, "", "sandbox", "exec", "--workdir", dir, "--", "sh", "-c", "echo made > f.txt && cat f.txt")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "made")
	require.FileExists(t, filepath.Join(dir, "f.txt"))

	// A time limit kills the command and all it started.
	tag := fmt.Sprint(500000 + time.Now().UnixNano()%100000)
	code, _, errOut = run(t, "", "sandbox", "exec", "--workdir", dir, "--timeout", "1s", "--", "sh", "-c", "sleep "+tag+" & sleep "+tag)
	require.Equal(t, 124, code, errOut)
	require.Contains(t, errOut, "timed out")

	// SIGINT (the context the signal cancels): killed, exit 130, nothing left.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out2, err2 bytes.Buffer
	go func() {
		env := map[string]string{"PADDOCK_DATA_DIR": t.TempDir()}
		done <- cli.Run(ctx, []string{"sandbox", "exec", "--workdir", dir, "--", "sh", "-c", "sleep " + tag + " & touch started; sleep " + tag},
			cli.IO{In: strings.NewReader(""), Out: &out2, Err: &err2, Getenv: func(k string) string { return env[k] }})
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "the command never started: %s", err2.String())
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case code := <-done:
		require.Equal(t, 130, code, err2.String())
	case <-time.After(30 * time.Second):
		t.Fatal("sandbox exec did not end on interrupt")
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		out, _ := exec.Command("pgrep", "-f", "sleep "+tag).Output()
		if len(bytes.TrimSpace(out)) == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "processes survived: %s", out)
		time.Sleep(50 * time.Millisecond)
	}
	require.Equal(t, before, cgroupsLeft(), "a cgroup outlived sandbox exec")
}

func TestSandboxExecRefusesARootOwnedWorkdir(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("only root runs commands as the sandbox user")
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("needs bubblewrap")
	}
	dir := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o711))
	require.NoError(t, os.Chmod(dir, 0o755))
	code, _, errOut := run(t, "", "sandbox", "exec", "--workdir", dir, "--", "true")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "chown -R 61000:61000")
}
