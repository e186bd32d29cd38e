package shellcheck

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// sensitiveVars change what runs or how: setting them is "ask".
var sensitiveVars = set("PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "ZDOTDIR",
	"PROMPT_COMMAND", "PS0", "PS1", "PS4", "IFS", "CDPATH", "GLOBIGNORE", "PAGER", "GIT_PAGER", "MANPAGER", "SYSTEMD_PAGER", "LESSOPEN",
	"LESSCLOSE", "EDITOR", "VISUAL", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "BROWSER", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXTERNAL_DIFF",
	"GIT_ASKPASS", "SSH_ASKPASS", "GIT_EXEC_PATH", "GIT_DIR", "GIT_WORK_TREE", "GIT_CONFIG", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM",
	"GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_TEMPLATE_DIR", "GIT_PROXY_COMMAND", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME",
	"NODE_OPTIONS", "NODE_PATH", "PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB", "GOFLAGS", "GOTOOLCHAIN", "CC", "CXX",
	"MAKEFLAGS", "TERMINFO", "HOSTALIASES", "TMPDIR", "HOME", "XDG_CONFIG_HOME", "SUDO_ASKPASS", "DYLD_INSERT_LIBRARIES")

func sensitiveVar(name string) (verdict, bool) {
	switch {
	case name == "PATH":
		return ask("path-hijack", "PATH changes which binary runs"), true
	case strings.HasPrefix(name, "BASH_FUNC_"):
		return ask("exported-function", name+" imports a shell function"), true
	case strings.HasPrefix(name, "LD_") || strings.HasPrefix(name, "DYLD_") || strings.HasPrefix(name, "GIT_CONFIG_KEY_") ||
		strings.HasPrefix(name, "GIT_CONFIG_VALUE_") || sensitiveVars[name]:
		return ask("code-carrying-variable", name+" can make a program run other code"), true
	}
	return verdict{}, false
}

// assigns judges variable assignments (prefixes or declarations).
func (c *checker) assigns(as []*syntax.Assign, node syntax.Node) {
	c.gitConfigEnv(as, printNode(node))
	for _, a := range as {
		if a.Name == nil {
			continue
		}
		if v, bad := sensitiveVar(a.Name.Value); bad && !plainPager(a.Name.Value, a.Value) && !readIFS(a.Name.Value, node) {
			c.add(printNode(node), v.v, v.rule, v.reason)
		}
		if v, bad := c.commandTable(a); bad {
			c.add(printNode(node), v.v, v.rule, v.reason)
		}
		if a.Value != nil {
			c.codeValue(a.Name.Value, resolve(a.Value), printNode(node))
		}
	}
}

// readIFS: IFS= read -r line: IFS only splits what read reads.
func readIFS(name string, node syntax.Node) bool {
	call, ok := node.(*syntax.CallExpr)
	return ok && name == "IFS" && len(call.Args) > 0 && call.Args[0].Lit() == "read"
}

// plainPager: PAGER=cat and the like, which run nothing else.
func plainPager(name string, value *syntax.Word) bool {
	if name != "PAGER" && name != "GIT_PAGER" && name != "MANPAGER" {
		return false
	}
	v := literalOf(value)
	return value == nil || len(value.Parts) == 0 || v == "cat" || v == "/bin/cat" || v == "/usr/bin/cat"
}

