package shellcheck

import (
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// verdict is a judgment with its rule and reason.
type verdict struct {
	v      Verdict
	rule   string
	reason string
}

func refuse(rule, reason string) verdict { return verdict{Refuse, rule, reason} }
func ask(rule, reason string) verdict    { return verdict{Ask, rule, reason} }
func allow(rule, reason string) verdict  { return verdict{Allow, rule, reason} }

func worst(a, b verdict) verdict {
	if b.v > a.v {
		return b
	}
	return a
}

// Refused program families: no approval can run these.
var (
	escalation = set("sudo", "su", "doas", "run0", "pkexec", "runas", "sudoedit", "runuser", "ksu", "gosu", "su-exec", "calife",
		"setpriv", "capsh", "newgrp", "sg", "nsenter", "visudo", "sudo-rs", "su-rs", "please", "pleaseedit", "gsudo", "systemd-run",
		"psexec", "psexec64", "paexec", "sudo.ws", "doas-rs", "lxsu", "gksu", "gksudo", "kdesu", "kdesudo", "beesu", "lxqt-sudo",
		"xdg-su", "su-to-root", "pfexec", "dzdo", "pbrun", "pmrun", "sesu", "suexec", "s6-setuidgid", "setuidgid", "elevate",
		"sudo-run", "mate-su")
	evalExec      = set("eval", "exec", "iex", "invoke-expression")
	kernelModules = set("insmod", "modprobe", "rmmod", "kmod", "kldload", "kldunload", "kextload", "kextunload", "kexec",
		"kextutil", "dkms", "bpftool")
	firewalls = set("iptables", "ip6tables", "iptables-legacy", "ip6tables-legacy", "iptables-nft", "ip6tables-nft",
		"iptables-restore", "ip6tables-restore", "iptables-legacy-restore", "iptables-nft-restore", "nft", "ufw", "firewall-cmd",
		"firewall-offline-cmd", "ebtables", "arptables", "pfctl", "ipfw", "new-netfirewallrule", "set-netfirewallrule",
		"remove-netfirewallrule", "set-netfirewallprofile", "disable-netfirewallrule", "enable-netfirewallrule", "iptables-apply",
		"ip6tables-apply", "ebtables-restore", "arptables-restore", "ebtables-nft", "arptables-nft", "ebtables-legacy",
		"arptables-legacy", "ebtables-nft-restore", "arptables-nft-restore", "firewallctl", "ipset", "shorewall", "shorewall6",
		"csf", "apf", "fwbuilder", "nftables", "iptables-translate", "ip6tables-translate", "xtables-monitor", "ebtables-save")
	diskTools = set("mkfs", "mke2fs", "mkswap", "mkdosfs", "mkntfs", "mkexfatfs", "wipefs", "fdisk", "sfdisk", "cfdisk", "gdisk",
		"sgdisk", "cgdisk", "parted", "diskpart", "blkdiscard", "hdparm", "sgdisk", "zpool", "mdadm", "cryptsetup", "clear-disk",
		"format-volume", "initialize-disk", "lvremove", "vgremove", "pvremove", "remove-partition", "sg_format", "mkfs", "mkudffs",
		"mkisofs", "zfs", "btrfs", "lvcreate", "vgcreate", "pvcreate", "e2fsck", "fsck", "tune2fs", "resize2fs", "partprobe",
		"badblocks", "mke2fs", "dmsetup", "losetup", "swapon", "swapoff", "sgdisk", "nvme")
	shells       = set("sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "fish", "csh", "tcsh", "rbash")
	interpreters = set("python", "python2", "python3", "perl", "ruby", "node", "nodejs", "deno", "bun", "php", "lua", "luajit",
		"tclsh", "wish", "rscript", "r", "osascript", "irb", "jshell", "groovy", "scala", "elixir", "erl", "escript", "make", "gmake",
		"bmake", "crontab", "at", "batch", "pwsh", "powershell", "cmd", "source", ".", "busybox", "expect", "gdb", "vim", "vi", "nvim", "emacs", "ed", "ex")
	pythonRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(python|pypy)[0-9.]*$`) })
)

func set(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// canonical is the name a command is judged by: its base name, lower-cased
// (Windows names are case-insensitive), without .exe.
func canonical(name string) string {
	base := name
	if i := strings.LastIndexAny(base, `/\`); i >= 0 {
		base = base[i+1:]
	}
	base = strings.ToLower(base)
	return strings.TrimSuffix(base, ".exe")
}

// standardBin reports a path in a standard bin directory: /usr/bin/git is git.
func standardBin(name string) bool {
	dir := path.Dir(name)
	switch dir {
	case "/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin":
		return true
	}
	return false
}

func refusedName(n string) bool {
	return escalation[n] || evalExec[n] || kernelModules[n] || firewalls[n] || diskTools[n] || strings.HasPrefix(n, "mkfs.") ||
		strings.HasPrefix(n, "mke2fs")
}

func isInterpreter(n string) bool {
	return shells[n] || interpreters[n] || pythonRE().MatchString(n)
}

// judge decides on one command line (argv), adding pieces for code nested in
// it (sh -c, find -exec, ...).
func (c *checker) judge(args []arg, depth int) verdict {
	v := c.judgeName(args, depth)
	if v.v == Ask && len(args) > 0 && args[0].static {
		if r, ok := c.refusedInWords(canonical(args[0].s), args, depth); ok {
			return r
		}
	}
	return v
}

// judgeName judges argv by its program's name and that program's rules.
func (c *checker) judgeName(args []arg, depth int) verdict {
	if len(args) == 0 {
		return allow("empty", "no command")
	}
	name := args[0]
	if !name.static {
		return c.dynamicName(args, depth)
	}
	if name.s == "" {
		return ask("empty-command-name", "the command name is empty")
	}
	if name.glob && name.s != "[" {
		return globName(name)
	}
	n := canonical(name.s)
	if v, ok := refusedProgram(n, args); ok {
		return v
	}
	if v, ok := c.programOutputs(n, args); ok {
		return v
	}
	// An alias the command defines (with expand_aliases) replaces the name.
	if value, ok := c.aliases[name.s]; ok && depth < maxDepth {
		delete(c.aliases, name.s)
		r := c.quiet(append(static(strings.Fields(value)), args[1:]...), depth)
		c.aliases[name.s] = value
		if r.v == Refuse {
			return refuse(r.rule, "the alias "+name.s+" is "+value+": "+r.reason)
		}
	}
	if w, ok := wrappers[n]; ok {
		return c.wrapper(n, w, args, depth)
	}
	if shells[n] {
		return c.shell(n, args, depth)
	}
	if v, ok := c.specific(n, args, depth); ok {
		return runsRefused(n, args, v)
	}
	if isInterpreter(n) {
		if prefix := c.match(args); prefix != nil && len(prefix) > 1 {
			if spec := specs[strings.Join(prefix, " ")]; spec != nil && spec.maxOperands == -1 {
				return c.freeArgs(prefix, args) // python3 --version
			}
		}
		if v, ok := c.codeFromData(n); ok {
			return v
		}
		for _, a := range args[1:] {
			if m := diskInText().FindString(a.s); m != "" {
				return refuse("device-write", n+" runs code that names the disk "+m+", which it may write")
			}
		}
		return ask("interpreter", n+" runs code that is not analyzed")
	}
	if prefix := c.match(args); prefix != nil {
		if n == "git" && len(c.dirs) > 0 {
			// A directory of the copy may hold a repository of its own,
			// whose configuration (fsmonitor, diff.external) runs programs.
			return ask("git-nested", "git after cd: the directory may be inside a nested repository whose configuration runs programs (git -C asks too)")
		}
		return runsRefused(n, args, c.freeArgs(prefix, args))
	}
	return ask("unknown-command", n+" is not in the free list")
}

// runsRefused: sed's e and awk's system() and pipes run shell commands
// written in their program; one that names a refused program is refused.
func runsRefused(n string, args []arg, v verdict) verdict {
	if v.v != Ask || v.rule != "awk-system" && v.rule != "sed-execute" {
		return v
	}
	// Each string of the program (awk's "…", sed's e text) as the command
	// it may be, and as the file print > writes.
	sub := &checker{a: New(nil), quick: true}
	var texts []string
	if n == "sed" {
		scripts, _, _ := sedScripts(args)
		for _, sc := range scripts {
			p := parseSed(sc.s)
			texts = append(append(texts, p.execs...), p.writes...)
		}
	}
	for _, a := range args[1:] {
		texts = append(texts, programStrings(a.s)...)
	}
	for _, text := range texts {
		if r := sub.quietSource(text, 1); r.v == Refuse {
			return refuse(r.rule, n+" runs "+text+": "+r.reason)
		}
		if r, bad := writeTarget(n, static([]string{text})[0]); bad {
			return r
		}
	}
	for _, a := range args[1:] {
		for _, f := range nameTokens(a.s) {
			if r, ok := refusedProgram(canonical(f), nil); ok && !evalExec[canonical(f)] {
				return refuse(r.rule, n+" runs commands, and its program holds "+f+": "+r.reason)
			}
		}
	}
	return v
}

// programStrings are the quoted strings of an awk program and the text
// of sed's e commands: what they may run or write.
func programStrings(p string) []string {
	var out []string
	for i := 0; i < len(p); i++ {
		if p[i] != '"' {
			continue
		}
		var b strings.Builder
		for i++; i < len(p) && p[i] != '"'; i++ {
			if p[i] == '\\' && i+1 < len(p) {
				i++
			}
			b.WriteByte(p[i])
		}
		out = append(out, b.String())
	}
	for _, line := range strings.FieldsFunc(p, func(r rune) bool { return r == '\n' || r == ';' }) {
		line = strings.TrimLeft(line, "0123456789,$/!^ ")
		if rest, ok := strings.CutPrefix(line, "e"); ok {
			out = append(out, strings.TrimSpace(rest))
		}
	}
	return out
}

// refusedInWords: a program the analyzer does not know may run its words
// (xvfb-run sudo id, ssh host -- sudo id, tmux new 'sudo id', tar
// --checkpoint-action=exec=CMD): when any suffix of its words, any word,
// or any value after an "=" in a word, judged as a command, is refused,
// so is the program. This refuses some commands that would only have
// printed a refused name (man sudo); no approval can run those.
func (c *checker) refusedInWords(n string, args []arg, depth int) (verdict, bool) {
	if depth >= maxDepth || len(args) < 2 || dataBuiltins[n] || c.inWords {
		return verdict{}, false
	}
	mentions := false
	for _, a := range args[1:] {
		for _, f := range nameTokens(a.s) {
			mentions = mentions || refusedName(canonical(f))
		}
		if _, ok := c.unknownDevice(a); ok {
			mentions = true
		}
	}
	if !mentions {
		return verdict{}, false
	}
	for _, a := range args[1:] {
		if v, ok := c.unknownDevice(a); ok {
			return v, true
		}
	}
	// Each suffix is judged by its name only (no further search of its
	// words: that would multiply with the number of words).
	sub := &checker{a: c.a, vars: c.vars, dirs: c.dirs, roots: c.roots, aliases: c.aliases, rel: c.rel, cdEscapes: c.cdEscapes,
		quick: true, inWords: true}
	for i := 1; i < len(args); i++ {
		if r := sub.quiet(args[i:], depth); r.v == Refuse {
			return refuse(r.rule, n+" may run "+strings.Join(strs(args[i:]), " ")+": "+r.reason), true
		}
	}
	for _, a := range args[1:] {
		if !a.static {
			continue
		}
		code := strings.TrimLeft(a.s, "+!:|-@") // less +!CMD, vim -c !CMD, |CMD
		for {
			if r := c.quietSource(code, depth); r.v == Refuse {
				return refuse(r.rule, n+" may run "+code+": "+r.reason), true
			}
			_, after, ok := strings.Cut(code, "=")
			if !ok {
				break
			}
			code = after
		}
	}
	return verdict{}, false
}

// unknownDevice: a disk or memory device handed to a program whose
// options are not known, which may write it.
func (c *checker) unknownDevice(a arg) (verdict, bool) {
	s := a.s
	if strings.HasPrefix(s, "if=") {
		return verdict{}, false // dd's input
	}
	if _, v, ok := strings.Cut(s, "="); ok && strings.HasPrefix(v, "/dev/") {
		s = v
	}
	if !a.static || !strings.HasPrefix(clean(s), "/dev/") {
		return verdict{}, false
	}
	if _, ok := descriptor(s); ok {
		return verdict{}, false
	}
	if diskDevice().MatchString(clean(s)) {
		return refuse("device-write", "a program whose options are not known is handed the device "+s+", which it may write"), true
	}
	return verdict{}, false
}

// diskInText: a disk device named inside code ("open('/dev/sda','w')").
var diskInText = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`/dev/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme[0-9]|mmcblk[0-9]|md[0-9]|dm-[0-9]|mem\b|kmem\b|port\b)`)
})

// dataBuiltins are shell builtins that never run their words.
var dataBuiltins = set("true", "false", ":", "echo", "printf", "test", "[", "type", "pwd", "cd", "shift", "return", "exit",
	"break", "continue", "wait", "jobs", "dirs", "times", "umask", "ulimit", "help", "history", "logout")

// diskDevice: disks, partitions, memory and the like.
var diskDevice = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^/dev/(sd|hd|vd|xvd|nvme|mmcblk|md|dm-|loop|sr|nbd|rbd|zd|mapper/|disk/|mem$|kmem$|port$|root$|block/|mtd)`)
})

