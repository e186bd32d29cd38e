package shellcheck

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/syntax"

	"github.com/paddock-dev/paddock/internal/sandbox"
)

// The bash oracle: every command the analyzer allows is run by real bash,
// inside the real sandbox, with every program on PATH replaced by a shim
// that records its argv, and with xtrace recording every simple command
// bash runs after expansion (builtins, eval, source, trap code and
// functions included). A command is a false allow when bash ran anything
// the analyzer would not allow on its own (a program outside the free list,
// a free program with an option not known to keep it free, a code-running
// builtin, an assignment to a variable not known to be inert) or when a
// file appeared or changed anywhere writable (the working copy included:
// an allowed command writes nothing).
//
//	go test ./internal/shellcheck -run Oracle -oracle.n 100000 -oracle.seed 1 -timeout 2h
var (
	oracleN    = flag.Int("oracle.n", 5000, "generated commands for the bash oracle")
	oracleSeed = flag.Uint64("oracle.seed", 1, "seed of the command generator")
)

// shimSource records its argv: name, then each argument, NUL-separated,
// then a record separator, in a file of its own process (programs run at
// once, in a pipe or a process substitution, must not interleave). bash -p ignores BASH_ENV and ENV, so a shim
// runs nothing the command could have planted.
const shimSource = `#!/bin/bash -p
{ printf '%s\0' "${0##*/}" "$@"; printf '\036\0'; } >> "$ORACLE_DIR/log/$ORACLE_N.argv.$$"
for n in $(compgen -e); do printf '%s=%s\0' "$n" "${!n}"; done > "$ORACLE_DIR/log/$ORACLE_N.env.$$"
# bash itself runs (traced through the inherited BASH_XTRACEFD), so the
# code of bash -c is checked too.
if [ "${0##*/}" = bash ]; then exec /bin/bash -x "$@"; fi
# The reading programs run for real, so that what they write or start
# (sed's w and e, awk's system(), git's --output) is seen.
if [ -e "$ORACLE_DIR/real/${0##*/}" ]; then read -r real < "$ORACLE_DIR/real/${0##*/}"; exec "$real" "$@"; fi
exit 0
`

// realPrograms run for real under the oracle (the others are only
// recorded): the free reading programs, whose options the analyzer
// claims to know. go stays a shim (a build is too slow for the oracle's
// time limit).
var realPrograms = set("ls", "cat", "head", "tail", "wc", "grep", "find", "tree", "stat", "file", "du", "df", "basename",
	"dirname", "realpath", "readlink", "pwd", "sed", "awk", "mawk", "gawk", "sort", "uniq", "cut", "tr", "nl", "tac", "rev",
	"paste", "comm", "join", "column", "fold", "expand", "unexpand", "diff", "cmp", "od", "hexdump", "xxd", "strings", "jq",
	"seq", "sha1sum", "sha256sum", "sha512sum", "md5sum", "cksum", "b2sum", "base64", "which", "xargs", "env", "printenv",
	"uname", "id", "whoami", "hostname", "nproc", "date", "ps", "git", "rg", "true", "false", "test", "[", "printf", "echo",
	"sleep")

// driverSource runs each command file in a fresh bash with PATH set to the
// shims only, xtrace on a dedicated descriptor, then lists what appeared or
// changed (path, mtime, ctime, size) in every writable place, the oracle's
// own directory aside.
const driverSource = `set -u
O=$ORACLE_DIR
R=${O%/*}
snap() { find "$R" /tmp /home /root /run -path "$O" -prune -o -printf '%p\t%T@\t%C@\t%s\n' 2>/dev/null | sort; }
snap > "$O/base"
for f in "$O"/cmds/*; do
  n=${f##*/}
  cd "$R/wc" || exit 3
  ORACLE_DIR=$O ORACLE_N=$n PATH=$O/bin BASH_XTRACEFD=9 PS4='+ ' GIT_OPTIONAL_LOCKS=0 \
    /usr/bin/timeout -s KILL 3 /bin/bash --noprofile --norc -x -c "$(cat "$f")" 9>"$O/log/$n.trace" </dev/null >/dev/null 2>&1
  echo $? > "$O/log/$n.rc"
  snap > "$O/now"
  comm -13 "$O/base" "$O/now" | cut -f1 > "$O/log/$n.new"
  mv "$O/now" "$O/base"
done
`

