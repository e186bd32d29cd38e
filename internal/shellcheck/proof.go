package shellcheck

import (
	"regexp"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// prove is the burden of proof: the judges of commands decide what is free
// or refused; prove adds an "ask" piece for every construct whose effect
// the analyzer does not fully understand, whatever the rest says. It
// accepts only a closed list of shapes: plain expansions and substitutions
// (whose bodies are judged on their own), literal arithmetic, tests that
// evaluate nothing, assignments to variables known to be inert, and no
// construct that mvdan.cc/sh and bash read differently.
func (c *checker) prove(f *syntax.File, src string, depth int) {
	syntax.Walk(f, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.ParamExp:
			c.paramExp(x)
		case *syntax.ArithmExp:
			c.arith(x.X, printNode(x))
		case *syntax.ArithmCmd:
			c.arith(x.X, printNode(x))
		case *syntax.CStyleLoop:
			for _, e := range []syntax.ArithmExpr{x.Init, x.Cond, x.Post} {
				c.arith(e, "for (( ))")
			}
		case *syntax.TestClause:
			c.testExpr(x.X, printNode(x))
		case *syntax.DeclClause:
			c.add(printNode(x), Ask, "declaration", x.Variant.Value+" sets variables, attributes or namerefs the analyzer does not track")
		case *syntax.LetClause:
			c.add(printNode(x), Ask, "arithmetic-assignment", "let evaluates arithmetic that can assign variables and read them as code")
		case *syntax.CoprocClause:
			c.add(printNode(x), Ask, "coprocess", "a coprocess sets variables and runs in the background")
		case *syntax.TestDecl:
			c.add(printNode(x), Ask, "unknown-construct", "@test is not bash")
		case *syntax.ForClause:
			if x.Select {
				c.add("select", Ask, "unknown-construct", "select reads the terminal and assigns a variable")
			}
			if it, ok := x.Loop.(*syntax.WordIter); ok && !inertShellVar(it.Name.Value) {
				c.add("for "+it.Name.Value+" in ...", Ask, "assignment", "for assigns "+it.Name.Value+", which is not known to be inert")
			}
		case *syntax.CallExpr:
			c.callAssigns(x)
		case *syntax.Redirect:
			c.heredocExtent(x, src, depth)
			if x.N != nil && strings.HasPrefix(x.N.Value, "{") {
				c.add(printNode(x), Ask, "assignment", "{var}> assigns a file descriptor to a variable")
			}
			if (x.Op == syntax.DplIn || x.Op == syntax.DplOut) && x.Word != nil && !dupTarget(x.Word, x.Op) {
				c.add(printNode(x), Ask, "parser-differential",
					"a duplication whose target is not a descriptor number or -: bash reads <&- apart from what follows (<&-cmd runs cmd)")
				// Judge it also as bash reads it: "<&-" then the rest as words.
				if off := int(x.Word.Pos().Offset()); off < len(src) && src[off] == '-' {
					c.source(src[:off+1]+" "+src[off+1:], depth+1)
				}
			}
		case *syntax.DblQuoted:
			if x.Dollar {
				c.add(printNode(x), Ask, "parser-differential", `$"..." is translated through the locale at run time`)
			}
		case *syntax.ExtGlob:
			c.add(printNode(x), Ask, "parser-differential", "extended globs parse only when bash's extglob is set")
		case *syntax.FuncDecl:
			if x.Name != nil && (c.freeName(x.Name.Value) || shellBuiltin[x.Name.Value]) {
				c.add("function "+x.Name.Value, Ask, "function-shadows-command", "the function "+x.Name.Value+
					" replaces the command of that name: what runs under it is the function, whatever the free list says")
			}
		case *syntax.CmdSubst:
			c.differentials(x)
		case *syntax.ProcSubst:
			c.differentials(x)
		}
		return true
	})
}

