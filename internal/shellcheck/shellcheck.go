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
	"fmt"
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
}

// New returns an analyzer whose free commands are the given argv prefixes,
// such as "ls", "git status" or "go test".
func New(free []string) *Analyzer {
	a := &Analyzer{}
	for _, f := range free {
		if fields := strings.Fields(f); len(fields) > 0 {
			a.free = append(a.free, fields)
		}
	}
	return a
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
		return
	}
	if len(f.Stmts) == 0 {
		return
	}
	before := len(c.pieces)
	c.learn(f)
	c.walk(f, depth)
	c.prove(f, src, depth)
	if len(c.pieces) == before {
		c.add(src, Allow, "grammar-only", "no program runs (arithmetic, tests or assignments only)")
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
			if a.Name == nil || a.Value == nil {
				continue
			}
			if w := words(a.Value); len(w) == 1 && w[0].static {
				c.vars[a.Name.Value] = append(c.vars[a.Name.Value], w[0].s)
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
			if len(args) >= 2 && (args[0].s == "cd" || args[0].s == "pushd") {
				d := args[len(args)-1]
				switch {
				case d.home:
					c.dirs = append(c.dirs, "~")
				case d.static && strings.HasPrefix(d.s, "/"):
					c.dirs = append(c.dirs, clean(d.s))
				}
			}
		case *syntax.DeclClause:
			assign(x.Args)
		}
		return true
	})
}