type oracleCase struct {
	command string
	origin  string
}

// oracleResult is what bash did with one command.
type oracleResult struct {
	ran      [][]string          // simple commands from xtrace (assignments as NAME=VALUE words)
	programs [][]string          // argv recorded by the shims
	envs     []map[string]string // the environment each program got
	written  []string
	rc       string
}

// runOracle runs commands in batches, each batch in one sandbox.
func runOracle(t *testing.T, b *sandbox.Bwrap, cmds []string) []oracleResult {
	t.Helper()
	root, err := os.MkdirTemp("/tmp", "paddock-oracle-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	o := filepath.Join(root, "oracle")
	for _, d := range []string{"bin", "cmds", "log"} {
		must(t, os.MkdirAll(filepath.Join(o, d), 0o755))
	}
	must(t, os.WriteFile(filepath.Join(o, "shim"), []byte(shimSource), 0o755))
	must(t, os.WriteFile(filepath.Join(o, "driver"), []byte(driverSource), 0o755))
	must(t, os.MkdirAll(filepath.Join(o, "real"), 0o755))
	seen := map[string]bool{}
	for _, dir := range strings.Split(sandbox.Environment(nil)["PATH"], ":") {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if n := e.Name(); !seen[n] && !strings.ContainsAny(n, "/") {
				seen[n] = true
				must(t, os.Symlink(filepath.Join(o, "shim"), filepath.Join(o, "bin", n)))
				if realPrograms[n] {
					must(t, os.WriteFile(filepath.Join(o, "real", n), []byte(filepath.Join(dir, n)+"\n"), 0o644))
				}
			}
		}
	}
	wc := filepath.Join(root, "wc")
	must(t, os.MkdirAll(filepath.Join(wc, "src"), 0o755))
	// Fixture text that corpus commands grep for (the words TODO and sudo),
	// in a repository with one commit, for git to read.
	for _, f := range []string{"main.go", "src/a.go", "README.md", "x", "f", "a", "b", "go.mod", "package.json", "Makefile",
		"internal/api/api.go", "main_test.go"} {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(wc, f)), 0o755))
		must(t, os.WriteFile(filepath.Join(wc, f), []byte("package main\n// TODO sudo\n{\"name\": \"x\"}\n"), 0o644))
	}
	git := exec.Command("sh", "-c", "git init -q && git add -A && git -c user.name=o -c user.email=o@x commit -qm init && git tag v1")
	git.Dir = wc
	git.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+root)
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("fixture repository: %v %s", err, out)
	}
	must(t, os.Chmod(root, 0o755))
	chownAll(t, root)
	// As in a session's sandbox, .git is read-only to commands.
	must(t, filepath.Walk(filepath.Join(wc, ".git"), func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		os.Lchown(p, 0, 0)
		return os.Chmod(p, fi.Mode().Perm()&^0o222)
	}))
	t.Cleanup(func() { exec.Command("chmod", "-R", "u+w", root).Run() })

	out := make([]oracleResult, len(cmds))
	const batch = 400
	for start := 0; start < len(cmds); start += batch {
		end := min(start+batch, len(cmds))
		os.RemoveAll(filepath.Join(o, "cmds"))
		os.RemoveAll(filepath.Join(o, "log"))
		must(t, os.MkdirAll(filepath.Join(o, "cmds"), 0o755))
		must(t, os.MkdirAll(filepath.Join(o, "log"), 0o755))
		for i := start; i < end; i++ {
			must(t, os.WriteFile(filepath.Join(o, "cmds", fmt.Sprintf("%06d", i)), []byte(cmds[i]), 0o644))
		}
		chownAll(t, o)
		var stderr bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		res, err := b.Run(ctx, sandbox.Command{Place: sandbox.Place{Workdir: root, Env: map[string]string{"ORACLE_DIR": o}}, Script: "bash " + filepath.Join(o, "driver"), Timeout: 20 * time.Minute, Stderr: &stderr})
		cancel()
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("oracle batch: %v (exit %d) %s", err, res.ExitCode, stderr.String())
		}
		for i := start; i < end; i++ {
			out[i] = readOracle(t, filepath.Join(o, "log", fmt.Sprintf("%06d", i)))
		}
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// chownAll hands the tree to the sandbox user when running as root.
func chownAll(t *testing.T, root string) {
	if os.Geteuid() != 0 {
		return
	}
	must(t, filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, sandbox.DefaultUID, sandbox.DefaultUID)
	}))
}