// differentials are the constructs mvdan.cc/sh and bash are known to read
// differently; their presence is "ask".
var differentials = []struct {
	name   string
	match  func(syntax.Node) bool
	reason string
}{
	{"heredoc-in-substitution", func(n syntax.Node) bool {
		found := false
		syntax.Walk(n, func(m syntax.Node) bool {
			if r, ok := m.(*syntax.Redirect); ok && (r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc) {
				found = true
			}
			return !found
		})
		return found
	}, "a here-document inside $( ), <( ) or backquotes, which bash and the parser read differently"},
	{"escapes-in-backquotes", func(n syntax.Node) bool {
		cs, ok := n.(*syntax.CmdSubst)
		if !ok || !cs.Backquotes {
			return false
		}
		nested := false
		syntax.Walk(cs, func(m syntax.Node) bool {
			if m == n {
				return true
			}
			switch y := m.(type) {
			case *syntax.CmdSubst:
				nested = nested || y.Backquotes
			case *syntax.Lit:
				nested = nested || strings.Contains(y.Value, `\`)
			case *syntax.SglQuoted:
				nested = nested || strings.Contains(y.Value, `\`)
			}
			return !nested
		})
		return nested
	}, "backslashes or nested backquotes inside backquotes, whose unescaping differs between parsers"},
	{"subshell-in-substitution", func(n syntax.Node) bool {
		cs, ok := n.(*syntax.CmdSubst)
		if !ok || cs.Backquotes || len(cs.Stmts) == 0 {
			return false
		}
		sub, ok := cs.Stmts[0].Cmd.(*syntax.Subshell)
		return ok && sub.Lparen.Offset() == cs.Left.Offset()+2
	}, "$(( read as a substitution of a subshell, which bash first tries as arithmetic"},
	{"case-in-substitution", func(n syntax.Node) bool {
		found := false
		syntax.Walk(n, func(m syntax.Node) bool {
			if _, ok := m.(*syntax.CaseClause); ok {
				found = true
			}
			return !found
		})
		return found
	}, "a case statement inside a substitution, whose ')' older parsers take for the end"},
}

func (c *checker) differentials(n syntax.Node) {
	for _, d := range differentials {
		if d.match(n) {
			c.add(printNode(n), Ask, "parser-differential", d.reason)
		}
	}
}

// shellBuiltin are bash builtins and keywords a function could shadow.
var shellBuiltin = set("echo", "pwd", "cd", "test", "[", "true", "false", ":", "printf", "read", "set", "unset", "export",
	"declare", "local", "source", ".", "eval", "exec", "command", "builtin", "type", "hash", "trap", "kill", "wait")

// inertEnv are variables that change no program's behaviour beyond
// formatting, for any free command; goInertEnv only for go build and vet.
var inertEnv = set("LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_COLLATE", "LC_MESSAGES", "LC_NUMERIC", "LC_TIME", "LC_MONETARY",
	"TZ", "NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "COLUMNS", "LINES", "GOMAXPROCS", "GOTRACEBACK", "GOAMD64", "GOARM64")

// Not inert: GOPROXY, GOPRIVATE, GONOPROXY (direct fetches run git, hg, svn
// ...), GOSUMDB, GONOSUMDB, GOINSECURE (code no longer checked against the
// checksum database, then compiled and run by go test).

var goInertEnv = set("GOOS", "GOARCH")

var lowerName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z_][a-z0-9_]*$`) })

// inertShellVar: a shell variable no free program or bash itself reads:
// lower-case names (bash's own and the environment's are upper-case),
// except the proxies some tools read.
func inertShellVar(name string) bool {
	return lowerName().MatchString(name) && !strings.HasSuffix(name, "_proxy") && name != "_"
}

// callAssigns: prefix assignments (NAME=v cmd) reach the command's
// environment and must be inert for it; bare assignments must be to inert
// shell variables. Array and subscript assignments evaluate arithmetic.
func (c *checker) callAssigns(x *syntax.CallExpr) {
	if len(x.Assigns) == 0 {
		return
	}
	var cmd []arg
	if len(x.Args) > 0 {
		cmd = c.argv(x)
	}
	for _, a := range x.Assigns {
		if a.Name == nil {
			continue
		}
		name := a.Name.Value
		src := printNode(x)
		switch {
		case a.Index != nil || a.Array != nil:
			c.add(src, Ask, "assignment", name+": array assignments evaluate subscripts as arithmetic")
		case a.Append:
			c.add(src, Ask, "assignment", name+"+=: appending to a variable the analyzer does not track")
		case len(x.Args) == 0:
			if !inertShellVar(name) {
				c.add(src, Ask, "assignment", name+" is not known to be inert (upper-case names are read by bash and programs)")
			}
		default:
			if !inertEnvFor(name, a.Value, cmd) {
				c.add(src, Ask, "environment", name+" is not known to be inert for "+firstWord(cmd))
			}
		}
	}
}

func firstWord(cmd []arg) string {
	if len(cmd) == 0 {
		return "the command"
	}
	return cmd[0].s
}

// localeValue: a locale name (C, C.UTF-8, en_US.UTF-8@euro, fr:en). A
// value with a slash is a path glibc and gettext load locale data and
// message catalogs from, whose translated formats the program prints.
var localeValue = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.@:+-]*$`) })

func inertEnvFor(name string, value *syntax.Word, cmd []arg) bool {
	if plainPager(name, value) || name == "IFS" && len(cmd) > 0 && cmd[0].s == "read" {
		return true
	}
	if inertEnv[name] {
		if strings.HasPrefix(name, "LC_") || name == "LANG" || name == "LANGUAGE" {
			if value == nil || len(value.Parts) == 0 {
				return true
			}
			v := literalOf(value)
			return v != "" && localeValue().MatchString(v) && !strings.Contains(v, "..")
		}
		return true
	}
	if len(cmd) >= 2 && canonical(cmd[0].s) == "go" && (cmd[1].s == "build" || cmd[1].s == "vet") && goInertEnv[name] {
		return true
	}
	if name == "CGO_ENABLED" && value != nil && value.Lit() == "0" {
		return true
	}
	return false
}

// paramExp: plain expansions yield data; indirection, prompt expansion,
// slices and subscripts (arithmetic) and assigning defaults do more.
func (c *checker) paramExp(p *syntax.ParamExp) {
	src := printNode(p)
	switch {
	case p.Excl || p.Names != 0:
		c.add(src, Ask, "indirect-expansion", "${!...} reads a variable named by another's value")
		return
	case p.Slice != nil:
		c.arith(p.Slice.Offset, src)
		c.arith(p.Slice.Length, src)
	case p.Width || p.IsSet || p.Flags != nil || p.NestedParam != nil || len(p.Modifiers) > 0:
		c.add(src, Ask, "unknown-expansion", "an expansion bash does not have")
		return
	}
	if p.Index != nil {
		if w, ok := p.Index.(*syntax.Word); !ok || (w.Lit() != "@" && w.Lit() != "*" && !numeric(w.Lit())) {
			c.add(src, Ask, "subscript", "a subscript is evaluated as arithmetic, which can run code")
		}
	}
	if p.Exp != nil {
		switch p.Exp.Op {
		case syntax.OtherParamOps:
			c.add(src, Ask, "prompt-expansion", "${var@...} transforms the value (@P expands it as a prompt, running substitutions)")
		case syntax.AssignUnset, syntax.AssignUnsetOrNull:
			if p.Param == nil || !inertShellVar(p.Param.Value) {
				c.add(src, Ask, "assignment", "${var:=...} assigns a variable that is not known to be inert")
			}
		}
	}
}

func numeric(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// arith accepts arithmetic made of numbers and operators, and plain
// assignments of it to inert variables. A variable read in arithmetic has
// its value evaluated as an expression, subscripts and substitutions
// included: v='a[$(cmd)]'; : $((v)) runs cmd.
func (c *checker) arith(e syntax.ArithmExpr, src string) {
	if e == nil {
		return
	}
	switch x := e.(type) {
	case *syntax.BinaryArithm:
		if x.Op == syntax.Assgn {
			if w, ok := x.X.(*syntax.Word); ok && inertShellVar(w.Lit()) {
				c.arith(x.Y, src)
				return
			}
			c.add(src, Ask, "arithmetic-assignment", "arithmetic assigns a variable that is not known to be inert")
			return
		}
		if isArithAssign(x.Op) {
			c.add(src, Ask, "arithmetic-assignment", "arithmetic reads and assigns a variable")
			return
		}
		c.arith(x.X, src)
		c.arith(x.Y, src)
	case *syntax.UnaryArithm:
		if x.Op == syntax.Inc || x.Op == syntax.Dec {
			c.add(src, Ask, "arithmetic-assignment", "++/-- reads and assigns a variable")
			return
		}
		c.arith(x.X, src)
	case *syntax.ParenArithm:
		c.arith(x.X, src)
	case *syntax.Word:
		if l := x.Lit(); l != "" && arithNumber().MatchString(l) {
			return
		}
		c.add(src, Ask, "arithmetic-variable", "arithmetic evaluates a variable's value or an expansion as an expression, which can run code")
	default:
		c.add(src, Ask, "arithmetic-variable", "arithmetic the analyzer does not understand")
	}
}

var arithNumber = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(0[xX][0-9a-fA-F]+|[0-9]+|[0-9]+#[0-9a-zA-Z@_]+)$`) })

