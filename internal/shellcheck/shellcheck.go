// Package shellcheck judges a shell command before it runs: it parses the
// command with mvdan.cc/sh, splits it into every piece that would execute
// (chains, pipes, subshells, substitutions, function bodies, the inner
// commands of wrappers such as env, xargs, find -exec and sh -c), resolves
// obfuscations that need no execution (quotes, backslashes, $'..', braces,
// $IFS), and judges each piece. The most restrictive verdict wins.
//
// The burden of proof is on "allow": a command is free only when every
// piece is fully understood — literal words, no expansion bash could
// evaluate as code, assignments only to variables known to be inert, no
// construct that mvdan.cc/sh and bash read differently, and each free
// command with options known to keep it free. Everything else is "ask", or
// "refuse" where a refused family is reachable.
//
// It is hygiene on top of the sandbox, never a replacement for it: anything
// it cannot resolve is at least "ask". The bash oracle (oracle_test.go)
// runs every allowed command in real bash to check that claim.
package shellcheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// Verdict is the decision for a command: Allow < Ask < Refuse.
type Verdict int

// Verdicts, ordered from least to most restrictive.
const (
	Allow Verdict = iota
	Ask
	Refuse
)

func (v Verdict) String() string {
	switch v {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	}
	return "refuse"
}

// MarshalJSON writes the verdict's name.
func (v Verdict) MarshalJSON() ([]byte, error) { return json.Marshal(v.String()) }

// UnmarshalJSON reads a verdict's name.
func (v *Verdict) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	p, err := ParseVerdict(s)
	*v = p
	return err
}

// ParseVerdict reads "allow", "ask" or "refuse".
func ParseVerdict(s string) (Verdict, error) {
	switch s {
	case "allow":
		return Allow, nil
	case "ask":
		return Ask, nil
	case "refuse":
		return Refuse, nil
	}
	return Refuse, fmt.Errorf("unknown verdict %q (want allow, ask or refuse)", s)
}

// Piece is one part of a command and the rule that judged it.
type Piece struct {
	Command string  `json:"command"`
	Verdict Verdict `json:"verdict"`
	Rule    string  `json:"rule"`
	Reason  string  `json:"reason"`
	// Source is where the rule comes from: the free-list entry that made
	// the piece free (commands.allow "go test"), or the analyzer's own
	// rules (a refused family, the analysis).
	Source string `json:"source"`
}

// Result is the verdict for a whole command and its explanation.
type Result struct {
	Verdict Verdict `json:"verdict"`
	Pieces  []Piece `json:"pieces"`
}

// Analyzer judges commands against a list of free commands.
type Analyzer struct {
	free [][]string
	// bash reads each command as bash does before it is judged; nil
	// judges the analyzer's own reading only (the pure analysis).
	bash Bash
}

// New returns an analyzer whose free commands are the given argv prefixes,
// such as "ls", "git status" or "go test". It reads every command with
// this machine's bash (SystemBash) as well as with its own parser.
func New(free []string) *Analyzer {
	a := &Analyzer{bash: SystemBash}
	for _, f := range free {
		if fields := strings.Fields(f); len(fields) > 0 {
			a.free = append(a.free, fields)
		}
	}
	return a
}

// WithBash returns a copy of the analyzer that reads commands with b
// (nil: with its own parser only, which proves nothing against a parser
// differential and is meant for measuring the pure analysis).
func (a *Analyzer) WithBash(b Bash) *Analyzer {
	cp := *a
	cp.bash = b
	return &cp
}

// maxDepth bounds nested code (sh -c "sh -c ..."): deeper is "ask".
const maxDepth = 8

// Analyze judges a command.
func (a *Analyzer) Analyze(command string) Result {
	c := &checker{a: a}
	c.source(command, 0)
	r := Result{Verdict: Allow, Pieces: c.pieces}
	if len(c.pieces) == 0 {
		r.Verdict = Ask
		r.Pieces = []Piece{{Command: command, Verdict: Ask, Rule: "empty", Reason: "nothing to run"}}
	}
	for _, p := range r.Pieces {
		r.Verdict = max(r.Verdict, p.Verdict)
	}
	return r
}