func readOracle(t *testing.T, base string) oracleResult {
	var r oracleResult
	rc, _ := os.ReadFile(base + ".rc")
	r.rc = strings.TrimSpace(string(rc))
	envs, _ := filepath.Glob(base + ".env.*")
	for _, l := range envs {
		data, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		env := map[string]string{}
		for _, kv := range strings.Split(string(data), "\x00") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				env[k] = v
			}
		}
		r.envs = append(r.envs, env)
	}
	logs, _ := filepath.Glob(base + ".argv.*")
	for _, l := range logs {
		data, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		var cur []string
		for _, f := range strings.Split(string(data), "\x00") {
			if f == "\x1e" {
				r.programs = append(r.programs, cur)
				cur = nil
				continue
			}
			cur = append(cur, f)
		}
	}
	if data, err := os.ReadFile(base + ".new"); err == nil {
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if l != "" {
				r.written = append(r.written, l)
			}
		}
	}
	if data, err := os.ReadFile(base + ".trace"); err == nil {
		r.ran = parseTrace(string(data))
	}
	return r
}

// parseTrace reads xtrace output: each record starts with one or more '+'
// and a space, and is shell-quoted; a record may span lines (a quoted
// newline), so lines are joined until the record parses.
func parseTrace(s string) [][]string {
	var out [][]string
	var buf string
	flush := func() bool {
		if buf == "" {
			return true
		}
		f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(buf), "")
		if err != nil {
			return false
		}
		for _, st := range f.Stmts {
			call, ok := st.Cmd.(*syntax.CallExpr)
			if !ok {
				continue
			}
			var rec []string
			for _, a := range call.Assigns {
				v := ""
				if a.Value != nil {
					v = resolve(a.Value).s
				}
				rec = append(rec, "\x00assign", a.Name.Value+"="+v)
			}
			for _, w := range call.Args {
				rec = append(rec, resolve(w).s)
			}
			out = append(out, rec)
		}
		buf = ""
		return true
	}
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "+") && (buf == "" || flush()) {
			buf = strings.TrimLeft(line, "+")
			buf = strings.TrimPrefix(buf, " ")
			continue
		}
		if buf != "" {
			buf += "\n" + line
		}
	}
	flush()
	return out
}

// codeBuiltins run code the analyzer never allows.
// (command, printf and read are judged as the analyzer judges them:
// command -v, printf without -v and read into inert variables are free.)
var codeBuiltins = set("eval", "source", ".", "exec", "trap", "builtin", "enable", "declare", "typeset", "local",
	"export", "readonly", "mapfile", "readarray", "hash", "alias", "shopt", "unset", "let")

