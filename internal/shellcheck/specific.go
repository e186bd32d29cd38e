package shellcheck

import (
	"encoding/base64"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
)

// specific applies the rules of programs whose arguments matter. ok=false
// means "no opinion": the free list decides.
func (c *checker) specific(n string, args []arg, depth int) (verdict, bool) {
	switch n {
	case "rm", "unlink", "rmdir", "shred", "srm":
		return deletion(n, c.rooted(args))
	case "find":
		return c.find(args, depth)
	case "curl", "wget":
		for i, a := range args[1:] {
			var target string
			switch {
			case a.s == "-o" || a.s == "--output" || (n == "wget" && (a.s == "-O" || a.s == "--output-document")):
				if i+2 < len(args) {
					target = args[i+2].s
				}
			case strings.HasPrefix(a.s, "--output=") || strings.HasPrefix(a.s, "--output-document="):
				target = a.s[strings.Index(a.s, "=")+1:]
			}
			if target != "" {
				if v, ok := writes(n, static([]string{target}), false); ok && v.v == Refuse {
					return v, true
				}
			}
		}
	case "tar", "unzip", "bsdtar", "cpio":
		// tar --remove-files deletes what it archived.
		if n == "tar" || n == "bsdtar" {
			remove := false
			for _, a := range args[1:] {
				remove = remove || a.s == "--remove-files"
			}
			for i, a := range args[1:] {
				prev := args[i].s
				if prev == "--file" || strings.HasPrefix(prev, "-") && !strings.HasPrefix(prev, "--") && strings.HasSuffix(prev, "f") ||
					i == 0 && !strings.HasPrefix(a.s, "-") && strings.Contains(a.s, "f") && len(args) > 2 {
					continue // the archive itself
				}
				if remove && !strings.HasPrefix(a.s, "-") && (rootish(a) || a.static && strings.HasPrefix(a.s, "/") && systemPath(a.s)) {
					return refuse("system-destruction", n+" --remove-files deletes "+a.s+" once archived"), true
				}
			}
		}
		for i, a := range args[1:] {
			var dir string
			switch {
			case a.s == "-C" || a.s == "--directory" || (n == "unzip" && a.s == "-d"):
				if i+2 < len(args) {
					dir = args[i+2].s
				}
			case strings.HasPrefix(a.s, "--directory="):
				dir = strings.TrimPrefix(a.s, "--directory=")
			}
			if dir != "" && strings.HasPrefix(dir, "/") && (clean(dir) == "/" || systemPath(dir)) {
				return refuse("system-file", n+" unpacks into "+dir+", overwriting the system tree"), true
			}
		}
	case "hash":
		for i, a := range args[1:] {
			if a.s == "-p" || strings.HasPrefix(a.s, "-") && strings.Contains(a.s, "p") {
				if i+2 < len(args) {
					if v, ok := refusedProgram(canonical(args[i+2].s), nil); ok || !args[i+2].static {
						if ok {
							return refuse(v.rule, "hash -p makes a name run "+args[i+2].s+": "+v.reason), true
						}
					}
				}
				return ask("hash-path", "hash -p binds a command name to any program"), true
			}
		}
	case "alias":
		// An alias's value is code wherever the alias is used.
		for _, a := range args[1:] {
			if _, value, ok := strings.Cut(a.s, "="); ok && a.static && value != "" {
				c.source(value, depth+1)
			}
		}
	case "mapfile", "readarray":
		for i, a := range args[1:] {
			if a.s == "-C" && i+2 < len(args) && args[i+2].static {
				c.source(args[i+2].s, depth+1)
			}
		}
	case "setcap":
		return refuse("privilege-escalation", "setcap grants capabilities to a program"), true
	case "trap":
		rest := args[1:]
		for len(rest) > 0 && (rest[0].s == "--" || rest[0].s == "-p" || rest[0].s == "-l" || rest[0].s == "-P") {
			rest = rest[1:]
		}
		if len(rest) > 0 && rest[0].static && rest[0].s != "-" {
			c.source(rest[0].s, depth+1)
		} else if len(rest) > 0 && !rest[0].static {
			for _, d := range rest[0].def {
				c.source(d, depth+1)
			}
			return ask("trap", "trap runs code built from an expansion"), true
		}
	case "setfacl":
		for _, a := range args[1:] {
			for _, clause := range strings.Split(a.s, ",") {
				// d:o::rwx and default:other::rwx open what is created later.
				clause = strings.TrimPrefix(strings.TrimPrefix(clause, "default:"), "d:")
				if (strings.HasPrefix(clause, "o:") || strings.HasPrefix(clause, "other:")) && strings.Contains(clause[strings.LastIndex(clause, ":"):], "w") {
					return refuse("open-permissions", "setfacl gives everyone write access"), true
				}
			}
			if a.static && strings.HasPrefix(a.s, "/") && systemPath(a.s) {
				return refuse("system-file", "setfacl changes a system file's access: "+a.s), true
			}
		}
	case "chmod":
		return c.chmod(args)
	case "chown", "chgrp", "lchown":
		return c.chown(n, args)
	case "mkdir", "install":
		if n == "install" {
			for _, v := range optionValues(args, []string{"-o", "--owner", "-g", "--group"}) {
				if rootName(v.s) || v.s == "wheel" {
					return refuse("chown-root", "install hands the files it installs to root"), true
				}
			}
		}
		if m, ok := modeOption(args); ok && openMode(m) {
			return refuse("open-permissions", n+" -m "+m+" creates world-writable or setuid/setgid files"), true
		}
		return writes(n, args[1:], false)
	case "dd":
		// of=TARGET, with every value variables, loops and cd give it.
		for _, a := range args[1:] {
			if !strings.HasPrefix(a.prefix, "of=") {
				continue
			}
			for _, cand := range c.candidates(a) {
				if v, bad := writeTarget("dd", withValue(cand, strings.TrimPrefix(cand.s, "of="))); bad {
					return v, true
				}
			}
		}
		return verdict{}, false
	case "ssh", "autossh":
		if code := sshRemoteCommand(args); code != "" {
			if v := c.quietSource(code, depth); v.v == Refuse {
				return refuse(v.rule, "ssh runs "+code+" on the remote host: "+v.reason), true
			}
		}
	}
	switch n {
	case "rsync":
		if v, ok := rsyncDeletes(c.rooted(args)); ok {
			return v, true
		}
		for _, v := range optionValues(args, []string{"--chown", "--usermap", "--groupmap"}) {
			for _, pair := range strings.Split(v.s, ",") {
				owner := pair[strings.LastIndex(pair, ":")+1:]
				if user, _, _ := strings.Cut(pair, ":"); strings.HasPrefix(v.s, pair) && rootName(user) || rootName(owner) {
					return refuse("chown-root", "rsync hands files to root ("+v.s+")"), true
				}
			}
		}
		for _, v := range optionValues(args, []string{"--chmod"}) {
			for _, clause := range strings.Split(v.s, ",") {
				if openMode(strings.TrimLeft(clause, "DF")) {
					return refuse("open-permissions", "rsync --chmod="+v.s+" makes files world-writable or setuid/setgid"), true
				}
			}
		}
	case "ln", "link":
		for _, a := range args[1:] {
			if a.static && strings.HasPrefix(a.s, "/") && refusedName(canonical(a.s)) {
				return refuse("privilege-escalation", n+" gives "+a.s+", a refused program, another name"), true
			}
		}
	}
	switch n {
	case "cp", "mv", "ln", "tee", "truncate", "rsync", "touch", "ditto", "copy-item", "move-item", "set-content", "out-file":
		if v, ok := c.writesAnywhere(n, args); ok {
			return v, true
		}
		return writes(n, args[1:], n == "mv" || n == "move-item")
	case "uniq", "xxd":
		// uniq IN OUT, xxd IN OUT: a second operand is written.
		var ops []arg
		for _, a := range args[1:] {
			if !strings.HasPrefix(a.s, "-") || a.s == "-" {
				ops = append(ops, a)
			}
		}
		if len(ops) >= 2 {
			if v, bad := c.writeTarget(n, ops[1]); bad {
				return v, true
			}
		}
	case "sed", "perl":
		if inPlace(args) {
			if v, ok := writes(n, args[1:], true); ok && v.v == Refuse {
				return refuse("system-file", n+" -i edits a system file in place"), true
			}
			return ask("in-place-edit", n+" -i rewrites files"), true
		}
		if n == "sed" {
			scripts, _, sandboxed := sedScripts(args)
			for _, sc := range scripts {
				if p := parseSed(sc.s); !sandboxed && sc.static {
					for _, w := range p.writes {
						if v, ok := writeTarget("sed w", static([]string{w})[0]); ok && v.v == Refuse {
							return v, true
						}
					}
					if p.runs {
						return ask("sed-execute", "sed's e command or s///e flag runs commands"), true
					}
				}
			}
		}
	case "awk", "gawk", "mawk", "nawk":
		inplace := false
		for i, a := range args[1:] {
			if a.s == "-i" && i+2 < len(args) && args[i+2].s == "inplace" || a.s == "-iinplace" || a.s == "--include=inplace" {
				inplace = true
			}
			if inplace && a.static && strings.HasPrefix(a.s, "/") && systemPath(a.s) {
				return refuse("system-file", n+" -i inplace edits a system file: "+a.s), true
			}
		}
		for _, a := range args[1:] {
			if strings.Contains(a.s, "system(") || strings.Contains(a.s, "| getline") || strings.Contains(a.s, "|&") {
				return ask("awk-system", "awk's system() or pipes run shell commands"), true
			}
		}
	case "git":
		return git(args)
	case "rg", "ripgrep":
		for _, a := range args[1:] {
			if a.s == "--pre" || strings.HasPrefix(a.s, "--pre=") || a.s == "--hostname-bin" || strings.HasPrefix(a.s, "--hostname-bin=") {
				return ask("runs-program", "rg "+a.s+" runs a program on each file"), true
			}
		}
	case "go":
		for _, a := range args[1:] {
			for _, f := range []string{"-exec", "-toolexec", "-vettool", "-overlay", "-modfile"} {
				if a.s == f || a.s == "-"+f || strings.HasPrefix(a.s, f+"=") || strings.HasPrefix(a.s, "-"+f+"=") {
					return ask("go-flag", "go "+f+" runs a program or writes outside the build cache"), true
				}
			}
		}
	case "powershell", "pwsh":
		return powershell(args)
	case "cmd":
		return c.cmdExe(args, depth)
	case "icacls", "cacls", "xcacls":
		for _, a := range args[1:] {
			l := strings.ToLower(a.s)
			if strings.Contains(l, "everyone:") || strings.Contains(l, "*s-1-1-0") || strings.Contains(l, "users:(f)") || strings.Contains(l, "users:f") {
				return refuse("open-permissions", n+" grants everyone access"), true
			}
		}
	case "sc":
		if len(args) > 1 && (strings.EqualFold(args[1].s, "create") || strings.EqualFold(args[1].s, "config")) {
			for i, a := range args {
				l := strings.ToLower(a.s)
				if l == "type=kernel" || l == "type=filesys" || (l == "type=" && i+1 < len(args) && (strings.EqualFold(args[i+1].s, "kernel") || strings.EqualFold(args[i+1].s, "filesys"))) {
					return refuse("kernel-module", "sc registers a kernel driver"), true
				}
			}
		}
	case "remove-item", "rd", "del", "erase", "ri":
		for _, a := range args[1:] {
			if len(a.s) == 2 && a.s[0] == '/' {
				continue // a cmd.exe switch such as /s or /q
			}
			if windowsSystem(a.s) || (strings.HasPrefix(a.s, "/") && rootish(a)) {
				return refuse("system-destruction", n+" deletes a system directory"), true
			}
			if (a.home || strings.HasPrefix(a.s, "~")) && rootish(a) || windowsHome(a.s) {
				return refuse("system-destruction", n+" deletes the home directory"), true
			}
		}
		return ask("deletion", n+" deletes files"), true
	case "reg":
		if len(args) > 1 && strings.EqualFold(args[1].s, "delete") {
			return ask("registry", "reg delete removes registry keys"), true
		}
	}
	return verdict{}, false
}

