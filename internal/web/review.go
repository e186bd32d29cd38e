package web

import (
	"fmt"
	"html/template"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/lexers"

	"github.com/paddock-dev/paddock/internal/patch"
	"github.com/paddock-dev/paddock/internal/session"
)

// The review page's bounds: a page holds about pageRows lines of the
// patch (whole files, at least one), a file shows at most fileRows of its
// lines (the downloaded patch has all), and highlighting stops once
// highlightBudget of the page's time is spent (the rest is plain text):
// a large or hostile diff never freezes the browser or the server.
const (
	pageRows        = 2500
	fileRows        = 4000
	highlightBudget = 150 * time.Millisecond
	highlightLine   = 400 // longer lines are not highlighted
)

// Review is a session's diff laid out for a person: its files, flagged
// ones first, a page at a time, each line numbered and highlighted.
type Review struct {
	// Files are this page's files; Index every file's entry (the table).
	Files          []ReviewFile
	Index          []FileEntry
	Page, Pages    int
	Split          bool
	Added, Deleted int
	// Problem says the patch could not be laid out (shown raw instead).
	Problem string
}

// FileEntry is a file in the review's table: where it is.
type FileEntry struct {
	N              int
	Path, Status   string
	Flagged        bool
	Reason         string
	Added, Deleted int
	Page           int
}

// ReviewFile is one file's change as shown.
type ReviewFile struct {
	FileEntry
	Old, Mode string
	Binary    bool
	Hunks     []ReviewHunk
	// Cut is how many of its lines are not shown (past fileRows).
	Cut int
}

// ReviewHunk is one hunk: its header, its rows for the unified view and
// its pairs for the split one.
type ReviewHunk struct {
	Header string
	Lines  []DiffLine
	Pairs  []Pair
}

// DiffLine is one line of a hunk: add, del or ctx, its numbers (0: none), its code as
// safe HTML (escaped text in spans of fixed classes).
type DiffLine struct {
	Kind      string
	Old, New  int
	Code      template.HTML
	NoNewline bool
}

// Pair is a row of the split view: the old side and the new.
type Pair struct{ Left, Right *DiffLine }

// layout lays d out: page (from 1) of it, split or unified.
func layout(d session.Diff, page int, split bool) Review {
	rv := Review{Split: split}
	files, err := patch.Parse(d.Patch)
	if err != nil {
		rv.Problem = err.Error()
		return rv
	}
	flags := map[string]session.ChangedFile{}
	for _, f := range d.Files {
		flags[f.Path] = f
	}
	// Flagged files first, each group in the patch's order.
	slices.SortStableFunc(files, func(a, b patch.File) int {
		fa, fb := flags[a.Path()].Flagged, flags[b.Path()].Flagged
		switch {
		case fa && !fb:
			return -1
		case fb && !fa:
			return 1
		}
		return 0
	})
	rows, p := 0, 1
	for i, f := range files {
		n := min(f.Lines(), fileRows)
		if rows > 0 && rows+n > pageRows {
			p, rows = p+1, 0
		}
		rows += n
		c := flags[f.Path()]
		rv.Index = append(rv.Index, FileEntry{N: i + 1, Path: f.Path(), Status: f.Status, Flagged: c.Flagged, Reason: c.Reason, Added: f.Added, Deleted: f.Deleted, Page: p})
		rv.Added += f.Added
		rv.Deleted += f.Deleted
	}
	rv.Pages = p
	rv.Page = min(max(page, 1), p)
	hl := &highlighter{deadline: time.Now().Add(highlightBudget)}
	for i, f := range files {
		if rv.Index[i].Page != rv.Page {
			continue
		}
		rv.Files = append(rv.Files, show(rv.Index[i], f, hl))
	}
	return rv
}

// show lays out one file.
func show(e FileEntry, f patch.File, hl *highlighter) ReviewFile {
	out := ReviewFile{FileEntry: e, Old: f.Old, Mode: f.Mode, Binary: f.Binary}
	left := fileRows
	for _, h := range f.Hunks {
		if left <= 0 {
			out.Cut += len(h.Lines)
			continue
		}
		lines := h.Lines
		if len(lines) > left {
			out.Cut += len(lines) - left
			lines = lines[:left]
		}
		left -= len(lines)
		texts := make([]string, len(lines))
		for i, l := range lines {
			texts[i] = l.Text
		}
		code := hl.lines(f.Path(), texts)
		rh := ReviewHunk{Header: fmt.Sprintf("@@ -%d,%d +%d,%d @@ %s", h.OldStart, h.OldLines, h.NewStart, h.NewLines, h.Section)}
		for i, l := range lines {
			kind := map[patch.Kind]string{patch.Added: "add", patch.Deleted: "del", patch.Context: "ctx"}[l.Kind]
			rh.Lines = append(rh.Lines, DiffLine{Kind: kind, Old: l.Old, New: l.New, Code: code[i], NoNewline: l.NoNewline})
		}
		rh.Pairs = pairs(rh.Lines)
		out.Hunks = append(out.Hunks, rh)
	}
	return out
}

