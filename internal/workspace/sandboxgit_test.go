package workspace

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