// violations judges what bash did: every program and simple command must
// be allowed on its own, and nothing may be written.
func violations(a *Analyzer, r oracleResult) []string {
	var out []string
	judgeArgv := func(kind string, argv []string) {
		if len(argv) == 0 {
			return
		}
		if codeBuiltins[argv[0]] {
			out = append(out, kind+" ran the builtin "+strings.Join(argv, " "))
			return
		}
		c := &checker{a: a}
		args := make([]arg, len(argv))
		for i, s := range argv {
			args[i] = arg{s: s, static: true, prefix: s, alt: s, quoted: true}
		}
		// No option of an inert program runs or writes (that is what
		// inert means), so words that reached it through an expansion may
		// be any option; only its name must be free.
		if spec := specs[argv[0]]; spec != nil && spec.inert && c.match(args) != nil {
			return
		}
		// The same through a free wrapper (xargs grep, env LC_ALL=C ls).
		if w, ok := wrappers[argv[0]]; ok && c.match(args[:1]) != nil {
			if inner, code, ok := w(args); ok && code == "" && len(inner) > 0 {
				if spec := specs[inner[0].s]; spec != nil && spec.inert && c.match(inner) != nil {
					return
				}
			}
		}
		v := c.judge(args, 1)
		for _, p := range c.pieces {
			v = worst(v, verdict{p.Verdict, p.Rule, p.Reason})
		}
		if v.v != Allow {
			out = append(out, fmt.Sprintf("%s ran %q: %s %s (%s)", kind, argv, v.v, v.rule, v.reason))
		}
	}
	for k, rec := range r.ran {
		var argv, assigns []string
		for i := 0; i < len(rec); i++ {
			if rec[i] == "\x00assign" {
				assigns = append(assigns, rec[i+1])
				i++
				continue
			}
			argv = append(argv, rec[i])
		}
		// xtrace prints a command's prefix assignments as records of
		// their own, so an assignment is fine when its name is inert as a
		// shell variable or for some free command.
		for _, as := range assigns {
			name, value, _ := strings.Cut(as, "=")
			if !inertShellVar(name) && !inertEnv[name] && !goInertEnv[name] && as != "CGO_ENABLED=0" && !plainPager(name, lit(value)) &&
				(name != "IFS" || !readsNext(r.ran, k)) {
				out = append(out, "bash assigned "+name+"="+value)
			}
		}
		if len(argv) > 0 && argv[0] != "[[" && argv[0] != "((" {
			judgeArgv("bash", argv)
		}
	}
	for _, p := range r.programs {
		judgeArgv("a program", p)
	}
	// Every program ran in the sandbox's environment, give or take
	// variables known inert: nothing set GOFLAGS, PAGER, GIT_DIR, HOME, ...
	base := oracleBaseEnv()
	for _, env := range r.envs {
		for k, v := range env {
			switch {
			case strings.HasPrefix(k, "ORACLE_") || k == "PWD" || k == "OLDPWD" || k == "SHLVL" || k == "_" || k+"="+v == "GIT_OPTIONAL_LOCKS=0":
			case inertEnv[k] || goInertEnv[k] || k+"="+v == "CGO_ENABLED=0" || plainPager(k, lit(v)):
			case k == "PATH" || k == "BASH_XTRACEFD" || k == "PS4":
				if !strings.HasSuffix(v, "/oracle/bin") && k == "PATH" || k == "BASH_XTRACEFD" && v != "9" || k == "PS4" && v != "+ " {
					out = append(out, "a program ran with "+k+"="+v)
				}
			default:
				if bv, ok := base[k]; !ok || bv != v {
					out = append(out, "a program ran with "+k+"="+v)
				}
			}
		}
	}
	for _, w := range r.written {
		out = append(out, "wrote "+w)
	}
	return out
}

// readsNext: the record at k, or one of the few after it, runs read
// (xtrace prints a prefix assignment on its own, and the records of a
// pipeline's commands interleave): IFS=: read a b.
func readsNext(ran [][]string, k int) bool {
	for _, rec := range ran[k:min(k+4, len(ran))] {
		for _, w := range rec {
			if w == "read" {
				return true
			}
			if w != "\x00assign" && !strings.Contains(w, "=") {
				break
			}
		}
	}
	return false
}

// oracleBaseEnv is the environment the sandbox gives every command.
func oracleBaseEnv() map[string]string { return sandbox.Environment(nil) }

