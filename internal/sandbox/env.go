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
		"GOCACHE":     CacheMount + "/" + GoBuildCache,
		"GOPATH":      CacheMount + "/go",
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

// DepsEnv points the package managers at the dependency caches in dir
// (DepsMount in a bubblewrap sandbox).
func DepsEnv(dir string) map[string]string {
	return map[string]string{
		"GOMODCACHE":                 dir + "/go/mod",
		"npm_config_cache":           dir + "/npm",
		"PIP_CACHE_DIR":              dir + "/pip",
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
// module paths, the compilers and helpers build tools start, editors and
// pagers programs open.
var carriers = map[string]bool{
	"BASH_ENV": true, "ENV": true, "SHELLOPTS": true, "BASHOPTS": true, "ZDOTDIR": true, "PROMPT_COMMAND": true,
	"PS0": true, "PS1": true, "PS2": true, "PS4": true, "IFS": true, "CDPATH": true, "GLOBIGNORE": true, "BASH_XTRACEFD": true,
	"FCEDIT": true, "CLASSPATH": true, "CC": true, "CXX": true, "CPP": true, "LD": true, "AR": true, "AS": true, "FC": true,
	"NM": true, "RANLIB": true, "STRIP": true, "OBJCOPY": true, "COMPILER_PATH": true, "LIBRARY_PATH": true, "CPATH": true,
	"C_INCLUDE_PATH": true, "CPLUS_INCLUDE_PATH": true, "EDITOR": true, "VISUAL": true, "PAGER": true, "MANPAGER": true,
	"BROWSER": true, "TAR_OPTIONS": true, "TMOUT": true, "INPUTRC": true, "TERMINFO": true, "HGRCPATH": true,
	"RSYNC_RSH": true, "CVS_RSH": true, "MAIL": true, "MAILPATH": true, "HISTFILE": true,
}

// carrierPrefixes are families of variables that configure a toolchain,
// a package manager or a program it starts (or stands in for its
// configuration file), any of which can name a program to run: all are
// refused, whatever the member.
var carrierPrefixes = []string{
	"BASH_FUNC_", "LD_", "DYLD_", "GCONV", "GIT_", "XDG_", "SSH_", "SUDO_", "LESS", "NPM_CONFIG_", "YARN_", "PNPM_",
	"COREPACK_", "NODE_", "NVM_", "PYTHON", "PIP_", "PERL", "RUBY", "GEM_", "BUNDLE_", "JAVA", "JDK_", "_JAVA", "MAVEN_",
	"GRADLE_", "ANT_", "SBT_", "CARGO_", "RUSTC", "RUSTDOC", "RUSTFLAGS", "RUSTUP", "CGO_", "GCC_", "CMAKE_", "PKG_CONFIG", "LUA_", "PHP", "ERL_",
	"ELIXIR_", "DOTNET_", "OPENSSL_", "GH_", "MAKE", "GNUMAKE", "GOROOT", "GOPATH", "GOENV", "GOWORK", "GOBIN",
	"GOCACHE", "GOMODCACHE", "GOTOOLCHAIN", "GOTOOLDIR", "GCCGO",
}

// goVars are the Go settings an environment may set (GOFLAGS only with
// the flags goFlags lists); every other GO* name is refused.
var goVars = map[string]bool{"GOOS": true, "GOARCH": true, "GOAMD64": true, "GOARM": true, "GOARM64": true, "GO386": true,
	"GOEXPERIMENT": true, "GODEBUG": true, "GOMAXPROCS": true, "GOGC": true, "GOMEMLIMIT": true, "GOTRACEBACK": true,
	"GOPRIVATE": true, "GONOPROXY": true, "GONOSUMDB": true, "GOPROXY": true, "GOSUMDB": true, "GOINSECURE": true,
	"GOFLAGS": true, "CGO_ENABLED": true}

// goFlags are the flags GOFLAGS may carry: none names a program or a
// file the go command would use instead of the repository's.
var goFlags = map[string]bool{"mod": true, "tags": true, "trimpath": true, "race": true, "buildvcs": true, "p": true,
	"modcacherw": true, "cover": true, "covermode": true, "v": true, "buildmode": true, "msan": true, "asan": true}

// CodeCarrying says why a variable may not be set for a sandboxed
// command ("" when it may): its name makes a program run code of the
// value's choosing (BASH_ENV, LD_PRELOAD, NODE_OPTIONS, CC, GIT_*,
// npm_config_*, PYTHON*, JAVA*, CARGO_*, ...), so that a command the
// policy allows would run something else; or Paddock sets it itself
// (PATH, HOME, the caches, the proxy); or, for GOFLAGS, it carries a flag
// not known to be inert (-toolexec, -exec, -overlay, quoting).
func CodeCarrying(name, value string) string {
	upper := strings.ToUpper(name)
	const runs = "it makes programs run code of its value's choosing, so commands the policy allows would run something else"
	switch {
	case owned[upper]:
		return "Paddock sets it (the sandbox's view, caches and proxy depend on it)"
	case carriers[upper]:
		return runs
	case name == "GOFLAGS":
		if strings.ContainsAny(value, `'"\`) {
			return "quoted GOFLAGS are not accepted (the go command unquotes them; write plain flags)"
		}
		for _, f := range strings.Fields(value) {
			flag, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
			if !strings.HasPrefix(f, "-") || !goFlags[flag] {
				return fmt.Sprintf("its flag %s is not one known to be inert (allowed: -mod, -tags, -trimpath, -race, -buildvcs, -p, -cover, -covermode, -v, -modcacherw)", f)
			}
		}
		return ""
	case goVars[upper]:
		return ""
	}
	for _, p := range carrierPrefixes {
		if strings.HasPrefix(upper, p) {
			return runs
		}
	}
	if strings.HasPrefix(upper, "GO") {
		return "of Go's settings, only the target, experiment, runtime and module-source ones may be set (GOOS, GOARCH, GOFLAGS, GOPROXY, GOPRIVATE, ...)"
	}
	return ""
}
