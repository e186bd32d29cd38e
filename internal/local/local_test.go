package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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
