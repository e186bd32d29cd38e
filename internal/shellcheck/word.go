package shellcheck

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// arg is a word resolved as far as it can be without running anything.
type arg struct {
	s      string // the value; unresolved parts appear as "$"
	static bool   // no part needed the environment or a command
	glob   bool   // it has unquoted glob characters
	home   bool   // it starts with ~ or $HOME (s starts with "~")
	ifs    bool   // it has an unquoted $IFS, which splits it
	prefix string // the static text before the first unresolved part
	alt    string // the value with each unquoted $IFS read as a space
	// param is the variable when the whole word is one expansion ($X,
	// ${X:-default}); def is a default value the expansion may yield.
	param string
	def   []string
	// quoted: some part was quoted (an empty quoted word stays a word);
	// unknown: brace expansion past the limit, nothing is known of it.
	quoted  bool
	unknown bool
	// homePattern: an expansion of HOME cut by a pattern (${HOME%/*}),
	// which can be its parent or the root.
	homePattern bool
	// tmpl is the word as literal text and plain variables ($x, ${x},
	// "$x"), when it is nothing else: a variable is "\x00name"; the
	// checker fills in the values it tracked (x=su; ${x}do is sudo).
	tmpl   []string
	noTmpl bool
	// bare: an expansion outside quotes, which word splitting may make
	// several words; toplevel: the word is $(git rev-parse --show-toplevel).
	bare     bool
	toplevel bool
	// procSubst: the word is <(…) or >(…), a /dev/fd path, never an
	// option; number: the word is $?, $#, $$ or $!, always a number.
	procSubst bool
	number    bool
}

// words resolves a word into the words it expands to (brace expansion
// can make several).
func words(w *syntax.Word) []arg {
	if w == nil {
		return nil
	}
	cp := *w
	cp.Parts = append([]syntax.WordPart(nil), w.Parts...)
	if !syntax.SplitBraces(&cp) {
		return []arg{resolve(&cp)}
	}
	var out []arg
	n := 0
	for bw, err := range expand.BracesSeq(nil, &cp) {
		if n++; err != nil || n > maxBraces {
			return []arg{{s: "$", prefix: "", unknown: true}}
		}
		a := resolve(bw)
		if a.static && a.s == "" && !a.quoted {
			continue // bash drops the empty words of {,x}: {,rm} -rf ~ is rm -rf ~
		}
		out = append(out, a)
	}
	return out
}

// maxBraces bounds brace expansion: past it a word is unknown ("ask").
const maxBraces = 256

// argv resolves a command's words.
func argv(ws []*syntax.Word) []arg {
	var out []arg
	for _, w := range ws {
		out = append(out, words(w)...)
	}
	return out
}