var deleters = set("rm", "unlink", "rmdir", "shred", "srm", "truncate")

// rooted adds, for each relative path argument, its resolutions against
// the directories the command cd's to: "cd / && rm -rf *" deletes /*.
func (c *checker) rooted(args []arg) []arg {
	// x=/; rm -rf $x: the values the command gives its variables.
	for _, a := range args[1:] {
		for _, alt := range c.alternatives(a) {
			args = append(args, static([]string{alt})...)
		}
	}
	if len(c.dirs) == 0 {
		return args
	}
	out := append([]arg(nil), args...)
	for _, a := range args[1:] {
		if !a.static || a.home || strings.HasPrefix(a.s, "/") || strings.HasPrefix(a.s, "-") {
			continue
		}
		for _, d := range c.dirs {
			r := a
			if d == "~" {
				r.home, r.s = true, "~/"+a.s
				if a.s == "." || a.s == "*" || a.s == "./" {
					r.s = "~/*"
				}
			} else {
				r.s = strings.TrimSuffix(d, "/") + "/" + a.s
				if a.s == "." {
					r.s = d
				}
			}
			r.prefix = r.s
			out = append(out, r)
		}
	}
	return out
}

// longAbbrev: s is the long option full, or an abbreviation of it GNU
// getopt accepts (at least one letter after "--").
func longAbbrev(s, full string) bool {
	name, _, _ := strings.Cut(s, "=")
	return len(name) > 2 && strings.HasPrefix(full, name)
}

