// Package workspace is a session's working copy as a deliverable: the diff
// against the base commit, with files under dedicated control flagged
// (CI configuration, build scripts, git hooks, dependency manifests and
// lock files), applying an accepted diff to the user's repository, and
// discarding what was not accepted.
package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/paddock-dev/paddock/internal/clip"
	patchpkg "github.com/paddock-dev/paddock/internal/patch"
	"github.com/paddock-dev/paddock/internal/session"
)

// Compute returns the diff of the working copy at dir against base,
// including new files (not ignored ones). It uses a private index, so the
// working copy's own index is untouched.
func Compute(ctx context.Context, dir, base string) (session.Diff, error) {
	tree, skipped, env, done, err := stage(ctx, dir, base)
	if err != nil {
		return session.Diff{}, err
	}
	defer done()
	patch, err := gitRun(ctx, dir, env, "diff", "--cached", "--binary", "--no-color", "--no-ext-diff", "--no-textconv", "--ignore-submodules=none", "--submodule=short", base)
	if err != nil {
		return session.Diff{}, err
	}
	names, err := gitRun(ctx, dir, env, "diff", "--cached", "--raw", "-z", "--no-renames", "--no-ext-diff", "--ignore-submodules=none", "--no-abbrev", base)
	if err != nil {
		return session.Diff{}, err
	}
	d := session.Diff{Base: base, Patch: patch, Files: []session.ChangedFile{}, Skipped: skipped, Tree: tree}
	fields := strings.Split(strings.TrimSuffix(names, "\x00"), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		// ":OLDMODE NEWMODE OLDSHA NEWSHA STATUS", then the path.
		raw := strings.Fields(fields[i])
		if len(raw) < 5 {
			return session.Diff{}, fmt.Errorf("git diff --raw: unexpected line %q", fields[i])
		}
		f := session.ChangedFile{Path: fields[i+1], Status: map[string]string{"A": "added", "M": "modified", "D": "deleted", "T": "modified"}[raw[4][:1]]}
		f.Flagged, f.Reason = Flag(f.Path)
		if raw[1] == "120000" {
			// A link's blob is its target: a link out of the repository
			// or into .git is flagged (and one into .git refused at accept).
			target, err := gitRun(ctx, dir, env, "cat-file", "blob", raw[3])
			if err != nil {
				return session.Diff{}, err
			}
			if why := LinkRisk(f.Path, target); why != "" {
				f.Flagged, f.Reason = true, why
			}
		}
		if fi, err := os.Lstat(filepath.Join(dir, f.Path, ".git")); err == nil && f.Status != "deleted" {
			f.Flagged, f.Reason = true, fmt.Sprintf("nested repository (recorded as a commit reference, its files are not in the diff; .git is a %s)", Kind(fi.Mode()))
		}
		d.Files = append(d.Files, f)
	}
	return d, nil
}

// stage records the copy at dir, relative to base, in a private index
// (the copy's own is never touched) and writes its tree; env names that
// index for further git runs until done releases it.
//
// The private index is kept between stages (.git/paddock-index, with the
// base it was read from): git re-reads only the files whose stat changed
// since, so a copy of 150,000 files costs a stat of each per call, not a
// hash of each. One stage at a time runs on a copy.
func stage(ctx context.Context, dir, base string) (tree string, skipped, env []string, done func(), err error) {
	lock := copyLock(dir)
	lock.Lock()
	defer func() {
		if err != nil {
			lock.Unlock()
		}
	}()
	if err := checkCopy(dir); err != nil {
		return "", nil, nil, nil, err
	}
	idx := filepath.Join(dir, ".git", indexName)
	env = []string{"GIT_INDEX_FILE=" + idx}
	// A git stopped by its deadline leaves its lock: no other runs now.
	_ = os.Remove(idx + ".lock")
	read, _ := os.ReadFile(idx + ".base")
	if _, err := os.Lstat(idx); err != nil || string(read) != base {
		// A new base (or none yet): the index starts from it.
		_ = os.Remove(idx)
		if _, err := gitRun(ctx, dir, env, "read-tree", base); err != nil {
			return "", nil, nil, nil, err
		}
		if err := os.WriteFile(idx+".base", []byte(base), 0o644); err != nil {
			return "", nil, nil, nil, err
		}
	}
	// A nested repository without a commit cannot be recorded; git skips
	// it (exit 1, one error line each) and the diff says so.
	left, err := scan(ctx, dir)
	if err != nil {
		return "", nil, nil, nil, err
	}
	skipped = describe(left)
	// A session's attachments are in the copy for its commands to read,
	// never in its diff.
	spec := strings.Join(append([]string{".", ":(exclude,literal)" + session.AttachmentsDir}, excludes(left)...), "\x00")
	if _, err := gitRunIn(ctx, dir, env, []byte(spec), "add", "-A", "--ignore-errors", "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
		var ge *GitError
		if !errors.As(err, &ge) || ge.ExitCode() != 1 {
			return "", nil, nil, nil, err
		}
		for _, line := range strings.Split(ge.Stderr, "\n") {
			if strings.HasPrefix(line, "error: '") {
				if end := strings.Index(line[8:], "'"); end > 0 {
					skipped = append(skipped, line[8:8+end]+": a nested repository without a commit (not recorded)")
					continue
				}
			}
			return "", nil, nil, nil, err
		}
	}
	out, err := gitRun(ctx, dir, env, "write-tree")
	if err != nil {
		return "", nil, nil, nil, err
	}
	return strings.TrimSpace(out), skipped, env, lock.Unlock, nil
}

