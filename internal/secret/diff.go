package secret

import (
	"slices"
	"strings"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/zricethezav/gitleaks/v8/regexp"
)

// Diff is diff d as a person is shown it: every secret the detector
// finds in the patch replaced by [REDACTED:RULE], and each file holding one
// flagged with its rules (accepting writes the file as the session left it,
// secret included, so the flag asks for a look first). Redaction never
// changes the patch's shape: every file, header, hunk and line stays,
// so nothing that would be accepted can be hidden behind a secret (see
// redactSection).
func Diff(d session.Diff) session.Diff {
	if len(Find(d.Patch)) == 0 {
		return d
	}
	sections := strings.SplitAfter(d.Patch, "\ndiff --git ")
	files := slices.Clone(d.Files)
	for i, sec := range sections {
		found := Find(sec)
		if len(found) == 0 {
			continue
		}
		var rules []string
		sections[i], rules = redactSection(sec, found)
		header, _, _ := strings.Cut(sec, "\n")
		for j := range files {
			p := files[j].Path
			if strings.Contains(header, "a/"+p+" ") || strings.HasSuffix(header, " b/"+p) {
				why := "holds a secret (" + strings.Join(rules, ", ") + "), shown redacted"
				if files[j].Reason != "" {
					why = files[j].Reason + "; " + why
				}
				files[j].Flagged, files[j].Reason = true, why
			}
		}
	}
	d.Patch, d.Files = strings.Join(sections, ""), files
	return d
}

// redactSection redacts one file's section of a patch, its shape kept: a
// newline, a line's diff prefix (' ', '+', '-') and a line that is not
// content (a hunk header, "\ No newline") are never replaced. A secret
// within a line is replaced whole. One that spans lines (a private key's
// armor and body) is replaced only where a piece of it is key material
// (an armor line, or a run of base64 or hex without spaces): anything
// else between its first and last line, such as commands an agent wrapped
// in a fake key, stays in sight. A secret found only encoded (Whole)
// withholds the text of every content line, saying so, the file and its
// lines still listed.
func redactSection(sec string, found []Found) (string, []string) {
	var rules []string
	for _, f := range found {
		if !slices.Contains(rules, f.Rule) {
			rules = append(rules, f.Rule)
		}
	}
	slices.Sort(rules)
	for _, f := range found {
		if f.Whole {
			return withhold(sec, f.Rule), rules
		}
	}
	for _, f := range found {
		if f.Secret == "" {
			continue
		}
		marker := Marker + f.Rule + "]"
		var b strings.Builder
		rest := sec
		for {
			i := strings.Index(rest, f.Secret)
			if i < 0 {
				b.WriteString(rest)
				break
			}
			b.WriteString(rest[:i])
			prev := byte('\n') // what comes before the occurrence
			if done := b.String(); done != "" {
				prev = done[len(done)-1]
			}
			b.WriteString(redactSpan(f.Secret, marker, prev == '\n'))
			rest = rest[i+len(f.Secret):]
		}
		sec = b.String()
	}
	return sec, rules
}

// redactSpan is one occurrence of a secret, redacted without changing the
// patch's shape. atLineStart says the occurrence begins a line (its first
// character is then the line's diff prefix, kept).
func redactSpan(s, marker string, atLineStart bool) string {
	pieces := strings.Split(s, "\n")
	if len(pieces) == 1 {
		if atLineStart && s != "" {
			return s[:1] + marker
		}
		return marker
	}
	for i, p := range pieces {
		prefix := ""
		if (i > 0 || atLineStart) && p != "" {
			if !strings.ContainsRune(" +-", rune(p[0])) {
				continue // not content: a hunk header, "\ No newline", kept as is
			}
			prefix, p = p[:1], p[1:]
		}
		if keyMaterial(p) {
			p = marker
		}
		pieces[i] = prefix + p
	}
	return strings.Join(pieces, "\n")
}

var (
	armorLine = regexp.MustCompile(`^\s*-----(BEGIN|END)[ A-Z0-9_-]{0,100}-----\s*$`)
	keyRun    = regexp.MustCompile(`^[A-Za-z0-9+/=_-]{16,}$`)
)

// keyMaterial says a piece of a secret spanning lines is the key's own
// text: an armor line or a run of base64 or hex (what a key's body is
// made of), never a line a person must read to know what it does.
func keyMaterial(p string) bool {
	t := strings.TrimSpace(p)
	return t == "" || armorLine.MatchString(t) || keyRun.MatchString(t)
}

// withhold replaces the text of every content line of a file's section
// (after its first hunk header) with a marker saying why, its headers,
// hunks and line count kept.
func withhold(sec, rule string) string {
	lines := strings.Split(sec, "\n")
	inHunks := false
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "@@ "):
			inHunks = true
		case inHunks && l != "" && strings.ContainsRune(" +-", rune(l[0])):
			lines[i] = l[:1] + Marker + rule + "] (withheld: an encoded secret is in this file)"
		}
	}
	return strings.Join(lines, "\n")
}