// writesAnywhere: the paths a writing program is given, with the values
// variables, loops and cd give them (d=/etc; cp x $d/passwd; cd /dev &&
// tee sda), judged as the literal paths would be.
func (c *checker) writesAnywhere(n string, args []arg) (verdict, bool) {
	var expanded []arg
	changed := false
	for _, a := range args[1:] {
		cands := c.candidates(a)
		expanded = append(expanded, cands[0])
		for _, x := range cands[1:] {
			expanded = append(expanded, x)
			changed = true
		}
	}
	if !changed {
		return verdict{}, false
	}
	if v, ok := writes(n, expanded, n == "mv" || n == "move-item"); ok && v.v == Refuse {
		return v, true
	}
	return verdict{}, false
}

// deletion: rm and friends. Any target in a system tree is refused; a
// recursive forced deletion of the root, a root-level directory or a home is
// refused; the rest asks.
func deletion(n string, args []arg) (verdict, bool) {
	recursive, optionsDone := n == "rmdir", false
	var targets []arg
	for _, a := range args[1:] {
		s := a.s
		switch {
		case n == "rmdir" && len(s) == 2 && s[0] == '/' && (s[1]|0x20) >= 'a' && (s[1]|0x20) <= 'z':
			// cmd.exe switches: rmdir /s /q build
		case optionsDone || !strings.HasPrefix(s, "-") || s == "-":
			targets = append(targets, a)
		case s == "--":
			optionsDone = true
		case longAbbrev(s, "--recursive"):
			recursive = true // GNU takes --r, --rec, ... for --recursive
		case s == "--force":
		case strings.HasPrefix(s, "--"):
		default:
			recursive = recursive || strings.ContainsAny(s, "rR")
		}
	}
	for _, t := range targets {
		if (recursive || n == "shred") && rootish(t) {
			return refuse("system-destruction", n+" deletes "+t.s+" recursively: the root, a root-level directory, a home or a system tree"), true
		}
		if t.static && (systemPath(t.s) || windowsSystem(t.s)) || (t.glob && systemPath(t.prefix)) {
			return refuse("system-file", n+" deletes a system file: "+t.s), true
		}
		if dev, harmless := devicePath(t.s); dev && !harmless {
			return refuse("device-write", n+" destroys a device: "+t.s), true
		}
		if dev, sys := globTarget(t.s); t.glob && (dev || sys) {
			return refuse("system-file", n+" deletes what the pattern "+t.s+" names, which can be a device or a system file"), true
		}
	}
	return ask("deletion", n+" deletes files"), true
}

