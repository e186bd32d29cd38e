package workspace

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/stretchr/testify/require"
)

// plainGit is git as a person runs it, to build fixtures.
func plainGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir, "-c", "protocol.file.allow=always", "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...).CombinedOutput()
	require.NoError(t, err, string(out))
}

// hostileCopy is a working copy the agent has had its way with: every
// place git could be talked into running a program holds a script that
// leaves a marker, and the returned function says whether any ran.
func hostileCopy(t *testing.T) (dir, base string, ran func() []string) {
	t.Helper()
	root := t.TempDir()
	sub := filepath.Join(root, "sub")
	require.NoError(t, os.MkdirAll(sub, 0o755))
	plainGit(t, sub, "init", "-q")
	require.NoError(t, os.WriteFile(filepath.Join(sub, "s.txt"), []byte("s\n"), 0o644))
	plainGit(t, sub, "add", ".")
	plainGit(t, sub, "commit", "-qm", "sub")
	src := filepath.Join(root, "src")
	require.NoError(t, os.MkdirAll(src, 0o755))
	plainGit(t, src, "init", "-q")
	require.NoError(t, os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n"), 0o644))
	plainGit(t, src, "submodule", "add", "-q", sub, "vendor/sub")
	plainGit(t, src, "add", ".")
	plainGit(t, src, "commit", "-qm", "init")

	dir = filepath.Join(root, "copy")
	ctx := context.Background()
	require.NoError(t, Clone(ctx, src, dir))
	base, err := Head(ctx, dir)
	require.NoError(t, err)

	markers := filepath.Join(root, "markers")
	require.NoError(t, os.MkdirAll(markers, 0o777))
	script := func(name string) string {
		p := filepath.Join(dir, "tools", name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf("#!/bin/sh\ntouch %s/%s\ncat\n", markers, name)), 0o755))
		return p
	}
	evilConfig := func(repo string) {
		cfg := fmt.Sprintf(`[core]
	fsmonitor = %s
	hooksPath = %s
	pager = %s
	sshCommand = %s
	attributesFile = %s
[filter "evil"]
	clean = %s
	smudge = %s
	process = %s
[diff "evil"]
	textconv = %s
	command = %s
[diff]
	external = %s
[include]
	path = %s
[includeIf "gitdir:/"]
	path = %s
`, script("fsmonitor"), filepath.Dir(script("hooks/pre-commit")), script("pager"), script("ssh"), filepath.Join(dir, "attrs"),
			script("clean"), script("smudge"), script("process"), script("textconv"), script("diffcmd"), script("external"),
			filepath.Join(dir, "included"), filepath.Join(dir, "included"))
		require.NoError(t, os.WriteFile(filepath.Join(repo, ".git", "config"), []byte(cfg), 0o644))
		for _, h := range []string{"pre-commit", "post-checkout", "post-index-change", "reference-transaction", "pre-auto-gc", "fsmonitor-watchman"} {
			p := filepath.Join(repo, ".git", "hooks", h)
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf("#!/bin/sh\ntouch %s/hook-%s\n", markers, h)), 0o755))
		}
	}
	// 1. The empty submodule directory becomes a repository with a
	// hostile configuration (the attack the review found).
	plainGit(t, filepath.Join(dir, "vendor", "sub"), "init", "-q")
	evilConfig(filepath.Join(dir, "vendor", "sub"))
	// 2. An untracked nested repository, likewise.
	nested := filepath.Join(dir, "nested")
	require.NoError(t, os.MkdirAll(nested, 0o755))
	plainGit(t, nested, "init", "-q")
	evilConfig(nested)
	require.NoError(t, os.WriteFile(filepath.Join(nested, "n.txt"), []byte("n\n"), 0o644))
	// 3. Attributes naming filter and diff drivers everywhere.
	for _, p := range []string{".gitattributes", "attrs", "nested/.gitattributes", "vendor/sub/.gitattributes"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte("* filter=evil diff=evil merge=evil\n"), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "included"), []byte(fmt.Sprintf("[core]\n\tfsmonitor = %s\n", script("included-fsmonitor"))), 0o644))
	// 4. A .git file pointing at another repository, and a symlinked .git.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "pointer"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pointer", ".git"), []byte("gitdir: "+filepath.Join(nested, ".git")+"\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "linked"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(nested, ".git"), filepath.Join(dir, "linked", ".git")))
	// 5. Named pipes: at the top, and as a nested repository's HEAD, which
	// git opens to read the nested commit (it would block forever).
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644))
	for _, d := range []string{"stuck/.git/objects", "stuck/.git/refs"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "stuck", ".git", "HEAD"), 0o644))
	// 5b. A nested repository whose commondir points at a directory of
	// links and pipes outside its .git.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "borrower", ".git", "objects"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "elsewhere", "refs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "borrower", ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "borrower", ".git", "commondir"), []byte("../../elsewhere\n"), 0o644))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "elsewhere", "packed-refs"), 0o644))
	// 6. A sparse file of 3 GiB: free for the agent, costly for git.
	f, err := os.Create(filepath.Join(dir, "sparse.bin"))
	require.NoError(t, err)
	require.NoError(t, f.Truncate(3<<30))
	require.NoError(t, f.Close())
	// And an ordinary change, so there is a diff.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644))

	return dir, base, func() []string {
		entries, _ := os.ReadDir(markers)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}
}

