package shellcheck

import (
	"strings"
)

// git's read-only subcommands. Options are git's own grammar: a short
// option with an optional value takes it attached only (-U5, -M50%,
// -C; -U alone leaves the next word alone), so those letters are
// shortOpt; --name with an optional value takes it after "=" only.
// --ext-diff, --textconv, --output, -O (a pager) and --show-signature
// and the signature placeholders (gpg) are never free; git() refuses or
// asks for them before any spec is read.

// gitDiffShort are the diff options' flags; gitDiffShortVal take a value
// (attached or next), gitDiffShortOpt an optional attached one.
const (
	gitDiffShort    = "pusRawbWzDh"
	gitDiffShortVal = "GSOI"
	gitDiffShortOpt = "UBMCXl"
)

var gitDiffLong = strings.Fields(`--stat[=] --numstat --shortstat --dirstat[=] --dirstat-by-file[=] --summary --patch --no-patch
	--unified[=] --raw --patch-with-stat --patch-with-raw --name-only --name-status --cached --staged --merge-base --no-index
	--relative[=] --no-relative --text --color[=] --no-color --color-moved[=] --no-color-moved --color-moved-ws= --color-words[=]
	--word-diff[=] --word-diff-regex= --ignore-all-space --ignore-space-change --ignore-space-at-eol --ignore-blank-lines
	--ignore-cr-at-eol --ignore-matching-lines= --diff-algorithm= --minimal --patience --histogram --anchored= --indent-heuristic
	--no-indent-heuristic --find-renames[=] --find-copies[=] --find-copies-harder --break-rewrites[=] --irreversible-delete
	--diff-filter= --pickaxe-all --pickaxe-regex --full-index --binary --src-prefix= --dst-prefix= --no-prefix --default-prefix
	--line-prefix= --ita-invisible-in-index --ita-visible-in-index --exit-code --quiet --check --ws-error-highlight=
	--ignore-submodules[=] --function-context --inter-hunk-context= --no-ext-diff --no-textconv --compact-summary --find-object=
	--skip-to= --rotate-to= --base --ours --theirs --no-renames --rename-empty --no-rename-empty --output-indicator-new=
	--output-indicator-old= --output-indicator-context= --null --abbrev[=] --no-abbrev --stat-width= --stat-name-width=
	--stat-graph-width= --stat-count= --cumulative --follow --no-merges --dd --combined-all-paths`)

var gitLogLong = append(strings.Fields(`--oneline --graph --decorate[=] --no-decorate --all --branches[=] --tags[=] --remotes[=]
	--max-count= --skip= --since= --after= --until= --before= --author= --committer= --grep= --all-match --invert-grep
	--regexp-ignore-case --extended-regexp --fixed-strings --perl-regexp --basic-regexp --merges --no-merges --first-parent
	--reverse --format= --pretty[=] --abbrev-commit --no-abbrev-commit --date= --relative-date --follow --topo-order
	--date-order --author-date-order --left-right --cherry-pick --cherry-mark --cherry --boundary --ancestry-path[=]
	--simplify-by-decoration --full-history --dense --sparse --source --walk-reflogs --notes[=] --no-notes --mailmap
	--use-mailmap --no-mailmap --log-size --parents --children --count --encoding= --expand-tabs[=] --no-expand-tabs
	--show-linear-break[=] --left-only --right-only --no-walk[=] --do-walk --exclude= --remerge-diff --diff-merges=
	--no-diff-merges --cc --min-parents= --max-parents= --no-min-parents --no-max-parents --single-worktree --show-pulls
	--clear-decorations --decorate-refs= --decorate-refs-exclude= --reflog --alternate-refs --bisect --not --glob=
	--since-as-filter= --max-age= --min-age= --no-color --show-notes[=] --standard-notes --no-standard-notes --ignore-missing
	--exclude-hidden= --objects --objects-edge --unpacked --header --timestamp --in-commit-order --no-object-names`), gitDiffLong...)

// gitSignatureValues: --format and --pretty without the %G placeholders
// (which run gpg).
var gitSignatureValues = map[string]func(string) bool{"--format": noSignature, "--pretty": noSignature}