// nameTokens splits a word where a program's name cannot continue.
func nameTokens(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._+-", r))
	})
}

// dynamicName judges a command whose name needs the environment: at least
// ask, and refuse when any resolution we can make without running anything
// is refused ($IFS as a space; an empty expansion promoting the next word).
func (c *checker) dynamicName(args []arg, depth int) verdict {
	v := ask("dynamic-command", "the command name comes from an expansion or substitution, so what runs is unknown")
	name := args[0]
	if name.ifs {
		alt := static(strings.Fields(strings.ReplaceAll(name.alt, "$", "")))
		alt = append(alt, args[1:]...)
		if r := c.quiet(alt, depth); r.v == Refuse {
			return refuse(r.rule, "with $IFS read as a space: "+r.reason)
		}
	}
	// The values the command gives the variable, and an expansion's default.
	candidates := append(append([]string(nil), c.vars[name.param]...), name.def...)
	candidates = append(candidates, c.alternatives(name)...)
	for _, cand := range candidates {
		alt := append(static(strings.Fields(cand)), args[1:]...)
		if r := c.quiet(alt, depth); r.v == Refuse {
			return refuse(r.rule, "$"+name.param+" can be "+cand+": "+r.reason)
		}
	}
	if name.prefix != "" {
		if g := globName(arg{s: name.prefix + "*", static: true, glob: true}); g.v == Refuse {
			return refuse(g.rule, "the name starts "+name.prefix+" and may complete to a refused program")
		}
	}
	if len(args) > 1 {
		if r := c.quiet(args[1:], depth); r.v == Refuse {
			return refuse(r.rule, "if the expansion is empty, the next word runs: "+r.reason)
		}
	}
	// a=(sudo id); "${a[@]}", set -- sudo; "$1", read x <<< sudo: values
	// reach variables in more ways than are tracked; a refused name
	// written anywhere in the command is one the name may take.
	if lit := c.refusedLiteral(); lit != "" {
		r, _ := refusedProgram(lit, nil)
		return refuse(r.rule, "the command name is computed at run time and the command holds "+lit+": "+r.reason)
	}
	return v
}

