package shellcheck

import (
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// optionSpec is what Paddock knows of a free command's options: the ones
// that keep it free. Anything else (an unknown option, an option whose value
// is not known, a value that fails its check) is "ask".
type optionSpec struct {
	// What the command may do, for --explain and the README.
	does string
	// short are single-letter flags (combinable: -la); shortVal are the
	// letters that take a value (attached, -n5, or next, -n 5); shortOpt
	// the letters whose value is optional, so only ever attached (git's
	// -U5: -U alone leaves the next word alone).
	short, shortVal, shortOpt string
	// maxOperands bounds the words that are not options: 0 any number,
	// -1 none (uniq's and xxd's second operand is an output file).
	maxOperands int
	// long are --name flags, "--name=" take a value (attached or next),
	// "--name[=]" an optional attached value.
	long []string
	// numeric allows -NUM (head -20, grep -3).
	numeric bool
	// anyWord: every word is text (echo): no option can do anything.
	anyWord bool
	// inert: no option of the program runs another program or writes a
	// file, so words whose value comes from an expansion (a file name from
	// a glob or a loop, a substitution's output) may be anything.
	inert bool
	// values checks the value of an option (by its name as written in
	// long, without "=", or "-x" for a short one); absent means any value.
	values map[string]func(string) bool
	// custom replaces the generic parser (find, go).
	custom func(c *checker, args []arg) verdict
}

// specs are keyed by the free command they describe ("ls", "git diff").
var specs = map[string]*optionSpec{
	"ls": {does: "lists directories", inert: true, short: "aAbBcCdDfFgGhHiklLmnNopqQrRsStuUvxXZ1",
		shortVal: "ITw",
		long: strings.Fields(`--all --almost-all --author --escape --block-size= --ignore-backups --color[=] --directory --dired
			--classify[=] --file-type --format= --full-time --group-directories-first --no-group --human-readable --si
			--dereference-command-line --dereference-command-line-symlink-to-dir --hide= --hyperlink[=] --indicator-style=
			--inode --ignore= --kibibytes --dereference --literal --numeric-uid-gid --hide-control-chars --show-control-chars
			--quote-name --quoting-style= --reverse --recursive --size --sort= --time= --time-style= --tabsize= --width=
			--context --zero --help --version`)},
	"cat": {does: "prints files", inert: true, short: "AbeEnstTuv",
		long: strings.Fields(`--show-all --number-nonblank --show-ends --number --squeeze-blank --show-tabs --show-nonprinting --help --version`)},
	"head": {does: "prints the start of files", inert: true, numeric: true, short: "qvz", shortVal: "cn",
		long: strings.Fields(`--bytes= --lines= --quiet --silent --verbose --zero-terminated --help --version`)},
	"tail": {does: "prints the end of files (and may follow them until the time limit)", inert: true, numeric: true, short: "fFqvz",
		shortVal: "cns", long: strings.Fields(`--bytes= --follow[=] --lines= --max-unchanged-stats= --pid= --quiet --silent --retry
			--sleep-interval= --verbose --zero-terminated --help --version`)},
	"wc": {does: "counts lines, words and bytes", inert: true, short: "cmlLw",
		long: strings.Fields(`--bytes --chars --lines --max-line-length --words --files0-from= --total= --help --version`)},
	"grep": {does: "searches files", inert: true, numeric: true, short: "EFGPiyvwxcLlomqsbHhnTZzaIrRUV", shortVal: "efmABCdD",
		long: strings.Fields(`--extended-regexp --fixed-strings --basic-regexp --perl-regexp --regexp= --file= --ignore-case
			--no-ignore-case --word-regexp --line-regexp --null-data --no-messages --invert-match --version --help --max-count=
			--byte-offset --line-number --no-line-number --line-buffered --with-filename --no-filename --label= --only-matching
			--quiet --silent --binary-files= --text --directories= --devices= --recursive --dereference-recursive --include=
			--exclude= --exclude-from= --exclude-dir= --files-without-match --files-with-matches --count --initial-tab --null
			--before-context= --after-context= --context= --color[=] --colour[=] --binary`)},
	"echo": {does: "prints its arguments", inert: true, anyWord: true},
	"pwd":  {does: "prints the current directory", inert: true, short: "LP", long: []string{"--help", "--version"}},
	"rg": {does: "searches files; --pre, --hostname-bin and -z/--search-zip (which run other programs) are not free",
		short: "0aFHhIiLlNnoOpqSsUuvwxcV", shortVal: "ABCdeEfgjmMtTr",
		long: strings.Fields(`--after-context= --before-context= --context= --binary --block-buffered --byte-offset --case-sensitive
			--color= --colors= --column --context-separator= --count --count-matches --crlf --debug --dfa-size-limit= --encoding=
			--engine= --field-context-separator= --field-match-separator= --files --files-with-matches --files-without-match
			--fixed-strings --follow --glob= --glob-case-insensitive --heading --no-heading --help --hidden --iglob= --ignore-case
			--ignore-file= --ignore-file-case-insensitive --include-zero --invert-match --json --line-buffered --line-number
			--line-regexp --max-columns= --max-columns-preview --max-count= --max-depth= --max-filesize= --mmap --multiline
			--multiline-dotall --no-config --no-ignore --no-ignore-dot --no-ignore-exclude --no-ignore-files --no-ignore-global
			--no-ignore-messages --no-ignore-parent --no-ignore-vcs --no-line-number --no-messages --no-mmap --no-pcre2-unicode
			--no-require-git --no-unicode --null --null-data --one-file-system --only-matching --passthru --path-separator=
			--pcre2 --pcre2-version --quiet --regex-size-limit= --regexp= --replace= --smart-case --sort= --sortr= --stats
			--text --threads= --trim --type= --type-not= --type-list --unrestricted --vimgrep --with-filename --no-filename
			--word-regexp --version --no-search-zip --no-pre`)},
	"find": {does: "lists files; its actions (-exec, -execdir, -ok, -okdir, -delete, -fprint, -fprint0, -fprintf, -fls) are not free",
		custom: (*checker).findOptions},
	"go test":  {does: "builds and runs the repository's tests (the test code runs by design, inside the sandbox); -exec, -toolexec, -vettool, -overlay, -C, -modfile, -ldflags, -gcflags, -asmflags and outputs outside the working copy are not free", custom: goOptions("test")},
	"go build": {does: "compiles packages; -toolexec, -overlay, -C, -modfile, -ldflags, -gcflags, -asmflags and -o outside the working copy are not free", custom: goOptions("build")},
	"go vet":   {does: "checks packages with the standard analyzers; -vettool (another program) and -fix (rewrites the sources) are not free", custom: goOptions("vet")},
	"go list":  {does: "lists packages and modules; -u, -versions and -retracted (which query the module proxy) are not free", custom: goOptions("list")},
	"go env":   {does: "prints Go's settings; -w and -u (which change them) are not free", custom: goOptions("env")},
}

// noSpec describes a free command Paddock knows nothing of.
const noSpec = "in the free list; Paddock does not know its options, so any literal arguments keep it free"

// longKind: 0 unknown, 1 flag, 2 takes a value, 3 optional attached value.
func (s *optionSpec) longKind(name string) int {
	for _, l := range s.long {
		switch {
		case l == name:
			return 1
		case l == name+"=":
			return 2
		case l == name+"[=]":
			return 3
		}
	}
	return 0
}

// freeArgs checks the words after a free command's prefix against what is
// known of its options. prefix is the matched free entry.
func (c *checker) freeArgs(prefix []string, args []arg) verdict {
	key := strings.Join(prefix, " ")
	spec := specs[key]
	c.entry = prefix
	if spec == nil {
		for _, a := range args[1:] {
			if v, bad := wordProblem(a, false); bad {
				return v
			}
		}
		return allow("free-command", noSpec)
	}
	if spec.custom != nil {
		return spec.custom(c, args)
	}
	rest := args[len(prefix):]
	if prefix[0] == "git" && len(prefix) > 1 && !strings.HasPrefix(prefix[1], "-") {
		rest = skipN(gitArgsAfterSub(args), len(prefix)-2)
	}
	return checkOptions(key, spec, rest)
}

// gitArgsAfterSub returns the words after git's subcommand (harmless
// global options skipped).
func gitArgsAfterSub(args []arg) []arg {
	i := 1
	for i < len(args) && gitHarmlessGlobal[args[i].s] {
		i++
	}
	if i < len(args) {
		i++
	}
	return args[i:]
}

// wordProblem reports a word whose value is not literal where that
// matters: unknown words always; for commands with options that run or
// write (inert=false), any expansion, and globs that could expand to an
// option (a pattern that does not start with a literal character other
// than '-').
func wordProblem(a arg, inert bool) (verdict, bool) {
	if a.unknown {
		return ask("brace-limit", "brace expansion past the analyzer's limit: the words are unknown"), true
	}
	if inert || a.procSubst || a.number {
		return verdict{}, false // a /dev/fd path or a number is no option
	}
	if !a.static {
		return ask("dynamic-argument", "an argument comes from an expansion or substitution, so it may be any option: "+a.s), true
	}
	if a.glob && globMayBeOption(a.s) {
		return ask("glob-argument", "the pattern "+a.s+" may expand to a file name that is read as an option"), true
	}
	return verdict{}, false
}

// globMayBeOption: a pattern whose literal start does not pin it to a
// non-option (./*.go cannot be an option, *.go can be --pre=x.go).
func globMayBeOption(s string) bool {
	i := strings.IndexAny(s, "*?[")
	if i < 0 {
		return false
	}
	lit := s[:i]
	if lit == "" {
		return true
	}
	return strings.HasPrefix(lit, "-") && !strings.Contains(lit, "=")
}

// checkOptions is the generic option parser.
func checkOptions(cmd string, spec *optionSpec, rest []arg) verdict {
	v, ops := parseOptions(cmd, spec, rest)
	if v.v == Allow && spec.maxOperands != 0 {
		for _, op := range ops {
			if op.glob || !op.static && !op.procSubst {
				return ask("operand", cmd+" "+op.s+": a pattern or an expansion may be several operands, one of them written")
			}
		}
	}
	if v.v == Allow && spec.maxOperands != 0 && len(ops) > max(spec.maxOperands, 0) {
		return ask("operand", cmd+" "+ops[len(ops)-1].s+": an operand past what keeps it free (an output file, or a setting)")
	}
	return v
}

// operands are the words of rest that are not options or their values.
func operands(spec *optionSpec, rest []arg) []arg {
	_, ops := parseOptions("", &optionSpec{short: spec.short, shortVal: spec.shortVal, shortOpt: spec.shortOpt,
		long: spec.long, numeric: spec.numeric, inert: true}, rest)
	return ops
}

func parseOptions(cmd string, spec *optionSpec, rest []arg) (verdict, []arg) {
	ok := allow("free-command", "in the free list, with options that keep it free")
	var ops []arg
	endOpts := false
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if endOpts && !a.unknown && (a.static || a.procSubst) {
			ops = append(ops, a) // after --, nothing is an option
			continue
		}
		if !a.static && !a.bare && !a.glob && strings.HasPrefix(a.prefix, "--") && strings.Contains(a.prefix, "=") {
			// --author="$(git config user.email)": that option, whatever
			// its value (quoted, so one word).
			name, _, _ := strings.Cut(a.prefix, "=")
			if k := spec.longKind(name); (k == 2 || k == 3) && spec.values[name] == nil {
				continue
			}
		}
		if v, bad := wordProblem(a, spec.inert); bad {
			return v, ops
		}
		if spec.anyWord {
			continue
		}
		if !a.static {
			ops = append(ops, a)
			continue
		}
		s := a.s
		if endOpts || s == "-" || !strings.HasPrefix(s, "-") {
			ops = append(ops, a)
			continue
		}
		if s == "--" {
			endOpts = true
			continue
		}
		value := func(name, v string, attached bool) (verdict, bool) {
			if !attached {
				i++
				if i >= len(rest) {
					return ask("unknown-option", cmd+" "+name+" without its value"), false
				}
				if v, bad := wordProblem(rest[i], false); bad {
					return v, false
				}
				if rest[i].glob && !spec.inert {
					return ask("glob-argument", cmd+" "+name+" "+rest[i].s+": a pattern may expand to several words, shifting what follows"), false
				}
				v = rest[i].s
			}
			if chk := spec.values[name]; chk != nil && !chk(v) {
				return ask("option-value", cmd+" "+name+" "+v+": a value that is not known to keep it free"), false
			}
			return verdict{}, true
		}
		if strings.HasPrefix(s, "--") {
			name, val, eq := strings.Cut(s, "=")
			switch spec.longKind(name) {
			case 0:
				return ask("unknown-option", cmd+" "+name+" is not among the options known to keep it free"), ops
			case 1:
				if eq {
					return ask("unknown-option", cmd+" "+name+" takes no value"), ops
				}
			case 2:
				if v, good := value(name, val, eq); !good {
					return v, ops
				}
			case 3:
				if eq {
					if v, good := value(name, val, true); !good {
						return v, ops
					}
				}
			}
			continue
		}
		if spec.numeric && strings.Trim(s[1:], "0123456789") == "" {
			continue
		}
		if spec.longKind(s) > 0 {
			// a long option written with one dash (xxd -cols 8).
			if name, val, eq := strings.Cut(s, "="); spec.longKind(name) == 2 {
				if v, good := value(name, val, eq); !good {
					return v, ops
				}
			}
			continue
		}
		for j := 1; j < len(s); j++ {
			ch := s[j]
			switch {
			case strings.IndexByte(spec.short, ch) >= 0:
				continue
			case strings.IndexByte(spec.shortVal, ch) >= 0:
				if v, good := value("-"+string(ch), s[j+1:], j+1 < len(s)); !good {
					return v, ops
				}
			case strings.IndexByte(spec.shortOpt, ch) >= 0:
				if j+1 < len(s) {
					if v, good := value("-"+string(ch), s[j+1:], true); !good {
						return v, ops
					}
				}
			default:
				return ask("unknown-option", cmd+" -"+string(ch)+" is not among the options known to keep it free"), ops
			}
			break
		}
	}
	return ok, ops
}