// writes judges programs that write their path arguments: devices and
// system files are refused. destructive also refuses system sources (mv).
func writes(n string, args []arg, destructive bool) (verdict, bool) {
	var paths []arg
	for _, a := range args {
		if !strings.HasPrefix(a.s, "-") {
			paths = append(paths, a)
		}
	}
	for i, p := range paths {
		if destructive && i < len(paths)-1 && rootish(p) {
			return refuse("system-destruction", n+" moves away "+p.s), true
		}
		s := p.s
		if !p.static {
			s = p.prefix
		}
		dev, harmless := devicePath(s)
		if dev && !harmless {
			return refuse("device-write", n+" writes to the device "+p.s), true
		}
		if harmless {
			continue
		}
		if gdev, gsys := globTarget(p.s); p.glob && (gdev || gsys) && (i == len(paths)-1 || n == "tee" || n == "truncate" || destructive) {
			return refuse("device-write", n+" writes what the pattern "+p.s+" names, which can be a device or a system file"), true
		}
		isTarget := i == len(paths)-1 || n == "tee" || n == "truncate" || n == "touch" || n == "mkdir" || n == "sed" || n == "perl" ||
			n == "set-content" || n == "out-file"
		if isTarget && p.static && clean(s) == "/" && n != "touch" {
			return refuse("system-file", n+" writes into the root directory"), true
		}
		if (isTarget || destructive) && p.static && (systemPath(s) || windowsSystem(s)) && len(paths) > 0 && !(n == "cp" && i < len(paths)-1) {
			if n == "mkdir" || n == "touch" {
				return ask("system-write", n+" creates files in a system directory"), true
			}
			return refuse("system-file", n+" overwrites or moves a system file: "+p.s), true
		}
	}
	return verdict{}, false
}

func inPlace(args []arg) bool {
	for _, a := range args[1:] {
		if a.s == "-i" || strings.HasPrefix(a.s, "-i") && !strings.HasPrefix(a.s, "--") || a.s == "--in-place" || strings.HasPrefix(a.s, "--in-place=") ||
			(strings.HasPrefix(a.s, "-") && !strings.HasPrefix(a.s, "--") && strings.Contains(a.s, "i") && len(a.s) <= 4) {
			return true
		}
	}
	return false
}

func modeOption(args []arg) (string, bool) {
	for i, a := range args[1:] {
		if (a.s == "-m" || a.s == "--mode") && i+2 < len(args) {
			return args[i+2].s, true
		}
		if strings.HasPrefix(a.s, "--mode=") {
			return strings.TrimPrefix(a.s, "--mode="), true
		}
		if strings.HasPrefix(a.s, "-m") && len(a.s) > 2 {
			return a.s[2:], true
		}
	}
	return "", false
}