func resolve(w *syntax.Word) arg {
	a := arg{static: true}
	var b strings.Builder
	mark := 0 // b.Len() where $IFS parts start, for alt
	var alt strings.Builder
	sync := func() { alt.WriteString(b.String()[mark:]); mark = b.Len() }
	unresolved := func() {
		if a.static {
			a.prefix = b.String()
		}
		a.static = false
		b.WriteString("$")
	}
	tmplParam := func(p *syntax.ParamExp) {
		if p.Param != nil && p.Index != nil && p.Exp == nil && p.Repl == nil && p.Slice == nil && !p.Length && !p.Excl {
			a.tmpl = append(a.tmpl, "\x00"+p.Param.Value) // ${a[0]}, ${a[@]}: one of the array's values
			return
		}
		if p.Param != nil && isParam(p, p.Param.Value) {
			a.tmpl = append(a.tmpl, "\x00"+p.Param.Value)
			return
		}
		a.noTmpl = true
	}
	for i, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			v := p.Value
			if i == 0 && (v == "~" || strings.HasPrefix(v, "~/")) {
				a.home = true
			}
			n := b.Len()
			unescapeUnquoted(v, &b, &a.glob)
			a.tmpl = append(a.tmpl, b.String()[n:])
		case *syntax.SglQuoted:
			a.quoted = true
			if p.Dollar {
				b.WriteString(ansiC(p.Value))
				a.tmpl = append(a.tmpl, ansiC(p.Value))
			} else {
				b.WriteString(p.Value)
				a.tmpl = append(a.tmpl, p.Value)
			}
		case *syntax.DblQuoted:
			a.quoted = true
			if p.Dollar {
				a.noTmpl = true
			}
			for j, dp := range p.Parts {
				switch q := dp.(type) {
				case *syntax.Lit:
					b.WriteString(unescapeDouble(q.Value))
					a.tmpl = append(a.tmpl, unescapeDouble(q.Value))
				case *syntax.ParamExp:
					tmplParam(q)
					if i == 0 && j == 0 && isHome(q) {
						a.home = true
						b.WriteString("~")
						continue
					}
					if len(w.Parts) == 1 && len(p.Parts) == 1 {
						a.paramDefs(q)
					}
					a.homePattern = a.homePattern || homeCut(q)
					unresolved()
				case *syntax.CmdSubst:
					pwdSubst(q, &a)
					if len(w.Parts) == 1 && len(p.Parts) == 1 {
						a.def = append(a.def, substDefs(q)...)
						a.toplevel = isToplevel(q)
					}
					unresolved()
				default:
					a.noTmpl = true
					unresolved()
				}
			}
		case *syntax.ParamExp:
			tmplParam(p)
			a.bare = true
			if len(w.Parts) == 1 {
				a.paramDefs(p)
			}
			a.homePattern = a.homePattern || homeCut(p)
			switch {
			case i == 0 && isHome(p):
				a.home = true
				b.WriteString("~")
			case isParam(p, "IFS"):
				a.ifs = true
				sync()
				unresolved()
				mark = b.Len()
				alt.WriteString(" ")
			default:
				unresolved()
			}
		case *syntax.CmdSubst:
			pwdSubst(p, &a)
			a.bare = true
			if len(w.Parts) == 1 {
				a.def = append(a.def, substDefs(p)...)
				a.toplevel = isToplevel(p)
			}
			// $(which X), $(command -v X), $(type -P X) name X.
			if len(w.Parts) == 1 && len(p.Stmts) == 1 {
				if call, ok := p.Stmts[0].Cmd.(*syntax.CallExpr); ok {
					if as := argv(call.Args); len(as) >= 2 && as[len(as)-1].static {
						switch {
						case as[0].s == "which", as[0].s == "command" && as[1].s == "-v", as[0].s == "type" && strings.HasPrefix(as[1].s, "-"):
							a.def = append(a.def, as[len(as)-1].s)
						}
					}
				}
			}
			unresolved()
		default:
			a.noTmpl = true
			a.bare = true
			unresolved()
		}
	}
	if len(w.Parts) == 1 {
		switch p := w.Parts[0].(type) {
		case *syntax.ProcSubst:
			a.procSubst = true
		case *syntax.ParamExp:
			a.number = p.Param != nil && isParam(p, p.Param.Value) && strings.Contains("?#$!", p.Param.Value) && len(p.Param.Value) == 1
		case *syntax.DblQuoted:
			if len(p.Parts) == 1 {
				if pe, ok := p.Parts[0].(*syntax.ParamExp); ok && pe.Param != nil && isParam(pe, pe.Param.Value) {
					a.number = strings.Contains("?#$!", pe.Param.Value) && len(pe.Param.Value) == 1
				}
			}
		}
	}
	if a.noTmpl || a.static {
		a.tmpl = nil
	}
	a.s = b.String()
	sync()
	a.alt = alt.String()
	if a.static {
		a.prefix = a.s
	}
	return a
}

// isToplevel: $(git rev-parse --show-toplevel).
func isToplevel(cs *syntax.CmdSubst) bool {
	if len(cs.Stmts) != 1 || len(cs.Stmts[0].Redirs) > 0 {
		return false
	}
	call, ok := cs.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 {
		return false
	}
	as := argv(call.Args)
	return len(as) == 3 && as[0].static && as[0].s == "git" && as[1].s == "rev-parse" && as[2].s == "--show-toplevel"
}

