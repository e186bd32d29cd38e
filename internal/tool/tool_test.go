package tool

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
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

// TestWrittenFilesBelongToTheSandboxUser: what the host's file tools
// create is the sandbox user's, so the agent's commands can edit it.
func TestWrittenFilesBelongToTheSandboxUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("only root hands files to another user")
	}
	env := setup(t)
	env.Owner = 61000
	_, err := run(t, env, "write_file", `{"path":"new/deep/c.txt","content":"x"}`)
	require.NoError(t, err)
	for _, p := range []string{"new", "new/deep", "new/deep/c.txt"} {
		fi, err := os.Stat(filepath.Join(env.Root, p))
		require.NoError(t, err)
		require.Equal(t, uint32(61000), fi.Sys().(*syscall.Stat_t).Uid, p)
	}
}

// TestSpecialFilesAndGitAreRefused: a named pipe is refused, not waited
// on; paths inside any .git are refused.
func TestSpecialFilesAndGitAreRefused(t *testing.T) {
	env := setup(t)
	require.NoError(t, syscall.Mkfifo(filepath.Join(env.Root, "pipe"), 0o644))
	// A link the agent made to .git: writing through it would reach the
	// configuration host git reads.
	require.NoError(t, os.MkdirAll(filepath.Join(env.Root, ".git", "info"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(env.Root, ".git", "config"), []byte("[core]\n"), 0o644))
	require.NoError(t, os.Symlink(".git", filepath.Join(env.Root, "g")))
	for _, tc := range []struct{ name, args, want string }{
		{"read_file", `{"path":"pipe"}`, "not a regular file"},
		{"write_file", `{"path":"pipe","content":"x"}`, "not a regular file"},
		{"edit_file", `{"path":"pipe","old":"a","new":"b"}`, "not a regular file"},
		{"list_dir", `{"path":"pipe"}`, "not a directory"},
		{"write_file", `{"path":".git/config","content":"x"}`, "inside a .git directory"},
		{"write_file", `{"path":"sub/.GIT/hooks/pre-commit","content":"x"}`, "inside a .git directory"},
		{"read_file", `{"path":"x/../.git/config"}`, "inside a .git directory"},
		{"write_file", `{"path":"g/config","content":"[filter \"x\"]\n"}`, "symbolic link"},
		{"write_file", `{"path":"g/info/attributes","content":"* filter=x\n"}`, "symbolic link"},
		{"edit_file", `{"path":"g/config","old":"[core]","new":"[x]"}`, "symbolic link"},
	} {
		_, err := run(t, env, tc.name, tc.args)
		require.ErrorContains(t, err, tc.want, tc.name+" "+tc.args)
	}
	cfg, err := os.ReadFile(filepath.Join(env.Root, ".git", "config"))
	require.NoError(t, err)
	require.Equal(t, "[core]\n", string(cfg), "nothing reached .git")
	require.NoFileExists(t, filepath.Join(env.Root, ".git", "info", "attributes"))
}
