// Package patch reads a unified git patch (git diff --binary) for a
// person's review: its files, their hunks, and each line with its old and
// new line numbers. The patch comes from a working copy the agent wrote,
// so every byte of it is hostile: file names may hold quotes, newlines or
// escapes, content may look like headers, and a cut or malformed patch
// is an error, never a panic or a silent loss.
package patch

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/paddock-dev/paddock/internal/clip"
)

// Kind is what a line of a hunk is.
type Kind byte

const (
	Context Kind = ' '
	Added   Kind = '+'
	Deleted Kind = '-'
)

// Line is one line of a hunk: its text without the newline, its number in
// the old file (0 for an added line) and in the new (0 for a deleted one).
type Line struct {
	Kind     Kind
	Old, New int
	Text     string
	// NoNewline says the line ends its file without a newline.
	NoNewline bool
}

// Hunk is one stretch of changes with its context.
type Hunk struct {
	OldStart, OldLines int
	NewStart, NewLines int
	// Section is the text git shows after the range (the enclosing
	// function, as git guessed it).
	Section string
	Lines   []Line
}

// File is one file's change.
type File struct {
	// Old and New are the paths before and after ("" for none: added,
	// deleted).
	Old, New string
	// Status is added, deleted, modified, renamed, copied or mode.
	Status string
	// Binary says the content is not text (git's binary patch, not shown).
	Binary bool
	// Mode is the mode of an added or deleted file ("100755"), or how a
	// file's mode changed ("100644 → 100755").
	Mode           string
	Hunks          []Hunk
	Added, Deleted int
}

// Path is the file's path as a person names it: the new one, or the old
// one of a deleted file.
func (f File) Path() string {
	if f.New != "" {
		return f.New
	}
	return f.Old
}

// Lines is how many lines the file's hunks hold.
func (f File) Lines() int {
	n := 0
	for _, h := range f.Hunks {
		n += len(h.Lines)
	}
	return n
}

// ErrMalformed is the kind of every parse error.
var ErrMalformed = errors.New("malformed patch")

// Parse reads a patch. A malformed one is an error (ErrMalformed) naming
// the line where it stops making sense.
func Parse(text string) ([]File, error) {
	p := parser{lines: strings.SplitAfter(text, "\n")}
	if n := len(p.lines); n > 0 && p.lines[n-1] == "" {
		p.lines = p.lines[:n-1]
	}
	var files []File
	for p.i < len(p.lines) {
		line := p.line()
		if !strings.HasPrefix(line, "diff --git ") {
			return files, p.errorf("want a file header (diff --git), got %q", clip.String(line, 80))
		}
		f, err := p.file()
		if err != nil {
			return files, err
		}
		files = append(files, f)
	}
	return files, nil
}

type parser struct {
	lines []string
	i     int
}

// line is the current line without its newline.
func (p *parser) line() string { return strings.TrimSuffix(p.lines[p.i], "\n") }

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: line %d: %s", ErrMalformed, p.i+1, fmt.Sprintf(format, args...))
}