func isArithAssign(op syntax.BinAritOperator) bool {
	switch op {
	case syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn, syntax.RemAssgn, syntax.AndAssgn, syntax.OrAssgn,
		syntax.XorAssgn, syntax.ShlAssgn, syntax.ShrAssgn:
		return true
	}
	return false
}

// testExpr: [[ ]] is free of effects except -v/-R (subscripts) and the
// numeric comparisons, which evaluate both sides as arithmetic.
func (c *checker) testExpr(e syntax.TestExpr, src string) {
	switch x := e.(type) {
	case *syntax.BinaryTest:
		switch x.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			for _, side := range []syntax.TestExpr{x.X, x.Y} {
				if w, ok := side.(*syntax.Word); ok && resolve(w).number {
					continue // $?, $#: always a number
				}
				if w, ok := side.(*syntax.Word); !ok || !arithNumber().MatchString(literalOf(w)) {
					c.add(src, Ask, "arithmetic-variable", "a numeric comparison in [[ ]] evaluates its operands as arithmetic, which can run code")
					return
				}
			}
			return
		}
		c.testExpr(x.X, src)
		c.testExpr(x.Y, src)
	case *syntax.UnaryTest:
		if x.Op == syntax.TsVarSet || x.Op == syntax.TsRefVar {
			c.add(src, Ask, "subscript", "[[ -v ]] and [[ -R ]] evaluate a subscript as arithmetic")
			return
		}
		c.testExpr(x.X, src)
	case *syntax.ParenTest:
		c.testExpr(x.X, src)
	}
}