type checker struct {
	a      *Analyzer
	pieces []Piece
	// vars are the literal values assigned to each variable anywhere in the
	// command, and dirs the absolute directories it cd's to: what static
	// analysis can know of $X and of relative paths.
	vars map[string][]string
	dirs []string
	// args caches each simple command's resolved words.
	args map[*syntax.CallExpr][]arg
	// entry is the free-list entry the last free command matched.
	entry []string
	// posix parses code as POSIX sh reads it (for sh, dash, ...).
	posix bool
	// roots are the parsed code, the command's first; lits, computed on
	// demand, are the refused program names written anywhere in it.
	roots   []syntax.Node
	lits    []string
	litsSet bool
	// aliases are the alias definitions the command makes.
	aliases map[string]string
	// rel is the relative directory the cd's so far lead to; cdEscapes
	// that some cd climbs above where the command started, or goes to
	// a directory that is not a literal relative path.
	rel       string
	cdEscapes bool
	// current is the simple command being judged; fed the ones whose
	// input is a here-document or here-string judged as code.
	current *syntax.CallExpr
	fed     map[*syntax.CallExpr]bool
	// quick: a speculative judgment (is any reading of this refused?)
	// that does not ask bash.
	quick bool
	// inWords: judging the suffixes of an unknown program's words, which
	// are not searched again.
	inWords bool
}

// shellSource judges code a shell runs: as bash reads it, and for other
// shells (sh is dash on Debian) also as POSIX sh reads it, where "&>" is
// "&" then ">" and $'..', brace expansion and [[ do not exist.
func (c *checker) shellSource(shell, code string, depth int) {
	c.source(code, depth)
	if shell == "bash" || shell == "rbash" || c.posix {
		return
	}
	c.posix = true
	c.source(code, depth)
	c.posix = false
}

// argv resolves a simple command's words once.
func (c *checker) argv(x *syntax.CallExpr) []arg {
	if a, ok := c.args[x]; ok {
		return a
	}
	if c.args == nil {
		c.args = map[*syntax.CallExpr][]arg{}
	}
	a := argv(x.Args)
	c.args[x] = a
	return a
}

func (c *checker) add(cmd string, v Verdict, rule, reason string) {
	c.addFrom(cmd, v, rule, reason, "")
}

// Sources of rules other than the free list.
const (
	SourceRefused  = "built-in refused family (no approval can unblock it)"
	SourceAnalysis = "built-in command analysis (what is not proven free asks)"
	SourceGrammar  = "built-in command analysis (shell grammar and harmless sinks)"
)

func (c *checker) addFrom(cmd string, v Verdict, rule, reason, source string) {
	if source == "" {
		switch v {
		case Refuse:
			source = SourceRefused
		case Ask:
			source = SourceAnalysis
		default:
			source = SourceGrammar
		}
	}
	c.pieces = append(c.pieces, Piece{Command: oneLine(cmd), Verdict: v, Rule: rule, Reason: reason, Source: source})
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}