// indexName is the private index's file in a copy's .git.
const indexName = "paddock-index"

// copyLocks serialize the stages of each copy (dir → *sync.Mutex).
var copyLocks sync.Map

func copyLock(dir string) *sync.Mutex {
	l, _ := copyLocks.LoadOrStore(filepath.Clean(dir), &sync.Mutex{})
	return l.(*sync.Mutex)
}

// LinkIntoGit begins the reason of a link into .git, which accept refuses.
const LinkIntoGit = "link into .git"

// LinkRisk says what is wrong with a symbolic link at p pointing to
// target: it leaves the repository, or it points into .git; "" when it
// stays inside the repository's files.
func LinkRisk(p, target string) string {
	shown := strings.ToValidUTF8(target[:min(len(target), 200)], "?")
	if path.IsAbs(target) || filepath.IsAbs(target) {
		return fmt.Sprintf("link to %q, outside the repository: review with care", shown)
	}
	to := path.Clean(path.Join(path.Dir(filepath.ToSlash(p)), filepath.ToSlash(target)))
	switch lower := strings.ToLower(to); {
	case to == ".." || strings.HasPrefix(to, "../"):
		return fmt.Sprintf("link to %q, outside the repository: review with care", shown)
	case lower == ".git" || strings.HasPrefix(lower, ".git/"):
		return fmt.Sprintf("%s (%q): refused at accept", LinkIntoGit, shown)
	}
	return ""
}

// Flag says whether a path is under dedicated control, and why.
func Flag(p string) (bool, string) {
	// Case-insensitively: on a case-insensitive filesystem (macOS,
	// Windows) .HUSKY/post-commit lands in .husky/.
	p = strings.ToLower(filepath.ToSlash(p))
	base := path.Base(p)
	lower := base
	switch {
	case strings.HasPrefix(p, ".github/workflows/") || strings.HasPrefix(p, ".github/actions/") || strings.HasPrefix(p, ".circleci/") ||
		strings.HasPrefix(p, ".buildkite/") || strings.HasPrefix(p, ".gitlab/ci") || base == ".gitlab-ci.yml" || base == "jenkinsfile" ||
		base == ".travis.yml" || base == "azure-pipelines.yml" || base == "bitbucket-pipelines.yml" || base == ".drone.yml" ||
		strings.HasPrefix(p, ".tekton/") || base == "cloudbuild.yaml" || base == "appveyor.yml":
		return true, "CI configuration"
	case strings.HasPrefix(p, ".githooks/") || strings.HasPrefix(p, ".husky/") || base == ".pre-commit-config.yaml" ||
		strings.HasPrefix(p, ".git/") || base == "lefthook.yml" || base == ".gitattributes" || base == ".gitmodules":
		return true, "git hooks and git configuration"
	case lockFiles[lower] || strings.HasSuffix(lower, ".lock") || strings.HasSuffix(lower, ".lockfile"):
		return true, "dependency lock file"
	case manifests[lower] || strings.HasSuffix(lower, ".csproj") || strings.HasSuffix(lower, ".fsproj") || strings.HasSuffix(lower, ".gemspec") ||
		strings.HasPrefix(lower, "requirements") && strings.HasSuffix(lower, ".txt"):
		return true, "dependency manifest"
	case buildScripts[lower] || strings.HasSuffix(lower, ".mk") || strings.HasSuffix(lower, ".bzl") || strings.HasPrefix(lower, "dockerfile") ||
		strings.HasSuffix(lower, ".dockerfile"):
		return true, "build script"
	}
	return false, ""
}

