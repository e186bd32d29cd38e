package sandbox

import (
	"fmt"
	"strings"
)

// Where the sandbox puts what a command sees besides the working copy.
const (
	// Home is the sandbox user's home, a fresh tmpfs per command.
	Home = "/home/sandbox"
	// CacheMount is where a session's own build cache appears (writable).
	CacheMount = Home + "/.cache"
	// DepsMount is where the dependency caches that setup filled appear
	// (read-only to the agent's commands, writable while setup runs).
	DepsMount = Home + "/.deps"
)

// Environment is the allowlisted environment of every sandboxed command,
// with extra on top; a code-carrying or Paddock-owned name in extra is
// dropped (the agent spec refuses them with the reason, see CodeCarrying).
func Environment(extra map[string]string) map[string]string {
	env := map[string]string{
		"PATH":        "/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME":        Home,
		"USER":        "sandbox",
		"TMPDIR":      "/tmp",
		"LANG":        "C.UTF-8",
		"TERM":        "dumb",
		"GOCACHE":     CacheMount + "/go-build",
		"GOPATH":      CacheMount + "/go",
		"GOFLAGS":     "-mod=mod",
		"GOTOOLCHAIN": "local",
		"CI":          "1",
	}
	for k, v := range extra {
		if k != "" && !strings.ContainsAny(k, "=\x00") && CodeCarrying(k, v) == "" {
			env[k] = v
		}
	}
	return env
}

// depsEnv points the package managers at the dependency caches.
func depsEnv() map[string]string {
	return map[string]string{
		"GOMODCACHE":                 DepsMount + "/go/mod",
		"npm_config_cache":           DepsMount + "/npm",
		"PIP_CACHE_DIR":              DepsMount + "/pip",
		"npm_config_update_notifier": "false",
		"npm_config_logs_dir":        "/tmp/npm-logs",
	}
}

// owned are the variables Paddock sets itself: the view, the caches and
// the proxy depend on them.
var owned = map[string]bool{"PATH": true, "HOME": true, "USER": true, "TMPDIR": true, "GOCACHE": true, "GOPATH": true,
	"GOMODCACHE": true, "GOTOOLCHAIN": true, "GOENV": true, "NPM_CONFIG_CACHE": true, "PIP_CACHE_DIR": true,
	"HTTP_PROXY": true, "HTTPS_PROXY": true, "ALL_PROXY": true, "NO_PROXY": true, "FTP_PROXY": true,
	"NPM_CONFIG_PROXY": true, "NPM_CONFIG_HTTPS_PROXY": true, "NPM_CONFIG_NOPROXY": true, "NPM_CONFIG_USERCONFIG": true,
	"NPM_CONFIG_GLOBALCONFIG": true, "PIP_PROXY": true, "PIP_CONFIG_FILE": true}

// carriers make a program run code of their value's choosing: a shell's
// startup files and hooks, the dynamic loader, interpreters' startup and
// module paths, the compilers and helpers build tools start, git's
// helpers and configuration, editors and pagers programs open.
var carriers = map[string]bool{
	"BASH_ENV": true, "ENV": true, "SHELLOPTS": true, "BASHOPTS": true, "ZDOTDIR": true, "PROMPT_COMMAND": true,
	"PS0": true, "PS1": true, "PS2": true, "PS4": true, "IFS": true, "CDPATH": true, "GLOBIGNORE": true, "BASH_XTRACEFD": true,
	"NODE_OPTIONS": true, "NODE_PATH": true, "PYTHONSTARTUP": true, "PYTHONPATH": true, "PYTHONHOME": true,
	"PYTHONUSERBASE": true, "PERL5OPT": true, "PERL5LIB": true, "PERLLIB": true, "PERL5DB": true, "RUBYOPT": true,
	"RUBYLIB": true, "JAVA_TOOL_OPTIONS": true, "_JAVA_OPTIONS": true, "JDK_JAVA_OPTIONS": true, "CLASSPATH": true,
	"GCONV_PATH": true, "CC": true, "CXX": true, "CPP": true, "LD": true, "AR": true, "FC": true, "CGO_LDFLAGS": true,
	"CGO_CFLAGS": true, "CGO_CXXFLAGS": true, "CGO_CPPFLAGS": true, "RUSTC": true, "RUSTC_WRAPPER": true, "RUSTFLAGS": true,
	"CARGO_BUILD_RUSTC_WRAPPER": true, "MAKEFLAGS": true, "MAKEFILES": true, "EDITOR": true, "VISUAL": true, "PAGER": true,
	"MANPAGER": true, "LESSOPEN": true, "LESSCLOSE": true, "BROWSER": true, "SSH_ASKPASS": true, "SUDO_ASKPASS": true,
	"GIT_ASKPASS": true, "GIT_EDITOR": true, "GIT_PAGER": true, "GIT_EXTERNAL_DIFF": true, "GIT_EXEC_PATH": true,
	"GIT_DIR": true, "GIT_WORK_TREE": true, "GIT_TEMPLATE_DIR": true, "GIT_PROXY_COMMAND": true, "GIT_SEQUENCE_EDITOR": true,
}

// CodeCarrying says why a variable may not be set for a sandboxed
// command ("" when it may): its name makes a program run code of the
// value's choosing (BASH_ENV, LD_PRELOAD, NODE_OPTIONS, CC, GIT_SSH_COMMAND,
// ...), so that a command the policy allows would run something else; or
// Paddock sets it itself (PATH, HOME, the caches, the proxy); or, for
// GOFLAGS, its value hands the go command a program to run (-toolexec,
// -exec, -overlay).
func CodeCarrying(name, value string) string {
	upper := strings.ToUpper(name)
	switch {
	case owned[upper]:
		return "Paddock sets it (the sandbox's view, caches and proxy depend on it)"
	case carriers[name], strings.HasPrefix(name, "BASH_FUNC_"), strings.HasPrefix(name, "LD_"),
		strings.HasPrefix(name, "GIT_CONFIG"), strings.HasPrefix(name, "GIT_SSH"), strings.HasPrefix(upper, "NPM_CONFIG_SCRIPT"),
		strings.HasPrefix(upper, "NPM_CONFIG_NODE_OPTIONS"), strings.HasPrefix(upper, "NPM_CONFIG_SHELL"):
		return "it makes programs run code of its value's choosing, so commands the policy allows would run something else"
	case name == "GOFLAGS":
		for _, f := range strings.Fields(value) {
			flag := strings.TrimLeft(f, "-")
			flag, _, _ = strings.Cut(flag, "=")
			switch flag {
			case "toolexec", "exec", "overlay":
				return fmt.Sprintf("its flag %s hands the go command a program or file to use instead of the repository's", f)
			}
		}
	}
	return ""
}
