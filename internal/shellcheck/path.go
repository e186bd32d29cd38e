package shellcheck

import (
	"path"
	"strings"
)

// systemDirs are trees whose destruction breaks the machine.
var systemDirs = []string{"/etc", "/bin", "/sbin", "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/dev", "/proc",
	"/sys", "/var", "/opt", "/root", "/srv", "/snap", "/run"}

// harmlessDevices may be written freely.
var harmlessDevices = map[string]bool{"/dev/null": true, "/dev/stdout": true, "/dev/stderr": true, "/dev/tty": true,
	"/dev/zero": true, "/dev/full": true, "/dev/stdin": true}

// clean normalizes a static path: /dev/../dev/sda is /dev/sda.
func clean(p string) string {
	if strings.HasPrefix(p, "/") {
		return path.Clean(p)
	}
	return p
}

// isWindowsPath reports a Windows absolute path such as C:\ or C:/x.
func isWindowsPath(p string) bool {
	return len(p) >= 2 && p[1] == ':' && (p[0]|0x20) >= 'a' && (p[0]|0x20) <= 'z'
}

// windowsSystem reports C:\, C:\Windows, C:\Program Files and the like.
func windowsSystem(p string) bool {
	if !isWindowsPath(p) {
		return false
	}
	// Backslashes may already be gone (bash removed them: C:\Windows → C:Windows).
	rest := strings.ToLower(strings.Trim(strings.ReplaceAll(p[2:], "/", `\`), `\`))
	if rest == "" || rest == "*" {
		return true
	}
	for _, d := range []string{"windows", "program files", "programfiles", "programdata", "users"} {
		if strings.HasPrefix(rest, d) {
			return true
		}
	}
	return false
}

// devicePath classifies a write target under /dev: harmless, or a device.
func devicePath(p string) (device, harmless bool) {
	p = clean(p)
	if !strings.HasPrefix(p, "/dev/") {
		return false, false
	}
	if harmlessDevices[p] || strings.HasPrefix(p, "/dev/fd/") {
		return true, true
	}
	return true, false
}

// systemPath reports a path inside a system tree (or the tree itself).
func systemPath(p string) bool {
	p = clean(p)
	if windowsSystem(p) {
		return true
	}
	for _, d := range systemDirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// rootish reports targets whose recursive deletion is refused: the root,
// any root-level directory, a home directory, or a system tree.
func rootish(a arg) bool {
	if a.home && (a.s == "~" || strings.Trim(a.s, "/") == "~" || a.s == "~/*" || a.s == "~/.*") {
		return true
	}
	s := a.s
	if !a.static {
		s = a.prefix
		// An unresolved part right after "/" (rm -rf /$X) may be anything at the root.
		if s == "/" {
			return true
		}
		if !strings.HasPrefix(s, "/") || !strings.HasSuffix(s, "/") {
			return systemPath(s) && strings.HasPrefix(s, "/") && strings.Count(clean(s), "/") > 1
		}
	}
	if windowsSystem(s) {
		return true
	}
	if !strings.HasPrefix(s, "/") {
		return false
	}
	if a.glob {
		// A glob decides nothing until it meets a slash: /u* is any root-level entry.
		if i := strings.IndexAny(s, "*?["); i >= 0 {
			dir := s[:strings.LastIndex(s[:i], "/")+1]
			return rootishDir(clean(dir)) || dir == "/"
		}
	}
	return rootishDir(clean(s))
}

func rootishDir(p string) bool {
	if p == "/" || strings.Count(p, "/") == 1 {
		return true
	}
	if strings.HasPrefix(p, "/home/") && strings.Count(p, "/") == 2 {
		return true
	}
	return systemPath(p)
}
