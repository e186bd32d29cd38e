package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLend(t *testing.T) {
	home := t.TempDir()
	for _, d := range []string{"sdk/go1.26/bin", ".local/bin", "go/bin", "go/pkg/mod", "bin", ".nvm/versions/node/v20/bin"} {
		require.NoError(t, os.MkdirAll(filepath.Join(home, d), 0o755))
	}
	env := map[string]string{"PATH": filepath.Join(home, "sdk/go1.26/bin") + ":/usr/bin:" + filepath.Join(home, ".local/bin") + ":" +
		filepath.Join(home, "bin") + ":" + filepath.Join(home, "go/bin") + ":" + filepath.Join(home, "missing/bin") + ":relative/bin:" +
		filepath.Join(home, ".nvm/versions/node/v20/bin") + ":" + filepath.Join(home, "sdk/go1.26/bin")}
	w := Lend(func(k string) string { return env[k] }, home)
	require.Equal(t, []string{filepath.Join(home, "sdk/go1.26/bin"), filepath.Join(home, ".local/bin"), filepath.Join(home, "bin"),
		filepath.Join(home, "go/bin"), filepath.Join(home, ".nvm/versions/node/v20/bin")}, w.Bin)
	// A bin brings its toolchain's root, but never the home or ~/.local
	// whole; the module cache lies in ~/go, shown already.
	require.Equal(t, []string{filepath.Join(home, "sdk/go1.26"), filepath.Join(home, ".local/bin"), filepath.Join(home, "bin"),
		filepath.Join(home, "go"), filepath.Join(home, ".nvm/versions/node/v20")}, w.Paths)
	require.Equal(t, filepath.Join(home, "go/pkg/mod"), w.ModCache)

	vars := map[string]string{"PATH": "/usr/bin"}
	w.env(vars, false)
	require.Equal(t, filepath.Join(home, "go/pkg/mod"), vars["GOMODCACHE"])
	require.Contains(t, vars["PATH"], "/usr/bin:"+filepath.Join(home, "sdk/go1.26/bin"))
	vars = map[string]string{"GOMODCACHE": "/deps"}
	w.env(vars, true)
	require.Equal(t, "/deps", vars["GOMODCACHE"], "the session's own dependency caches stand in")

	// GOMODCACHE and GOPATH say where the cache is; none lends nothing.
	env["GOMODCACHE"] = filepath.Join(home, "missing")
	require.Empty(t, Lend(func(k string) string { return env[k] }, home).ModCache)
	require.Empty(t, Lend(func(string) string { return "" }, "/").Paths)
}
