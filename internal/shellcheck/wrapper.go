package shellcheck

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// unwrap finds the command a wrapper runs. It returns the inner argv, or
// code (a string the wrapper runs through sh -c), or ok=false when it cannot
// tell (then the wrapper is "ask").
type unwrap func(args []arg) (inner []arg, code string, ok bool)

// optionsThen skips options (those in withValue take a value) and returns
// what follows.
func optionsThen(withValue string, args []arg) []arg {
	takes := set(strings.Fields(withValue)...)
	i := 0
	for i < len(args) {
		a := args[i].s
		if a == "--" {
			return args[i+1:]
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		if takes[a] {
			i++
		} else if clusterTakesNext(a, takes) {
			i++
		}
		i++
	}
	if i > len(args) {
		return nil
	}
	return args[i:]
}

// clusterTakesNext: in a cluster of short options (-vk 5), the first
// letter that takes a value takes the rest of the word, or the next word
// when it is the cluster's last letter.
func clusterTakesNext(a string, takes map[string]bool) bool {
	if strings.HasPrefix(a, "--") || len(a) <= 2 {
		return false
	}
	for j := 1; j < len(a); j++ {
		if takes["-"+string(a[j])] {
			return j == len(a)-1
		}
	}
	return false
}

var wrappers = map[string]unwrap{
	"nohup":  func(a []arg) ([]arg, string, bool) { return optionsThen("", a[1:]), "", true },
	"nice":   func(a []arg) ([]arg, string, bool) { return optionsThen("-n --adjustment", a[1:]), "", true },
	"stdbuf": func(a []arg) ([]arg, string, bool) { return optionsThen("-i -o -e", a[1:]), "", true },
	"ionice": func(a []arg) ([]arg, string, bool) {
		return optionsThen("-c -n -p -P -u --class --classdata", a[1:]), "", true
	},
	"setsid":  func(a []arg) ([]arg, string, bool) { return optionsThen("", a[1:]), "", true },
	"command": func(a []arg) ([]arg, string, bool) { return commandBuiltin(a) },
	"builtin": func(a []arg) ([]arg, string, bool) { return a[1:], "", true },
	"strace": func(a []arg) ([]arg, string, bool) {
		return optionsThen("-e -o -p -s -u -E -a -b -I -O -S -X -P", a[1:]), "", true
	},
	"ltrace": func(a []arg) ([]arg, string, bool) { return optionsThen("-e -o -p -s -u -a -n", a[1:]), "", true },
	"unbuffer": func(a []arg) ([]arg, string, bool) {
		return optionsThen("", a[1:]), "", true
	},
	"chrt":    func(a []arg) ([]arg, string, bool) { return skipN(optionsThen("-T -P -D", a[1:]), 1), "", true },
	"taskset": func(a []arg) ([]arg, string, bool) { return taskset(a) },
	"timeout": func(a []arg) ([]arg, string, bool) {
		return skipN(optionsThen("-s -k --signal --kill-after", a[1:]), 1), "", true
	},
	"time": func(a []arg) ([]arg, string, bool) { return optionsThen("-f -o --format --output", a[1:]), "", true },
	"unshare": func(a []arg) ([]arg, string, bool) {
		return optionsThen("-S -G --setuid --setgid --wd -R --root", a[1:]), "", true
	},
	"nsenter":  func(a []arg) ([]arg, string, bool) { return optionsThen("-t -S -G --target --wd", a[1:]), "", true },
	"flock":    func(a []arg) ([]arg, string, bool) { return flock(a) },
	"env":      func(a []arg) ([]arg, string, bool) { return envInner(a) },
	"xargs":    func(a []arg) ([]arg, string, bool) { return xargsInner(a) },
	"watch":    func(a []arg) ([]arg, string, bool) { return watchInner(a) },
	"script":   func(a []arg) ([]arg, string, bool) { return scriptInner(a) },
	"parallel": func(a []arg) ([]arg, string, bool) { return parallelInner(a) },
	"valgrind": func(a []arg) ([]arg, string, bool) { return optionsThen("", a[1:]), "", true },
	"catchsegv": func(a []arg) ([]arg, string, bool) {
		return a[1:], "", true
	},
	"busybox": func(a []arg) ([]arg, string, bool) { return a[1:], "", true },
	// Multicall binaries: the first word names the program.
	"xtables-legacy-multi": func(a []arg) ([]arg, string, bool) { return a[1:], "", true },
	"xtables-nft-multi":    func(a []arg) ([]arg, string, bool) { return a[1:], "", true },
	"xtables-multi":        func(a []arg) ([]arg, string, bool) { return a[1:], "", true },
	"wsl": func(a []arg) ([]arg, string, bool) {
		rest := optionsThen("-d --distribution -u --user --cd --shell-type", a[1:])
		if len(rest) > 0 && (rest[0].s == "-e" || rest[0].s == "--exec") {
			rest = rest[1:]
		}
		return rest, "", true
	},
	"toybox": func(a []arg) ([]arg, string, bool) { return a[1:], "", true },
	"chroot": func(a []arg) ([]arg, string, bool) {
		return skipN(optionsThen("--userspec --groups", a[1:]), 1), "", true
	},
	"setarch": func(a []arg) ([]arg, string, bool) { return optionsThen("", skipN(a, 2)), "", true },
	"linux32": func(a []arg) ([]arg, string, bool) { return optionsThen("", a[1:]), "", true },
	"linux64": func(a []arg) ([]arg, string, bool) { return optionsThen("", a[1:]), "", true },
	"prlimit": func(a []arg) ([]arg, string, bool) { return optionsThen("-p --pid -o --output", a[1:]), "", true },
	"numactl": func(a []arg) ([]arg, string, bool) {
		return optionsThen("-N -m -C -i -p -P --cpunodebind --membind --physcpubind --interleave --preferred", a[1:]), "", true
	},
	"firejail": func(a []arg) ([]arg, string, bool) { return optionsThen("", a[1:]), "", true },
	"bwrap":    func(a []arg) ([]arg, string, bool) { return nil, "", false },
	"dbus-run-session": func(a []arg) ([]arg, string, bool) {
		return optionsThen("--config-file --dbus-daemon", a[1:]), "", true
	},
	"cgexec": func(a []arg) ([]arg, string, bool) { return optionsThen("-g", a[1:]), "", true },
	"systemd-inhibit": func(a []arg) ([]arg, string, bool) {
		return optionsThen("--what --who --why --mode", a[1:]), "", true
	},
	"faketime": func(a []arg) ([]arg, string, bool) { return skipN(optionsThen("", a[1:]), 1), "", true },
	"torsocks": func(a []arg) ([]arg, string, bool) { return optionsThen("", a[1:]), "", true },
	"proxychains": func(a []arg) ([]arg, string, bool) {
		return optionsThen("-f", a[1:]), "", true
	},
	"sshpass": func(a []arg) ([]arg, string, bool) { return optionsThen("-p -f -d -e -P", a[1:]), "", true },
}

func skipN(a []arg, n int) []arg {
	if len(a) < n {
		return nil
	}
	return a[n:]
}

// commandBuiltin: "command -v x" only looks x up; "command x" runs it.
func commandBuiltin(a []arg) ([]arg, string, bool) {
	rest := a[1:]
	for len(rest) > 0 && strings.HasPrefix(rest[0].s, "-") {
		if rest[0].s == "-v" || rest[0].s == "-V" {
			return nil, "", true
		}
		rest = rest[1:]
	}
	return rest, "", true
}

func taskset(a []arg) ([]arg, string, bool) {
	rest := a[1:]
	for len(rest) > 0 && strings.HasPrefix(rest[0].s, "-") {
		if strings.Contains(rest[0].s, "p") {
			return nil, "", false // taskset -p changes a running process
		}
		rest = rest[1:]
	}
	return skipN(rest, 1), "", true // the mask or CPU list, then the command
}

func flock(a []arg) ([]arg, string, bool) {
	rest := a[1:]
	for i := 0; i < len(rest); i++ {
		s := rest[i].s
		if s == "-c" || s == "--command" {
			if i+1 < len(rest) {
				return nil, rest[i+1].s, rest[i+1].static
			}
			return nil, "", false
		}
		if s == "-w" || s == "--timeout" || s == "-E" || s == "--conflict-exit-code" {
			i++
			continue
		}
		if !strings.HasPrefix(s, "-") {
			return rest[i+1:], "", true
		}
	}
	return nil, "", true
}

// envInner skips env's options and NAME=VALUE pairs; -S splits a string
// into more arguments, which env then reads as its own (options and
// assignments included). Options may be clustered (-iu NAME, -vS 'CMD').
func envInner(a []arg) ([]arg, string, bool) {
	rest := a[1:]
	for len(rest) > 0 {
		s := rest[0].s
		switch {
		case s == "--":
			rest = rest[1:]
			return skipAssignments(rest), "", true
		case s == "-u" || s == "--unset" || s == "-C" || s == "--chdir" || s == "-P":
			rest = skipN(rest, 2)
			continue
		case s == "-S" || s == "--split-string":
			if len(rest) < 2 || !rest[1].static {
				return nil, "", false
			}
			return envSplit(rest[1].s, rest[2:])
		case strings.HasPrefix(s, "--split-string="):
			if !rest[0].static {
				return nil, "", false
			}
			return envSplit(strings.TrimPrefix(s, "--split-string="), rest[1:])
		case strings.HasPrefix(s, "--"):
			rest = rest[1:]
			continue
		case strings.HasPrefix(s, "-") && len(s) > 1:
			// A cluster: the first of u, C, P, S takes the rest of the
			// word or the next word.
			consumed := false
			for j := 1; j < len(s); j++ {
				switch s[j] {
				case 'u', 'C', 'P':
					if j == len(s)-1 {
						rest = skipN(rest, 1)
					}
					consumed = true
				case 'S':
					if j < len(s)-1 {
						if !rest[0].static {
							return nil, "", false
						}
						return envSplit(s[j+1:], rest[1:])
					}
					if len(rest) < 2 || !rest[1].static {
						return nil, "", false
					}
					return envSplit(rest[1].s, rest[2:])
				}
				if consumed {
					break
				}
			}
			rest = skipN(rest, 1)
			continue
		case strings.Contains(s, "="):
			rest = rest[1:]
			continue
		}
		break
	}
	return rest, "", true
}

// envSplit: env -S splits its string into words that env then reads as
// its own arguments.
func envSplit(str string, after []arg) ([]arg, string, bool) {
	split := static(strings.Fields(str))
	// -S honours quotes and backslashes: bash -c "sudo id" is three words.
	if f, err := syntax.NewParser().Parse(strings.NewReader("env "+str), ""); err == nil && len(f.Stmts) == 1 {
		if call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr); ok && len(call.Assigns) == 0 {
			split = argv(call.Args[1:])
		}
	}
	words := append(append(static([]string{"env"}), split...), after...)
	return envInner(words)
}

