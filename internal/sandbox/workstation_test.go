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

// TestLendsTheGoBuildCache: the developer's Go build cache is found as
// their go command finds it, and lent only when it is one.
func TestLendsTheGoBuildCache(t *testing.T) {
	home := t.TempDir()
	cache := func(dir string) string {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "README"), []byte("This directory holds cached build artifacts from the Go build system.\n"), 0o644))
		return dir
	}
	def, xdg, set, file := cache(filepath.Join(home, ".cache/go-build")), cache(filepath.Join(home, "xdg/go-build")),
		cache(filepath.Join(home, "set")), cache(filepath.Join(home, "file"))
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".config/go"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, "goenv"), []byte("GOPRIVATE=x\nGOCACHE="+file+"\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(home, "plain"), 0o755))
	require.NoError(t, os.Symlink(set, filepath.Join(home, "link")))
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, def},
		{map[string]string{"XDG_CACHE_HOME": filepath.Join(home, "xdg")}, xdg},
		{map[string]string{"GOCACHE": set}, set},
		{map[string]string{"GOCACHE": filepath.Join(home, "link")}, set},
		{map[string]string{"GOENV": filepath.Join(home, "goenv")}, file},
		{map[string]string{"GOENV": filepath.Join(home, "goenv"), "GOCACHE": set}, set},
		{map[string]string{"GOCACHE": "off"}, ""},
		{map[string]string{"GOCACHE": filepath.Join(home, "plain")}, ""}, // not a Go build cache
		{map[string]string{"GOCACHE": filepath.Join(home, "missing")}, ""},
	} {
		w := Lend(func(k string) string { return c.env[k] }, home)
		require.Equal(t, c.want, w.GoCache, "%v", c.env)
		if c.want != "" {
			require.Equal(t, map[string]string{GoBuildCache: c.want}, w.Caches())
		} else {
			require.Nil(t, w.Caches())
		}
	}
}

// TestLendsTheNpmCache: the developer's npm content cache is found as
// npm finds it, lent only when it is one, and commands then use npm's
// cache in the session's build cache, preferring what it holds.
func TestLendsTheNpmCache(t *testing.T) {
	home := t.TempDir()
	cache := func(dir string) string {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "_cacache", "index-v5"), 0o755))
		return filepath.Join(dir, "_cacache")
	}
	def, set, rc := cache(filepath.Join(home, ".npm")), cache(filepath.Join(home, "set")), cache(filepath.Join(home, "rc"))
	require.NoError(t, os.MkdirAll(filepath.Join(home, "plain", "_cacache"), 0o755))
	for _, c := range []struct {
		env    map[string]string
		npmrc  string
		want   string
		caches map[string]string
	}{
		{map[string]string{}, "", def, map[string]string{"npm/_cacache": def}},
		{map[string]string{"npm_config_cache": filepath.Join(home, "set")}, "", set, map[string]string{"npm/_cacache": set}},
		{map[string]string{"NPM_CONFIG_CACHE": filepath.Join(home, "set")}, "cache=~/rc\n", set, map[string]string{"npm/_cacache": set}},
		{map[string]string{}, "registry=https://example.com/\ncache = ~/rc\n", rc, map[string]string{"npm/_cacache": rc}},
		{map[string]string{"npm_config_cache": filepath.Join(home, "plain")}, "", "", nil}, // no index: not npm's
		{map[string]string{"npm_config_cache": "relative"}, "", "", nil},
	} {
		require.NoError(t, os.WriteFile(filepath.Join(home, ".npmrc"), []byte(c.npmrc), 0o644))
		w := Lend(func(k string) string { return c.env[k] }, home)
		require.Equal(t, c.want, w.NpmCache, "%v %q", c.env, c.npmrc)
		require.Equal(t, c.caches, w.Caches())
		vars := map[string]string{}
		w.env(vars, false)
		if c.want != "" {
			require.Equal(t, map[string]string{"npm_config_cache": CacheMount + "/npm", "npm_config_prefer_offline": "true"}, vars)
		} else {
			require.Empty(t, vars)
		}
	}
	vars := map[string]string{}
	Lend(func(string) string { return "" }, home).env(vars, true)
	require.Empty(t, vars, "the session's own dependency caches stand in")
}
