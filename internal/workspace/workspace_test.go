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

func repo(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("*.log\n"), 0o644))
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"}} {
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	out, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	require.NoError(t, err)
	return dir, strings.TrimSpace(string(out))
}

func TestFlag(t *testing.T) {
	for p, want := range map[string]string{
		".github/workflows/ci.yml": "CI configuration", ".gitlab-ci.yml": "CI configuration", "Jenkinsfile": "CI configuration",
		"go.mod": "dependency manifest", "go.sum": "dependency lock file", "web/package.json": "dependency manifest",
		"yarn.lock": "dependency lock file", "Cargo.lock": "dependency lock file", "requirements-dev.txt": "dependency manifest",
		"Makefile": "build script", "scripts/x.mk": "build script", "Dockerfile.prod": "build script", ".husky/pre-commit": "git hooks and git configuration",
		".pre-commit-config.yaml": "git hooks and git configuration", "main.go": "", "README.md": "", "docs/build.md": "",
	} {
		flagged, reason := Flag(p)
		require.Equal(t, want != "", flagged, p)
		require.Equal(t, want, reason, p)
	}
}

func TestComputeApplyDiscard(t *testing.T) {
	ctx := context.Background()
	src, base := repo(t)
	work := t.TempDir()
	out, err := exec.Command("git", "clone", "-q", src, work).CombinedOutput()
	require.NoError(t, err, string(out))
	require.NoError(t, os.WriteFile(filepath.Join(work, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(work, "go.mod"), []byte("module x\n\ngo 1.26\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(work, "new.txt"), []byte("new\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(work, "debug.log"), []byte("ignored\n"), 0o644))

	d, err := Compute(ctx, work, base)
	require.NoError(t, err)
	require.Equal(t, []File{
		{Path: "go.mod", Status: "modified", Flagged: true, Reason: "dependency manifest"},
		{Path: "main.go", Status: "modified"},
		{Path: "new.txt", Status: "added"},
	}, d.Files)
	require.Len(t, d.Flagged(), 1)
	require.Contains(t, d.Patch, "+func main() {}")
	status, _ := exec.Command("git", "-C", work, "status", "--porcelain").Output()
	require.Contains(t, string(status), "?? new.txt", "the working copy's own index is untouched")

	// Accept as a commit under the repository's own identity.
	require.NoError(t, exec.Command("git", "-C", src, "config", "user.name", "Repo Owner").Run())
	require.NoError(t, exec.Command("git", "-C", src, "config", "user.email", "owner@example.com").Run())
	commit, err := Apply(ctx, src, d, AsCommit, "Session work")
	require.NoError(t, err)
	require.NotEmpty(t, commit)
	author, _ := exec.Command("git", "-C", src, "log", "-1", "--format=%an <%ae> %s").Output()
	require.Equal(t, "Repo Owner <owner@example.com> Session work\n", string(author))
	data, _ := os.ReadFile(filepath.Join(src, "new.txt"))
	require.Equal(t, "new\n", string(data))

	// Applying again fails the check and changes nothing.
	_, err = Apply(ctx, src, d, AsUncommitted, "")
	require.ErrorContains(t, err, "does not apply")

	require.NoError(t, Discard(ctx, work, base))
	d, err = Compute(ctx, work, base)
	require.NoError(t, err)
	require.Empty(t, d.Files)
	_, err = Apply(ctx, src, d, AsCommit, "")
	require.ErrorContains(t, err, "changed nothing")
}