func init() {
	logSpec := func(does string) *optionSpec {
		return &optionSpec{does: does, short: gitDiffShort + "gimcEFPtq", shortVal: gitDiffShortVal + "nL", shortOpt: gitDiffShortOpt,
			numeric: true, long: gitLogLong, values: gitSignatureValues}
	}
	specs["git diff"] = &optionSpec{does: "shows changes; --ext-diff, --textconv and --output (a program or a file) are not free",
		short: gitDiffShort, shortVal: gitDiffShortVal, shortOpt: gitDiffShortOpt, long: gitDiffLong, numeric: true}
	specs["git log"] = logSpec("shows history; --show-signature and the %G placeholders of --format/--pretty (they run gpg), --ext-diff, --textconv and --output are not free")
	specs["git show"] = logSpec("shows objects (a commit with its diff, a file at a revision); as git log")
	specs["git rev-list"] = logSpec("lists commits; as git log")
	specs["git shortlog"] = &optionSpec{does: "summarizes history by author", short: gitDiffShort + "senc", shortVal: gitDiffShortVal + "n",
		shortOpt: gitDiffShortOpt + "w", numeric: true, long: append(strings.Fields(`--numbered --summary --email --group= --committer
		--format[=]`), gitLogLong...), values: gitSignatureValues}
	specs["git reflog"] = &optionSpec{does: "shows the reference log (expire and delete, which change it, are not free)",
		short: gitDiffShort + "gimq", shortVal: gitDiffShortVal + "n", shortOpt: gitDiffShortOpt, numeric: true, long: gitLogLong,
		values: gitSignatureValues, custom: (*checker).reflogOptions}
	specs["git stash list"] = logSpec("lists stashes; as git log")
	specs["git stash show"] = &optionSpec{does: "shows a stash's changes", short: gitDiffShort, shortVal: gitDiffShortVal,
		shortOpt: gitDiffShortOpt, numeric: true, long: append(strings.Fields(`--include-untracked --only-untracked --no-include-untracked`), gitDiffLong...)}
	specs["git status"] = &optionSpec{does: "shows the working tree's state", short: "sbvz", shortOpt: "u",
		long: strings.Fields(`--short --branch --porcelain[=] --long --verbose --untracked-files[=] --ignore-submodules[=]
		--ignored[=] --column[=] --no-column --ahead-behind --no-ahead-behind --renames --no-renames --find-renames[=] --show-stash
		--null --no-optional-locks`)}
	specs["git blame"] = &optionSpec{does: "shows who last changed each line", short: "bcfelnpstwh", shortVal: "LS", shortOpt: "MC",
		long: strings.Fields(`--root --show-stats --score-debug --show-name --show-number --show-email --porcelain --line-porcelain
		--incremental --encoding= --contents= --date= --progress --no-progress --reverse --first-parent --abbrev[=] --ignore-rev=
		--ignore-revs-file= --color-lines --color-by-age --minimal --since= --no-textconv`)}
	specs["git ls-files"] = &optionSpec{does: "lists the files git knows", short: "cdmoiskuvtfz", shortVal: "xX",
		long: strings.Fields(`--cached --deleted --modified --others --ignored --stage --killed --unmerged --directory
		--no-empty-directory --eol --exclude= --exclude-from= --exclude-per-directory= --exclude-standard --error-unmatch
		--with-tree= --full-name --abbrev[=] --debug --deduplicate --format= --sparse --resolve-undo --recurse-submodules`)}
	specs["git grep"] = &optionSpec{does: "searches tracked files; -O/--open-files-in-pager (a pager) and --textconv are not free",
		short: "aiIvwcLlhHnzqobWpEGFPr", shortVal: "efmABC", numeric: true,
		long: strings.Fields(`--cached --no-index --untracked --no-exclude-standard --exclude-standard --text --no-textconv
		--ignore-case --word-regexp --invert-match --full-name --extended-regexp --basic-regexp --perl-regexp --fixed-strings
		--line-number --column --files-with-matches --name-only --files-without-match --null --only-matching --count
		--color[=] --no-color --break --heading --show-function --function-context --and --or --not --all-match --quiet
		--max-depth= --after-context= --before-context= --context= --threads= --max-count= --recurse-submodules`)}
	specs["git branch"] = &optionSpec{does: "lists branches (a name operand, which creates one, and -d/-m/-c/-f/-u are not free)",
		short: "arvlit", long: strings.Fields(`--all --remotes --verbose --list --show-current --color[=] --no-color --column[=]
		--no-column --omit-empty --ignore-case --contains --no-contains --merged --no-merged --points-at= --sort= --format=
		--abbrev[=] --no-abbrev`), custom: (*checker).listOnly, values: map[string]func(string) bool{"--format": noSignatureAtom, "--sort": noSignatureAtom}}
	specs["git tag"] = &optionSpec{does: "lists tags (a name operand, which creates one, and -a/-s/-d/-f/-v are not free)",
		short: "li", numeric: true, long: strings.Fields(`--list --contains --no-contains --merged --no-merged --points-at=
		--sort= --format= --column[=] --no-column --color[=] --ignore-case --omit-empty`), custom: (*checker).listOnly,
		values: map[string]func(string) bool{"--format": noSignatureAtom, "--sort": noSignatureAtom}}
	specs["git describe"] = &optionSpec{does: "names a commit by its nearest tag",
		long: strings.Fields(`--all --tags --contains --abbrev= --candidates= --exact-match --debug --long --match= --exclude=
		--always --first-parent --dirty[=] --broken[=]`)}
	specs["git remote"] = &optionSpec{does: "lists remotes (git remote, -v, get-url); what contacts or changes them is not free",
		short: "v", long: []string{"--verbose"}, custom: (*checker).remoteOptions}
	specs["git cat-file"] = &optionSpec{does: "prints objects; --textconv and --filters (which run drivers) are not free",
		short: "tsepZ", long: strings.Fields(`--batch[=] --batch-check[=] --batch-command[=] --batch-all-objects --buffer
		--follow-symlinks --unordered --allow-unknown-type --use-mailmap --mailmap --no-mailmap`)}
	specs["git for-each-ref"] = &optionSpec{does: "lists references in a format (signature atoms, which run gpg, are not free)",
		long: strings.Fields(`--format= --sort= --count= --shell --perl --python --tcl --points-at= --merged[=] --no-merged[=]
		--contains[=] --no-contains[=] --ignore-case --omit-empty --exclude= --include-root-refs --color[=]`),
		values: map[string]func(string) bool{"--format": noSignatureAtom, "--sort": noSignatureAtom}}
	for _, n := range []string{"git check-ignore", "git name-rev", "git diff-tree", "git cherry", "git show-branch"} {
		specs[n] = &optionSpec{does: "reads the repository", short: gitDiffShort + "vnqzrtmcaelsS", shortVal: gitDiffShortVal,
			shortOpt: gitDiffShortOpt, numeric: true, long: append(strings.Fields(`--verbose --non-matching --stdin --no-index
			--name-only --tags --refs= --exclude= --all --annotate-stdin --no-undefined --always --no-commit-id --root --merge-base
			--abbrev[=] --list --topics --independent --merge-base --sha1-name --current --color[=] --no-color --more[=] --reflog[=]
			--sparse --topo-order --date-order --remotes -r`), gitLogLong...), values: gitSignatureValues}
	}
	specs["git config"] = &optionSpec{does: "reads configuration (--get, --list, get, list, or one name); what sets, unsets or edits it is not free",
		custom: (*checker).configOptions}
}

