package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCodeCarryingVariablesAreRefused: variables that make an
// innocuous command run a program of the value's choosing. Each payload
// only touches a marker file in the sandbox's own working copy.
func TestCodeCarryingVariablesAreRefused(t *testing.T) {
	dir := workdir(t)
	write := func(p, s string, mode os.FileMode) {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
	}
	payload := func(name string) string {
		p := filepath.Join(dir, "p", name)
		write("p/"+name, "#!/bin/sh\ntouch "+filepath.Join(dir, "hit-"+name)+"\nexit 1\n", 0o755)
		return p
	}
	write("m/go.mod", "module m\n\ngo 1.26\n", 0o644)
	write("m/main.go", "package main\n\nfunc main() {}\n", 0o644)
	write("c/go.mod", "module c\n\ngo 1.26\n", 0o644)
	write("c/main.go", "package main\n\n// #cgo pkg-config: zlib\nimport \"C\"\n\nfunc main() {}\n", 0o644)
	write("x.c", "int x;\n", 0o644)
	// a fake GOROOT: the real one but for its compiler
	real := "/usr/local/go"
	entries, _ := os.ReadDir(real)
	for _, e := range entries {
		if e.Name() != "pkg" {
			_ = os.Symlink(filepath.Join(real, e.Name()), filepath.Join(dir, "fgr", e.Name()))
		}
		if e.Name() == "pkg" || e.Name() == "VERSION" {
			_ = os.MkdirAll(filepath.Join(dir, "fgr", "pkg", "tool", "linux_amd64"), 0o755)
		}
	}
	pk, _ := os.ReadDir(filepath.Join(real, "pkg"))
	for _, e := range pk {
		if e.Name() != "tool" {
			_ = os.Symlink(filepath.Join(real, "pkg", e.Name()), filepath.Join(dir, "fgr", "pkg", e.Name()))
		}
	}
	tools, _ := os.ReadDir(filepath.Join(real, "pkg", "tool", "linux_amd64"))
	for _, e := range tools {
		if e.Name() != "compile" {
			_ = os.Symlink(filepath.Join(real, "pkg", "tool", "linux_amd64", e.Name()), filepath.Join(dir, "fgr", "pkg", "tool", "linux_amd64", e.Name()))
		}
	}
	_ = os.Symlink(payload("goroot"), filepath.Join(dir, "fgr", "pkg", "tool", "linux_amd64", "compile"))
	write("xdg/git/config", "[core]\n\tfsmonitor = "+payload("xdg")+"\n", 0o644)
	write("common/config", "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "+payload("commondir")+"\n", 0o644)
	write("common/HEAD", "ref: refs/heads/main\n", 0o644)
	_ = os.MkdirAll(filepath.Join(dir, "common", "objects"), 0o755)
	_ = os.MkdirAll(filepath.Join(dir, "common", "refs", "heads"), 0o755)
	write("r/.git/HEAD", "ref: refs/heads/main\n", 0o644)
	_ = os.MkdirAll(filepath.Join(dir, "r", ".git", "objects"), 0o755)
	_ = os.MkdirAll(filepath.Join(dir, "r", ".git", "refs"), 0o755)
	write("evil.mk", "x := $(shell "+payload("gnumakeflags")+")\n", 0o644)
	write("initmod.js", "require('child_process').execSync('"+payload("npminit")+" || true')\nmodule.exports = {}\n", 0o644)
	write("fj/bin/java", "#!/bin/sh\n"+payload("javahome")+"\n", 0o755)
	_ = os.MkdirAll(filepath.Join(dir, "cp"), 0o755)
	_ = os.Symlink(payload("compilerpath"), filepath.Join(dir, "cp", "as"))
	_ = os.Symlink(payload("compilerpath"), filepath.Join(dir, "cp", "cc1"))
	_ = os.MkdirAll(filepath.Join(dir, "n"), 0o755)
	if os.Getuid() == 0 {
		_ = filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error { _ = os.Lchown(p, box.UID, box.GID); return nil })
	}
	cases := []struct {
		name, key, value, script string
	}{
		{"goflags-quoted", "GOFLAGS", "'-toolexec=" + payload("goflags-quoted") + "'", "cd m && go build -buildvcs=false -o /tmp/out ."},
		{"goroot", "GOROOT", filepath.Join(dir, "fgr"), "cd m && go build -buildvcs=false -o /tmp/out ."},
		{"xdg", "XDG_CONFIG_HOME", filepath.Join(dir, "xdg"), "git init -q /tmp/r && cd /tmp/r && git status"},
		{"commondir", "GIT_COMMON_DIR", filepath.Join(dir, "common"), "cd r && git status"},
		{"gnumakeflags", "GNUMAKEFLAGS", "--eval=include\\ " + filepath.Join(dir, "evil.mk"), "make -f /dev/null nothing"},
		{"tar", "TAR_OPTIONS", "--checkpoint=1 --checkpoint-action=exec=" + payload("tar"), "tar cf /dev/null x.c"},
		{"pkgconfig", "PKG_CONFIG", payload("pkgconfig"), "cd c && go build -buildvcs=false -o /tmp/out ."},
		{"npminit", "npm_config_init_module", filepath.Join(dir, "initmod.js"), "cd n && npm init -y"},
		{"javahome", "JAVA_HOME", filepath.Join(dir, "fj"), "mvn -v"},
		{"compilerpath", "COMPILER_PATH", filepath.Join(dir, "cp"), "gcc -c x.c -o /tmp/x.o"},
	}
	for _, c := range cases {
		if why := CodeCarrying(c.key, c.value); why != "" {
			t.Logf("%s: refused (%s)", c.name, why)
			continue
		}
		t.Errorf("%s=%q is not refused", c.key, c.value)
		if _, err := exec.LookPath(strings.Fields(strings.TrimPrefix(c.script, "cd "+strings.SplitN(strings.TrimPrefix(c.script, "cd "), " ", 2)[0]+" && "))[0]); err != nil {
			t.Logf("%s: tool missing, skipped", c.name)
			continue
		}
		_, out := runIn(t, dir, c.script, func(cmd *Command) { cmd.Env = map[string]string{c.key: c.value}; cmd.Timeout = 60e9 })
		_, err := os.Stat(filepath.Join(dir, "hit-"+c.name))
		if err == nil {
			t.Errorf("%s=%q: %q ran the value's program (not refused)", c.key, c.value, c.script)
		} else {
			t.Logf("%s: not shown to run code; output: %s", c.name, strings.TrimSpace(out)[:min(300, len(strings.TrimSpace(out)))])
		}
	}
}

