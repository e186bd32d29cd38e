package workspace

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/session"
)

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...).CombinedOutput()
	require.NoError(t, err, string(out))
	return string(out)
}

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	require.NoError(t, err)
	return string(data)
}

// workInProgress is a repository whose checkout has every kind of work in
// progress: an unstaged edit, a staged new file, an untracked file in a
// new directory, a removed file, an ignored file and a nested repository.
func workInProgress(t *testing.T) (src, head string) {
	src, head = repo(t)
	write(t, src, "notes.md", "one\ntwo\nthree\nfour\nfive\nsix\nseven\n")
	gitOut(t, src, "add", "notes.md")
	gitOut(t, src, "commit", "-qm", "notes")
	head = strings.TrimSpace(gitOut(t, src, "rev-parse", "HEAD"))
	write(t, src, "main.go", "package main\n\n// edited, not committed\n")
	write(t, src, "staged.go", "package main\n")
	gitOut(t, src, "add", "staged.go")
	write(t, src, "new/untracked.txt", "draft\n")
	require.NoError(t, os.Remove(filepath.Join(src, "go.mod")))
	write(t, src, "debug.log", "ignored\n")
	require.NoError(t, os.Symlink("notes.md", filepath.Join(src, "link")))
	gitOut(t, src, "init", "-q", filepath.Join(src, "vendor", "nested"))
	return src, head
}

func TestAsIsTakesTheCheckoutAsItIs(t *testing.T) {
	ctx := context.Background()
	src, head := workInProgress(t)
	index, err := os.ReadFile(filepath.Join(src, ".git", "index"))
	require.NoError(t, err)
	status := gitOut(t, src, "status", "--porcelain")

	dir := filepath.Join(t.TempDir(), "copy")
	o, err := AsIs(ctx, src, dir, nil, Clone)
	require.NoError(t, err)
	require.Equal(t, head, o.Head)
	require.NotEqual(t, head, o.Base, "the work in progress is the base snapshot")
	require.ElementsMatch(t, []string{"main.go", "staged.go", "new/untracked.txt", "go.mod", "link"}, o.Files)
	require.Equal(t, []string{"vendor/nested (a nested repository)"}, o.Skipped)
	require.Contains(t, o.Summary(src), "5 uncommitted or untracked file(s)")

	require.Equal(t, "package main\n\n// edited, not committed\n", read(t, dir, "main.go"))
	require.Equal(t, "draft\n", read(t, dir, "new/untracked.txt"))
	require.NoFileExists(t, filepath.Join(dir, "go.mod"))
	require.NoFileExists(t, filepath.Join(dir, "debug.log"), "ignored files stay out")
	target, err := os.Readlink(filepath.Join(dir, "link"))
	require.NoError(t, err)
	require.Equal(t, "notes.md", target)

	// The copy is clean against its base: the diff is the agent's alone.
	d, err := Compute(ctx, dir, o.Base)
	require.NoError(t, err)
	require.Empty(t, d.Files)

	// Nothing of the checkout was written, its index included.
	after, err := os.ReadFile(filepath.Join(src, ".git", "index"))
	require.NoError(t, err)
	require.Equal(t, index, after)
	require.Equal(t, status, gitOut(t, src, "status", "--porcelain"))
}

func TestAsIsOfACleanCheckoutStartsAtHead(t *testing.T) {
	src, head := repo(t)
	o, err := AsIs(context.Background(), src, filepath.Join(t.TempDir(), "copy"), nil, Clone)
	require.NoError(t, err)
	require.Equal(t, head, o.Base)
	require.Empty(t, o.Files)
}

// agentChanges makes the copy of src's checkout and changes notes.md's
// third line and adds a file in it, as an agent would; it returns the diff.
func agentChanges(t *testing.T, src string) session.Diff {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "copy")
	o, err := AsIs(ctx, src, dir, nil, Clone)
	require.NoError(t, err)
	write(t, dir, "notes.md", "one\ntwo\nTHREE\nfour\nfive\nsix\nseven\n")
	write(t, dir, "new/untracked.txt", "draft\nfinished by the agent\n")
	write(t, dir, "added.txt", "from the agent\n")
	d, err := Compute(ctx, dir, o.Base)
	require.NoError(t, err)
	require.Len(t, d.Files, 3)
	return d
}

