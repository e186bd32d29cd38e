package shellcheck

import (
	"strings"
)

// DefaultFree are the commands free when a policy names none: what an
// agent runs all day while reading a repository, each with the options
// that keep it reading (specs). Everything that writes, runs another
// program or opens the network asks.
var DefaultFree = []string{
	// Files and directories.
	"ls", "cat", "head", "tail", "wc", "grep", "rg", "find", "tree", "stat", "file", "du", "df", "basename", "dirname",
	"realpath", "readlink", "pwd", "cd",
	// Text.
	"echo", "printf", "sed", "awk", "sort", "uniq", "cut", "tr", "nl", "rev", "paste", "comm", "join", "column",
	"fold", "expand", "unexpand", "diff", "cmp", "od", "hexdump", "strings", "jq", "seq", "read",
	"sha1sum", "sha256sum", "sha512sum", "md5sum", "cksum", "b2sum", "base64",
	// The shell's own.
	"[", "test", "true", "false", ":", "type", "command -v", "command -V", "which", "xargs", "sleep", "set", "timeout", "nice",
	// The machine.
	"env", "printenv", "uname", "id", "whoami", "hostname", "nproc", "date", "ps",
	// gofmt, reading.
	"gofmt",
	// git, reading.
	"git status", "git diff", "git log", "git show", "git blame", "git ls-files", "git grep", "git rev-parse", "git branch",
	"git tag", "git describe", "git remote", "git stash list", "git stash show", "git shortlog", "git ls-tree",
	"git cat-file", "git merge-base", "git rev-list", "git show-ref", "git for-each-ref", "git config", "git reflog",
	"git version", "git --version", "git worktree list", "git check-ignore", "git name-rev", "git count-objects",
	"git show-branch", "git diff-tree", "git cherry",
	// Toolchains' versions (nothing else on the line).
	"python3 --version", "python --version", "python3 -V", "node --version", "node -v", "npm --version", "npm -v",
	"npx --version", "cargo --version", "rustc --version", "java -version", "java --version", "javac -version",
	"ruby --version", "ruby -v", "perl --version", "perl -v", "gcc --version", "g++ --version", "cc --version",
	"clang --version", "make --version", "cmake --version", "pip --version", "pip3 --version", "docker --version",
	"kubectl version --client", "terraform --version", "deno --version", "bun --version", "php --version", "dotnet --version",
	// Go.
	"go test", "go build", "go vet", "go list", "go version", "go env", "go doc", "go help", "go mod graph", "go mod why",
}

// inertSpec: a program none of whose options runs another program or
// writes a file (checked against the program's manual), so that any
// word keeps it free.
func inertSpec(does string) *optionSpec { return &optionSpec{does: does, inert: true, anyWord: true} }