// noSignatureAtom: ref-filter formats and sort keys without the
// signature atoms (which run gpg).
func noSignatureAtom(s string) bool { return !strings.Contains(strings.ToLower(s), "signature") }

// gitRest is what follows the subcommand words of a git free entry.
func gitRest(args []arg, entry []string) []arg { return skipN(gitArgsAfterSub(args), len(entry)-2) }

// listOnly: git branch and git tag list unless given a name outside
// list mode (-l, --list, --contains, --merged, --points-at ...).
func (c *checker) listOnly(args []arg) verdict {
	entry := c.entry
	key := strings.Join(entry, " ")
	spec := specs[key]
	rest := gitRest(args, entry)
	plain := *spec
	plain.custom = nil
	v, ops := parseOptions(key, &plain, rest)
	if v.v != Allow {
		return v
	}
	list := false
	for _, a := range rest {
		switch strings.SplitN(a.s, "=", 2)[0] {
		case "-l", "--list", "--contains", "--no-contains", "--merged", "--no-merged", "--points-at":
			list = true
		}
		if strings.HasPrefix(a.s, "-") && !strings.HasPrefix(a.s, "--") && strings.Contains(a.s, "l") {
			list = true
		}
	}
	if len(ops) > 0 && !list {
		return ask("git-write", key+" "+ops[0].s+": a name outside list mode creates it")
	}
	return v
}