// gitConfigEnv: GIT_CONFIG_KEY_n/GIT_CONFIG_VALUE_n pairs and
// GIT_CONFIG_PARAMETERS set git configuration as -c does; what they make
// git run is judged as git -c's is.
func (c *checker) gitConfigEnv(as []*syntax.Assign, where string) {
	vars := map[string][]string{}
	for name, vals := range c.vars {
		vars[name] = vals
	}
	for _, a := range as {
		if a.Name != nil && a.Value != nil {
			vars[a.Name.Value] = append(vars[a.Name.Value], literalOf(a.Value))
		}
	}
	pairs := map[string]string{}
	for name, vals := range vars {
		for _, v := range vals {
			switch {
			case strings.HasPrefix(name, "GIT_CONFIG_KEY_"):
				for _, val := range vars["GIT_CONFIG_VALUE_"+strings.TrimPrefix(name, "GIT_CONFIG_KEY_")] {
					pairs[v+"="+val] = v
				}
			case name == "GIT_CONFIG_PARAMETERS":
				// 'key'='value' 'key2'='value2'
				for _, pair := range strings.Split(v, "' '") {
					pair = strings.Trim(pair, "' ")
					if k, val, ok := strings.Cut(pair, "'='"); ok {
						pairs[k+"="+val] = k
					}
				}
			}
		}
	}
	for kv := range pairs {
		if v, ok := gitConfigCode(kv); ok && v.v == Refuse {
			c.add(where, v.v, v.rule, v.reason)
		}
	}
}

// commandTable: bash's own tables of what a name runs. BASH_CMDS[ls]=P
// makes ls run the program P; BASH_ALIASES[x]=CODE makes x that code.
func (c *checker) commandTable(a *syntax.Assign) (verdict, bool) {
	name := a.Name.Value
	if name != "BASH_CMDS" && name != "BASH_ALIASES" {
		return verdict{}, false
	}
	var values []*syntax.Word
	if a.Value != nil {
		values = append(values, a.Value)
	}
	if a.Array != nil {
		for _, e := range a.Array.Elems {
			values = append(values, e.Value)
		}
	}
	for _, w := range values {
		v := resolve(w)
		code := v.s
		if name == "BASH_CMDS" {
			if r, ok := refusedProgram(canonical(v.s), nil); ok {
				return refuse(r.rule, "BASH_CMDS makes a name run "+v.s+": "+r.reason), true
			}
			continue
		}
		if r := c.quietSource(code, 0); r.v == Refuse {
			return refuse(r.rule, "BASH_ALIASES makes a name run "+code+": "+r.reason), true
		}
	}
	return ask("command-table", name+" changes what a command name runs"), true
}

// codeVars hold code that bash or a program runs: their values are judged
// as code, so a refused program there is refused.
var codeVars = set("PROMPT_COMMAND", "PS0", "PS1", "PS2", "PS3", "PS4", "GIT_SSH_COMMAND", "GIT_PAGER", "PAGER", "GIT_EDITOR",
	"EDITOR", "VISUAL", "GIT_EXTERNAL_DIFF", "GIT_PROXY_COMMAND", "LESSOPEN", "LESSCLOSE", "MANPAGER", "SYSTEMD_PAGER",
	"GIT_SEQUENCE_EDITOR", "BROWSER", "GIT_SSH", "GIT_ASKPASS", "SSH_ASKPASS", "SUDO_ASKPASS", "FCEDIT", "GOCACHEPROG",
	"GOTOOLCHAIN", "CC", "CXX", "GOGCCFLAGS")

// codeValue judges the value of a variable that holds code.
func (c *checker) codeValue(name string, v arg, where string) {
	if !codeVars[name] {
		return
	}
	code := v.s
	if !v.static {
		if len(v.def) == 0 {
			return
		}
		code = strings.Join(v.def, "\n")
	}
	if name == "LESSOPEN" || name == "LESSCLOSE" {
		code = strings.TrimLeft(code, "|-") // less's input pipe forms: |cmd, ||cmd, |-cmd
	}
	if r := c.quietSource(code, 0); r.v == Refuse {
		c.add(where, Refuse, r.rule, name+" holds code that runs: "+r.reason)
	}
}

// call judges a simple command.
func (c *checker) call(x *syntax.CallExpr, depth int) {
	c.entry = nil
	c.current = x
	v := c.judge(c.argv(x), depth)
	src := ""
	if v.v == Allow && v.rule == "free-command" && c.entry != nil {
		src = "commands.allow " + strconv.Quote(strings.Join(c.entry, " "))
	}
	c.addFrom(printNode(x), v.v, v.rule, v.reason, src)
}