func TestAcceptOntoTheCheckoutKeepsThePersonsWork(t *testing.T) {
	ctx := context.Background()
	src, _ := workInProgress(t)
	d := agentChanges(t, src)

	// Meanwhile the person edits the same line and another line of
	// notes.md's neighbour, and creates added.txt themselves.
	write(t, src, "notes.md", "one\ntwo\nthree, mine\nfour\nfive\nsix\nseven\n")
	write(t, src, "added.txt", "mine\n")
	_, err := Apply(ctx, src, d, session.AsUncommitted, "")
	var conflict *ConflictError
	require.True(t, errors.As(err, &conflict), "%v", err)
	require.Len(t, conflict.Conflicts, 2)
	require.Equal(t, "added.txt", conflict.Conflicts[0].Path)
	require.Contains(t, conflict.Conflicts[0].Why, "you created it")
	require.Equal(t, "notes.md", conflict.Conflicts[1].Path)
	require.Contains(t, conflict.Conflicts[1].Why, "near line")
	require.Contains(t, err.Error(), "nothing was applied")
	// Nothing was written: their edits and the untracked file as they were.
	require.Equal(t, "one\ntwo\nthree, mine\nfour\nfive\nsix\nseven\n", read(t, src, "notes.md"))
	require.Equal(t, "mine\n", read(t, src, "added.txt"))
	require.Equal(t, "draft\n", read(t, src, "new/untracked.txt"))

	// An edit elsewhere in the file is kept beside the agent's.
	write(t, src, "notes.md", "one\ntwo\nthree\nfour\nfive\nsix\nseven, mine\n")
	require.NoError(t, os.Remove(filepath.Join(src, "added.txt")))
	_, err = Apply(ctx, src, d, session.AsUncommitted, "")
	require.NoError(t, err)
	require.Equal(t, "one\ntwo\nTHREE\nfour\nfive\nsix\nseven, mine\n", read(t, src, "notes.md"))
	require.Equal(t, "draft\nfinished by the agent\n", read(t, src, "new/untracked.txt"))
	require.Equal(t, "package main\n\n// edited, not committed\n", read(t, src, "main.go"))
}

func TestAcceptAsACommitTakesOnlyTheSessionsFiles(t *testing.T) {
	ctx := context.Background()
	src, head := workInProgress(t)
	d := agentChanges(t, src)

	// new/untracked.txt is the person's uncommitted work: a commit of the
	// agent's change to it would take theirs along.
	_, err := Apply(ctx, src, d, session.AsCommit, "agent")
	var conflict *ConflictError
	require.True(t, errors.As(err, &conflict), "%v", err)
	require.Equal(t, []Conflict{{Path: "new/untracked.txt", Why: conflict.Conflicts[0].Why}}, conflict.Conflicts)
	require.Contains(t, conflict.Conflicts[0].Why, "it was untracked when the session started")
	require.Contains(t, conflict.Conflicts[0].Why, "--uncommitted")
	require.Equal(t, head, strings.TrimSpace(gitOut(t, src, "rev-parse", "HEAD")))

	// A file of the session's with changes of theirs staged is named too:
	// the commit would take them along.
	write(t, src, "notes.md", "one\ntwo\nthree\nfour\nfive\nsix\nseven, staged\n")
	gitOut(t, src, "add", "notes.md")
	_, err = Apply(ctx, src, d, session.AsCommit, "agent")
	require.True(t, errors.As(err, &conflict), "%v", err)
	require.Equal(t, "notes.md", conflict.Conflicts[len(conflict.Conflicts)-1].Path)
	require.Contains(t, conflict.Conflicts[len(conflict.Conflicts)-1].Why, "staged")
	gitOut(t, src, "commit", "-qm", "their staged line", "--", "notes.md")

	// Once they commit that file, the session's files are committed and
	// nothing else: staged.go stays staged, main.go's edit uncommitted.
	gitOut(t, src, "add", "new/untracked.txt")
	gitOut(t, src, "commit", "-qm", "mine", "--", "new/untracked.txt")
	commit, err := Apply(ctx, src, d, session.AsCommit, "agent")
	require.NoError(t, err)
	require.Equal(t, "added.txt\nnew/untracked.txt\nnotes.md\n", gitOut(t, src, "show", "--name-only", "--format=", commit))
	require.Equal(t, "A  staged.go", strings.TrimSpace(grepLine(gitOut(t, src, "status", "--porcelain"), "staged.go")))
	require.Equal(t, "package main\n\n// edited, not committed\n", read(t, src, "main.go"))
}