func skipAssignments(rest []arg) []arg {
	for len(rest) > 0 && strings.Contains(rest[0].s, "=") && !strings.HasPrefix(rest[0].s, "=") {
		rest = rest[1:]
	}
	return rest
}

// envAssignments returns the NAME=VALUE words env would set.
func envAssignments(a []arg) []string {
	var out []string
	for _, x := range a[1:] {
		if strings.HasPrefix(x.s, "-") {
			continue
		}
		if i := strings.Index(x.s, "="); i > 0 {
			out = append(out, x.s[:i])
			continue
		}
		break
	}
	return out
}

func xargsInner(a []arg) ([]arg, string, bool) {
	inner, _, ok := xargsParse(a)
	return inner, "", ok
}

// xargs's grammar (GNU findutils): -a -d -E -I -L -n -P -s take a value,
// attached or the next word; -e -i -l take one only attached (-e alone is
// -e, the next word is the command); long options likewise, with GNU's
// abbreviations.
var (
	xargsShortVal = "adEILnPs"
	xargsShortOpt = "eil"
	xargsShortFlg = "0oprtx"
	xargsLongVal  = []string{"--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"}
	xargsLongOpt  = []string{"--eof", "--replace", "--max-lines"}
	xargsLongFlg  = []string{"--null", "--open-tty", "--interactive", "--no-run-if-empty", "--verbose", "--exit", "--show-limits",
		"--help", "--version"}
)

