package local

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/datadir"
)

func TestSocketPath(t *testing.T) {
	run := t.TempDir()
	dir := t.TempDir()
	env := map[string]string{"XDG_RUNTIME_DIR": run}
	getenv := func(k string) string { return env[k] }
	p, err := SocketPath(getenv, dir)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(run, "paddock"), filepath.Dir(p))
	fi, err := os.Stat(filepath.Dir(p))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())

	// Without XDG_RUNTIME_DIR (su, ssh): the data directory's own run/,
	// out of other users' reach, unlike a name in /tmp they could take.
	delete(env, "XDG_RUNTIME_DIR")
	p, err = SocketPath(getenv, dir)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "run"), filepath.Dir(p))

	// A directory others may enter is refused, with what to do.
	env["XDG_RUNTIME_DIR"] = run
	require.NoError(t, os.Chmod(filepath.Join(run, "paddock"), 0o755))
	_, err = SocketPath(getenv, dir)
	require.ErrorContains(t, err, "yours alone")
	require.ErrorContains(t, err, "XDG_RUNTIME_DIR")

	// Two data directories, two sockets.
	require.NoError(t, os.Chmod(filepath.Join(run, "paddock"), 0o700))
	a, _ := SocketPath(getenv, "/a")
	b, _ := SocketPath(getenv, "/b")
	require.NotEqual(t, a, b)
	require.True(t, strings.HasSuffix(a, ".sock"))
}

// TestMismatch: a server program of another build than the client is
// refused, saying both; one that recorded no build, or the same, is not.
func TestMismatch(t *testing.T) {
	require.NoError(t, mismatch("/usr/bin/paddock-server", "", "abc"))
	require.NoError(t, mismatch("/usr/bin/paddock-server", "abc", ""))
	require.NoError(t, mismatch("/usr/bin/paddock-server", "abc", "abc"))
	err := mismatch("/usr/bin/paddock-server", "abc", "def")
	require.ErrorContains(t, err, "paddock-server on PATH (/usr/bin/paddock-server) is build def and this paddock is build abc")
	require.ErrorContains(t, err, "go build -o DIR ./cmd/paddock ./cmd/paddock-server")
	self, err := os.Executable()
	require.NoError(t, err)
	require.NoError(t, matches(filepath.Join(filepath.Dir(self), ServerName)), "installed beside: taken as it is")
}

// TestOutdatedAndStatus: a background server whose recorded build is
// not the server program's is named with what to do; status names the
// holder's build.
func TestOutdatedAndStatus(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	src, dir := t.TempDir(), t.TempDir()
	program := filepath.Join(t.TempDir(), ServerName)
	run := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=true", "GOTOOLCHAIN=local", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
	}
	require.NoError(t, os.WriteFile(filepath.Join(src, "go.mod"), []byte("module example.com/server\n\ngo 1.22\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644))
	run("git", "init", "-q")
	run("git", "add", ".")
	run("git", "commit", "-qm", "server")
	run("go", "build", "-o", program, ".")
	built := datadir.BuildOf(program)
	require.NotEmpty(t, built)

	require.Empty(t, Outdated(program, dir), "no server holds it")
	require.Contains(t, Status(dir), "no paddock server holds "+dir)
	l, err := datadir.Lock(dir)
	require.NoError(t, err)
	defer l.Unlock()
	record := func(kind, build string) {
		t.Helper()
		l.Record("unix:/s.sock", kind == "background")
		rec := "unix:/s.sock\n" + strconv.Itoa(os.Getpid()) + "\n" + kind + "\n" + build + "\n"
		require.NoError(t, os.WriteFile(filepath.Join(dir, "lock"), []byte(rec), 0o600))
	}
	record("background", built)
	require.Empty(t, Outdated(program, dir), "the same build")
	require.Contains(t, Status(dir), "a background paddock server (process "+strconv.Itoa(os.Getpid())+", build "+built+")")
	record("background", "0123456789ab")
	note := Outdated(program, dir)
	require.Contains(t, note, "runs build 0123456789ab, not the build of "+program+" ("+built+")")
	require.Contains(t, note, "paddock server stop, then this command again")
	record("serve", "0123456789ab")
	require.Empty(t, Outdated(program, dir), "an operator's paddock serve is theirs to restart")
}