// quiet judges without recording nested pieces.
func (c *checker) quiet(args []arg, depth int) verdict {
	sub := &checker{a: c.a, vars: c.vars, dirs: c.dirs, roots: c.roots, aliases: c.aliases, rel: c.rel, cdEscapes: c.cdEscapes,
		quick: true, inWords: c.inWords}
	v := sub.judge(args, depth+1)
	for _, p := range sub.pieces {
		v = worst(v, verdict{p.Verdict, p.Rule, p.Reason})
	}
	return v
}

// globName judges a command name with glob characters: refused when the
// pattern can name a refused program.
func globName(name arg) verdict {
	base := name.s
	if i := strings.LastIndex(base, "/"); i >= 0 {
		base = base[i+1:]
	}
	literal := strings.Trim(base, "*?[]") != ""
	if literal {
		for _, n := range refusedList {
			if ok, _ := path.Match(strings.ToLower(base), n); ok {
				return refuse("glob-command", "the pattern "+name.s+" can name "+n)
			}
		}
	}
	return ask("glob-command", "a glob as the command name runs whatever file matches")
}

var refusedList = func() []string {
	var out []string
	for _, m := range []map[string]bool{escalation, evalExec, kernelModules, firewalls, diskTools} {
		for n := range m {
			out = append(out, n)
		}
	}
	return append(out, "mkfs.ext4", "mkfs.xfs", "mkfs.vfat", "mkfs.btrfs")
}()