// xargsParse returns the command xargs runs (echo when none), the
// options it was given (long names, or "-X"), and false when its words
// cannot be read.
func xargsParse(a []arg) ([]arg, []string, bool) {
	rest := a[1:]
	var opts []string
	longName := func(name string, list []string) string {
		for _, l := range list {
			if l == name {
				return l
			}
		}
		var found []string
		for _, l := range list {
			if len(name) > 2 && strings.HasPrefix(l, name) {
				found = append(found, l)
			}
		}
		if len(found) == 1 {
			return found[0]
		}
		return ""
	}
	for len(rest) > 0 && strings.HasPrefix(rest[0].s, "-") && rest[0].s != "-" {
		w := rest[0]
		if !w.static {
			return nil, opts, false
		}
		s := w.s
		rest = rest[1:]
		if s == "--" {
			break
		}
		if strings.HasPrefix(s, "--") {
			name, _, eq := strings.Cut(s, "=")
			all := append(append(append([]string(nil), xargsLongVal...), xargsLongOpt...), xargsLongFlg...)
			full := longName(name, all)
			switch {
			case full == "":
				return nil, opts, false // unknown or ambiguous
			case longName(full, xargsLongVal) != "" && !eq:
				rest = skipN(rest, 1)
			case longName(full, xargsLongFlg) != "" && eq:
				return nil, opts, false
			}
			opts = append(opts, full)
			continue
		}
		for j := 1; j < len(s); j++ {
			ch := s[j]
			opts = append(opts, "-"+string(ch))
			switch {
			case strings.IndexByte(xargsShortFlg, ch) >= 0:
				continue
			case strings.IndexByte(xargsShortVal, ch) >= 0:
				if j == len(s)-1 {
					rest = skipN(rest, 1)
				}
			case strings.IndexByte(xargsShortOpt, ch) >= 0:
			default:
				return nil, opts, false
			}
			break
		}
	}
	if len(rest) == 0 {
		return static([]string{"echo"}), opts, true
	}
	return rest, opts, true
}