func init() {
	for name, does := range map[string]string{
		"basename": "prints a path's last element", "dirname": "prints a path's directory", "realpath": "prints resolved paths",
		"readlink": "prints where links lead", "stat": "prints files' metadata", "du": "prints disk usage",
		"df": "prints file systems' usage", "cut": "prints columns of lines", "tr": "translates characters of its input",
		"nl": "numbers lines", "rev": "reverses lines", "paste": "merges lines of files",
		"comm": "compares sorted files", "join": "joins lines of sorted files", "column": "formats columns",
		"fold": "wraps lines", "expand": "turns tabs into spaces", "unexpand": "turns spaces into tabs",
		"cmp": "compares files byte by byte", "od": "dumps files in octal and other formats",
		"hexdump": "dumps files in hexadecimal", "strings": "prints the printable strings of files", "seq": "prints numbers",
		"sha1sum": "prints or checks checksums", "sha256sum": "prints or checks checksums", "sha512sum": "prints or checks checksums",
		"md5sum": "prints or checks checksums", "cksum": "prints checksums", "b2sum": "prints or checks checksums",
		"base64": "encodes or decodes its input to its output", "true": "does nothing, successfully", "false": "does nothing, unsuccessfully",
		":": "does nothing (its words are expanded)", "which": "prints where programs are", "sleep": "waits",
		"printenv": "prints the environment", "uname": "prints the system's name", "id": "prints the user's identity",
		"whoami": "prints the user's name", "nproc": "prints the number of processors", "ps": "lists processes",
		"type": "says what a name would run", "command -v": "says what a name would run", "command -V": "says what a name would run",
		"git rev-parse":  "prints object names and repository paths (it echoes what it does not know)",
		"git merge-base": "prints common ancestors", "git show-ref": "lists references", "git ls-tree": "lists a tree's entries",
		"git version": "prints git's version", "git count-objects": "counts objects", "git name-rev": "names revisions",
		"git check-ignore": "says which paths are ignored", "git worktree list": "lists worktrees", "go help": "prints help",
		"go mod graph": "prints the module graph", "go mod why": "explains why packages are needed", "git --version": "prints git's version", "go version": "prints Go's version (-m: of binaries)",
		"env": "prints the environment, or runs a command (judged as such) with inert variables",
	} {
		specs[name] = inertSpec(does)
	}
	specs["env"].anyWord, specs["env"].inert = false, false
	for _, e := range DefaultFree {
		if strings.HasSuffix(e, "version") || strings.HasSuffix(e, " -v") || strings.HasSuffix(e, " -V") || strings.HasSuffix(e, "--client") {
			if _, known := specs[e]; !known && strings.Contains(e, " ") {
				specs[e] = &optionSpec{does: "prints the program's version", maxOperands: -1, custom: versionOnly}
			}
		}
	}
	specs["env"].custom = func(*checker, []arg) verdict {
		return allow("free-command", "env without a command prints the environment")
	}

	specs["diff"] = &optionSpec{does: "compares files; -l/--paginate (which runs pr) is not free", short: "abBdeEfiNnpqrstTuwycZy",
		shortVal: "FIDSx", shortOpt: "CU", numeric: true,
		long: strings.Fields(`--normal --brief --report-identical-files --context[=] --unified[=] --ed --rcs --side-by-side --width=
		--left-column --suppress-common-lines --show-c-function --show-function-line= --label= --expand-tabs --initial-tab
		--tabsize= --suppress-blank-empty --new-file --unidirectional-new-file --ignore-case --ignore-tab-expansion
		--ignore-trailing-space --ignore-space-change --ignore-all-space --ignore-blank-lines --ignore-matching-lines= --text
		--strip-trailing-cr --recursive --no-dereference --starting-file= --exclude= --exclude-from= --from-file= --to-file=
		--color[=] --palette= --minimal --horizon-lines= --speed-large-files --old-group-format= --new-group-format=
		--unchanged-group-format= --changed-group-format= --line-format= --old-line-format= --new-line-format=
		--unchanged-line-format= --ifdef= --GTYPE-group-format= --help --version`)}
	specs["go doc"] = &optionSpec{does: "prints documentation; -http (which downloads and runs pkgsite) is not free",
		custom: goOptions("doc")}
	specs["gofmt"] = &optionSpec{does: "prints formatted Go, lists or diffs files; -w (which rewrites them) and -cpuprofile are not free",
		short: "ldes", shortVal: "r", long: []string{"--help"}}
	specs["set"] = &optionSpec{does: "sets the shell's options -e, -u, -x, -v, -f, -C and -o pipefail and the like (not positional parameters)",
		custom: (*checker).setOptions}
	specs["timeout"] = &optionSpec{does: "runs a free command with a time limit", custom: func(*checker, []arg) verdict {
		return allow("free-command", "timeout is judged by what it runs")
	}}
	specs["nice"] = &optionSpec{does: "runs a free command at a lower priority", custom: func(*checker, []arg) verdict {
		return allow("free-command", "nice is judged by what it runs")
	}}
	specs["read"] = &optionSpec{does: "reads a line into inert variables (lower-case names, no subscripts)", custom: (*checker).readOptions}
	specs["sort"] = &optionSpec{does: "sorts lines to its output; -o/--output, --compress-program and -T (temporary files) are not free",
		short: "bcCdfghiMmnRrsuVz", shortVal: "kSt",
		long: strings.Fields(`--ignore-leading-blanks --dictionary-order --ignore-case --general-numeric-sort --ignore-nonprinting
			--month-sort --human-numeric-sort --numeric-sort --random-sort --random-source= --reverse --sort= --version-sort
			--batch-size= --check[=] --debug --files0-from= --key= --merge --buffer-size= --stable --field-separator=
			--unique --zero-terminated --parallel= --help --version`)}
	specs["uniq"] = &optionSpec{does: "filters repeated lines to its output (a second file name is an output file, which is not free)", short: "cdDiuz", shortVal: "fsw", numeric: true, maxOperands: 1,
		long: strings.Fields(`--count --repeated --all-repeated[=] --skip-fields= --group[=] --ignore-case --skip-chars= --unique
			--zero-terminated --check-chars= --help --version`)}
	specs["tree"] = &optionSpec{custom: (*checker).treeOptions, does: "prints a directory tree; -o (an output file) and -R (which writes HTML files with -H) are not free", short: "adlfxqNQpugshDFvtcUrSCAn", shortVal: "LPIH",
		long: strings.Fields(`--help --version --noreport --charset= --filelimit= --timefmt= --du --si --prune --dirsfirst --filesfirst
			--inodes --device --sort= --matchdirs --ignore-case --fromfile --gitignore --info --metafirst --noreport --nolinks
			--hintro= --houtro= --gitfile= --infofile= --condense --hyperlink`)}
	specs["file"] = &optionSpec{does: "says what files are; -C (which writes a compiled magic file) is not free",
		short: "bcdEhiIklLNnprsSv0", shortVal: "efFmP",
		long: strings.Fields(`--apple --brief --checking-printout --exclude= --exclude-quiet= --extension --files-from= --separator=
			--mime --mime-type --mime-encoding --keep-going --list --dereference --no-dereference --magic-file= --no-pad
			--no-buffer --parameter= --preserve-date --raw --special-files
			--print0 --help --version`)}
	specs["date"] = &optionSpec{does: "prints the date; -s/--set and an operand that is not +FORMAT (which set the clock) are not free", short: "Ru", shortVal: "dfr", custom: (*checker).dateOptions,
		long: strings.Fields(`--date= --debug --file= --iso-8601[=] --resolution --rfc-email --rfc-3339= --reference= --utc
			--universal --help --version`)}
	specs["hostname"] = &optionSpec{does: "prints the host's name (a name operand, which sets it, is not free)",
		short: "aAdfiIsy", maxOperands: -1,
		long: strings.Fields(`--alias --all-fqdns --domain --fqdn --long --ip-address --all-ip-addresses --short --yp --nis --help --version`)}
	specs["jq"] = &optionSpec{does: "filters JSON (jq runs no program and writes no file); --rawfile and --slurpfile read files inside the working copy only",
		inert: true, short: "ncrjaSCMsReh", shortVal: "fL",
		long: strings.Fields(`--null-input --compact-output --raw-output --raw-output0 --join-output --ascii-output --sort-keys
			--color-output --monochrome-output --tab --indent= --unbuffered --stream --stream-errors --seq --slurp --raw-input
			--exit-status --arg --argjson --slurpfile --rawfile --args --jsonargs --from-file= --help --version --build-configuration`),
		custom: (*checker).jqOptions}
	specs["printf"] = &optionSpec{does: "prints formatted text; -v (which assigns a variable, evaluating its subscript) is not free",
		custom: (*checker).printfOptions}
	specs["xargs"] = &optionSpec{does: "runs a free command with words read from its input; only commands none of whose options runs or writes (their input's words may be any option)",
		custom: func(*checker, []arg) verdict { return allow("free-command", "xargs is judged by what it runs") }}
	specs["cd"] = &optionSpec{does: "changes directory, within the working copy", custom: (*checker).cdOptions}
	for _, t := range []string{"[", "test"} {
		specs[t] = &optionSpec{does: "tests files and strings; -v and -R (which evaluate a subscript as arithmetic) are not free",
			custom: (*checker).testOptions}
	}
	specs["sed"] = &optionSpec{does: "prints edited text; -i, scripts from files and the commands w, W, r, R, e and the s flags w and e are not free",
		custom: (*checker).sedOptions}
	specs["awk"] = &optionSpec{does: "prints from its input; programs from files, system(), pipes, output redirections, getline from commands and gawk's @ directives are not free",
		custom: (*checker).awkOptions}
}