// writeOps are redirections that create or truncate their target.
var writeOps = map[syntax.RedirOperator]bool{syntax.RdrOut: true, syntax.AppOut: true, syntax.RdrClob: true, syntax.AppClob: true,
	syntax.RdrAll: true, syntax.RdrAllClob: true, syntax.AppAll: true, syntax.AppAllClob: true, syntax.RdrInOut: true}

// redirect judges where a redirection writes, and what it reads when
// that may be a network connection.
func (c *checker) redirect(r *syntax.Redirect) {
	if r.Word == nil {
		return
	}
	op := r.Op
	if op == syntax.DplOut || op == syntax.DplIn {
		if t := words(r.Word); len(t) == 1 && t[0].static && (t[0].s == "-" || strings.Trim(strings.TrimSuffix(t[0].s, "-"), "0123456789") == "") {
			return // fd duplication, not a file
		}
		if op == syntax.DplOut {
			op = syntax.RdrAll
		}
	}
	src := printNode(r)
	if op == syntax.RdrIn || op == syntax.DplIn {
		for _, t := range words(r.Word) {
			if v, bad := c.networkRead(t); bad {
				c.add(src, v.v, v.rule, v.reason)
				return
			}
		}
		return
	}
	if !writeOps[op] {
		return
	}
	if len(r.Word.Parts) == 1 {
		if _, ok := r.Word.Parts[0].(*syntax.ProcSubst); ok {
			return // a pipe to a process, whose body is judged on its own
		}
	}
	for _, t := range words(r.Word) {
		if v, bad := c.writeTarget("the redirection", t); bad {
			c.add(src, v.v, v.rule, v.reason)
			continue
		}
		s := t.s
		if !t.static {
			s = t.prefix
		}
		if n, ok := descriptor(s); ok && (t.static || strings.HasSuffix(s, "/") || n < 0) {
			if !t.static {
				n = -1
			}
			v := c.throughDescriptor("the redirection", n, t.s)
			c.add(src, v.v, v.rule, v.reason)
			continue
		}
		dev, harmless := devicePath(s)
		switch {
		case dev && harmless && t.static:
			c.add(src, Allow, "harmless-sink", "writes to "+clean(s))
		case !t.static:
			c.add(src, Ask, "dynamic-redirect", "writes to a file whose name comes from an expansion")
		default:
			c.add(src, Ask, "file-write", "the redirection writes "+t.s)
		}
	}
}

// networkRead: reading /dev/tcp/HOST/PORT or /dev/udp/... opens a
// connection; a path from an expansion may be one.
func (c *checker) networkRead(t arg) (verdict, bool) {
	for _, cand := range c.candidates(t) {
		p := cand.s
		if !cand.static {
			p = cand.prefix
		}
		if cl := clean(p); strings.HasPrefix(cl, "/dev/tcp/") || strings.HasPrefix(cl, "/dev/udp/") {
			return ask("network-device", "reading "+cand.s+" opens a network connection"), true
		}
	}
	if !t.static && (t.prefix == "" || strings.HasPrefix("/dev/", clean(t.prefix)) || strings.HasPrefix(clean(t.prefix), "/dev/")) {
		return ask("dynamic-redirect", "reads a path from an expansion, which may be /dev/tcp/HOST/PORT, a network connection"), true
	}
	return verdict{}, false
}

// pipe: feeding a pipe into an interpreter runs whatever flows in.
func (c *checker) pipe(b *syntax.BinaryCmd) {
	call, ok := b.Y.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) == 0 {
		return
	}
	args := c.argv(call)
	if len(args) > 0 && args[0].static && canonical(args[0].s) == "xargs" {
		if text, ok := literalOutput(b.X); ok {
			if v := c.xargsInput(args, text, 0); v.v == Refuse {
				c.add(printNode(b), Refuse, v.rule, "xargs reads "+strings.TrimSpace(text)+": "+v.reason)
			}
		}
	}
	for range 8 {
		if len(args) == 0 || !args[0].static {
			return
		}
		n := canonical(args[0].s)
		if w, ok := wrappers[n]; ok && n != "xargs" {
			inner, _, ok := w(args)
			if !ok {
				return
			}
			args = inner
			continue
		}
		if isInterpreter(n) && !hasCode(n, args) {
			c.add(printNode(b), Ask, "pipe-to-interpreter", "the pipe feeds code into "+n)
			if shells[n] {
				c.pipedCode(n, b.X)
			}
		}
		return
	}
}

