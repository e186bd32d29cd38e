package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Origin is where a working copy came from: the repository's HEAD and,
// when its checkout had work in progress, the files of it the copy took
// (committed in the copy as the session's base snapshot, so the diff
// shows only what the agent changed).
type Origin struct {
	Head string
	// Base is the commit the session starts from: Head, or the snapshot
	// of the checkout as it was.
	Base string
	// Files are the checkout's staged, unstaged and untracked files that
	// differ from Head (deleted ones included).
	Files []string
	// Ignored are the ignored files the environment asked for: in the
	// copy, outside its base and its diff.
	Ignored []string
	// Skipped are what the snapshot could not take, with why (a nested
	// repository, a socket).
	Skipped []string
}

// Summary says in a line what the copy started from.
func (o Origin) Summary(repo string) string {
	if len(o.Files) == 0 {
		s := fmt.Sprintf("the working copy starts from %s at %.12s (no uncommitted changes)", repo, o.Head)
		if len(o.Ignored) > 0 {
			s += fmt.Sprintf("; with %d ignored file(s) the environment asks for (%s)", len(o.Ignored), listSome(o.Ignored, 5))
		}
		return s
	}
	s := fmt.Sprintf("the working copy starts from %s as it is: %.12s plus %d uncommitted or untracked file(s) (%s), recorded as base %.12s",
		repo, o.Head, len(o.Files), listSome(o.Files, 5), o.Base)
	if len(o.Ignored) > 0 {
		s += fmt.Sprintf("; with %d ignored file(s) the environment asks for (%s)", len(o.Ignored), listSome(o.Ignored, 5))
	}
	if len(o.Skipped) > 0 {
		s += "; left out: " + listSome(o.Skipped, 5)
	}
	return s
}

func listSome(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:n], ", ") + fmt.Sprintf(" and %d more", len(xs)-n)
}

// Start puts the repository at from (its HEAD) at dir: Clone does, and
// so does a node's overlay of a shared checkout.
type Start func(ctx context.Context, from, dir string) error

// Tip is what a clone of a repository holds: its HEAD's commit ("" for a
// repository without one) and a digest of all its refs (a clone takes
// every branch and tag).
type Tip struct {
	Commit, Refs string
}

// TipOf reads the tip of the repository at from, as its owner.
func TipOf(ctx context.Context, from string) (Tip, error) {
	fi, err := os.Stat(from)
	if err != nil {
		return Tip{}, err
	}
	out, err := ownerGit(ctx, from, fi, "show-ref", "--head")
	head, _, _ := strings.Cut(out, "\n")
	commit, name, _ := strings.Cut(head, " ")
	if err != nil || name != "HEAD" || !isHash(commit) {
		return Tip{}, nil // no commit yet
	}
	sum := sha256.Sum256([]byte(out))
	return Tip{Commit: commit, Refs: hex.EncodeToString(sum[:])}, nil
}

// AsIs makes the working copy at dir from the repository at src as it
// is: its HEAD (put at dir by start), then (when src has a working tree)
// every staged, unstaged and untracked file that differs from it, ignored
// files left out, committed in the copy as the base snapshot. Nothing is
// written in src: git lists the changes without taking its optional locks
// (the index is not refreshed), run as the repository's owner.
//
// ignored are git glob patterns of ignored files the copy takes all the
// same (an agent's environment asks for them): they stand in the copy as
// they do in the checkout, ignored there too, so neither the base nor the
// diff holds them.
func AsIs(ctx context.Context, src, dir string, ignored []string, start Start) (Origin, error) {
	fi, err := os.Stat(src)
	if err != nil {
		return Origin{}, err
	}
	top, err := ownerGit(ctx, src, fi, "rev-parse", "--show-toplevel")
	top = strings.TrimSpace(top)
	bare := err != nil || top == ""
	from := src
	if !bare {
		from = top
	}
	// What the checkout changed is listed while its HEAD is put at dir:
	// git reading a large checkout takes as long as the start or longer.
	type listing struct {
		entries []pending
		err     error
	}
	listed := make(chan listing, 1)
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if bare {
		listed <- listing{}
	} else {
		go func() {
			entries, err := changed(lctx, top, fi, ignored)
			listed <- listing{entries, err}
		}()
	}
	// A repository with no commit yet starts a copy without one.
	startErr := start(ctx, from, dir)
	if startErr != nil {
		cancel() // its listing is of no use now
	}
	l := <-listed // no git of the listing outlives AsIs
	if startErr != nil {
		return Origin{}, startErr
	}
	if l.err != nil {
		return Origin{}, fmt.Errorf("take the uncommitted changes of %s: %w", top, l.err)
	}
	var o Origin
	o.Head, _ = Head(ctx, dir) // "" for a repository with no commit yet
	if !bare {
		if o.Files, o.Ignored, o.Skipped, err = overlay(top, dir, l.entries); err != nil {
			return Origin{}, fmt.Errorf("take the uncommitted changes of %s: %w", top, err)
		}
	}
	if len(o.Files) > 0 || o.Head == "" {
		msg := "The checkout of " + src + " as it was when the session started"
		if _, err := gitRun(ctx, dir, nil, "add", "--all", "--", "."); err != nil {
			return Origin{}, err
		}
		if _, err := gitRun(ctx, dir, nil, "-c", "user.name=paddock", "-c", "user.email=paddock@localhost",
			"commit", "--quiet", "--allow-empty", "--no-verify", "-m", msg); err != nil {
			return Origin{}, err
		}
	}
	if o.Base, err = Head(ctx, dir); err != nil {
		return Origin{}, err
	}
	return o, nil
}