// versionOnly: a toolchain asked for its version, with nothing else on
// the line (its other words would be code or a script to run).
func versionOnly(c *checker, args []arg) verdict {
	if len(args) != len(c.entry) {
		return ask("interpreter", args[0].s+" with more than "+strings.Join(c.entry, " ")+" runs code")
	}
	return allow("free-command", "in the free list: "+strings.Join(c.entry, " ")+" prints a version")
}

// treeOptions: tree's own parser gives -L, -P, -I, -H, -T and -o the
// next word even inside a cluster, and reads on: a value-taking letter
// counts only alone.
func (c *checker) treeOptions(args []arg) verdict {
	spec := *specs["tree"]
	spec.custom = nil
	for _, a := range args[1:] {
		if a.static && strings.HasPrefix(a.s, "-") && !strings.HasPrefix(a.s, "--") && len(a.s) > 2 &&
			strings.ContainsAny(a.s[1:], spec.shortVal+"o") {
			return ask("unknown-option", "tree "+a.s+": a letter that takes a value inside a cluster takes the next word")
		}
	}
	return checkOptions("tree", &spec, args[1:])
}

// setOptions: set with the options that change how errors and tracing
// behave; positional parameters (set -- x) and other options ask.
func (c *checker) setOptions(args []arg) verdict {
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case !a.static:
			return ask("dynamic-argument", "set with a word from an expansion")
		case a.s == "-o" || a.s == "+o":
			if i+1 >= len(args) || !shellSafeOption[args[i+1].s] {
				return ask("shell-option", "set -o with an option not known to be harmless")
			}
			i++
		case (strings.HasPrefix(a.s, "-") || strings.HasPrefix(a.s, "+")) && len(a.s) > 1 && strings.Trim(a.s[1:], "euxvfCB") == "":
		default:
			return ask("shell-option", "set "+a.s+": positional parameters or an option not known to be harmless")
		}
	}
	return allow("free-command", "in the free list: set with harmless options")
}