// pairs lays rows side by side: a run of deletions beside the run of
// additions after it, context beside itself.
func pairs(rows []DiffLine) []Pair {
	var out []Pair
	for i := 0; i < len(rows); {
		if rows[i].Kind == "ctx" {
			out = append(out, Pair{&rows[i], &rows[i]})
			i++
			continue
		}
		var dels, adds []*DiffLine
		for ; i < len(rows) && rows[i].Kind == "del"; i++ {
			dels = append(dels, &rows[i])
		}
		for ; i < len(rows) && rows[i].Kind == "add"; i++ {
			adds = append(adds, &rows[i])
		}
		for j := 0; j < max(len(dels), len(adds)); j++ {
			var p Pair
			if j < len(dels) {
				p.Left = dels[j]
			}
			if j < len(adds) {
				p.Right = adds[j]
			}
			out = append(out, p)
		}
	}
	return out
}

// highlighter colours code with chroma's lexers until its deadline.
type highlighter struct{ deadline time.Time }

// lines highlights a file's lines (of one hunk) as the language of its
// path, one HTML string per line; plain escaped text when no lexer
// knows the path, a line is too long, or the time is spent.
func (h *highlighter) lines(path string, texts []string) []template.HTML {
	out := make([]template.HTML, len(texts))
	plain := func() []template.HTML {
		for i, t := range texts {
			var b strings.Builder
			escape(&b, t)
			out[i] = template.HTML(b.String())
		}
		return out
	}
	lexer := lexers.Match(path)
	if lexer == nil || time.Now().After(h.deadline) || slices.ContainsFunc(texts, func(t string) bool { return len(t) > highlightLine }) {
		return plain()
	}
	it, err := chroma.Coalesce(lexer).Tokenise(nil, strings.Join(texts, "\n")+"\n")
	if err != nil {
		return plain()
	}
	var b strings.Builder
	line := 0
	for tok := it(); tok != chroma.EOF; tok = it() {
		if time.Now().After(h.deadline) {
			return plain()
		}
		class := tokenClass(tok.Type)
		for j, piece := range strings.Split(tok.Value, "\n") {
			if j > 0 {
				if line < len(out) {
					out[line] = template.HTML(b.String())
				}
				b.Reset()
				line++
			}
			if piece == "" {
				continue
			}
			if class != "" {
				b.WriteString(`<span class="` + class + `">`)
			}
			escape(&b, piece)
			if class != "" {
				b.WriteString(`</span>`)
			}
		}
	}
	if line < len(out) && b.Len() > 0 {
		out[line] = template.HTML(b.String())
	}
	// A lexer that lost or added lines is not trusted.
	if line != len(texts) {
		return plain()
	}
	return out
}

// tokenClass is the class a token is coloured by (the stylesheet's t-*).
func tokenClass(t chroma.TokenType) string {
	switch {
	case t.InCategory(chroma.Comment):
		return "t-c"
	case t.InSubCategory(chroma.LiteralString):
		return "t-s"
	case t.InSubCategory(chroma.LiteralNumber):
		return "t-m"
	case t.InCategory(chroma.Keyword):
		return "t-k"
	case t == chroma.NameFunction || t == chroma.NameClass:
		return "t-f"
	case t == chroma.NameBuiltin || t == chroma.NameBuiltinPseudo:
		return "t-b"
	case t.InCategory(chroma.Operator):
		return "t-o"
	}
	return ""
}

// escape writes s as HTML text, every character that would hide or move
// text (controls, bidi overrides, zero-width characters: a Trojan Source
// line) written as a visible mark naming it instead.
func escape(b *strings.Builder, s string) {
	start := 0 // the run of plain text not written yet
	flush := func(i int) {
		if start < i {
			b.WriteString(template.HTMLEscapeString(s[start:i]))
		}
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			flush(i)
			fmt.Fprintf(b, `<span class="hidden-char" title="a byte that is not text">\x%02x</span>`, s[i])
			start = i + size
		case r == '\t':
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || unicode.Is(unicode.Cf, r):
			flush(i)
			fmt.Fprintf(b, `<span class="hidden-char" title="an invisible character">U+%04X</span>`, r)
			start = i + size
		}
		i += size
	}
	flush(len(s))
}
