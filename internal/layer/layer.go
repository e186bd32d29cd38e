// Package layer keeps what environments' setup scripts produce, as
// images keep what a Dockerfile's steps do: a layer is the dependency
// caches setup filled (Go modules, npm, pip) and the files it left in the
// working copy that git does not track (node_modules, .venv, vendor/),
// keyed by everything that decides them — the project and repository, the
// dependency manifests and lock files at the base commit, the script, its
// network and variables, the toolchains. A later session whose key
// matches starts from the layer instead of running setup: its dependency
// caches are bound read-only into the session's sandboxes, its files
// copied into the new working copy. Layers live under one directory,
// bounded in size; the least recently used go first, never one a live
// session uses.
package layer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// format changes when what a layer holds changes: older layers then miss.
const format = "paddock-layer-1"

// Inputs are everything a setup's result depends on.
type Inputs struct {
	Project string `json:"project"`
	Repo    string `json:"repo"`
	// Manifests are the dependency manifests and lock files at the base
	// commit, path → git blob ID.
	Manifests map[string]string `json:"manifests"`
	Setup     string            `json:"setup"`
	Network   []string          `json:"network"`
	Env       map[string]string `json:"env"`
	ReadOnly  []string          `json:"readOnly"`
	// Toolchains identify the toolchains commands find (see Toolchains).
	Toolchains []string `json:"toolchains"`
	// Tree is the base commit's tree: set unless the environment reuses
	// its layer across commits with the same manifests.
	Tree string `json:"tree,omitempty"`
}

// Key is the layer's name: the SHA-256 of the canonical form of its inputs.
func (in Inputs) Key() string {
	b, _ := json.Marshal(struct {
		Format string `json:"format"`
		Inputs
	}{format, in})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// manifestNames are dependency manifests and lock files, by base name.
var manifestNames = map[string]bool{
	"go.mod": true, "go.sum": true, "go.work": true, "go.work.sum": true,
	"package.json": true, "package-lock.json": true, "npm-shrinkwrap.json": true, "yarn.lock": true,
	"pnpm-lock.yaml": true, "pnpm-workspace.yaml": true, "bun.lockb": true, "bun.lock": true, ".npmrc": true,
	".yarnrc": true, ".yarnrc.yml": true, ".nvmrc": true, ".node-version": true,
	"pyproject.toml": true, "poetry.lock": true, "Pipfile": true, "Pipfile.lock": true, "setup.py": true,
	"setup.cfg": true, "uv.lock": true, "pdm.lock": true, ".python-version": true,
	"Cargo.toml": true, "Cargo.lock": true, "rust-toolchain": true, "rust-toolchain.toml": true,
	"Gemfile": true, "Gemfile.lock": true, ".ruby-version": true, "composer.json": true, "composer.lock": true,
	"pom.xml": true, "build.gradle": true, "build.gradle.kts": true, "settings.gradle": true,
	"settings.gradle.kts": true, "gradle.lockfile": true, "mix.exs": true, "mix.lock": true, ".tool-versions": true,
}

// IsManifest says whether a repository path is a dependency manifest or
// lock file: its content goes into the key of the layer setup makes.
func IsManifest(p string) bool {
	base := path.Base(p)
	if manifestNames[base] {
		return true
	}
	return strings.HasSuffix(base, ".txt") && (strings.HasPrefix(base, "requirements") || strings.HasPrefix(base, "constraints"))
}

// toolchainNames are the programs whose identity goes into a key.
var toolchainNames = []string{"go", "node", "npm", "npx", "yarn", "pnpm", "python3", "python", "pip3", "pip",
	"cargo", "rustc", "java", "mvn", "gradle", "ruby", "bundle", "gcc", "cc", "make"}

// Toolchains identifies the toolchains a command would find on pathList
// (a PATH) and the read-only paths: each program's resolved path, size
// and modification time, and each read-only path's. An upgraded toolchain
// changes them, so a layer it would build differently misses.
func Toolchains(pathList string, readOnly []string) []string {
	var out []string
	ident := func(name, p string) {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return
		}
		if fi, err := os.Stat(real); err == nil {
			out = append(out, name+" "+real+" "+fi.ModTime().UTC().Format("2006-01-02T15:04:05.999999999Z")+" "+strconv.FormatInt(fi.Size(), 10))
		}
	}
	for _, name := range toolchainNames {
		for _, dir := range filepath.SplitList(pathList) {
			p := filepath.Join(dir, name)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
				ident(name, p)
				break
			}
		}
	}
	for _, p := range readOnly {
		ident("path", p)
	}
	slices.Sort(out)
	return out
}