// watchInner: watch joins its arguments and runs them with sh -c, unless -x.
func watchInner(a []arg) ([]arg, string, bool) {
	rest := a[1:]
	direct := false
	takes := set("-n", "--interval", "-q", "--equexit", "--differences")
	for len(rest) > 0 && strings.HasPrefix(rest[0].s, "-") {
		s := rest[0].s
		if s == "--" {
			rest = rest[1:]
			break
		}
		if s == "-x" || s == "--exec" {
			direct = true
		}
		if takes[s] {
			rest = skipN(rest, 1)
		}
		rest = skipN(rest, 1)
	}
	if direct {
		return rest, "", true
	}
	for _, x := range rest {
		if !x.static {
			return nil, "", false
		}
	}
	return nil, strings.Join(strs(rest), " "), true
}

func scriptInner(a []arg) ([]arg, string, bool) {
	for i := 1; i+1 < len(a); i++ {
		if a[i].s == "-c" || a[i].s == "--command" {
			return nil, a[i+1].s, a[i+1].static
		}
	}
	return nil, "", false
}

// parallelInner: GNU parallel runs its command (before :::) through a shell.
func parallelInner(a []arg) ([]arg, string, bool) {
	rest := optionsThen("-j --jobs -S --sshlogin --delay --timeout -a --arg-file", a[1:])
	var cmd []string
	for _, x := range rest {
		if x.s == ":::" || x.s == "::::" || x.s == ":::+" {
			break
		}
		if !x.static {
			return nil, "", false
		}
		cmd = append(cmd, x.s)
	}
	if len(cmd) == 0 {
		// No command: each argument after ::: is a command line.
		var lines []string
		for _, x := range rest {
			if x.s == ":::" || x.s == "::::" || x.s == ":::+" {
				continue
			}
			if !x.static {
				return nil, "", false
			}
			lines = append(lines, x.s)
		}
		if len(lines) == 0 {
			return nil, "", false
		}
		return nil, strings.Join(lines, "\n"), true
	}
	return nil, strings.Join(cmd, " "), true
}