// pending is a path of the checkout git lists: changed from HEAD, or
// untracked, or ignored and asked for.
type pending struct {
	path    string
	ignored bool
}

// changed lists every path of the checkout at top that git says differs
// from HEAD (or is untracked and not ignored), then the ignored files
// asked for.
func changed(ctx context.Context, top string, fi os.FileInfo, ignored []string) ([]pending, error) {
	// Untracked files as the person's own git shows them: a repository
	// that says status.showUntrackedFiles=no (a home directory's, say)
	// keeps its untracked files out.
	untracked := "--untracked-files=all"
	if v, _ := ownerGit(ctx, top, fi, "config", "--get", "status.showUntrackedFiles"); strings.TrimSpace(v) == "no" {
		untracked = "--untracked-files=no"
	}
	out, err := ownerGit(ctx, top, fi, "--no-optional-locks",
		"status", "--porcelain=v1", "-z", untracked, "--no-renames", "--ignore-submodules=all")
	if err != nil {
		return nil, err
	}
	// The paths status lists (after its "XY " code).
	var entries []pending
	for _, e := range strings.Split(out, "\x00") {
		if len(e) >= 4 {
			entries = append(entries, pending{path: e[3:]})
		}
	}
	if len(ignored) > 0 {
		args := []string{"--no-optional-locks", "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--"}
		for _, g := range ignored {
			args = append(args, ":(glob)"+g)
		}
		more, err := ownerGit(ctx, top, fi, args...)
		if err != nil {
			return nil, fmt.Errorf("list the ignored files the environment asks for: %w", err)
		}
		for _, p := range strings.Split(more, "\x00") {
			if p != "" {
				entries = append(entries, pending{path: p, ignored: true})
			}
		}
	}
	return entries, nil
}

// overlay copies into the copy at dir the listed files of the checkout
// at top, and removes those the checkout removed. It returns the paths
// taken and what it left out.
func overlay(top, dir string, entries []pending) (files, taken, skipped []string, err error) {
	srcRoot, err := os.OpenRoot(top)
	if err != nil {
		return nil, nil, nil, err
	}
	defer srcRoot.Close()
	var changes []Change
	for _, e := range entries {
		p := e.path
		if strings.HasSuffix(p, "/") {
			skipped = append(skipped, strings.TrimSuffix(p, "/")+" (a nested repository)")
			continue
		}
		if !safePath(p) {
			skipped = append(skipped, p+" (a name the copy does not take)")
			continue
		}
		st, err := srcRoot.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrPermission):
			skipped = append(skipped, p+" (not readable)")
			continue
		case err != nil, st.IsDir():
			// Gone, or no longer reached as a file (a directory in its
			// place, a link or file where a parent directory was): what
			// stands there now is listed on its own.
			changes = append(changes, Change{Path: p})
		case st.Mode()&fs.ModeSymlink != 0:
			target, err := srcRoot.Readlink(p)
			if err != nil {
				skipped = append(skipped, p+" (not readable)")
				continue
			}
			changes = append(changes, Change{Path: p, Mode: "120000", Data: []byte(target)})
		case st.Mode().IsRegular():
			f, err := srcRoot.Open(p)
			if err != nil {
				skipped = append(skipped, p+" (not readable)")
				continue
			}
			f.Close()
			mode := "100644"
			if st.Mode()&0o111 != 0 {
				mode = "100755"
			}
			changes = append(changes, Change{Path: p, Mode: mode})
		default:
			skipped = append(skipped, p+" (a "+Kind(st.Mode())+")")
			continue
		}
		if e.ignored {
			taken = append(taken, p)
		} else {
			files = append(files, p)
		}
	}
	return files, taken, skipped, writeChanges(dir, changes, srcRoot)
}

// Enclosing is the top of the git repository dir is in: the nearest
// directory, dir or above, holding a .git.
func Enclosing(dir string) (string, bool) {
	for {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}