// findTests are find's expression words that only test or print, with the
// number of arguments each takes.
var findTests = map[string]int{"-name": 1, "-iname": 1, "-path": 1, "-ipath": 1, "-wholename": 1, "-iwholename": 1, "-regex": 1,
	"-iregex": 1, "-regextype": 1, "-type": 1, "-xtype": 1, "-size": 1, "-mtime": 1, "-mmin": 1, "-atime": 1, "-amin": 1,
	"-ctime": 1, "-cmin": 1, "-newer": 1, "-anewer": 1, "-cnewer": 1, "-perm": 1, "-user": 1, "-group": 1, "-uid": 1, "-gid": 1,
	"-nouser": 0, "-nogroup": 0, "-empty": 0, "-links": 1, "-inum": 1, "-samefile": 1, "-lname": 1, "-ilname": 1, "-readable": 0,
	"-writable": 0, "-executable": 0, "-true": 0, "-false": 0, "-maxdepth": 1, "-mindepth": 1, "-depth": 0, "-mount": 0,
	"-xdev": 0, "-follow": 0, "-noleaf": 0, "-ignore_readdir_race": 0, "-noignore_readdir_race": 0, "-daystart": 0,
	"-print": 0, "-print0": 0, "-printf": 1, "-ls": 0, "-prune": 0, "-quit": 0, "-not": 0, "-a": 0, "-and": 0, "-o": 0,
	"-or": 0, "!": 0, "(": 0, ")": 0, ",": 0, "-fstype": 1, "-used": 1, "-context": 1, "-d": 0, "-help": 0, "--help": 0,
	"-version": 0, "--version": 0, "-warn": 0, "-nowarn": 0, "-files0-from": 1}