func TestCodeCarryingTable(t *testing.T) {
	allowed := map[string]string{"MY_SETTING": "1", "DATABASE_URL": "postgres://x", "GOOS": "linux", "GOFLAGS": "-mod=mod -tags=integration -race",
		"GOPROXY": "https://proxy.golang.org", "CGO_ENABLED": "0", "RUST_LOG": "debug", "TZ": "UTC", "NO_COLOR": "1"}
	for k, v := range allowed {
		if why := CodeCarrying(k, v); why != "" {
			t.Errorf("%s=%q refused: %s", k, v, why)
		}
	}
	refused := map[string]string{"BASH_ENV": "/x", "LD_PRELOAD": "/x.so", "NODE_OPTIONS": "--require /x", "npm_config_script_shell": "/x",
		"GIT_SSH_COMMAND": "x", "XDG_CONFIG_HOME": "/x", "GOROOT": "/x", "GOFLAGS": "-toolexec=/x", "PYTHONPATH": "/x",
		"JAVA_HOME": "/x", "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER": "/x", "RUSTC_WRAPPER": "/x", "cc": "/x",
		"MAKEFLAGS": "x", "TAR_OPTIONS": "x", "PATH": "/x", "https_proxy": "http://x", "GOTOOLCHAIN": "go1.99", "GOWORK": "/x/go.work"}
	for k, v := range refused {
		if CodeCarrying(k, v) == "" {
			t.Errorf("%s=%q is not refused", k, v)
		}
	}
	for _, v := range []string{"'-toolexec=/x'", "-mod=mod -overlay=/x.json", "-ldflags=-extld=/x", "-modfile=/x"} {
		if CodeCarrying("GOFLAGS", v) == "" {
			t.Errorf("GOFLAGS=%q is not refused", v)
		}
	}
}