// paramDefs records the variable of a word that is one expansion, and the
// default or alternative value it may yield (${X:-/}).
func (a *arg) paramDefs(p *syntax.ParamExp) {
	if p.Param == nil {
		return
	}
	a.param = p.Param.Value
	if p.Exp != nil && p.Exp.Word != nil && (p.Exp.Op == syntax.DefaultUnset || p.Exp.Op == syntax.DefaultUnsetOrNull ||
		p.Exp.Op == syntax.AssignUnset || p.Exp.Op == syntax.AssignUnsetOrNull || p.Exp.Op == syntax.AlternateUnset ||
		p.Exp.Op == syntax.AlternateUnsetOrNull) {
		d := resolve(p.Exp.Word)
		if d.static {
			a.def = append(a.def, d.s)
		}
		a.def = append(a.def, d.def...)
		if d.home && d.static {
			a.home = true
		}
	}
}

// homeCut: ${HOME%...}, ${HOME#...}, ${HOME/...}, ${HOME:...}.
func homeCut(p *syntax.ParamExp) bool {
	if p.Param == nil || p.Param.Value != "HOME" {
		return false
	}
	if p.Repl != nil || p.Slice != nil {
		return true
	}
	if p.Exp == nil {
		return false
	}
	switch p.Exp.Op {
	case syntax.RemSmallSuffix, syntax.RemLargeSuffix, syntax.RemSmallPrefix, syntax.RemLargePrefix:
		return true
	}
	return false
}

