package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHostWorkIsBounded: what Paddock itself runs on a session's copy
// (git recording 150,000 files the session made) runs in cgroups of its
// own with a command's processor limit, not with the whole machine. The
// control is the same loop started plainly, outside any of Paddock's
// groups.
func TestHostWorkIsBounded(t *testing.T) {
	if !box.cgroups.cpuUsable() {
		t.Skip("no writable cpu controller here")
	}
	b := *box
	b.MaxCPUs = 0.2
	const wall = 2 * time.Second

	cmd := exec.Command("/bin/sh", "-c", "while :; do :; done")
	release, err := b.StartBounded(cmd)
	require.NoError(t, err)
	group := cpuGroup(t, cmd.Process.Pid)
	require.Contains(t, group, "/paddock/cmd-", "the work runs in a group of Paddock's")
	time.Sleep(wall) // the loop runs for this long: a duration measured, not a wait for a condition
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	release()
	used := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	require.Less(t, used, time.Duration(float64(wall)*0.2)+400*time.Millisecond, "the loop used %s of processor in %s", used, wall)

	control := exec.Command("/bin/sh", "-c", "while :; do :; done")
	require.NoError(t, control.Start())
	defer func() { _ = control.Process.Kill(); _ = control.Wait() }()
	require.NotContains(t, cpuGroup(t, control.Process.Pid), "/paddock/")
}

// cpuGroup is the cpu cgroup process pid is in, on v1 or v2.
func cpuGroup(t *testing.T, pid int) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && (parts[1] == "" || strings.Contains(","+parts[1]+",", ",cpu,")) {
			if parts[1] != "" || box.cgroups.v2 != "" {
				return parts[2]
			}
		}
	}
	t.Fatalf("no cpu cgroup in %s", data)
	return ""
}
