package workspace

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
)

// Change is one file of a checkpoint: how it differs from the base. Mode
// is git's ("100644", "100755", "120000" for a symbolic link, whose Data
// is its target); "" is a deletion.
type Change struct {
	Path string
	Mode string
	Data []byte
}

// MaxCheckpoint bounds the content of one checkpoint (every changed
// file's, together).
const MaxCheckpoint = 64 << 20

// ErrCheckpointTooLarge says a copy differs from its base by more than a
// checkpoint holds.
var ErrCheckpointTooLarge = fmt.Errorf("the changed files hold more than %d MiB", MaxCheckpoint>>20)

// Changes is the state of the copy at dir relative to base, as a diff
// records it: its tree, and every file that differs with its content (read
// from the objects git wrote for the tree, so a link is its target, never
// what it points at). Nested repositories are left out, as in a diff.
func Changes(ctx context.Context, dir, base string) (string, []Change, error) {
	if !isHash(base) {
		return "", nil, errBase(base)
	}
	tree, _, env, done, err := stage(ctx, dir, base)
	if err != nil {
		return "", nil, err
	}
	defer done()
	raw, err := gitRun(ctx, dir, env, "diff-tree", "-r", "-z", "--no-renames", "--end-of-options", base, tree)
	if err != nil {
		return "", nil, err
	}
	var changes []Change
	var wanted []string
	fields := strings.Split(strings.TrimSuffix(raw, "\x00"), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		// ":OLDMODE NEWMODE OLDID NEWID STATUS", then the path.
		meta := strings.Fields(strings.TrimPrefix(fields[i], ":"))
		if len(meta) != 5 {
			return "", nil, fmt.Errorf("git diff-tree: unexpected line %q", fields[i])
		}
		mode, id, p := meta[1], meta[3], fields[i+1]
		switch {
		case meta[4] == "D":
			changes = append(changes, Change{Path: p})
		case mode == "160000":
			// A nested repository: a commit reference, not files.
		default:
			changes = append(changes, Change{Path: p, Mode: mode})
			wanted = append(wanted, id)
		}
	}
	if len(wanted) == 0 {
		return tree, changes, nil
	}
	out, err := gitRunIn(ctx, dir, env, []byte(strings.Join(wanted, "\n")+"\n"), "cat-file", "--batch")
	if errors.Is(err, ErrTooLarge) {
		return "", nil, ErrCheckpointTooLarge
	}
	if err != nil {
		return "", nil, err
	}
	r := bufio.NewReader(strings.NewReader(out))
	total := 0
	for i := range changes {
		if changes[i].Mode == "" {
			continue
		}
		head, err := r.ReadString('\n')
		if err != nil {
			return "", nil, fmt.Errorf("git cat-file: %w", err)
		}
		parts := strings.Fields(head)
		if len(parts) != 3 || parts[1] != "blob" {
			return "", nil, fmt.Errorf("git cat-file: unexpected header %q", head)
		}
		size, err := strconv.Atoi(parts[2])
		if err != nil {
			return "", nil, fmt.Errorf("git cat-file: size %q", parts[2])
		}
		if total += size; total > MaxCheckpoint {
			return "", nil, ErrCheckpointTooLarge
		}
		data := make([]byte, size)
		if _, err := io.ReadFull(r, data); err != nil {
			return "", nil, fmt.Errorf("git cat-file: %w", err)
		}
		if _, err := r.Discard(1); err != nil {
			return "", nil, fmt.Errorf("git cat-file: %w", err)
		}
		changes[i].Data = data
	}
	return tree, changes, nil
}

// Restore makes dir a working copy of repo (an empty one when repo is "")
// at base with changes applied: the copy a checkpoint recorded, made again
// on a node that did not have it. It returns the copy's base, which is
// base itself except for an empty copy (whose first commit is new).
// Changes are written through os.Root: no path, link or name of theirs
// reaches outside dir or into its .git.
func Restore(ctx context.Context, repo, dir, base string, changes []Change) (string, error) {
	if !isHash(base) {
		return "", errBase(base)
	}
	if repo == "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", err
		}
		if err := Init(ctx, dir); err != nil {
			return "", err
		}
		head, err := Head(ctx, dir)
		if err != nil {
			return "", err
		}
		base = head
	} else {
		if err := Clone(ctx, repo, dir); err != nil {
			return "", err
		}
		if _, err := gitRun(ctx, dir, nil, "reset", "--hard", "--quiet", "--no-recurse-submodules", base); err != nil {
			return "", fmt.Errorf("the repository %s no longer has the session's base %s: %w", repo, short(base), err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	// Deletions first: a file may take the place of a removed directory.
	for _, c := range changes {
		if !safePath(c.Path) {
			return "", fmt.Errorf("%w: checkpoint path %q", ErrUntrusted, c.Path)
		}
		if c.Mode == "" {
			if err := root.RemoveAll(c.Path); err != nil {
				return "", fmt.Errorf("restore %s: %w", c.Path, err)
			}
		}
	}
	for _, c := range changes {
		if c.Mode == "" {
			continue
		}
		p := c.Path
		if err := root.RemoveAll(p); err != nil {
			return "", fmt.Errorf("restore %s: %w", p, err)
		}
		if d := path.Dir(p); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return "", fmt.Errorf("restore %s: %w", p, err)
			}
		}
		switch c.Mode {
		case "120000":
			if bytes.IndexByte(c.Data, 0) >= 0 {
				return "", fmt.Errorf("%w: link %q", ErrUntrusted, c.Path)
			}
			err = root.Symlink(string(c.Data), p)
		case "100755":
			err = root.WriteFile(p, c.Data, 0o755)
		case "100644":
			err = root.WriteFile(p, c.Data, 0o644)
		default:
			return "", fmt.Errorf("%w: mode %q of %q", ErrUntrusted, c.Mode, c.Path)
		}
		if err != nil {
			return "", fmt.Errorf("restore %s: %w", p, err)
		}
	}
	return base, nil
}

// safePath says p is a plain relative path inside a copy, outside .git.
func safePath(p string) bool {
	c := path.Clean(p)
	return c == p && c != "." && !path.IsAbs(c) && c != ".." && !strings.HasPrefix(c, "../") && c != ".git" && !strings.HasPrefix(c, ".git/")
}
