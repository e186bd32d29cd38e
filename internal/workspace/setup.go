package workspace

import (
	"context"
	"fmt"
	"strings"
)

// Tracked lists the files tracked at commit base whose path keep accepts,
// path → blob ID (the content's hash: two commits with the same blob for
// a file have the same file).
func Tracked(ctx context.Context, dir, base string, keep func(path string) bool) (map[string]string, error) {
	if !isHash(base) {
		return nil, errBase(base)
	}
	out, err := gitRun(ctx, dir, nil, "ls-tree", "-r", "-z", "--full-tree", base)
	if err != nil {
		return nil, err
	}
	files := map[string]string{}
	for _, rec := range strings.Split(out, "\x00") {
		meta, path, ok := strings.Cut(rec, "\t")
		if !ok {
			continue
		}
		f := strings.Fields(meta) // MODE TYPE OID
		if len(f) == 3 && f[1] == "blob" && keep(path) {
			files[path] = f[2]
		}
	}
	return files, nil
}

// Untracked lists the files of the working copy git does not track,
// ignored ones included (node_modules, .venv): what a setup script left
// beside the repository's own files. Nested repositories are not listed.
func Untracked(ctx context.Context, dir string) ([]string, error) {
	out, err := gitRun(ctx, dir, nil, "ls-files", "--others", "-z")
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, p := range strings.Split(out, "\x00") {
		if p != "" && !strings.HasSuffix(p, "/") {
			paths = append(paths, p)
		}
	}
	return paths, nil
}

// RestoreTracked puts every tracked file back as it is at base and lists
// those that differed, leaving untracked files alone: what setup changed
// in the repository's own files is not part of the environment.
func RestoreTracked(ctx context.Context, dir, base string) ([]string, error) {
	if !isHash(base) {
		return nil, errBase(base)
	}
	out, err := gitRun(ctx, dir, nil, "diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", base, "--")
	if err != nil {
		return nil, err
	}
	var changed []string
	for _, p := range strings.Split(out, "\x00") {
		if p != "" {
			changed = append(changed, p)
		}
	}
	if len(changed) == 0 {
		return nil, nil
	}
	_, err = gitRun(ctx, dir, nil, "reset", "--hard", "--quiet", "--no-recurse-submodules", base)
	return changed, err
}

func errBase(base string) error {
	return fmt.Errorf("%w: base %q is not a commit name", ErrUntrusted, base)
}

// Tree is the ID of commit base's tree: the same files have the same tree.
func Tree(ctx context.Context, dir, base string) (string, error) {
	if !isHash(base) {
		return "", errBase(base)
	}
	out, err := gitRun(ctx, dir, nil, "rev-parse", "--verify", "--end-of-options", base+"^{tree}")
	return strings.TrimSpace(out), err
}