func oracleBwrap(t *testing.T) *sandbox.Bwrap {
	t.Helper()
	if testing.Short() {
		t.Skip("the bash oracle runs real bash in bubblewrap; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := sandbox.NewBwrap()
	if err == nil {
		err = b.Probe(ctx)
	}
	if err != nil {
		t.Skipf("the bash oracle needs bubblewrap (bwrap) able to create namespaces: %v", err)
	}
	t.Cleanup(b.Close) // no cgroup outlives the test
	return b
}

// TestOracleDetects makes sure the oracle sees what it must: commands that
// run a non-free program through each class of trick, or write a file.
func TestOracleDetects(t *testing.T) {
	b := oracleBwrap(t)
	a := New(DefaultFree)
	bad := []string{
		`sed 's/x/y/w o' main.go`,
		`awk 'BEGIN{system("id")}'`,
		`git diff -U --output=o`,
		`echo x 3<main.go >/dev/fd/3`,
		`sort -o o main.go`,
		`uniq main.go o`,
		`v='z[$(touch p)]'; : $((v))`,
		`find . -delete`,
		`echo x > /tmp/out`,
		`eval ls`,
		`o=-fprint; find . $o /tmp/x`,
		`PATH=/usr/bin; ls`,
		`x='a[$(touch p)]'; [[ $x -eq 0 ]]`,
		`bash -c 'find . -delete'`,
		`export GOFLAGS=-toolexec=x; go build`,
	}
	res := runOracle(t, b, bad)
	if last := res[len(res)-1]; !slices.ContainsFunc(last.envs, func(e map[string]string) bool { return e["GOFLAGS"] == "-toolexec=x" }) {
		t.Errorf("the shims did not record the environment go ran with: %v", last.envs)
	}
	for i, r := range res {
		if len(violations(a, r)) == 0 {
			t.Errorf("the oracle saw nothing wrong in %q (ran %q, programs %q, wrote %q)", bad[i], r.ran, r.programs, r.written)
		}
	}
	good := []string{`ls -la | grep x`, `for f in *.go; do wc -l "$f"; done`, `x=1`, `bash -c 'ls -R'`}
	res = runOracle(t, b, good)
	for i, r := range res {
		if v := violations(a, r); len(v) > 0 {
			t.Errorf("the oracle flags the harmless %q: %q", good[i], v)
		}
	}
	// bash -c's code runs, traced: ls -R is among what bash ran.
	if !slices.ContainsFunc(res[3].ran, func(rec []string) bool { return slices.Equal(rec, []string{"ls", "-R"}) }) {
		t.Errorf("the code of bash -c did not run under the oracle: ran %q", res[3].ran)
	}
}

// TestOracle runs every allowed command of the corpora, and of commands
// generated from them, through bash.
func TestOracle(t *testing.T) {
	b := oracleBwrap(t)
	a := New(DefaultFree)
	var seeds []string
	for _, file := range append(corpusFiles(), "testdata/everyday.tsv", "testdata/corpus-generalize.tsv") {
		for _, c := range readCorpus(t, file) {
			seeds = append(seeds, c.command)
		}
	}
	var cases []oracleCase
	for _, s := range seeds {
		cases = append(cases, oracleCase{s, "corpus"})
	}
	var free []string
	for _, s := range seeds {
		if a.Analyze(s).Verdict == Allow {
			free = append(free, s)
		}
	}
	rng := rand.New(rand.NewPCG(*oracleSeed, 9))
	for range *oracleN {
		// Half start from an allowed command: mutations of those are the
		// ones most likely to stay allowed, where a false allow would hide.
		s := seeds[rng.IntN(len(seeds))]
		if rng.IntN(2) == 0 {
			s = free[rng.IntN(len(free))]
		}
		for k := rng.IntN(3); k >= 0; k-- {
			s = mutate(rng, s)
		}
		cases = append(cases, oracleCase{s, "generated"})
	}
	var allowed []oracleCase
	count := map[string]int{}
	for _, c := range cases {
		count[c.origin]++
		if a.Analyze(c.command).Verdict == Allow {
			allowed = append(allowed, c)
			count[c.origin+" allowed"]++
		}
	}
	cmds := make([]string, len(allowed))
	for i, c := range allowed {
		cmds[i] = c.command
	}
	start := time.Now()
	res := runOracle(t, b, cmds)
	bad, timeouts := 0, 0
	for i, r := range res {
		if r.rc == "137" {
			timeouts++
		}
		if v := violations(a, r); len(v) > 0 {
			bad++
			t.Errorf("false allow (%s) %q: %s", allowed[i].origin, allowed[i].command, strings.Join(v, "; "))
		}
	}
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var summary []string
	for _, k := range keys {
		summary = append(summary, k+"="+strconv.Itoa(count[k]))
	}
	t.Logf("bash oracle: %s; ran %d allowed commands in bash in %s (%d hit the time limit); %d false allows",
		strings.Join(summary, " "), len(cmds), time.Since(start).Round(time.Second), timeouts, bad)
}

// corpusFiles are every corpus: ours and the shared one when present.
func corpusFiles() []string {
	files := []string{"testdata/corpus-sample.tsv", "testdata/corpus-hard.tsv"}
	if _, err := os.Stat(sharedCorpus); err == nil {
		files = append(files, sharedCorpus)
	}
	return files
}

const sharedCorpus = "../../../shared/policy/command-corpus-sample.tsv"

// Pieces the mutator inserts: expansions, quotes, braces, assignments,
// redirections, options of the free tools (safe and not), separators.
var (
	mutExpansions = []string{`$x`, `"$x"`, `${x:-a}`, `${x:--delete}`, `$(echo -a)`, `$(echo --pre=./p)`, `$((1+2))`, `$((v))`,
		`${!v}`, `${v@P}`, `${a[i]}`, `~`, `~root`, `$'\x2d-output=o'`, `$1`, `"$@"`, `${#x}`, `$(id)`, "`id`", `${x:1}`,
		`${x:$y}`, `"${x:=y}"`, `${PATH:=/tmp}`}
	mutWords = []string{`-U`, `-C`, `-M`, `--unified`, `-u`, `--compress-program=id`, `std`, `all`, `unicode/utf8`, `-mod=mod`,
		`'1w o'`, `'s/a/b/w o'`, `'1e id'`, `'s/a/id/e'`, `'{system("id")}'`, `'{print > "o"}'`, `'{print | "id"}'`,
		`'BEGIN{"id" | getline}'`, `$'\x{2d}delete'`, `$'\x{2d}-output=o'`, `/dev/fd/3`, `--list`, `-d`, `new`, `-f`, `-i`,
		`--get`, `x.y z`, `-uno`, `-T`, `/tmp`, `sub`, `..`, `-v`, `'a[$(id)]'`, `-exec`, `-delete`, `-exec`, `id`, `;`, `--pre=./p`, `-z`, `--output=o`, `-toolexec=x`, `-o`, `/tmp/o`, `-C`,
		`--ext-diff`, `-fprint`, `-c`, `core.pager=id`, `--show-signature`, `-ldflags=-extld=id`, `-n`, `5`, `-la`, `-r`, `.`,
		`./...`, `--stat`, `-count=1`, `-v`, `*`, `*.go`, `./*`, `-print`, `-name`, `x`, `--`, `-coverprofile=/tmp/c`,
		`-coverprofile=c.out`, `--no-pager`, `-p`}
	mutBraces = []string{`{a,b}`, `{,id}`, `{,-delete}`, `{1..3}`, `{-,}-pre=./p`, `{ls,id}`, `{x..z}`, `{,}`}
	mutPrefix = []string{"# c \\\n", `3<main.go `, `exec 3<main.go; `, `BASH_CMDS[ls]=/usr/bin/id; `, `d=/dev/tcp/127.0.0.1/9; `,
		`cd src && `, `cd .. && `, `cd / && `, `o=--output=o; `, `f=o; `, `a=(o); `, `env LC_ALL=C `, `env GOFLAGS=-x `, `xargs `,
		`x=1 `, `GOFLAGS=-toolexec=id `, `LC_ALL=C `, `x=1; `, `export x=1; `, `declare x=1; `, `PATH=/tmp; `,
		`read v <<< a; `, `GIT_DIR=/tmp `, `PAGER=id `, `CGO_ENABLED=0 `, `GOOS=linux `, `BASH_ENV=/tmp/e `, `f() { id; }; `,
		`trap id EXIT; `, `v='a[$(id)]'; `, `for i in a; do `, `set -x; `, `cd /; `, `hash -p /usr/bin/id ls; `, `: `}
	mutRedirs = []string{` >/dev/fd/3`, ` 3<main.go`, ` >/dev/stdout`, ` 1<main.go`, ` >/proc/self/fd/3`, ` < $d`,
		" <<EO\\\nF\nx\nEOF\n", ` > $f`, ` >/dev/stderr 2<main.go`, ` 2>/dev/fd/1`,
		` >/dev/null`, ` 2>&1`, ` > out`, ` < f`, ` <<< x`, " <<E\nx\nE\n", ` {fd}>/dev/null`, ` > /de?/null`,
		` >> /tmp/o`, ` 2>/dev/null`, ` >&2`, ` <&-`}
	mutSeps  = []string{`; ls`, ` && pwd`, ` | grep x`, ` || echo no`, ` & ls`, ` | bash`, ` | sh -c cat`, `; id`, ` |& wc -l`}
	mutWraps = [][2]string{{"echo \"$\\\n(", ")\""}, {"# x \\\n", ""}, {"cat <<EOF\n$\\\n(", ")\nEOF\n"}, {`xargs `, ``},
		{`env `, ``}, {`cd src && `, `; cd ..`}, {`[ -f x ] && `, ``},
		{`$(`, `)`}, {`(`, `)`}, {`{ `, `; }`}, {`bash -c '`, `'`}, {`sh -c "`, `"`}, {`eval '`, `'`},
		{`if `, `; then ls; fi`}, {`echo $(`, `)`}, {`! `, ``}, {`time `, ``}, {`x=$(`, `)`}, {`cat <(`, `)`},
		{"echo $(cat <<E\n", "\nE\n)"}, {`[[ -n $(`, `) ]]`}}
)

// mutate edits a command at positions its parse gives: inside a word,
// between words, around a statement.
func mutate(rng *rand.Rand, src string) string {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	var words []*syntax.Word
	if err == nil {
		syntax.Walk(f, func(n syntax.Node) bool {
			if w, ok := n.(*syntax.Word); ok && w.Pos().IsValid() && w.End().IsValid() {
				words = append(words, w)
			}
			return true
		})
	}
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	if len(words) == 0 {
		return pick(mutPrefix) + src
	}
	w := words[rng.IntN(len(words))]
	start, end := int(w.Pos().Offset()), int(w.End().Offset())
	if start > len(src) || end > len(src) || start > end {
		return src
	}
	word := src[start:end]
	switch rng.IntN(11) {
	case 0, 1: // a word inserted after this one
		return src[:end] + " " + pick(mutWords) + src[end:]
	case 2: // an expansion inserted as a word or inside this one
		if rng.IntN(2) == 0 {
			return src[:end] + " " + pick(mutExpansions) + src[end:]
		}
		return src[:end] + pick(mutExpansions) + src[end:]
	case 3: // quotes around the word, or a backslash inside it
		switch rng.IntN(4) {
		case 0:
			return src[:start] + `"` + word + `"` + src[end:]
		case 1:
			if !strings.Contains(word, "'") {
				return src[:start] + `'` + word + `'` + src[end:]
			}
		case 2:
			if len(word) > 1 {
				k := 1 + rng.IntN(len(word)-1)
				return src[:start+k] + `\` + src[start+k:]
			}
		}
		return src[:start] + `$'` + strings.ReplaceAll(word, `'`, `\'`) + `'` + src[end:]
	case 4: // braces
		if rng.IntN(2) == 0 {
			return src[:start] + pick(mutBraces) + src[start:]
		}
		return src[:end] + " " + pick(mutBraces) + src[end:]
	case 5: // the word replaced
		return src[:start] + pick(append(mutWords, mutExpansions...)) + src[end:]
	case 6, 7:
		p := pick(mutPrefix)
		if strings.HasPrefix(p, "for ") {
			return p + src + "; done"
		}
		return p + src
	case 8:
		return src + pick(mutRedirs)
	case 9:
		return src + pick(mutSeps)
	}
	wr := mutWraps[rng.IntN(len(mutWraps))]
	if strings.Contains(wr[0], "'") && strings.Contains(src, "'") || strings.Contains(wr[0], `"`) && strings.Contains(src, `"`) {
		return src
	}
	return wr[0] + src + wr[1]
}
