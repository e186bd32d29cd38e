package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Workstation is what a developer's own machine lends its sandboxes
// (PADDOCK_EXECUTION=workstation, Paddock running as that developer):
// the toolchains of their PATH that live in their home, and their Go
// module cache, all read-only, so a command builds with what they build
// with, offline; and their Go build cache, read by exact name through
// each session's own (see cachefs), so a session's first build reuses
// what they built.
type Workstation struct {
	// Paths are shown read-only at their own path (secrets and sockets in
	// them masked, as for every read-only path).
	Paths []string
	// Bin are appended to the commands' PATH.
	Bin []string
	// ModCache is the Go module cache (GOMODCACHE), "" for none.
	ModCache string
	// GoCache is the Go build cache (GOCACHE), "" for none.
	GoCache string
	// NpmCache is npm's content cache (the _cacache of its cache
	// directory), "" for none.
	NpmCache string
}

// Directories of a session's build cache: GoBuildCache is the one GOCACHE
// names, NpmCacheDir npm's cache (npm_config_cache, on a workstation
// lending npm's); the developer's own are lent to them.
const (
	GoBuildCache = "go-build"
	NpmCacheDir  = "npm"
)

// Caches are the host directories lent to paths of each session's build
// cache.
func (w Workstation) Caches() map[string]string {
	lend := map[string]string{}
	if w.GoCache != "" {
		lend[GoBuildCache] = w.GoCache
	}
	if w.NpmCache != "" {
		lend[NpmCacheDir+"/_cacache"] = w.NpmCache
	}
	if len(lend) == 0 {
		return nil
	}
	return lend
}

// Lend finds what the machine of the user whose home is home lends:
// getenv is their environment (PATH, GOMODCACHE, GOPATH). A PATH entry
// outside home is left out (the system trees are shown anyway); one
// named bin brings its parent, the toolchain's root (~/sdk/go1.26/bin
// brings ~/sdk/go1.26, its standard library), unless that is the home
// itself or ~/.local, which hold far more than a toolchain.
func Lend(getenv func(string) string, home string) Workstation {
	var w Workstation
	if home == "" || home == "/" {
		return w
	}
	home = filepath.Clean(home)
	inHome := func(p string) bool { return strings.HasPrefix(p, home+"/") }
	isDir := func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && fi.IsDir()
	}
	add := func(p string) {
		for _, q := range w.Paths {
			if p == q || strings.HasPrefix(p, q+"/") {
				return
			}
		}
		w.Paths = slices.DeleteFunc(append(w.Paths, p), func(q string) bool { return strings.HasPrefix(q, p+"/") })
	}
	for _, d := range filepath.SplitList(getenv("PATH")) {
		d = filepath.Clean(d)
		if !filepath.IsAbs(d) || !inHome(d) || !isDir(d) || slices.Contains(w.Bin, d) {
			continue
		}
		w.Bin = append(w.Bin, d)
		root := d
		if parent := filepath.Dir(d); filepath.Base(d) == "bin" && parent != home && parent != filepath.Join(home, ".local") {
			root = parent
		}
		add(root)
	}
	mod := getenv("GOMODCACHE")
	if mod == "" {
		gopath := filepath.Join(home, "go")
		if list := filepath.SplitList(getenv("GOPATH")); len(list) > 0 && list[0] != "" {
			gopath = list[0]
		}
		mod = filepath.Join(gopath, "pkg", "mod")
	}
	if mod = filepath.Clean(mod); filepath.IsAbs(mod) && isDir(mod) {
		w.ModCache = mod
		add(mod)
	}
	w.GoCache = goCache(getenv, home)
	w.NpmCache = npmCache(getenv, home)
	return w
}

// npmCache is the content cache of the developer's npm cache directory
// as npm finds it (npm_config_cache in their environment, else cache= in
// their ~/.npmrc, else ~/.npm), resolved; "" when it holds none.
func npmCache(getenv func(string) string, home string) string {
	dir := getenv("npm_config_cache")
	if dir == "" {
		dir = getenv("NPM_CONFIG_CACHE")
	}
	if dir == "" {
		if data, err := os.ReadFile(filepath.Join(home, ".npmrc")); err == nil {
			for line := range strings.Lines(string(data)) {
				if k, v, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == "cache" {
					dir = strings.TrimSpace(v)
				}
			}
		}
		if rest, ok := strings.CutPrefix(dir, "~/"); ok {
			dir = filepath.Join(home, rest)
		}
	}
	if dir == "" {
		dir = filepath.Join(home, ".npm")
	}
	if !filepath.IsAbs(dir) {
		return ""
	}
	real, err := filepath.EvalSymlinks(filepath.Join(dir, "_cacache"))
	if err != nil {
		return ""
	}
	if fi, err := os.Stat(filepath.Join(real, "index-v5")); err != nil || !fi.IsDir() {
		return ""
	}
	return real
}

// goCache is the developer's Go build cache as their go command finds
// it (GOCACHE in their environment, else in their go env file, else
// their user cache directory's go-build), resolved; "" when it is off or
// is not one: a Go build cache holds Go's README, which says so.
func goCache(getenv func(string) string, home string) string {
	dir := getenv("GOCACHE")
	if dir == "" {
		envFile := getenv("GOENV")
		if envFile == "" {
			config := getenv("XDG_CONFIG_HOME")
			if !filepath.IsAbs(config) {
				config = filepath.Join(home, ".config")
			}
			envFile = filepath.Join(config, "go", "env")
		}
		if data, err := os.ReadFile(envFile); err == nil && filepath.IsAbs(envFile) {
			for line := range strings.Lines(string(data)) {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), "GOCACHE="); ok {
					dir = v
				}
			}
		}
	}
	if dir == "" {
		cache := getenv("XDG_CACHE_HOME")
		if !filepath.IsAbs(cache) {
			cache = filepath.Join(home, ".cache")
		}
		dir = filepath.Join(cache, "go-build")
	}
	if !filepath.IsAbs(dir) {
		return "" // "off", or a path go itself refuses
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return ""
	}
	readme, err := os.ReadFile(filepath.Join(real, "README"))
	if err != nil || !strings.Contains(string(readme), "Go build system") {
		return ""
	}
	return real
}

// env adds what w lends to a command's variables: its toolchains after
// the system's on PATH; unless the session's own dependency caches stand
// in, its module cache, and npm's cache in the session's build cache
// (where the developer's is lent), preferring what it holds to asking
// the registry again.
func (w Workstation) env(vars map[string]string, deps bool) {
	if len(w.Bin) > 0 {
		vars["PATH"] += ":" + strings.Join(w.Bin, ":")
	}
	if deps {
		return
	}
	if w.ModCache != "" {
		vars["GOMODCACHE"] = w.ModCache
	}
	if w.NpmCache != "" {
		vars["npm_config_cache"] = CacheMount + "/" + NpmCacheDir
		vars["npm_config_prefer_offline"] = "true"
	}
}
