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
	pageBytes       = 2 << 20 // of code a page shows
	fileRows        = 4000
	lineBytes       = 2000 // of a line shown; the rest is said
	highlightBudget = 150 * time.Millisecond
	highlightLine   = 400 // longer lines are not highlighted
	tableFlagged    = 500 // flagged files listed on every page
)

// Review is a session's diff laid out for a person: its files, flagged
// ones first, a page at a time, each line numbered and highlighted.
type Review struct {
	// Files are this page's files; Index every file's entry; Table the
	// entries the page's table lists (this page's, and flagged ones).
	Files []ReviewFile
	Index []FileEntry
	Table []FileEntry
	// Missing are files the diff names that its patch does not show.
	Missing        []string
	Page, Pages    int
	Split          bool
	Added, Deleted int
	// Problem says the patch could not be laid out (shown raw instead).
	Problem string
}

// FileEntry is a file in the review's table: where it is.
type FileEntry struct {
	N            int
	Path, Status string
	// Kind says what an added file or a new mode is, when it is not a
	// plain file (an executable, a symbolic link, a submodule).
	Kind           string
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
	rows, bytes, p := 0, 0, 1
	seen := map[string]bool{}
	for i, f := range files {
		n, size := 1+min(f.Lines(), fileRows), shownBytes(f)
		if rows > 0 && (rows+n > pageRows || bytes+size > pageBytes) {
			p, rows, bytes = p+1, 0, 0
		}
		rows, bytes = rows+n, bytes+size
		c, ok := flags[f.Path()]
		if old, moved := flags[f.Old]; f.Old != "" && moved && (!ok || !c.Flagged) {
			c = old // a flagged file renamed away keeps its flag
		}
		seen[f.Path()], seen[f.Old] = true, true
		rv.Index = append(rv.Index, FileEntry{N: i + 1, Path: f.Path(), Status: f.Status, Kind: modeKind(f.Mode), Flagged: c.Flagged, Reason: c.Reason, Added: f.Added, Deleted: f.Deleted, Page: p})
		rv.Added += f.Added
		rv.Deleted += f.Deleted
	}
	for _, f := range d.Files {
		if !seen[f.Path] {
			rv.Missing = append(rv.Missing, f.Path)
		}
	}
	rv.Pages = p
	rv.Page = min(max(page, 1), p)
	flagged := 0
	for _, e := range rv.Index {
		if e.Page == rv.Page || e.Flagged && flagged < tableFlagged {
			rv.Table = append(rv.Table, e)
			if e.Flagged && e.Page != rv.Page {
				flagged++
			}
		}
	}
	hl := &highlighter{deadline: time.Now().Add(highlightBudget)}
	for i, f := range files {
		if rv.Index[i].Page != rv.Page {
			continue
		}
		rv.Files = append(rv.Files, show(rv.Index[i], f, hl))
	}
	return rv
}

// shownBytes is about how much code of f a page shows.
func shownBytes(f patch.File) int {
	n, rows := 0, 0
	for _, h := range f.Hunks {
		for _, l := range h.Lines {
			if rows++; rows > fileRows {
				return n
			}
			n += min(len(l.Text), lineBytes)
		}
	}
	return n
}

// modeKind says what a git mode makes a file, when it is not a plain one.
func modeKind(mode string) string {
	if _, to, ok := strings.Cut(mode, " → "); ok {
		mode = to
	}
	switch mode {
	case "100755":
		return "executable"
	case "120000":
		return "a symbolic link (its content is where it points)"
	case "160000":
		return "a submodule (another repository, at a commit)"
	}
	return ""
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
		cuts := make([]int, len(lines))
		for i, l := range lines {
			texts[i] = l.Text
			if len(l.Text) > lineBytes {
				cut := lineBytes
				for cut > 0 && !utf8.RuneStart(l.Text[cut]) {
					cut--
				}
				texts[i], cuts[i] = l.Text[:cut], len(l.Text)-cut
			}
		}
		code := hl.lines(f.Path(), texts)
		rh := ReviewHunk{Header: fmt.Sprintf("@@ -%d,%d +%d,%d @@ %s", h.OldStart, h.OldLines, h.NewStart, h.NewLines, h.Section)}
		for i, l := range lines {
			kind := map[patch.Kind]string{patch.Added: "add", patch.Deleted: "del", patch.Context: "ctx"}[l.Kind]
			c := code[i]
			if cuts[i] > 0 {
				c += template.HTML(fmt.Sprintf(`<span class="cut">… %d more bytes of this line are not shown: download the patch</span>`, cuts[i]))
			}
			rh.Lines = append(rh.Lines, DiffLine{Kind: kind, Old: l.Old, New: l.New, Code: c, NoNewline: l.NoNewline})
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
	// mark writes one mark for a run of n of the same hidden character.
	mark := func(what, title string, n int) {
		if n > 1 {
			what += fmt.Sprintf(" ×%d", n)
		}
		fmt.Fprintf(b, `<span class="hidden-char" title="%s">%s</span>`, title, what)
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		hidden := r == utf8.RuneError && size == 1 || r != '\t' && (r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || unicode.Is(unicode.Cf, r))
		if !hidden {
			i += size
			continue
		}
		flush(i)
		n, j := 0, i
		for j < len(s) {
			r2, size2 := utf8.DecodeRuneInString(s[j:])
			if r2 != r || size2 != size || (size == 1 && r == utf8.RuneError && s[j] != s[i]) {
				break
			}
			n, j = n+1, j+size2
		}
		if r == utf8.RuneError && size == 1 {
			mark(fmt.Sprintf(`\x%02x`, s[i]), "a byte that is not text", n)
		} else {
			mark(fmt.Sprintf("U+%04X", r), "an invisible character", n)
		}
		i, start = j, j
	}
	flush(len(s))
}

// visible is s as HTML text, its invisible characters shown (a name, a
// header: anything of the patch the page shows).
func visible(s string) template.HTML {
	var b strings.Builder
	escape(&b, s)
	return template.HTML(b.String())
}