// wrapper judges a wrapper by the command it runs; the wrapper itself is
// free only if the free list says so.
func (c *checker) wrapper(n string, w unwrap, args []arg, depth int) verdict {
	own := ask("wrapper", n+" runs another command and is not in the free list")
	if c.free(args) {
		own = allow("free-command", "in the free list")
	}
	if n == "env" {
		for _, name := range envAssignments(args) {
			if v, bad := sensitiveVar(name); bad {
				own = worst(own, v)
			}
		}
		for _, a := range args[1:] {
			if name, value, ok := strings.Cut(a.s, "="); ok && codeVars[name] && a.static {
				if r := c.quietSource(value, depth); r.v == Refuse {
					own = worst(own, refuse(r.rule, "env sets "+name+", code that runs: "+r.reason))
				}
			}
		}
	}
	inner, code, ok := w(args)
	if own.v == Allow && ok && code == "" && len(inner) <= len(args)-1 {
		// A free wrapper's own words must be literal: nice -n $x go
		// build runs build when $x is empty; nice -n ./* shifts too.
		for _, a := range args[1 : len(args)-len(inner)] {
			if !a.static || a.glob {
				own = ask("dynamic-argument", n+" with a word from an expansion or a pattern before the command it runs")
			}
		}
	}
	if n == "env" && own.v == Allow {
		own = worst(own, envFree(args, inner))
	}
	switch {
	case !ok:
		return worst(own, ask("wrapper", "cannot tell what "+n+" runs"))
	case code != "":
		c.source(code, depth+1)
		return own
	case len(inner) == 0:
		return own
	}
	v := c.judge(inner, depth+1)
	if n == "xargs" && v.v == Allow {
		if _, opts, _ := xargsParse(args); slices.Contains(opts, "--process-slot-var") {
			v = ask("environment", "xargs --process-slot-var sets a variable in the command's environment (PATH, ...)")
		}
	}
	if n == "xargs" && v.v == Allow {
		// Words read from its input join the command's: they may be any
		// option, which only an inert command does not mind.
		if spec := specs[strings.Join(c.match(inner), " ")]; spec == nil || !spec.inert {
			v = ask("xargs-input", "xargs appends words from its input to "+inner[0].s+", which may be options that run or write")
		}
	}
	if v.v >= own.v {
		v.reason = n + " runs " + strings.Join(strs(inner), " ") + ": " + v.reason
		return v
	}
	return own
}

// envFree: env is free with the options that only clear or unset
// variables, and assignments inert for the command it runs.
func envFree(args, inner []arg) verdict {
	if len(inner) > len(args)-1 {
		return ask("unknown-option", "env -S splits a string into words")
	}
	rest := args[1 : len(args)-len(inner)]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case !a.static:
			return ask("dynamic-argument", "env with a word from an expansion")
		case a.s == "-i" || a.s == "-" || a.s == "--ignore-environment" || a.s == "-0" || a.s == "--null" || a.s == "--":
		case a.s == "-u" || a.s == "--unset":
			i++
		case strings.HasPrefix(a.s, "--unset="):
		case strings.HasPrefix(a.s, "-"):
			return ask("unknown-option", "env "+a.s+" is not among the options known to keep it free")
		default:
			name, value, _ := strings.Cut(a.s, "=")
			if !inertEnvFor(name, lit(value), inner) {
				return ask("environment", name+" is not known to be inert for "+firstWord(inner))
			}
		}
	}
	return allow("free-command", "in the free list")
}

