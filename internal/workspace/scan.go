package workspace

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// MaxFileSize is the largest file the host reads from a working copy for
// the diff and the search tool; larger ones (a sparse file of terabytes
// costs the agent nothing) are left out and the diff says so.
const MaxFileSize = 100 << 20

// maxLeftOut bounds how many paths one scan may leave out.
const maxLeftOut = 10000

// MaxNames bounds the names (paths) of a working copy the host walks: the
// file budget bounds its files, but a hard link is a name without a file,
// and every name costs the host (this walk, git's index) after each call.
var MaxNames = 1_000_000

// ErrTooManyNames says a working copy has more names than MaxNames.
var ErrTooManyNames = fmt.Errorf("the working copy has more than %d paths (files and links to them): remove what the session does not need", MaxNames)

// leftOut is a path of the working copy the host does not let git read,
// and why.
type leftOut struct {
	Path, Why string
}

// scan walks a working copy (not its own .git) for what host git must
// not read: nested repositories whose .git is a file or a link (it would
// be followed to wherever it points) or holds anything but directories and
// regular files (git would block opening a planted named pipe), and files
// larger than MaxFileSize. It never opens a file, stops at MaxNames
// names, and ends with ctx.
func scan(ctx context.Context, dir string) ([]leftOut, error) {
	var out []leftOut
	names := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if names++; names > MaxNames {
			return ErrTooManyNames
		}
		if names%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			return nil // unreadable: git will say so itself
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == ".git" {
			return filepath.SkipDir
		}
		if len(out) > maxLeftOut {
			return fmt.Errorf("the working copy has more than %d paths the host will not read (nested repositories, files over %d MiB)", maxLeftOut, MaxFileSize>>20)
		}
		if d.Name() == ".git" {
			parent := filepath.Dir(rel)
			if !d.IsDir() {
				out = append(out, leftOut{parent, "a nested repository whose .git is a " + Kind(d.Type()) + " (not followed)"})
				return nil
			}
			if bad := irregular(p); bad != "" {
				out = append(out, leftOut{parent, "a nested repository holding a " + bad + " (not read)"})
			} else if ref := borrows(p); ref != "" {
				out = append(out, leftOut{parent, "a nested repository whose " + ref + " points elsewhere (not followed)"})
			}
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil && fi.Size() > MaxFileSize {
				out = append(out, leftOut{rel, fmt.Sprintf("larger than %d MiB (not read)", MaxFileSize>>20)})
			}
		}
		return nil
	})
	return out, err
}

// irregular names the first thing in a nested .git that is neither a
// directory nor a regular file ("" when there is none).
func irregular(gitDir string) string {
	bad := ""
	_ = filepath.WalkDir(gitDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || bad != "" {
			return filepath.SkipAll
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			bad = Kind(d.Type())
			return filepath.SkipAll
		}
		return nil
	})
	return bad
}

// borrows names the file by which a nested .git would make git read
// another directory ("" when there is none).
func borrows(gitDir string) string {
	for _, f := range []string{"commondir", "gitdir", "objects/info/alternates", "objects/info/http-alternates"} {
		if _, err := os.Lstat(filepath.Join(gitDir, f)); err == nil {
			return ".git/" + f
		}
	}
	return ""
}

// excludes are git pathspecs leaving those paths out.
func excludes(left []leftOut) []string {
	out := make([]string, 0, len(left))
	for _, l := range left {
		out = append(out, ":(exclude,literal)"+l.Path)
	}
	return out
}

// describe lists what was left out, for the diff.
func describe(left []leftOut) []string {
	out := make([]string, 0, len(left))
	for _, l := range left {
		out = append(out, l.Path+": "+l.Why)
	}
	return out
}

// removeLeftOut deletes the nested repositories scan flagged (Go's
// RemoveAll opens no file), so git clean never meets them.
func removeLeftOut(dir string, left []leftOut) error {
	for _, l := range left {
		if strings.HasPrefix(l.Why, "a nested repository") {
			if err := os.RemoveAll(filepath.Join(dir, l.Path)); err != nil {
				return err
			}
		}
	}
	return nil
}