// reflogOptions: git reflog [show] with log options.
func (c *checker) reflogOptions(args []arg) verdict {
	rest := gitRest(args, c.entry)
	if len(rest) > 0 && rest[0].static && !strings.HasPrefix(rest[0].s, "-") && rest[0].s != "show" {
		switch rest[0].s {
		case "expire", "delete", "drop", "exists", "list":
			if rest[0].s != "exists" && rest[0].s != "list" {
				return ask("git-write", "git reflog "+rest[0].s+" changes the reference log")
			}
			rest = rest[1:]
		}
	} else if len(rest) > 0 && rest[0].s == "show" {
		rest = rest[1:]
	}
	plain := *specs["git reflog"]
	plain.custom = nil
	return checkOptions("git reflog", &plain, rest)
}

// remoteOptions: git remote, -v, get-url NAME.
func (c *checker) remoteOptions(args []arg) verdict {
	rest := gitRest(args, c.entry)
	for len(rest) > 0 && (rest[0].s == "-v" || rest[0].s == "--verbose") {
		rest = rest[1:]
	}
	if len(rest) == 0 {
		return allow("free-command", "in the free list: git remote lists remotes")
	}
	if rest[0].s == "get-url" {
		for _, a := range rest[1:] {
			if !a.static || strings.HasPrefix(a.s, "-") && a.s != "--push" && a.s != "--all" {
				return ask("unknown-option", "git remote get-url "+a.s)
			}
		}
		return allow("free-command", "in the free list: git remote get-url prints a remote's address")
	}
	return ask("git-remote", "git remote "+rest[0].s+" contacts or changes remotes")
}

// configOptions: git config reading: --get*, --list, get, list, or a
// lone name; scopes and types may be named.
func (c *checker) configOptions(args []arg) verdict {
	rest := gitRest(args, c.entry)
	reading := false
	var ops []arg
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if !a.static {
			return ask("dynamic-argument", "git config with a word from an expansion")
		}
		name, _, _ := strings.Cut(a.s, "=")
		switch name {
		case "--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "--get-color", "--get-colorbool":
			reading = true
		case "--local", "--global", "--system", "--worktree", "--show-origin", "--show-scope", "--name-only", "-z", "--null",
			"--bool", "--int", "--bool-or-int", "--path", "--expiry-date", "--includes", "--no-includes":
		case "--type", "--default", "--file", "-f", "--blob":
			if !strings.Contains(a.s, "=") {
				i++
			}
		default:
			if strings.HasPrefix(a.s, "-") {
				return ask("git-config", "git config "+a.s+" is not among the options that only read")
			}
			ops = append(ops, a)
		}
	}
	if len(ops) > 0 {
		switch ops[0].s {
		case "edit", "set", "unset", "rename-section", "remove-section":
			return ask("git-config", "git config "+ops[0].s+" changes configuration or opens an editor")
		}
	}
	for _, a := range rest {
		if a.s == "-e" || a.s == "--edit" {
			return ask("git-config", "git config --edit opens an editor")
		}
	}
	if len(ops) > 0 && (ops[0].s == "get" || ops[0].s == "list") {
		return allow("free-command", "in the free list: git config "+ops[0].s+" reads configuration")
	}
	if reading || len(ops) == 1 || len(ops) == 0 && len(rest) == 0 {
		return allow("free-command", "in the free list: git config reads configuration")
	}
	return ask("git-config", "git config with a name and a value sets configuration")
}
