package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// Fork makes dir a working copy of the copy at from as it is now: its
// base's history (a bundle, so a base no ref names comes too), then its
// files that differ from fromBase as they are, all committed as the new
// copy's base. What from changed is thus the fork's starting point, and
// the fork's own diff is only its own work. from is hostile (an agent
// wrote it): its files are read as Capture reads them. skipped is what
// could not be carried (a file too large, a nested repository).
func Fork(ctx context.Context, from, fromBase, dir string) (base string, skipped []string, err error) {
	state, err := Capture(ctx, from, fromBase)
	if err != nil {
		return "", nil, err
	}
	bundle, err := BaseBundle(ctx, from, fromBase, "")
	if err != nil {
		return "", nil, err
	}
	if err := Restore(ctx, "", dir, fromBase, [][]byte{bundle}, state.Files); err != nil {
		return "", nil, err
	}
	if err := hardenConfig(ctx, dir); err != nil {
		return "", nil, err
	}
	now, err := Capture(ctx, dir, fromBase)
	if err != nil {
		return "", nil, err
	}
	base, err = Snapshot(ctx, dir, fromBase, now.Tree, "the delegating session's work in progress", Author{})
	if err != nil {
		return "", nil, err
	}
	// HEAD and the index at the new base: the agent's git shows only
	// its own changes.
	if _, err := gitRun(ctx, dir, nil, "reset", "--quiet", "--no-recurse-submodules", base); err != nil {
		return "", nil, err
	}
	return base, state.Skipped, nil
}

// Deliver writes the work of the copy at from (its changes since
// fromBase, a fork of into) into the copy at into: a file into still has
// as it was when forked (or already as from has it) is written; one into
// changed meanwhile (another fork's work delivered first) is a conflict,
// left as into has it. Both copies are hostile: files are read through
// os.Root, never followed, and written by WriteBack's rules. skipped is
// what from changed that could not be carried.
func Deliver(ctx context.Context, from, fromBase, into string) (applied, conflicts, skipped []string, err error) {
	state, err := Capture(ctx, from, fromBase)
	if err != nil {
		return nil, nil, nil, err
	}
	root, err := os.OpenRoot(into)
	if err != nil {
		return nil, nil, nil, err
	}
	defer root.Close()
	var write []Change
	for _, c := range state.Files {
		// A path into's own links would send elsewhere, or one no
		// checkpoint may name, is not written: WriteBack would refuse
		// it midway.
		if !safePath(c.Path) || throughDirs(root, c.Path) != nil {
			conflicts = append(conflicts, c.Path)
			continue
		}
		was, err := baseVersion(ctx, from, fromBase, c.Path)
		if err != nil {
			return nil, nil, nil, err
		}
		now, err := currentVersion(root, c.Path)
		if err != nil {
			return nil, nil, nil, err
		}
		if now.same(was) || now.same(version{present: c.Mode != "", mode: c.Mode, data: c.Data}) {
			write = append(write, c)
			applied = append(applied, c.Path)
			continue
		}
		conflicts = append(conflicts, c.Path)
	}
	if err := WriteBack(into, write); err != nil {
		return nil, nil, nil, err
	}
	return applied, conflicts, state.Skipped, nil
}

// version is a path's content in a copy or a commit: absent, or its git
// mode and bytes (a link's target).
type version struct {
	present bool
	mode    string
	data    []byte
	// other: present but not a regular file or link (never the same).
	other bool
}

func (v version) same(o version) bool {
	if v.other || o.other {
		return false
	}
	return v.present == o.present && (!v.present || v.mode == o.mode && bytes.Equal(v.data, o.data))
}

// baseVersion is path as commit base of the copy at dir has it.
func baseVersion(ctx context.Context, dir, base, path string) (version, error) {
	if !isHash(base) {
		return version{}, errBase(base)
	}
	out, err := gitRun(ctx, dir, nil, "ls-tree", "-z", "--full-tree", "--end-of-options", base, "--", ":(literal)"+path)
	if err != nil {
		return version{}, err
	}
	line := strings.TrimSuffix(out, "\x00")
	if line == "" {
		return version{}, nil
	}
	// "MODE TYPE ID\tPATH"
	meta, _, _ := strings.Cut(line, "\t")
	f := strings.Fields(meta)
	if len(f) != 3 || f[1] != "blob" || !isHash(f[2]) {
		return version{present: true, other: true}, nil
	}
	data, err := gitRun(ctx, dir, nil, "cat-file", "blob", f[2])
	if err != nil {
		return version{}, err
	}
	return version{present: true, mode: f[0], data: []byte(data)}, nil
}

// currentVersion is path as the copy rooted at root has it now.
func currentVersion(root *os.Root, path string) (version, error) {
	c, why, err := readChange(root, path)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return version{}, nil
	case err != nil:
		return version{}, fmt.Errorf("deliver %s: %w", path, err)
	case why != "":
		return version{present: true, other: true}, nil
	}
	return version{present: true, mode: c.Mode, data: c.Data}, nil
}