// file reads one file: its header, its extended headers, then its hunks
// or its binary patch, up to the next file's header.
func (p *parser) file() (File, error) {
	var f File
	old, new, ok := gitPaths(strings.TrimPrefix(p.line(), "diff --git "))
	if ok {
		f.Old, f.New = old, new
	}
	f.Status = "modified"
	p.i++
	var oldMode string
	for p.i < len(p.lines) {
		line := p.line()
		switch {
		case strings.HasPrefix(line, "diff --git "):
			return f, p.done(&f, ok)
		case strings.HasPrefix(line, "new file mode "):
			f.Status, f.Old = "added", ""
			f.Mode = strings.TrimPrefix(line, "new file mode ")
		case strings.HasPrefix(line, "deleted file mode "):
			f.Status, f.New = "deleted", ""
			f.Mode = strings.TrimPrefix(line, "deleted file mode ")
		case strings.HasPrefix(line, "old mode "):
			oldMode = strings.TrimPrefix(line, "old mode ")
		case strings.HasPrefix(line, "new mode "):
			f.Mode = oldMode + " → " + strings.TrimPrefix(line, "new mode ")
			if f.Status == "modified" {
				f.Status = "mode"
			}
		case strings.HasPrefix(line, "rename from "), strings.HasPrefix(line, "copy from "):
			name, err := unquote(line[strings.Index(line, "from ")+5:])
			if err != nil {
				return f, p.errorf("%v", err)
			}
			f.Old, f.Status = name, map[bool]string{true: "renamed", false: "copied"}[strings.HasPrefix(line, "rename")]
		case strings.HasPrefix(line, "rename to "), strings.HasPrefix(line, "copy to "):
			name, err := unquote(line[strings.Index(line, "to ")+3:])
			if err != nil {
				return f, p.errorf("%v", err)
			}
			f.New, ok = name, true
		case strings.HasPrefix(line, "--- "):
			name, err := side(strings.TrimPrefix(line, "--- "), "a/")
			if err != nil {
				return f, p.errorf("%v", err)
			}
			f.Old = name
		case strings.HasPrefix(line, "+++ "):
			name, err := side(strings.TrimPrefix(line, "+++ "), "b/")
			if err != nil {
				return f, p.errorf("%v", err)
			}
			f.New, ok = name, ok || name != ""
		case strings.HasPrefix(line, "@@ "):
			h, err := p.hunk()
			if err != nil {
				return f, err
			}
			f.Hunks = append(f.Hunks, h)
			for _, l := range h.Lines {
				switch l.Kind {
				case Added:
					f.Added++
				case Deleted:
					f.Deleted++
				}
			}
			continue // hunk moved past its lines
		case strings.HasPrefix(line, "Binary files "), line == "GIT binary patch":
			f.Binary = true
			// The binary patch's data (literal or delta blocks) runs to the
			// next file: none of it is shown.
			for p.i++; p.i < len(p.lines) && !strings.HasPrefix(p.line(), "diff --git "); p.i++ {
			}
			return f, p.done(&f, ok)
		case strings.HasPrefix(line, "index "), strings.HasPrefix(line, "similarity index "),
			strings.HasPrefix(line, "dissimilarity index "), strings.HasPrefix(line, "Submodule "):
		default:
			return f, p.errorf("want a header or a hunk of %s, got %q", clip.String(f.Path(), 80), clip.String(line, 80))
		}
		p.i++
	}
	return f, p.done(&f, ok)
}

// done checks the file has a name.
func (p *parser) done(f *File, named bool) error {
	if !named && f.Old == "" && f.New == "" {
		return p.errorf("a file without a name")
	}
	if f.Status == "added" {
		f.Old = ""
	}
	if f.Status == "deleted" {
		f.New = ""
	}
	return nil
}

// hunk reads one hunk: its header, then exactly the lines its ranges
// count (a line that looks like a header inside them is content).
func (p *parser) hunk() (Hunk, error) {
	var h Hunk
	header := p.line()
	rest, ok := strings.CutPrefix(header, "@@ -")
	ranges, section, ok2 := strings.Cut(rest, " @@")
	oldR, newR, ok3 := strings.Cut(ranges, " +")
	if !ok || !ok2 || !ok3 {
		return h, p.errorf("a hunk header without its ranges: %q", clip.String(header, 80))
	}
	var err1, err2 error
	h.OldStart, h.OldLines, err1 = hunkRange(oldR)
	h.NewStart, h.NewLines, err2 = hunkRange(newR)
	if err := errors.Join(err1, err2); err != nil {
		return h, p.errorf("hunk header %q: %v", clip.String(header, 80), err)
	}
	h.Section = strings.TrimPrefix(section, " ")
	p.i++
	oldN, newN := h.OldStart, h.NewStart
	oldLeft, newLeft := h.OldLines, h.NewLines
	for oldLeft > 0 || newLeft > 0 {
		if p.i >= len(p.lines) {
			return h, p.errorf("the patch ends inside a hunk (%d old and %d new lines missing)", oldLeft, newLeft)
		}
		line := p.line()
		if line == "" {
			line = " " // some tools strip the space of an empty context line
		}
		l := Line{Kind: Kind(line[0]), Text: line[1:]}
		switch l.Kind {
		case Context:
			l.Old, l.New = oldN, newN
			oldN, newN, oldLeft, newLeft = oldN+1, newN+1, oldLeft-1, newLeft-1
		case Deleted:
			l.Old = oldN
			oldN, oldLeft = oldN+1, oldLeft-1
		case Added:
			l.New = newN
			newN, newLeft = newN+1, newLeft-1
		case '\\':
			if len(h.Lines) > 0 {
				h.Lines[len(h.Lines)-1].NoNewline = true
			}
			p.i++
			continue
		default:
			return h, p.errorf("want a line of the hunk (' ', '+' or '-'), got %q", clip.String(line, 80))
		}
		if oldLeft < 0 || newLeft < 0 {
			return h, p.errorf("the hunk holds more lines than its header counts")
		}
		h.Lines = append(h.Lines, l)
		p.i++
	}
	// A last line without a newline is marked right after the hunk.
	if p.i < len(p.lines) && strings.HasPrefix(p.line(), `\ `) {
		if len(h.Lines) > 0 {
			h.Lines[len(h.Lines)-1].NoNewline = true
		}
		p.i++
	}
	return h, nil
}