// source parses and judges shell code.
func (c *checker) source(src string, depth int) {
	if depth > maxDepth {
		c.add(src, Ask, "too-deep", "code nested more than 8 levels deep")
		return
	}
	if !utf8.ValidString(src) {
		c.add(src, Ask, "invalid-text", "the command is not valid UTF-8")
		return
	}
	for _, r := range src {
		if r != '\n' && r != '\t' && (unicode.IsControl(r) || r == '\u2028' || r == '\u2029') {
			c.add(src, Ask, "control-character", fmt.Sprintf("the command contains the control character %U, which parsers disagree on", r))
			break
		}
	}
	lang := syntax.LangBash
	if c.posix {
		lang = syntax.LangPOSIX
	}
	f, err := syntax.NewParser(syntax.Variant(lang)).Parse(strings.NewReader(src), "")
	if err != nil {
		c.add(src, Ask, "parse-error", "the command does not parse: "+err.Error())
		if c.posix && strings.Contains(src, "&>") && depth < maxDepth {
			// dash reads &> as & then >: echo x &>/dev/null su runs su.
			c.source(strings.ReplaceAll(src, "&>", "& >"), depth+1)
		}
		c.beforeError(src, lang, depth, err)
		c.bashReading(src, nil, depth)
		return
	}
	if len(f.Stmts) == 0 {
		return
	}
	c.judgeFile(f, src, depth)
	c.bashReading(src, f, depth)
}

// judgeFile judges parsed code; src is the text its positions refer to.
func (c *checker) judgeFile(f *syntax.File, src string, depth int) {
	before := len(c.pieces)
	c.roots = append(c.roots, f)
	c.litsSet = false
	c.learn(f)
	c.walk(f, depth)
	c.prove(f, src, depth)
	if len(c.pieces) == before {
		c.add(src, Allow, "grammar-only", "no program runs (arithmetic, tests or assignments only)")
	}
}

// bashReading asks bash how it reads the code: a reading that differs
// from the analyzer's (f, nil when the analyzer could not parse it) is
// "ask", and bash's reading is judged too, so that what bash would run is
// refused when refused. Code bash cannot parse, or that bash could not
// be asked about, is "ask".
func (c *checker) bashReading(src string, f *syntax.File, depth int) {
	if c.a.bash == nil || c.quick || c.posix {
		return
	}
	out, err := c.a.bash.Canonical(src)
	if errors.Is(err, ErrBashSyntax) {
		if f != nil {
			c.add(src, Ask, "parser-differential", "bash cannot parse the command, which the analyzer reads: "+err.Error())
		}
		return
	}
	if err != nil {
		c.add(src, Ask, "bash-unavailable", "the command could not be read by bash before it was judged: "+err.Error())
		return
	}
	bf, err := bashBody(out)
	if err != nil {
		c.add(src, Ask, "parser-differential", err.Error())
		return
	}
	if f != nil && shape(f.Stmts) == shape(bf.Stmts) {
		return
	}
	if f != nil {
		c.add(src, Ask, "parser-differential", "bash reads the command differently from the analyzer; bash reads: "+printNode(bf))
	}
	if len(bf.Stmts) > 0 {
		c.judgeFile(bf, out, depth)
	}
}

// walk visits every node of the tree: whatever can run, wherever it sits
// (a chain, a pipe, a function body, a substitution inside a quote, an
// arithmetic expansion, a here-document), is judged.
func (c *checker) walk(node syntax.Node, depth int) {
	syntax.Walk(node, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.Stmt:
			c.stmtFeeds(x, depth)
		case *syntax.CallExpr:
			c.assigns(x.Assigns, x)
			if len(x.Args) > 0 {
				c.call(x, depth)
			}
		case *syntax.DeclClause:
			c.assigns(x.Args, x)
		case *syntax.Redirect:
			c.redirect(x)
		case *syntax.BinaryCmd:
			if x.Op == syntax.Pipe || x.Op == syntax.PipeAll {
				c.pipe(x)
			}
		}
		return true
	})
}

func printNode(n syntax.Node) string {
	var b strings.Builder
	if err := syntax.NewPrinter(syntax.SingleLine(true)).Print(&b, n); err != nil {
		return fmt.Sprintf("%T", n)
	}
	return b.String()
}

