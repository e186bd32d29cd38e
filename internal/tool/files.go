package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"unicode/utf8"
)

const (
	maxRead = 256 << 10
	// maxEdit bounds the file edit_file reads whole into memory.
	maxEdit = 16 << 20
)

var readFile = Tool{
	Name:   "read_file",
	Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`),
	run: func(_ context.Context, env Env, raw json.RawMessage) (Result, error) {
		var a struct {
			Path string `json:"path"`
		}
		if err := decode(raw, &a); err != nil {
			return Result{}, err
		}
		root, p, err := inRoot(env, a.Path)
		if err != nil {
			return Result{}, err
		}
		defer root.Close()
		data, err := readRegular(root, p, maxRead)
		if err != nil {
			return Result{}, err
		}
		if !utf8.Valid(data) {
			return Result{}, fmt.Errorf("%s is not a text file", a.Path)
		}
		out := string(data)
		if len(data) > maxRead {
			out = out[:maxRead] + fmt.Sprintf("\n[truncated: the file is longer than %d bytes]", maxRead)
		}
		return Result{Output: out}, nil
	},
}

var writeFile = Tool{
	Name:   "write_file",
	Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"],"additionalProperties":false}`),
	run: func(_ context.Context, env Env, raw json.RawMessage) (Result, error) {
		var a struct {
			Path    string  `json:"path"`
			Content *string `json:"content"`
		}
		if err := decode(raw, &a); err != nil {
			return Result{}, err
		}
		if a.Content == nil {
			return Result{}, fmt.Errorf("%w: content is required", ErrArgs)
		}
		root, p, err := inRoot(env, a.Path)
		if err != nil {
			return Result{}, err
		}
		defer root.Close()
		if dir := filepath.Dir(p); dir != "." {
			if err := realPath(root, dir); err != nil {
				return Result{}, err
			}
			if err := mkdirOwned(root, dir, env.Owner); err != nil {
				return Result{}, err
			}
		}
		if err := writeRegular(root, p, []byte(*a.Content), env.Owner); err != nil {
			return Result{}, err
		}
		return Result{Output: fmt.Sprintf("wrote %d bytes to %s", len(*a.Content), p)}, nil
	},
}

var editFile = Tool{
	Name:   "edit_file",
	Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"old":{"type":"string"},"new":{"type":"string"}},"required":["path","old","new"],"additionalProperties":false}`),
	run: func(_ context.Context, env Env, raw json.RawMessage) (Result, error) {
		var a struct {
			Path string  `json:"path"`
			Old  string  `json:"old"`
			New  *string `json:"new"`
		}
		if err := decode(raw, &a); err != nil {
			return Result{}, err
		}
		if err := required("old", a.Old); err != nil {
			return Result{}, err
		}
		if a.New == nil {
			return Result{}, fmt.Errorf("%w: new is required", ErrArgs)
		}
		root, p, err := inRoot(env, a.Path)
		if err != nil {
			return Result{}, err
		}
		defer root.Close()
		data, err := readRegular(root, p, maxEdit)
		if err != nil {
			return Result{}, err
		}
		if len(data) > maxEdit {
			return Result{}, fmt.Errorf("%s is larger than %d bytes; edit_file only edits smaller files", p, maxEdit)
		}
		if err != nil {
			return Result{}, err
		}
		switch n := strings.Count(string(data), a.Old); n {
		case 0:
			return Result{}, fmt.Errorf("the text to replace was not found in %s; read the file and copy it exactly", p)
		case 1:
		default:
			return Result{}, fmt.Errorf("the text to replace occurs %d times in %s; include more context so it is unique", n, p)
		}
		if err := writeRegular(root, p, []byte(strings.Replace(string(data), a.Old, *a.New, 1)), env.Owner); err != nil {
			return Result{}, err
		}
		return Result{Output: "edited " + p}, nil
	},
}

var listDir = Tool{
	Name:   "list_dir",
	Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"additionalProperties":false}`),
	run: func(_ context.Context, env Env, raw json.RawMessage) (Result, error) {
		var a struct {
			Path string `json:"path"`
		}
		if err := decode(raw, &a); err != nil {
			return Result{}, err
		}
		if a.Path == "" {
			a.Path = "."
		}
		root, p, err := inRoot(env, a.Path)
		if err != nil {
			return Result{}, err
		}
		defer root.Close()
		// O_DIRECTORY: a named pipe planted under the name fails at once.
		f, err := root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_DIRECTORY, 0)
		if err != nil {
			return Result{}, err
		}
		defer f.Close()
		entries, err := f.ReadDir(-1)
		if err != nil {
			return Result{}, err
		}
		var names []string
		for _, e := range entries {
			if e.Name() == ".git" {
				continue
			}
			n := e.Name()
			if e.IsDir() {
				n += "/"
			}
			names = append(names, n)
		}
		sort.Strings(names)
		return Result{Output: strings.Join(names, "\n")}, nil
	},
}

// mkdirOwned makes dir and its missing parents inside root, each new one
// owned by owner when non-zero.
func mkdirOwned(root *os.Root, dir string, owner int) error {
	var missing []string
	for d := dir; d != "." && d != "/"; d = filepath.Dir(d) {
		if _, err := root.Lstat(d); err == nil {
			break
		}
		missing = append(missing, d)
	}
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if owner == 0 {
		return nil
	}
	for _, d := range missing {
		if err := root.Lchown(d, owner, owner); err != nil {
			return err
		}
	}
	return nil
}