var findNewerXY = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^-newer[aBcmt][aBcmt]$`) })

// findOptions: find is free with its starting points and tests; any
// action, unknown word or expansion is "ask".
func (c *checker) findOptions(args []arg) verdict {
	i := 1
	for i < len(args) {
		a := args[i]
		if v, bad := wordProblem(a, false); bad {
			return v
		}
		s := a.s
		switch {
		case s == "-H" || s == "-L" || s == "-P" || strings.HasPrefix(s, "-O"):
			i++
			continue
		case s == "-D":
			i += 2
			continue
		}
		if strings.HasPrefix(s, "-") || s == "!" || s == "(" || s == ")" || s == "," {
			break
		}
		i++ // a starting point
	}
	for ; i < len(args); i++ {
		a := args[i]
		if v, bad := wordProblem(a, false); bad {
			return v
		}
		n, ok := findTests[a.s]
		if !ok && findNewerXY().MatchString(a.s) {
			n, ok = 1, true
		}
		if !ok {
			return ask("unknown-option", "find "+a.s+" is not among the tests known to keep it free")
		}
		for k := 0; k < n; k++ {
			i++
			if i >= len(args) {
				return ask("unknown-option", "find "+a.s+" without its value")
			}
			if v, bad := wordProblem(args[i], false); bad && args[i].unknown || bad && !args[i].static {
				return v
			}
			if args[i].glob {
				return ask("glob-argument", "find "+a.s+" "+args[i].s+": an unquoted pattern in find's expression may expand to several words, or to an action's name")
			}
		}
	}
	return allow("free-command", "in the free list: find with tests only")
}

// insidePath reports an output path that stays inside the working copy:
// relative, no "..", not under .git.
func insidePath(p string) bool {
	if p == "/dev/null" {
		return true // the harmless sink
	}
	if p == "" || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || strings.HasPrefix(p, "-") {
		return false
	}
	cl := path.Clean(p)
	if cl == ".." || strings.HasPrefix(cl, "../") || cl == ".git" || strings.HasPrefix(cl, ".git/") {
		return false
	}
	return !slices.Contains(strings.Split(p, "/"), "..")
}

// -work is left out: it keeps the build's temporary files outside the
// working copy.
var goBuildBool = set("a", "n", "race", "msan", "asan", "cover", "v", "x", "trimpath", "modcacherw", "json", "i")

// goBuildVal are build flags taking a value, with their check (nil: any).
var goBuildVal = map[string]func(string) bool{
	"p": digits, "covermode": oneOf("set", "count", "atomic"), "coverpkg": noSpace, "tags": noSpace,
	"mod": oneOf("readonly", "vendor"), "buildvcs": oneOf("true", "false", "auto"), "pgo": oneOf("auto", "off"),
	"installsuffix": noSpace, "buildmode": oneOf("default", "exe", "pie", "archive"),
}

// goListBool and goListVal are go list's own flags (beside the build
// flags); -u, -versions and -retracted query the module proxy.
var goListBool = set("json", "m", "e", "deps", "test", "find", "export", "compiled", "reuse")
var goListVal = map[string]func(string) bool{"f": nil, "json": nil}

// goDocBool are go doc's flags (not -http, which downloads and runs pkgsite).
var goDocBool = set("all", "c", "cmd", "short", "src", "u")

var goTestBool = set("benchmem", "failfast", "fullpath", "short", "c", "json", "cover")

var goTestVal = map[string]func(string) bool{
	"run": nil, "skip": nil, "bench": nil, "benchtime": noSpace, "count": digits, "cpu": noSpace, "list": nil,
	"parallel": digits, "shuffle": noSpace, "timeout": noSpace, "vet": noSpace, "memprofilerate": digits,
	"blockprofilerate": digits, "mutexprofilefraction": digits,
	"o": insidePath, "coverprofile": insidePath, "cpuprofile": insidePath, "memprofile": insidePath, "blockprofile": insidePath,
	"mutexprofile": insidePath, "trace": insidePath, "outputdir": insidePath,
}

// gitSignaturePlaceholder: %G?, %GS, %GK, ... (also %+G, %-G, % G) make
// git log verify signatures, which runs gpg (or gpg.program).
var gitSignaturePlaceholder = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`%[-+ ]?G`) })

func noSignature(s string) bool { return !gitSignaturePlaceholder().MatchString(s) }

// vetFlags are the flags of the standard vet tool (go tool vet -flags),
// less -V and -fix (which rewrites the sources): an analyzer's name
// (enabling it) or its settings. Any other flag is not proven free.
var vetFlags = set("all", "appends", "asmdecl", "assign", "atomic", "bool", "bools", "buildtag", "buildtags", "c", "cgocall",
	"composites", "composites.whitelist", "compositewhitelist", "copylocks", "defers", "diff", "directive", "errorsas", "flags",
	"framepointer", "hostport", "httpresponse", "ifaceassert", "json", "loopclosure", "lostcancel", "methods", "nilfunc", "printf",
	"printf.funcs", "printfuncs", "rangeloops", "shift", "sigchanyzer", "slog", "source", "stdmethods", "stdversion",
	"stringintconv", "structtag", "tags", "testinggoroutine", "testinggoroutine.subtest", "tests", "timeformat", "unmarshal",
	"unreachable", "unsafeptr", "unusedfuncs", "unusedresult", "unusedresult.funcs", "unusedresult.stringmethods",
	"unusedstringmethods", "v", "waitgroup")

func digits(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }
func noSpace(s string) bool {
	return !strings.ContainsAny(s, " \t\n") && !strings.HasPrefix(s, "-")
}
func oneOf(vs ...string) func(string) bool {
	return func(s string) bool { return slices.Contains(vs, s) }
}

// goOptions checks go test/build/vet flags.
func goOptions(sub string) func(*checker, []arg) verdict {
	return func(c *checker, args []arg) verdict {
		rest := args[2:]
		for i := 0; i < len(rest); i++ {
			a := rest[i]
			if v, bad := wordProblem(a, false); bad {
				return v
			}
			s := a.s
			if !strings.HasPrefix(s, "-") || s == "-" {
				// A package or file: inside the working copy, or an
				// import path; go test runs the code it names.
				if sub == "test" && (strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~") || isWindowsPath(s) ||
					slices.Contains(strings.Split(strings.ReplaceAll(s, `\`, "/"), "/"), "..")) {
					return ask("go-package", "go test "+s+": runs code outside the working copy")
				}
				// An import path or a pattern (std, all, cmd, unicode/utf8,
				// example.com/m) names packages anywhere; the copy's are
				// named by relative paths (., ./..., ./x) or files.
				if sub == "test" && !strings.HasPrefix(s, ".") && !strings.HasSuffix(s, ".go") {
					return ask("go-package", "go test "+s+": an import path or pattern, which may name packages outside the working copy (name the copy's as ./...)")
				}
				continue
			}
			if s == "--" {
				if sub == "test" {
					return ask("unknown-option", "go test -- passes what follows to the test binary")
				}
				continue
			}
			name, val, eq := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(s, "-"), "-"), "=")
			if sub == "test" {
				name = strings.TrimPrefix(name, "test.")
			}
			bad := func(what string) verdict {
				return ask("go-flag", "go "+sub+" -"+name+": "+what)
			}
			if sub == "env" || sub == "doc" {
				if sub == "env" && (name == "json" || name == "changed") || sub == "doc" && goDocBool[name] {
					continue
				}
				return bad("not among the flags that only print")
			}
			isBool := goBuildBool[name] || sub == "test" && goTestBool[name] || sub == "list" && goListBool[name]
			chk, isVal := goBuildVal[name]
			if sub == "test" && !isVal {
				chk, isVal = goTestVal[name]
			}
			if sub == "list" && !isVal {
				chk, isVal = goListVal[name]
			}
			if sub == "build" && name == "o" {
				chk, isVal = insidePath, true
			}
			// -fix rewrites the sources: not a check any more.
			if sub == "vet" && !isBool && !isVal && vetFlags[name] {
				if eq && !noSpace(val) {
					return bad("an analyzer flag with an unusual value")
				}
				continue
			}
			switch {
			case isBool:
				if eq && val != "true" && val != "false" {
					return bad("takes true or false")
				}
			case isVal:
				if !eq {
					i++
					if i >= len(rest) {
						return bad("without its value")
					}
					if v, bad := wordProblem(rest[i], false); bad {
						return v
					}
					if rest[i].glob {
						return bad("a pattern as a value may expand to several words")
					}
					val = rest[i].s
				}
				if chk != nil && !chk(val) {
					return bad(val + " is not a value known to keep it free (outputs must stay inside the working copy)")
				}
			default:
				return bad("not among the flags known to keep it free (it may run a program or write outside the working copy)")
			}
		}
		return allow("free-command", "in the free list, with flags that keep it free")
	}
}

// Explain says what a free-list entry may do and which options keep it
// free; known is false for entries Paddock has no knowledge of (any
// literal arguments keep those free).
func Explain(entry string) (does string, options []string, known bool) {
	spec := specs[strings.Join(strings.Fields(entry), " ")]
	if spec == nil {
		return noSpec, nil, false
	}
	switch {
	case spec.anyWord:
		return spec.does, []string{"any words (they are only printed)"}, true
	case spec.custom != nil && (strings.HasPrefix(entry, "find") || strings.HasPrefix(entry, "go ")):
		return spec.does, customOptions(entry), true
	case spec.custom != nil && spec.short == "" && spec.shortVal == "" && len(spec.long) == 0:
		return spec.does, []string{"(judged by its own rules: " + spec.does + ")"}, true
	}
	for _, ch := range spec.short {
		options = append(options, "-"+string(ch))
	}
	for _, ch := range spec.shortVal {
		options = append(options, "-"+string(ch)+" VALUE")
	}
	for _, ch := range spec.shortOpt {
		options = append(options, "-"+string(ch)+"[VALUE] (attached only)")
	}
	if spec.numeric {
		options = append(options, "-NUM")
	}
	for _, l := range spec.long {
		switch {
		case strings.HasSuffix(l, "[=]"):
			l = strings.TrimSuffix(l, "[=]") + "[=VALUE]"
		case strings.HasSuffix(l, "="):
			l += "VALUE"
		}
		options = append(options, l)
	}
	if spec.inert {
		options = append(options, "(no option of it runs a program or writes a file, so words from expansions and globs keep it free)")
	}
	return spec.does, options, true
}

func customOptions(entry string) []string {
	var out []string
	if strings.HasPrefix(entry, "find") {
		out = append(out, "starting points", "-H", "-L", "-P", "-O LEVEL", "-D DEBUGOPTS")
		for k, n := range findTests {
			if n > 0 {
				k += " VALUE"
			}
			out = append(out, k)
		}
		out = append(out, "-newerXY VALUE")
		slices.Sort(out[6:])
		return out
	}
	sub := strings.TrimPrefix(entry, "go ")
	for k := range goBuildBool {
		out = append(out, "-"+k)
	}
	for k := range goBuildVal {
		out = append(out, "-"+k+"=VALUE")
	}
	if sub == "test" {
		for k := range goTestBool {
			out = append(out, "-"+k)
		}
		for k, chk := range goTestVal {
			if chk != nil && isInsideCheck(k) {
				out = append(out, "-"+k+"=PATH (inside the working copy)")
			} else {
				out = append(out, "-"+k+"=VALUE")
			}
		}
	}
	if sub == "build" {
		out = append(out, "-o PATH (inside the working copy)")
	}
	if sub == "vet" {
		names := make([]string, 0, len(vetFlags))
		for k := range vetFlags {
			names = append(names, k)
		}
		slices.Sort(names)
		out = append(out, "-NAME[=VALUE], NAME a flag of the standard vet tool ("+strings.Join(names, " ")+")")
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func isInsideCheck(name string) bool {
	switch name {
	case "o", "coverprofile", "cpuprofile", "memprofile", "blockprofile", "mutexprofile", "trace", "outputdir":
		return true
	}
	return false
}