// refusedProgram recognizes the families no approval can run.
func refusedProgram(n string, args []arg) (verdict, bool) {
	if len(args) == 0 {
		args = static([]string{n})
	}
	switch {
	case escalation[n]:
		return refuse("privilege-escalation", n+" escalates privileges"), true
	case evalExec[n]:
		return refuse("eval-exec", n+" runs code that cannot be judged before it runs"), true
	case kernelModules[n]:
		return refuse("kernel-module", n+" loads or unloads kernel modules"), true
	case firewalls[n]:
		if strings.HasSuffix(n, "-save") {
			return verdict{}, false
		}
		return refuse("firewall", n+" changes the firewall"), true
	case diskTools[n] || strings.HasPrefix(n, "mkfs.") || strings.HasPrefix(n, "mke2fs"):
		return refuse("disk-destruction", n+" formats or repartitions disks"), true
	case n == "machinectl" && len(args) > 1 && (args[1].s == "shell" || args[1].s == "login"):
		return refuse("privilege-escalation", "machinectl shell opens a shell as another user"), true
	case (n == "start-process" || n == "saps" || n == "start") && verbRunAs().MatchString(strings.ToLower(strings.Join(strs(args[1:]), " "))):
		return refuse("privilege-escalation", "Start-Process -Verb RunAs elevates"), true
	case n == "format" && len(args) > 1 && isWindowsPath(args[1].s+`\`):
		return refuse("disk-destruction", "format erases a drive"), true
	case (n == "usermod" || n == "useradd" || n == "adduser" || n == "groupmod" || n == "newusers") && uidZero(args):
		return refuse("privilege-escalation", n+" gives an account uid 0 (or a duplicate uid)"), true
	case (n == "ssh" || n == "scp" || n == "sftp" || n == "rsync" || n == "sshfs" || n == "mosh" || n == "autossh") && sshRoot(args):
		return refuse("privilege-escalation", "ssh logs in as root"), true
	case containerRuntimes[n] && privilegedContainer(args):
		return refuse("privilege-escalation", n+" starts a container with the host's privileges"), true
	case (n == "lxc" || n == "incus") && lxcPrivileged(args):
		return refuse("privilege-escalation", n+" makes a container privileged"), true
	case (n == "usermod" || n == "gpasswd" || n == "adduser" || n == "addgroup" || n == "useradd") && privilegedGroup(args):
		return refuse("privilege-escalation", n+" adds a user to an administrators' group"), true
	case (n == "mount" || n == "umount") && mountsSystem(args):
		return refuse("system-mount", n+" changes the mounts of the root or a system tree"), true
	case (n == "kill" || n == "killall" || n == "pkill" || n == "killall5") && firewallUnit(args):
		return refuse("firewall", n+" stops the firewall"), true
	case (n == "systemctl" || n == "service") && firewallUnit(args):
		return refuse("firewall", n+" stops or changes the firewall service"), true
	case n == "umask" && openUmask(args):
		return refuse("open-permissions", "umask lets others write every new file"), true
	case strings.Contains(n, "-netfirewall") && !strings.HasPrefix(n, "get-") && !strings.HasPrefix(n, "show-"):
		return refuse("firewall", n+" changes the Windows firewall"), true
	case n == "netsh" && hasAnyFold(args, "advfirewall", "firewall"):
		return refuse("firewall", "netsh changes the Windows firewall"), true
	case initScript(args[0].s) && firewallUnit([]arg{{}, {s: canonical(args[0].s)}}):
		return refuse("firewall", args[0].s+" stops or changes the firewall service"), true
	case serviceManagers[n] && firewallUnit(args):
		return refuse("firewall", n+" stops or changes the firewall service"), true
	case n == "wsl" && wslRoot(args):
		return refuse("privilege-escalation", "wsl runs the command as root"), true
	case n == "schtasks" && schtasksElevated(args):
		return refuse("privilege-escalation", "schtasks runs a task as SYSTEM or with the highest privileges"), true
	case (n == "nircmd" || n == "nircmdc") && hasAnyFold(args, "elevate", "elevatecmd", "runassystem"):
		return refuse("privilege-escalation", n+" elevate runs a program elevated"), true
	case n == "osascript" && containsFold(args, "with administrator privileges"):
		return refuse("privilege-escalation", "osascript ... with administrator privileges elevates"), true
	case n == "chpst" && hasAnyFold(args, "-u", "-U"):
		return refuse("privilege-escalation", "chpst -u runs the command as another user"), true
	}
	return verdict{}, false
}

var serviceManagers = set("systemctl", "service", "invoke-rc.d", "rc-service", "update-rc.d", "chkconfig", "sv", "rc-update",
	"initctl", "launchctl", "stop-service", "set-service", "sc")

// initScript: /etc/init.d/NAME, /etc/rc.d/NAME, /etc/rc.d/init.d/NAME.
func initScript(name string) bool {
	d := path.Dir(clean(name))
	return d == "/etc/init.d" || d == "/etc/rc.d" || d == "/etc/rc.d/init.d"
}

func hasAnyFold(args []arg, words ...string) bool {
	for _, a := range args[1:] {
		for _, w := range words {
			if strings.EqualFold(a.s, w) {
				return true
			}
		}
	}
	return false
}

func containsFold(args []arg, s string) bool {
	for _, a := range args[1:] {
		if strings.Contains(strings.Join(strings.Fields(strings.ToLower(a.s)), " "), s) {
			return true
		}
	}
	return false
}

// openUmask: a umask that leaves others' write bit open (umask 000, 001,
// 020, 0) or grants it symbolically (umask o=rwx, umask a+w).
func openUmask(args []arg) bool {
	for _, a := range args[1:] {
		s := a.s
		if strings.HasPrefix(s, "-") {
			continue
		}
		if n, err := strconv.ParseUint(s, 8, 32); err == nil {
			return n&0o002 == 0
		}
		for _, clause := range strings.Split(s, ",") {
			i := strings.IndexAny(clause, "+=")
			if i < 0 {
				continue
			}
			who, perms := clause[:i], clause[i+1:]
			if strings.Contains(perms, "w") && (who == "" || strings.ContainsAny(who, "ao")) {
				return true
			}
		}
		return false
	}
	return false
}

// wslRoot: wsl -u root, --user root, -u 0.
func wslRoot(args []arg) bool {
	for i, a := range args[1:] {
		s := strings.ToLower(a.s)
		if (s == "-u" || s == "--user") && i+2 < len(args) {
			u := strings.ToLower(args[i+2].s)
			if u == "root" || strings.Trim(u, "0") == "" {
				return true
			}
		}
		if s == "--user=root" || s == "-uroot" {
			return true
		}
	}
	return false
}

// schtasksElevated: /ru SYSTEM (or another built-in account) or /rl HIGHEST.
func schtasksElevated(args []arg) bool {
	for i, a := range args[1:] {
		s := strings.ToLower(strings.TrimLeft(a.s, "/-"))
		if i+2 >= len(args) {
			break
		}
		v := strings.ToLower(args[i+2].s)
		if s == "ru" && (strings.Contains(v, "system") || strings.Contains(v, "administrator")) || s == "rl" && v == "highest" {
			return true
		}
	}
	return false
}

// free reports whether argv starts with a free command's words.
func (c *checker) free(args []arg) bool { return c.match(args) != nil }

// match returns the free entry argv starts with (the longest), or nil.
func (c *checker) match(args []arg) []string {
	words := make([]string, len(args))
	for i, a := range args {
		if !a.static {
			words[i] = "\x00" // never equal to a free word
			continue
		}
		words[i] = a.s
	}
	if standardBin(words[0]) {
		words[0] = path.Base(words[0])
	}
	if words[0] == "git" {
		words = gitWords(words)
	}
	var best []string
	for _, f := range c.a.free {
		if len(f) > len(words) || len(f) <= len(best) {
			continue
		}
		match := true
		for i := range f {
			if f[i] != words[i] {
				match = false
				break
			}
		}
		if match {
			best = f
		}
	}
	return best
}

// gitWords drops git's harmless global options so "git --no-pager log"
// matches "git log".
func gitWords(words []string) []string {
	out := []string{words[0]}
	i := 1
	for ; i < len(words) && gitHarmlessGlobal[words[i]]; i++ {
	}
	return append(out, words[i:]...)
}

var gitHarmlessGlobal = set("--no-pager", "--no-replace-objects", "--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs",
	"--icase-pathspecs", "--no-optional-locks", "--no-advice", "-P")

func privilegedGroup(args []arg) bool {
	for _, a := range args[1:] {
		for _, g := range strings.Split(a.s, ",") {
			switch g {
			case "sudo", "wheel", "admin", "root", "adm", "docker", "lxd", "disk", "shadow":
				return true
			}
		}
	}
	return false
}

func mountsSystem(args []arg) bool {
	for _, a := range args[1:] {
		if strings.Contains(a.s, "remount") {
			return true
		}
		if strings.HasPrefix(a.s, "/") && a.static && (clean(a.s) == "/" || systemPath(a.s)) {
			return true
		}
	}
	return false
}

func firewallUnit(args []arg) bool {
	for _, a := range args[1:] {
		switch strings.TrimSuffix(a.s, ".service") {
		case "firewalld", "ufw", "iptables", "ip6tables", "nftables", "netfilter-persistent":
			return true
		}
	}
	return false
}

// uidZero: -u 0, --uid=0, -o/--non-unique (a second account sharing a uid).
func uidZero(args []arg) bool {
	for i, a := range args[1:] {
		s := a.s
		switch {
		case s == "-o" || s == "--non-unique":
			return true
		case (s == "-u" || s == "--uid" || s == "-g" || s == "--gid") && i+2 < len(args):
			if strings.Trim(args[i+2].s, "0") == "" || !args[i+2].static {
				return true
			}
		case strings.HasPrefix(s, "--uid=") || strings.HasPrefix(s, "--gid="):
			if strings.Trim(s[6:], "0") == "" {
				return true
			}
		case strings.HasPrefix(s, "-u") && len(s) > 2 && !strings.HasPrefix(s, "--") && strings.Trim(s[2:], "0") == "":
			return true
		}
	}
	return false
}

// verbRunAs: -Verb RunAs and its abbreviations (-V, -Ve, -Ver), with a
// space or a colon, quoted or not.
var verbRunAs = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(^|[\s;(])-v(e(r(b)?)?)?(\s+|\s*:\s*)['"]?runas\b`) })