func grepLine(text, sub string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

func TestSections(t *testing.T) {
	p := "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-diff --git a/y b/y\n+z\ndiff --git a/y b/y\nnew file mode 100644\n"
	require.Equal(t, []string{"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-diff --git a/y b/y\n+z\n", "diff --git a/y b/y\nnew file mode 100644\n"}, sections(p))
	require.Empty(t, sections(""))
}

// TestAsIsTakesEveryShapeOfCheckout: what a person's checkout may
// look like mid-work starts a session, each taken as it stands: a tracked
// directory replaced by a file, a tracked file by a directory, a tracked
// directory by a link out of the repository (copied as the link, never
// followed); a file this user cannot read is left out and named.
func TestAsIsTakesEveryShapeOfCheckout(t *testing.T) {
	src, _ := repo(t)
	write(t, src, "d/f", "f\n")
	write(t, src, "x", "x\n")
	write(t, src, "l/g", "g\n")
	gitOut(t, src, "add", "-A")
	gitOut(t, src, "commit", "-qm", "shapes")
	require.NoError(t, os.RemoveAll(filepath.Join(src, "d")))
	write(t, src, "d", "now a file\n")
	require.NoError(t, os.Remove(filepath.Join(src, "x")))
	write(t, src, "x/y", "now a directory\n")
	require.NoError(t, os.RemoveAll(filepath.Join(src, "l")))
	require.NoError(t, os.Symlink("/etc", filepath.Join(src, "l")))
	write(t, src, "secret", "s\n")
	require.NoError(t, os.Chmod(filepath.Join(src, "secret"), 0))

	dir := filepath.Join(t.TempDir(), "copy")
	o, err := AsIs(context.Background(), src, dir, nil, Clone)
	require.NoError(t, err)
	require.Equal(t, "now a file\n", read(t, dir, "d"))
	require.Equal(t, "now a directory\n", read(t, dir, "x/y"))
	target, err := os.Readlink(filepath.Join(dir, "l"))
	require.NoError(t, err)
	require.Equal(t, "/etc", target)
	if os.Getuid() != 0 { // root reads a file of mode 000
		require.Contains(t, o.Skipped, "secret (not readable)")
	}
}

// TestAsIsHonoursHiddenUntrackedFiles: a repository whose git shows
// no untracked files (a home directory kept in git) gives none to the copy.
func TestAsIsHonoursHiddenUntrackedFiles(t *testing.T) {
	src, _ := repo(t)
	gitOut(t, src, "config", "status.showUntrackedFiles", "no")
	write(t, src, ".ssh/id_ed25519", "key\n")
	write(t, src, "main.go", "package main // edited\n")
	dir := filepath.Join(t.TempDir(), "copy")
	o, err := AsIs(context.Background(), src, dir, nil, Clone)
	require.NoError(t, err)
	require.Equal(t, []string{"main.go"}, o.Files)
	require.NoFileExists(t, filepath.Join(dir, ".ssh/id_ed25519"))
}

// TestAsIsTakesTheIgnoredFilesAskedFor: an ignored file the
// environment names is in the copy, ignored there too (neither base nor
// diff holds it); other ignored files stay out.
func TestAsIsTakesTheIgnoredFilesAskedFor(t *testing.T) {
	src, head := repo(t) // .gitignore: *.log
	write(t, src, "fixtures/big.log", "needed by the tests\n")
	write(t, src, "debug.log", "not needed\n")
	dir := filepath.Join(t.TempDir(), "copy")
	o, err := AsIs(context.Background(), src, dir, []string{"fixtures/**"}, Clone)
	require.NoError(t, err)
	require.Equal(t, []string{"fixtures/big.log"}, o.Ignored)
	require.Empty(t, o.Files)
	require.Contains(t, o.Summary(src), "1 ignored file(s) the environment asks for (fixtures/big.log)")
	require.Equal(t, "needed by the tests\n", read(t, dir, "fixtures/big.log"))
	require.NoFileExists(t, filepath.Join(dir, "debug.log"))
	d, err := Compute(context.Background(), dir, o.Base)
	require.NoError(t, err)
	require.Empty(t, d.Files, "an ignored file is not the agent's change")
	require.Equal(t, head, o.Head)
}

// TestFullCopyIsTheSessionsConflict: git failing for want of space in a
// session's volume is a conflict with the session's budget, said so, not
// an internal error.
func TestFullCopyIsTheSessionsConflict(t *testing.T) {
	err := error(&GitError{Verb: "add", Err: errors.New("exit status 128"), Stderr: "fatal: Unable to create '/v/work/.git/paddock-index.lock': No space left on device"})
	require.ErrorIs(t, err, errdefs.ErrConflict)
	require.Contains(t, err.Error(), "disk budget is used up")
	other := error(&GitError{Verb: "add", Err: errors.New("exit status 128"), Stderr: "fatal: bad object"})
	require.NotErrorIs(t, other, errdefs.ErrConflict)
}