// hasCode reports an interpreter given its code on the command line
// (sh -c, python -c, ...), which then does not run what is piped in.
func hasCode(n string, args []arg) bool {
	for _, a := range args[1:] {
		switch a.s {
		case "-c", "-e", "-E", "-r", "--eval", "--command":
			return !shells[n] || a.s == "-c"
		}
	}
	return false
}

// stmtFeeds judges here-documents and here-strings fed to a shell: their
// text is a script, parsed and judged like any other code.
func (c *checker) stmtFeeds(s *syntax.Stmt, depth int) {
	call, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) == 0 {
		return
	}
	args := c.argv(call)
	if len(args) == 0 || !args[0].static {
		return
	}
	n := canonical(args[0].s)
	if n == "xargs" {
		// xargs reading a literal here-string or here-document: its words
		// are the inner command's arguments.
		if text, ok := literalOutput(&syntax.Stmt{Cmd: &syntax.CallExpr{Args: []*syntax.Word{lit("cat")}}, Redirs: s.Redirs}); ok {
			if v := c.xargsInput(args, text, depth); v.v == Refuse {
				c.add(printNode(s), Refuse, v.rule, "xargs reads "+strings.TrimSpace(text)+": "+v.reason)
			}
		}
		return
	}
	if !isInterpreter(n) || hasCode(n, args) {
		return
	}
	// bash <(echo CODE), . <(printf CODE): a script whose text is the
	// literal output of a process substitution.
	if shells[n] || n == "source" || n == "." {
		for _, w := range call.Args[1:] {
			if len(w.Parts) != 1 {
				continue
			}
			if ps, ok := w.Parts[0].(*syntax.ProcSubst); ok && ps.Op == syntax.CmdIn && len(ps.Stmts) == 1 {
				if code, ok := literalOutput(ps.Stmts[0]); ok {
					c.shellSource(n, code, depth+1)
				}
			}
		}
	}
	for _, r := range s.Redirs {
		var body *syntax.Word
		switch r.Op {
		case syntax.WordHdoc:
			body = r.Word
		case syntax.Hdoc, syntax.DashHdoc:
			body = r.Hdoc
		}
		if body == nil {
			continue
		}
		if !shells[n] && n != "source" && n != "." {
			c.add(printNode(s), Ask, "interpreter", "a here-document feeds code into "+n)
			continue
		}
		text := hdocText(body)
		if r.Op != syntax.WordHdoc && !quotedDelim(r.Word) {
			text = hdocUnescape(text)
		}
		if c.fed == nil {
			c.fed = map[*syntax.CallExpr]bool{}
		}
		c.fed[call] = true
		c.shellSource(n, text, depth+1)
	}
}

// hdocText is the text a here-document or here-string hands the program.
func hdocText(w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			b.WriteString(x.Value)
		case *syntax.SglQuoted:
			if x.Dollar {
				b.WriteString(ansiC(x.Value))
			} else {
				b.WriteString(x.Value)
			}
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					b.WriteString(unescapeDouble(l.Value))
				} else if cs, ok := q.(*syntax.CmdSubst); ok && len(substDefs(cs)) > 0 && len(cs.Stmts) == 1 {
					// bash <<< "$(echo c3VkbyBpZA== | base64 -d)": what it prints.
					b.WriteString(substDefs(cs)[0])
				} else {
					b.WriteString("$UNKNOWN")
				}
			}
		default:
			b.WriteString("$UNKNOWN")
		}
	}
	return b.String()
}

// pipedCode judges what a literal echo or printf pipes into a shell as the
// code it is: echo 'sudo id' | bash runs sudo.
func (c *checker) pipedCode(shell string, left *syntax.Stmt) {
	if code, ok := literalOutput(left); ok {
		c.shellSource(shell, code, 1)
	}
}