// openMode reports world-writable modes and setuid/setgid bits, numeric
// (777, 666, 2755, 4755) or symbolic (a+rwx, o+w, +s, u+s).
func openMode(m string) bool {
	if m == "" {
		return false
	}
	if n, err := strconv.ParseUint(m, 8, 32); err == nil && strings.Trim(m, "01234567") == "" {
		return n&0o002 != 0 || n&0o6000 != 0
	}
	// GNU's symbolic grammar: [ugoa]*([-+=]([rwxXst]*|[ugo]|[0-7]+))+,...
	for _, clause := range strings.Split(m, ",") {
		i := 0
		for i < len(clause) && strings.IndexByte("ugoa", clause[i]) >= 0 {
			i++
		}
		who := clause[:i]
		for i < len(clause) {
			op := clause[i]
			if strings.IndexByte("+-=", op) < 0 {
				return false // not a mode: chmod refuses it
			}
			i++
			j := i
			for j < len(clause) && strings.IndexByte("+-=", clause[j]) < 0 {
				j++
			}
			perms := clause[i:j]
			i = j
			if op == '-' {
				continue
			}
			if n, err := strconv.ParseUint(perms, 8, 32); err == nil {
				if n&0o002 != 0 || n&0o6000 != 0 {
					return true // =777, +4000
				}
				continue
			}
			others := strings.ContainsAny(who, "ao") || who == "" && op == '='
			switch {
			case strings.ContainsAny(perms, "ugo") && (others || who == ""):
				return true // o=u: others get the owner's rights, write included
			case strings.Contains(perms, "s") && (who == "" || strings.ContainsAny(who, "uga")):
				return true // setuid, setgid
			case strings.Contains(perms, "w") && others:
				return true
			case who == "" && strings.Contains(perms, "w") && strings.Contains(perms, "x") && strings.Contains(perms, "r"):
				return true // +rwx: everyone's, as far as the umask lets it
			}
		}
	}
	return false
}

// modeWord: GNU chmod reads a word starting with "-" as a mode when every
// character of it is one of a mode's (-x,o+w is a mode, -R an option).
func modeWord(s string) bool {
	return strings.HasPrefix(s, "-") && len(s) > 1 && strings.Trim(s[1:], "rwxXstugoa01234567,+=-") == ""
}

// worldWritable are system paths whose mode is open to everyone: a mode
// copied from them (chmod --reference) opens the target.
var worldWritable = set("/tmp", "/var/tmp", "/dev/shm", "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
	"/dev/tty", "/dev/ptmx", "/run/lock", "/var/lock", "/var/crash", "/var/mail")

// reference is the file of --reference=F or --reference F.
func reference(args []arg) (string, bool) {
	for i, a := range args[1:] {
		if strings.HasPrefix(a.s, "--reference=") {
			return strings.TrimPrefix(a.s, "--reference="), true
		}
		if a.s == "--reference" && i+2 < len(args) {
			return args[i+2].s, true
		}
	}
	return "", false
}

func (c *checker) chmod(args []arg) (verdict, bool) {
	if ref, ok := reference(args); ok {
		if worldWritable[clean(ref)] {
			return refuse("open-permissions", "chmod --reference="+ref+" copies a world-writable mode"), true
		}
		return verdict{}, false
	}
	for _, a := range args[1:] {
		if a.s == "--" || strings.HasPrefix(a.s, "-") && !modeWord(a.s) && a.static {
			continue // an option such as -R
		}
		modes := []string{a.s}
		if !a.static {
			modes = nil
			for _, cand := range c.candidates(a)[1:] {
				modes = append(modes, cand.s)
			}
		}
		for _, m := range modes {
			if openMode(m) {
				return refuse("open-permissions", "chmod "+m+" makes files world-writable or setuid/setgid"), true
			}
		}
		break // the mode is the first word that is not an option
	}
	for _, a := range skipN(args, 2) {
		if a.static && systemPath(a.s) && !strings.HasPrefix(a.s, "-") {
			return refuse("system-file", "chmod changes a system file's permissions: "+a.s), true
		}
	}
	return verdict{}, false
}

func (c *checker) chown(n string, args []arg) (verdict, bool) {
	if ref, ok := reference(args); ok {
		if r := clean(ref); strings.HasPrefix(r, "/") && (rootishDir(r) || systemPath(r) || worldWritable[r]) {
			return refuse("chown-root", n+" --reference="+ref+" copies the owner of a file root owns"), true
		}
		return verdict{}, false
	}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a.s, "-") {
			if a.s == "--from" {
				i++ // --from OWNER: the owner the files must have now
			}
			continue
		}
		for _, cand := range c.candidates(a)[1:] {
			if v, ok := c.chown(n, append([]arg{args[0]}, static([]string{cand.s})...)); ok && v.v == Refuse {
				return v, true
			}
		}
		owner := a.s
		if n == "chgrp" {
			owner = ":" + owner
		}
		user, group, found := strings.Cut(owner, ":")
		if !found {
			// The old OWNER.GROUP form.
			user, group, _ = strings.Cut(owner, ".")
		}
		if rootName(user) || rootName(group) || group == "wheel" {
			return refuse("chown-root", n+" hands files to root"), true
		}
		break
	}
	for _, a := range skipN(args, 2) {
		if a.static && systemPath(a.s) && !strings.HasPrefix(a.s, "-") {
			return refuse("system-file", n+" changes a system file's owner: "+a.s), true
		}
	}
	return verdict{}, false
}