// TestPlantedConfigurationNeverRuns drives every host-side operation on a
// working copy over a hostile one: nothing the agent planted runs.
func TestPlantedConfigurationNeverRuns(t *testing.T) {
	// Nothing may block: a hang fails here instead of hanging the suite.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir, base, ran := hostileCopy(t)

	lines, err := Grep(ctx, dir, "func main", ".", false)
	require.NoError(t, err)
	require.Contains(t, lines, "main.go:3:func main() {}")

	d, err := Compute(ctx, dir, base)
	require.NoError(t, err)
	require.Contains(t, d.Patch, "+func main() {}")
	left := strings.Join(d.Skipped, "\n")
	for _, want := range []string{"stuck: a nested repository holding a named pipe", "pointer: a nested repository whose .git is a regular file",
		"linked: a nested repository whose .git is a symbolic link", "sparse.bin: larger than 100 MiB", "borrower: a nested repository whose .git/commondir points elsewhere"} {
		require.Contains(t, left, want)
	}
	next, err := Snapshot(ctx, dir, base, d.Tree, "accepted", Author{})
	require.NoError(t, err)
	again, err := Compute(ctx, dir, next)
	require.NoError(t, err)
	require.Empty(t, again.Files, "the accepted snapshot is the new base")

	// Accepting lands the diff in the user's repository with their git.
	user := t.TempDir()
	plainGit(t, user, "init", "-q")
	require.NoError(t, os.WriteFile(filepath.Join(user, "main.go"), []byte("package main\n"), 0o644))
	plainGit(t, user, "add", ".")
	plainGit(t, user, "commit", "-qm", "init")

	require.NoError(t, Discard(ctx, dir, next))
	require.NoFileExists(t, filepath.Join(dir, "nested", "n.txt"), "discard removes nested repositories too")
	_, err = Head(ctx, dir)
	require.NoError(t, err)

	require.Empty(t, ran(), "a program planted in the working copy ran on the host")
}

// TestCopyWhoseGitIsNotADirectoryIsRefused: a .git replaced by a file or a
// symlink pointing elsewhere is never followed.
func TestCopyWhoseGitIsNotADirectoryIsRefused(t *testing.T) {
	ctx := context.Background()
	other, _ := repo(t)
	for name, plant := range map[string]func(dir string) error{
		"file": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, ".git"), []byte("gitdir: "+other+"/.git\n"), 0o644)
		},
		"symlink": func(dir string) error { return os.Symlink(filepath.Join(other, ".git"), filepath.Join(dir, ".git")) },
		"alternates": func(dir string) error {
			require.NoError(t, exec.Command("git", "init", "-q", dir).Run())
			return os.WriteFile(filepath.Join(dir, ".git", "objects", "info", "alternates"), []byte(other+"/.git/objects\n"), 0o644)
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, plant(dir))
			_, err := Grep(ctx, dir, "x", ".", false)
			require.ErrorIs(t, err, ErrUntrusted)
			_, err = Compute(ctx, dir, "HEAD")
			require.ErrorIs(t, err, ErrUntrusted)
			require.ErrorIs(t, Discard(ctx, dir, "HEAD"), ErrUntrusted)
		})
	}
}

// TestHostileFixtureIsReal shows the fixture bites: git run as a person
// runs it (the host's old summary) executes what the agent planted.
func TestHostileFixtureIsReal(t *testing.T) {
	dir, _, ran := hostileCopy(t)
	// The pipes planted for nested repositories would block plain git for good.
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "stuck")))
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "borrower")))
	// The copy's own configuration keeps git out of submodules
	// (sandboxConfig); a git that overrides it, as a person's might, bites.
	_, _ = exec.Command("git", "-c", "safe.directory=*", "-c", "diff.ignoreSubmodules=none", "-C", dir, "status", "--short").CombinedOutput()
	require.NotEmpty(t, ran(), "plain git status should have run the planted fsmonitor; the fixture lost its teeth")
}

// TestAcceptingRunsNoDeliveredHook: a diff that adds hooks to a
// repository whose hooksPath names a tracked directory (husky) does not
// run them as it lands; and such paths are flagged in any case.
func TestAcceptingRunsNoDeliveredHook(t *testing.T) {
	ctx := context.Background()
	src, base := repo(t)
	plainGit(t, src, "config", "core.hooksPath", ".husky")
	work := filepath.Join(t.TempDir(), "copy")
	require.NoError(t, Clone(ctx, src, work))
	marker := filepath.Join(t.TempDir(), "hook-ran")
	hook := fmt.Sprintf("#!/bin/sh\ntouch %s\n", marker)
	for _, h := range []string{"post-commit", "prepare-commit-msg", "post-index-change", "pre-commit"} {
		require.NoError(t, os.MkdirAll(filepath.Join(work, ".husky"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(work, ".husky", h), []byte(hook), 0o755))
	}
	d, err := Compute(ctx, work, base)
	require.NoError(t, err)
	for _, f := range d.Files {
		require.True(t, f.Flagged, f.Path)
	}
	_, err = Apply(ctx, src, d, session.AsCommit, "with hooks")
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(src, ".husky", "post-commit"), "the hooks are delivered")
	require.NoFileExists(t, marker, "but none ran while accepting")
	flagged, _ := Flag(".HUSKY/post-commit")
	require.True(t, flagged, "flags ignore case")
}