// learn collects, before judging, the literal values variables are given
// and the directories the command changes to. Order does not matter: every
// value is a candidate, which can only make a verdict stricter.
func (c *checker) learn(f *syntax.File) {
	if c.vars == nil {
		c.vars = map[string][]string{}
	}
	assign := func(as []*syntax.Assign) {
		for _, a := range as {
			if a.Name != nil && a.Array != nil {
				// a=(x y): ${a[i]} and "${a[@]}" take these values.
				for _, e := range a.Array.Elems {
					if w := resolve(e.Value); w.static {
						c.vars[a.Name.Value] = append(c.vars[a.Name.Value], w.s)
					}
				}
			}
			if a.Name == nil || a.Value == nil {
				continue
			}
			// bash does not brace-expand an assignment's value.
			if w := resolve(a.Value); w.static {
				c.vars[a.Name.Value] = append(c.vars[a.Name.Value], w.s)
			} else {
				// x=${y:-/}, x=$(echo sudo): what the value may be.
				c.vars[a.Name.Value] = append(c.vars[a.Name.Value], w.def...)
			}
		}
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CallExpr:
			if len(x.Args) == 0 {
				assign(x.Assigns)
			}
			args := c.argv(x)
			for len(args) > 1 && (args[0].s == "builtin" || args[0].s == "command") {
				args = args[1:]
			}
			if len(args) >= 1 && args[0].static && args[0].s == "alias" {
				for _, a := range args[1:] {
					if name, value, ok := strings.Cut(a.s, "="); ok && a.static {
						if c.aliases == nil {
							c.aliases = map[string]string{}
						}
						c.aliases[name] = value
					}
				}
			}
			for _, a := range x.Assigns {
				// CDPATH=/ cd usr: cd tries each CDPATH directory.
				if a.Name != nil && a.Name.Value == "CDPATH" && a.Value != nil {
					c.vars["CDPATH"] = append(c.vars["CDPATH"], literalOf(a.Value))
				}
			}
			if len(args) >= 1 && (args[0].s == "cd" || args[0].s == "pushd") {
				c.learnCd(args)
			}
		case *syntax.DeclClause:
			assign(x.Args)
		case *syntax.ForClause:
			// for f in A B: f takes each word's value.
			if it, ok := x.Loop.(*syntax.WordIter); ok && it.Name != nil {
				for _, w := range it.Items {
					for _, a := range words(w) {
						if a.static {
							c.vars[it.Name.Value] = append(c.vars[it.Name.Value], a.s)
						}
						c.vars[it.Name.Value] = append(c.vars[it.Name.Value], a.def...)
					}
				}
			}
		}
		return true
	})
}

// learnCd records where a cd leads: an absolute directory, the home (cd,
// cd ~, cd $HOME), or a relative path, joined to the relative cd's before
// it (cd ..; cd ..; cd .. climbs three levels).
func (c *checker) learnCd(args []arg) {
	var d arg
	found := false
	for _, a := range args[1:] {
		if a.static && (a.s == "--" || strings.HasPrefix(a.s, "-") && a.s != "-") {
			continue
		}
		d, found = a, true
	}
	if found && d.static && !strings.HasPrefix(d.s, "/") {
		for _, cdpath := range c.vars["CDPATH"] {
			for _, base := range strings.Split(cdpath, ":") {
				if strings.HasPrefix(base, "/") {
					c.dirs = append(c.dirs, clean(path.Join(base, d.s)))
				}
			}
		}
	}
	if found && !d.static {
		c.cdEscapes = true
		// cd $(…)/../../..: what follows the expansion climbs from
		// wherever it was, perhaps to the root.
		if tail := d.s[strings.LastIndex(d.s, "$")+1:]; upLevels(strings.TrimPrefix(tail, "/")) >= 3 {
			c.dirs = append(c.dirs, "/")
		}
		// cd $d with d assigned literally: each value.
		for _, alt := range c.alternatives(d) {
			if alt != "" {
				c.learnCd([]arg{args[0], static([]string{alt})[0]})
			}
		}
		return
	}
	switch {
	case !found || d.home:
		c.dirs = append(c.dirs, "~")
		c.rel = ""
	case d.static && strings.HasPrefix(d.s, "/"):
		c.dirs = append(c.dirs, clean(d.s))
		c.rel = ""
	case d.static && d.s != "-":
		c.rel = path.Join(c.rel, d.s)
		if c.rel != "." {
			c.dirs = append(c.dirs, c.rel)
		}
		c.cdEscapes = c.cdEscapes || c.rel == ".." || strings.HasPrefix(c.rel, "../")
		return
	}
	c.cdEscapes = true
}