// literalOutput is what a statement prints when that is literal: echo and
// printf of literal words, cat of a literal here-string or here-document,
// and what the decoders and filters an agent may chain (base64 -d,
// xxd -r -p, rev, tr, cat) make of literal input.
func literalOutput(left *syntax.Stmt) (string, bool) {
	if b, ok := left.Cmd.(*syntax.BinaryCmd); ok && b.Op == syntax.Pipe {
		in, ok := literalOutput(b.X)
		if !ok {
			return "", false
		}
		call, ok := b.Y.Cmd.(*syntax.CallExpr)
		if !ok || len(b.Y.Redirs) > 0 {
			return "", false
		}
		return filterText(argv(call.Args), in)
	}
	call, ok := left.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) < 1 {
		return "", false
	}
	args := argv(call.Args)
	if len(args) == 0 || !args[0].static {
		return "", false
	}
	for _, r := range left.Redirs {
		var in string
		switch r.Op {
		case syntax.WordHdoc:
			in = hdocText(r.Word) + "\n"
		case syntax.Hdoc, syntax.DashHdoc:
			in = hdocText(r.Hdoc)
			if !quotedDelim(r.Word) {
				in = hdocUnescape(in)
			}
		default:
			continue
		}
		return filterText(args, in)
	}
	if args[0].s != "echo" && args[0].s != "printf" || len(args) < 2 {
		return "", false
	}
	var text []string
	for _, a := range args[1:] {
		if !a.static {
			return "", false
		}
		if args[0].s == "echo" && (a.s == "-e" || a.s == "-n" || a.s == "-E") {
			continue
		}
		text = append(text, a.s)
	}
	if args[0].s == "printf" {
		return printfText(text), true
	}
	code := strings.Join(text, " ")
	if strings.Contains(code, `\`) {
		code += "\n" + ansiC(code) // echo -e, or a shell whose echo decodes
	}
	return code, true
}

// printfText is what printf prints: its format's escapes decoded, %s and
// %b given the arguments (%b decoding theirs), the format reused while
// arguments remain.
func printfText(words []string) string {
	if len(words) == 0 {
		return ""
	}
	format, rest := words[0], words[1:]
	var b strings.Builder
	for round := 0; round < 64; round++ {
		used := false
		for i := 0; i < len(format); i++ {
			if format[i] != '%' || i+1 >= len(format) {
				j := i
				for j < len(format) && format[j] != '%' {
					j++
				}
				b.WriteString(ansiC(format[i:j]))
				i = j - 1
				continue
			}
			i++
			for i < len(format) && strings.IndexByte("-+ #0123456789.", format[i]) >= 0 {
				i++
			}
			if i >= len(format) {
				break
			}
			switch format[i] {
			case '%':
				b.WriteByte('%')
				continue
			}
			arg := ""
			if len(rest) > 0 {
				arg, rest, used = rest[0], rest[1:], true
			}
			if format[i] == 'b' {
				arg = ansiC(strings.ReplaceAll(arg, `\0`, `\`))
			}
			b.WriteString(arg)
		}
		if !used || len(rest) == 0 {
			break
		}
	}
	return b.String()
}

// filterText is what a filter prints given literal input, when the
// analyzer can compute it.
func filterText(args []arg, in string) (string, bool) {
	if len(args) == 0 || !args[0].static {
		return "", false
	}
	var opts, ops []string
	for _, a := range args[1:] {
		if !a.static {
			return "", false
		}
		if strings.HasPrefix(a.s, "-") && len(a.s) > 1 {
			opts = append(opts, a.s)
		} else {
			ops = append(ops, a.s)
		}
	}
	has := func(names ...string) bool {
		for _, o := range opts {
			for _, n := range names {
				if o == n {
					return true
				}
			}
		}
		return false
	}
	switch canonical(args[0].s) {
	case "cat":
		if len(ops) == 0 {
			return in, true
		}
	case "base64", "base32":
		if has("-d", "--decode", "-di", "-id") && len(ops) == 0 {
			clean := strings.Join(strings.Fields(in), "")
			var out []byte
			var err error
			if canonical(args[0].s) == "base64" {
				out, err = base64.StdEncoding.DecodeString(clean)
				if err != nil {
					out, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(clean, "="))
				}
			} else {
				out, err = base32.StdEncoding.DecodeString(clean)
			}
			if err == nil {
				return string(out), true
			}
		}
	case "xxd":
		if (has("-r") && has("-p") || has("-rp", "-pr", "-r -p")) && len(ops) == 0 {
			out, err := hex.DecodeString(strings.Join(strings.Fields(in), ""))
			if err == nil {
				return string(out), true
			}
		}
	case "rev":
		if len(opts) == 0 && len(ops) == 0 {
			lines := strings.Split(in, "\n")
			for i, l := range lines {
				r := []rune(l)
				slices.Reverse(r)
				lines[i] = string(r)
			}
			return strings.Join(lines, "\n"), true
		}
	case "tr":
		if len(opts) == 0 && len(ops) == 2 {
			from, to := trSet(ops[0]), trSet(ops[1])
			if len(from) > 0 && len(to) > 0 {
				m := map[rune]rune{}
				for i, r := range from {
					m[r] = to[min(i, len(to)-1)]
				}
				return strings.Map(func(r rune) rune {
					if t, ok := m[r]; ok {
						return t
					}
					return r
				}, in), true
			}
		}
	}
	return "", false
}

// trSet expands a tr set's ranges (a-z); classes and escapes are not
// computed (nil).
func trSet(s string) []rune {
	if strings.ContainsAny(s, `[\`) {
		return nil
	}
	r := []rune(s)
	var out []rune
	for i := 0; i < len(r); i++ {
		if i+2 < len(r) && r[i+1] == '-' && r[i] <= r[i+2] {
			for c := r[i]; c <= r[i+2]; c++ {
				out = append(out, c)
			}
			i += 2
			continue
		}
		out = append(out, r[i])
	}
	return out
}

// lit is a literal word.
func lit(s string) *syntax.Word {
	return &syntax.Word{Parts: []syntax.WordPart{&syntax.Lit{Value: s}}}
}

// quotedDelim: a here-document delimiter with any quoting (its body is
// then taken as it is written).
func quotedDelim(w *syntax.Word) bool {
	if w == nil {
		return false
	}
	for _, p := range w.Parts {
		l, ok := p.(*syntax.Lit)
		if !ok || strings.Contains(l.Value, `\`) {
			return true
		}
	}
	return false
}

// hdocUnescape: in an unquoted here-document, a backslash escapes $, `, \
// and the newline; the program gets \$(cmd) as $(cmd).
func hdocUnescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\\\n", s[i+1]) >= 0 {
			i++
			if s[i] != '\n' {
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// xargsInput judges what xargs runs given a literal input: the words
// appended to its command, or, with -I R (-i: {}), each input line put in
// place of R.
func (c *checker) xargsInput(args []arg, text string, depth int) verdict {
	inner, _, _ := xargsInner(args)
	v := c.quiet(append(append([]arg(nil), inner...), static(strings.Fields(text))...), depth)
	repl := ""
	for i, a := range args[1:] {
		switch {
		case a.s == "-I" && i+2 < len(args):
			repl = args[i+2].s
		case strings.HasPrefix(a.s, "-I") && len(a.s) > 2:
			repl = a.s[2:]
		case a.s == "-i" || a.s == "--replace":
			repl = "{}"
		case strings.HasPrefix(a.s, "-i") && len(a.s) > 2:
			repl = a.s[2:]
		case strings.HasPrefix(a.s, "--replace="):
			repl = strings.TrimPrefix(a.s, "--replace=")
		}
	}
	if repl == "" {
		return v
	}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		sub := make([]arg, len(inner))
		for i, a := range inner {
			sub[i] = static([]string{strings.ReplaceAll(a.s, repl, strings.TrimSpace(line))})[0]
		}
		v = worst(v, c.quiet(sub, depth))
	}
	return v
}