// readOptions: read assigns what it reads to inert variables only.
func (c *checker) readOptions(args []arg) verdict {
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !a.static {
			return ask("dynamic-argument", "read with a word from an expansion")
		}
		switch {
		case a.s == "--":
		case strings.HasPrefix(a.s, "-") && len(a.s) > 1:
			for j := 1; j < len(a.s); j++ {
				ch := a.s[j]
				if strings.IndexByte("rse", ch) >= 0 {
					continue
				}
				if strings.IndexByte("dnNtpu", ch) < 0 {
					return ask("unknown-option", "read -"+string(ch)+" (-a and -i assign arrays or read the terminal)")
				}
				if j == len(a.s)-1 {
					i++ // the value is the next word
				}
				break
			}
		case !inertShellVar(a.s):
			return ask("assignment", "read assigns "+a.s+", which is not known to be inert")
		}
	}
	return allow("free-command", "in the free list: read into inert variables")
}

// dateOptions: date prints unless told to set the clock.
func (c *checker) dateOptions(args []arg) verdict {
	for _, a := range args[1:] {
		if !a.static {
			return ask("dynamic-argument", "date: an argument from an expansion may be -s, which sets the clock")
		}
		if a.s == "-s" || strings.HasPrefix(a.s, "--set") || strings.HasPrefix(a.s, "-s") ||
			strings.HasPrefix(a.s, "-") && !strings.HasPrefix(a.s, "--") && strings.Contains(a.s, "s") && !strings.ContainsAny(a.s, "dfr") {
			return ask("unknown-option", "date -s sets the clock")
		}
	}
	v := checkOptions("date", &optionSpec{short: "Ru", shortVal: "dfr", long: specs["date"].long}, args[1:])
	if v.v != Allow {
		return v
	}
	for _, op := range operands(&optionSpec{shortVal: "dfr", long: specs["date"].long}, args[1:]) {
		if !strings.HasPrefix(op.s, "+") {
			return ask("unknown-option", "date "+op.s+": an operand that is not +FORMAT sets the clock")
		}
	}
	return v
}

// jqOptions: any jq program; files it is told to read must be inside
// the working copy.
func (c *checker) jqOptions(args []arg) verdict {
	for i, a := range args[1:] {
		if (a.s == "--rawfile" || a.s == "--slurpfile") && i+3 < len(args) {
			if f := args[i+3]; !f.static || !insidePath(f.s) {
				return ask("outside-read", "jq "+a.s+" "+f.s+": reads a file outside the working copy")
			}
		}
	}
	return allow("free-command", "in the free list: jq runs no program and writes no file")
}

