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
// with, offline.
type Workstation struct {
	// Paths are shown read-only at their own path (secrets and sockets in
	// them masked, as for every read-only path).
	Paths []string
	// Bin are appended to the commands' PATH.
	Bin []string
	// ModCache is the Go module cache (GOMODCACHE), "" for none.
	ModCache string
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
	return w
}

// env adds what w lends to a command's variables: its toolchains after
// the system's on PATH, its module cache unless the session's own
// dependency caches stand in.
func (w Workstation) env(vars map[string]string, deps bool) {
	if len(w.Bin) > 0 {
		vars["PATH"] += ":" + strings.Join(w.Bin, ":")
	}
	if w.ModCache != "" && !deps {
		vars["GOMODCACHE"] = w.ModCache
	}
}