// alternatives are the values a word can take given the variables the
// command assigns literally (x=su; ${x}do is sudo), at most 64.
func (c *checker) alternatives(a arg) []string {
	if a.static || len(a.tmpl) == 0 {
		return nil
	}
	out := []string{""}
	for _, piece := range a.tmpl {
		if !strings.HasPrefix(piece, "\x00") {
			for i := range out {
				out[i] += piece
			}
			continue
		}
		vals := c.vars[piece[1:]]
		if len(vals) == 0 && piece[1:] == "PWD" {
			vals = []string{"."} // the working directory: where relative paths start
		}
		if len(vals) == 0 {
			return nil
		}
		var next []string
		for _, o := range out {
			for _, v := range vals {
				if len(next) < 64 {
					next = append(next, o+v)
				}
			}
		}
		out = next
	}
	return out
}

// refusedLiteral is a refused program's name written anywhere in the
// command (a word, a value, a here-document's text), if any: a command
// name computed at run time may take it (a=(sudo id); "${a[@]}").
func (c *checker) refusedLiteral() string {
	if !c.litsSet {
		c.litsSet = true
		c.lits = nil
		for _, r := range c.roots {
			syntax.Walk(r, func(n syntax.Node) bool {
				w, ok := n.(*syntax.Word)
				if !ok {
					return true
				}
				for _, a := range words(w) {
					if !a.static {
						continue
					}
					// Split as IFS, read -d or a pattern may split it: on
					// anything that cannot be part of a program's name
					// (but not on "=": --grep=exec names no program).
					text := a.s
					if strings.Contains(text, `\`) {
						// as printf, echo -e and %b decode it: \x73udo, \163udo.
						text += " " + ansiC(strings.ReplaceAll(text, `\0`, `\`))
					}
					for _, f := range strings.FieldsFunc(text, func(r rune) bool {
						return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._+-=", r))
					}) {
						if n := canonical(f); refusedName(n) {
							c.lits = append(c.lits, n)
						}
					}
				}
				return true
			})
		}
	}
	if len(c.lits) > 0 {
		return c.lits[0]
	}
	return ""
}

// refusedProgramLiteral is a refused program's name (not eval or exec,
// which name functions in most languages) written anywhere in the
// command, if any.
func (c *checker) refusedProgramLiteral() string {
	c.refusedLiteral()
	for _, l := range c.lits {
		if !evalExec[l] {
			return l
		}
	}
	return ""
}

// beforeError: bash runs a script command by command and stops at the
// first line it cannot parse, so the complete lines before a syntax error
// run (sudo id<NL>) is sudo, then an error). The longest run of whole
// lines that parses is judged as the code it is.
func (c *checker) beforeError(src string, lang syntax.LangVariant, depth int, perr error) {
	if depth >= maxDepth || !strings.Contains(src, "\n") {
		return
	}
	lines := strings.Split(src, "\n")
	start := len(lines) - 1
	var pe syntax.ParseError
	if errors.As(perr, &pe) && int(pe.Pos.Line()) >= 1 {
		start = min(start, int(pe.Pos.Line())-1)
	}
	for k := start; k >= 1 && k > start-32; k-- {
		prefix := strings.Join(lines[:k], "\n")
		if strings.TrimSpace(prefix) == "" {
			return
		}
		if _, err := syntax.NewParser(syntax.Variant(lang)).Parse(strings.NewReader(prefix), ""); err == nil {
			c.source(prefix, depth+1)
			return
		}
	}
}