// printfOptions: bash's printf, free without -v.
func (c *checker) printfOptions(args []arg) verdict {
	if len(args) > 1 {
		first := args[1]
		if !first.static || first.glob {
			return ask("dynamic-argument", "printf: a first word from an expansion or a pattern may be -v, which assigns a variable")
		}
		if strings.HasPrefix(first.s, "-") && first.s != "--" && first.s != "-" {
			return ask("unknown-option", "printf "+first.s+": -v assigns a variable, evaluating its subscript")
		}
	}
	return allow("free-command", "in the free list: printf without -v")
}

// cdOptions: cd to a literal relative directory that does not climb out
// of where the command started.
func (c *checker) cdOptions(args []arg) verdict {
	var dirs []arg
	top := false
	for _, a := range args[1:] {
		if toplevel(a) {
			top = true
			dirs = append(dirs, a)
			continue
		}
		if !a.static {
			return ask("cd", "cd to a directory from an expansion, which may be outside the working copy")
		}
		switch {
		case a.s == "-L" || a.s == "-P" || a.s == "-e" || a.s == "--":
		case strings.HasPrefix(a.s, "-"):
			return ask("cd", "cd "+a.s+" (the previous directory, or an unknown option)")
		default:
			dirs = append(dirs, a)
		}
	}
	if len(dirs) != 1 {
		return ask("cd", "cd without a directory goes home, outside the working copy")
	}
	if top {
		return allow("free-command", "in the free list: cd to the repository's top level")
	}
	d := dirs[0]
	if d.home || d.glob || strings.HasPrefix(d.s, "/") || strings.HasPrefix(d.s, "~") || isWindowsPath(d.s) {
		return ask("cd", "cd "+d.s+": outside the working copy")
	}
	if c.cdEscapes {
		return ask("cd", "cd "+d.s+": the command's cd's climb above where it started, outside the working copy")
	}
	return allow("free-command", "in the free list: cd within the working copy")
}

// toplevel: the word $(git rev-parse --show-toplevel), quoted or not:
// the working copy's root.
func toplevel(a arg) bool {
	return !a.static && len(a.def) == 0 && a.s == "$" && a.toplevel
}

// testOptions: [ and test evaluate nothing but -v/-R; words from
// expansions are free where test's grammar cannot read them as an
// operator (test decides by the number of its arguments).
func (c *checker) testOptions(args []arg) verdict {
	rest := args[1:]
	if canonical(args[0].s) == "[" {
		if len(rest) == 0 || !rest[len(rest)-1].static || rest[len(rest)-1].s != "]" {
			return ask("test", "[ without its closing ]")
		}
		rest = rest[:len(rest)-1]
	}
	for _, a := range rest {
		if a.unknown {
			return ask("brace-limit", "brace expansion past the analyzer's limit")
		}
		if a.static && (a.s == "-v" || a.s == "-R") {
			return ask("subscript", "test "+a.s+" evaluates a subscript as arithmetic, which can run code")
		}
		if a.number {
			continue
		}
		if !a.static && !a.quoted || a.glob {
			return ask("dynamic-argument", "test: an unquoted expansion or a pattern may become several words, one of them -v")
		}
	}
	lit := func(i int) bool { return rest[i].static || rest[i].number }
	isBinary := func(i int) bool {
		switch rest[i].s {
		case "=", "==", "!=", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-nt", "-ot", "-ef", "-a", "-o", "=~":
			return lit(i)
		}
		return false
	}
	switch n := len(rest); {
	case n <= 1:
	case n == 2:
		if !lit(0) {
			return ask("dynamic-argument", "test: a first word from an expansion may be -v")
		}
	case n == 3:
		if !isBinary(1) && !(lit(0) && rest[0].s == "!" && lit(1)) && !(lit(0) && rest[0].s == "(" && lit(2) && rest[2].s == ")") {
			return ask("dynamic-argument", "test: a word from an expansion may be read as an operator")
		}
	default:
		for i := range rest {
			if !lit(i) {
				return ask("dynamic-argument", "test with four or more words, one from an expansion: it may be read as -v")
			}
		}
	}
	return allow("free-command", "in the free list: test without -v or -R")
}