var (
	lockFiles = set("go.sum", "package-lock.json", "yarn.lock", "pnpm-lock.yaml", "npm-shrinkwrap.json", "cargo.lock", "poetry.lock",
		"pipfile.lock", "gemfile.lock", "composer.lock", "mix.lock", "packages.lock.json", "pubspec.lock", "flake.lock", "uv.lock", "bun.lockb")
	manifests = set("go.mod", "go.work", "package.json", "cargo.toml", "pyproject.toml", "setup.py", "setup.cfg", "pipfile", "gemfile",
		"composer.json", "pom.xml", "build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts", "mix.exs", "pubspec.yaml",
		"deno.json", "flake.nix", "vcpkg.json", "conanfile.txt", "conanfile.py", "environment.yml")
	buildScripts = set("makefile", "gnumakefile", "cmakelists.txt", "build.sh", "configure", "configure.ac", "build", "build.bazel",
		"workspace", "workspace.bazel", "module.bazel", ".bazelrc", "justfile", "taskfile.yml", "taskfile.yaml", "rakefile", "magefile.go",
		"meson.build", "build.rs", "docker-compose.yml", "docker-compose.yaml", "compose.yaml", "containerfile", "vagrantfile", "noxfile.py", "tox.ini")
)

func set(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// Snapshot records an accepted diff in the working copy: a commit of tree
// (the one the diff was taken from) on top of base, which becomes the
// copy's new base so that what the agent changes afterwards is a new
// diff. The working copy itself is not touched. The commit is by author
// (Paddock's when zero), committed by Paddock.
func Snapshot(ctx context.Context, dir, base, tree, message string, author Author) (string, error) {
	if !isHash(tree) {
		return "", fmt.Errorf("%w: tree %q is not an object name", ErrUntrusted, tree)
	}
	if t, err := gitRun(ctx, dir, nil, "cat-file", "-t", tree); err != nil || strings.TrimSpace(t) != "tree" {
		return "", fmt.Errorf("tree %.12s is not a snapshot of this working copy: %w", tree, ErrUnknownTree)
	}
	var env []string
	if author != (Author{}) {
		env = []string{"GIT_AUTHOR_NAME=" + author.Name, "GIT_AUTHOR_EMAIL=" + author.Email}
	}
	out, err := gitRun(ctx, dir, env, "-c", "user.name=paddock", "-c", "user.email=paddock@localhost", "commit-tree", tree, "-p", base, "-m", message)
	return strings.TrimSpace(out), err
}

// Author is who a commit is by: a person's name and address, or Paddock
// when zero.
type Author struct {
	Name, Email string
}

// ErrUnknownTree says an acceptance named a tree the copy does not have.
var ErrUnknownTree = errors.New("unknown tree")

func isHash(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	return strings.Trim(s, "0123456789abcdef") == ""
}

// Discard puts the working copy back at its base commit: every change
// that was not accepted is gone.
func Discard(ctx context.Context, dir, base string) error {
	if err := checkCopy(dir); err != nil {
		return err
	}
	left, err := scan(ctx, dir)
	if err != nil {
		return err
	}
	if err := removeLeftOut(dir, left); err != nil {
		return err
	}
	if _, err := gitRun(ctx, dir, nil, "reset", "--hard", "--quiet", "--no-recurse-submodules", base); err != nil {
		return err
	}
	// -ff: nested repositories the agent made go too.
	_, err = gitRun(ctx, dir, nil, "clean", "-ffdxq")
	return err
}

// Apply applies a diff to the user's repository at repo: checked first,
// file by file (a patch that does not apply changes nothing, and every
// file in the way is named), then as uncommitted changes or as a commit
// of exactly the session's files under the repository's own git
// identity. Changes the person made meanwhile are kept: a file they
// changed where the agent did too is a conflict, never overwritten. It
// returns the commit, if one was made.
func Apply(ctx context.Context, repo string, d session.Diff, mode session.ApplyMode, message string) (string, error) {
	if strings.TrimSpace(d.Patch) == "" {
		return "", fmt.Errorf("the session changed nothing: there is no diff to apply")
	}
	for _, f := range d.Files {
		if strings.HasPrefix(f.Reason, LinkIntoGit) {
			return "", fmt.Errorf("nothing was applied: %s is a %s; a link into .git is never accepted (reject the session, or remove the link in it first)", f.Path, f.Reason)
		}
	}
	dir, err := os.MkdirTemp("", "paddock-patch-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	whole := filepath.Join(dir, "all.patch")
	if err := os.WriteFile(whole, []byte(d.Patch), 0o600); err != nil {
		return "", err
	}
	if conflicts, err := check(ctx, repo, dir, whole, d, mode); err != nil {
		return "", err
	} else if len(conflicts) > 0 {
		return "", &ConflictError{Repo: repo, Base: d.Base, Conflicts: conflicts}
	}
	args := []string{"apply", "--whitespace=nowarn"}
	if mode == session.AsCommit {
		args = append(args, "--index")
		// The commit is made under the repository's own identity: without
		// one, nothing is applied (rather than a change left staged).
		if _, err := userGit(ctx, repo, "var", "GIT_COMMITTER_IDENT"); err != nil {
			return "", fmt.Errorf("nothing was applied: %s has no git identity to commit with: set one (git -C %s config user.name \"Your Name\" && git -C %s config user.email you@example.com), then accept again: %w", repo, repo, repo, err)
		}
	}
	if _, err := userGit(ctx, repo, append(args, whole)...); err != nil {
		return "", err
	}
	if mode != session.AsCommit {
		return "", nil
	}
	if message == "" {
		message = "Apply the changes of a Paddock session"
	}
	// Only the session's files: what the person staged is theirs to commit.
	commit := []string{"commit", "--quiet", "--no-verify", "-m", message, "--only", "--"}
	for _, f := range d.Files {
		commit = append(commit, ":(literal)"+f.Path)
	}
	if _, err := userGit(ctx, repo, commit...); err != nil {
		// Take the change back out of the index and the files, so a retry
		// starts from where the repository was.
		if _, rerr := userGit(ctx, repo, append(append([]string{}, args...), "-R", whole)...); rerr != nil {
			return "", fmt.Errorf("the commit failed (%w) and undoing the applied change failed too (%v): see git -C %s status", err, rerr, repo)
		}
		return "", fmt.Errorf("the commit failed, and the change was taken back out: %w", err)
	}
	head, err := userGit(ctx, repo, "rev-parse", "HEAD")
	return strings.TrimSpace(head), err
}

// Conflict is a file of a diff that does not apply to the user's
// repository as it is now, and why.
type Conflict struct {
	Path string
	Why  string
}

// ConflictError says a diff was not applied because files of the
// repository are in its way; nothing was written.
type ConflictError struct {
	Repo      string
	Base      string
	Conflicts []Conflict
}

func (e *ConflictError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "nothing was applied: %d file(s) of %s are in the way of the session's changes (your changes there are intact):", len(e.Conflicts), e.Repo)
	for _, c := range e.Conflicts {
		fmt.Fprintf(&b, "\n  %s: %s", c.Path, c.Why)
	}
	return b.String()
}

// check tries diff d (its patch written at whole) against repo (git
// apply --check, with --index for a commit) and, when it does not apply,
// each file's section on its own, naming those in the way, with why.
func check(ctx context.Context, repo, dir, whole string, d session.Diff, mode session.ApplyMode) ([]Conflict, error) {
	var conflicts []Conflict
	staged := map[string]bool{}
	if mode == session.AsCommit {
		var err error
		if staged, err = stagedFiles(ctx, repo); err != nil {
			return nil, err
		}
	}
	// Most accepts meet nothing in the way: one check of the whole patch
	// says so, and only a refusal is taken apart file by file to name why.
	if !slices.ContainsFunc(d.Files, func(f session.ChangedFile) bool { return staged[f.Path] }) {
		args := []string{"apply", "--whitespace=nowarn", "--check"}
		if mode == session.AsCommit {
			args = append(args, "--index")
		}
		if _, err := userGit(ctx, repo, append(args, whole)...); err == nil {
			return nil, nil
		}
	}
	for i, sec := range sections(d.Patch) {
		name := filepath.Join(dir, fmt.Sprintf("%d.patch", i))
		if err := os.WriteFile(name, []byte(sec), 0o600); err != nil {
			return nil, err
		}
		p := sectionPath(sec)
		if _, err := userGit(ctx, repo, "apply", "--whitespace=nowarn", "--check", name); err != nil {
			why := conflictWhy(err)
			if _, rerr := userGit(ctx, repo, "apply", "--whitespace=nowarn", "--check", "-R", name); rerr == nil {
				why = "it already has the session's change (accepted before?)"
			}
			conflicts = append(conflicts, Conflict{Path: p, Why: why})
			continue
		}
		if mode != session.AsCommit {
			continue
		}
		if staged[p] {
			conflicts = append(conflicts, Conflict{Path: p, Why: "it has changes of yours staged (git add), which a commit of the session's change would take along: " +
				"accept with --uncommitted, or commit yours first"})
			continue
		}
		if _, err := userGit(ctx, repo, "apply", "--whitespace=nowarn", "--check", "--index", name); err != nil {
			why := "it has uncommitted changes of yours, which a commit of the session's change would take along: accept with --uncommitted, or commit yours first"
			if strings.Contains(err.Error(), "does not exist in index") {
				why = fmt.Sprintf("it is not committed in your repository (it was untracked when the session started), so a commit would take all of it: "+
					"accept with --uncommitted, or commit it first (git add -- %s && git commit)", p)
			}
			conflicts = append(conflicts, Conflict{Path: p, Why: why})
		}
	}
	return conflicts, nil
}

// stagedFiles are the files whose staged content differs from HEAD in
// repo: the person's, which a commit of the session's files must not take.
func stagedFiles(ctx context.Context, repo string) (map[string]bool, error) {
	out, err := userGit(ctx, repo, "diff", "--cached", "--name-only", "-z", "--no-renames", "HEAD", "--")
	if err != nil {
		return nil, fmt.Errorf("list what is staged in %s: %w", repo, err)
	}
	staged := map[string]bool{}
	for _, p := range strings.Split(out, "\x00") {
		if p != "" {
			staged[p] = true
		}
	}
	return staged, nil
}

// sections splits a git patch into its files' sections: each begins with
// a "diff --git " line, which no line of a hunk or binary patch can be.
func sections(patch string) []string {
	var out []string
	start := -1
	for i := 0; i < len(patch); {
		end := strings.IndexByte(patch[i:], '\n')
		if end < 0 {
			end = len(patch)
		} else {
			end += i + 1
		}
		if strings.HasPrefix(patch[i:end], "diff --git ") {
			if start >= 0 {
				out = append(out, patch[start:i])
			}
			start = i
		}
		i = end
	}
	if start >= 0 {
		out = append(out, patch[start:])
	}
	return out
}

// sectionPath is the file a section changes, as its parsed header names it.
func sectionPath(sec string) string {
	if files, err := patchpkg.Parse(sec); err == nil && len(files) == 1 {
		return files[0].Path()
	}
	line, _, _ := strings.Cut(sec, "\n")
	return strings.TrimPrefix(line, "diff --git ")
}

// conflictWhy is git apply's refusal of one file in a person's words.
func conflictWhy(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "already exists in working directory"):
		return "you created it since the session started; the session creates it too"
	case strings.Contains(msg, "does not exist in working tree"), strings.Contains(msg, "No such file"):
		return "you removed or renamed it since the session started; the session changes it"
	case strings.Contains(msg, "patch does not apply"), strings.Contains(msg, "patch failed"):
		if _, at, ok := strings.Cut(msg, "patch failed: "); ok {
			line, _, _ := strings.Cut(at, "\n")
			if i := strings.LastIndexByte(line, ':'); i >= 0 {
				return "you changed the lines the session changes (near line " + line[i+1:] + ") since the session started"
			}
		}
		return "you changed the lines the session changes since the session started"
	}
	return strings.TrimSpace(msg)
}

