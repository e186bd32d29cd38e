package tool

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func setup(t *testing.T) Env {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello world\n"), 0o644))
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("s3cret"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "link")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "secret-link")))
	return Env{Root: dir}
}

func run(t *testing.T, env Env, name, args string) (Result, error) {
	t.Helper()
	return Builtin()[name].Run(context.Background(), env, json.RawMessage(args))
}

func TestFileTools(t *testing.T) {
	env := setup(t)
	r, err := run(t, env, "read_file", `{"path":"a.txt"}`)
	require.NoError(t, err)
	require.Equal(t, "hello world\n", r.Output)
	_, err = run(t, env, "write_file", `{"path":"sub/dir/b.txt","content":"x"}`)
	require.NoError(t, err)
	_, err = run(t, env, "edit_file", `{"path":"a.txt","old":"world","new":"there"}`)
	require.NoError(t, err)
	data, _ := os.ReadFile(filepath.Join(env.Root, "a.txt"))
	require.Equal(t, "hello there\n", string(data))
	_, err = run(t, env, "edit_file", `{"path":"a.txt","old":"absent","new":"x"}`)
	require.ErrorContains(t, err, "not found")
	r, err = run(t, env, "list_dir", `{}`)
	require.NoError(t, err)
	require.Contains(t, r.Output, "sub/")
}

func TestConfinement(t *testing.T) {
	env := setup(t)
	for _, args := range []string{
		`{"path":"../x"}`, `{"path":"/etc/passwd"}`, `{"path":"sub/../../x"}`,
		`{"path":"link/secret"}`, `{"path":"secret-link"}`,
	} {
		_, err := run(t, env, "read_file", args)
		require.Error(t, err, args)
	}
	_, err := run(t, env, "write_file", `{"path":"link/planted","content":"x"}`)
	require.Error(t, err)
	require.NoFileExists(t, filepath.Join(filepath.Dir(env.Root), "planted"))
}

func TestStrictArgs(t *testing.T) {
	env := setup(t)
	for _, args := range []string{``, `{`, `{"path":1}`, `{"path":"a.txt","extra":true}`, `{"path":"a.txt"} {}`, `[]`} {
		_, err := run(t, env, "read_file", args)
		require.ErrorIs(t, err, ErrArgs, args)
	}
	_, err := run(t, env, "write_file", `{"path":"x"}`)
	require.ErrorIs(t, err, ErrArgs)
	_, err = run(t, env, "ask_user", `{"questions":[]}`)
	require.ErrorIs(t, err, ErrArgs)
	r, err := run(t, env, "ask_user", `{"questions":[{"id":"q","question":"ok?","options":["y","n"]}]}`)
	require.NoError(t, err)
	require.Equal(t, "ok?", r.Question.Questions[0].Question)
}

func TestSpecs(t *testing.T) {
	for _, s := range Builtin().Specs() {
		require.NotEmpty(t, s.Description, s.Name)
		require.True(t, json.Valid(s.Schema), s.Name)
	}
}

func TestSearch(t *testing.T) {
	env := setup(t)
	require.NoError(t, os.WriteFile(filepath.Join(env.Root, ".gitignore"), []byte("ignored.txt\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(env.Root, "ignored.txt"), []byte("hello hidden\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(env.Root, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(env.Root, "sub", "b.go"), []byte("package b\n// Hello again\n"), 0o644))
	out, err := exec.Command("git", "-C", env.Root, "init", "-q").CombinedOutput()
	require.NoError(t, err, string(out))
	r, err := run(t, env, "search", `{"pattern":"hel+o","ignoreCase":true}`)
	require.NoError(t, err)
	require.Contains(t, r.Output, "a.txt:1:hello world")
	require.Contains(t, r.Output, "sub/b.go:2:// Hello again")
	require.NotContains(t, r.Output, "hidden", ".gitignore is respected")
	r, err = run(t, env, "search", `{"pattern":"hello","path":"sub"}`)
	require.NoError(t, err)
	require.Equal(t, "no matches", r.Output)
	_, err = run(t, env, "search", `{"pattern":"("}`)
	require.ErrorIs(t, err, ErrArgs)
	_, err = run(t, env, "search", `{"pattern":"x","path":"../.."}`)
	require.Error(t, err)
}
