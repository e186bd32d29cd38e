package executor

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/sandbox"
)

// What a bubblewrap sandbox has fresh for each command (/tmp, the home
// directory) the executor empties before each command, even what a
// command made unreadable; the build cache in the home directory outlives
// commands, but the worker renews it before an environment's setup.
func TestScratchIsFreshForEachCommand(t *testing.T) {
	pool, cert := authority(t)
	dir := t.TempDir()
	tmp, home := filepath.Join(dir, "tmp"), filepath.Join(dir, "home")
	cache := filepath.Join(home, ".cache")
	require.NoError(t, os.MkdirAll(tmp, 0o777))
	require.NoError(t, os.MkdirAll(cache, 0o755))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- (&Server{Workdir: filepath.Join(dir, "work"), Deps: filepath.Join(dir, "deps"), State: filepath.Join(dir, "state"), Clients: pool,
			Scratch: []string{tmp, home}, Cache: cache}).Serve(ctx, ln)
	}()
	t.Cleanup(func() { cancel(); <-done })
	c := Dial(ln.Addr().String(), cert, "")
	t.Cleanup(c.Close)

	run := func(id, script string, setup bool) string {
		t.Helper()
		var out strings.Builder
		res, err := c.Run(ctx, sandbox.Command{Place: sandbox.Place{DepsWritable: setup}, ID: id, Script: script, Timeout: time.Minute, Stdout: &out, Stderr: &out}, nil)
		require.NoError(t, err)
		require.Equal(t, 0, res.ExitCode, out.String())
		return out.String()
	}
	vars := "T=" + tmp + " H=" + home + " C=" + cache + "; "
	run("leave", vars+`set -e; echo x > $T/left; mkdir -p $T/locked/in && echo y > $T/locked/in/f && chmod 000 $T/locked/in $T/locked
echo 'registry=http://evil.example/' > $H/.npmrc; mkdir -p $H/.config/pip && chmod 500 $H/.config; mkdir -p $C/go-build && echo z > $C/go-build/entry`, false)
	require.Equal(t, "tmp:\nhome: .cache\ncache: go-build\n",
		run("look", vars+`echo tmp: $(ls -A $T); echo home: $(ls -A $H); echo cache: $(ls -A $C)`, false),
		"/tmp and home are emptied, the build cache stays")
	require.NoError(t, c.Renew(ctx))
	require.Equal(t, "cache:\n", run("setup", vars+`echo cache: $(ls -A $C)`, true), "renewed for setup: the build cache is empty too")

	// The build cache must be in a scratch directory itself.
	err = (&Server{Workdir: dir, Deps: dir, State: dir, Clients: pool, Scratch: []string{home}, Cache: filepath.Join(home, "a/b")}).Serve(ctx, ln)
	require.ErrorContains(t, err, "must be in scratch directory")
}

// An executor that kills every other process after a command must be the
// first process of its PID namespace: anywhere else it would kill others'.
func TestAloneOnlyAsFirstProcess(t *testing.T) {
	pool, _ := authority(t)
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	err = (&Server{Workdir: dir, Deps: dir, State: dir, Clients: pool, Alone: true}).Serve(context.Background(), ln)
	require.ErrorContains(t, err, "not the first process of its pod")
}

// A directory tree a command made deep is removed in time linear in its
// depth, up to a bound past which it is refused, not walked.
func TestScrubDeepTrees(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, depth int) {
		p := filepath.Join(dir, name)
		require.NoError(t, os.Mkdir(p, 0o755))
		d, err := os.Open(p)
		require.NoError(t, err)
		for range depth { // by handles: the path would pass PATH_MAX
			require.NoError(t, unix.Mkdirat(int(d.Fd()), "d", 0o755))
			fd, err := unix.Openat(int(d.Fd()), "d", unix.O_DIRECTORY|unix.O_RDONLY, 0)
			require.NoError(t, err)
			d.Close()
			d = os.NewFile(uintptr(fd), "d")
		}
		d.Close()
	}
	mk("deep", maxScrubDepth-1)
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer root.Close()
	require.NoError(t, unlock(root, "deep", 0))
	require.NoDirExists(t, filepath.Join(dir, "deep"))
	mk("deeper", maxScrubDepth+1)
	require.ErrorContains(t, unlock(root, "deeper", 0), "nested more than")
}