// Branch delivers commit (an accepted snapshot of the working copy at dir,
// whose parent is base) to the user's repository at repo as branch name,
// without touching the repository's checkout: the commit leaves the copy as
// a git bundle (data; nothing of the copy's configuration runs) and the
// repository fetches it as its owner (the files git writes are theirs; no
// hook runs). A branch that exists moves only forward. The repository must
// hold base: a copy whose earlier diff was accepted from a terminal has a
// base only that terminal's repository knows.
func Branch(ctx context.Context, dir, base, commit, repo, name string) error {
	if !isHash(commit) || !isHash(base) {
		return fmt.Errorf("%w: commit %q or base %q is not an object name", ErrUntrusted, commit, base)
	}
	fi, err := os.Stat(repo)
	if err != nil || !fi.IsDir() {
		return fmt.Errorf("the repository of origin %s is not a directory on this server: accept from a terminal in your checkout instead", repo)
	}
	if err := refuseLinksIntoGit(ctx, dir, base, commit); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "paddock-deliver-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// The owner reads the bundle.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	bundle := filepath.Join(tmp, "accepted.bundle")
	if err := makeBundle(ctx, dir, commit, base, bundle); err != nil {
		return err
	}
	if err := os.Chmod(bundle, 0o644); err != nil {
		return err
	}
	_, err = ownerGit(ctx, repo, fi, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--", bundle, bundleRef+":refs/heads/"+name)
	if err != nil && strings.Contains(err.Error(), "prerequisite") {
		return fmt.Errorf("%s does not have the session's base %s (an earlier diff was accepted from a terminal?): accept this one from a terminal too: %w", repo, clip.ID(base), err)
	}
	return err
}

// refuseLinksIntoGit refuses a commit that adds or changes a symbolic link
// into .git (see LinkRisk), as Apply does: the branch would carry it into
// the user's repository.
func refuseLinksIntoGit(ctx context.Context, dir, base, commit string) error {
	out, err := gitRun(ctx, dir, nil, "diff-tree", "-r", "-z", "--no-renames", "--diff-filter=AMT", base, commit)
	if err != nil {
		return err
	}
	fields := strings.Split(out, "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		meta := strings.Fields(strings.TrimPrefix(fields[i], ":"))
		if len(meta) < 4 || meta[1] != "120000" || !isHash(meta[3]) {
			continue
		}
		target, err := gitRun(ctx, dir, nil, "cat-file", "blob", meta[3])
		if err != nil {
			return err
		}
		if reason := LinkRisk(fields[i+1], target); strings.HasPrefix(reason, LinkIntoGit) {
			return fmt.Errorf("nothing was delivered: %s is a %s; a link into .git is never accepted (reject the session, or remove the link in it first)", fields[i+1], reason)
		}
	}
	return nil
}

// bundleRef names the commit a bundle made of a copy carries.
const bundleRef = "refs/paddock/deliver"

// makeBundle writes to path a git bundle of commit for a repository that
// has base: the objects commit adds, and nothing of the copy's
// configuration (a bundle is data). The copy's .git is Paddock's
// (read-only to the sandbox); should it ever not be, a ref directory that
// leads elsewhere is refused rather than written through, and no reflog is
// written.
func makeBundle(ctx context.Context, dir, commit, base, path string) error {
	for _, d := range []string{"refs", "refs/paddock"} {
		if fi, err := os.Lstat(filepath.Join(dir, ".git", d)); err == nil && !fi.IsDir() {
			return fmt.Errorf("%w: .git/%s is not a directory", ErrUntrusted, d)
		}
	}
	if _, err := gitRun(ctx, dir, nil, "-c", "core.logAllRefUpdates=false", "update-ref", "--no-deref", bundleRef, commit); err != nil {
		return err
	}
	args := []string{"bundle", "create", "--quiet", path, bundleRef}
	if base != "" {
		args = append(args, "^"+base)
	}
	_, err := gitRun(ctx, dir, nil, args...)
	return err
}

// BaseBundle is a git bundle of commit (a snapshot the copy at dir took
// on an acceptance) for a repository that has base (none: all of commit's
// history): kept in the store, it lets a copy made again elsewhere have
// the very same commit.
func BaseBundle(ctx context.Context, dir, commit, base string) ([]byte, error) {
	if !isHash(commit) || base != "" && !isHash(base) {
		return nil, fmt.Errorf("%w: commit %q or base %q is not an object name", ErrUntrusted, commit, base)
	}
	tmp, err := os.MkdirTemp("", "paddock-base-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	path := filepath.Join(tmp, "base.bundle")
	if err := makeBundle(ctx, dir, commit, base, path); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}
