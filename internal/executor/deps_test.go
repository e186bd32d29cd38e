package executor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/sandbox"
)

// The dependency caches are a tree of their own: setup fills them in the
// pod and they come back; a command sees them where the package managers
// look, and what it changes there is undone by the next push.
func TestDependencyCaches(t *testing.T) {
	c, dir := pod(t)
	ctx := context.Background()
	host, deps := t.TempDir(), t.TempDir()
	write(t, host, "main.go", "package main\n")
	work, depRoot := openRoot(t, host), openRoot(t, deps)

	// Setup: both trees pushed, the caches filled, both pulled back.
	_, err := c.Push(ctx, Work, work)
	require.NoError(t, err)
	_, err = c.Push(ctx, Deps, depRoot)
	require.NoError(t, err)
	var out strings.Builder
	res, err := c.Run(ctx, sandbox.Command{Place: sandbox.Place{Deps: deps, DepsWritable: true}, ID: "setup", Timeout: time.Minute, Stdout: &out, Stderr: &out,
		Script: `mkdir -p "$GOMODCACHE/example.com/m@v1" && echo module > "$GOMODCACHE/example.com/m@v1/go.mod" && mkdir node_modules && echo dep > node_modules/x.js`}, nil)
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, out.String())
	_, err = c.Pull(ctx, Work, Into{Root: work, UID: -1, Limit: 1 << 30})
	require.NoError(t, err)
	got, err := c.Pull(ctx, Deps, Into{Root: depRoot, UID: -1, Limit: 1 << 30})
	require.NoError(t, err)
	require.Equal(t, 5, got.Written, "four directories and the file")
	b, err := os.ReadFile(filepath.Join(deps, "go/mod/example.com/m@v1/go.mod"))
	require.NoError(t, err)
	require.Equal(t, "module\n", string(b))
	require.FileExists(t, filepath.Join(host, "node_modules/x.js"))

	// A command poisons the caches in the pod; the next push undoes it.
	out.Reset()
	res, err = c.Run(ctx, sandbox.Command{Place: sandbox.Place{Deps: deps}, ID: "poison", Timeout: time.Minute, Stdout: &out, Stderr: &out,
		Script: `echo evil > "$GOMODCACHE/example.com/m@v1/go.mod"; echo "$GOMODCACHE"`}, nil)
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, out.String())
	require.Equal(t, filepath.Join(dir, "deps")+"/go/mod\n", out.String(), "the caches are the executor's tree")
	sent, err := c.Push(ctx, Deps, depRoot)
	require.NoError(t, err)
	require.Equal(t, 1, sent.Written)
	b, err = os.ReadFile(filepath.Join(dir, "deps/go/mod/example.com/m@v1/go.mod"))
	require.NoError(t, err)
	require.Equal(t, "module\n", string(b))

	// A command without caches has none of their variables.
	out.Reset()
	_, err = c.Run(ctx, sandbox.Command{ID: "plain", Timeout: time.Minute, Stdout: &out, Script: `echo "[$GOMODCACHE]"`}, nil)
	require.NoError(t, err)
	require.Equal(t, "[]\n", out.String())
	_, err = c.Manifest(ctx, "elsewhere")
	require.ErrorContains(t, err, `no tree "elsewhere"`)
}
