package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// GitDirs are where a local repository's git data lives: Own holds its
// HEAD and index, Common its objects and refs. They are the same
// directory but for a worktree (`git worktree add`), whose own lies in
// the common one's worktrees/.
type GitDirs struct {
	Own, Common string
}

// Paths are the directories a copy reads: the checkout's and its git
// directories (once each).
func (g GitDirs) Paths() []string {
	if g.Own == g.Common {
		return []string{g.Own}
	}
	return []string{g.Own, g.Common}
}

// ErrNotGit is Locate's error for a directory that is no git repository.
var ErrNotGit = errors.New("not a git repository")

// Locate finds the git directories of the local repository at repo (a
// directory), checked as a copy needs them: its .git directory; repo
// itself when bare; or, where .git is a "gitdir:" file, the directory it
// names: a worktree of another repository (which names this checkout
// back, as git links the two) or a separate git directory (`git init
// --separate-git-dir`, a submodule's). Every path is resolved of links.
// Neither directory may hold a link at its top (git would follow it
// elsewhere), the common one may borrow no other repository's objects,
// and HEAD must name a commit.
func Locate(repo string) (GitDirs, error) {
	var g GitDirs
	fi, err := os.Lstat(filepath.Join(repo, ".git"))
	switch {
	case err == nil && fi.IsDir():
		g.Own = filepath.Join(repo, ".git")
		g.Common = g.Own
	case err == nil && fi.Mode().IsRegular():
		if g, err = linked(repo); err != nil {
			return GitDirs{}, err
		}
	case err == nil:
		return GitDirs{}, fmt.Errorf("repository %s: its .git is a %s, which git would follow elsewhere; give the repository itself", repo, Kind(fi.Mode()))
	default:
		if !isGitDir(repo) {
			return GitDirs{}, ErrNotGit
		}
		g.Own, g.Common = repo, repo // bare
	}
	if real, err := filepath.EvalSymlinks(g.Own); err == nil {
		g.Own = real
	}
	if real, err := filepath.EvalSymlinks(g.Common); err == nil {
		g.Common = real
	}
	for _, dir := range g.Paths() {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return GitDirs{}, fmt.Errorf("repository %s: its git directory %s cannot be read: %w", repo, dir, err)
		}
		for _, e := range entries {
			if e.Type()&os.ModeSymlink != 0 {
				return GitDirs{}, fmt.Errorf("repository %s: %s in its git directory %s is a link, which git would follow elsewhere; give a repository whose git directory stands alone", repo, e.Name(), dir)
			}
		}
	}
	borrows := []string{"objects/info/alternates", "objects/info/http-alternates"}
	if g.Own == g.Common {
		borrows = append(borrows, "commondir")
	} else if _, err := os.Lstat(filepath.Join(g.Common, "commondir")); err == nil {
		borrows = append(borrows, "commondir")
	}
	for _, p := range borrows {
		if _, err := os.Lstat(filepath.Join(g.Common, p)); err == nil {
			return GitDirs{}, fmt.Errorf("repository %s borrows another repository (%s): give the repository it borrows from, or one that stands alone (git repack -a -d && rm %s)", repo, p, filepath.Join(g.Common, p))
		}
	}
	if !hasCommit(g) {
		return GitDirs{}, fmt.Errorf("repository %s has no commit yet: commit something first (git -C %s add -A && git -C %s commit -m init), or name none for an empty working copy (paddock run --empty; in the web app, leave Repository empty)", repo, repo, repo)
	}
	return g, nil
}

// linked follows the "gitdir:" file repo/.git to the git directory it
// names: a worktree's (its commondir names the repository it belongs to,
// and its gitdir names repo/.git back) or a separate git directory.
func linked(repo string) (GitDirs, error) {
	wrong := func(why string) error {
		return fmt.Errorf("repository %s: its .git file %s; give the repository itself, or a worktree git made (git worktree add)", repo, why)
	}
	text, err := readSmall(filepath.Join(repo, ".git"))
	if err != nil {
		return GitDirs{}, wrong("cannot be read")
	}
	target, ok := strings.CutPrefix(strings.TrimRight(text, "\r\n"), "gitdir: ")
	if !ok || target == "" || strings.ContainsAny(target, "\n\x00") {
		return GitDirs{}, wrong(`does not say "gitdir: PATH"`)
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(repo, target)
	}
	own := filepath.Clean(target)
	if fi, err := os.Lstat(own); err != nil || !fi.IsDir() {
		return GitDirs{}, wrong("names " + own + ", which is not a directory")
	}
	common, err := readSmall(filepath.Join(own, "commondir"))
	if errors.Is(err, os.ErrNotExist) {
		if !isGitDir(own) {
			return GitDirs{}, wrong("names " + own + ", which is not a git directory")
		}
		return GitDirs{Own: own, Common: own}, nil // a separate git directory
	}
	if err != nil {
		return GitDirs{}, wrong("names " + own + ", whose commondir cannot be read")
	}
	common = strings.TrimRight(common, "\r\n")
	if !filepath.IsAbs(common) {
		common = filepath.Join(own, common)
	}
	common = filepath.Clean(common)
	if !isGitDir(common) || filepath.Dir(own) != filepath.Join(common, "worktrees") {
		return GitDirs{}, wrong("names " + own + ", which is not a worktree of a repository")
	}
	// Git links a worktree both ways: its git directory's gitdir names
	// the checkout's .git file. A .git file naming another repository's
	// worktree is not this checkout's.
	back, err := readSmall(filepath.Join(own, "gitdir"))
	back = strings.TrimRight(back, "\r\n")
	if back != "" && !filepath.IsAbs(back) {
		back = filepath.Join(own, back) // worktree.useRelativePaths
	}
	if err != nil || !sameFile(back, filepath.Join(repo, ".git")) {
		return GitDirs{}, wrong("names the worktree " + own + ", which belongs to another checkout (git worktree repair fixes a moved one)")
	}
	return GitDirs{Own: own, Common: common}, nil
}

// readSmall reads a git pointer file: a line, not a link.
func readSmall(path string) (string, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() || fi.Size() > 4096 {
		return "", fmt.Errorf("%s: not a small regular file", path)
	}
	b, err := os.ReadFile(path)
	return string(b), err
}

// sameFile says a and b name the same file.
func sameFile(a, b string) bool {
	x, err := os.Stat(a)
	if err != nil {
		return false
	}
	y, err := os.Stat(b)
	return err == nil && os.SameFile(x, y)
}

// isGitDir says dir looks like a git directory: HEAD and objects.
func isGitDir(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
		return false
	}
	_, err := os.Stat(filepath.Join(dir, "objects"))
	return err == nil
}

// hasCommit says whether HEAD names a commit: detached at one, or on a
// branch that exists (loose or packed, in the common directory).
// Anything this cannot read is left to git to judge.
func hasCommit(g GitDirs) bool {
	head, err := os.ReadFile(filepath.Join(g.Own, "HEAD"))
	if err != nil {
		return true
	}
	ref, ok := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: ")
	if !ok || !strings.HasPrefix(ref, "refs/") || strings.Contains(ref, "..") {
		return true // detached, or not ours to judge
	}
	if _, err := os.Stat(filepath.Join(g.Common, filepath.FromSlash(ref))); err == nil {
		return true
	}
	packed, err := os.ReadFile(filepath.Join(g.Common, "packed-refs"))
	return err == nil && strings.Contains(string(packed), " "+ref+"\n")
}