// find: free only without actions. -exec & co run a command (judged);
// -delete from a system path is refused; -fprint & co write files.
func (c *checker) find(args []arg, depth int) (verdict, bool) {
	var starts []arg
	i := 1
	for ; i < len(args); i++ {
		s := args[i].s
		if strings.HasPrefix(s, "-") || s == "(" || s == "!" || s == `\(` {
			if s == "-H" || s == "-L" || s == "-P" || strings.HasPrefix(s, "-O") || s == "-D" {
				if s == "-D" {
					i++
				}
				continue
			}
			break
		}
		starts = append(starts, args[i])
	}
	starts = c.rooted(append([]arg{args[0]}, starts...))[1:]
	var out verdict
	decided := false
	for ; i < len(args); i++ {
		switch s := args[i].s; s {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(args) && args[j].s != ";" && args[j].s != "+" {
				j++
			}
			inner := append([]arg(nil), args[i+1:j]...)
			v := ask("find-exec", "find "+s+" runs a command on each file")
			if len(inner) > 0 {
				iv := c.judge(inner, depth+1)
				if iv.v == Refuse {
					v = refuse(iv.rule, "find "+s+" runs "+strings.Join(strs(inner), " ")+": "+iv.reason)
				}
				if inner[0].static && deleters[canonical(inner[0].s)] {
					for _, st := range starts {
						if rootish(st) || st.static && systemPath(st.s) {
							v = refuse("system-destruction", "find "+s+" deletes files from "+st.s)
						}
					}
				}
			}
			out, decided = worst(out, v), true
			i = j
		case "-delete":
			v := ask("find-delete", "find -delete deletes files")
			for _, st := range starts {
				if rootish(st) || st.static && systemPath(st.s) {
					v = refuse("system-destruction", "find -delete from "+st.s)
				}
			}
			out, decided = worst(out, v), true
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			v := ask("find-write", "find "+s+" writes a file")
			if i+1 < len(args) {
				if dev, harmless := devicePath(args[i+1].s); dev && !harmless || systemPath(args[i+1].s) {
					v = refuse("system-file", "find "+s+" writes "+args[i+1].s)
				}
			}
			out, decided = worst(out, v), true
		}
	}
	return out, decided
}

// git: global options that change config, directory or pager can run
// code; some subcommand flags run programs or write files.
func git(args []arg) (verdict, bool) {
	i := 1
	for ; i < len(args); i++ {
		s := args[i].s
		if !strings.HasPrefix(s, "-") {
			break
		}
		if gitHarmlessGlobal[s] {
			continue
		}
		switch {
		case s == "-c" || strings.HasPrefix(s, "-c") || strings.HasPrefix(s, "--config-env"):
			kv := strings.TrimPrefix(s, "-c")
			if kv == "" && i+1 < len(args) {
				kv = args[i+1].s
			}
			if v, ok := gitConfigCode(kv); ok {
				return v, true
			}
			return ask("git-config", "git -c overrides configuration, which can name programs to run"), true
		case s == "-p" || s == "--paginate":
			return ask("git-pager", "git --paginate forces a pager, which configuration can make any program"), true
		case strings.HasPrefix(s, "--git-dir") || strings.HasPrefix(s, "--work-tree") || s == "-C" || strings.HasPrefix(s, "--exec-path") ||
			strings.HasPrefix(s, "--namespace") || s == "--bare" || strings.HasPrefix(s, "--super-prefix"):
			return ask("git-foreign-dir", "git "+s+" reads another repository's configuration and hooks"), true
		case s == "--version" || s == "--help" || s == "-h" || s == "--html-path" || s == "--man-path" || s == "--info-path":
			return verdict{}, false
		default:
			return ask("git-option", "git global option "+s), true
		}
	}
	for _, a := range args[i:] {
		// git's ext:: transport runs its command ("%" escapes a space).
		if rest, ok := strings.CutPrefix(a.s, "ext::"); ok {
			code := strings.NewReplacer("% ", " ", "%%", "%", "%s", "", "%S", "", "%G", "", "%V", "").Replace(rest)
			sub := &checker{a: New(nil), quick: true}
			if v := sub.quietSource(code, 0); v.v == Refuse {
				return refuse(v.rule, "git's ext:: transport runs "+code+": "+v.reason), true
			}
			return ask("git-transport", "git's ext:: transport runs a command"), true
		}
	}
	for _, a := range args[i:] {
		s := a.s
		for _, f := range []string{"--ext-diff", "--output", "--open-files-in-pager", "--upload-pack", "--receive-pack", "--exec", "--textconv", "--config"} {
			if s == f || strings.HasPrefix(s, f+"=") {
				return ask("git-flag", "git "+f+" runs a program or writes a file"), true
			}
		}
		if s == "-O" || strings.HasPrefix(s, "-O") && len(s) > 2 && i < len(args) && args[i].s == "grep" {
			return ask("git-flag", "git grep -O opens files in a pager"), true
		}
	}
	return verdict{}, false
}