// shell judges sh/bash/...: -c code is parsed and judged; a script file is
// unknown code. Options may follow -c (bash -c -x CODE): the code is the
// first word after the options.
func (c *checker) shell(n string, args []arg, depth int) verdict {
	hasC, odd := false, ""
	i := 1
	for ; i < len(args); i++ {
		s := args[i].s
		if !args[i].static {
			odd = s
			break
		}
		if s == "--" || s == "-" {
			i++
			break
		}
		if !strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "+") {
			break
		}
		switch s {
		case "--noprofile", "--norc", "--posix", "--noediting", "--restricted":
			continue
		case "-o", "+o":
			if i+1 < len(args) && !shellSafeOption[args[i+1].s] {
				odd = s + " " + args[i+1].s
			}
			i++
			continue
		case "--rcfile", "--init-file", "-O", "+O":
			odd = s
			i++
			continue
		}
		if strings.HasPrefix(s, "--") {
			odd = s
			continue
		}
		for _, ch := range s[1:] {
			switch ch {
			case 'c':
				hasC = true
			case 'e', 'u', 'x', 'v', 'f', 'n', 'C', 'h', 'B', 'H', 'P', 'T', 'E', 'a':
			default:
				odd = s
			}
		}
	}
	if hasC {
		if i >= len(args) {
			return ask("shell", n+" -c without code")
		}
		if !args[i].static {
			// A literal substitution or default, or the values the command
			// gives its variables (x='sudo id'; bash -c "$x"), are code
			// the analyzer can read.
			for _, d := range append(append([]string(nil), args[i].def...), c.alternatives(args[i])...) {
				c.shellSource(n, d, depth+1)
			}
			return ask("shell-dynamic-code", n+" -c runs code built from an expansion")
		}
		c.shellSource(n, args[i].s, depth+1)
		if foreignShell[n] {
			return ask("foreign-shell", n+" reads its own startup files (~/.zshenv, config.fish, ~/.cshrc) and its grammar is not bash's: its code is not proven to be what was judged")
		}
		if odd != "" {
			return ask("shell-option", n+" "+odd+" is not an option known to keep the shell's code as judged")
		}
		for _, a := range args[i+1:] {
			if !a.static {
				return ask("dynamic-argument", n+" -c is given positional parameters from an expansion")
			}
		}
		if c.free(args[:1]) {
			return allow("free-command", "in the free list; its code is judged separately")
		}
		return allow("shell-code", n+" -c: the code is judged piece by piece")
	}
	if v, ok := c.codeFromData(n); ok {
		return v
	}
	if odd != "" {
		return ask("shell-option", n+" "+odd+" reads or runs code that is not analyzed")
	}
	if c.free(args) {
		return allow("free-command", "in the free list")
	}
	return ask("shell-script", n+" runs a script whose content is not analyzed")
}

// codeFromData: an interpreter whose code the analyzer does not read (a
// script, its input, code of another language) in a command that writes
// a refused program's name anywhere, decoded as printf, echo -e and $'..'
// decode it, may run that program (printf '\x73udo id' | sh, tee >(sh)).
func (c *checker) codeFromData(n string) (verdict, bool) {
	if c.fed[c.current] {
		return verdict{}, false // its input is code the analyzer judged
	}
	if lit := c.refusedProgramLiteral(); lit != "" {
		r, _ := refusedProgram(lit, nil)
		return refuse(r.rule, n+" runs code the analyzer does not read, in a command that holds "+lit+": "+r.reason), true
	}
	return verdict{}, false
}

// foreignShell: shells whose -c code bash's grammar does not describe, and
// which run startup files even when not interactive.
var foreignShell = set("zsh", "fish", "csh", "tcsh")

var shellSafeOption = set("pipefail", "errexit", "nounset", "xtrace", "noglob", "noclobber", "verbose")