// hunkRange reads "START[,COUNT]" (COUNT 1 when left out).
func hunkRange(s string) (start, count int, err error) {
	a, b, hasCount := strings.Cut(s, ",")
	if start, err = strconv.Atoi(a); err != nil || start < 0 {
		return 0, 0, fmt.Errorf("range %q", clip.String(s, 80))
	}
	count = 1
	if hasCount {
		if count, err = strconv.Atoi(b); err != nil || count < 0 {
			return 0, 0, fmt.Errorf("range %q", clip.String(s, 80))
		}
	}
	const most = 1 << 24 // no hunk of a reviewable diff holds more lines
	if count > most || start > most*16 {
		return 0, 0, fmt.Errorf("range %q is past any file", clip.String(s, 80))
	}
	return start, count, nil
}

// side reads the path of a ---/+++ line: "/dev/null" is none; otherwise
// the path after prefix (a/ or b/), quoted or not.
func side(s, prefix string) (string, error) {
	if s == "/dev/null" {
		return "", nil
	}
	if t, _, ok := strings.Cut(s, "\t"); ok && !strings.HasPrefix(s, `"`) {
		s = t // a timestamp after a tab (not git's, but harmless)
	}
	name, err := unquote(s)
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(name, prefix) {
		return "", fmt.Errorf("path %q does not start with %s", clip.String(name, 80), prefix)
	}
	return name[len(prefix):], nil
}

// gitPaths reads the paths of a "diff --git a/OLD b/NEW" line: quoted
// ones exactly; unquoted ones only when both sides name one path (a
// rename's names come from its rename lines), since a name may hold " b/".
func gitPaths(s string) (old, new string, ok bool) {
	if strings.HasPrefix(s, `"`) || strings.HasSuffix(s, `"`) {
		a, rest, err := quotedPrefix(s)
		if err != nil {
			return "", "", false
		}
		b, err := unquote(strings.TrimPrefix(rest, " "))
		if err != nil || !strings.HasPrefix(a, "a/") || !strings.HasPrefix(b, "b/") {
			return "", "", false
		}
		return a[2:], b[2:], true
	}
	if len(s) < 6 || len(s)%2 != 1 {
		return "", "", false
	}
	half := (len(s) - 1) / 2
	a, b := s[:half], s[half+1:]
	if s[half] != ' ' || !strings.HasPrefix(a, "a/") || !strings.HasPrefix(b, "b/") || a[2:] != b[2:] {
		return "", "", false
	}
	return a[2:], b[2:], true
}

// quotedPrefix reads a path at the start of s, quoted or not (an
// unquoted one ends at the first space), and returns what follows.
func quotedPrefix(s string) (string, string, error) {
	if !strings.HasPrefix(s, `"`) {
		a, rest, _ := strings.Cut(s, " ")
		return a, rest, nil
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			name, err := unquote(s[:i+1])
			return name, s[i+1:], err
		}
	}
	return "", "", fmt.Errorf("unterminated quoted path %q", clip.String(s, 80))
}

// unquote undoes git's quoting of a path (core.quotePath: C escapes and
// octal bytes between double quotes); an unquoted path is as written.
func unquote(s string) (string, error) {
	if !strings.HasPrefix(s, `"`) {
		return s, nil
	}
	if len(s) < 2 || !strings.HasSuffix(s, `"`) {
		return "", fmt.Errorf("unterminated quoted path %q", clip.String(s, 80))
	}
	var b strings.Builder
	in := s[1 : len(s)-1]
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(in) {
			return "", fmt.Errorf("a quoted path ends in a backslash: %q", clip.String(s, 80))
		}
		switch c = in[i]; c {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'v':
			b.WriteByte('\v')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		case '"', '\\':
			b.WriteByte(c)
		case '0', '1', '2', '3':
			if i+2 >= len(in) {
				return "", fmt.Errorf("a short octal escape in %q", clip.String(s, 80))
			}
			n, err := strconv.ParseUint(in[i:i+3], 8, 8)
			if err != nil {
				return "", fmt.Errorf("a bad octal escape in %q", clip.String(s, 80))
			}
			b.WriteByte(byte(n))
			i += 2
		default:
			return "", fmt.Errorf("an unknown escape \\%c in %q", c, clip.String(s, 80))
		}
	}
	return b.String(), nil
}