// powershell: the code, wherever it is given (-Command and its
// abbreviations, a positional script block, -EncodedCommand decoded), is
// scanned for elevation, Invoke-Expression and refused programs; the rest
// is not analyzed.
func powershell(args []arg) (verdict, bool) {
	code := strings.Join(strs(args[1:]), " ")
	for i, a := range args[1:] {
		l := strings.ToLower(a.s)
		if l == "-ec" || len(l) >= 2 && strings.HasPrefix("-encodedcommand", l) {
			if i+2 >= len(args) {
				return ask("opaque-code", "powershell -EncodedCommand without its code"), true
			}
			dec, ok := decodePowerShell(args[i+2].s)
			if !ok {
				return ask("opaque-code", "powershell -EncodedCommand runs code that cannot be read"), true
			}
			// Decoded, it is judged for elevation and refused programs;
			// what it evaluates stays opaque (ask).
			if v, bad := powershellCode(dec, false); bad {
				return v, true
			}
			return ask("opaque-code", "powershell -EncodedCommand runs code that is not analyzed"), true
		}
	}
	if v, bad := powershellCode(code, true); bad {
		return v, true
	}
	// The code proper: from the first word that is not an option (or an
	// option's value), so its first command is at a statement's start.
	valued := set("-executionpolicy", "-ep", "-ex", "-windowstyle", "-w", "-configurationname", "-outputformat", "-of",
		"-inputformat", "-if", "-psconsolefile", "-version", "-v", "-workingdirectory", "-wd", "-settingsfile")
	for i := 1; i < len(args); i++ {
		l := strings.ToLower(args[i].s)
		if valued[l] {
			i++
			continue
		}
		if strings.HasPrefix(l, "-") {
			continue
		}
		if v, bad := powershellCode(strings.Join(strs(args[i:]), " "), true); bad {
			return v, true
		}
		break
	}
	return ask("interpreter", "powershell runs code that is not analyzed"), true
}

// powershellCode refuses elevation, Invoke-Expression and refused
// programs at the start of a statement.
func powershellCode(code string, evals bool) (verdict, bool) {
	l := strings.ToLower(code)
	if verbRunAs().MatchString(l) || verbProperty().MatchString(l) {
		return refuse("privilege-escalation", "the PowerShell code elevates (-Verb RunAs)"), true
	}
	for _, w := range strings.FieldsFunc(l, func(r rune) bool { return !(r == '-' || r == '.' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') }) {
		if w == "iex" || w == "invoke-expression" {
			if !evals {
				return verdict{}, false
			}
			return refuse("eval-exec", "the PowerShell code uses Invoke-Expression"), true
		}
	}
	for _, stmt := range strings.FieldsFunc(l, func(r rune) bool { return strings.ContainsRune(";|&\n{}()'\"", r) }) {
		f := strings.Fields(stmt)
		if len(f) == 0 {
			continue
		}
		if v, ok := refusedProgram(canonical(f[0]), static(f)); ok {
			return refuse(v.rule, "the PowerShell code runs "+f[0]+": "+v.reason), true
		}
	}
	return verdict{}, false
}

// verbProperty: elevation through ProcessStartInfo (Verb = 'runas') or
// Shell.Application's ShellExecute(..., 'runas').
var verbProperty = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`verb\s*=\s*['"]?runas|shellexecute\s*\(.*['"]runas['"]`)
})

// decodePowerShell decodes -EncodedCommand: base64 of UTF-16LE text.
func decodePowerShell(s string) (string, bool) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil || len(b)%2 != 0 {
		return "", false
	}
	u := make([]uint16, len(b)/2)
	for i := range u {
		u[i] = uint16(b[2*i]) | uint16(b[2*i+1])<<8
	}
	return string(utf16.Decode(u)), true
}

// cmdExe: cmd /c code; each command of the code is judged by name.
func (c *checker) cmdExe(args []arg, depth int) (verdict, bool) {
	for i, a := range args[1:] {
		if strings.EqualFold(a.s, "/c") || strings.EqualFold(a.s, "/k") {
			code := strings.Join(strs(args[i+2:]), " ")
			out := ask("interpreter", "cmd runs code")
			for _, part := range strings.FieldsFunc(code, func(r rune) bool { return r == '&' || r == '|' }) {
				if f := strings.Fields(part); len(f) > 0 {
					out = worst(out, c.quiet(static(f), depth))
				}
			}
			return out, true
		}
	}
	return ask("interpreter", "cmd runs code"), true
}