// literalOf is a word's value when it is static, else "".
func literalOf(w *syntax.Word) string {
	a := resolve(w)
	if !a.static {
		return ""
	}
	return a.s
}

// freeName reports a name that starts some free-list entry.
func (c *checker) freeName(name string) bool {
	for _, f := range c.a.free {
		if f[0] == name {
			return true
		}
	}
	return false
}

// dupTarget: what bash and the parser agree a duplication's word is: a
// descriptor (2, 2-) or "-"; for >& also a plain file name (not starting
// with "-").
func dupTarget(w *syntax.Word, op syntax.RedirOperator) bool {
	a := resolve(w)
	if !a.static {
		return false
	}
	s := strings.TrimSuffix(a.s, "-")
	if a.s == "-" || s != "" && strings.Trim(s, "0123456789") == "" {
		return true
	}
	return op == syntax.DplOut && !strings.HasPrefix(a.s, "-")
}

// heredocExtent: bash ends a here-document at the first line equal to its
// delimiter, reading the body as raw lines; the parser reads expansions in
// an unquoted body first, so a quote or a substitution that spans the
// delimiter line ($(echo '<NL>EOF<NL>sudo id<NL>')) hides from it what bash
// runs after the delimiter. Such a body is "ask", and what follows bash's
// end is judged as the code bash reads it to be.
func (c *checker) heredocExtent(r *syntax.Redirect, src string, depth int) {
	if (r.Op != syntax.Hdoc && r.Op != syntax.DashHdoc) || r.Hdoc == nil || r.Word == nil || len(r.Hdoc.Parts) == 0 {
		return
	}
	start, end := int(r.Hdoc.Pos().Offset()), int(r.Hdoc.End().Offset())
	if start < 0 || end > len(src) || start >= end {
		return
	}
	delim := resolve(r.Word)
	d := delim.s
	if !delim.static {
		ws, we := int(r.Word.Pos().Offset()), int(r.Word.End().Offset())
		if ws < 0 || we > len(src) || ws >= we {
			return
		}
		d = src[ws:we]
	}
	off := start
	for _, line := range strings.SplitAfter(src[start:end], "\n") {
		next := off + len(line)
		l := strings.TrimSuffix(line, "\n")
		if r.Op == syntax.DashHdoc {
			l = strings.TrimLeft(l, "\t")
		}
		if l == d && strings.HasSuffix(line, "\n") {
			c.add("<<"+d, Ask, "parser-differential",
				"the here-document's body holds its delimiter line inside an expansion: bash ends the body there and runs what follows")
			if depth < maxDepth {
				c.source(src[next:], depth+1)
				// bash runs it command by command, before it meets the
				// unbalanced quote or parenthesis: each line on its own.
				for _, l := range strings.Split(src[next:], "\n") {
					if v := c.quietSource(l, depth); v.v == Refuse {
						c.add(l, Refuse, v.rule, "after the here-document's end as bash reads it: "+v.reason)
					}
				}
			}
			return
		}
		off = next
	}
}