// lxcPrivileged: lxc config set C security.privileged true (or =true).
func lxcPrivileged(args []arg) bool {
	for i, a := range args[1:] {
		s := strings.ToLower(a.s)
		if s == "security.privileged" && i+2 < len(args) && strings.EqualFold(args[i+2].s, "true") {
			return true
		}
		if strings.HasPrefix(s, "security.privileged=") && s != "security.privileged=false" {
			return true
		}
	}
	return false
}

// sshRoot: ssh root@host, ssh -l root, ssh -o User=root, ssh://root@.
func sshRoot(args []arg) bool {
	for i, a := range args[1:] {
		s := strings.ToLower(a.s)
		if strings.HasPrefix(s, "root@") || strings.Contains(s, "://root@") || s == "-lroot" || strings.Contains(s, "user=root") ||
			userRoot().MatchString(s) {
			return true
		}
		if s == "-l" && i+2 < len(args) && args[i+2].s == "root" {
			return true
		}
	}
	return false
}

var userRoot = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(^|-o)\s*user\s*=?\s*root$`) })

var containerRuntimes = set("docker", "podman", "nerdctl", "ctr", "crictl", "lxc", "incus")

// privilegedContainer: --privileged, the host's namespaces, all
// capabilities, or the host's root mounted in.
func privilegedContainer(args []arg) bool {
	for i, a := range args[1:] {
		s := strings.ToLower(a.s)
		next := ""
		if i+2 < len(args) {
			next = strings.ToLower(args[i+2].s)
		}
		switch {
		case s == "--privileged" || strings.HasPrefix(s, "--privileged=") && s != "--privileged=false":
			return true
		case s == "--pid=host" || s == "--userns=host" || s == "--ipc=host" || (s == "--pid" || s == "--userns") && next == "host":
			return true
		case strings.HasPrefix(s, "--cap-add") && capEscalates(s+" "+next):
			return true
		case (s == "-v" || s == "--volume" || s == "--mount") && hostMount(next):
			return true
		case strings.HasPrefix(s, "--volume=") && hostMount(s[len("--volume="):]) || strings.HasPrefix(s, "--mount=") && hostMount(s[len("--mount="):]):
			return true
		case strings.HasPrefix(s, "-v") && !strings.HasPrefix(s, "--") && len(s) > 2 && hostMount(strings.TrimPrefix(s[2:], "=")):
			return true
		case (s == "--device" || s == "--device=") && strings.HasPrefix(next, "/dev/") || strings.HasPrefix(s, "--device=/dev/"):
			return true
		case s == "--security-opt" && (strings.Contains(next, "unconfined") || strings.Contains(next, "no-new-privileges=false")):
			return true
		case s == "security.privileged=true" || s == "raw.lxc":
			return true
		}
	}
	return false
}

// capEscalates: capabilities that give a container the host: all,
// sys_admin, sys_module (kernel modules), sys_rawio, sys_ptrace,
// dac_read_search, dac_override.
func capEscalates(s string) bool {
	for _, c := range []string{"all", "sys_admin", "sys_module", "sys_rawio", "sys_ptrace", "dac_read_search", "dac_override"} {
		if strings.Contains(s, c) {
			return true
		}
	}
	return false
}

// hostMount: a volume or mount whose source is the host's root, a system
// tree, a home or the container runtime's socket.
func hostMount(spec string) bool {
	src := spec
	if strings.Contains(spec, "=") {
		src = ""
		for _, kv := range strings.Split(spec, ",") {
			k, v, _ := strings.Cut(kv, "=")
			if k == "source" || k == "src" {
				src = v
			}
		}
	} else if i := strings.Index(spec, ":"); i >= 0 {
		src = spec[:i]
	}
	if !strings.HasPrefix(src, "/") && !strings.HasPrefix(src, "~") {
		return false
	}
	if strings.HasSuffix(src, ".sock") {
		return true
	}
	return rootish(static([]string{src})[0])
}
