package workspace

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/stretchr/testify/require"
)

func repo(t testing.TB) (string, string) {
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
	require.Equal(t, []session.ChangedFile{
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
	commit, err := Apply(ctx, src, d, session.AsCommit, "Session work")
	require.NoError(t, err)
	require.NotEmpty(t, commit)
	author, _ := exec.Command("git", "-C", src, "log", "-1", "--format=%an <%ae> %s").Output()
	require.Equal(t, "Repo Owner <owner@example.com> Session work\n", string(author))
	data, _ := os.ReadFile(filepath.Join(src, "new.txt"))
	require.Equal(t, "new\n", string(data))

	// Applying again fails the check and changes nothing.
	_, err = Apply(ctx, src, d, session.AsUncommitted, "")
	require.ErrorContains(t, err, "nothing was applied: 3 file(s)")
	require.ErrorContains(t, err, "main.go: it already has the session's change")

	require.NoError(t, Discard(ctx, work, base))
	d, err = Compute(ctx, work, base)
	require.NoError(t, err)
	require.Empty(t, d.Files)
	_, err = Apply(ctx, src, d, session.AsCommit, "")
	require.ErrorContains(t, err, "changed nothing")
}

// TestBranch: an accepted snapshot reaches the user's repository as a
// branch, written as the repository's owner (here, when the tests run as
// root, the unprivileged user 65534), the checkout untouched and no hook
// run; a second acceptance moves the branch forward; a base the repository
// lacks is named.
func TestBranch(t *testing.T) {
	ctx := context.Background()
	src, base := repo(t)
	hook := filepath.Join(src, ".git", "hooks", "reference-transaction")
	require.NoError(t, os.WriteFile(hook, []byte("#!/bin/sh\ntouch "+filepath.Join(src, "HOOK-RAN")+"\n"), 0o755))
	owner := os.Getuid()
	if owner == 0 {
		owner = 65534
		require.NoError(t, filepath.WalkDir(src, func(p string, _ os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, owner, owner)
		}))
		require.NoError(t, os.Chmod(filepath.Dir(src), 0o755))
	}
	work := t.TempDir()
	require.NoError(t, Clone(ctx, src, work))
	require.NoError(t, os.WriteFile(filepath.Join(work, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644))
	d, err := Compute(ctx, work, base)
	require.NoError(t, err)
	first, err := Snapshot(ctx, work, base, d.Tree, "first", Author{})
	require.NoError(t, err)
	require.NoError(t, Branch(ctx, work, base, first, src, "paddock/s1"))

	show := func(rev string) string {
		out, err := exec.Command("git", "-c", "safe.directory=*", "-C", src, "show", rev).CombinedOutput()
		require.NoError(t, err, string(out))
		return string(out)
	}
	require.Equal(t, "package main\n\nfunc main() {}\n", show("paddock/s1:main.go"))
	data, _ := os.ReadFile(filepath.Join(src, "main.go"))
	require.Equal(t, "package main\n", string(data), "the checkout is untouched")
	require.NoFileExists(t, filepath.Join(src, "HOOK-RAN"), "no hook ran")
	fi, err := os.Stat(filepath.Join(src, ".git", "refs", "heads", "paddock", "s1"))
	require.NoError(t, err)
	require.Equal(t, uint32(owner), fi.Sys().(*syscall.Stat_t).Uid, "written as the repository's owner")

	// The next acceptance builds on the first: the branch moves forward.
	require.NoError(t, os.WriteFile(filepath.Join(work, "more.txt"), []byte("more\n"), 0o644))
	d, err = Compute(ctx, work, first)
	require.NoError(t, err)
	second, err := Snapshot(ctx, work, first, d.Tree, "second", Author{})
	require.NoError(t, err)
	require.NoError(t, Branch(ctx, work, first, second, src, "paddock/s1"))
	require.Equal(t, "more\n", show("paddock/s1:more.txt"))

	// A base only another repository knows: named, nothing written.
	orphan, err := Snapshot(ctx, work, second, d.Tree, "elsewhere", Author{})
	require.NoError(t, err)
	other, _ := repo(t)
	err = Branch(ctx, work, second, orphan, other, "paddock/s1")
	require.ErrorContains(t, err, "does not have the session's base")
	require.Error(t, exec.Command("git", "-C", other, "rev-parse", "--verify", "paddock/s1").Run())

	// Not a directory here.
	require.ErrorContains(t, Branch(ctx, work, base, first, "/nonexistent/repo", "paddock/s1"), "not a directory on this server")
}

// TestChangesRestore: a copy's changes (an edit, an executable, a link, a
// deletion, a file where a directory was) restored from its base on
// another disk give the same tree; a hostile checkpoint path is refused.
func TestChangesRestore(t *testing.T) {
	ctx := context.Background()
	src, base := repo(t)
	require.NoError(t, os.MkdirAll(filepath.Join(src, "dir"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "dir", "inner.txt"), []byte("x\n"), 0o644))
	for _, args := range [][]string{{"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "dir"}} {
		out, err := exec.Command("git", append([]string{"-C", src}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	out, err := exec.Command("git", "-C", src, "rev-parse", "HEAD").Output()
	require.NoError(t, err)
	base = strings.TrimSpace(string(out))
	work := t.TempDir()
	require.NoError(t, Clone(ctx, src, work))
	require.NoError(t, os.WriteFile(filepath.Join(work, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(work, "run.sh"), []byte("#!/bin/sh\necho hi\n"), 0o755))
	require.NoError(t, os.Symlink("main.go", filepath.Join(work, "link")))
	require.NoError(t, os.Remove(filepath.Join(work, "go.mod")))
	require.NoError(t, os.RemoveAll(filepath.Join(work, "dir")))
	require.NoError(t, os.WriteFile(filepath.Join(work, "dir"), []byte("now a file\n"), 0o644))
	cap_changes, err := Capture(ctx, work, base)
	tree := cap_changes.Tree
	changes := cap_changes.Files
	require.NoError(t, err)
	byPath := map[string]Change{}
	for _, c := range changes {
		byPath[c.Path] = c
	}
	require.Equal(t, "120000", byPath["link"].Mode)
	require.Equal(t, "main.go", string(byPath["link"].Data), "a link is its target")
	require.Equal(t, "100755", byPath["run.sh"].Mode)
	require.Equal(t, "", byPath["go.mod"].Mode, "deleted")
	require.Equal(t, "", byPath["dir/inner.txt"].Mode, "deleted")

	again := filepath.Join(t.TempDir(), "copy")
	err = Restore(ctx, src, again, base, nil, changes)
	require.NoError(t, err)
	cap_tree2, err := Capture(ctx, again, base)
	tree2 := cap_tree2.Tree
	require.NoError(t, err)
	require.Equal(t, tree, tree2, "the restored copy is the recorded one")

	// A link out of the copy, then a file through it: os.Root refuses.
	escape := t.TempDir()
	err = Restore(ctx, src, filepath.Join(t.TempDir(), "c"), base, nil, []Change{{Path: "out", Mode: "120000", Data: []byte(escape)}, {Path: "out/planted", Mode: "100644", Data: []byte("x")}})
	require.Error(t, err)
	require.NoFileExists(t, filepath.Join(escape, "planted"))
	for _, bad := range []string{"../escape", "/etc/passwd", ".git/config", "a/../../b", "."} {
		err := Restore(ctx, src, filepath.Join(t.TempDir(), "c"), base, nil, []Change{{Path: bad, Mode: "100644", Data: []byte("x")}})
		require.ErrorIs(t, err, ErrUntrusted, bad)
	}
}

// TestApplyWithoutIdentityChangesNothing: accepting as a commit into a
// repository with no git identity applies nothing and says how to set
// one; after that the same acceptance goes through.
func TestApplyWithoutIdentityChangesNothing(t *testing.T) {
	ctx := context.Background()
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("EMAIL", "")
	t.Setenv("GIT_AUTHOR_EMAIL", "")
	t.Setenv("GIT_COMMITTER_EMAIL", "")
	src, base := repo(t)
	require.NoError(t, exec.Command("git", "-C", src, "config", "user.useConfigOnly", "true").Run())
	work := t.TempDir()
	out, err := exec.Command("git", "clone", "-q", src, work).CombinedOutput()
	require.NoError(t, err, string(out))
	require.NoError(t, os.WriteFile(filepath.Join(work, "new.txt"), []byte("new\n"), 0o644))
	d, err := Compute(ctx, work, base)
	require.NoError(t, err)
	_, err = Apply(ctx, src, d, session.AsCommit, "Session work")
	require.ErrorContains(t, err, "nothing was applied")
	require.ErrorContains(t, err, "config user.email")
	status, _ := exec.Command("git", "-C", src, "status", "--porcelain").Output()
	require.Empty(t, string(status), "nothing staged, nothing written")

	require.NoError(t, exec.Command("git", "-C", src, "config", "user.name", "Repo Owner").Run())
	require.NoError(t, exec.Command("git", "-C", src, "config", "user.email", "owner@example.com").Run())
	_, err = Apply(ctx, src, d, session.AsCommit, "Session work")
	require.NoError(t, err, "the retry goes through")
}

// TestLinksOutOfTheRepositoryAreFlagged is the attack of issue 36: links
// the agent made to host paths and into .git are flagged in the diff, and
// one into .git is refused at accept.
func TestLinksOutOfTheRepositoryAreFlagged(t *testing.T) {
	ctx := context.Background()
	src, base := repo(t)
	work := t.TempDir()
	out, err := exec.Command("git", "clone", "-q", src, work).CombinedOutput()
	require.NoError(t, err, string(out))
	for name, target := range map[string]string{"leak": "/host/secret", "rootlink": "/", "up": "../../etc/passwd", "cfgsym": ".git/config", "sub/cfg": "../.GIT/hooks", "fine": "sub/x"} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(work, name)), 0o755))
		require.NoError(t, os.Symlink(target, filepath.Join(work, name)))
	}
	d, err := Compute(ctx, work, base)
	require.NoError(t, err)
	reasons := map[string]string{}
	for _, f := range d.Files {
		reasons[f.Path] = f.Reason
		require.Equal(t, f.Reason != "", f.Flagged, f.Path)
	}
	for _, p := range []string{"leak", "rootlink", "up"} {
		require.Contains(t, reasons[p], "outside the repository", p)
	}
	for _, p := range []string{"cfgsym", "sub/cfg"} {
		require.Contains(t, reasons[p], LinkIntoGit, p)
	}
	require.Empty(t, reasons["fine"])
	require.NoError(t, exec.Command("git", "-C", src, "config", "user.name", "o").Run())
	require.NoError(t, exec.Command("git", "-C", src, "config", "user.email", "o@example.com").Run())
	_, err = Apply(ctx, src, d, session.AsCommit, "links")
	require.ErrorContains(t, err, "a link into .git is never accepted")
	// Nor by a branch delivered on the server.
	commit, err := Snapshot(ctx, work, base, d.Tree, "links", Author{})
	require.NoError(t, err)
	err = Branch(ctx, work, base, commit, src, "paddock/links")
	require.ErrorContains(t, err, "a link into .git is never accepted")
	require.Error(t, exec.Command("git", "-C", src, "rev-parse", "--verify", "paddock/links").Run(), "the branch was delivered")
	_, err = os.Lstat(filepath.Join(src, "cfgsym"))
	require.True(t, os.IsNotExist(err), "nothing was applied")
}
