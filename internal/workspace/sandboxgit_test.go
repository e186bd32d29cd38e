package workspace

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSubmoduleGitfileRunsNothing: the agent's own git in the sandbox
// reads the copy's .git/config. A submodule's .git lives in the working
// copy, so the agent can point it at a configuration of its own whose
// fsmonitor git status would run; the copy's configuration keeps git out
// of submodules, so nothing runs.
func TestSubmoduleGitfileRunsNothing(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	sub := filepath.Join(tmp, "sub")
	src := filepath.Join(tmp, "src")
	for _, d := range []string{sub, src} {
		gitT(t, tmp, "init", "-q", d)
		require.NoError(t, os.WriteFile(filepath.Join(d, "f"), []byte("x\n"), 0o644))
		gitT(t, d, "add", "f")
		gitT(t, d, "commit", "-qm", "init")
	}
	gitT(t, src, "submodule", "add", "-q", sub, "sub")
	gitT(t, src, "commit", "-qm", "with a submodule")

	copyDir := filepath.Join(tmp, "copy")
	require.NoError(t, Clone(ctx, src, copyDir))

	// The agent's move: sub/.git names a git directory whose
	// configuration runs a program (here it only touches a file).
	mark := filepath.Join(tmp, "fsmonitor-ran")
	evil := filepath.Join(tmp, "evil")
	gitT(t, tmp, "init", "-q", "--bare", evil)
	require.NoError(t, os.WriteFile(filepath.Join(evil, "config"), []byte("[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = "+
		filepath.Join(copyDir, "sub")+"\n\tfsmonitor = touch "+mark+"\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(copyDir, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(copyDir, "sub", ".git"), []byte("gitdir: "+evil+"\n"), 0o644))

	// git as the sandbox runs it: only the copy's configuration.
	for _, args := range [][]string{{"status"}, {"diff"}, {"status", "--porcelain"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = copyDir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + tmp, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
		_, _ = cmd.CombinedOutput()
		_, err := os.Stat(mark)
		require.True(t, os.IsNotExist(err), "git %v entered the submodule and ran its fsmonitor", args)
	}
	for _, kv := range sandboxConfig {
		out, err := exec.Command("git", "config", "--file", filepath.Join(copyDir, ".git", "config"), kv[0]).Output()
		require.NoError(t, err, kv[0])
		require.Equal(t, kv[1]+"\n", string(out))
	}
}

func gitT(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "protocol.file.allow=always", "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
}

// countingBound starts what it is given and counts it.
type countingBound struct{ started []string }

func (c *countingBound) StartBounded(cmd *exec.Cmd) (func(), error) {
	c.started = append(c.started, strings.Join(cmd.Args, " "))
	return func() {}, cmd.Start()
}

// TestGitRunsWithinTheBound: every git run on a copy under a context
// carrying a bound starts through it (the sandbox's cgroups in the
// server), and none does without one.
func TestGitRunsWithinTheBound(t *testing.T) {
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src")
	gitT(t, tmp, "init", "-q", src)
	require.NoError(t, os.WriteFile(filepath.Join(src, "f"), []byte("x\n"), 0o644))
	gitT(t, src, "add", "f")
	gitT(t, src, "commit", "-qm", "init")
	copyDir := filepath.Join(tmp, "copy")
	require.NoError(t, Clone(context.Background(), src, copyDir))
	base, err := Head(context.Background(), copyDir)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(copyDir, "g"), []byte("y\n"), 0o644))

	b := &countingBound{}
	ctx := WithBound(context.Background(), b)
	_, err = Capture(ctx, copyDir, base)
	require.NoError(t, err)
	d, err := Compute(ctx, copyDir, base)
	require.NoError(t, err)
	require.Contains(t, d.Patch, "+y")
	require.NotEmpty(t, b.started)
	for _, s := range b.started {
		require.True(t, strings.HasPrefix(s, "git "), s)
	}
	n := len(b.started)
	_, err = Compute(context.Background(), copyDir, base)
	require.NoError(t, err)
	require.Len(t, b.started, n, "a context without a bound starts git plainly")
}
