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
	if a.homePattern {
		return true // ${HOME%/*} and the like: the home's parent, or the root
	}
	for _, d := range a.def {
		if d != "" && rootish(static([]string{d})[0]) {
			return true
		}
	}
	if a.static && strings.HasPrefix(a.s, "~") {
		// ~, ~user, ~/.., ~user/x/../..: resolved against a home directory.
		user, rest, _ := strings.Cut(a.s[1:], "/")
		home := "/home/" + user
		switch {
		case user == "":
			home = "/home/sandbox"
		case user == "root":
			home = "/root"
		case user == "+" || user == "-":
			home = "/home/sandbox" // $PWD or $OLDPWD: anywhere
		}
		full := path.Clean(home + "/" + rest)
		if a.glob {
			if i := strings.IndexAny(full, "*?["); i >= 0 {
				full = path.Clean(full[:strings.LastIndex(full[:i], "/")+1])
			}
		}
		return rootishDir(full) || user != "" && rest == ""
	}
	if a.static && !strings.HasPrefix(a.s, "/") && upLevels(a.s) >= 3 {
		return true // a long ../.. chain climbs out of the working copy towards the root
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

// upLevels counts how far a relative path climbs above where it starts.
func upLevels(p string) int {
	depth, most := 0, 0
	for _, part := range strings.Split(p, "/") {
		switch part {
		case "..":
			depth++
			most = max(most, depth)
		case ".", "":
		default:
			depth--
		}
	}
	return most
}

// sensitiveTargets are what a glob write target is tried against: a
// pattern that can name one of them is treated as naming it.
var sensitiveTargets = []string{"/dev/sda", "/dev/sdb", "/dev/vda", "/dev/hda", "/dev/xvda", "/dev/nvme0n1", "/dev/nvme0n1p1",
	"/dev/mmcblk0", "/dev/md0", "/dev/dm-0", "/dev/loop0", "/dev/mem", "/dev/kmem", "/dev/port", "/dev/sda1",
	"/etc/passwd", "/etc/shadow", "/etc/sudoers", "/etc/hosts", "/etc/fstab", "/etc/crontab", "/etc/ld.so.preload",
	"/boot/vmlinuz", "/bin/sh", "/bin/bash", "/usr/bin/sudo", "/usr/lib/x", "/lib/x", "/sbin/init", "/var/x", "/root/.bashrc"}

// globTarget reports a glob pattern that can name a device or a system file.
func globTarget(pattern string) (device, system bool) {
	if !strings.ContainsAny(pattern, "*?[") {
		return false, false
	}
	for _, t := range sensitiveTargets {
		if ok, _ := path.Match(pattern, t); ok {
			if strings.HasPrefix(t, "/dev/") {
				return true, false
			}
			system = true
		}
	}
	return false, system
}