// quietSource judges code without recording its pieces: the worst verdict.
func (c *checker) quietSource(code string, depth int) verdict {
	sub := &checker{a: c.a, quick: true}
	sub.source(code, depth+1)
	v := allow("empty", "")
	for _, p := range sub.pieces {
		v = worst(v, verdict{p.Verdict, p.Rule, p.Reason})
	}
	return v
}

// sshRemoteCommand is the command ssh runs on the remote host: the words
// after the destination.
func sshRemoteCommand(args []arg) string {
	const withValue = "BbcDEeFIiJLlmOoPpQRSWw"
	i := 1
	for i < len(args) {
		s := args[i].s
		if s == "--" {
			i++
			break
		}
		if !strings.HasPrefix(s, "-") || s == "-" {
			break
		}
		last := s[len(s)-1]
		if strings.IndexByte(withValue, last) >= 0 && !strings.ContainsAny(s[1:len(s)-1], withValue) {
			i++
		}
		i++
	}
	if i+1 >= len(args) {
		return ""
	}
	return strings.Join(strs(args[i+1:]), " ")
}

// rsyncDeletes: --delete (and its variants) into the root, a system tree
// or a home; --remove-source-files from one.
func rsyncDeletes(args []arg) (verdict, bool) {
	del, removeSrc := false, false
	var paths []arg
	for _, a := range args[1:] {
		switch {
		case strings.HasPrefix(a.s, "--del"):
			del = true
		case a.s == "--remove-source-files":
			removeSrc = true
		case !strings.HasPrefix(a.s, "-"):
			paths = append(paths, a)
		}
	}
	if len(paths) == 0 {
		return verdict{}, false
	}
	dest := paths[len(paths)-1]
	if del && (rootish(dest) || dest.static && systemPath(strings.TrimPrefix(path.Clean("/"+dest.s), "")) && strings.HasPrefix(dest.s, "/")) {
		return refuse("system-destruction", "rsync --delete empties "+dest.s+": the root, a home or a system tree"), true
	}
	if removeSrc {
		for _, p := range paths[:len(paths)-1] {
			if rootish(p) {
				return refuse("system-destruction", "rsync --remove-source-files deletes "+p.s), true
			}
		}
	}
	return verdict{}, false
}

// rootName: root, or uid/gid 0 however written (0, 00, +0).
func rootName(s string) bool {
	if s == "root" {
		return true
	}
	s = strings.TrimPrefix(s, "+")
	return s != "" && strings.Trim(s, "0") == ""
}

// gitConfigCode judges the code a git -c setting names: an alias starting
// with "!", a pager, an editor, an ssh command, a helper, a filter.
func gitConfigCode(kv string) (verdict, bool) {
	key, value, ok := strings.Cut(kv, "=")
	if !ok {
		return verdict{}, false
	}
	key = strings.ToLower(key)
	code := ""
	switch {
	case strings.HasPrefix(key, "alias.") && strings.HasPrefix(value, "!"):
		code = value[1:]
	case strings.HasPrefix(key, "alias."):
		return verdict{}, false
	case key == "core.pager" || key == "core.editor" || key == "core.sshcommand" || key == "sequence.editor" ||
		key == "diff.external" || key == "core.fsmonitor" || key == "gpg.program" || strings.HasPrefix(key, "pager.") ||
		strings.HasSuffix(key, ".command") || strings.HasSuffix(key, ".textconv") || strings.HasSuffix(key, ".clean") ||
		strings.HasSuffix(key, ".smudge") || strings.HasSuffix(key, ".process") || strings.HasSuffix(key, ".cmd") ||
		strings.HasSuffix(key, ".helper") || strings.HasSuffix(key, ".program") || strings.HasSuffix(key, ".tool") ||
		key == "core.askpass" || key == "core.hookspath":
		code = strings.TrimPrefix(value, "!")
	default:
		return verdict{}, false
	}
	sub := &checker{a: New(nil)}
	if v := sub.quietSource(code, 0); v.v == Refuse {
		return refuse(v.rule, "git -c "+key+" runs "+code+": "+v.reason), true
	}
	return verdict{}, false
}

// windowsHome: the user's profile as PowerShell and cmd.exe name it
// ($env:USERPROFILE, %USERPROFILE%, $HOME, ~), without a path below it.
func windowsHome(s string) bool {
	u := strings.ToUpper(strings.Trim(s, `"'\/`))
	for _, h := range []string{"$ENV:USERPROFILE", "%USERPROFILE%", "$$:USERPROFILE", "$:USERPROFILE", "%HOMEDRIVE%%HOMEPATH%",
		"$ENV:HOMEDRIVE$ENV:HOMEPATH", "$HOME", "~"} {
		if u == h {
			return true
		}
	}
	return false
}