// substDefs is what $(echo X) or $(printf X) prints, when literal.
func substDefs(cs *syntax.CmdSubst) []string {
	if len(cs.Stmts) != 1 {
		return nil
	}
	var decoded []string
	if text, ok := literalOutput(cs.Stmts[0]); ok {
		// $(echo c3Vkbw== | base64 -d), $(tr a-z n-za-m <<< fhqb):
		// what it prints, without the trailing newlines bash removes.
		decoded = append(decoded, strings.TrimRight(text, "\n"))
	}
	call, ok := cs.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) < 2 {
		return decoded
	}
	as := argv(call.Args)
	if !as[0].static || (as[0].s != "echo" && as[0].s != "printf") {
		return decoded
	}
	out := decoded
	for _, x := range as[1:] {
		if x.static && !strings.HasPrefix(x.s, "-") {
			out = append(out, strings.TrimSpace(strings.ReplaceAll(x.s, `\n`, "")))
			// printf's format and %b, echo -e: \163, \x73, \u0073 are s.
			if d := strings.TrimSpace(ansiC(strings.ReplaceAll(x.s, `\0`, `\`))); d != out[len(out)-1] {
				out = append(out, d)
			}
		}
	}
	return out
}

func isParam(p *syntax.ParamExp, name string) bool {
	return p.Param != nil && p.Param.Value == name && p.Exp == nil && p.Repl == nil && p.Index == nil && p.Slice == nil &&
		!p.Length && !p.Excl && !p.Width
}

// isHome: $HOME, and the expansions of it that yield its value when it is
// set (${HOME:?}, ${HOME:-x}, ${HOME:=x}).
func isHome(p *syntax.ParamExp) bool {
	if isParam(p, "HOME") {
		return true
	}
	if p.Param == nil || p.Param.Value != "HOME" || p.Repl != nil || p.Index != nil || p.Slice != nil || p.Length || p.Excl || p.Width {
		return false
	}
	switch p.Exp.Op {
	case syntax.ErrorUnset, syntax.ErrorUnsetOrNull, syntax.DefaultUnset, syntax.DefaultUnsetOrNull, syntax.AssignUnset, syntax.AssignUnsetOrNull:
		return true
	}
	return false
}

// unescapeUnquoted removes backslashes outside quotes and notes glob characters.
func unescapeUnquoted(v string, b *strings.Builder, glob *bool) {
	for i := 0; i < len(v); i++ {
		ch := v[i]
		switch {
		case ch == '\\' && i+1 < len(v):
			i++
			if v[i] != '\n' {
				b.WriteByte(v[i])
			}
		case ch == '*' || ch == '?' || ch == '[':
			*glob = true
			b.WriteByte(ch)
		default:
			b.WriteByte(ch)
		}
	}
}

// unescapeDouble removes the backslashes that escape inside double quotes.
func unescapeDouble(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) && strings.IndexByte("$`\"\\\n", v[i+1]) >= 0 {
			i++
			if v[i] != '\n' {
				b.WriteByte(v[i])
			}
			continue
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// ansiC decodes the escapes of a $'...' string as bash 5 does
// (ansicstr): \x takes one or two hex digits, \x{...} any number (the
// value cut to a byte), \u and \U up to 4 and 8, octal up to three
// digits, \cX a control character (\c? is DEL); an unknown escape
// keeps its backslash. bash's strings end at a NUL, so the decoded text
// does too.
func ansiC(v string) string {
	var b strings.Builder
	isHex := func(c byte) bool { return strings.IndexByte("0123456789abcdefABCDEF", c) >= 0 }
	for i := 0; i < len(v); i++ {
		if v[i] != '\\' || i+1 >= len(v) {
			b.WriteByte(v[i])
			continue
		}
		i++
		var out byte
		switch c := v[i]; c {
		case 'a':
			out = '\a'
		case 'b':
			out = '\b'
		case 'e', 'E':
			out = 0x1b
		case 'f':
			out = '\f'
		case 'n':
			out = '\n'
		case 'r':
			out = '\r'
		case 't':
			out = '\t'
		case 'v':
			out = '\v'
		case 'c':
			if i+1 >= len(v) {
				b.WriteString("\\c") // nothing to make a control character of: kept
				continue
			}
			i++
			x := v[i]
			if x == '\\' && i+1 < len(v) && v[i+1] == '\\' {
				i++
			}
			if x == '?' {
				out = 0x7f
			} else {
				if x >= 'a' && x <= 'z' {
					x -= 'a' - 'A'
				}
				out = x & 0x1f
			}
		case 'x':
			j := i + 1
			braced := j < len(v) && v[j] == '{'
			if braced {
				j++
			}
			code, n := 0, 0
			for j < len(v) && isHex(v[j]) && (braced || n < 2) {
				d, _ := strconv.ParseUint(v[j:j+1], 16, 8)
				code = code*16 + int(d)
				j++
				n++
			}
			if braced && j < len(v) && v[j] == '}' {
				j++
			}
			if !braced && n == 0 {
				b.WriteString("\\x")
				continue
			}
			out = byte(code & 0xff)
			i = j - 1
		case 'u', 'U':
			n := 4
			if c == 'U' {
				n = 8
			}
			j := i + 1
			for j < len(v) && j-i-1 < n && isHex(v[j]) {
				j++
			}
			if j == i+1 {
				b.WriteByte('\\')
				b.WriteByte(c)
				continue
			}
			code, _ := strconv.ParseUint(v[i+1:j], 16, 32)
			raw := v[i-1 : j]
			i = j - 1
			switch {
			case code == 0:
				return b.String()
			case code <= 0x7f:
				b.WriteByte(byte(code))
			case utf8.ValidRune(rune(code)):
				b.WriteRune(rune(code))
			default:
				b.WriteString(raw) // bash keeps what it cannot convert; the analyzer asks (parser differential)
			}
			continue
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(v) && j-i < 3 && v[j] >= '0' && v[j] <= '7' {
				j++
			}
			code, _ := strconv.ParseUint(v[i:j], 8, 16)
			out = byte(code)
			i = j - 1
		case '\\', '\'', '"', '?':
			out = c
		default:
			// bash keeps the backslash of an escape it does not know:
			// $'l\s' is l\s, not ls.
			b.WriteByte('\\')
			b.WriteByte(c)
			continue
		}
		if out == 0 {
			return b.String()
		}
		b.WriteByte(out)
	}
	return b.String()
}

// strs returns the values of args.
func strs(as []arg) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.s
	}
	return out
}

// static turns plain strings (from code split without a parser) into args.
func static(ss []string) []arg {
	out := make([]arg, len(ss))
	for i, s := range ss {
		out[i] = arg{s: s, static: true, prefix: s, alt: s, glob: strings.ContainsAny(s, "*?[")}
	}
	return out
}

// pwdSubst: $(pwd) is $PWD in a word's template; any other substitution
// leaves the word without one.
func pwdSubst(cs *syntax.CmdSubst, a *arg) {
	if len(cs.Stmts) == 1 {
		if call, ok := cs.Stmts[0].Cmd.(*syntax.CallExpr); ok && len(call.Args) >= 1 && len(call.Args) <= 2 {
			if as := argv(call.Args); as[0].static && as[0].s == "pwd" && (len(as) == 1 || as[1].s == "-P" || as[1].s == "-L") {
				a.tmpl = append(a.tmpl, "\x00PWD")
				return
			}
		}
	}
	a.noTmpl = true
}
